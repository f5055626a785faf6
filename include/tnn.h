/* tnn: the neural-network kernels behind tprof's bundled workloads (build/libtnn.so). Every kernel has a
 * plain C ABI in which every shape is an explicit integer argument, so a wrapper that sees only the
 * arguments can compute the FLOPs and bytes of a call; the formulas are given with each kernel (FMA = 2
 * FLOPs) and in docs/WORKLOADS.md. The set of exported kernels and their signatures are a stable interface.
 *
 * Conventions, for every kernel:
 *  - tensors are dense, row-major float32; a shape comment "(B, T, C)" lists dimensions outer to inner;
 *  - forward kernels overwrite their outputs; backward (_bwd) kernels ACCUMULATE (+=) into every gradient
 *    output, so the caller zeroes gradients once per step; a NULL gradient output is skipped;
 *  - outputs must not alias inputs unless the contract says so;
 *  - results are deterministic: the same inputs give bit-identical outputs whatever the thread count;
 *  - composite kernels (linear, conv2d, attention, cross-entropy) call the elementary ones through their
 *    exported symbols, so an LD_PRELOAD wrapper sees the nesting.
 * "bytes" below is the minimum traffic: every input read once plus every output written once (an
 * accumulated output is read and written). */
#ifndef TNN_H
#define TNN_H

#ifdef __cplusplus
extern "C" {
#endif

/* tnn_matmul flags */
#define TNN_TRANS_A 1    /* A is stored (K, M) and used transposed */
#define TNN_TRANS_B 2    /* B is stored (N, K) and used transposed */
#define TNN_ACCUMULATE 4 /* C += product instead of C = product */

/* C (M, N) = op(A) (M, K) · op(B) (K, N) [+ bias (N) broadcast over rows]; with TNN_ACCUMULATE the result
 * is added to C. op(X) is X or Xᵀ per the TNN_TRANS_* flags. bias may be NULL.
 * FLOPs 2·M·N·K (+ M·N with bias). Bytes 4·(M·K + K·N + M·N [+ N with bias] [+ M·N when accumulating]). */
void tnn_matmul(float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int flags);

/* Backward of C = A (M, K) · B (K, N) + bias (N): dA (M, K) += dC·Bᵀ, dB (K, N) += Aᵀ·dC,
 * dbias (N) += column sums of dC (M, N). Calls tnn_matmul for each product.
 * FLOPs 2·M·N·K per non-NULL dA and dB, + M·N with dbias. */
void tnn_matmul_bwd(float *dA, float *dB, float *dbias, const float *dC, const float *A, const float *B, int M,
		    int N, int K);

/* Fully connected layer, PyTorch layout: out (N, OC) = inp (N, C) · weightᵀ [+ bias (OC)], weight (OC, C).
 * bias may be NULL. Calls tnn_matmul. FLOPs 2·N·C·OC (+ N·OC with bias). */
void tnn_linear_fwd(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);

/* dinp (N, C) += dout·weight; dweight (OC, C) += doutᵀ·inp; dbias (OC) += column sums of dout (N, OC).
 * Calls tnn_matmul. FLOPs 2·N·C·OC per non-NULL dinp and dweight, + N·OC with dbias. */
void tnn_linear_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
		    const float *weight, int N, int C, int OC);

/* Output size of a convolution or pooling window along one axis: (in + 2·pad - k) / stride + 1, and 0
 * when the window is larger than the padded input (C's division would round -1/2 up to 0, making 1). */
#define TNN_CONV_OUT(in, k, stride, pad)                                                                  \
	((in) + 2 * (pad) - (k) < 0 ? 0 : ((in) + 2 * (pad) - (k)) / (stride) + 1)

/* Unfolds one image (C, H, W) into col (C·KH·KW, HO·WO), zero padding outside the image.
 * HO, WO = TNN_CONV_OUT. 0 FLOPs; bytes 4·(C·H·W + C·KH·KW·HO·WO). */
void tnn_im2col(float *col, const float *img, int C, int H, int W, int KH, int KW, int stride, int pad);

/* Adjoint of tnn_im2col: img (C, H, W) += fold(col (C·KH·KW, HO·WO)). FLOPs: the adds, one per column
 * element that falls inside the image (C·KH·KW·HO·WO without padding; the padding's are skipped). */
void tnn_col2im(float *img, const float *col, int C, int H, int W, int KH, int KW, int stride, int pad);

/* 2-D convolution (cross-correlation), NCHW: out (B, OC, HO, WO) = conv(inp (B, C, H, W), weight
 * (OC, C, KH, KW)) [+ bias (OC)], HO = TNN_CONV_OUT(H, KH, stride, pad), WO likewise. bias may be NULL.
 * Per image: tnn_im2col then tnn_matmul (weight · col). FLOPs 2·B·HO·WO·KH·KW·C·OC (+ B·OC·HO·WO with
 * bias). */
void tnn_conv2d_fwd(float *out, const float *inp, const float *weight, const float *bias, int B, int C, int H,
		    int W, int OC, int KH, int KW, int stride, int pad);

/* dinp (B, C, H, W) += ∂/∂inp, dweight (OC, C, KH, KW) += ∂/∂weight, dbias (OC) += ∂/∂bias, given dout
 * (B, OC, HO, WO). Per image: tnn_im2col, tnn_matmul (dweight += dout·colᵀ, dcol = weightᵀ·dout),
 * tnn_col2im. FLOPs 2·B·HO·WO·KH·KW·C·OC per non-NULL dinp and dweight (+ B times col2im's adds with
 * dinp), + B·OC·HO·WO with dbias. */
void tnn_conv2d_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
		    const float *weight, int B, int C, int H, int W, int OC, int KH, int KW, int stride, int pad);

/* Max pooling, no padding: out (B, C, HO, WO) = max over each K×K window of inp (B, C, H, W), HO =
 * TNN_CONV_OUT(H, K, stride, 0); argmax (B, C, HO, WO) receives the flat index (h·W + w) of each maximum
 * within its (H, W) plane (first maximum on ties). FLOPs B·C·HO·WO·K·K (comparisons). */
void tnn_maxpool2d_fwd(float *out, int *argmax, const float *inp, int B, int C, int H, int W, int K, int stride);

/* dinp (B, C, H, W) += dout (B, C, HO, WO) routed to each window's argmax. FLOPs B·C·HO·WO. */
void tnn_maxpool2d_bwd(float *dinp, const float *dout, const int *argmax, int B, int C, int H, int W, int K,
		       int stride);

/* out (n) = max(inp, 0); out may alias inp. FLOPs n. */
void tnn_relu_fwd(float *out, const float *inp, long n);
/* dinp (n) += dout where inp > 0. FLOPs 2·n (the comparison and the add). */
void tnn_relu_bwd(float *dinp, const float *dout, const float *inp, long n);

/* GELU, tanh approximation (GPT-2): out = 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))); out may alias inp.
 * FLOPs 9·n (x³ 2, ·0.044715, +x, ·√(2/π), tanh counted as 1, 1+, ·x, ·0.5). */
void tnn_gelu_fwd(float *out, const float *inp, long n);
/* dinp (n) += dout·gelu'(inp). FLOPs 20·n (the portable code's operations, tanh counted as 1). */
void tnn_gelu_bwd(float *dinp, const float *dout, const float *inp, long n);

/* Row softmax: out (N, C) = softmax over C of each row of inp (N, C); out may alias inp.
 * FLOPs 5·N·C (max, subtract, exp, sum, multiply by 1/sum; exp counted as 1). */
void tnn_softmax_fwd(float *out, const float *inp, int N, int C);

/* Causal softmax of BH score matrices (BH, T, T): att[i][j] = softmax over j ≤ i of scale·preatt[i][j],
 * att[i][j] = 0 for j > i (preatt there is not read). att may alias preatt.
 * FLOPs 5·BH·T·(T+1)/2, as tnn_softmax_fwd (the scale is not counted). */
void tnn_causal_softmax_fwd(float *att, const float *preatt, int BH, int T, float scale);
/* dpreatt (BH, T, T) += backward of tnn_causal_softmax_fwd given att and datt; only j ≤ i is written.
 * FLOPs 5·BH·T·(T+1)/2: the row's dot product att·datt (2), then datt − dot, ·att and the add into dpreatt
 * (the scale is not counted, as in the forward pass). */
void tnn_causal_softmax_bwd(float *dpreatt, const float *datt, const float *att, int BH, int T, float scale);

/* Layer normalization over the last axis: out (N, C) = (inp - mean) · rstd · weight (C) + bias (C), with
 * mean (N) and rstd (N) = 1/sqrt(var + 1e-5) saved for the backward pass. FLOPs 8·N·C. */
void tnn_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *weight,
		       const float *bias, int N, int C);
/* dinp (N, C), dweight (C), dbias (C) += gradients given dout (N, C); each may be NULL (not computed).
 * FLOPs 13·N·C with dinp (w·dout, its sum, the sum of its product with the normalized input, the
 * result), + 5·N·C with dweight or dbias (both column sums are made for either). */
void tnn_layernorm_bwd(float *dinp, float *dweight, float *dbias, const float *dout, const float *inp,
		       const float *weight, const float *mean, const float *rstd, int N, int C);

/* Causal multi-head self-attention, GPT-2 layout. qkv (B, T, 3C) holds q, k, v side by side, each split into
 * NH heads of HS = C/NH; out (B, T, C) = concat over heads of softmax(q·kᵀ/√HS, causal)·v; att (B, NH, T, T)
 * keeps the probabilities for the backward pass. Per (batch, head): tnn_matmul for q·kᵀ and att·v, and one
 * tnn_causal_softmax_fwd. Counted exactly (masked half excluded):
 * FLOPs 4·B·NH·HS·T·(T+1)/2 (the two products) + 5·B·NH·T·(T+1)/2 (softmax). C must be a multiple of NH. */
void tnn_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
/* dqkv (B, T, 3C) += gradients given dout (B, T, C), qkv and att from the forward pass.
 * FLOPs 8·B·NH·HS·T·(T+1)/2 + 5·B·NH·T·(T+1)/2 (tnn_causal_softmax_bwd) + 3·B·T·NH·HS (the adds into
 * dqkv). */
void tnn_attention_bwd(float *dqkv, const float *dout, const float *qkv, const float *att, int B, int T, int C,
		       int NH);

/* One decoding step against a KV cache: for each of B sequences and NH heads, out (B, NH·HS) = softmax(q·kᵀ/√HS)·v
 * over the first n cached positions; q (B, NH·HS); kcache, vcache (B, NH, TCAP, HS) with n ≤ TCAP.
 * FLOPs 4·B·NH·HS·n + 5·B·NH·n. */
void tnn_attention_decode(float *out, const float *q, const float *kcache, const float *vcache, int B, int NH,
			  int HS, int TCAP, int n);

/* Embedding lookup: out (N, C) = table (V, C) rows ids (N); every id in [0, V). 0 FLOPs. */
void tnn_embedding_fwd(float *out, const int *ids, const float *table, int N, int V, int C);
/* dtable (V, C) rows ids (N) += dout (N, C). FLOPs N·C. */
void tnn_embedding_bwd(float *dtable, const float *dout, const int *ids, int N, int V, int C);

/* Residual add: out (n) = a + b; out may alias a or b. FLOPs n. */
void tnn_add(float *out, const float *a, const float *b, long n);

/* Softmax cross-entropy: probs (N, V) = softmax(logits) (via tnn_softmax_fwd), losses (N) = -log
 * probs[target]; returns the mean loss. Every target in [0, V). FLOPs 5·N·V + 2·N. */
float tnn_crossentropy_fwd(float *losses, float *probs, const float *logits, const int *targets, int N, int V);
/* dlogits (N, V) += dloss · (probs - onehot(targets)); dloss is the gradient of the loss of each row
 * (1/N for a mean loss). FLOPs 2·N·V + N (dloss·probs added, then dloss taken from the target's). */
void tnn_crossentropy_bwd(float *dlogits, const float *probs, const int *targets, int N, int V, float dloss);

/* AdamW step t (1-based) over n parameters, decoupled weight decay (PyTorch semantics):
 * m = β1·m + (1-β1)·g; v = β2·v + (1-β2)·g²; p -= lr·(m̂/(√v̂ + eps) + wd·p). FLOPs 16·n (m 3, v 4, the update 9; 1-β1 and 1-β2 are the
 * call's, once). */
void tnn_adamw(float *param, const float *grad, float *m, float *v, long n, int t, float lr, float beta1,
	       float beta2, float eps, float weight_decay);
/* SGD with momentum (PyTorch semantics): g' = g + wd·p; mom = μ·mom + g'; p -= lr·mom. mom may be NULL when
 * momentum is 0. FLOPs 6·n, 4·n without mom. */
void tnn_sgd(float *param, const float *grad, float *mom, long n, float lr, float momentum, float weight_decay);

/* Not kernels. tnn_backend names the code path in use: "avx2", "scalar" or "openblas" (matmul routed to
 * cblas_sgemm when built with BLAS=openblas). tnn_set_simd(0) forces the portable scalar path, (1) returns to
 * the default (AVX2+FMA when the CPU has both); it is for tests and must not race with running kernels. */
const char *tnn_backend(void);
void tnn_set_simd(int enable);

#ifdef __cplusplus
}
#endif
#endif
