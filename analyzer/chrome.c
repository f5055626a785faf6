/* Implementation of analyzer/chrome.h. chrome_build computes everything first: the heap replay (the
 * thinned live-bytes counter, each thread's last event, the peak), each thread's kernel calls and
 * ranges made into one properly nested list of slices, the step slices; chrome_write only prints.
 * Times are integer nanoseconds from time zero until they are printed as microseconds with three
 * decimals, so nesting decided here is exactly the nesting a reader of the JSON sees. */
#include "chrome.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "heap.h"
#include "util.h"

/* ---- counters: thinned while they are fed ---- */

struct sample {
	uint64_t ns, value;
	uint64_t seq; /* order of arrival: samples at the same ns keep it */
};

/* A counter track thinned in time buckets: of the changes that fall in one bucket only the lowest,
 * the highest (the first time each is reached) and the last are kept, so the track keeps every
 * bucket's extremes, its level where the next bucket starts, and so the exact peak with its time,
 * in at most 3 samples per bucket however many changes there were. */
struct thin {
	uint64_t width;    /* bucket width, ns */
	uint64_t bucket;
	int open;          /* a bucket is being collected */
	struct sample lo, hi, last;
	int has_value;
	uint64_t value;    /* the value last fed: feeding it again is no change */
	uint64_t prev_ns;  /* the latest time fed */
	uint64_t seq;
	uint64_t changes;  /* changes fed */
	struct sample *out;
	size_t n, cap;
};

/* width: buckets dividing span_ns into at most `buckets` (changes past span_ns get buckets of the
 * same width). */
static void thin_init(struct thin *c, uint64_t span_ns, unsigned buckets)
{
	memset(c, 0, sizeof(*c));
	c->width = span_ns / buckets + 1;
}

static void thin_emit(struct thin *c, const struct sample *s)
{
	if (c->n && c->out[c->n - 1].value == s->value)
		return; /* a step function: the same level again changes nothing */
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		c->out = xrealloc(c->out, c->cap * sizeof(*c->out));
	}
	c->out[c->n++] = *s;
}

static void thin_flush(struct thin *c)
{
	if (!c->open)
		return;
	struct sample v[3] = {c->lo, c->hi, c->last};
	for (int i = 1; i < 3; i++) /* by arrival */
		for (int j = i; j > 0 && v[j].seq < v[j - 1].seq; j--) {
			struct sample x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	for (int i = 0; i < 3; i++)
		if (i == 0 || v[i].seq != v[i - 1].seq)
			thin_emit(c, &v[i]);
	c->open = 0;
}

/* Feeds the counter's next value, in the order the values happened. Heap events' times are partly
 * interpolated (docs/FORMAT.md), and the threads' interpolations can disagree, so a value may come
 * stamped before the one it follows: each sample keeps its own time (the peak stays exactly where
 * tprof peak puts it), but buckets follow the latest time seen, so they only move forward and the
 * bound holds however the times jitter. */
static void thin_add(struct thin *c, uint64_t ns, uint64_t value)
{
	if (ns > c->prev_ns)
		c->prev_ns = ns;
	if (c->has_value && value == c->value)
		return;
	c->has_value = 1;
	c->value = value;
	c->changes++;
	struct sample s = {ns, value, c->seq++};
	uint64_t b = c->prev_ns / c->width;
	if (c->open && b != c->bucket)
		thin_flush(c);
	if (!c->open) {
		c->open = 1;
		c->bucket = b;
		c->lo = c->hi = c->last = s;
		return;
	}
	if (value < c->lo.value)
		c->lo = s;
	if (value > c->hi.value)
		c->hi = s;
	c->last = s;
}

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
	size_t nth, last_th;
	struct slice *steps;
	size_t nsteps;
	uint64_t *bounds; /* step boundaries (ns), all of them */
	size_t nbounds;
	struct thin heap, rss;
	uint64_t peak_bytes, peak_ns;
	uint64_t kernels, ranges, marks; /* exported */
	uint64_t short_kernels, out_kernels, out_ranges, out_marks; /* left out */
	uint64_t snapped, clipped, unclosed;
	uint64_t span_end; /* ns of the last thing known before the heap replay */
};

static struct cthread *thread_of(struct chrome_doc *d, uint32_t tid)
{
	if (d->last_th < d->nth && d->th[d->last_th].tid == tid)
		return &d->th[d->last_th];
	for (size_t i = 0; i < d->nth; i++)
		if (d->th[i].tid == tid) {
			d->last_th = i;
			return &d->th[i];
		}
	d->th = xrealloc(d->th, (d->nth + 1) * sizeof(*d->th));
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

static int in_window(const struct chrome_doc *d, uint64_t ns)
{
	return ns >= d->w0 && ns < d->w1;
}

/* Enclosing slices first: by start, the longer first; a range before a kernel call with the same
 * interval (the range is drawn around it); calls with equal intervals in reverse file order (a
 * thread's calls are written as they return, so the outer one comes last); ranges in push order. */
static int cmp_slice(const void *pa, const void *pb)
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
static void nest(struct slice *v, size_t n, uint64_t *clipped)
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
static int snap_range(struct slice *r, const struct slice *k, size_t n)
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

int chrome_parse_steps(const char *text, struct chrome_options *o)
{
	const char *s = text;
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	unsigned long long a = strtoull(s, &end, 10), b = a;
	if (*end == '-') {
		s = end + 1;
		if (!*s) {
			b = UINT64_MAX;
		} else {
			if (*s < '0' || *s > '9')
				return -1;
			b = strtoull(s, &end, 10);
			if (*end || b < a || b == UINT64_MAX)
				return -1;
		}
	} else if (*end) {
		return -1;
	}
	o->steps = 1;
	o->step_first = a;
	o->step_last = b;
	return 0;
}

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
	thin_init(&d->heap, end > d->w0 ? end - d->w0 : 0, CHROME_COUNTER_BUCKETS);
	int started = 0, rc;
	uint64_t peak = 0;
	struct tprof_event e;
	while ((rc = tprof_trace_next(t, &e)) == 1) {
		uint64_t ns = tprof_trace_ns(t, e.tick);
		seen(thread_of(d, e.tid), ns);
		if (!started && ns >= d->w0) {
			thin_add(&d->heap, d->w0, hs.live_bytes);
			started = 1;
		}
		heap_step(&hs, &e, NULL);
		if (in_window(d, ns))
			thin_add(&d->heap, ns, hs.live_bytes);
		if (hs.peak_bytes > peak) {
			peak = hs.peak_bytes;
			d->peak_ns = ns;
		}
	}
	if (!started && rc == 0)
		thin_add(&d->heap, d->w0, hs.live_bytes);
	thin_flush(&d->heap);
	d->peak_bytes = hs.peak_bytes;
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
	thin_init(&d->rss, end > d->w0 ? end - d->w0 : 0, CHROME_COUNTER_BUCKETS);
	for (size_t i = 0; i < t->nrss; i++) {
		uint64_t ns = tprof_trace_ns(t, t->rss[i].tick);
		if (in_window(d, ns))
			thin_add(&d->rss, ns, t->rss[i].rss_bytes);
	}
	thin_flush(&d->rss);

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
	free(d->steps);
	free(d->bounds);
	free(d->heap.out);
	free(d->rss.out);
	free(d);
}

/* ---- writing ---- */

/* Microseconds with three decimals: exact nanoseconds, no floating-point rounding. */
static void put_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

struct out {
	FILE *f;
	const struct chrome_doc *d;
	uint64_t pid;
	int first;
};

/* Opens one event. "ph" and "ts" come first: some versions of Perfetto's importer find "ts" by
 * scanning the event's keys in order and give up at a string escape they do not know (\u). */
static void ev_begin(struct out *w, const char *ph, uint64_t ts_ns, uint64_t tid)
{
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = 0;
	fprintf(w->f, "{\"ph\":\"%s\",\"ts\":", ph);
	put_us(w->f, ts_ns);
	fprintf(w->f, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64, w->pid, tid);
}

static void meta(struct out *w, uint64_t tid, const char *what, const char *key, const char *str, long num)
{
	ev_begin(w, "M", 0, tid);
	fprintf(w->f, ",\"name\":\"%s\",\"args\":{\"%s\":", what, key);
	if (str)
		tprof_json_str(w->f, str);
	else
		fprintf(w->f, "%ld", num);
	fputs("}}", w->f);
}

static const char *annot_name(const struct tprof_trace *t, uint32_t id)
{
	return id && id < t->nannot_names && t->annot_names[id] ? t->annot_names[id] : "(unnamed)";
}

/* {"M":64,"N":768,"K":768}: the shape values named by the op's NAMES detail ("M,N,K"). */
static void put_shape(FILE *f, const struct tprof_trace *t, const struct tprof_kcall *k)
{
	const char *sn = t->op_shape_names && k->op < t->nop_names && t->op_shape_names[k->op]
				 ? t->op_shape_names[k->op]
				 : "";
	fputc('{', f);
	for (unsigned i = 0; i < k->nshape; i++) {
		const char *comma = strchr(sn, ',');
		size_t nl = comma ? (size_t)(comma - sn) : strlen(sn);
		while (nl && *sn == ' ')
			sn++, nl--;
		char key[64];
		if (nl && nl < sizeof(key))
			snprintf(key, sizeof(key), "%.*s", (int)nl, sn);
		else
			snprintf(key, sizeof(key), "s%u", i);
		if (i)
			fputc(',', f);
		tprof_json_str(f, key);
		fprintf(f, ":%lld", (long long)t->kshape[k->shape_at + i]);
		sn = comma ? comma + 1 : sn + nl;
	}
	fputc('}', f);
}

static void put_recorded(FILE *f, const struct slice *s)
{
	fputs(",\"recorded_ts\":", f);
	put_us(f, s->rec_start);
	fputs(",\"recorded_dur\":", f);
	put_us(f, s->rec_end - s->rec_start);
}

/* "name":true in an args object that already holds n members; returns n + 1. */
static int put_flag(FILE *f, int n, const char *name)
{
	fprintf(f, "%s\"%s\":true", n ? "," : "", name);
	return n + 1;
}

static void put_slice(struct out *w, uint32_t tid, const struct slice *s)
{
	const struct tprof_trace *t = w->d->t;
	FILE *f = w->f;
	ev_begin(w, "X", s->start, tid);
	fputs(",\"dur\":", f);
	put_us(f, s->end - s->start);
	if (s->kind == SL_KERNEL) {
		const struct tprof_kcall *k = &t->kcalls[s->ix];
		uint64_t dur = s->rec_end - s->rec_start;
		fputs(",\"cat\":\"kernel\",\"name\":", f);
		tprof_json_str(f, t->op_names && k->op < t->nop_names && t->op_names[k->op] ? t->op_names[k->op] : "?");
		fprintf(f, ",\"args\":{\"flops\":%" PRIu64 ",\"bytes\":%" PRIu64, k->flops, k->bytes);
		if (dur)
			fprintf(f, ",\"gflops_per_s\":%.6g", (double)k->flops / (double)dur);
		if (k->bytes)
			fprintf(f, ",\"intensity\":%.6g", (double)k->flops / (double)k->bytes);
		fputs(",\"shape\":", f);
		put_shape(f, t, k);
	} else if (s->kind == SL_RANGE) {
		fputs(",\"cat\":\"range\",\"name\":", f);
		tprof_json_str(f, annot_name(t, s->name));
		fputs(",\"args\":{", f);
		int n = 0;
		if (s->flags & F_UNCLOSED)
			n = put_flag(f, n, "unclosed");
		if (s->flags & F_CUT)
			n = put_flag(f, n, "cut_at_steps");
		if (s->flags & F_SNAPPED)
			n = put_flag(f, n, "moved_out_of_kernel");
		if (s->flags & F_CLIPPED)
			n = put_flag(f, n, "clipped_to_nest");
		if (s->flags & (F_CUT | F_SNAPPED | F_CLIPPED)) /* n > 0: a member precedes */
			put_recorded(f, s);
		fputs("}}", f);
		return;
	} else {
		fprintf(f, ",\"cat\":\"step\",\"name\":\"step %zu\",\"args\":{\"step\":%zu", s->ix, s->ix);
	}
	if (s->flags & F_CLIPPED) { /* args are not empty here */
		put_flag(f, 1, "clipped_to_nest");
		put_recorded(f, s);
	}
	fputs("}}", f);
}

static void put_counter(struct out *w, const char *name, const struct thin *c)
{
	for (size_t i = 0; i < c->n; i++) {
		ev_begin(w, "C", c->out[i].ns, w->pid);
		fprintf(w->f, ",\"name\":\"%s\",\"args\":{\"bytes\":%" PRIu64 "}}", name, c->out[i].value);
	}
}

static uint64_t counter_max(const struct thin *c)
{
	uint64_t m = 0;
	for (size_t i = 0; i < c->n; i++)
		if (c->out[i].value > m)
			m = c->out[i].value;
	return m;
}

static void put_other(const struct chrome_doc *d, FILE *f)
{
	const struct tprof_trace *t = d->t;
	const struct chrome_options *o = &d->o;
	fputs("\"otherData\":{\"exporter\":\"tprof export --chrome\",\"trace_format_version\":", f);
	fprintf(f, "%d,\"program\":", TPROF_VERSION);
	tprof_json_str(f, t->info.program);
	fputs(",\"exe\":", f);
	tprof_json_str(f, t->info.exe);
	fputs(",\"argv\":[", f);
	for (uint64_t i = 0; i < t->info.argc && t->info.argv; i++) {
		if (i)
			fputc(',', f);
		tprof_json_str(f, t->info.argv[i]);
	}
	fprintf(f, "],\"pid\":%" PRIu64 ",\"complete\":%s,\"lost_events\":%" PRIu64, t->info.pid,
		t->complete ? "true" : "false", t->lost_events);
	fprintf(f, ",\"peak_bytes\":%" PRIu64 ",\"peak_ts\":", d->peak_bytes);
	put_us(f, d->peak_ns);
	fprintf(f, ",\"kernel_calls\":%zu,\"kernel_slices\":%" PRIu64 ",\"range_slices\":%" PRIu64
		   ",\"marks\":%" PRIu64 ",\"step_slices\":%zu,\"steps_tid\":%u",
		t->nkcalls, d->kernels, d->ranges, d->marks, d->nsteps, CHROME_STEPS_TID);
	fprintf(f, ",\"heap_changes\":%" PRIu64 ",\"heap_samples\":%zu,\"heap_max_bytes\":%" PRIu64,
		d->heap.changes, d->heap.n, counter_max(&d->heap));
	fprintf(f, ",\"rss_samples\":%zu,\"rss_max_bytes\":%" PRIu64, d->rss.n, counter_max(&d->rss));
	fprintf(f, ",\"min_dur_ns\":%" PRIu64 ",\"dropped_shorter_than_min_dur\":%" PRIu64, o->min_dur_ns,
		d->short_kernels);
	if (o->steps) {
		fprintf(f, ",\"steps\":{\"first\":%" PRIu64 ",\"last\":", o->step_first);
		if (o->step_last == UINT64_MAX)
			fputs("null", f);
		else
			fprintf(f, "%" PRIu64, o->step_last);
		fputs(",\"window_start\":", f);
		put_us(f, d->w0);
		fputs(",\"window_end\":", f);
		if (d->w1 == UINT64_MAX)
			fputs("null", f);
		else
			put_us(f, d->w1);
		fprintf(f, ",\"dropped_kernels\":%" PRIu64 ",\"dropped_ranges\":%" PRIu64 ",\"dropped_marks\":%" PRIu64 "}",
			d->out_kernels, d->out_ranges, d->out_marks);
	} else {
		fputs(",\"steps\":null", f);
	}
	fprintf(f, ",\"ranges_unclosed\":%" PRIu64 ",\"ranges_snapped\":%" PRIu64 ",\"slices_clipped\":%" PRIu64,
		d->unclosed, d->snapped, d->clipped);
	/* the program's tprof_param() values: the last one of each name, names in order of appearance */
	fputs(",\"params\":{", f);
	size_t nn = t->nannot_names + 1;
	int64_t *last = xcalloc(nn, sizeof(*last));
	size_t *first = xcalloc(nn, sizeof(*first)); /* index + 1 of the name's first value; 0: none */
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *a = &t->annots[i];
		if (a->kind != TPROF_ANNOT_PARAM || a->name >= nn)
			continue;
		if (!first[a->name])
			first[a->name] = i + 1;
		last[a->name] = a->value;
	}
	int any = 0;
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *a = &t->annots[i];
		if (a->kind != TPROF_ANNOT_PARAM || a->name >= nn || first[a->name] != i + 1)
			continue;
		fputs(any ? "," : "", f);
		any = 1;
		tprof_json_str(f, annot_name(t, a->name));
		fprintf(f, ":%" PRId64, last[a->name]);
	}
	free(last);
	free(first);
	fputs("}}", f);
}

void chrome_write(const struct chrome_doc *d, FILE *f)
{
	const struct tprof_trace *t = d->t;
	struct out w = {f, d, t->info.pid, 1};
	fputs("{\"traceEvents\":[", f);
	meta(&w, w.pid, "process_name", "name", t->info.program ? t->info.program : "", 0);
	if (d->nsteps || d->nbounds) {
		meta(&w, CHROME_STEPS_TID, "thread_name", "name", "steps", 0);
		meta(&w, CHROME_STEPS_TID, "thread_sort_index", "sort_index", NULL, 0);
	}
	for (size_t i = 0; i < d->nth; i++) {
		const struct cthread *h = &d->th[i];
		const char *name = tprof_trace_thread_name(t, h->tid);
		if (name && *name)
			meta(&w, h->tid, "thread_name", "name", name, 0);
		/* the main thread first, then the others as they began */
		meta(&w, h->tid, "thread_sort_index", "sort_index", NULL, h->tid == w.pid ? 1 : (long)i + 2);
	}
	for (size_t i = 0; i < d->nth; i++)
		for (size_t j = 0; j < d->th[i].nall; j++)
			put_slice(&w, d->th[i].tid, &d->th[i].all[j]);
	for (size_t i = 0; i < d->nsteps; i++)
		put_slice(&w, CHROME_STEPS_TID, &d->steps[i]);
	for (size_t i = 0; i < d->nbounds; i++)
		if (in_window(d, d->bounds[i]) || (d->w1 != UINT64_MAX && d->bounds[i] == d->w1)) {
			ev_begin(&w, "i", d->bounds[i], CHROME_STEPS_TID);
			fprintf(f, ",\"s\":\"t\",\"cat\":\"step\",\"name\":\"step boundary\",\"args\":{\"boundary\":%zu}}", i);
		}
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *a = &t->annots[i];
		uint64_t ns = tprof_trace_ns(t, a->tick);
		if (a->kind != TPROF_ANNOT_MARK || !in_window(d, ns))
			continue;
		ev_begin(&w, "i", ns, a->tid);
		fputs(",\"s\":\"t\",\"cat\":\"mark\",\"name\":", f);
		tprof_json_str(f, annot_name(t, a->name));
		fputc('}', f);
	}
	put_counter(&w, "live heap", &d->heap);
	put_counter(&w, "RSS", &d->rss);
	fputs("\n],\n", f);
	put_other(d, f);
	fputs("}\n", f);
}
