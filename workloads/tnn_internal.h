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

#endif
