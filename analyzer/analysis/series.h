/* The one downsampler of long time series (live heap bytes, RSS): values fed in the order they
 * happened are kept per time bucket, at most the lowest, the highest (the first time each is
 * reached) and the last, and with SERIES_FIRST the first too, so that the kept points hold every
 * bucket's extremes and the exact maximum with its time, in a bounded number of points however many
 * values were fed. `tprof plot` draws them as lines (SERIES_FIRST: the envelope stays that of the
 * whole series), `tprof export --chrome` as counter tracks (SERIES_CHANGES: a step function). */
#ifndef TPROF_SERIES_H
#define TPROF_SERIES_H

#include <stddef.h>
#include <stdint.h>

#define SERIES_FIRST 1u   /* keep each bucket's first value too */
#define SERIES_FORWARD 2u /* a time before the latest is taken as the latest: kept points go forwards */
#define SERIES_CHANGES 4u /* a value equal to the one before it is no change, and not kept */

struct series_point {
	uint64_t t, v;
};

struct series_kept {
	uint64_t t, v, n; /* n: which value of the series (order of arrival) */
};

struct series {
	uint64_t width; /* of a bucket; buckets follow the latest time fed, so they only move forward */
	unsigned flags;
	int open;       /* a bucket is being collected */
	uint64_t bucket;
	struct series_kept first, lo, hi, last;
	uint64_t latest;       /* the latest time fed */
	uint64_t count;        /* values fed */
	uint64_t changes;      /* values fed that were kept as changes (all of them without SERIES_CHANGES) */
	uint64_t value;        /* the value last fed */
	uint64_t max_v, max_t; /* the largest value and the first time it was reached */
	struct series_point *out; /* the kept points, in order of arrival */
	size_t n, cap;
};

/* Buckets of span / buckets (buckets > 0; a span of 0 makes every time one bucket, and times past
 * span get buckets of the same width). */
void series_init(struct series *s, uint64_t span, size_t buckets, unsigned flags);
/* Feeds the value v at time t. Times may jitter backwards (threads' interpolated clocks): each point
 * keeps its own time unless SERIES_FORWARD, but buckets follow the latest time, so the bound holds. */
void series_add(struct series *s, uint64_t t, uint64_t v);
/* Ends the last bucket: s->out[0..n) is then complete. */
void series_end(struct series *s);
void series_free(struct series *s);

#endif
