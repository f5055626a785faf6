/* libtnn's matrix products: tnn_matmul (a cache-blocked, packed GEMM with a 6×16 AVX2/FMA micro-kernel,
 * a portable scalar micro-kernel, and an optional OpenBLAS route) and the kernels built on it: matmul
 * backward, linear and conv2d (im2col + matmul). The composites call tnn_matmul, tnn_im2col and
 * tnn_col2im through their exported symbols so that a preloaded wrapper sees them nested. */
#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "tnn.h"
#include "tnn_internal.h"

#ifdef TNN_OPENBLAS
#include <cblas.h>
#endif

// ----------------------------------------------------------------------------
// GEMM blocking. MR×NR is the register tile; a packed A block (MC×KC) stays in L2 while a packed B
// micro-panel (KC×NR) stays in L1; the packed B panel (KC×NC) lives in L3. Each C tile is summed over k
// in a fixed order by exactly one thread, so results do not depend on the thread count.

#define MR 6
#define NR 16
#define KC 512
#define MC 144     /* multiple of MR */
#define NC 3072    /* multiple of NR */
#define JGROUP 8   /* NR strips per parallel task */

static inline int min_i(int a, int b) { return a < b ? a : b; }

/* One strip of MR rows of op(A), k in [p0, p0+kc): dst[k·MR + i]; rows past M are zero. */
static void pack_a(float *restrict dst, const float *restrict A, int M, int K, int ta, int i0, int p0, int kc)
{
	int m = min_i(MR, M - i0);
	if (!ta) {
		for (int i = 0; i < m; i++) {
			const float *row = A + (size_t)(i0 + i) * K + p0;
			for (int k = 0; k < kc; k++)
				dst[k * MR + i] = row[k];
		}
		for (int i = m; i < MR; i++)
			for (int k = 0; k < kc; k++)
				dst[k * MR + i] = 0.0f;
	} else {
		for (int k = 0; k < kc; k++) {
			const float *src = A + (size_t)(p0 + k) * M + i0;
			for (int i = 0; i < MR; i++)
				dst[k * MR + i] = i < m ? src[i] : 0.0f;
		}
	}
}

/* dst[k·NR + j] = src[j·ld + k] for j < NR, k < kc: 8×8 register transposes. */
TNN_AVX2 static void pack_bt_avx2(float *restrict dst, const float *restrict src, int ld, int kc)
{
	int k = 0;
	for (; k + 8 <= kc; k += 8)
		for (int jh = 0; jh < NR; jh += 8) {
			const float *s0 = src + (size_t)jh * ld + k;
			__m256 r0 = _mm256_loadu_ps(s0), r1 = _mm256_loadu_ps(s0 + ld);
			__m256 r2 = _mm256_loadu_ps(s0 + 2 * (size_t)ld), r3 = _mm256_loadu_ps(s0 + 3 * (size_t)ld);
			__m256 r4 = _mm256_loadu_ps(s0 + 4 * (size_t)ld), r5 = _mm256_loadu_ps(s0 + 5 * (size_t)ld);
			__m256 r6 = _mm256_loadu_ps(s0 + 6 * (size_t)ld), r7 = _mm256_loadu_ps(s0 + 7 * (size_t)ld);
			__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
			__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
			__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
			__m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
			__m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
			__m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
			__m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
			__m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
			float *d = dst + (size_t)k * NR + jh;
			_mm256_storeu_ps(d + 0 * NR, _mm256_permute2f128_ps(u0, u4, 0x20));
			_mm256_storeu_ps(d + 1 * NR, _mm256_permute2f128_ps(u1, u5, 0x20));
			_mm256_storeu_ps(d + 2 * NR, _mm256_permute2f128_ps(u2, u6, 0x20));
			_mm256_storeu_ps(d + 3 * NR, _mm256_permute2f128_ps(u3, u7, 0x20));
			_mm256_storeu_ps(d + 4 * NR, _mm256_permute2f128_ps(u0, u4, 0x31));
			_mm256_storeu_ps(d + 5 * NR, _mm256_permute2f128_ps(u1, u5, 0x31));
			_mm256_storeu_ps(d + 6 * NR, _mm256_permute2f128_ps(u2, u6, 0x31));
			_mm256_storeu_ps(d + 7 * NR, _mm256_permute2f128_ps(u3, u7, 0x31));
		}
	for (; k < kc; k++)
		for (int j = 0; j < NR; j++)
			dst[k * NR + j] = src[(size_t)j * ld + k];
}

/* One strip of NR columns of op(B), k in [p0, p0+kc): dst[k·NR + j]; columns past N are zero. */
static void pack_b(float *restrict dst, const float *restrict B, int N, int K, int tb, int j0, int p0, int kc)
{
	int n = min_i(NR, N - j0);
	if (!tb) {
		for (int k = 0; k < kc; k++) {
			const float *src = B + (size_t)(p0 + k) * N + j0;
			if (n == NR)
				memcpy(dst + k * NR, src, NR * sizeof(float));
			else
				for (int j = 0; j < NR; j++)
					dst[k * NR + j] = j < n ? src[j] : 0.0f;
		}
	} else if (n == NR && tnn_simd_()) {
		pack_bt_avx2(dst, B + (size_t)j0 * K + p0, K, kc);
	} else {
		for (int j = 0; j < n; j++) {
			const float *src = B + (size_t)(j0 + j) * K + p0;
			for (int k = 0; k < kc; k++)
				dst[k * NR + j] = src[k];
		}
		for (int j = n; j < NR; j++)
			for (int k = 0; k < kc; k++)
				dst[k * NR + j] = 0.0f;
	}
}

/* C tile (m ≤ MR, n ≤ NR, row stride ldc) = [C +] a·b [+ bias]: load selects C += , else C = . */
typedef void ukernel_fn(int kc, const float *a, const float *b, float *C, long ldc, int m, int n,
			const float *bias, int load);

static void ukr_scalar(int kc, const float *restrict a, const float *restrict b, float *restrict C, long ldc,
		       int m, int n, const float *bias, int load)
{
	float acc[MR][NR] = {{0}};
	for (int k = 0; k < kc; k++, a += MR, b += NR)
		for (int i = 0; i < MR; i++)
			for (int j = 0; j < NR; j++)
				acc[i][j] += a[i] * b[j];
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			float v = acc[i][j] + (bias ? bias[j] : 0.0f);
			C[i * ldc + j] = load ? C[i * ldc + j] + v : v;
		}
}

TNN_AVX2 static void ukr_avx2(int kc, const float *restrict a, const float *restrict b, float *restrict C,
			      long ldc, int m, int n, const float *bias, int load)
{
	__m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
	__m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
	for (int k = 0; k < kc; k++, a += MR, b += NR) {
		__m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), ai;
		ai = _mm256_broadcast_ss(a + 0);
		c00 = _mm256_fmadd_ps(ai, b0, c00);
		c01 = _mm256_fmadd_ps(ai, b1, c01);
		ai = _mm256_broadcast_ss(a + 1);
		c10 = _mm256_fmadd_ps(ai, b0, c10);
		c11 = _mm256_fmadd_ps(ai, b1, c11);
		ai = _mm256_broadcast_ss(a + 2);
		c20 = _mm256_fmadd_ps(ai, b0, c20);
		c21 = _mm256_fmadd_ps(ai, b1, c21);
		ai = _mm256_broadcast_ss(a + 3);
		c30 = _mm256_fmadd_ps(ai, b0, c30);
		c31 = _mm256_fmadd_ps(ai, b1, c31);
		ai = _mm256_broadcast_ss(a + 4);
		c40 = _mm256_fmadd_ps(ai, b0, c40);
		c41 = _mm256_fmadd_ps(ai, b1, c41);
		ai = _mm256_broadcast_ss(a + 5);
		c50 = _mm256_fmadd_ps(ai, b0, c50);
		c51 = _mm256_fmadd_ps(ai, b1, c51);
	}
	__m256 acc[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}, {c40, c41}, {c50, c51}};
	if (m == MR && n == NR) {
		__m256 bb0 = _mm256_setzero_ps(), bb1 = bb0;
		if (bias) {
			bb0 = _mm256_loadu_ps(bias);
			bb1 = _mm256_loadu_ps(bias + 8);
		}
		for (int i = 0; i < MR; i++) {
			float *c = C + i * ldc;
			__m256 v0 = _mm256_add_ps(acc[i][0], bb0), v1 = _mm256_add_ps(acc[i][1], bb1);
			if (load) {
				v0 = _mm256_add_ps(_mm256_loadu_ps(c), v0);
				v1 = _mm256_add_ps(_mm256_loadu_ps(c + 8), v1);
			}
			_mm256_storeu_ps(c, v0);
			_mm256_storeu_ps(c + 8, v1);
		}
		return;
	}
	float tmp[MR][NR] __attribute__((aligned(32)));
	for (int i = 0; i < MR; i++) {
		_mm256_store_ps(tmp[i], acc[i][0]);
		_mm256_store_ps(tmp[i] + 8, acc[i][1]);
	}
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			float v = tmp[i][j] + (bias ? bias[j] : 0.0f);
			C[i * ldc + j] = load ? C[i * ldc + j] + v : v;
		}
}

/* C = [C +] op(A)·op(B) [+ bias], K ≥ 1. */
__attribute__((unused)) static void gemm_native(float *C, const float *A, const float *B, const float *bias, int M, int N, int K,
			int ta, int tb, int acc)
{
	ukernel_fn *ukr = tnn_simd_() ? ukr_avx2 : ukr_scalar;
	int m_strips = (M + MR - 1) / MR;
	int nc_max = min_i(NC, (N + NR - 1) / NR * NR), kc_max = min_i(KC, K);
	float *pa = tnn_scratch_(0, (size_t)m_strips * MR * kc_max); /* (m_strips, kc, MR) */
	float *pb = tnn_scratch_(1, (size_t)nc_max * kc_max);         /* (nc/NR, kc, NR) */
	int par = (double)M * N * K >= 2e6 && !omp_in_parallel();

#pragma omp parallel if (par)
	for (int jc = 0; jc < N; jc += NC) {
		int nc = min_i(NC, N - jc), n_strips = (nc + NR - 1) / NR;
		int n_jg = (n_strips + JGROUP - 1) / JGROUP, n_ic = (M + MC - 1) / MC;
		for (int pc = 0; pc < K; pc += KC) {
			int kc = min_i(KC, K - pc), load = acc || pc > 0;
			const float *bias_c = pc == 0 && bias ? bias + jc : NULL;
#pragma omp for schedule(static)
			for (int s = 0; s < n_strips; s++)
				pack_b(pb + (size_t)s * kc * NR, B, N, K, tb, jc + s * NR, pc, kc);
#pragma omp for schedule(static)
			for (int s = 0; s < m_strips; s++)
				pack_a(pa + (size_t)s * kc * MR, A, M, K, ta, s * MR, pc, kc);
#pragma omp for schedule(dynamic, 1)
			for (int t = 0; t < n_ic * n_jg; t++) {
				int ic = t / n_jg, jg = t % n_jg;
				int js_end = min_i(n_strips, (jg + 1) * JGROUP);
				int is_end = min_i(m_strips, (ic + 1) * (MC / MR));
				for (int js = jg * JGROUP; js < js_end; js++) {
					int j = js * NR, n = min_i(NR, nc - j);
					for (int is = ic * (MC / MR); is < is_end; is++) {
						int i = is * MR;
						ukr(kc, pa + (size_t)is * kc * MR, pb + (size_t)js * kc * NR,
						    C + (size_t)i * N + jc + j, N, min_i(MR, M - i), n,
						    bias_c ? bias_c + j : NULL, load);
					}
				}
			}
		}
	}
}

// ----------------------------------------------------------------------------
// Few rows times a transposed B (a decoding step through a linear layer): one dot product per output,
// no packing.

#define SMALL_M 3

static float dot_gen(const float *x, const float *y, int n)
{
	return dot_lanes(x, y, n);
}

TNN_AVX2 static float dot_avx2(const float *x, const float *y, int n)
{
	__m256 a0 = _mm256_setzero_ps(), a1 = a0;
	int i = 0;
	for (; i + 16 <= n; i += 16) {
		a0 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i), a0);
		a1 = _mm256_fmadd_ps(_mm256_loadu_ps(x + i + 8), _mm256_loadu_ps(y + i + 8), a1);
	}
	float t[8];
	_mm256_storeu_ps(t, _mm256_add_ps(a0, a1));
	float s = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
	for (; i < n; i++)
		s += x[i] * y[i];
	return s;
}

__attribute__((unused)) static void gemv_tb(float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int ta,
		    int acc)
{
	float (*dot)(const float *, const float *, int) = tnn_simd_() ? dot_avx2 : dot_gen;
	float *a = tnn_scratch_(0, (size_t)M * K); // (M, K): op(A) made contiguous
	for (int i = 0; i < M; i++)
		for (int k = 0; k < K; k++)
			a[(size_t)i * K + k] = ta ? A[(size_t)k * M + i] : A[(size_t)i * K + k];
#pragma omp parallel for schedule(static) if ((long)N * K >= 16 * TNN_PAR_MIN && !omp_in_parallel())
	for (int j = 0; j < N; j++)
		for (int i = 0; i < M; i++) {
			float v = dot(a + (size_t)i * K, B + (size_t)j * K, K) + (bias ? bias[j] : 0.0f);
			C[(size_t)i * N + j] = acc ? C[(size_t)i * N + j] + v : v;
		}
}

TNN_API void tnn_matmul(float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int flags)
{
	int ta = !!(flags & TNN_TRANS_A), tb = !!(flags & TNN_TRANS_B), acc = !!(flags & TNN_ACCUMULATE);
	if (M <= 0 || N <= 0)
		return;
	if (K <= 0) {
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++) {
				float v = bias ? bias[j] : 0.0f;
				C[(size_t)i * N + j] = acc ? C[(size_t)i * N + j] + v : v;
			}
		return;
	}
#ifdef TNN_OPENBLAS
	if (bias)
		for (int i = 0; i < M; i++)
			for (int j = 0; j < N; j++)
				C[(size_t)i * N + j] = acc ? C[(size_t)i * N + j] + bias[j] : bias[j];
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K, 1.0f, A,
		    ta ? M : K, B, tb ? K : N, acc || bias ? 1.0f : 0.0f, C, N);
#else
	if (M <= SMALL_M && tb)
		gemv_tb(C, A, B, bias, M, N, K, ta, acc);
	else
		gemm_native(C, A, B, bias, M, N, K, ta, tb, acc);
#endif
}

// ----------------------------------------------------------------------------
// Column sums, used for bias gradients. Threads own column blocks and walk the rows in order, so the
// sums are the same whatever the thread count.

#define COLBLK 64

static void colsum_acc(float *restrict out, const float *restrict x, int rows, int cols)
{
	int nblk = (cols + COLBLK - 1) / COLBLK;
#pragma omp parallel for schedule(static) if ((long)rows * cols >= TNN_PAR_MIN && nblk > 1)
	for (int b = 0; b < nblk; b++) {
		float acc[COLBLK] = {0};
		int c0 = b * COLBLK, nc = min_i(COLBLK, cols - c0);
		for (int r = 0; r < rows; r++) {
			const float *row = x + (size_t)r * cols + c0;
			for (int c = 0; c < nc; c++)
				acc[c] += row[c];
		}
		for (int c = 0; c < nc; c++)
			out[c0 + c] += acc[c];
	}
}

TNN_API void tnn_matmul_bwd(float *dA, float *dB, float *dbias, const float *dC, const float *A, const float *B,
			    int M, int N, int K)
{
	if (dA)
		tnn_matmul(dA, dC, B, NULL, M, K, N, TNN_TRANS_B | TNN_ACCUMULATE);
	if (dB)
		tnn_matmul(dB, A, dC, NULL, K, N, M, TNN_TRANS_A | TNN_ACCUMULATE);
	if (dbias)
		colsum_acc(dbias, dC, M, N);
}

// ----------------------------------------------------------------------------
// Linear

TNN_API void tnn_linear_fwd(float *out, const float *inp, const float *weight, const float *bias, int N, int C,
			    int OC)
{
	tnn_matmul(out, inp, weight, bias, N, OC, C, TNN_TRANS_B);
}

TNN_API void tnn_linear_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
			    const float *weight, int N, int C, int OC)
{
	if (dinp)
		tnn_matmul(dinp, dout, weight, NULL, N, C, OC, TNN_ACCUMULATE);
	if (dweight)
		tnn_matmul(dweight, dout, inp, NULL, OC, C, N, TNN_TRANS_A | TNN_ACCUMULATE);
	if (dbias)
		colsum_acc(dbias, dout, N, OC);
}

// ----------------------------------------------------------------------------
// Convolution: im2col + matmul per image. col is (C·KH·KW, HO·WO); row r = (c, kh, kw).

TNN_API void tnn_im2col(float *col, const float *img, int C, int H, int W, int KH, int KW, int stride, int pad)
{
	if (stride < 1)
		return; /* no window: nothing to compute (and no division by 0) */
	int HO = TNN_CONV_OUT(H, KH, stride, pad), WO = TNN_CONV_OUT(W, KW, stride, pad);
	int rows = C * KH * KW;
#pragma omp parallel for schedule(static) if ((long)rows * HO * WO >= 4 * TNN_PAR_MIN && !omp_in_parallel())
	for (int r = 0; r < rows; r++) {
		int c = r / (KH * KW), kh = r / KW % KH, kw = r % KW;
		const float *plane = img + (size_t)c * H * W;
		float *dst = col + (size_t)r * HO * WO;
		for (int oh = 0; oh < HO; oh++) {
			int h = oh * stride - pad + kh;
			float *d = dst + (size_t)oh * WO;
			if (h < 0 || h >= H) {
				memset(d, 0, WO * sizeof(float));
				continue;
			}
			const float *src = plane + (size_t)h * W;
			for (int ow = 0; ow < WO; ow++) {
				int w = ow * stride - pad + kw;
				d[ow] = w >= 0 && w < W ? src[w] : 0.0f;
			}
		}
	}
}

TNN_API void tnn_col2im(float *img, const float *col, int C, int H, int W, int KH, int KW, int stride, int pad)
{
	if (stride < 1)
		return; /* no window: nothing to compute (and no division by 0) */
	int HO = TNN_CONV_OUT(H, KH, stride, pad), WO = TNN_CONV_OUT(W, KW, stride, pad);
	/* Threads own channels; within a channel, rows (kh, kw) are added in order. */
#pragma omp parallel for schedule(static) if ((long)C * KH * KW * HO * WO >= 4 * TNN_PAR_MIN && !omp_in_parallel())
	for (int c = 0; c < C; c++) {
		float *plane = img + (size_t)c * H * W;
		for (int kh = 0; kh < KH; kh++)
			for (int kw = 0; kw < KW; kw++) {
				const float *src = col + ((size_t)(c * KH + kh) * KW + kw) * HO * WO;
				for (int oh = 0; oh < HO; oh++) {
					int h = oh * stride - pad + kh;
					if (h < 0 || h >= H)
						continue;
					for (int ow = 0; ow < WO; ow++) {
						int w = ow * stride - pad + kw;
						if (w >= 0 && w < W)
							plane[(size_t)h * W + w] += src[(size_t)oh * WO + ow];
					}
				}
			}
	}
}

static void add_channel_bias(float *out, const float *bias, int OC, int HW)
{
	for (int o = 0; o < OC; o++)
		for (int i = 0; i < HW; i++)
			out[(size_t)o * HW + i] += bias[o];
}

TNN_API void tnn_conv2d_fwd(float *out, const float *inp, const float *weight, const float *bias, int B, int C,
			    int H, int W, int OC, int KH, int KW, int stride, int pad)
{
	if (stride < 1)
		return; /* no window: nothing to compute (and no division by 0) */
	int HO = TNN_CONV_OUT(H, KH, stride, pad), WO = TNN_CONV_OUT(W, KW, stride, pad);
	int CK = C * KH * KW, HW = HO * WO;
	float *col = malloc((size_t)CK * HW * sizeof(float)); // (C·KH·KW, HO·WO)
	if (!col)
		abort();
	for (int b = 0; b < B; b++) {
		float *o = out + (size_t)b * OC * HW; // (OC, HO·WO)
		tnn_im2col(col, inp + (size_t)b * C * H * W, C, H, W, KH, KW, stride, pad);
		tnn_matmul(o, weight, col, NULL, OC, HW, CK, 0);
		if (bias)
			add_channel_bias(o, bias, OC, HW);
	}
	free(col);
}

TNN_API void tnn_conv2d_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
			    const float *weight, int B, int C, int H, int W, int OC, int KH, int KW, int stride,
			    int pad)
{
	if (stride < 1)
		return; /* no window: nothing to compute (and no division by 0) */
	int HO = TNN_CONV_OUT(H, KH, stride, pad), WO = TNN_CONV_OUT(W, KW, stride, pad);
	int CK = C * KH * KW, HW = HO * WO;
	float *col = malloc((size_t)CK * HW * sizeof(float)); // (C·KH·KW, HO·WO)
	if (!col)
		abort();
	for (int b = 0; b < B; b++) {
		const float *dout_b = dout + (size_t)b * OC * HW; // (OC, HO·WO)
		if (dweight) {
			tnn_im2col(col, inp + (size_t)b * C * H * W, C, H, W, KH, KW, stride, pad);
			tnn_matmul(dweight, dout_b, col, NULL, OC, CK, HW, TNN_TRANS_B | TNN_ACCUMULATE);
		}
		if (dinp) {
			tnn_matmul(col, weight, dout_b, NULL, CK, HW, OC, TNN_TRANS_A);
			tnn_col2im(dinp + (size_t)b * C * H * W, col, C, H, W, KH, KW, stride, pad);
		}
		if (dbias)
			for (int o = 0; o < OC; o++) {
				float s = 0.0f;
				for (int i = 0; i < HW; i++)
					s += dout_b[(size_t)o * HW + i];
				dbias[o] += s;
			}
	}
	free(col);
}
