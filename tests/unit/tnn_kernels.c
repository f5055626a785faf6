/* Checks every libtnn kernel against its naive reference (workloads/tnn_ref.c) on random data, on the
 * AVX2/FMA path and on the forced scalar path, at shapes that exercise every blocking edge (odd sizes, K
 * and N larger than one cache block, transposes, accumulation, bias). Also checks that repeated calls
 * give bit-identical results. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tnn.h"
#include "tnn_ref.h"
#include "unittest.h"

#define TNN_RAND_SEED 12345
#include "tnn_rand.h"

static float *dup(const float *x, long n)
{
	float *p = malloc((n ? n : 1) * sizeof(float));
	for (long i = 0; i < n; i++)
		p[i] = x[i];
	return p;
}

/* max over i of |a - b| / (1 + |b|); prints the worst index when above tol */
static int close_to(const char *what, const float *a, const float *b, long n, double tol)
{
	double worst = 0;
	long wi = -1;
	for (long i = 0; i < n; i++) {
		double e = fabs((double)a[i] - b[i]) / (1 + fabs((double)b[i]));
		if (!(e <= worst)) {
			worst = e;
			wi = i;
		}
	}
	if (worst > tol || worst != worst)
		printf("# %s: worst error %.3g at %ld (%g vs ref %g), tolerance %.1g\n", what, worst, wi, a[wi], b[wi],
		       tol);
	return worst <= tol;
}

#define TOL 2e-5
static const char *path = "";

static void test_matmul(void)
{
	static const int shapes[][3] = {{1, 1, 1}, {6, 16, 8}, {7, 17, 9},     {13, 33, 600}, {70, 130, 257},
					{150, 40, 1030}, {7, 3100, 5}, {1, 50, 64}, {33, 1, 20}, {5, 7, 0}};
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
		for (int flags = 0; flags < 8; flags++)
			for (int with_bias = 0; with_bias < 2; with_bias++) {
				int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
				float *A = rnd((long)M * K), *B = rnd((long)K * N), *bias = with_bias ? rnd(N) : NULL;
				float *C = rnd((long)M * N), *R = dup(C, (long)M * N);
				tnn_matmul(C, A, B, bias, M, N, K, flags);
				tnn_ref_matmul(R, A, B, bias, M, N, K, flags);
				char what[96];
				snprintf(what, sizeof what, "%s matmul %dx%dx%d flags %d bias %d", path, M, N, K, flags,
					 with_bias);
				CHECK(close_to(what, C, R, (long)M * N, TOL * (1 + K / 64)));
				free(A), free(B), free(bias), free(C), free(R);
			}
}

static void test_matmul_bwd_linear(void)
{
	int M = 37, N = 45, K = 70;
	float *A = rnd((long)M * K), *B = rnd((long)K * N), *dC = rnd((long)M * N);
	float *dA = rnd((long)M * K), *dB = rnd((long)K * N), *db = rnd(N);
	float *rA = dup(dA, (long)M * K), *rB = dup(dB, (long)K * N), *rb = dup(db, N);
	tnn_matmul_bwd(dA, dB, db, dC, A, B, M, N, K);
	tnn_ref_matmul_bwd(rA, rB, rb, dC, A, B, M, N, K);
	CHECK(close_to("matmul_bwd dA", dA, rA, (long)M * K, TOL * 2));
	CHECK(close_to("matmul_bwd dB", dB, rB, (long)K * N, TOL * 2));
	CHECK(close_to("matmul_bwd dbias", db, rb, N, TOL * 2));

	int n = 29, C = 70, OC = 51;
	float *x = rnd((long)n * C), *w = rnd((long)OC * C), *bias = rnd(OC), *y = rnd((long)n * OC), *ry = dup(y, (long)n * OC);
	tnn_linear_fwd(y, x, w, bias, n, C, OC);
	tnn_ref_linear_fwd(ry, x, w, bias, n, C, OC);
	CHECK(close_to("linear_fwd", y, ry, (long)n * OC, TOL * 2));
	float *dy = rnd((long)n * OC), *dx = rnd((long)n * C), *dw = rnd((long)OC * C), *dbb = rnd(OC);
	float *rdx = dup(dx, (long)n * C), *rdw = dup(dw, (long)OC * C), *rdb = dup(dbb, OC);
	tnn_linear_bwd(dx, dw, dbb, dy, x, w, n, C, OC);
	tnn_ref_linear_bwd(rdx, rdw, rdb, dy, x, w, n, C, OC);
	CHECK(close_to("linear_bwd dinp", dx, rdx, (long)n * C, TOL * 2));
	CHECK(close_to("linear_bwd dweight", dw, rdw, (long)OC * C, TOL * 2));
	CHECK(close_to("linear_bwd dbias", dbb, rdb, OC, TOL * 2));
	free(A), free(B), free(dC), free(dA), free(dB), free(db), free(rA), free(rB), free(rb);
	free(x), free(w), free(bias), free(y), free(ry), free(dy), free(dx), free(dw), free(dbb), free(rdx), free(rdw),
		free(rdb);
}

static void test_conv(void)
{
	static const int cfg[][8] = {/* B C H W OC K stride pad */
				     {2, 3, 9, 11, 5, 3, 1, 1},
				     {1, 4, 8, 8, 6, 3, 2, 0},
				     {3, 2, 7, 6, 4, 5, 2, 2},
				     {2, 5, 6, 6, 3, 1, 1, 0}};
	for (size_t s = 0; s < sizeof cfg / sizeof cfg[0]; s++) {
		int B = cfg[s][0], C = cfg[s][1], H = cfg[s][2], W = cfg[s][3], OC = cfg[s][4], K = cfg[s][5];
		int st = cfg[s][6], pad = cfg[s][7];
		int HO = TNN_CONV_OUT(H, K, st, pad), WO = TNN_CONV_OUT(W, K, st, pad);
		long ni = (long)B * C * H * W, nw = (long)OC * C * K * K, no = (long)B * OC * HO * WO;
		long ncol = (long)C * K * K * HO * WO;
		float *x = rnd(ni), *w = rnd(nw), *bias = rnd(OC), *y = rnd(no), *ry = dup(y, no);
		float *col = rnd(ncol), *rcol = dup(col, ncol);
		tnn_im2col(col, x, C, H, W, K, K, st, pad);
		tnn_ref_im2col(rcol, x, C, H, W, K, K, st, pad);
		CHECK(close_to("im2col", col, rcol, ncol, 0));
		float *img = rnd((long)C * H * W), *rimg = dup(img, (long)C * H * W);
		tnn_col2im(img, col, C, H, W, K, K, st, pad);
		tnn_ref_col2im(rimg, col, C, H, W, K, K, st, pad);
		CHECK(close_to("col2im", img, rimg, (long)C * H * W, TOL));
		tnn_conv2d_fwd(y, x, w, bias, B, C, H, W, OC, K, K, st, pad);
		tnn_ref_conv2d_fwd(ry, x, w, bias, B, C, H, W, OC, K, K, st, pad);
		CHECK(close_to("conv2d_fwd", y, ry, no, TOL));
		float *dy = rnd(no), *dx = rnd(ni), *dw = rnd(nw), *db = rnd(OC);
		float *rdx = dup(dx, ni), *rdw = dup(dw, nw), *rdb = dup(db, OC);
		tnn_conv2d_bwd(dx, dw, db, dy, x, w, B, C, H, W, OC, K, K, st, pad);
		tnn_ref_conv2d_bwd(rdx, rdw, rdb, dy, x, w, B, C, H, W, OC, K, K, st, pad);
		CHECK(close_to("conv2d_bwd dinp", dx, rdx, ni, TOL));
		CHECK(close_to("conv2d_bwd dweight", dw, rdw, nw, TOL * 4));
		CHECK(close_to("conv2d_bwd dbias", db, rdb, OC, TOL * 4));
		free(x), free(w), free(bias), free(y), free(ry), free(col), free(rcol), free(img), free(rimg);
		free(dy), free(dx), free(dw), free(db), free(rdx), free(rdw), free(rdb);
	}
}

static void test_maxpool(void)
{
	int B = 2, C = 3, H = 9, W = 8, K = 2, st = 2;
	int HO = TNN_CONV_OUT(H, K, st, 0), WO = TNN_CONV_OUT(W, K, st, 0);
	long ni = (long)B * C * H * W, no = (long)B * C * HO * WO, cap = ni; /* cap: any output size */
	float *x = rnd(ni), *y = rnd(cap), *ry = rnd(cap), *dy = rnd(cap), *dx = rnd(ni), *rdx = dup(dx, ni);
	int *am = malloc(cap * sizeof(int)), *ram = malloc(cap * sizeof(int));
	tnn_maxpool2d_fwd(y, am, x, B, C, H, W, K, st);
	tnn_ref_maxpool2d_fwd(ry, ram, x, B, C, H, W, K, st);
	CHECK(close_to("maxpool2d_fwd", y, ry, no, 0));
	CHECK(memcmp(am, ram, no * sizeof(int)) == 0);
	tnn_maxpool2d_bwd(dx, dy, am, B, C, H, W, K, st);
	tnn_ref_maxpool2d_bwd(rdx, dy, ram, B, C, H, W, K, st);
	CHECK(close_to("maxpool2d_bwd", dx, rdx, ni, 0));
	/* overlapping windows */
	K = 3, st = 1, HO = H - 2, WO = W - 2, no = (long)B * C * HO * WO;
	tnn_maxpool2d_fwd(y, am, x, B, C, H, W, K, st);
	tnn_ref_maxpool2d_fwd(ry, ram, x, B, C, H, W, K, st);
	CHECK(close_to("maxpool2d_fwd overlapping", y, ry, no, 0));
	tnn_maxpool2d_bwd(dx, dy, am, B, C, H, W, K, st);
	tnn_ref_maxpool2d_bwd(rdx, dy, ram, B, C, H, W, K, st);
	CHECK(close_to("maxpool2d_bwd overlapping", dx, rdx, ni, 1e-6));
	free(x), free(y), free(ry), free(dy), free(dx), free(rdx), free(am), free(ram);
}

static void test_elementwise(void)
{
	long n = 100003; /* several parallel chunks and a vector tail */
	float *x = rnd(n), *y = rnd(n), *ry = rnd(n), *dy = rnd(n), *dx = rnd(n), *rdx = dup(dx, n), *b = rnd(n);
	for (long i = 0; i < n; i++)
		x[i] *= 6; /* reach tanh saturation */
	x[0] = 0, x[1] = 30, x[2] = -30, x[3] = 1e-4f;
	tnn_relu_fwd(y, x, n);
	tnn_ref_relu_fwd(ry, x, n);
	CHECK(close_to("relu_fwd", y, ry, n, 0));
	tnn_relu_bwd(dx, dy, x, n);
	tnn_ref_relu_bwd(rdx, dy, x, n);
	CHECK(close_to("relu_bwd", dx, rdx, n, 0));
	tnn_gelu_fwd(y, x, n);
	tnn_ref_gelu_fwd(ry, x, n);
	CHECK(close_to("gelu_fwd", y, ry, n, TOL));
	tnn_gelu_bwd(dx, dy, x, n);
	tnn_ref_gelu_bwd(rdx, dy, x, n);
	CHECK(close_to("gelu_bwd", dx, rdx, n, TOL));
	tnn_add(y, x, b, n);
	tnn_ref_add(ry, x, b, n);
	CHECK(close_to("add", y, ry, n, 0));
	tnn_add(b, b, x, n); /* aliasing allowed */
	CHECK(close_to("add in place", b, ry, n, 0));
	free(x), free(y), free(ry), free(dy), free(dx), free(rdx), free(b);
}

static void test_softmax_layernorm(void)
{
	int N = 37, C = 203;
	long n = (long)N * C;
	float *x = rnd(n), *y = rnd(n), *ry = rnd(n), *w = rnd(C), *b = rnd(C);
	for (long i = 0; i < n; i++)
		x[i] *= 20;
	tnn_softmax_fwd(y, x, N, C);
	tnn_ref_softmax_fwd(ry, x, N, C);
	CHECK(close_to("softmax_fwd", y, ry, n, TOL));
	int BH = 3, T = 19;
	long na = (long)BH * T * T;
	float *pa = rnd(na), *a = rnd(na), *ra = rnd(na), *da = rnd(na), *dp = rnd(na), *rdp = dup(dp, na);
	tnn_causal_softmax_fwd(a, pa, BH, T, 0.7f);
	tnn_ref_causal_softmax_fwd(ra, pa, BH, T, 0.7f);
	CHECK(close_to("causal_softmax_fwd", a, ra, na, TOL));
	tnn_causal_softmax_bwd(dp, da, a, BH, T, 0.7f);
	tnn_ref_causal_softmax_bwd(rdp, da, a, BH, T, 0.7f);
	CHECK(close_to("causal_softmax_bwd", dp, rdp, na, TOL));

	float *m = rnd(N), *rs = rnd(N), *rm = rnd(N), *rrs = rnd(N);
	tnn_layernorm_fwd(y, m, rs, x, w, b, N, C);
	tnn_ref_layernorm_fwd(ry, rm, rrs, x, w, b, N, C);
	CHECK(close_to("layernorm_fwd", y, ry, n, TOL));
	CHECK(close_to("layernorm_fwd mean", m, rm, N, TOL));
	CHECK(close_to("layernorm_fwd rstd", rs, rrs, N, TOL));
	float *dy = rnd(n), *dx = rnd(n), *dw = rnd(C), *db = rnd(C);
	float *rdx = dup(dx, n), *rdw = dup(dw, C), *rdb = dup(db, C);
	tnn_layernorm_bwd(dx, dw, db, dy, x, w, m, rs, N, C);
	tnn_ref_layernorm_bwd(rdx, rdw, rdb, dy, x, w, m, rs, N, C);
	CHECK(close_to("layernorm_bwd dinp", dx, rdx, n, TOL * 5));
	CHECK(close_to("layernorm_bwd dweight", dw, rdw, C, TOL * 5));
	CHECK(close_to("layernorm_bwd dbias", db, rdb, C, TOL * 5));
	free(x), free(y), free(ry), free(w), free(b), free(pa), free(a), free(ra), free(da), free(dp), free(rdp);
	free(m), free(rs), free(rm), free(rrs), free(dy), free(dx), free(dw), free(db), free(rdx), free(rdw), free(rdb);
}

static void test_attention(void)
{
	int B = 2, T = 13, C = 24, NH = 3;
	long nq = (long)B * T * 3 * C, no = (long)B * T * C, na = (long)B * NH * T * T;
	float *qkv = rnd(nq), *y = rnd(no), *ry = rnd(no), *a = rnd(na), *ra = rnd(na);
	tnn_attention_fwd(y, a, qkv, B, T, C, NH);
	tnn_ref_attention_fwd(ry, ra, qkv, B, T, C, NH);
	CHECK(close_to("attention_fwd out", y, ry, no, TOL));
	CHECK(close_to("attention_fwd att", a, ra, na, TOL));
	float *dy = rnd(no), *dq = rnd(nq), *rdq = dup(dq, nq);
	tnn_attention_bwd(dq, dy, qkv, a, B, T, C, NH);
	tnn_ref_attention_bwd(rdq, dy, qkv, a, B, T, C, NH);
	CHECK(close_to("attention_bwd", dq, rdq, nq, TOL * 2));

	/* decode against a cache filled from the same qkv: position t must match the full forward's row t */
	int HS = C / NH, TCAP = 16;
	float *kc = rnd((long)B * NH * TCAP * HS), *vc = rnd((long)B * NH * TCAP * HS);
	float *q = rnd((long)B * C), *o = rnd((long)B * C), *ro = rnd((long)B * C);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < NH; h++)
			for (int t = 0; t < T; t++)
				for (int i = 0; i < HS; i++) {
					size_t src = ((size_t)b * T + t) * 3 * C + h * HS + i;
					size_t dst = (((size_t)b * NH + h) * TCAP + t) * HS + i;
					kc[dst] = qkv[src + C];
					vc[dst] = qkv[src + 2 * C];
				}
	int t = T - 1;
	for (int b = 0; b < B; b++)
		for (int i = 0; i < C; i++)
			q[b * C + i] = qkv[((size_t)b * T + t) * 3 * C + i];
	tnn_attention_decode(o, q, kc, vc, B, NH, HS, TCAP, t + 1);
	tnn_ref_attention_decode(ro, q, kc, vc, B, NH, HS, TCAP, t + 1);
	CHECK(close_to("attention_decode", o, ro, (long)B * C, TOL));
	for (int b = 0; b < B; b++)
		CHECK(close_to("attention_decode vs fwd", o + b * C, ry + ((size_t)b * T + t) * C, C, TOL));
	free(qkv), free(y), free(ry), free(a), free(ra), free(dy), free(dq), free(rdq), free(kc), free(vc), free(q),
		free(o), free(ro);
}

static void test_embedding_ce(void)
{
	int N = 50, V = 37, C = 130;
	int *ids = malloc(N * sizeof(int));
	for (int i = 0; i < N; i++)
		ids[i] = (int)((frand() + 1) * 0.5f * V) % V;
	ids[1] = ids[0]; /* repeated id */
	float *tab = rnd((long)V * C), *y = rnd((long)N * C), *ry = rnd((long)N * C);
	tnn_embedding_fwd(y, ids, tab, N, V, C);
	tnn_ref_embedding_fwd(ry, ids, tab, N, V, C);
	CHECK(close_to("embedding_fwd", y, ry, (long)N * C, 0));
	float *dt = rnd((long)V * C), *rdt = dup(dt, (long)V * C);
	tnn_embedding_bwd(dt, y, ids, N, V, C);
	tnn_ref_embedding_bwd(rdt, y, ids, N, V, C);
	CHECK(close_to("embedding_bwd", dt, rdt, (long)V * C, TOL));

	float *logits = rnd((long)N * V), *p = rnd((long)N * V), *rp = rnd((long)N * V), *l = rnd(N), *rl = rnd(N);
	for (long i = 0; i < (long)N * V; i++)
		logits[i] *= 8;
	float loss = tnn_crossentropy_fwd(l, p, logits, ids, N, V);
	float rloss = tnn_ref_crossentropy_fwd(rl, rp, logits, ids, N, V);
	CHECK(close_to("crossentropy_fwd probs", p, rp, (long)N * V, TOL));
	CHECK(close_to("crossentropy_fwd losses", l, rl, N, TOL * 5));
	CHECK(close_to("crossentropy_fwd mean", &loss, &rloss, 1, TOL * 5));
	float *dl = rnd((long)N * V), *rdl = dup(dl, (long)N * V);
	tnn_crossentropy_bwd(dl, p, ids, N, V, 1.0f / N);
	tnn_ref_crossentropy_bwd(rdl, p, ids, N, V, 1.0f / N);
	CHECK(close_to("crossentropy_bwd", dl, rdl, (long)N * V, TOL));
	free(ids), free(tab), free(y), free(ry), free(dt), free(rdt), free(logits), free(p), free(rp), free(l), free(rl),
		free(dl), free(rdl);
}

static void test_optimizers(void)
{
	long n = 50001;
	float *p = rnd(n), *g = rnd(n), *m = rnd(n), *v = rnd(n);
	for (long i = 0; i < n; i++)
		v[i] = fabsf(v[i]);
	float *rp = dup(p, n), *rm = dup(m, n), *rv = dup(v, n);
	for (int t = 1; t <= 3; t++) {
		tnn_adamw(p, g, m, v, n, t, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f);
		tnn_ref_adamw(rp, g, rm, rv, n, t, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.1f);
	}
	CHECK(close_to("adamw param", p, rp, n, TOL));
	CHECK(close_to("adamw m", m, rm, n, TOL));
	CHECK(close_to("adamw v", v, rv, n, TOL));
	for (int t = 1; t <= 3; t++) {
		tnn_sgd(p, g, m, n, 0.1f, 0.9f, 1e-3f);
		tnn_ref_sgd(rp, g, rm, n, 0.1f, 0.9f, 1e-3f);
		tnn_sgd(v, g, NULL, n, 0.1f, 0.0f, 0.0f);
		tnn_ref_sgd(rv, g, NULL, n, 0.1f, 0.0f, 0.0f);
	}
	CHECK(close_to("sgd momentum param", p, rp, n, TOL));
	CHECK(close_to("sgd momentum buffer", m, rm, n, TOL));
	CHECK(close_to("sgd plain", v, rv, n, TOL));
	free(p), free(g), free(m), free(v), free(rp), free(rm), free(rv);
}

/* Same inputs twice -> bit-identical outputs (multi-threaded paths included). */
static void test_repeatable(void)
{
	int M = 300, N = 260, K = 700;
	float *A = rnd((long)M * K), *B = rnd((long)K * N), *C1 = rnd((long)M * N), *C2 = rnd((long)M * N);
	tnn_matmul(C1, A, B, NULL, M, N, K, TNN_TRANS_B * 0);
	tnn_matmul(C2, A, B, NULL, M, N, K, 0);
	CHECK(memcmp(C1, C2, (size_t)M * N * sizeof(float)) == 0);
	float *d1 = calloc(K, sizeof(float)), *d2 = calloc(K, sizeof(float));
	float *w = rnd(K), *mm = rnd(M), *rs = rnd(M), *y = rnd((long)M * K);
	tnn_layernorm_fwd(y, mm, rs, A, w, w, M, K);
	tnn_layernorm_bwd(NULL, d1, NULL, A, A, w, mm, rs, M, K);
	tnn_layernorm_bwd(NULL, d2, NULL, A, A, w, mm, rs, M, K);
	CHECK(memcmp(d1, d2, K * sizeof(float)) == 0);
	free(A), free(B), free(C1), free(C2), free(d1), free(d2), free(w), free(mm), free(rs), free(y);
}

/* Non-finite inputs come out NaN on every path (the vector max drops a NaN, and the vector exp clamps:
 * a diverged training's loss must not read as a finite one); a loss whose probability float cannot
 * hold is computed from the logits, not capped by the underflow (true loss 200 here). Shapes that
 * leave no window give nothing and do not fault. */
static void test_nonfinite_and_degenerate(void)
{
	float row[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, NAN, 2}, out[12];
	tnn_softmax_fwd(out, row, 1, 12);
	CHECK(isnan(out[0]) && isnan(out[11]));
	float inf_row[3] = {1, INFINITY, 2};
	tnn_softmax_fwd(out, inf_row, 1, 3);
	CHECK(isnan(out[0]));
	float logits[2] = {0, 200}, probs[2], loss;
	int tgt = 0;
	float mean = tnn_crossentropy_fwd(&loss, probs, logits, &tgt, 1, 2);
	CHECK(fabsf(loss - 200) < 1e-3f && fabsf(mean - 200) < 1e-3f);
	float img[4] = {1, 2, 3, 4}, pooled[4] = {-1, -1, -1, -1};
	int am[4];
	tnn_maxpool2d_fwd(pooled, am, img, 1, 1, 1, 1, 2, 2); /* a 2x2 window over a 1x1 image: no output */
	CHECK(pooled[0] == -1);
	CHECK(TNN_CONV_OUT(1, 2, 2, 0) == 0 && TNN_CONV_OUT(3, 3, 1, 0) == 1 && TNN_CONV_OUT(1, 3, 2, 1) == 1);
	tnn_maxpool2d_fwd(pooled, am, img, 1, 1, 2, 2, 2, 0); /* stride 0: nothing, no division by 0 */
	CHECK(pooled[0] == -1);
}

static void run_all(void)
{
	RUN(test_matmul);
	RUN(test_matmul_bwd_linear);
	RUN(test_conv);
	RUN(test_maxpool);
	RUN(test_elementwise);
	RUN(test_softmax_layernorm);
	RUN(test_attention);
	RUN(test_embedding_ce);
	RUN(test_optimizers);
	RUN(test_repeatable);
	RUN(test_nonfinite_and_degenerate);
}

int main(void)
{
	tnn_set_simd(1);
	path = tnn_backend();
	printf("# backend %s\n", path);
	if (strcmp(path, "scalar") == 0 || strcmp(path, "openblas+scalar") == 0) {
		printf("# no AVX2+FMA on this CPU: only the scalar path is tested\n");
		run_all();
		return UT_DONE();
	}
	run_all();
	tnn_set_simd(0);
	path = tnn_backend();
	printf("# backend %s\n", path);
	run_all();
	return UT_DONE();
}
