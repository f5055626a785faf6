/* The kernel-call analysis behind `tprof ops` and `tprof compare`: replays a trace's kernel calls
 * (KERNELS blocks), nests them per thread by their intervals to get self time, and aggregates them
 * per op (optionally per shape), with per-call time distributions; cuts the run into steps at the
 * program's tprof_step() boundaries; and follows the annotated ranges, charging to each range the
 * kernel time, FLOPs and heap bytes spent inside it. Conventions (docs/OPS.md):
 *  - a thread's wall time runs from its first to its last recorded event (kernel, annotation or heap),
 *    from the first kept step boundary on when warm-up steps are skipped;
 *  - self time of a call = its duration minus the durations of the calls directly nested in it; the
 *    self times of all calls plus the time outside any call add up to the threads' wall time;
 *  - FLOPs of a step or a range are those of top-level calls only (a composite's FLOPs include those
 *    of the calls it makes); a call an OpenMP pool thread runs in a region that a call of another
 *    thread opened belongs to that call (its FLOPs are in it, its time to that call's ranges);
 *  - an OpenMP pool thread (one that runs regions others open) is idle outside them: idle time is
 *    neither in kernels nor outside them. */
#ifndef TPROF_OPS_ANALYSIS_H
#define TPROF_OPS_ANALYSIS_H

#include <stddef.h>
#include <stdint.h>

#include "trace/reader.h"

/* One op's share of a range's kernel time (range rows' breakdown). */
struct ops_sub {
	char *name;       /* the op's name */
	uint64_t calls;
	uint64_t self_ns; /* self time of its calls inside the range */
	uint64_t flops;   /* FLOPs of its calls inside the range that are not nested in another call */
};

/* One row of the op table: one op (or one op and shape, or one range). */
struct ops_row {
	char *name;
	unsigned op;        /* op id (0 for range rows) */
	int fp_bits;        /* 32 or 64: which compute roof applies */
	uint64_t calls;
	uint64_t self_ns, total_ns;
	uint64_t flops, bytes, macs;
	uint64_t *dur_ns;   /* every call's duration (total), sorted once computed */
	size_t ndur, cap_dur;
	/* range rows only */
	uint64_t kernel_ns;     /* self time of the kernels inside */
	uint64_t alloc_bytes;   /* bytes allocated inside (requested) */
	uint64_t allocs;
	uint64_t peak_growth;   /* largest growth of live heap bytes within one instance of the range */
	struct ops_sub *sub;    /* the ops run inside, by self time, largest first; their self times add
				 * up to kernel_ns */
	size_t nsub;
};

/* Summary statistics of a sample of durations. */
struct ops_dist {
	size_t n;
	double mean, sd, ci_lo, ci_hi; /* ci: 95 % confidence interval of the mean (Student's t); NaN (none)
					* with fewer than two values: JSON null, CSV empty, text "-" */
	uint64_t p50, p95, p99, min, max;
};

/* One thread's time (`tprof ops --by thread`): wall = kernel + pool + outside + idle. */
struct ops_thread {
	uint32_t tid;
	char *name;
	uint64_t wall_ns;   /* first to last recorded event (from the first kept step on) */
	uint64_t kernel_ns; /* in its own top-level calls */
	uint64_t pool_ns;   /* in OpenMP regions other threads' calls opened, outside its own calls */
	uint64_t idle_ns;   /* a pool thread between regions */
	uint64_t calls;     /* its calls */
	int main;           /* the process's main thread (tid = pid) */
};

/* The OpenMP regions opened by one op (or by the program outside any call): `tprof ops --by region`. */
struct ops_region_row {
	char *name;         /* the op that opened them, "(program)" when no call did */
	uint64_t regions;
	uint64_t wall_ns;   /* from the fork to the last thread's end, summed over the regions */
	uint64_t busy_ns;   /* the threads' time in the regions' bodies, summed */
	double max_ns;      /* per region the busiest thread's time, summed */
	double mean_ns;     /* per region the mean thread's time, summed: imbalance = max_ns / mean_ns */
	unsigned threads;   /* the most threads one region ran on */
};

struct ops_options {
	unsigned skip_steps; /* drop everything before this step boundary (warm-up) */
	int group_shape;     /* one row per op and shape */
	int by_range;        /* range rows instead of op rows */
	int by_thread;       /* cmd_ops: the thread table (ops_result.thr is always filled) */
	int by_region;       /* cmd_ops: the OpenMP region table (ops_result.regs is always filled) */
	int wide;            /* cmd_ops: every column in the text table */
	int one_thread;      /* only the calls and time of thread tid (0: the main thread, tid = pid) */
	uint32_t tid;
};

struct ops_result {
	struct ops_row *rows;
	size_t nrows;
	uint64_t wall_ns;    /* sum over threads with kernel calls of their wall time */
	uint64_t in_ops_ns;  /* time inside top-level calls (= sum of all self times) */
	uint64_t idle_ns;    /* OpenMP pool threads' time outside the regions they run (waiting for work) */
	uint64_t pool_ns;    /* --thread: its work in regions other threads' calls opened (in no row) */
	uint64_t lost_events; /* the trace's (its END's): calls and annotations may be missing */
	size_t threads;      /* threads with kernel calls */
	uint64_t calls;      /* kernel calls kept */
	uint64_t top_flops;  /* FLOPs of top-level calls kept */
	uint64_t window_ns;  /* CLOCK_MONOTONIC offset (from time zero) where the kept part begins */
	/* steps: durations between consecutive kept boundaries */
	uint64_t *step_ns;
	size_t nsteps, steps_total, steps_skipped;
	size_t step_marks; /* tprof_step() calls: a step lies between two */
	uint64_t step_flops; /* FLOPs of top-level calls within the kept steps */
	uint64_t steps_ns;   /* their total duration */
	/* the program's tprof_param() values (the last one of each name) */
	char **param_name;
	int64_t *param_value;
	size_t nparams;
	uint64_t heap_peak;  /* peak of live requested heap bytes (whole run) */
	uint64_t norange_allocs, norange_alloc_bytes; /* allocations kept outside every range */
	struct ops_thread *thr; /* threads with kernel calls or OpenMP work, in order of appearance */
	size_t nthr;
	struct ops_region_row *regs; /* OpenMP regions by the op that opened them, most wall time first */
	size_t nregs;
	struct ops_row_ix *row_ix; /* the analysis's own: rows by name */
};

/* Runs the analysis. Returns 0, or -1 with a message in t->err (a corrupt heap record, or asking
 * to skip at least as many step boundaries as the trace has). Reads t's heap events to the end. */
int ops_analyze(struct tprof_trace *t, const struct ops_options *o, struct ops_result *r);
void ops_free(struct ops_result *r);

/* Statistics of n durations (sorts them in place). */
void ops_dist(uint64_t *v, size_t n, struct ops_dist *d);

/* The 95 % confidence interval [*lo, *hi] of the difference of the means, b's minus a's, by Welch's t
 * (unequal variances; the Welch-Satterthwaite degrees of freedom rounded down, which widens it).
 * An interval that excludes 0 is a change beyond the run-to-run noise of the samples. Returns 0,
 * or -1 (nothing set) when either sample has fewer than two values. */
int ops_diff_ci(const struct ops_dist *a, const struct ops_dist *b, double *lo, double *hi);

#endif
