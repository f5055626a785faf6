/* FLOP-counting front ends to the libtnn kernels for the benchmarks: each k_* calls tnn_* and adds the
 * kernel's documented FLOP formula (include/tnn.h, docs/WORKLOADS.md) to bench_flops, so the analytic FLOPs
 * a benchmark reports are the sum over exactly the calls it makes. */
#ifndef TNN_BENCH_FLOPS_H
#define TNN_BENCH_FLOPS_H

#include "tnn.h"

static double bench_flops;

static inline void k_matmul(float *C, const float *A, const float *B, const float *bias, int M, int N, int K,
			    int flags)
{
	bench_flops += 2.0 * M * N * K + (bias ? (double)M * N : 0);
	tnn_matmul(C, A, B, bias, M, N, K, flags);
}

static inline void k_linear_fwd(float *out, const float *inp, const float *w, const float *b, int N, int C, int OC)
{
	bench_flops += 2.0 * N * C * OC + (b ? (double)N * OC : 0);
	tnn_linear_fwd(out, inp, w, b, N, C, OC);
}

static inline void k_linear_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
				const float *w, int N, int C, int OC)
{
	bench_flops += 2.0 * N * C * OC * (!!dinp + !!dw) + (db ? (double)N * OC : 0);
	tnn_linear_bwd(dinp, dw, db, dout, inp, w, N, C, OC);
}

static inline double conv_macs(int B, int C, int H, int W, int OC, int K, int S, int P)
{
	return (double)B * TNN_CONV_OUT(H, K, S, P) * TNN_CONV_OUT(W, K, S, P) * K * K * C * OC;
}

static inline void k_conv2d_fwd(float *out, const float *inp, const float *w, const float *b, int B, int C, int H,
				int W, int OC, int K, int S, int P)
{
	bench_flops += 2 * conv_macs(B, C, H, W, OC, K, S, P) +
		       (b ? (double)B * OC * TNN_CONV_OUT(H, K, S, P) * TNN_CONV_OUT(W, K, S, P) : 0);
	tnn_conv2d_fwd(out, inp, w, b, B, C, H, W, OC, K, K, S, P);
}

/* The window taps that fall inside the image along one axis, over every output position: the
 * additions col2im makes (it skips the padding). */
static inline double conv_taps(int in, int k, int s, int p)
{
	double n = 0;
	for (int o = 0; o < TNN_CONV_OUT(in, k, s, p); o++)
		for (int j = 0; j < k; j++)
			n += o * s - p + j >= 0 && o * s - p + j < in;
	return n;
}

static inline void k_conv2d_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
				const float *w, int B, int C, int H, int W, int OC, int K, int S, int P)
{
	double ho_wo = (double)TNN_CONV_OUT(H, K, S, P) * TNN_CONV_OUT(W, K, S, P);
	bench_flops += 2 * conv_macs(B, C, H, W, OC, K, S, P) * (!!dinp + !!dw) +
		       (dinp ? (double)B * C * conv_taps(H, K, S, P) * conv_taps(W, K, S, P) : 0) +
		       (db ? (double)B * OC * ho_wo : 0);
	tnn_conv2d_bwd(dinp, dw, db, dout, inp, w, B, C, H, W, OC, K, K, S, P);
}

static inline void k_maxpool2d_fwd(float *out, int *am, const float *inp, int B, int C, int H, int W, int K, int S)
{
	bench_flops += (double)B * C * TNN_CONV_OUT(H, K, S, 0) * TNN_CONV_OUT(W, K, S, 0) * K * K;
	tnn_maxpool2d_fwd(out, am, inp, B, C, H, W, K, S);
}

static inline void k_maxpool2d_bwd(float *dinp, const float *dout, const int *am, int B, int C, int H, int W, int K,
				   int S)
{
	bench_flops += (double)B * C * TNN_CONV_OUT(H, K, S, 0) * TNN_CONV_OUT(W, K, S, 0);
	tnn_maxpool2d_bwd(dinp, dout, am, B, C, H, W, K, S);
}

static inline void k_relu_fwd(float *out, const float *inp, long n)
{
	bench_flops += n;
	tnn_relu_fwd(out, inp, n);
}

static inline void k_relu_bwd(float *dinp, const float *dout, const float *inp, long n)
{
	bench_flops += 2.0 * n;
	tnn_relu_bwd(dinp, dout, inp, n);
}

static inline void k_gelu_fwd(float *out, const float *inp, long n)
{
	bench_flops += 9.0 * n;
	tnn_gelu_fwd(out, inp, n);
}

static inline void k_gelu_bwd(float *dinp, const float *dout, const float *inp, long n)
{
	bench_flops += 20.0 * n;
	tnn_gelu_bwd(dinp, dout, inp, n);
}

static inline void k_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
				   const float *b, int N, int C)
{
	bench_flops += 8.0 * N * C;
	tnn_layernorm_fwd(out, mean, rstd, inp, w, b, N, C);
}

static inline void k_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
				   const float *w, const float *mean, const float *rstd, int N, int C)
{
	bench_flops += (double)N * C * (13.0 * !!dinp + 5.0 * (dw || db));
	tnn_layernorm_bwd(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

static inline double causal_pairs(int B, int NH, int T)
{
	return (double)B * NH * T * (T + 1) / 2;
}

static inline void k_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH)
{
	bench_flops += causal_pairs(B, NH, T) * (4.0 * (C / NH) + 5);
	tnn_attention_fwd(out, att, qkv, B, T, C, NH);
}

static inline void k_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *att, int B, int T,
				   int C, int NH)
{
	bench_flops += causal_pairs(B, NH, T) * (8.0 * (C / NH) + 5) + 3.0 * B * T * NH * (C / NH);
	tnn_attention_bwd(dqkv, dout, qkv, att, B, T, C, NH);
}

static inline void k_attention_decode(float *out, const float *q, const float *kc, const float *vc, int B, int NH,
				      int HS, int TCAP, int n)
{
	bench_flops += (double)B * NH * n * (4.0 * HS + 5);
	tnn_attention_decode(out, q, kc, vc, B, NH, HS, TCAP, n);
}

static inline void k_embedding_fwd(float *out, const int *ids, const float *table, int N, int V, int C)
{
	tnn_embedding_fwd(out, ids, table, N, V, C);
}

static inline void k_embedding_bwd(float *dtable, const float *dout, const int *ids, int N, int V, int C)
{
	bench_flops += (double)N * C;
	tnn_embedding_bwd(dtable, dout, ids, N, V, C);
}

static inline void k_add(float *out, const float *a, const float *b, long n)
{
	bench_flops += n;
	tnn_add(out, a, b, n);
}

static inline float k_crossentropy_fwd(float *losses, float *probs, const float *logits, const int *t, int N, int V)
{
	bench_flops += 5.0 * N * V + 2.0 * N;
	return tnn_crossentropy_fwd(losses, probs, logits, t, N, V);
}

static inline void k_crossentropy_bwd(float *dlogits, const float *probs, const int *t, int N, int V, float dloss)
{
	bench_flops += 2.0 * N * V + N;
	tnn_crossentropy_bwd(dlogits, probs, t, N, V, dloss);
}

static inline void k_adamw(float *p, const float *g, float *m, float *v, long n, int t, float lr, float b1, float b2,
			   float eps, float wd)
{
	bench_flops += 16.0 * n;
	tnn_adamw(p, g, m, v, n, t, lr, b1, b2, eps, wd);
}

static inline void k_sgd(float *p, const float *g, float *mom, long n, float lr, float mu, float wd)
{
	bench_flops += (mom ? 6.0 : 4.0) * n;
	tnn_sgd(p, g, mom, n, lr, mu, wd);
}

#endif
