/* Measures this machine's FP32 FMA peak (one core and all cores) and the GEMM throughput of tnn_matmul
 * against OpenBLAS's cblas_sgemm (loaded with dlopen when present) at the same size in the same run, for
 * bench/workloads.sh. Prints "key value" lines; every figure is the best of --reps runs. */
#include <dlfcn.h>
#include <immintrin.h>
#include <omp.h>

#include "bench_util.h"
#include "tnn.h"

#define FMA_ACC 12 /* independent accumulators: > FMA latency × FMA ports on current x86 cores */

/* FLOPs done by fma_loop(iters) */
#define FMA_LOOP_FLOPS(iters) ((double)(iters) * FMA_ACC * 8 * 2)

__attribute__((target("avx2,fma"))) static float fma_loop(long iters, float seed)
{
	__m256 acc[FMA_ACC];
	__m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(seed * 1e-7f);
	for (int i = 0; i < FMA_ACC; i++)
		acc[i] = _mm256_set1_ps(seed + i);
	for (long it = 0; it < iters; it++)
#pragma GCC unroll 12
		for (int i = 0; i < FMA_ACC; i++)
			acc[i] = _mm256_fmadd_ps(acc[i], a, b);
	__m256 s = acc[0];
	for (int i = 1; i < FMA_ACC; i++)
		s = _mm256_add_ps(s, acc[i]);
	float out[8];
	_mm256_storeu_ps(out, s);
	return out[0];
}

/* GFLOP/s of the FMA loop on `threads` threads, best of reps. */
static double peak_gflops(int threads, int reps, volatile float *sink)
{
	long iters = 20000000;
	double best = 0;
	for (int r = 0; r < reps; r++) {
		double t0 = now_ms();
#pragma omp parallel num_threads(threads)
		{
			float v = fma_loop(iters, 1.0f + omp_get_thread_num());
#pragma omp atomic
			*sink += v;
		}
		double ms = now_ms() - t0, g = FMA_LOOP_FLOPS(iters) * threads / (ms * 1e6);
		best = g > best ? g : best;
	}
	return best;
}

typedef void sgemm_fn(int order, int ta, int tb, int M, int N, int K, float alpha, const float *A, int lda,
		      const float *B, int ldb, float beta, float *C, int ldc);

int main(int argc, char **argv)
{
	int n = 1024, reps = 10, peak_reps = 5;
	struct opt opts[] = {
		{"size", OPT_INT, &n, "matrix size n for the n×n×n product"},
		{"reps", OPT_INT, &reps, "GEMM repetitions (best reported)"},
		{"peak-reps", OPT_INT, &peak_reps, "peak-loop repetitions (best reported)"},
	};
	opt_parse(argc, argv, "FP32 FMA peak and n³ GEMM throughput: tnn_matmul vs OpenBLAS cblas_sgemm.", opts,
		  sizeof opts / sizeof opts[0]);
	if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) {
		printf("peak n/a (no AVX2+FMA)\n");
		return 0;
	}
	volatile float sink = 0;
	int nt = omp_get_max_threads();
	double p1 = peak_gflops(1, peak_reps, &sink), pn = peak_gflops(nt, peak_reps, &sink);
	printf("threads %d\n", nt);
	printf("peak_gflops_1core %.1f\n", p1);
	printf("peak_gflops_all %.1f\n", pn);

	uint64_t seed = 42;
	size_t nn = (size_t)n * n;
	float *A = xmalloc(nn * sizeof(float)), *B = xmalloc(nn * sizeof(float)); // (n, n) each
	float *C = xmalloc(nn * sizeof(float)), *C2 = xmalloc(nn * sizeof(float)); // (n, n) each
	fill_normal(A, nn, 1.0f, &seed);
	fill_normal(B, nn, 1.0f, &seed);
	double flops = 2.0 * n * n * n;

	void *h = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
	sgemm_fn *sgemm = h ? (sgemm_fn *)dlsym(h, "cblas_sgemm") : NULL;
	double best_t = 0, best_o = 0;
	/* Two rounds of a block of each, with pauses: OpenMP and OpenBLAS worker threads spin for a while
	 * after their work, so interleaving single calls would make each library compete with the other's
	 * idle spinners. */
	for (int round = 0; round < 2; round++) {
		for (int r = 0; r < reps; r++) {
			double t0 = now_ms();
			tnn_matmul(C, A, B, NULL, n, n, n, 0);
			double g = flops / ((now_ms() - t0) * 1e6);
			best_t = g > best_t ? g : best_t;
		}
		nanosleep(&(struct timespec){0, 300000000}, NULL);
		for (int r = 0; sgemm && r < reps; r++) {
			double t0 = now_ms();
			sgemm(101 /* CblasRowMajor */, 111 /* CblasNoTrans */, 111, n, n, n, 1.0f, A, n, B, n, 0.0f, C2,
			      n);
			double g = flops / ((now_ms() - t0) * 1e6);
			best_o = g > best_o ? g : best_o;
		}
		nanosleep(&(struct timespec){0, 300000000}, NULL);
	}
	printf("backend %s\n", tnn_backend());
	printf("gemm_size %d\n", n);
	printf("tnn_gflops %.1f\n", best_t);
	printf("tnn_pct_of_peak %.1f\n", 100.0 * best_t / pn);
	if (sgemm) {
		double maxrel = 0;
		for (size_t i = 0; i < nn; i++) {
			double d = fabs(C[i] - C2[i]) / (1.0 + fabs(C2[i]));
			maxrel = d > maxrel ? d : maxrel;
		}
		printf("openblas_gflops %.1f\n", best_o);
		printf("openblas_pct_of_peak %.1f\n", 100.0 * best_o / pn);
		printf("max_rel_diff_vs_openblas %.2e\n", maxrel);
	} else {
		printf("openblas_gflops n/a\n");
	}
	free(A);
	free(B);
	free(C);
	free(C2);
	return 0;
}
