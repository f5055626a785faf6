/* Finite-difference checks of every libtnn backward kernel: for a random R, the loss L = Σ out·R of the
 * forward kernel is differentiated numerically (central differences) at sampled coordinates of each input,
 * and compared with the gradients that both the libtnn and the reference backward kernels accumulate
 * (called with dout = R into zeroed buffers). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tnn.h"
#include "tnn_ref.h"
#include "unittest.h"

#define TNN_RAND_SEED 987654321
#include "tnn_rand.h"

static float *zeros(long n) { return calloc(n, sizeof(float)); }

static double dot(const float *a, const float *b, long n)
{
	double s = 0;
	for (long i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

/* The loss as a function of the current contents of the inputs. */
static double (*loss)(void);

#define SAMPLES 24
#define H 1e-3f
#define TOL 5e-3

/* Numerical ∂L/∂x[i] at up to SAMPLES coordinates vs g_lib and g_ref. */
static void fd_check(const char *what, float *x, long n, const float *g_lib, const float *g_ref)
{
	int bad = 0;
	for (long s = 0; s < SAMPLES && s < n; s++) {
		long i = n <= SAMPLES ? s : (s * 7919L + 13) % n;
		float old = x[i], xp = old + H, xm = old - H;
		x[i] = xp;
		double lp = loss();
		x[i] = xm;
		double lm = loss();
		x[i] = old;
		double num = (lp - lm) / ((double)xp - xm);
		double el = fabs(num - g_lib[i]) / (1 + fabs(num)), er = fabs(num - g_ref[i]) / (1 + fabs(num));
		if (el > TOL || er > TOL || el != el) {
			if (!bad++)
				printf("# %s[%ld]: numerical %.6g, tnn %.6g, ref %.6g\n", what, i, num, g_lib[i], g_ref[i]);
		}
	}
	CHECK(bad == 0);
}

// ----------------------------------------------------------------------------

static int M, N, K, C, OC, HH, WW, KS, ST, PAD, NH, T, V;
static float *A, *B, *bias, *out, *R, *aux;
static int *ids, *argmax;

static double loss_matmul(void)
{
	tnn_matmul(out, A, B, bias, M, N, K, 0);
	return dot(out, R, (long)M * N);
}

static void test_matmul_bwd(void)
{
	M = 9, N = 11, K = 13;
	A = rnd((long)M * K), B = rnd((long)K * N), bias = rnd(N), out = rnd((long)M * N), R = rnd((long)M * N);
	float *dA = zeros((long)M * K), *dB = zeros((long)K * N), *db = zeros(N);
	float *rA = zeros((long)M * K), *rB = zeros((long)K * N), *rb = zeros(N);
	tnn_matmul_bwd(dA, dB, db, R, A, B, M, N, K);
	tnn_ref_matmul_bwd(rA, rB, rb, R, A, B, M, N, K);
	loss = loss_matmul;
	fd_check("matmul dA", A, (long)M * K, dA, rA);
	fd_check("matmul dB", B, (long)K * N, dB, rB);
	fd_check("matmul dbias", bias, N, db, rb);
	free(A), free(B), free(bias), free(out), free(R), free(dA), free(dB), free(db), free(rA), free(rB), free(rb);
}

static double loss_linear(void)
{
	tnn_linear_fwd(out, A, B, bias, N, C, OC);
	return dot(out, R, (long)N * OC);
}

static void test_linear_bwd(void)
{
	N = 7, C = 12, OC = 10;
	A = rnd((long)N * C), B = rnd((long)OC * C), bias = rnd(OC), out = rnd((long)N * OC), R = rnd((long)N * OC);
	float *dx = zeros((long)N * C), *dw = zeros((long)OC * C), *db = zeros(OC);
	float *rx = zeros((long)N * C), *rw = zeros((long)OC * C), *rb = zeros(OC);
	tnn_linear_bwd(dx, dw, db, R, A, B, N, C, OC);
	tnn_ref_linear_bwd(rx, rw, rb, R, A, B, N, C, OC);
	loss = loss_linear;
	fd_check("linear dinp", A, (long)N * C, dx, rx);
	fd_check("linear dweight", B, (long)OC * C, dw, rw);
	fd_check("linear dbias", bias, OC, db, rb);
	free(A), free(B), free(bias), free(out), free(R), free(dx), free(dw), free(db), free(rx), free(rw), free(rb);
}

static double loss_conv(void)
{
	tnn_conv2d_fwd(out, A, B, bias, N, C, HH, WW, OC, KS, KS, ST, PAD);
	int HO = TNN_CONV_OUT(HH, KS, ST, PAD), WO = TNN_CONV_OUT(WW, KS, ST, PAD);
	return dot(out, R, (long)N * OC * HO * WO);
}

static void test_conv2d_bwd(void)
{
	static const int cfg[][7] = {{2, 3, 7, 6, 4, 3, 1}, {1, 2, 8, 9, 3, 3, 2}}; /* B C H W OC K stride */
	for (int s = 0; s < 2; s++) {
		N = cfg[s][0], C = cfg[s][1], HH = cfg[s][2], WW = cfg[s][3], OC = cfg[s][4], KS = cfg[s][5];
		ST = cfg[s][6], PAD = 1;
		int HO = TNN_CONV_OUT(HH, KS, ST, PAD), WO = TNN_CONV_OUT(WW, KS, ST, PAD);
		long ni = (long)N * C * HH * WW, nw = (long)OC * C * KS * KS, no = (long)N * OC * HO * WO;
		A = rnd(ni), B = rnd(nw), bias = rnd(OC), out = rnd(no), R = rnd(no);
		float *dx = zeros(ni), *dw = zeros(nw), *db = zeros(OC), *rx = zeros(ni), *rw = zeros(nw), *rb = zeros(OC);
		tnn_conv2d_bwd(dx, dw, db, R, A, B, N, C, HH, WW, OC, KS, KS, ST, PAD);
		tnn_ref_conv2d_bwd(rx, rw, rb, R, A, B, N, C, HH, WW, OC, KS, KS, ST, PAD);
		loss = loss_conv;
		fd_check("conv2d dinp", A, ni, dx, rx);
		fd_check("conv2d dweight", B, nw, dw, rw);
		fd_check("conv2d dbias", bias, OC, db, rb);
		free(A), free(B), free(bias), free(out), free(R), free(dx), free(dw), free(db), free(rx), free(rw),
			free(rb);
	}
}

static double loss_maxpool(void)
{
	tnn_maxpool2d_fwd(out, argmax, A, N, C, HH, WW, KS, ST);
	return dot(out, R, (long)N * C * TNN_CONV_OUT(HH, KS, ST, 0) * TNN_CONV_OUT(WW, KS, ST, 0));
}

static void test_maxpool2d_bwd(void)
{
	N = 2, C = 2, HH = 6, WW = 7, KS = 2, ST = 2;
	long ni = (long)N * C * HH * WW, no = (long)N * C * 3 * 3;
	A = rnd(ni), out = rnd(no), R = rnd(no), argmax = malloc(no * sizeof(int));
	float *dx = zeros(ni), *rx = zeros(ni);
	tnn_maxpool2d_fwd(out, argmax, A, N, C, HH, WW, KS, ST);
	tnn_maxpool2d_bwd(dx, R, argmax, N, C, HH, WW, KS, ST);
	tnn_ref_maxpool2d_bwd(rx, R, argmax, N, C, HH, WW, KS, ST);
	loss = loss_maxpool;
	fd_check("maxpool2d dinp", A, ni, dx, rx);
	free(A), free(out), free(R), free(argmax), free(dx), free(rx);
}

static long n_elem;
static void (*unary_fwd)(float *, const float *, long);

static double loss_unary(void)
{
	unary_fwd(out, A, n_elem);
	return dot(out, R, n_elem);
}

static void test_relu_gelu_bwd(void)
{
	n_elem = 301;
	A = rnd(n_elem), out = rnd(n_elem), R = rnd(n_elem);
	for (long i = 0; i < n_elem; i++) /* keep clear of the kink at 0 */
		A[i] = A[i] * 3 + (A[i] >= 0 ? 0.05f : -0.05f);
	float *dx = zeros(n_elem), *rx = zeros(n_elem);
	tnn_relu_bwd(dx, R, A, n_elem);
	tnn_ref_relu_bwd(rx, R, A, n_elem);
	unary_fwd = tnn_relu_fwd, loss = loss_unary;
	fd_check("relu dinp", A, n_elem, dx, rx);
	memset(dx, 0, n_elem * sizeof(float)), memset(rx, 0, n_elem * sizeof(float));
	tnn_gelu_bwd(dx, R, A, n_elem);
	tnn_ref_gelu_bwd(rx, R, A, n_elem);
	unary_fwd = tnn_gelu_fwd;
	fd_check("gelu dinp", A, n_elem, dx, rx);
	free(A), free(out), free(R), free(dx), free(rx);
}

static double loss_csoftmax(void)
{
	tnn_causal_softmax_fwd(out, A, M, T, 0.5f);
	return dot(out, R, (long)M * T * T);
}

static void test_causal_softmax_bwd(void)
{
	M = 2, T = 9;
	long n = (long)M * T * T;
	A = rnd(n), out = rnd(n), R = rnd(n);
	tnn_causal_softmax_fwd(out, A, M, T, 0.5f);
	float *dx = zeros(n), *rx = zeros(n);
	tnn_causal_softmax_bwd(dx, R, out, M, T, 0.5f);
	tnn_ref_causal_softmax_bwd(rx, R, out, M, T, 0.5f);
	loss = loss_csoftmax;
	fd_check("causal_softmax dpreatt", A, n, dx, rx);
	free(A), free(out), free(R), free(dx), free(rx);
}

static double loss_layernorm(void)
{
	tnn_layernorm_fwd(out, aux, aux + N, A, B, bias, N, C);
	return dot(out, R, (long)N * C);
}

static void test_layernorm_bwd(void)
{
	N = 6, C = 19;
	long n = (long)N * C;
	A = rnd(n), B = rnd(C), bias = rnd(C), out = rnd(n), R = rnd(n), aux = rnd(2 * N);
	for (long i = 0; i < n; i++)
		A[i] = A[i] * 2 + 0.5f;
	tnn_layernorm_fwd(out, aux, aux + N, A, B, bias, N, C);
	float *dx = zeros(n), *dw = zeros(C), *db = zeros(C), *rx = zeros(n), *rw = zeros(C), *rb = zeros(C);
	tnn_layernorm_bwd(dx, dw, db, R, A, B, aux, aux + N, N, C);
	tnn_ref_layernorm_bwd(rx, rw, rb, R, A, B, aux, aux + N, N, C);
	loss = loss_layernorm;
	fd_check("layernorm dinp", A, n, dx, rx);
	fd_check("layernorm dweight", B, C, dw, rw);
	fd_check("layernorm dbias", bias, C, db, rb);
	free(A), free(B), free(bias), free(out), free(R), free(aux), free(dx), free(dw), free(db), free(rx), free(rw),
		free(rb);
}

static double loss_attention(void)
{
	tnn_attention_fwd(out, aux, A, N, T, C, NH);
	return dot(out, R, (long)N * T * C);
}

static void test_attention_bwd(void)
{
	N = 2, T = 7, C = 12, NH = 3;
	long nq = (long)N * T * 3 * C, no = (long)N * T * C;
	A = rnd(nq), out = rnd(no), R = rnd(no), aux = rnd((long)N * NH * T * T);
	tnn_attention_fwd(out, aux, A, N, T, C, NH);
	float *dx = zeros(nq), *rx = zeros(nq);
	tnn_attention_bwd(dx, R, A, aux, N, T, C, NH);
	tnn_ref_attention_bwd(rx, R, A, aux, N, T, C, NH);
	loss = loss_attention;
	fd_check("attention dqkv (q)", A, C, dx, rx); /* first row: q of position 0 */
	fd_check("attention dqkv", A, nq, dx, rx);
	free(A), free(out), free(R), free(aux), free(dx), free(rx);
}

static double loss_embedding(void)
{
	tnn_embedding_fwd(out, ids, A, N, V, C);
	return dot(out, R, (long)N * C);
}

static void test_embedding_bwd(void)
{
	N = 12, V = 5, C = 9;
	ids = malloc(N * sizeof(int));
	for (int i = 0; i < N; i++)
		ids[i] = i * 3 % V; /* every id repeats */
	A = rnd((long)V * C), out = rnd((long)N * C), R = rnd((long)N * C);
	float *dt = zeros((long)V * C), *rt = zeros((long)V * C);
	tnn_embedding_bwd(dt, R, ids, N, V, C);
	tnn_ref_embedding_bwd(rt, R, ids, N, V, C);
	loss = loss_embedding;
	fd_check("embedding dtable", A, (long)V * C, dt, rt);
	free(A), free(out), free(R), free(dt), free(rt), free(ids);
}

static double loss_ce(void)
{
	return tnn_crossentropy_fwd(aux, out, A, ids, N, V);
}

static void test_crossentropy_bwd(void)
{
	N = 8, V = 11;
	long n = (long)N * V;
	ids = malloc(N * sizeof(int));
	for (int i = 0; i < N; i++)
		ids[i] = (i * 7 + 3) % V;
	A = rnd(n), out = rnd(n), aux = rnd(N);
	for (long i = 0; i < n; i++)
		A[i] *= 3;
	tnn_crossentropy_fwd(aux, out, A, ids, N, V);
	float *dl = zeros(n), *rl = zeros(n);
	tnn_crossentropy_bwd(dl, out, ids, N, V, 1.0f / N);
	tnn_ref_crossentropy_bwd(rl, out, ids, N, V, 1.0f / N);
	loss = loss_ce;
	fd_check("crossentropy dlogits", A, n, dl, rl);
	free(A), free(out), free(aux), free(dl), free(rl), free(ids);
}

int main(void)
{
	RUN(test_matmul_bwd);
	RUN(test_linear_bwd);
	RUN(test_conv2d_bwd);
	RUN(test_maxpool2d_bwd);
	RUN(test_relu_gelu_bwd);
	RUN(test_causal_softmax_bwd);
	RUN(test_layernorm_bwd);
	RUN(test_attention_bwd);
	RUN(test_embedding_bwd);
	RUN(test_crossentropy_bwd);
	return UT_DONE();
}
