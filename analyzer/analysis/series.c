/* Implementation of analysis/series.h. */
#include "analysis/series.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void series_init(struct series *s, uint64_t span, size_t buckets, unsigned flags)
{
	memset(s, 0, sizeof(*s));
	s->width = span / (buckets ? buckets : 1) + 1;
	s->flags = flags;
}

static void emit(struct series *s, const struct series_kept *k)
{
	if ((s->flags & SERIES_CHANGES) && s->n && s->out[s->n - 1].v == k->v)
		return; /* a step function: the same level again changes nothing */
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->out = xrealloc(s->out, s->cap * sizeof(*s->out));
	}
	s->out[s->n++] = (struct series_point){k->t, k->v};
}

void series_end(struct series *s)
{
	if (!s->open)
		return;
	struct series_kept k[4] = {s->lo, s->hi, s->last, s->first};
	int m = s->flags & SERIES_FIRST ? 4 : 3;
	for (int i = 1; i < m; i++) /* by arrival */
		for (int j = i; j > 0 && k[j].n < k[j - 1].n; j--) {
			struct series_kept x = k[j];
			k[j] = k[j - 1];
			k[j - 1] = x;
		}
	for (int i = 0; i < m; i++)
		if (i == 0 || k[i].n != k[i - 1].n)
			emit(s, &k[i]);
	s->open = 0;
}

void series_add(struct series *s, uint64_t t, uint64_t v)
{
	if (s->count && t < s->latest && (s->flags & SERIES_FORWARD))
		t = s->latest;
	if (!s->count || t > s->latest)
		s->latest = t;
	if ((s->flags & SERIES_CHANGES) && s->count && v == s->value)
		return;
	if (!s->count || v > s->max_v)
		s->max_v = v, s->max_t = t;
	struct series_kept k = {t, v, s->count++};
	s->value = v;
	s->changes++;
	uint64_t b = s->latest / s->width;
	if (s->open && b != s->bucket)
		series_end(s);
	if (!s->open) {
		s->open = 1;
		s->bucket = b;
		s->first = s->lo = s->hi = s->last = k;
		return;
	}
	if (v < s->lo.v)
		s->lo = k;
	if (v > s->hi.v) /* strictly: the first time a maximum is reached is the one kept */
		s->hi = k;
	s->last = k;
}

void series_free(struct series *s)
{
	free(s->out);
	s->out = NULL;
	s->n = s->cap = 0;
}
