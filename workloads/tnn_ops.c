/* libtnn's non-GEMM kernels (activations, softmax, layernorm, attention, embedding, pooling, loss,
 * optimizers), the run-time choice between the AVX2/FMA and portable paths, and per-thread scratch.
 * Simple loops are written once as always-inline bodies and instantiated twice, once compiled for
 * AVX2+FMA and once for the baseline ISA; loops that need exp() have explicit AVX2 versions. Parallel loops
 * give each output element to one thread and never split a sum, so results do not depend on the thread
 * count. */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "tnn.h"
#include "tnn_internal.h"

// ----------------------------------------------------------------------------
// Dispatch and scratch

static int simd_state = -1; /* -1: not decided yet */

static int cpu_has_avx2_fma(void)
{
	const char *e = getenv("TNN_SIMD");
	if (e && e[0] == '0')
		return 0;
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

TNN_HIDDEN int tnn_simd_(void)
{
	int s = __atomic_load_n(&simd_state, __ATOMIC_RELAXED);
	if (s < 0) {
		s = cpu_has_avx2_fma();
		__atomic_store_n(&simd_state, s, __ATOMIC_RELAXED);
	}
	return s;
}

TNN_API void tnn_set_simd(int enable)
{
	__atomic_store_n(&simd_state, enable ? cpu_has_avx2_fma() : 0, __ATOMIC_RELAXED);
}

TNN_API const char *tnn_backend(void)
{
#ifdef TNN_OPENBLAS
	return tnn_simd_() ? "openblas+avx2" : "openblas+scalar";
#else
	return tnn_simd_() ? "avx2" : "scalar";
#endif
}

#define N_SCRATCH 4
static __thread float *scratch[N_SCRATCH];
static __thread size_t scratch_n[N_SCRATCH];

/* A thread's scratch buffers go when it exits (a key's destructor; the main thread's, and the
 * OpenMP pool's that live to the end, stay till then), so that short-lived threads calling the
 * kernels do not leak them. The key is deleted when libtnn.so is unloaded, before its code goes. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_keyed;

static void scratch_free(void *unused)
{
	(void)unused;
	for (int i = 0; i < N_SCRATCH; i++) {
		free(scratch[i]);
		scratch[i] = NULL;
		scratch_n[i] = 0;
	}
}

static void scratch_key_make(void)
{
	scratch_keyed = pthread_key_create(&scratch_key, scratch_free) == 0;
}

__attribute__((destructor)) static void scratch_key_gone(void)
{
	if (scratch_keyed)
		pthread_key_delete(scratch_key);
}

TNN_HIDDEN float *tnn_scratch_(int slot, size_t n)
{
	if (n > scratch_n[slot]) {
		void *p;
		free(scratch[slot]);
		if (posix_memalign(&p, 64, (n + 16) * sizeof(float)))
			abort();
		scratch[slot] = p;
		scratch_n[slot] = n;
		pthread_once(&scratch_once, scratch_key_make);
		if (scratch_keyed)
			pthread_setspecific(scratch_key, (void *)1); /* any non-NULL value: the destructor runs */
	}
	return scratch[slot];
}

/* Defines name_gen and name_avx from the always-inline body name_impl; CALL picks one at run time. */
#define INLINE static inline __attribute__((always_inline))
#define CLONE(name, params, args)                                                                          \
	static void name##_gen params { name##_impl args; }                                               \
	TNN_AVX2 static void name##_avx params { name##_impl args; }
#define CALL(name, args) (tnn_simd_() ? name##_avx args : name##_gen args)

#define PAR_IF(work) if ((long)(work) >= TNN_PAR_MIN && !omp_in_parallel())
#define CHUNK 4096L /* elements per parallel chunk of elementwise kernels */

static inline long min_l(long a, long b) { return a < b ? a : b; }

/* Sum in eight fixed lanes (vectorizable without reassociation), then a fixed-order combine (dot_lanes,
 * its twin for dot products, is in tnn_internal.h). */
INLINE float sum_lanes(const float *x, int n)
{
	float acc[8] = {0};
	int i = 0;
	for (; i + 8 <= n; i += 8)
		for (int l = 0; l < 8; l++)
			acc[l] += x[i + l];
	float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
	for (; i < n; i++)
		s += x[i];
	return s;
}

// ----------------------------------------------------------------------------
// AVX2 exp: exp(x) = 2^n · e^r, |r| ≤ ln2/2, degree-6 Taylor for e^r (relative error < 2e-7).

TNN_AVX2 static inline __m256 exp256(__m256 x)
{
	x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.3f));
	__m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)),
				   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
	r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
	__m256 p = _mm256_set1_ps(1.0f / 720);
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
	__m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
	return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

TNN_AVX2 static inline __m256i tail_mask(int r)
{
	return _mm256_cmpgt_epi32(_mm256_set1_epi32(r), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

TNN_AVX2 static inline float hsum256(__m256 v)
{
	__m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_add_ps(s, _mm_movehl_ps(s, s));
	s = _mm_add_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

TNN_AVX2 static inline float hmax256(__m256 v)
{
	__m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
	s = _mm_max_ps(s, _mm_movehl_ps(s, s));
	s = _mm_max_ss(s, _mm_movehdup_ps(s));
	return _mm_cvtss_f32(s);
}

// ----------------------------------------------------------------------------
// Softmax of one row of n values times scale, into out (may alias x).

static void softmax_row_gen(float *out, const float *x, int n, float scale)
{
	float mx = -INFINITY, s = 0.0f;
	for (int i = 0; i < n; i++)
		mx = fmaxf(mx, x[i] * scale);
	for (int i = 0; i < n; i++) {
		out[i] = expf(x[i] * scale - mx);
		s += out[i];
	}
	float inv = 1.0f / s;
	for (int i = 0; i < n; i++)
		out[i] *= inv;
}

/* A row with a NaN or an infinity (scaled) goes to the portable code, which gives NaN as IEEE
 * arithmetic does: the vector max drops a NaN and exp256 clamps, which would hide a diverged
 * training's NaN loss behind a finite one. */
TNN_AVX2 static void softmax_row_avx(float *out, const float *x, int n, float scale)
{
	__m256 vs = _mm256_set1_ps(scale), vmx = _mm256_set1_ps(-INFINITY), ninf = vmx;
	__m256 bad = _mm256_setzero_ps(), zero = _mm256_setzero_ps();
	int i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
		vmx = _mm256_max_ps(vmx, v);
		bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_sub_ps(v, v), zero, _CMP_NEQ_UQ)); /* NaN, ±inf */
	}
	__m256i tm = tail_mask(n - i);
	if (i < n) {
		__m256 v = _mm256_mul_ps(_mm256_maskload_ps(x + i, tm), vs); /* 0 in the lanes past n */
		vmx = _mm256_max_ps(vmx, _mm256_blendv_ps(ninf, v, _mm256_castsi256_ps(tm)));
		bad = _mm256_or_ps(bad, _mm256_cmp_ps(_mm256_sub_ps(v, v), zero, _CMP_NEQ_UQ));
	}
	if (_mm256_movemask_ps(bad)) {
		softmax_row_gen(out, x, n, scale); /* nothing written yet: out may alias x */
		return;
	}
	__m256 mx = _mm256_set1_ps(hmax256(vmx)), acc = _mm256_setzero_ps();
	for (i = 0; i + 8 <= n; i += 8) {
		__m256 e = exp256(_mm256_fmsub_ps(_mm256_loadu_ps(x + i), vs, mx));
		_mm256_storeu_ps(out + i, e);
		acc = _mm256_add_ps(acc, e);
	}
	if (i < n) {
		__m256 e = exp256(_mm256_fmsub_ps(_mm256_maskload_ps(x + i, tm), vs, mx));
		e = _mm256_and_ps(e, _mm256_castsi256_ps(tm));
		_mm256_maskstore_ps(out + i, tm, e);
		acc = _mm256_add_ps(acc, e);
	}
	__m256 inv = _mm256_set1_ps(1.0f / hsum256(acc));
	for (i = 0; i + 8 <= n; i += 8)
		_mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(out + i), inv));
	if (i < n)
		_mm256_maskstore_ps(out + i, tm, _mm256_mul_ps(_mm256_maskload_ps(out + i, tm), inv));
}

static void softmax_row(float *out, const float *x, int n, float scale)
{
	if (tnn_simd_())
		softmax_row_avx(out, x, n, scale);
	else
		softmax_row_gen(out, x, n, scale);
}

TNN_API void tnn_softmax_fwd(float *out, const float *inp, int N, int C)
{
#pragma omp parallel for schedule(static) PAR_IF((long)N * C * 8)
	for (int r = 0; r < N; r++)
		softmax_row(out + (size_t)r * C, inp + (size_t)r * C, C, 1.0f);
}

TNN_API void tnn_causal_softmax_fwd(float *att, const float *preatt, int BH, int T, float scale)
{
#pragma omp parallel for schedule(static) PAR_IF((long)BH * T * T * 4)
	for (long r = 0; r < (long)BH * T; r++) {
		int i = (int)(r % T);
		float *o = att + (size_t)r * T;
		softmax_row(o, preatt + (size_t)r * T, i + 1, scale);
		memset(o + i + 1, 0, (size_t)(T - i - 1) * sizeof(float));
	}
}

INLINE void causal_softmax_bwd_row_impl(float *dp, const float *da, const float *a, int n, float scale)
{
	float d = dot_lanes(a, da, n);
	for (int j = 0; j < n; j++)
		dp[j] += scale * a[j] * (da[j] - d);
}
CLONE(causal_softmax_bwd_row, (float *dp, const float *da, const float *a, int n, float scale),
      (dp, da, a, n, scale))

TNN_API void tnn_causal_softmax_bwd(float *dpreatt, const float *datt, const float *att, int BH, int T, float scale)
{
#pragma omp parallel for schedule(static) PAR_IF((long)BH * T * T * 2)
	for (long r = 0; r < (long)BH * T; r++) {
		size_t o = (size_t)r * T;
		CALL(causal_softmax_bwd_row, (dpreatt + o, datt + o, att + o, (int)(r % T) + 1, scale));
	}
}

// ----------------------------------------------------------------------------
// Elementwise: relu, gelu, add

INLINE void relu_fwd_impl(float *out, const float *x, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
CLONE(relu_fwd, (float *out, const float *x, long n), (out, x, n))

INLINE void relu_bwd_impl(float *dx, const float *dy, const float *x, long n)
{
	for (long i = 0; i < n; i++)
		dx[i] += x[i] > 0.0f ? dy[i] : 0.0f;
}
CLONE(relu_bwd, (float *dx, const float *dy, const float *x, long n), (dx, dy, x, n))

INLINE void add_impl(float *out, const float *a, const float *b, long n)
{
	for (long i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}
CLONE(add, (float *out, const float *a, const float *b, long n), (out, a, b, n))

#define GELU_S 0.7978845608f /* sqrt(2/pi) */
#define GELU_C 0.044715f

static void gelu_fwd_gen(float *out, const float *x, long n)
{
	for (long i = 0; i < n; i++) {
		float v = x[i];
		out[i] = 0.5f * v * (1.0f + tanhf(GELU_S * (v + GELU_C * v * v * v)));
	}
}

static void gelu_bwd_gen(float *dx, const float *dy, const float *x, long n)
{
	for (long i = 0; i < n; i++) {
		float v = x[i], u = GELU_S * (v + GELU_C * v * v * v), t = tanhf(u);
		float g = 0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * GELU_S * (1.0f + 3.0f * GELU_C * v * v);
		dx[i] += g * dy[i];
	}
}

/* tanh(u) = 1 - 2/(exp(2u) + 1); exp256 saturates, so |u| large gives ±1. */
TNN_AVX2 static inline __m256 tanh256(__m256 u)
{
	__m256 one = _mm256_set1_ps(1.0f);
	__m256 e = exp256(_mm256_add_ps(u, u));
	return _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.0f), _mm256_add_ps(e, one)));
}

TNN_AVX2 static void gelu_fwd_avx(float *out, const float *x, long n)
{
	__m256 s = _mm256_set1_ps(GELU_S), c = _mm256_set1_ps(GELU_C), half = _mm256_set1_ps(0.5f);
	__m256 one = _mm256_set1_ps(1.0f);
	long i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i);
		__m256 u = _mm256_mul_ps(s, _mm256_fmadd_ps(_mm256_mul_ps(c, v), _mm256_mul_ps(v, v), v));
		__m256 t = tanh256(u);
		_mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_mul_ps(half, v), _mm256_add_ps(one, t)));
	}
	gelu_fwd_gen(out + i, x + i, n - i);
}

TNN_AVX2 static void gelu_bwd_avx(float *dx, const float *dy, const float *x, long n)
{
	__m256 s = _mm256_set1_ps(GELU_S), c = _mm256_set1_ps(GELU_C), half = _mm256_set1_ps(0.5f);
	__m256 one = _mm256_set1_ps(1.0f), c3 = _mm256_set1_ps(3.0f * GELU_C);
	long i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(x + i), v2 = _mm256_mul_ps(v, v);
		__m256 u = _mm256_mul_ps(s, _mm256_fmadd_ps(_mm256_mul_ps(c, v), v2, v));
		__m256 t = tanh256(u);
		__m256 sech2 = _mm256_fnmadd_ps(t, t, one);
		__m256 du = _mm256_mul_ps(s, _mm256_fmadd_ps(c3, v2, one));
		__m256 g = _mm256_mul_ps(half, _mm256_add_ps(_mm256_add_ps(one, t),
							     _mm256_mul_ps(_mm256_mul_ps(v, sech2), du)));
		_mm256_storeu_ps(dx + i, _mm256_fmadd_ps(g, _mm256_loadu_ps(dy + i), _mm256_loadu_ps(dx + i)));
	}
	gelu_bwd_gen(dx + i, dy + i, x + i, n - i);
}

/* Runs body over [0, n) in CHUNK-sized pieces, in parallel when n is large. */
#define ELEMENTWISE(n, lo, len, body)                                                                      \
	do {                                                                                               \
		long n_chunks_ = ((n) + CHUNK - 1) / CHUNK;                                                \
		_Pragma("omp parallel for schedule(static) if (n_chunks_ > 4 && !omp_in_parallel())")       \
		for (long c_ = 0; c_ < n_chunks_; c_++) {                                                  \
			long lo = c_ * CHUNK, len = min_l(CHUNK, (n) - lo);                                \
			body;                                                                              \
		}                                                                                          \
	} while (0)

TNN_API void tnn_relu_fwd(float *out, const float *inp, long n)
{
	ELEMENTWISE(n, lo, len, CALL(relu_fwd, (out + lo, inp + lo, len)));
}

TNN_API void tnn_relu_bwd(float *dinp, const float *dout, const float *inp, long n)
{
	ELEMENTWISE(n, lo, len, CALL(relu_bwd, (dinp + lo, dout + lo, inp + lo, len)));
}

TNN_API void tnn_gelu_fwd(float *out, const float *inp, long n)
{
	ELEMENTWISE(n, lo, len, CALL(gelu_fwd, (out + lo, inp + lo, len)));
}

TNN_API void tnn_gelu_bwd(float *dinp, const float *dout, const float *inp, long n)
{
	ELEMENTWISE(n, lo, len, CALL(gelu_bwd, (dinp + lo, dout + lo, inp + lo, len)));
}

TNN_API void tnn_add(float *out, const float *a, const float *b, long n)
{
	ELEMENTWISE(n, lo, len, CALL(add, (out + lo, a + lo, b + lo, len)));
}

// ----------------------------------------------------------------------------
// Layernorm

#define LN_EPS 1e-5f

INLINE void layernorm_row_impl(float *out, float *mean, float *rstd, const float *x, const float *w,
			       const float *b, int C)
{
	float m = sum_lanes(x, C) / C;
	float acc[8] = {0};
	int i = 0;
	for (; i + 8 <= C; i += 8)
		for (int l = 0; l < 8; l++)
			acc[l] += (x[i + l] - m) * (x[i + l] - m);
	float v = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
	for (; i < C; i++)
		v += (x[i] - m) * (x[i] - m);
	float s = 1.0f / sqrtf(v / C + LN_EPS);
	for (i = 0; i < C; i++)
		out[i] = (x[i] - m) * s * w[i] + b[i];
	*mean = m;
	*rstd = s;
}
CLONE(layernorm_row, (float *out, float *mean, float *rstd, const float *x, const float *w, const float *b, int C),
      (out, mean, rstd, x, w, b, C))

TNN_API void tnn_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *weight,
			       const float *bias, int N, int C)
{
#pragma omp parallel for schedule(static) PAR_IF((long)N * C * 4)
	for (int r = 0; r < N; r++)
		CALL(layernorm_row, (out + (size_t)r * C, mean + r, rstd + r, inp + (size_t)r * C, weight, bias, C));
}

/* dinp for one row; tmp holds C floats. */
INLINE void layernorm_bwd_row_impl(float *dx, const float *dy, const float *x, const float *w, float m, float s,
				   float *tmp, int C)
{
	for (int i = 0; i < C; i++)
		tmp[i] = w[i] * dy[i]; /* dnorm */
	float dmean = sum_lanes(tmp, C) / C;
	float acc[8] = {0};
	int i = 0;
	for (; i + 8 <= C; i += 8)
		for (int l = 0; l < 8; l++)
			acc[l] += tmp[i + l] * (x[i + l] - m) * s;
	float dnn = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
	for (; i < C; i++)
		dnn += tmp[i] * (x[i] - m) * s;
	dnn /= C;
	for (i = 0; i < C; i++)
		dx[i] += (tmp[i] - dmean - (x[i] - m) * s * dnn) * s;
}
CLONE(layernorm_bwd_row,
      (float *dx, const float *dy, const float *x, const float *w, float m, float s, float *tmp, int C),
      (dx, dy, x, w, m, s, tmp, C))

#define LN_COLBLK 64

/* dweight[c0..c0+nc) += Σ_rows dy·norm, dbias += Σ_rows dy, rows in order. */
INLINE void layernorm_bwd_cols_impl(float *dw, float *db, const float *dy, const float *x, const float *mean,
				    const float *rstd, int N, int C, int c0, int nc)
{
	float aw[LN_COLBLK] = {0}, ab[LN_COLBLK] = {0};
	for (int r = 0; r < N; r++) {
		const float *yr = dy + (size_t)r * C + c0, *xr = x + (size_t)r * C + c0;
		float m = mean[r], s = rstd[r];
		for (int c = 0; c < nc; c++) {
			aw[c] += yr[c] * ((xr[c] - m) * s);
			ab[c] += yr[c];
		}
	}
	for (int c = 0; c < nc; c++) {
		if (dw)
			dw[c0 + c] += aw[c];
		if (db)
			db[c0 + c] += ab[c];
	}
}
CLONE(layernorm_bwd_cols,
      (float *dw, float *db, const float *dy, const float *x, const float *mean, const float *rstd, int N, int C,
       int c0, int nc),
      (dw, db, dy, x, mean, rstd, N, C, c0, nc))

TNN_API void tnn_layernorm_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
			       const float *weight, const float *mean, const float *rstd, int N, int C)
{
	if (dinp) {
#pragma omp parallel PAR_IF((long)N * C * 4)
		{
			float *tmp = tnn_scratch_(2, (size_t)C);
#pragma omp for schedule(static)
			for (int r = 0; r < N; r++)
				CALL(layernorm_bwd_row, (dinp + (size_t)r * C, dout + (size_t)r * C,
							 inp + (size_t)r * C, weight, mean[r], rstd[r], tmp, C));
		}
	}
	if (dweight || dbias) {
		int nblk = (C + LN_COLBLK - 1) / LN_COLBLK;
#pragma omp parallel for schedule(static) PAR_IF((long)N * C * 2)
		for (int b = 0; b < nblk; b++) {
			int c0 = b * LN_COLBLK, nc = C - c0 < LN_COLBLK ? C - c0 : LN_COLBLK;
			CALL(layernorm_bwd_cols, (dweight, dbias, dout, inp, mean, rstd, N, C, c0, nc));
		}
	}
}

// ----------------------------------------------------------------------------
// Attention. q, k, v are gathered into head-major (B, NH, T, HS) buffers so that each head is a pair of
// tnn_matmul calls around tnn_causal_softmax_fwd.

/* (B, T, 3C) slice `which` (0 q, 1 k, 2 v) -> (B, NH, T, HS) */
static void gather_heads(float *dst, const float *qkv, int which, int B, int T, int C, int NH)
{
	int HS = C / NH;
#pragma omp parallel for schedule(static) PAR_IF((long)B * T * C)
	for (long bt = 0; bt < (long)B * T; bt++) {
		long b = bt / T, t = bt % T;
		const float *src = qkv + (size_t)bt * 3 * C + (size_t)which * C;
		for (int h = 0; h < NH; h++)
			memcpy(dst + (((size_t)b * NH + h) * T + t) * HS, src + (size_t)h * HS, HS * sizeof(float));
	}
}

/* (B, NH, T, HS) -> dst (B, T, stride) columns [off, off+C): overwrite, or add when acc */
static void scatter_heads(float *dst, long stride, int off, const float *src, int B, int T, int C, int NH, int acc)
{
	int HS = C / NH;
#pragma omp parallel for schedule(static) PAR_IF((long)B * T * C)
	for (long bt = 0; bt < (long)B * T; bt++) {
		long b = bt / T, t = bt % T;
		float *d = dst + (size_t)bt * stride + off;
		for (int h = 0; h < NH; h++) {
			const float *s = src + (((size_t)b * NH + h) * T + t) * HS;
			if (acc)
				for (int i = 0; i < HS; i++)
					d[h * HS + i] += s[i];
			else
				memcpy(d + (size_t)h * HS, s, HS * sizeof(float));
		}
	}
}

static float *xmalloc(size_t n)
{
	float *p = malloc(n * sizeof(float));
	if (!p)
		abort();
	return p;
}

TNN_API void tnn_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH)
{
	int HS = C / NH, BH = B * NH;
	size_t hsz = (size_t)T * HS, n = (size_t)BH * hsz;
	float *q = xmalloc(3 * n), *k = q + n, *v = k + n; // each (B, NH, T, HS)
	gather_heads(q, qkv, 0, B, T, C, NH);
	gather_heads(k, qkv, 1, B, T, C, NH);
	gather_heads(v, qkv, 2, B, T, C, NH);
#pragma omp parallel for schedule(static) PAR_IF((long)BH * T * T * HS)
	for (int bh = 0; bh < BH; bh++)
		tnn_matmul(att + (size_t)bh * T * T, q + bh * hsz, k + bh * hsz, NULL, T, T, HS, TNN_TRANS_B);
	tnn_causal_softmax_fwd(att, att, BH, T, 1.0f / sqrtf((float)HS));
	float *y = q; // (B, NH, T, HS), q is no longer needed
#pragma omp parallel for schedule(static) PAR_IF((long)BH * T * T * HS)
	for (int bh = 0; bh < BH; bh++)
		tnn_matmul(y + bh * hsz, att + (size_t)bh * T * T, v + bh * hsz, NULL, T, HS, T, 0);
	scatter_heads(out, C, 0, y, B, T, C, NH, 0);
	free(q);
}

TNN_API void tnn_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *att, int B, int T,
			       int C, int NH)
{
	int HS = C / NH, BH = B * NH;
	size_t hsz = (size_t)T * HS, n = (size_t)BH * hsz, tt = (size_t)T * T;
	float *q = xmalloc(7 * n), *k = q + n, *v = k + n;  // each (B, NH, T, HS)
	float *dy = v + n, *dq = dy + n, *dk = dq + n, *dv = dk + n; // each (B, NH, T, HS)
	float *datt = xmalloc(BH * tt);                              // (B, NH, T, T)
	float *dpre = calloc(BH * tt, sizeof(float));                // (B, NH, T, T)
	if (!dpre)
		abort();
	gather_heads(q, qkv, 0, B, T, C, NH);
	gather_heads(k, qkv, 1, B, T, C, NH);
	gather_heads(v, qkv, 2, B, T, C, NH);
	/* dout (B, T, C) -> dy (B, NH, T, HS) */
#pragma omp parallel for schedule(static) PAR_IF((long)B * T * C)
	for (long bt = 0; bt < (long)B * T; bt++) {
		long b = bt / T, t = bt % T;
		for (int h = 0; h < NH; h++)
			memcpy(dy + (((size_t)b * NH + h) * T + t) * HS, dout + (size_t)bt * C + (size_t)h * HS,
			       HS * sizeof(float));
	}
#pragma omp parallel for schedule(static) PAR_IF((long)BH * T * T * HS)
	for (int bh = 0; bh < BH; bh++) {
		tnn_matmul(datt + bh * tt, dy + bh * hsz, v + bh * hsz, NULL, T, T, HS, TNN_TRANS_B);
		tnn_matmul(dv + bh * hsz, att + bh * tt, dy + bh * hsz, NULL, T, HS, T, TNN_TRANS_A);
	}
	tnn_causal_softmax_bwd(dpre, datt, att, BH, T, 1.0f / sqrtf((float)HS));
#pragma omp parallel for schedule(static) PAR_IF((long)BH * T * T * HS)
	for (int bh = 0; bh < BH; bh++) {
		tnn_matmul(dq + bh * hsz, dpre + bh * tt, k + bh * hsz, NULL, T, HS, T, 0);
		tnn_matmul(dk + bh * hsz, dpre + bh * tt, q + bh * hsz, NULL, T, HS, T, TNN_TRANS_A);
	}
	scatter_heads(dqkv, 3L * C, 0, dq, B, T, C, NH, 1);
	scatter_heads(dqkv, 3L * C, C, dk, B, T, C, NH, 1);
	scatter_heads(dqkv, 3L * C, 2 * C, dv, B, T, C, NH, 1);
	free(dpre);
	free(datt);
	free(q);
}

INLINE void decode_scores_impl(float *s, const float *q, const float *kc, int HS, int n)
{
	for (int t = 0; t < n; t++)
		s[t] = dot_lanes(q, kc + (size_t)t * HS, HS);
}
CLONE(decode_scores, (float *s, const float *q, const float *kc, int HS, int n), (s, q, kc, HS, n))

INLINE void decode_values_impl(float *o, const float *s, const float *vc, int HS, int n)
{
	for (int i = 0; i < HS; i++)
		o[i] = 0.0f;
	for (int t = 0; t < n; t++)
		for (int i = 0; i < HS; i++)
			o[i] += s[t] * vc[(size_t)t * HS + i];
}
CLONE(decode_values, (float *o, const float *s, const float *vc, int HS, int n), (o, s, vc, HS, n))

TNN_API void tnn_attention_decode(float *out, const float *q, const float *kcache, const float *vcache, int B,
				  int NH, int HS, int TCAP, int n)
{
	float scale = 1.0f / sqrtf((float)HS);
#pragma omp parallel PAR_IF((long)B * NH * n * HS * 2)
	{
		float *s = tnn_scratch_(2, (size_t)n); // (n)
#pragma omp for schedule(static)
		for (int bh = 0; bh < B * NH; bh++) {
			size_t qo = (size_t)(bh / NH) * NH * HS + (size_t)(bh % NH) * HS;
			const float *kc = kcache + (size_t)bh * TCAP * HS, *vc = vcache + (size_t)bh * TCAP * HS;
			CALL(decode_scores, (s, q + qo, kc, HS, n));
			softmax_row(s, s, n, scale);
			CALL(decode_values, (out + qo, s, vc, HS, n));
		}
	}
}

// ----------------------------------------------------------------------------
// Embedding

TNN_API void tnn_embedding_fwd(float *out, const int *ids, const float *table, int N, int V, int C)
{
	(void)V;
#pragma omp parallel for schedule(static) PAR_IF((long)N * C)
	for (int i = 0; i < N; i++)
		memcpy(out + (size_t)i * C, table + (size_t)ids[i] * C, C * sizeof(float));
}

INLINE void embedding_bwd_cols_impl(float *dtable, const float *dout, const int *ids, int N, int C, int c0, int nc)
{
	for (int i = 0; i < N; i++) {
		float *d = dtable + (size_t)ids[i] * C + c0;
		const float *s = dout + (size_t)i * C + c0;
		for (int c = 0; c < nc; c++)
			d[c] += s[c];
	}
}
CLONE(embedding_bwd_cols, (float *dtable, const float *dout, const int *ids, int N, int C, int c0, int nc),
      (dtable, dout, ids, N, C, c0, nc))

TNN_API void tnn_embedding_bwd(float *dtable, const float *dout, const int *ids, int N, int V, int C)
{
	(void)V;
	int nblk = (C + 63) / 64;
	/* threads own column blocks, so repeated ids are summed in row order */
#pragma omp parallel for schedule(static) PAR_IF((long)N * C)
	for (int b = 0; b < nblk; b++)
		CALL(embedding_bwd_cols, (dtable, dout, ids, N, C, b * 64, C - b * 64 < 64 ? C - b * 64 : 64));
}

// ----------------------------------------------------------------------------
// Cross-entropy

TNN_API float tnn_crossentropy_fwd(float *losses, float *probs, const float *logits, const int *targets, int N, int V)
{
	tnn_softmax_fwd(probs, logits, N, V);
	double sum = 0.0;
	for (int i = 0; i < N; i++) {
		float p = probs[(size_t)i * V + targets[i]];
		if (p < 1e-30f) {
			/* a probability float cannot hold (exp underflows, or the vector exp's clamp gave
			 * e^-87): the loss from the logits, log-sum-exp in double, not a capped -log p */
			const float *z = logits + (size_t)i * V;
			double mx = z[0], se = 0;
			for (int j = 1; j < V; j++)
				mx = z[j] > mx ? z[j] : mx;
			for (int j = 0; j < V; j++)
				se += exp((double)z[j] - mx);
			losses[i] = (float)(mx + log(se) - z[targets[i]]);
		} else {
			losses[i] = -logf(p);
		}
		sum += losses[i];
	}
	return N > 0 ? (float)(sum / N) : 0.0f;
}

INLINE void ce_bwd_row_impl(float *dl, const float *p, int t, int V, float dloss)
{
	for (int j = 0; j < V; j++)
		dl[j] += dloss * p[j];
	dl[t] -= dloss;
}
CLONE(ce_bwd_row, (float *dl, const float *p, int t, int V, float dloss), (dl, p, t, V, dloss))

TNN_API void tnn_crossentropy_bwd(float *dlogits, const float *probs, const int *targets, int N, int V, float dloss)
{
#pragma omp parallel for schedule(static) PAR_IF((long)N * V)
	for (int i = 0; i < N; i++)
		CALL(ce_bwd_row, (dlogits + (size_t)i * V, probs + (size_t)i * V, targets[i], V, dloss));
}

// ----------------------------------------------------------------------------
// Pooling

TNN_API void tnn_maxpool2d_fwd(float *out, int *argmax, const float *inp, int B, int C, int H, int W, int K,
			       int stride)
{
	if (stride < 1)
		return; /* no window: nothing to compute (and no division by 0) */
	int HO = TNN_CONV_OUT(H, K, stride, 0), WO = TNN_CONV_OUT(W, K, stride, 0);
#pragma omp parallel for schedule(static) PAR_IF((long)B * C * HO * WO * K * K)
	for (long p = 0; p < (long)B * C; p++) {
		const float *x = inp + (size_t)p * H * W;
		float *o = out + (size_t)p * HO * WO;
		int *a = argmax + (size_t)p * HO * WO;
		for (int oh = 0; oh < HO; oh++)
			for (int ow = 0; ow < WO; ow++) {
				int best = oh * stride * W + ow * stride;
				for (int kh = 0; kh < K; kh++)
					for (int kw = 0; kw < K; kw++) {
						int idx = (oh * stride + kh) * W + ow * stride + kw;
						if (x[idx] > x[best])
							best = idx;
					}
				o[oh * WO + ow] = x[best];
				a[oh * WO + ow] = best;
			}
	}
}

TNN_API void tnn_maxpool2d_bwd(float *dinp, const float *dout, const int *argmax, int B, int C, int H, int W, int K,
			       int stride)
{
	if (stride < 1)
		return; /* no window: nothing to compute (and no division by 0) */
	int HO = TNN_CONV_OUT(H, K, stride, 0), WO = TNN_CONV_OUT(W, K, stride, 0);
#pragma omp parallel for schedule(static) PAR_IF((long)B * C * HO * WO * 4)
	for (long p = 0; p < (long)B * C; p++)
		for (int i = 0; i < HO * WO; i++)
			dinp[(size_t)p * H * W + argmax[(size_t)p * HO * WO + i]] += dout[(size_t)p * HO * WO + i];
}

// ----------------------------------------------------------------------------
// Optimizers

INLINE void adamw_impl(float *p, const float *g, float *m, float *v, long n, float lr, float b1, float b2, float eps,
		       float wd, float c1, float c2)
{
	for (long i = 0; i < n; i++) {
		float mi = b1 * m[i] + (1.0f - b1) * g[i];
		float vi = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
		m[i] = mi;
		v[i] = vi;
		p[i] -= lr * ((mi * c1) / (sqrtf(vi * c2) + eps) + wd * p[i]);
	}
}
CLONE(adamw,
      (float *p, const float *g, float *m, float *v, long n, float lr, float b1, float b2, float eps, float wd,
       float c1, float c2),
      (p, g, m, v, n, lr, b1, b2, eps, wd, c1, c2))

TNN_API void tnn_adamw(float *param, const float *grad, float *m, float *v, long n, int t, float lr, float beta1,
		       float beta2, float eps, float weight_decay)
{
	float c1 = 1.0f / (1.0f - powf(beta1, (float)t)), c2 = 1.0f / (1.0f - powf(beta2, (float)t));
	ELEMENTWISE(n, lo, len,
		    CALL(adamw, (param + lo, grad + lo, m + lo, v + lo, len, lr, beta1, beta2, eps, weight_decay, c1,
				 c2)));
}

INLINE void sgd_impl(float *p, const float *g, float *mom, long n, float lr, float mu, float wd)
{
	for (long i = 0; i < n; i++) {
		float gi = g[i] + wd * p[i];
		if (mom) {
			mom[i] = mu * mom[i] + gi;
			gi = mom[i];
		}
		p[i] -= lr * gi;
	}
}
CLONE(sgd, (float *p, const float *g, float *mom, long n, float lr, float mu, float wd), (p, g, mom, n, lr, mu, wd))

TNN_API void tnn_sgd(float *param, const float *grad, float *mom, long n, float lr, float momentum, float weight_decay)
{
	ELEMENTWISE(n, lo, len, CALL(sgd, (param + lo, grad + lo, mom ? mom + lo : NULL, len, lr, momentum, weight_decay)));
}
