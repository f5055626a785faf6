/* Kernel calls whose shape values do not all fit 32 bits (a negative 64-bit element count: the kernels
 * do no work for it) or that have more than four of them, so the wrappers' packing of shapes into
 * ring entries is checked on both of its layouts (tests/integration/ops.bats). */
#include <stddef.h>

#include "tnn.h"

int main(void)
{
	tnn_relu_fwd(NULL, NULL, -(1L << 33) - 7);                /* one wide value */
	tnn_adamw(NULL, NULL, NULL, NULL, -(1L << 40), 3, 0.1f, 0.9f, 0.99f, 1e-8f, 0.0f); /* wide, then narrow */
	tnn_im2col(NULL, NULL, 0, 5, 6, 7, 8, 9, -10);           /* seven narrow values */
	return 0;
}
