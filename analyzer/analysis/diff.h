/* The comparison behind `tprof diff A B` (cmd/cmd_diff.c parses its options and writes it out): the
 * figures of each run (wall time, heap totals, the op analysis with its steps, and the allocation
 * sites, each a whole stack keyed by its symbolized frames), then what changed from A to B: the
 * summary figures, the change of the mean step time with its 95 % confidence interval and a verdict
 * on the noise, and the ops (matched by name) and allocation sites (matched by frames, never by
 * address, which differs from run to run under ASLR) of both runs paired and sorted by the size of
 * their change. Every change is B - A; the relative change is (B - A) / A. Nothing here prints or
 * exits: errors come back with their message in the trace's err. */
#ifndef TPROF_DIFF_H
#define TPROF_DIFF_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/ops.h"
#include "analysis/stacks.h"
#include "trace/reader.h"

/* ---- one run */

/* One allocation site of a run: a whole stack, named by its frames' labels (stack_frame_label:
 * function and file:line, else module+offset). */
struct diff_site {
	char *key;     /* the labels joined by '\n' (then "\n..." when cut): what matches across runs */
	char **frames; /* the labels, innermost first; "(no stack recorded)" alone for no stack */
	size_t nframes;
	int truncated; /* cut at the recorder's depth limit */
	uint64_t allocs, bytes;             /* allocations and bytes allocated */
	uint64_t leaked_bytes, leaked_blocks; /* of its blocks in use at exit */
};

/* One run's figures: diff_run_read_ops and then diff_run_read_heap (a trace's events are read
 * once, so on the trace opened again) fill them, but for wall_ns, which is the caller's. */
struct diff_run {
	char *program;
	uint64_t pid;
	uint64_t wall_ns; /* set by the caller: the run's wall time as tprof report gives it */
	uint64_t allocations, bytes_allocated, peak_bytes, leaked_bytes, leaked_blocks;
	struct ops_result ops;
	struct ops_dist steps;   /* of ops.step_ns */
	struct diff_site *sites; /* sorted by key, keys distinct */
	size_t nsites;
};

/* Reads r's program, pid, op figures and step statistics from t (ops_analyze with o, which reads t's
 * heap events to the end). Returns 0, or -1 with a message in t->err. */
int diff_run_read_ops(struct diff_run *r, struct tprof_trace *t, const struct ops_options *o);

/* Reads r's heap totals and allocation sites from t, from its start: every stack that allocated is
 * a site, and stacks whose frames come out the same (they differ only where symbolization cannot
 * tell) are merged. On success *ss receives the symbolizer the frames came from, which the caller
 * frees (stack_sym_free) once it has said which modules it could not symbolize (stack_sym_warn).
 * Returns 0, or -1 with a message in t->err (*ss NULL). */
int diff_run_read_heap(struct diff_run *r, struct tprof_trace *t, struct stack_sym **ss);

void diff_run_free(struct diff_run *r);

/* ---- changes */

/* One figure in both runs: exact integers (a, b; x and y hold them as doubles), or rates and means
 * (flt: x, y only). */
struct diff_metric {
	int flt;
	uint64_t a, b;
	double x, y;
};

/* B - A. */
double diff_delta(const struct diff_metric *m);
/* Whether B differs from A. */
int diff_changed(const struct diff_metric *m);
/* The relative change (B - A) / A; 0 when nothing changed; NAN when only A is 0 (no ratio exists). */
double diff_rel(const struct diff_metric *m);

/* Whether an op or a site is in both runs, and whether its figures changed. */
enum diff_status { DIFF_SAME, DIFF_CHANGED, DIFF_ADDED, DIFF_REMOVED };

/* "same", "changed", "added", "removed" */
const char *diff_status_name(enum diff_status s);

/* The summary's figures, in the order they are shown. */
enum diff_figure {
	DIFF_WALL_NS,         /* wall time */
	DIFF_KERNEL_NS,       /* time in top-level kernel calls */
	DIFF_STEPS,           /* steps kept (both runs with steps only) */
	DIFF_STEP_MEAN_NS,    /* mean time per step, rounded to 1 ns (both runs with steps only) */
	DIFF_PEAK_BYTES,
	DIFF_LEAKED_BYTES,    /* in use at exit */
	DIFF_LEAKED_BLOCKS,
	DIFF_BYTES_ALLOCATED,
	DIFF_ALLOCATIONS,
	DIFF_FLOPS,           /* of top-level kernel calls */
	DIFF_GFLOPS_PER_S,    /* those FLOPs over the time in kernels */
	DIFF_FLOPS_PER_STEP,  /* FLOPs in the steps over the steps (both runs with steps only) */
	DIFF_FIGURES
};

struct diff_summary_row {
	enum diff_figure fig;
	struct diff_metric m;
};

/* An op of either run, matched by name. */
struct diff_op {
	const char *name; /* the run's row's */
	struct diff_metric calls, self_ns, total_ns, flops;
	struct diff_metric gflops; /* FLOPs over total time */
	enum diff_status status;
};

/* An allocation site of either run, matched by its key. */
struct diff_site_pair {
	const struct diff_site *s; /* B's when in B, else A's: the frames to show */
	struct diff_metric allocs, bytes, leaked_bytes, leaked_blocks;
	enum diff_status status;
};

/* Whether the change of the mean step time lies outside the noise. */
enum diff_verdict { DIFF_TOO_FEW_STEPS, DIFF_SLOWER, DIFF_FASTER, DIFF_WITHIN_NOISE };

/* "too few steps", "slower", "faster", "within noise" */
const char *diff_verdict_name(enum diff_verdict v);

/* The per-step comparison (both runs mark steps). */
struct diff_steps {
	struct diff_metric mean;  /* mean step time, rounded to 1 ns */
	struct diff_metric flops; /* FLOPs per step */
	double gflops_a, gflops_b; /* FLOPs in the steps over their time */
	int have_ci;              /* both runs have 2 steps at least */
	double lo, hi;            /* the 95 % CI of the change of the mean (Welch's t), with have_ci */
	enum diff_verdict verdict; /* slower: lo > 0; faster: hi < 0 */
};

struct diff_result {
	const struct diff_run *a, *b;
	struct diff_summary_row sum[DIFF_FIGURES];
	size_t nsum;
	int have_steps; /* both runs mark steps: steps is set */
	struct diff_steps steps;
	struct diff_op *ops;          /* largest change first: of self time, then FLOPs, calls, total time */
	size_t nops;
	struct diff_site_pair *sites; /* largest change first: of bytes, then leaked bytes, allocations,
				       * leaked blocks */
	size_t nsites;
};

/* Compares run a with run b into d (sorting their op rows by name). d refers to both runs, which
 * must outlive it; diff_free frees what it holds. */
void diff_compare(struct diff_result *d, struct diff_run *a, struct diff_run *b);
void diff_free(struct diff_result *d);

#endif
