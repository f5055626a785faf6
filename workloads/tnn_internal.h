/* Internals shared by the libtnn sources: run-time ISA choice, OpenMP thresholds and a per-thread
 * scratch buffer. Not installed; nothing here is exported. */
#ifndef TNN_INTERNAL_H
#define TNN_INTERNAL_H

#include <stddef.h>

#define TNN_API __attribute__((visibility("default")))
#define TNN_HIDDEN __attribute__((visibility("hidden")))
#define TNN_AVX2 __attribute__((target("avx2,fma")))

/* Work (roughly, scalar operations) below which a kernel stays on one thread: an OpenMP fork costs a few µs. */
#define TNN_PAR_MIN 32768L

/* Nonzero when the AVX2+FMA path is in use (the CPU has both and tnn_set_simd has not turned it off). */
TNN_HIDDEN int tnn_simd_(void);

/* A per-thread buffer of at least n floats, 64-byte aligned, reused across calls (contents undefined).
 * slot picks one of a few independent buffers, so a caller may hold several at once. */
TNN_HIDDEN float *tnn_scratch_(int slot, size_t n);

/* Dot product in eight fixed lanes (vectorizable without reassociation), then a fixed-order combine:
 * the same sum on every path and every run. */
static inline __attribute__((always_inline)) float dot_lanes(const float *x, const float *y, int n)
{
	float acc[8] = {0};
	int i = 0;
	for (; i + 8 <= n; i += 8)
		for (int l = 0; l < 8; l++)
			acc[l] += x[i + l] * y[i + l];
	float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
	for (; i < n; i++)
		s += x[i] * y[i];
	return s;
}

#endif
