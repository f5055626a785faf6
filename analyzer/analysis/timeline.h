/* The timeline behind `tprof export --chrome` (out/chrome.c writes it): a trace's kernel calls and
 * annotated ranges per thread made into properly nested slices, the step slices, and counter tracks
 * (live heap bytes, RSS) thinned in time buckets with the exact peak kept. Computed whole before
 * anything is written, so an error leaves no half-written file. Times are integer nanoseconds from
 * time zero, so the nesting decided here is exactly what a reader of the JSON sees. */
#ifndef TPROF_TIMELINE_H
#define TPROF_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/series.h"
#include "trace/reader.h"

/* The tid of the steps track: PID_MAX_LIMIT, which no Linux thread id reaches. */
#define CHROME_STEPS_TID 4194304u
/* Counter samples are thinned to at most 3 per bucket, the buckets dividing the exported time. */
#define CHROME_COUNTER_BUCKETS 4096u

struct chrome_options {
	uint64_t min_dur_ns; /* kernel calls shorter than this are left out; 0 keeps all */
	int steps;           /* keep only what falls in steps step_first..step_last */
	uint64_t step_first;
	uint64_t step_last;  /* UINT64_MAX: to the end of the trace */
};

/* ---- slices ---- */

enum { SL_RANGE = 0, SL_KERNEL = 1, SL_STEP = 2 };

#define F_UNCLOSED 1u /* range: still open at its thread's last event, closed there */
#define F_SNAPPED 2u  /* range: a boundary moved out of a kernel call it crossed */
#define F_CUT 4u      /* range: cut at the edge of the --steps window */
#define F_CLIPPED 8u  /* end pulled in to nest in the enclosing slice (only malformed input) */

struct slice {
	uint64_t start, end;         /* ns */
	uint64_t rec_start, rec_end; /* as recorded, before any change above */
	size_t ix;    /* kernel: index into t->kcalls; range: push order; step: step number */
	long parent;  /* kernels: the enclosing call's index in the thread's sorted calls, -1: none */
	uint32_t name; /* range: annotation name id */
	uint8_t kind, flags;
};

struct open_range {
	uint64_t start;
	uint32_t name;
	size_t order;
};

struct cthread {
	uint32_t tid;
	uint64_t last_ns; /* its last event of any kind */
	struct slice *k, *r, *all; /* kernel calls, closed ranges, both nested into one list */
	size_t nk, capk, nr, capr, nall;
	struct open_range *open;
	size_t nopen, capopen;
};

struct chrome_doc {
	struct tprof_trace *t;
	struct chrome_options o;
	uint64_t w0, w1; /* the window kept, ns; w1 UINT64_MAX: to the end */
	struct cthread *th;
	size_t nth, last_th, cap_th;
	struct cthread_ix *th_ix; /* tid -> index in th (uthash) */
	struct slice *steps;
	size_t nsteps;
	uint64_t *bounds; /* step boundaries (ns), all of them */
	size_t nbounds;
	struct series heap, rss; /* counter tracks (analysis/series.h, SERIES_CHANGES) */
	uint64_t peak_bytes, peak_ns;
	uint64_t kernels, ranges, marks; /* exported */
	uint64_t short_kernels, out_kernels, out_ranges, out_marks; /* left out */
	uint64_t snapped, clipped, unclosed;
	uint64_t span_end; /* ns of the last thing known before the heap replay */
};


/* Computes everything the export holds, reading t's heap events to the end. Returns 0 and *out
 * (freed with chrome_free; it refers to t, which must outlive it); -1 with a message in t->err
 * when the steps asked for are not in the trace; -2 with a message in t->err on a corrupt heap
 * record. */
int chrome_build(struct tprof_trace *t, const struct chrome_options *o, struct chrome_doc **out);

void chrome_free(struct chrome_doc *d);

/* Slices: nests v[0..n) (sorted by cmp_slice) by pulling ends in, counting those in *clipped;
 * snap_range moves a range's boundaries out of the kernel calls k[0..n) they cut, 1 when it did. */
int cmp_slice(const void *pa, const void *pb);
/* Whether ns falls in the --steps window kept. */
int in_window(const struct chrome_doc *d, uint64_t ns);
void nest(struct slice *v, size_t n, uint64_t *clipped);
int snap_range(struct slice *r, const struct slice *k, size_t n);

#endif
