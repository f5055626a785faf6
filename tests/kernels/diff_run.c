/* diff_run [after]: the two runs of tests/integration/diff.bats, whose differences tprof diff must
 * report exactly. Both runs do 5 steps (tprof_step) of kernel calls and allocations at fixed sites;
 * "after" changes, per step and in total:
 *   tnn_matmul      M = N = 16, K = 16 -> 32          +2*16*16*16 FLOPs per step  (+40,960 in all)
 *   tnn_add         n = 1000, 3 -> 4 calls per step   +1 call, +1,000 FLOPs per step
 *   tnn_relu_fwd    n = 700, once per step -> never   removed: -700 FLOPs per step
 *   tnn_gelu_fwd    never -> n = 300 once per step    added: +2,700 FLOPs per step (9 per element)
 *   scratch()       1,000 -> 1,500 bytes per step, freed in the step   +2,500 bytes allocated
 *   working_set()   100,000 -> 120,000 bytes, live through the steps   +20,000 bytes, +20,000 peak
 *   leak_extra()    nothing -> one leaked block of 777 bytes after the steps
 *   keep()          100 bytes leaked by both runs (no change)
 * FLOPs: 11,892 per step before, 23,084 after: +11,192 per step, +55,960 in all. The peak (working set + kept block + one scratch
 * buffer) grows by 20,500 bytes. Kernels come from libknaive.so; arrays are static so that the
 * only allocations are those above. */
#include <stdlib.h>
#include <string.h>

#include "tprof.h"

void tnn_matmul(float *C, const float *A, const float *B, const float *bias, int M, int N, int K, int flags);
void tnn_add(float *out, const float *a, const float *b, long n);
void tnn_relu_fwd(float *out, const float *inp, long n);
void tnn_gelu_fwd(float *out, const float *inp, long n);

#define STEPS 5

static float a[1000], b[1000], c[1000];

static char *working_set(size_t n)
{
	char *p = malloc(n); /* SITE:working_set */
	memset(p, 1, n);
	return p;
}

static void scratch(size_t n)
{
	char *p = malloc(n); /* SITE:scratch */
	memset(p, 2, n);
	free(p);
}

static void *keep(void)
{
	return malloc(100); /* SITE:keep */
}

static void *leak_extra(void)
{
	return malloc(777); /* SITE:leak_extra */
}

int main(int argc, char **argv)
{
	int after = argc > 1 && strcmp(argv[1], "after") == 0;
	char *ws = working_set(after ? 120000 : 100000);
	void *kept = keep();
	for (int s = 0; s < STEPS; s++) {
		tprof_step();
		tnn_matmul(c, a, b, NULL, 16, 16, after ? 32 : 16, 0);
		for (int i = 0; i < (after ? 4 : 3); i++)
			tnn_add(c, a, b, 1000);
		if (after)
			tnn_gelu_fwd(c, a, 300);
		else
			tnn_relu_fwd(c, a, 700);
		scratch(after ? 1500 : 1000);
	}
	tprof_step();
	void *extra = after ? leak_extra() : NULL;
	free(ws);
	return kept && (extra || !after) ? 0 : 1;
}
