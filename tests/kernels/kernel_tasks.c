/* Calls libkomp_task.so's tnn_linear_fwd (OpenMP tasks) in steps, for tests/integration/ops.bats,
 * and prints a checksum of the results, which must be the same with and without the preload. */
#include <stdio.h>
#include <stdlib.h>

#include "tprof.h"

void tnn_linear_fwd(float *out, const float *inp, const float *weight, const float *bias, int N, int C, int OC);

int main(void)
{
	enum { N = 64, C = 96, OC = 128, STEPS = 6 };
	float *inp = malloc(sizeof(float) * N * C), *w = malloc(sizeof(float) * OC * C);
	float *out = malloc(sizeof(float) * N * OC);
	for (int i = 0; i < N * C; i++)
		inp[i] = (float)(i % 7) - 3;
	for (int i = 0; i < OC * C; i++)
		w[i] = (float)(i % 5) - 2;
	double sum = 0;
	tprof_step();
	for (int s = 0; s < STEPS; s++) {
		tnn_linear_fwd(out, inp, w, NULL, N, C, OC);
		for (int i = 0; i < N * OC; i++)
			sum += out[i];
		tprof_step();
	}
	printf("checksum %.1f\n", sum);
	free(inp), free(w), free(out);
	return 0;
}
