/* Implementation of analysis/timeline.h: the heap replay (the thinned live-bytes counter, each
 * thread's last event, the peak), each thread's kernel calls and ranges made into one properly
 * nested list of slices, and the step slices. */
#include "analysis/timeline.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "analysis/heap.h"
#include "base/util.h"

/* A thread's index in d->th (uthash): traces of many threads cost no quadratic search. */
struct cthread_ix {
	uint32_t tid;
	size_t i;
	UT_hash_handle hh;
};

static struct cthread *thread_of(struct chrome_doc *d, uint32_t tid)
{
	if (d->last_th < d->nth && d->th[d->last_th].tid == tid)
		return &d->th[d->last_th];
	struct cthread_ix *x;
	HASH_FIND(hh, d->th_ix, &tid, sizeof(tid), x);
	if (x) {
		d->last_th = x->i;
		return &d->th[x->i];
	}
	if (d->nth == d->cap_th) {
		d->cap_th = d->cap_th ? 2 * d->cap_th : 16;
		d->th = xrealloc(d->th, d->cap_th * sizeof(*d->th));
	}
	x = xmalloc(sizeof(*x));
	x->tid = tid;
	x->i = d->nth;
	HASH_ADD(hh, d->th_ix, tid, sizeof(x->tid), x);
	struct cthread *h = &d->th[d->nth];
	memset(h, 0, sizeof(*h));
	h->tid = tid;
	d->last_th = d->nth++;
	return h;
}

static void seen(struct cthread *h, uint64_t ns)
{
	if (ns > h->last_ns)
		h->last_ns = ns;
}

static struct slice *push_slice(struct slice **v, size_t *n, size_t *cap)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 64;
		*v = xrealloc(*v, *cap * sizeof(**v));
	}
	struct slice *s = &(*v)[(*n)++];
	memset(s, 0, sizeof(*s));
	s->parent = -1;
	return s;
}

int in_window(const struct chrome_doc *d, uint64_t ns)
{
	return ns >= d->w0 && ns < d->w1;
}

/* Enclosing slices first: by start, the longer first; a range before a kernel call with the same
 * interval (the range is drawn around it); calls with equal intervals in reverse file order (a
 * thread's calls are written as they return, so the outer one comes last); ranges in push order. */
int cmp_slice(const void *pa, const void *pb)
{
	const struct slice *a = pa, *b = pb;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->end != b->end)
		return a->end > b->end ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->ix != b->ix)
		return (a->ix < b->ix) == (a->kind != SL_KERNEL) ? -1 : 1;
	return 0;
}

/* Sorts v and makes it properly nested: a slice that begins inside another and ends after it gets
 * its end pulled in to the enclosing one's (flagged, counted in *clipped). Sets each slice's parent.
 * Slices that touch (one ends where the next begins) are siblings, as in Perfetto's importer. */
void nest(struct slice *v, size_t n, uint64_t *clipped)
{
	if (n)
		tprof_sort(v, n, sizeof(*v), cmp_slice);
	long *stack = xmalloc((n + 1) * sizeof(long));
	size_t depth = 0;
	for (size_t i = 0; i < n; i++) {
		while (depth && v[stack[depth - 1]].end <= v[i].start)
			depth--;
		v[i].parent = depth ? stack[depth - 1] : -1;
		if (depth && v[i].end > v[stack[depth - 1]].end) {
			v[i].end = v[stack[depth - 1]].end;
			v[i].flags |= F_CLIPPED;
			(*clipped)++;
		}
		stack[depth++] = (long)i;
	}
	free(stack);
}

/* Index of the last of the sorted calls k[0..n) that begins before ns, or -1. */
static long last_before(const struct slice *k, size_t n, uint64_t ns)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (k[mid].start < ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (long)lo - 1;
}

/* The deepest of the nested calls k that contains ns strictly inside it, or -1. Every call that
 * does is an ancestor of (or is) the last call that begins before ns. */
static long deepest_around(const struct slice *k, size_t n, uint64_t ns)
{
	long i = last_before(k, n, ns);
	while (i >= 0 && k[i].end <= ns)
		i = k[i].parent;
	return i;
}

/* A range and a kernel call of one thread cross when one boundary of the range is strictly inside
 * the call and the other outside it: a range pushed or popped while a call was running (from a
 * callback, a signal handler). Kernel calls are measurements and stay as they are; the range gives
 * up the calls it crosses: a push inside calls that end before the pop moves to the end of the
 * outermost such call, then a pop inside calls that begin after the (new) push moves to the start of
 * the outermost such call. The range only shrinks, stays non-empty, and its new boundaries are
 * outside every call they were inside (or inside calls that contain the whole range), so it crosses
 * no call and no other range of the thread. (Growing ranges over the calls instead would make two
 * sibling ranges, one popped and the next pushed inside the same call, overlap.) Returns whether
 * the range changed. k: the thread's calls, sorted and nested. */
int snap_range(struct slice *r, const struct slice *k, size_t n)
{
	uint64_t p = r->start, q = r->end;
	long i = deepest_around(k, n, p), out = -1;
	for (; i >= 0 && k[i].end < q; i = k[i].parent)
		out = i;
	if (out >= 0)
		p = k[out].end;
	i = deepest_around(k, n, q);
	out = -1;
	for (; i >= 0 && k[i].start > p; i = k[i].parent)
		out = i;
	if (out >= 0)
		q = k[out].start;
	if (p == r->start && q == r->end)
		return 0;
	r->start = p;
	r->end = q;
	return 1;
}

/* ---- building ---- */

static void add_range(struct chrome_doc *d, struct cthread *h, const struct open_range *op, uint64_t end,
		      unsigned flags)
{
	if (end < op->start)
		end = op->start; /* a pop stamped before its push: only in a damaged trace */
	if (!(op->start < d->w1 && (end > d->w0 || op->start >= d->w0))) {
		d->out_ranges++;
		return;
	}
	struct slice *s = push_slice(&h->r, &h->nr, &h->capr);
	s->kind = SL_RANGE;
	s->start = s->rec_start = op->start;
	s->end = s->rec_end = end;
	s->ix = op->order;
	s->name = op->name;
	s->flags = (uint8_t)flags;
	if (s->start < d->w0)
		s->start = d->w0, s->flags |= F_CUT;
	if (s->end > d->w1)
		s->end = d->w1, s->flags |= F_CUT;
	if (flags & F_UNCLOSED)
		d->unclosed++;
}

static int find_window(struct chrome_doc *d)
{
	struct tprof_trace *t = d->t;
	const struct chrome_options *o = &d->o;
	d->w0 = 0;
	d->w1 = UINT64_MAX;
	for (size_t i = 0; i < t->nannots; i++)
		if (t->annots[i].kind == TPROF_ANNOT_STEP) {
			if (!d->bounds)
				d->bounds = xmalloc(t->nannots * sizeof(uint64_t));
			d->bounds[d->nbounds++] = tprof_trace_ns(t, t->annots[i].tick);
		}
	if (!o->steps)
		return 0;
	size_t nb = d->nbounds, nsteps = nb > 1 ? nb - 1 : 0;
	int open = o->step_last == UINT64_MAX;
	if (open ? o->step_first >= nb : o->step_last >= nsteps) {
		char have[64];
		if (nsteps)
			snprintf(have, sizeof(have), "steps 0 to %zu", nsteps - 1);
		else
			snprintf(have, sizeof(have), "no complete step");
		snprintf(t->err, sizeof(t->err),
			 "%s: --steps asks for step %" PRIu64 ", but the program marked %zu step boundaries "
			 "(tprof_step): %s",
			 t->path, open ? o->step_first : o->step_last, nb, have);
		return -1;
	}
	d->w0 = d->bounds[o->step_first];
	if (!open)
		d->w1 = d->bounds[o->step_last + 1] > d->w0 ? d->bounds[o->step_last + 1] : d->w0;
	return 0;
}

/* Replays the heap: the live-bytes counter inside the window, with its level where the window
 * begins; each thread's last event; the peak of the whole run. */
static int replay_heap(struct chrome_doc *d)
{
	struct tprof_trace *t = d->t;
	struct heap_stats hs;
	heap_init(&hs, 0);
	uint64_t end = d->w1 != UINT64_MAX ? d->w1 : d->span_end;
	series_init(&d->heap, end > d->w0 ? end - d->w0 : 0, CHROME_COUNTER_BUCKETS, SERIES_CHANGES);
	int started = 0, rc;
	uint64_t peak = 0;
	struct tprof_event e;
	while ((rc = tprof_trace_next(t, &e)) == 1) {
		uint64_t ns = tprof_trace_ns(t, e.tick);
		seen(thread_of(d, e.tid), ns);
		if (!started && ns >= d->w0) {
			series_add(&d->heap, d->w0, hs.live_bytes);
			started = 1;
		}
		heap_step(&hs, &e, NULL);
		if (in_window(d, ns))
			series_add(&d->heap, ns, hs.live_bytes);
		if (hs.peak_bytes > peak) {
			peak = hs.peak_bytes;
			d->peak_ns = ns;
		}
	}
	if (!started && rc == 0)
		series_add(&d->heap, d->w0, hs.live_bytes);
	series_end(&d->heap);
	d->peak_bytes = hs.peak_bytes;
	if (rc >= 0)
		rc = heap_finish(&hs, d->t);
	heap_release(&hs);
	return rc < 0 ? -1 : 0;
}

static void build_steps(struct chrome_doc *d)
{
	const struct chrome_options *o = &d->o;
	size_t first = o->steps ? o->step_first : 0;
	size_t last = d->nbounds > 1 ? d->nbounds - 2 : 0; /* the last step */
	if (o->steps && o->step_last != UINT64_MAX)
		last = o->step_last;
	if (d->nbounds < 2 || first > last)
		return; /* no step, or only the tail after the last boundary */
	d->steps = xcalloc(last - first + 1, sizeof(*d->steps));
	for (size_t i = first; i <= last && i + 1 < d->nbounds; i++) {
		struct slice *s = &d->steps[d->nsteps++];
		s->kind = SL_STEP;
		s->ix = i;
		s->start = s->rec_start = d->bounds[i];
		s->end = s->rec_end = d->bounds[i + 1] > s->start ? d->bounds[i + 1] : s->start;
	}
	nest(d->steps, d->nsteps, &d->clipped);
}

int chrome_build(struct tprof_trace *t, const struct chrome_options *o, struct chrome_doc **out)
{
	struct chrome_doc *d = xcalloc(1, sizeof(*d));
	d->t = t;
	d->o = *o;
	*out = NULL;
	if (find_window(d) != 0) {
		chrome_free(d);
		return -1;
	}
	for (size_t i = 0; i < t->nthreads; i++) /* the reader's order: tracks sort as threads began */
		thread_of(d, t->threads[i].tid);

	/* what the heap replay's counter buckets must cover: the clock's last pair and every event
	 * already in memory; heap events after those (a trace cut short) get buckets of their own */
	d->span_end = t->end_ns > t->t0_ns ? t->end_ns - t->t0_ns : 0;
	for (size_t i = 0; i < t->nkcalls; i++) {
		uint64_t ns = tprof_trace_ns(t, t->kcalls[i].t1);
		seen(thread_of(d, t->kcalls[i].tid), ns);
		if (ns > d->span_end)
			d->span_end = ns;
	}
	for (size_t i = 0; i < t->nannots; i++) {
		uint64_t ns = tprof_trace_ns(t, t->annots[i].tick);
		seen(thread_of(d, t->annots[i].tid), ns);
		if (ns > d->span_end)
			d->span_end = ns;
	}
	if (replay_heap(d) != 0) {
		chrome_free(d);
		return -2;
	}

	/* RSS: the same thinning, over the window */
	uint64_t end = d->w1 != UINT64_MAX ? d->w1 : d->span_end;
	series_init(&d->rss, end > d->w0 ? end - d->w0 : 0, CHROME_COUNTER_BUCKETS, SERIES_CHANGES);
	for (size_t i = 0; i < t->nrss; i++) {
		uint64_t ns = tprof_trace_ns(t, t->rss[i].tick);
		if (in_window(d, ns))
			series_add(&d->rss, ns, t->rss[i].rss_bytes);
	}
	series_end(&d->rss);

	for (size_t i = 0; i < t->nkcalls; i++) {
		const struct tprof_kcall *k = &t->kcalls[i];
		uint64_t a = tprof_trace_ns(t, k->t0), b = tprof_trace_ns(t, k->t1);
		if (b < a)
			b = a;
		if (!in_window(d, a)) {
			d->out_kernels++;
			continue;
		}
		if (b - a < d->o.min_dur_ns) {
			d->short_kernels++;
			continue;
		}
		struct cthread *h = thread_of(d, k->tid);
		struct slice *s = push_slice(&h->k, &h->nk, &h->capk);
		s->kind = SL_KERNEL;
		s->start = s->rec_start = a;
		s->end = s->rec_end = b;
		s->ix = i;
	}

	size_t order = 0;
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *a = &t->annots[i];
		struct cthread *h = thread_of(d, a->tid);
		uint64_t ns = tprof_trace_ns(t, a->tick);
		if (a->kind == TPROF_ANNOT_PUSH) {
			if (h->nopen == h->capopen) {
				h->capopen = h->capopen ? 2 * h->capopen : 16;
				h->open = xrealloc(h->open, h->capopen * sizeof(*h->open));
			}
			h->open[h->nopen++] = (struct open_range){ns, a->name, order++};
		} else if (a->kind == TPROF_ANNOT_POP) {
			if (h->nopen) /* a pop without a push is ignored, as tprof ops does */
				add_range(d, h, &h->open[--h->nopen], ns, 0);
		} else if (a->kind == TPROF_ANNOT_MARK) {
			if (in_window(d, ns))
				d->marks++;
			else
				d->out_marks++;
		}
	}
	for (size_t i = 0; i < d->nth; i++) {
		struct cthread *h = &d->th[i];
		while (h->nopen) /* innermost first: each closes at the thread's last event */
			add_range(d, h, &h->open[--h->nopen], h->last_ns, F_UNCLOSED);
		nest(h->k, h->nk, &d->clipped);
		for (size_t j = 0; j < h->nr; j++)
			if (snap_range(&h->r[j], h->k, h->nk)) {
				h->r[j].flags |= F_SNAPPED;
				d->snapped++;
			}
		h->nall = h->nk + h->nr;
		h->all = xmalloc((h->nall + 1) * sizeof(*h->all));
		if (h->nk)
			memcpy(h->all, h->k, h->nk * sizeof(*h->k));
		if (h->nr)
			memcpy(h->all + h->nk, h->r, h->nr * sizeof(*h->r));
		nest(h->all, h->nall, &d->clipped);
		d->kernels += h->nk;
		d->ranges += h->nr;
	}
	build_steps(d);
	*out = d;
	return 0;
}

void chrome_free(struct chrome_doc *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nth; i++) {
		free(d->th[i].k);
		free(d->th[i].r);
		free(d->th[i].all);
		free(d->th[i].open);
	}
	free(d->th);
	struct cthread_ix *x, *tmp;
	HASH_ITER(hh, d->th_ix, x, tmp) {
		HASH_DEL(d->th_ix, x);
		free(x);
	}
	free(d->steps);
	free(d->bounds);
	series_free(&d->heap);
	series_free(&d->rss);
	free(d);
}

