/* Naive reference versions of the libtnn kernels, for the tests: the same signatures and contracts as
 * include/tnn.h with a tnn_ref_ prefix, written as the plainest loops (sums in double). Not part of
 * libtnn.so. */
#ifndef TNN_REF_H
#define TNN_REF_H

#include "tnn.h"

void tnn_ref_matmul(float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int flags);
void tnn_ref_matmul_bwd(float *dA, float *dB, float *dbias, const float *dC, const float *A, const float *B, int M,
		    int N, int K);
void tnn_ref_linear_fwd(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);
void tnn_ref_linear_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
		    const float *weight, int N, int C, int OC);
void tnn_ref_im2col(float *col, const float *img, int C, int H, int W, int KH, int KW, int stride, int pad);
void tnn_ref_col2im(float *img, const float *col, int C, int H, int W, int KH, int KW, int stride, int pad);
void tnn_ref_conv2d_fwd(float *out, const float *inp, const float *weight, const float *bias, int B, int C, int H,
		    int W, int OC, int KH, int KW, int stride, int pad);
void tnn_ref_conv2d_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
		    const float *weight, int B, int C, int H, int W, int OC, int KH, int KW, int stride, int pad);
void tnn_ref_maxpool2d_fwd(float *out, int *argmax, const float *inp, int B, int C, int H, int W, int K, int stride);
void tnn_ref_maxpool2d_bwd(float *dinp, const float *dout, const int *argmax, int B, int C, int H, int W, int K,
		       int stride);
void tnn_ref_relu_fwd(float *out, const float *inp, long n);
void tnn_ref_relu_bwd(float *dinp, const float *dout, const float *inp, long n);
void tnn_ref_gelu_fwd(float *out, const float *inp, long n);
void tnn_ref_gelu_bwd(float *dinp, const float *dout, const float *inp, long n);
void tnn_ref_softmax_fwd(float *out, const float *inp, int N, int C);
void tnn_ref_causal_softmax_fwd(float *att, const float *preatt, int BH, int T, float scale);
void tnn_ref_causal_softmax_bwd(float *dpreatt, const float *datt, const float *att, int BH, int T, float scale);
void tnn_ref_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *weight,
		       const float *bias, int N, int C);
void tnn_ref_layernorm_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
		       const float *weight, const float *mean, const float *rstd, int N, int C);
void tnn_ref_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void tnn_ref_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *att, int B, int T, int C,
		       int NH);
void tnn_ref_attention_decode(float *out, const float *q, const float *kcache, const float *vcache, int B, int NH,
			  int HS, int TCAP, int n);
void tnn_ref_embedding_fwd(float *out, const int *ids, const float *table, int N, int V, int C);
void tnn_ref_embedding_bwd(float *dtable, const float *dout, const int *ids, int N, int V, int C);
void tnn_ref_add(float *out, const float *a, const float *b, long n);
float tnn_ref_crossentropy_fwd(float *losses, float *probs, const float *logits, const int *targets, int N, int V);
void tnn_ref_crossentropy_bwd(float *dlogits, const float *probs, const int *targets, int N, int V, float dloss);
void tnn_ref_adamw(float *param, const float *grad, float *m, float *v, long n, int t, float lr, float beta1,
	       float beta2, float eps, float weight_decay);
void tnn_ref_sgd(float *param, const float *grad, float *mom, long n, float lr, float momentum, float weight_decay);

#endif
