/* The deterministic random data of the kernel tests: an xorshift64 generator seeded by the including
 * file (TNN_RAND_SEED), uniform floats in [-1, 1), and freshly allocated random arrays. */
#ifndef TNN_RAND_H
#define TNN_RAND_H

#include <stdint.h>
#include <stdlib.h>

#ifndef TNN_RAND_SEED
#define TNN_RAND_SEED 12345
#endif

static uint64_t rng = TNN_RAND_SEED;

static float frand(void) /* uniform in [-1, 1) */
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (float)((rng >> 40) / 8388608.0 - 1.0);
}

/* n random floats (at least one element is allocated, so n = 0 is fine); the caller frees. */
static float *rnd(long n)
{
	float *p = malloc((n ? n : 1) * sizeof(float));
	for (long i = 0; i < n; i++)
		p[i] = frand();
	return p;
}

#endif
