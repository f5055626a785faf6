/* Calls every kernel of the op table once with small, distinct shapes, for tests/integration/ops.bats:
 * the tnn_* kernels through libtnn.so, and the four BLAS GEMM entry points from libkcall_blas.so, a
 * library opened RTLD_LOCAL that links the system BLAS (as a Python extension opens NumPy's). The
 * data is all zeros: only the shapes matter. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "tnn.h"

static float *buf(void)
{
	return calloc(1 << 20, sizeof(float)); /* 4 MiB: more than any call below touches */
}

int main(int argc, char **argv)
{
	float *a = buf(), *b = buf(), *c = buf(), *d = buf(), *e = buf(), *f = buf();
	int *ids = calloc(1 << 16, sizeof(int));
	tnn_matmul(c, a, b, d, 5, 7, 9, 0);
	tnn_matmul(c, a, b, NULL, 6, 8, 10, TNN_TRANS_A | TNN_ACCUMULATE);
	tnn_matmul_bwd(c, d, e, a, b, f, 4, 6, 8);
	tnn_matmul_bwd(c, NULL, NULL, a, b, f, 3, 5, 7);
	tnn_linear_fwd(c, a, b, d, 4, 12, 6);
	tnn_linear_bwd(c, d, e, a, b, f, 4, 12, 6);
	tnn_im2col(c, a, 3, 9, 8, 3, 2, 2, 1);
	tnn_col2im(c, a, 3, 9, 8, 3, 2, 2, 1);
	tnn_conv2d_fwd(c, a, b, d, 2, 3, 10, 9, 4, 3, 3, 1, 1);
	tnn_conv2d_bwd(c, d, e, a, b, f, 2, 3, 10, 9, 4, 3, 3, 2, 0);
	tnn_conv2d_bwd(c, d, NULL, a, b, f, 1, 2, 7, 6, 3, 3, 2, 2, 1); /* padded: col2im skips the padding */
	tnn_conv2d_fwd(c, a, b, NULL, 1, 1, 5, 5, 1, 1, 1, 1, -1);      /* a negative padding crops */
	tnn_matmul(c, a, b, NULL, 2, 2, 2, -1);                         /* flags are bits: -1 accumulates */
	tnn_maxpool2d_fwd(c, ids, a, 2, 3, 8, 6, 2, 2);
	tnn_maxpool2d_bwd(c, a, ids, 2, 3, 8, 6, 2, 2);
	tnn_relu_fwd(c, a, 1000);
	tnn_relu_bwd(c, a, b, 1001);
	tnn_gelu_fwd(c, a, 1002);
	tnn_gelu_bwd(c, a, b, 1003);
	tnn_softmax_fwd(c, a, 7, 33);
	tnn_causal_softmax_fwd(c, a, 6, 17, 0.5f);
	tnn_causal_softmax_bwd(c, a, b, 6, 17, 0.5f);
	tnn_layernorm_fwd(c, d, e, a, b, f, 9, 24);
	tnn_layernorm_bwd(c, d, e, a, b, f, d, e, 9, 24);
	tnn_layernorm_bwd(c, NULL, NULL, a, b, f, d, e, 7, 20); /* gradients not asked for are not charged */
	tnn_layernorm_bwd(NULL, NULL, e, a, b, f, d, e, 5, 16);
	tnn_layernorm_bwd(NULL, NULL, NULL, a, b, f, d, e, 3, 19); /* nothing to do: costs nothing */
	tnn_matmul(c, a, b, NULL, -3, -5, 7, 0);                   /* negative shapes count as 0 */
	tnn_matmul(c, a, b, NULL, 0, 5, 7, 0);
	tnn_softmax_fwd(c, a, -2, -3);
	tnn_attention_fwd(c, d, a, 2, 11, 24, 3);
	tnn_attention_bwd(c, a, b, d, 2, 11, 24, 3);
	tnn_attention_decode(c, a, b, d, 2, 3, 8, 16, 5);
	tnn_embedding_fwd(c, ids, a, 13, 50, 16);
	tnn_embedding_bwd(c, a, ids, 13, 50, 16);
	tnn_add(c, a, b, 1004);
	tnn_crossentropy_fwd(c, d, a, ids, 5, 40);
	tnn_crossentropy_bwd(c, d, ids, 5, 40, 0.2f);
	tnn_adamw(c, a, d, e, 1005, 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f);
	tnn_sgd(c, a, d, 1006, 0.1f, 0.9f, 0.0f);
	tnn_sgd(c, a, NULL, 1007, 0.1f, 0.0f, 0.0f);
	void *h = dlopen(argc > 1 ? argv[1] : "libkcall_blas.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "kernel_calls: %s\n", dlerror());
		return 1;
	}
	double (*blas)(void) = (double (*)(void))dlsym(h, "kcall_blas");
	printf("blas checksum %g\n", blas());
	return 0;
}
