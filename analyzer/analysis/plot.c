/* Implementation of analysis/plot.h: the Gantt lanes behind `tprof plot`. */
#include "analysis/plot.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* ---- Gantt lanes ---- */

static int span_cmp(const void *a, const void *b)
{
	const struct plot_span *x = a, *y = b;
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 > y->t1 ? -1 : 1; /* the caller before the calls it makes */
	return 0;
}

struct flat {
	struct plot_box *o;
	size_t n;
	uint64_t cur; /* everything before it has been emitted */
};

static void emit(struct flat *f, uint32_t key, uint64_t end)
{
	if (end <= f->cur)
		return;
	struct plot_box *last = f->n ? &f->o[f->n - 1] : NULL;
	if (last && last->key == key && last->t1 == f->cur)
		last->t1 = end; /* a caller resumed after a call that took no time */
	else
		f->o[f->n++] = (struct plot_box){f->cur, end, key, 0};
	f->cur = end;
}

size_t plot_flatten(const struct plot_span *calls, size_t n, struct plot_box **out)
{
	struct plot_span *c = xmalloc((n + 1) * sizeof(*c));
	if (n)
		memcpy(c, calls, n * sizeof(*c));
	tprof_sort(c, n, sizeof(*c), span_cmp);
	size_t *st = xmalloc((n + 1) * sizeof(size_t)), depth = 0;
	/* Every call's start and end can begin a box: at most 2n of them. */
	struct flat f = {xmalloc((2 * n + 1) * sizeof(struct plot_box)), 0, 0};
	for (size_t i = 0; i <= n; i++) {
		uint64_t at = i < n ? c[i].t0 : UINT64_MAX;
		while (depth && c[st[depth - 1]].t1 <= at) {
			const struct plot_span *top = &c[st[--depth]];
			emit(&f, top->key, top->t1);
		}
		if (i == n)
			break;
		if (depth)
			emit(&f, c[st[depth - 1]].key, at); /* the caller ran until this call began */
		if (at > f.cur)
			f.cur = at;
		st[depth++] = i;
	}
	free(st);
	free(c);
	*out = f.o;
	return f.n;
}

/* The run of boxes being merged, and how much of it each key covers (the first 8 keys seen). */
struct run {
	struct plot_box box;
	uint32_t keys[8];
	uint64_t ns[8];
	unsigned nkeys;
};

static void run_add(struct run *r, const struct plot_box *x)
{
	unsigned i;
	for (i = 0; i < r->nkeys; i++)
		if (r->keys[i] == x->key)
			break;
	if (i == r->nkeys && r->nkeys < 8)
		r->keys[r->nkeys++] = x->key;
	if (i < r->nkeys)
		r->ns[i] += x->t1 - x->t0;
	else
		r->box.mixed = 1;
	if (x->mixed || r->keys[0] != x->key)
		r->box.mixed = 1;
	r->box.t1 = x->t1;
}

size_t plot_merge(struct plot_box *b, size_t n, uint64_t min_ns)
{
	if (!min_ns)
		return n;
	size_t w = 0;
	struct run r;
	int open = 0;
	for (size_t i = 0; i <= n; i++) {
		struct plot_box x = i < n ? b[i] : (struct plot_box){0};
		int wide = i < n && x.t1 - x.t0 >= min_ns;
		uint64_t gap = open && x.t0 > r.box.t1 ? x.t0 - r.box.t1 : 0;
		if (open && (i == n || wide || gap >= min_ns / 2 || r.box.t1 - r.box.t0 >= min_ns)) {
			unsigned best = 0;
			for (unsigned k = 1; k < r.nkeys; k++)
				if (r.ns[k] > r.ns[best])
					best = k;
			r.box.key = r.keys[best];
			b[w++] = r.box; /* w is at most the index of the run's first box */
			open = 0;
		}
		if (i == n)
			break;
		if (wide) {
			b[w++] = x;
			continue;
		}
		if (!open) {
			memset(&r, 0, sizeof(r));
			r.box = (struct plot_box){x.t0, x.t1, x.key, 0};
			open = 1;
		}
		run_add(&r, &x);
	}
	return w;
}
