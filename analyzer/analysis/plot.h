/* The data side of `tprof plot` (out/plot_*.c draw it), kept apart from the pictures so that it can
 * be tested on its own: a downsampler for long time series that never loses the maximum, and the
 * Gantt lanes of kernel calls (nested calls flattened to the innermost one, runs of boxes narrower
 * than a pixel merged). Times are nanoseconds. */
#ifndef TPROF_PLOT_H
#define TPROF_PLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- time series ---- */

struct plot_point {
	uint64_t t, v;
};

/* A series downsampled per time bucket: of each bucket only its first, smallest, largest and last
 * values are kept, so a line through the kept points has the same envelope as the whole series. */
struct plot_series {
	uint64_t span;   /* times at or after span fall into the last bucket */
	size_t nbuckets;
	struct plot_bucket *b;
	uint64_t count;  /* values added */
	uint64_t last_t; /* time of the last value added */
	uint64_t max_v, max_t; /* the largest value and the first time it was reached */
};

/* nbuckets > 0; span 0 puts everything in one bucket. */
void plot_series_init(struct plot_series *s, uint64_t span, size_t nbuckets);
/* Adds the value v at time t, in the order the values happened. A time before the previous one (the
 * clocks of concurrent threads disagree by a little) is taken as the previous one, so that the kept
 * points always go forwards in time. */
void plot_series_add(struct plot_series *s, uint64_t t, uint64_t v);
/* The kept points in time order (ties in the order they were added), each once; the first point at
 * which the series reached its maximum (max_t, max_v) is always among them. Returns their count and
 * *out, which the caller frees (NULL when there are none). */
size_t plot_series_points(const struct plot_series *s, struct plot_point **out);
void plot_series_free(struct plot_series *s);

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
