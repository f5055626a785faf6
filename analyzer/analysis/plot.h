/* The data side of `tprof plot`'s timeline (out/plot_timeline.c draws it), kept apart from the
 * picture so that it can be tested on its own: the Gantt lanes of kernel calls (nested calls
 * flattened to the innermost one, runs of boxes narrower than a pixel merged). Times are ns. */
#ifndef TPROF_PLOT_H
#define TPROF_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- Gantt lanes ---- */

/* A call (or range) on one thread: [t0, t1) with a key (a colour class, a name id). */
struct plot_span {
	uint64_t t0, t1;
	uint32_t key;
};

/* A box drawn in a lane; mixed: it stands for several spans of different keys (a merged run). */
struct plot_box {
	uint64_t t0, t1;
	uint32_t key;
	uint32_t mixed;
};

/* Flattens one thread's calls (in any order; a nested call lies within its caller's interval) into
 * the innermost call running at each moment: boxes in time order that do not overlap, each with the
 * key of the call it shows; a call that ends after its caller (clock rounding) shows until its own
 * end. Returns their count and *out (the caller frees it). */
size_t plot_flatten(const struct plot_span *calls, size_t n, struct plot_box **out);

/* Merges, in place, runs of consecutive boxes narrower than min_ns and separated by less than
 * min_ns / 2 into one box per run, each run ending once it is min_ns wide; the merged box takes the
 * key that covers most of its time and is marked mixed when it stands for more than one key. Boxes
 * must be in time order and not overlap; boxes at least min_ns wide are kept as they are. Returns the
 * new count. */
size_t plot_merge(struct plot_box *b, size_t n, uint64_t min_ns);

#endif
