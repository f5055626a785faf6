/* This machine's roofline: the peak FP32 and FP64 FMA throughput and the STREAM triad memory bandwidth,
 * on one core and on all cores. roofline.c measures them with short benchmarks (about 1-2 s) and caches
 * the result as JSON per CPU model and core count, so that the analyzer's commands can set a kernel's
 * FLOP/s and bytes/s against what the machine can do without measuring again. Method, units and cache:
 * docs/ROOFLINE.md.
 *
 * Units everywhere: GFLOP/s = 1e9 floating-point operations per second, an FMA counting 2; GB/s = 1e9
 * bytes per second, counted the way STREAM counts them (a triad element is 3 x 8 bytes; the
 * write-allocate read of the destination is not counted). A figure of 0 means "not known". */
#ifndef TPROF_ROOFLINE_H
#define TPROF_ROOFLINE_H

#include <stdint.h>
#include <stdio.h>

/* Version of the measurement method and of the cache file; a cache of another version is ignored. */
#define TPROF_ROOFLINE_VERSION 1

/* The FMA peaks of one instruction set. */
struct tprof_roofline_isa {
	char name[16]; /* "avx512f", "avx2+fma", or "baseline" (the compiler's default target: mul+add) */
	double fp32_gflops_1core, fp32_gflops_all;
	double fp64_gflops_1core, fp64_gflops_all;
};

#define TPROF_ROOFLINE_MAX_ISA 3

struct tprof_roofline {
	/* The roofs. The FLOP/s figures are those of `isa`, the instruction set with the highest FP32
	 * all-core figure (a wider one wins ties within 2%); by_isa has every one measured. */
	double fp32_gflops_1core, fp32_gflops_all;
	double fp64_gflops_1core, fp64_gflops_all;
	double stream_gbs_1core, stream_gbs_all;
	int cores;     /* CPUs this process may run on (sched_getaffinity): one thread each for "all" */
	char isa[32];  /* name of the ISA behind the FLOP/s roofs */
	char cpu[128]; /* CPU model ("model name" in /proc/cpuinfo) */

	/* Where the figures came from: "measured", "cache" (read from cache_path), "TPROF_PEAK_GFLOPS" (the
	 * environment set fp32_gflops_all; the other figures came from `others_from`) or "none". */
	char source[64];
	char others_from[16]; /* "measured", "cache" or "none"; equals source unless the environment set the peak */

	int nisa; /* entries of by_isa, widest ISA first */
	struct tprof_roofline_isa by_isa[TPROF_ROOFLINE_MAX_ISA];
	double stream_array_mib; /* size of each of the three triad arrays */
	double seconds;          /* how long the measurement took */
	int64_t measured_at;     /* when (Unix time) */
	int busy;                /* 1 when other processes took CPU time from the benchmark threads in every
				  * repetition of some figure: that figure may be low (docs/ROOFLINE.md) */

	char cache_path[4096]; /* the cache file read or written; "" when there is none (no HOME) */
	int cache_saved;       /* 1 when tprof_roofline_get() just wrote cache_path */
};

/* Flags of tprof_roofline_get(). */
#define TPROF_ROOFLINE_MEASURE 1   /* measure (and save) when there is no valid cache */
#define TPROF_ROOFLINE_REMEASURE 2 /* measure (and save) even when there is a valid cache */

/* Runs the benchmarks (about 1-2 s on an idle machine) and fills every field but the cache ones.
 * Returns 0, or -1 (with a warning, base/util.h) when no thread could be started; a figure that could not be
 * measured (no memory for the triad arrays) is left 0. */
int tprof_roofline_measure(struct tprof_roofline *r);

/* Fills r from, in this order: the cache (unless REMEASURE), else a measurement when MEASURE or
 * REMEASURE is in flags, which is then saved to the cache (a failure to save is a warning and
 * leaves cache_saved 0). TPROF_PEAK_GFLOPS=X then overrides fp32_gflops_all; when it is set the machine
 * is measured only on REMEASURE. A cache is used only when its version, CPU model and core count equal
 * this machine's. Returns 0 when r->fp32_gflops_all is known, -1 otherwise (r->cpu and r->cores are still
 * filled, source is "none"). */
int tprof_roofline_get(struct tprof_roofline *r, int flags);

/* The cache file: $TPROF_ROOFLINE_CACHE, else $XDG_CACHE_HOME/tprof/roofline.json, else
 * ~/.cache/tprof/roofline.json; "" when none can be named. Returns buf. */
const char *tprof_roofline_cache_path(char *buf, size_t size);

/* The arithmetic intensity (FLOP/byte) where the all-core compute roof of the given precision (32 or 64)
 * meets the all-core bandwidth roof; 0 when either is unknown. */
double tprof_roofline_ridge(const struct tprof_roofline *r, int fp_bits);

/* The attainable all-core GFLOP/s of a kernel of arithmetic intensity `flop_per_byte`:
 * min(compute roof, intensity x bandwidth roof). fp_bits is 32 or 64. */
double tprof_roofline_attainable(const struct tprof_roofline *r, int fp_bits, double flop_per_byte);

/* The cache (roofline_cache.c). read: 0 when path holds a measurement of this machine (same version,
 * CPU model and core count, an ISA this CPU runs), 1 when there is no such cache, -1 when the file
 * cannot be read (errno), -2 when it is not the JSON object tprof writes. write: through a temporary
 * file and rename(2), so that a reader never sees it half-written; 0, or -1 with errno set. */
int tprof_roofline_cache_read(const char *path, const struct tprof_roofline *here, struct tprof_roofline *out);
int tprof_roofline_cache_write(const struct tprof_roofline *r, const char *path);

/* Whether this CPU runs the benchmark of ISA name ("avx512f", "avx2+fma", "baseline"). */
int tprof_roofline_isa_supported(const char *name);

#endif
