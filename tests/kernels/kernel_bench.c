/* kernel_bench N: calls the trivial tnn_add of libktrivial.so N times on 16 floats, in batches of 10000
 * calls, and prints the median time per call over the batches, then the mean over all of them
 * (bench/kernels.sh runs it bare and under libtprof.so). The median of many short batches keeps
 * the cost of a call apart from the moments another process takes the CPU away. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

void tnn_add(float *out, const float *a, const float *b, long n);

#define BATCH 10000

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	long batches = n / BATCH > 0 ? n / BATCH : 1;
	static float a[16], b[16], c[16];
	double *per = malloc((size_t)batches * sizeof(double));
	if (!per)
		return 1;
	tnn_add(c, a, b, 16);
	double start = now_ns();
	for (long k = 0; k < batches; k++) {
		double t0 = now_ns();
		for (long i = 0; i < BATCH; i++)
			tnn_add(c, a, b, 16);
		per[k] = (now_ns() - t0) / BATCH;
	}
	double mean = (now_ns() - start) / (double)(batches * BATCH);
	qsort(per, (size_t)batches, sizeof(double), by_value);
	printf("%.2f ns per call (median of %ld batches of %d), mean %.2f ns\n", per[batches / 2], batches, BATCH, mean);
	free(per);
	return 0;
}
