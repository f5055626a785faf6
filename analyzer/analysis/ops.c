/* Implementation of analysis/ops.h. Kernel calls come from the reader's in-memory arrays; heap
 * events are replayed once (in sequence order, merged with the annotations) for the threads' first
 * and last events, the memory charged to ranges and the heap peak. */
#include "analysis/ops.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#include "analysis/heap.h"
#include "tprof_ops.h"
#include "base/util.h"

/* A stretch of one thread's time inside an OpenMP region's body. */
struct region_span {
	uint64_t begin, end; /* ticks; end UINT64_MAX while open */
	size_t region;       /* index into state.regions */
};

/* A thread's open ranges, innermost last, and the path of their names. */
#define MAX_RANGE_DEPTH 64
struct open_range {
	size_t row;
	size_t inst; /* index into ranges */
	uint64_t start_live, max_live;
	size_t path_len; /* length of path before this range's name was appended */
};
struct open_ranges {
	struct open_range stack[MAX_RANGE_DEPTH];
	char path[1024];
};

struct thr {
	uint32_t tid;
	uint64_t first, last; /* ticks */
	size_t *calls;        /* indexes into t->kcalls, sorted by start (enclosing call first) */
	size_t *parent;       /* for each of calls: the position of the call enclosing it, or SIZE_MAX */
	size_t ncalls, cap;
	struct region_span *spans; /* by begin */
	size_t nspans, cap_spans;
	struct open_ranges *ro; /* made at the thread's first range: most threads open none */
	unsigned depth;
	uint64_t folded; /* ranges opened past the 64th and not yet closed: their pops are theirs */
};

struct range_inst {
	uint32_t tid;
	uint64_t start, end; /* ticks; end UINT64_MAX while open */
	size_t row;
	int kept; /* begins inside the kept window */
};

/* An OpenMP region: where it was opened, and what its threads' work belongs to. */
struct omp_region {
	int64_t id;
	uint32_t fork_tid;  /* 0: no fork seen */
	uint64_t fork_tick;
	int resolved;
	struct thr *owner;  /* the thread of the call that opened it, NULL when none did */
	size_t call;        /* that call's position in owner->calls */
	size_t *ranges;     /* the ranges open on the opening thread at the fork (indexes into ranges) */
	size_t nranges;
};

/* A row's name and index in ops_result.rows (uthash), so that many names cost no quadratic search. */
struct ops_row_ix {
	size_t row;
	UT_hash_handle hh;
};

/* A thread's index in state.thr (uthash). */
struct thr_ix {
	uint32_t tid;
	size_t i;
	UT_hash_handle hh;
};

struct state {
	struct tprof_trace *t;
	struct omp_region *regions; /* by id - 1 */
	size_t nregions;
	struct ops_result *r;
	struct thr *thr;
	size_t nthr, cap_thr;
	struct thr_ix *thr_ix;
	struct range_inst *ranges;
	size_t nranges, cap_ranges;
	uint64_t window; /* tick */
	unsigned *op_of; /* the op table entry of each op id of the trace (0: not in this tprof's table) */
};

static struct thr *thread_of(struct state *s, uint32_t tid)
{
	struct thr_ix *x;
	HASH_FIND(hh, s->thr_ix, &tid, sizeof(tid), x);
	if (x)
		return &s->thr[x->i];
	if (s->nthr == s->cap_thr) {
		s->cap_thr = s->cap_thr ? 2 * s->cap_thr : 16;
		s->thr = xrealloc(s->thr, s->cap_thr * sizeof(*s->thr));
	}
	x = xmalloc(sizeof(*x));
	x->tid = tid;
	x->i = s->nthr;
	HASH_ADD(hh, s->thr_ix, tid, sizeof(x->tid), x);
	struct thr *h = &s->thr[s->nthr++];
	memset(h, 0, sizeof(*h));
	h->tid = tid;
	h->first = UINT64_MAX;
	return h;
}

static void seen(struct thr *h, uint64_t tick)
{
	if (tick < h->first)
		h->first = tick;
	if (tick > h->last)
		h->last = tick;
}

static size_t row_for(struct ops_result *r, const char *name, unsigned op, int fp_bits)
{
	struct ops_row_ix *x;
	size_t len = strlen(name);
	HASH_FIND(hh, r->row_ix, name, len, x);
	if (x)
		return x->row;
	if ((r->nrows & (r->nrows - 1)) == 0) /* 0, 1, 2, 4, ...: room doubles */
		r->rows = xrealloc(r->rows, (r->nrows ? 2 * r->nrows : 1) * sizeof(*r->rows));
	struct ops_row *w = &r->rows[r->nrows];
	memset(w, 0, sizeof(*w));
	w->name = xstrndup(name, len);
	x = xmalloc(sizeof(*x));
	x->row = r->nrows;
	HASH_ADD_KEYPTR(hh, r->row_ix, w->name, len, x);
	w->op = op;
	w->fp_bits = fp_bits;
	return r->nrows++;
}

/* Charges one call of op name to range row w's breakdown. */
/* Charges a call (calls = 1), or a pool thread's work for a call (calls = 0), to a range's op. */
static void add_sub_n(struct ops_row *w, const char *name, uint64_t calls, uint64_t self_ns, uint64_t flops)
{
	size_t i = 0;
	while (i < w->nsub && strcmp(w->sub[i].name, name) != 0)
		i++;
	if (i == w->nsub) {
		w->sub = xrealloc(w->sub, (w->nsub + 1) * sizeof(*w->sub));
		w->sub[w->nsub++] = (struct ops_sub){xstrndup(name, strlen(name)), 0, 0, 0};
	}
	w->sub[i].calls += calls;
	w->sub[i].self_ns += self_ns;
	w->sub[i].flops += flops;
}

static void add_sub(struct ops_row *w, const char *name, uint64_t self_ns, uint64_t flops)
{
	add_sub_n(w, name, 1, self_ns, flops);
}

static int by_sub_self(const void *a, const void *b)
{
	const struct ops_sub *x = a, *y = b;
	if (x->self_ns != y->self_ns)
		return x->self_ns < y->self_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void add_dur(struct ops_row *w, uint64_t ns)
{
	if (w->ndur == w->cap_dur) {
		w->cap_dur = w->cap_dur ? 2 * w->cap_dur : 16;
		w->dur_ns = xrealloc(w->dur_ns, w->cap_dur * sizeof(*w->dur_ns));
	}
	w->dur_ns[w->ndur++] = ns;
}

/* The op table entry of an op name in the trace, or 0 (an op this tprof does not know). */
static unsigned table_op(const char *name)
{
	for (unsigned op = 1; name && op < TPROF_NOPS; op++)
		if (strcmp(tprof_op_info(op)->name, name) == 0)
			return op;
	return 0;
}

/* The op table entry of a trace op id, looked up by name once per id. */
static unsigned op_entry(struct state *s, uint32_t id)
{
	if (!s->op_of) {
		s->op_of = xmalloc((s->t->nop_names + 1) * sizeof(unsigned));
		for (uint32_t i = 0; i < s->t->nop_names; i++)
			s->op_of[i] = table_op(s->t->op_names[i]);
	}
	return id < s->t->nop_names ? s->op_of[id] : 0;
}

static uint64_t span_ns(const struct tprof_trace *t, uint64_t a, uint64_t b)
{
	uint64_t x = tprof_trace_ns(t, a), y = tprof_trace_ns(t, b);
	return y > x ? y - x : 0;
}

/* ---- annotations: ranges, steps, parameters ---- */

static void range_push(struct state *s, const struct tprof_annot *a)
{
	struct thr *h = thread_of(s, a->tid);
	const char *name = a->name && a->name < s->t->nannot_names ? s->t->annot_names[a->name] : "?";
	if (!h->ro)
		h->ro = xcalloc(1, sizeof(*h->ro));
	size_t len = strlen(h->ro->path);
	if (h->depth == MAX_RANGE_DEPTH) {
		h->folded++; /* deeper ranges are folded into the 64th */
		return;
	}
	/* a '/' of a name is written "\/" (and a '\' "\\"): a range "a/b" is not "b" inside "a" */
	char *p = h->ro->path + len, *end = h->ro->path + sizeof(h->ro->path) - 1;
	if (len && p < end)
		*p++ = '/';
	for (const char *c = name; *c && p < end; c++) {
		if (*c == '/' || *c == '\\') {
			if (p + 1 >= end)
				break; /* the path is full: cut before the pair, never in it */
			*p++ = '\\';
		}
		*p++ = *c;
	}
	*p = 0;
	struct ops_result *r = s->r;
	size_t row = row_for(r, h->ro->path, 0, 32);
	if (s->nranges == s->cap_ranges) {
		s->cap_ranges = s->cap_ranges ? 2 * s->cap_ranges : 64;
		s->ranges = xrealloc(s->ranges, s->cap_ranges * sizeof(*s->ranges));
	}
	s->ranges[s->nranges] = (struct range_inst){a->tid, a->tick, UINT64_MAX, row, a->tick >= s->window};
	h->ro->stack[h->depth++] = (struct open_range){row, s->nranges, 0, 0, len};
	s->nranges++;
}

static void range_pop(struct state *s, uint32_t tid, uint64_t tick)
{
	struct thr *h = thread_of(s, tid);
	if (h->folded) {
		h->folded--; /* closes a range folded into the 64th, not the 64th */
		return;
	}
	if (!h->depth)
		return; /* a pop without a push: ignored */
	struct open_range *o = &h->ro->stack[--h->depth];
	struct range_inst *ri = &s->ranges[o->inst];
	ri->end = tick;
	if (ri->kept) {
		struct ops_row *w = &s->r->rows[o->row];
		w->calls++;
		uint64_t d = span_ns(s->t, ri->start, tick);
		w->total_ns += d;
		add_dur(w, d);
		if (o->max_live - o->start_live > w->peak_growth)
			w->peak_growth = o->max_live - o->start_live;
	}
	h->ro->path[o->path_len] = 0; /* names may contain '/': cut where this one was appended */
}

/* The region with number id (1, 2, ...: the preload numbers them in order), made on first sight. */
static struct omp_region *region_of(struct state *s, int64_t id)
{
	if (id < 1 || id > (int64_t)(s->t->nannots + 1))
		return NULL; /* no more regions than annotations */
	if ((size_t)id > s->nregions) {
		size_t n = s->nregions ? s->nregions : 64;
		while (n < (size_t)id)
			n *= 2;
		s->regions = xrealloc(s->regions, n * sizeof(*s->regions));
		memset(s->regions + s->nregions, 0, (n - s->nregions) * sizeof(*s->regions));
		s->nregions = n;
	}
	struct omp_region *g = &s->regions[id - 1];
	g->id = id;
	return g;
}

static void omp_annot(struct state *s, struct thr *h, const struct tprof_annot *a)
{
	struct omp_region *g = region_of(s, a->value);
	if (!g)
		return;
	if (a->kind == TPROF_ANNOT_OMP_FORK) {
		g->fork_tid = a->tid;
		g->fork_tick = a->tick;
		/* the ranges open on this thread now (replayed in sequence order) */
		g->ranges = xmalloc((h->depth + 1) * sizeof(size_t));
		for (unsigned d = 0; d < h->depth; d++)
			g->ranges[g->nranges++] = h->ro->stack[d].inst;
	} else if (a->kind == TPROF_ANNOT_OMP_BEGIN) {
		if (h->nspans == h->cap_spans) {
			h->cap_spans = h->cap_spans ? 2 * h->cap_spans : 16;
			h->spans = xrealloc(h->spans, h->cap_spans * sizeof(*h->spans));
		}
		h->spans[h->nspans++] = (struct region_span){a->tick, UINT64_MAX, (size_t)(g - s->regions)};
	} else {
		for (size_t i = h->nspans; i-- > 0;)
			if (h->spans[i].region == (size_t)(g - s->regions) && h->spans[i].end == UINT64_MAX) {
				h->spans[i].end = a->tick;
				break;
			}
	}
}

static void apply_annot(struct state *s, const struct tprof_annot *a, uint64_t live)
{
	struct thr *h = thread_of(s, a->tid);
	seen(h, a->tick);
	if (a->kind == TPROF_ANNOT_PUSH) {
		range_push(s, a);
		if (h->depth)
			h->ro->stack[h->depth - 1].start_live = h->ro->stack[h->depth - 1].max_live = live;
	} else if (a->kind == TPROF_ANNOT_POP) {
		range_pop(s, a->tid, a->tick);
	} else if (a->kind == TPROF_ANNOT_OMP_FORK || a->kind == TPROF_ANNOT_OMP_BEGIN ||
		   a->kind == TPROF_ANNOT_OMP_END) {
		omp_annot(s, h, a);
	} else if (a->kind == TPROF_ANNOT_PARAM) {
		struct ops_result *r = s->r;
		const char *name = a->name ? s->t->annot_names[a->name] : "?";
		size_t i;
		for (i = 0; i < r->nparams; i++)
			if (strcmp(r->param_name[i], name) == 0)
				break;
		if (i == r->nparams) {
			r->param_name = xrealloc(r->param_name, (r->nparams + 1) * sizeof(char *));
			r->param_value = xrealloc(r->param_value, (r->nparams + 1) * sizeof(int64_t));
			r->param_name[i] = xstrndup(name, strlen(name));
			r->nparams++;
		}
		r->param_value[i] = a->value;
	}
}

/* ---- heap replay merged with the annotations ---- */

static int replay(struct state *s)
{
	struct tprof_trace *t = s->t;
	struct heap_stats hs;
	heap_init(&hs, 0);
	size_t ai = 0;
	struct tprof_event e;
	int rc;
	while ((rc = tprof_trace_next(t, &e)) == 1) {
		while (ai < t->nannots && t->annots[ai].seq < e.seq)
			apply_annot(s, &t->annots[ai++], hs.live_bytes);
		struct heap_change c;
		heap_step(&hs, &e, &c);
		struct thr *h = thread_of(s, e.tid);
		seen(h, e.tick);
		for (unsigned d = 0; d < h->depth; d++) {
			struct open_range *o = &h->ro->stack[d];
			if (hs.live_bytes > o->max_live)
				o->max_live = hs.live_bytes;
			if (c.taken_ptr && e.tick >= s->window) {
				s->r->rows[o->row].alloc_bytes += e.size;
				s->r->rows[o->row].allocs++;
			}
		}
		if (!h->depth && c.taken_ptr && e.tick >= s->window) { /* the "(no range)" row's, if any */
			s->r->norange_alloc_bytes += e.size;
			s->r->norange_allocs++;
		}
	}
	while (ai < t->nannots)
		apply_annot(s, &t->annots[ai++], hs.live_bytes);
	s->r->heap_peak = hs.peak_bytes;
	if (rc >= 0)
		rc = heap_finish(&hs, t);
	heap_release(&hs);
	if (rc < 0)
		return -1;
	for (size_t i = 0; i < s->nthr; i++) /* ranges still open at the end close there */
		while (s->thr[i].depth)
			range_pop(s, s->thr[i].tid, s->thr[i].last);
	return 0;
}

/* ---- kernel calls ---- */

static const struct tprof_trace *sort_trace;

static int by_start(const void *a, const void *b)
{
	const struct tprof_kcall *x = &sort_trace->kcalls[*(const size_t *)a], *y = &sort_trace->kcalls[*(const size_t *)b];
	if (x->t0 != y->t0)
		return x->t0 < y->t0 ? -1 : 1;
	if (x->t1 != y->t1)
		return x->t1 > y->t1 ? -1 : 1; /* the enclosing call first */
	return *(const size_t *)a < *(const size_t *)b ? 1 : -1; /* equal intervals: the outer one exits last */
}

static void row_name(const struct tprof_trace *t, const struct tprof_kcall *k, int with_shape, char *buf, size_t n)
{
	const char *name = t->op_names[k->op];
	if (!with_shape) {
		snprintf(buf, n, "%s", name);
		return;
	}
	const char *sn = t->op_shape_names && t->op_shape_names[k->op] ? t->op_shape_names[k->op] : "";
	size_t len = (size_t)snprintf(buf, n, "%s(", name);
	for (unsigned i = 0; i < k->nshape && len < n; i++) {
		const char *comma = strchr(sn, ',');
		size_t nl = comma ? (size_t)(comma - sn) : strlen(sn);
		while (nl && *sn == ' ')
			sn++, nl--;
		len += (size_t)snprintf(buf + len, n - len, "%s%.*s%s%lld", i ? "," : "", (int)nl, sn, nl ? "=" : "",
					(long long)t->kshape[k->shape_at + i]);
		sn = comma ? comma + 1 : sn + nl;
	}
	if (len < n)
		snprintf(buf + len, n - len, ")");
}

/* Sorts a thread's calls by start and finds each one's enclosing call. */
static void thread_nest(struct state *s, struct thr *h)
{
	struct tprof_trace *t = s->t;
	sort_trace = t;
	if (h->ncalls)
		tprof_sort(h->calls, h->ncalls, sizeof(size_t), by_start);
	h->parent = xmalloc((h->ncalls + 1) * sizeof(size_t));
	size_t *pos = xmalloc((h->ncalls + 1) * sizeof(size_t)), depth = 0;
	for (size_t i = 0; i < h->ncalls; i++) {
		const struct tprof_kcall *k = &t->kcalls[h->calls[i]];
		while (depth && t->kcalls[h->calls[pos[depth - 1]]].t1 <= k->t0)
			depth--;
		h->parent[i] = depth ? pos[depth - 1] : SIZE_MAX;
		pos[depth++] = i;
	}
	free(pos);
}

/* The innermost call of h running at tick, or SIZE_MAX. */
static size_t call_at(const struct state *s, const struct thr *h, uint64_t tick)
{
	const struct tprof_trace *t = s->t;
	size_t lo = 0, hi = h->ncalls; /* the last call that starts at or before tick */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->kcalls[h->calls[mid]].t0 <= tick)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t j = lo ? lo - 1 : SIZE_MAX; j != SIZE_MAX; j = h->parent[j])
		if (t->kcalls[h->calls[j]].t1 > tick)
			return j;
	return SIZE_MAX;
}

/* The region of h running at tick, or NULL. */
static struct omp_region *span_at(struct state *s, const struct thr *h, uint64_t tick)
{
	size_t lo = 0, hi = h->nspans;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (h->spans[mid].begin <= tick)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* regions of one thread nest: the innermost began last (a few levels at most are looked at) */
	for (size_t j = lo, n = 0; j-- > 0 && n < 64; n++)
		if (h->spans[j].end > tick)
			return &s->regions[h->spans[j].region];
	return NULL;
}

/* The call that opened region g: the innermost call on the opening thread at the fork, or, when
 * that thread was itself running another region's body outside any call, what opened that one. */
static void region_resolve(struct state *s, struct omp_region *g, int depth)
{
	if (g->resolved)
		return;
	g->resolved = 1;
	if (!g->fork_tid || depth > 64)
		return;
	struct thr *h = NULL;
	for (size_t i = 0; i < s->nthr; i++)
		if (s->thr[i].tid == g->fork_tid)
			h = &s->thr[i];
	if (!h)
		return;
	size_t c = call_at(s, h, g->fork_tick);
	if (c != SIZE_MAX) {
		g->owner = h;
		g->call = c;
		return;
	}
	struct omp_region *up = span_at(s, h, g->fork_tick);
	if (up && up != g && up->fork_tid != h->tid) {
		region_resolve(s, up, depth + 1);
		g->owner = up->owner;
		g->call = up->call;
	}
}

/* The region a call of h belongs to when another thread opened it from inside a call, else NULL. */
static const struct omp_region *foreign_region(struct state *s, const struct thr *h, const struct tprof_kcall *k)
{
	if (!h->nspans)
		return NULL;
	struct omp_region *g = span_at(s, h, k->t0);
	if (!g || g->fork_tid == h->tid)
		return NULL;
	region_resolve(s, g, 0);
	return g->owner && g->owner != h ? g : NULL;
}

/* A pool thread's time (one that ran the body of a region another thread opened), from `from` to
 * its last event: inside such a region but outside its own calls it works for the call that opened
 * the region (its self time, in that call's row and ranges), or for the program when no call did;
 * outside the regions it is idle (returned). Other threads: 0, their time is their own. */
static uint64_t pool_time(struct state *s, const struct thr *h, const struct ops_options *o, uint64_t from)
{
	struct tprof_trace *t = s->t;
	struct ops_result *r = s->r;
	uint64_t busy = 0, covered = from; /* spans are by begin: merge those that nest or overlap */
	int pool = 0;
	size_t c = 0; /* h's calls are by start */
	for (size_t i = 0; i < h->nspans; i++) {
		const struct region_span *p = &h->spans[i];
		struct omp_region *g = &s->regions[p->region];
		if (g->fork_tid == h->tid)
			continue;
		pool = 1;
		uint64_t b = p->begin > covered ? p->begin : covered, e = p->end < h->last ? p->end : h->last;
		if (e <= b)
			continue;
		busy += span_ns(t, b, e);
		covered = e;
		region_resolve(s, g, 0);
		/* the thread's own top-level calls in the span have rows of their own */
		uint64_t inner = 0;
		while (c < h->ncalls && t->kcalls[h->calls[c]].t0 < b)
			c++;
		for (; c < h->ncalls && t->kcalls[h->calls[c]].t0 < e; c++)
			if (h->parent[c] == SIZE_MAX) {
				const struct tprof_kcall *k = &t->kcalls[h->calls[c]];
				inner += span_ns(t, k->t0, k->t1 < e ? k->t1 : e);
			}
		uint64_t work = span_ns(t, b, e);
		work = work > inner ? work - inner : 0;
		if (!g->owner || !work)
			continue;
		if (o->one_thread) { /* its own calls only: the work is the opening call's, another thread's */
			r->pool_ns += work;
			continue;
		}
		const struct tprof_kcall *opener = &t->kcalls[g->owner->calls[g->call]];
		r->in_ops_ns += work;
		if (o->by_range) {
			const char *opname = opener->op < t->nop_names && t->op_names[opener->op] ? t->op_names[opener->op] : "?";
			for (size_t q = 0; q < g->nranges; q++) {
				struct ops_row *w = &r->rows[s->ranges[g->ranges[q]].row];
				w->kernel_ns += work;
				add_sub_n(w, opname, 0, work, 0);
			}
			if (!g->nranges) {
				size_t ix = row_for(r, "(no range)", 0, 32); /* first: it may move the rows */
				struct ops_row *w = &r->rows[ix];
				w->kernel_ns += work;
				add_sub_n(w, opname, 0, work, 0);
			}
		} else {
			char name[512];
			row_name(t, opener, o->group_shape, name, sizeof(name));
			unsigned op = op_entry(s, opener->op);
			int bits = op && tprof_op_info(op)->elem_bytes == 8 ? 64 : 32;
			size_t ix = row_for(r, name, op, bits); /* first: it may move the rows */
			r->rows[ix].self_ns += work;
		}
	}
	uint64_t wall = span_ns(t, from, h->last);
	return pool && wall > busy ? wall - busy : 0;
}

static void thread_calls(struct state *s, struct thr *h, const struct ops_options *o, const uint64_t *sb, size_t nsb)
{
	struct tprof_trace *t = s->t;
	struct ops_result *r = s->r;
	size_t *stack = xmalloc((h->ncalls + 1) * sizeof(size_t));
	uint64_t *child = xcalloc(h->ncalls + 1, sizeof(uint64_t));
	size_t *pos = xmalloc((h->ncalls + 1) * sizeof(size_t)); /* position in h->calls of stack entries */
	size_t depth = 0;
	/* ranges of this thread, by start, for charging kernels to the innermost open one */
	size_t *rs = xmalloc((s->nranges + 1) * sizeof(size_t)), nrs = 0, ri = 0;
	for (size_t i = 0; i < s->nranges; i++)
		if (s->ranges[i].tid == h->tid)
			rs[nrs++] = i; /* already in start order: pushes were applied in sequence order */
	size_t *rstack = xmalloc((nrs + 1) * sizeof(size_t)), rdepth = 0;
	uint64_t *self = xcalloc(h->ncalls + 1, sizeof(uint64_t));
	int *top = xcalloc(h->ncalls + 1, sizeof(int));
	for (size_t i = 0; i < h->ncalls; i++) {
		const struct tprof_kcall *k = &t->kcalls[h->calls[i]];
		while (depth && t->kcalls[h->calls[pos[depth - 1]]].t1 <= k->t0)
			depth--;
		uint64_t d = span_ns(t, k->t0, k->t1);
		if (depth)
			child[pos[depth - 1]] += d;
		else /* top-level on its thread: 1; and not a pool thread's work for another thread's call: 2 */
			top[i] = foreign_region(s, h, k) ? 1 : 2;
		pos[depth] = i;
		stack[depth++] = h->calls[i];
	}
	for (size_t i = 0; i < h->ncalls; i++) {
		const struct tprof_kcall *k = &t->kcalls[h->calls[i]];
		uint64_t d = span_ns(t, k->t0, k->t1);
		self[i] = d > child[i] ? d - child[i] : 0;
		if (top[i])
			r->in_ops_ns += d; /* the thread's time in kernels */
		if (top[i] == 2) { /* FLOPs once: what the pool runs for another thread's call is in its FLOPs */
			r->top_flops += k->flops;
			/* the step this call starts in */
			if (nsb >= 2 && k->t0 >= sb[0] && k->t0 < sb[nsb - 1])
				r->step_flops += k->flops;
		}
		r->calls++;
		while (rdepth && s->ranges[rstack[rdepth - 1]].end <= k->t0)
			rdepth--;
		while (ri < nrs && s->ranges[rs[ri]].start <= k->t0) {
			while (rdepth && s->ranges[rstack[rdepth - 1]].end <= s->ranges[rs[ri]].start)
				rdepth--;
			rstack[rdepth++] = rs[ri++];
			while (rdepth && s->ranges[rstack[rdepth - 1]].end <= k->t0)
				rdepth--;
		}
		if (o->by_range) {
			const char *opname = k->op < t->nop_names && t->op_names[k->op] ? t->op_names[k->op] : "?";
			uint64_t top_flops = top[i] == 2 ? k->flops : 0;
			unsigned opx = top[i] == 2 ? op_entry(s, k->op) : 0;
			uint64_t top_macs = opx ? tprof_op_cost(opx, &t->kshape[k->shape_at], k->nshape).macs : 0;
			const struct omp_region *fr = foreign_region(s, h, k);
			if (fr) { /* charged to the ranges of the thread that opened the region */
				for (size_t q = 0; q < fr->nranges; q++) {
					struct ops_row *w = &r->rows[s->ranges[fr->ranges[q]].row];
					w->kernel_ns += self[i];
					w->flops += top_flops;
					w->macs += top_macs;
					w->bytes += top[i] == 2 ? k->bytes : 0;
					add_sub(w, opname, self[i], top_flops);
				}
				if (fr->nranges)
					continue;
			}
			for (size_t q = 0; q < rdepth; q++) {
				struct ops_row *w = &r->rows[s->ranges[rstack[q]].row];
				w->kernel_ns += self[i];
				w->flops += top_flops;
				w->macs += top_macs;
				w->bytes += top[i] == 2 ? k->bytes : 0;
				add_sub(w, opname, self[i], top_flops);
			}
			if (!rdepth) {
				size_t ix = row_for(r, "(no range)", 0, 32);
				struct ops_row *w = &r->rows[ix];
				w->kernel_ns += self[i];
				w->flops += top_flops;
				w->macs += top_macs;
				w->bytes += top[i] == 2 ? k->bytes : 0;
				add_sub(w, opname, self[i], top_flops);
			}
			continue;
		}
		char name[512];
		row_name(t, k, o->group_shape, name, sizeof(name));
		unsigned op = op_entry(s, k->op);
		int bits = op && tprof_op_info(op)->elem_bytes == 8 ? 64 : 32;
		size_t ix = row_for(r, name, op, bits);
		struct ops_row *w = &r->rows[ix];
		w->calls++;
		w->self_ns += self[i];
		w->total_ns += span_ns(t, k->t0, k->t1);
		w->flops += k->flops;
		w->bytes += k->bytes;
		if (op)
			w->macs += tprof_op_cost(op, &t->kshape[k->shape_at], k->nshape).macs;
		add_dur(w, span_ns(t, k->t0, k->t1));
	}
	(void)sb;
	free(stack);
	free(child);
	free(pos);
	free(rs);
	free(rstack);
	free(self);
	free(top);
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int by_region_wall(const void *a, const void *b)
{
	const struct ops_region_row *x = a, *y = b;
	if (x->wall_ns != y->wall_ns)
		return x->wall_ns > y->wall_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Each region's wall and thread times, summed by the op that opened it. */
static void region_stats(struct state *s)
{
	struct tprof_trace *t = s->t;
	struct ops_result *r = s->r;
	if (!s->nregions)
		return;
	struct acc {
		uint64_t first, last, busy, max;
		unsigned n;
	} *a = xcalloc(s->nregions, sizeof(*a));
	for (size_t i = 0; i < s->nthr; i++) {
		const struct thr *h = &s->thr[i];
		for (size_t j = 0; j < h->nspans; j++) {
			const struct region_span *p = &h->spans[j];
			if (p->end == UINT64_MAX || p->begin < s->window)
				continue;
			struct acc *c = &a[p->region];
			uint64_t d = span_ns(t, p->begin, p->end);
			c->busy += d;
			c->max = d > c->max ? d : c->max;
			c->n++;
			c->last = p->end > c->last ? p->end : c->last;
		}
	}
	for (size_t g = 0; g < s->nregions; g++) {
		struct omp_region *reg = &s->regions[g];
		struct acc *c = &a[g];
		if (!c->n || !reg->fork_tid)
			continue;
		region_resolve(s, reg, 0);
		const char *name = "(program)";
		if (reg->owner) {
			const struct tprof_kcall *k = &t->kcalls[reg->owner->calls[reg->call]];
			name = k->op < t->nop_names && t->op_names[k->op] ? t->op_names[k->op] : "?";
		}
		size_t i = 0;
		while (i < r->nregs && strcmp(r->regs[i].name, name) != 0)
			i++;
		if (i == r->nregs) {
			r->regs = xrealloc(r->regs, (r->nregs + 1) * sizeof(*r->regs));
			r->regs[r->nregs++] = (struct ops_region_row){.name = xstrndup(name, strlen(name))};
		}
		struct ops_region_row *w = &r->regs[i];
		w->regions++;
		w->wall_ns += span_ns(t, reg->fork_tick, c->last);
		w->busy_ns += c->busy;
		w->max_ns += (double)c->max;
		w->mean_ns += (double)c->busy / c->n;
		w->threads = c->n > w->threads ? c->n : w->threads;
	}
	free(a);
	if (r->nregs)
		tprof_sort(r->regs, r->nregs, sizeof(*r->regs), by_region_wall);
}

/* The rows' name index serves the analysis only: callers sort the rows. */
static void row_ix_free(struct ops_result *r)
{
	struct ops_row_ix *x, *tmp;
	HASH_ITER(hh, r->row_ix, x, tmp) {
		HASH_DEL(r->row_ix, x);
		free(x);
	}
}

static void state_free(struct state *s)
{
	row_ix_free(s->r);
	free(s->ranges);
	for (size_t i = 0; i < s->nthr; i++) {
		free(s->thr[i].calls);
		free(s->thr[i].parent);
		free(s->thr[i].spans);
		free(s->thr[i].ro);
	}
	free(s->thr);
	struct thr_ix *x, *tmp;
	HASH_ITER(hh, s->thr_ix, x, tmp) {
		HASH_DEL(s->thr_ix, x);
		free(x);
	}
	free(s->op_of);
	for (size_t i = 0; i < s->nregions; i++)
		free(s->regions[i].ranges);
	free(s->regions);
}

int ops_analyze(struct tprof_trace *t, const struct ops_options *o, struct ops_result *r)
{
	memset(r, 0, sizeof(*r));
	struct state s = {.t = t, .r = r};
	/* step boundaries, in sequence order (one thread usually marks them) */
	uint64_t *sb = xmalloc((t->nannots + 1) * sizeof(uint64_t));
	size_t nsb = 0;
	for (size_t i = 0; i < t->nannots; i++)
		if (t->annots[i].kind == TPROF_ANNOT_STEP)
			sb[nsb++] = t->annots[i].tick;
	r->steps_total = nsb > 1 ? nsb - 1 : 0;
	r->step_marks = nsb;
	if (o->skip_steps && o->skip_steps >= nsb) {
		snprintf(t->err, sizeof(t->err),
			 "%s: cannot skip %u steps: the program marked %zu step boundaries (tprof_step), so at most "
			 "%zu can be skipped", t->path, o->skip_steps, nsb, nsb ? nsb - 1 : 0);
		free(sb);
		return -1;
	}
	size_t first_sb = o->skip_steps;
	s.window = o->skip_steps ? sb[first_sb] : 0;
	r->steps_skipped = o->skip_steps;
	if (nsb > first_sb + 1) {
		r->nsteps = nsb - first_sb - 1;
		r->step_ns = xmalloc(r->nsteps * sizeof(uint64_t));
		for (size_t i = 0; i < r->nsteps; i++)
			r->step_ns[i] = span_ns(t, sb[first_sb + i], sb[first_sb + i + 1]);
		r->steps_ns = span_ns(t, sb[first_sb], sb[nsb - 1]);
	}
	r->window_ns = s.window ? tprof_trace_ns(t, s.window) : 0;

	if (replay(&s) != 0) {
		free(sb);
		state_free(&s);
		ops_free(r); /* the rows the replay made before it failed */
		return -1;
	}
	size_t range_rows = r->nrows;
	for (size_t i = 0; i < t->nkcalls; i++) {
		const struct tprof_kcall *k = &t->kcalls[i];
		if (k->t0 < s.window)
			continue;
		struct thr *h = thread_of(&s, k->tid);
		seen(h, k->t0);
		seen(h, k->t1);
		if (h->ncalls == h->cap) {
			h->cap = h->cap ? 2 * h->cap : 64;
			h->calls = xrealloc(h->calls, h->cap * sizeof(size_t));
		}
		h->calls[h->ncalls++] = i;
	}
	for (size_t i = 0; i < s.nthr; i++)
		thread_nest(&s, &s.thr[i]);
	for (size_t i = 0; i < s.nthr; i++) {
		struct thr *h = &s.thr[i];
		int pool = 0; /* a thread without calls of its own may still run regions' bodies */
		for (size_t j = 0; j < h->nspans && !pool; j++)
			pool = s.regions[h->spans[j].region].fork_tid != h->tid;
		if ((!h->ncalls && !pool) || (o->one_thread && h->tid != (o->tid ? o->tid : t->info.pid)))
			continue;
		r->threads++;
		uint64_t from = h->first > s.window ? h->first : s.window;
		uint64_t wall = span_ns(t, from, h->last), in0 = r->in_ops_ns, calls0 = r->calls;
		r->wall_ns += wall;
		thread_calls(&s, h, o, sb + first_sb, nsb > first_sb ? nsb - first_sb : 0);
		uint64_t in1 = r->in_ops_ns, idle = pool_time(&s, h, o, from);
		/* with events lost (TPROF_LOSSY) a region's fork may be missing, and a thread taken for
		 * a pool thread in its own regions: its idle time never goes past what its own calls and
		 * regions leave of its wall time */
		uint64_t mine = r->in_ops_ns - in0; /* its own calls, and its regions' work */
		if (idle > (wall > mine ? wall - mine : 0))
			idle = wall > mine ? wall - mine : 0;
		r->idle_ns += idle;
		r->thr = xrealloc(r->thr, (r->nthr + 1) * sizeof(*r->thr));
		const char *tn = tprof_trace_thread_name(t, h->tid);
		r->thr[r->nthr++] = (struct ops_thread){h->tid, xstrndup(tn, strlen(tn)), wall, in1 - in0,
							r->in_ops_ns - in1 + (o->one_thread ? r->pool_ns : 0), idle, r->calls - calls0,
							(uint64_t)h->tid == t->info.pid};
	}
	if (o->one_thread && !r->threads) {
		snprintf(t->err, sizeof(t->err), "%s: thread %" PRIu64 " made no kernel call and ran no OpenMP region",
			 t->path, o->tid ? (uint64_t)o->tid : (uint64_t)t->info.pid);
		free(sb);
		state_free(&s);
		ops_free(r);
		return -1;
	}
	region_stats(&s);
	if (!o->by_range) { /* the range rows were only scaffolding */
		for (size_t i = 0; i < range_rows; i++) {
			free(r->rows[i].name);
			free(r->rows[i].dur_ns);
		}
		if (r->nrows > range_rows)
			memmove(r->rows, r->rows + range_rows, (r->nrows - range_rows) * sizeof(*r->rows));
		r->nrows -= range_rows;
	} else {
		for (size_t i = 0; i < r->nrows; i++) {
			r->rows[i].self_ns = r->rows[i].kernel_ns;
			if (i >= range_rows && strcmp(r->rows[i].name, "(no range)") == 0) {
				/* no instance: allocations but no growth within one */
				r->rows[i].allocs = r->norange_allocs;
				r->rows[i].alloc_bytes = r->norange_alloc_bytes;
			}
			if (r->rows[i].nsub)
				tprof_sort(r->rows[i].sub, r->rows[i].nsub, sizeof(*r->rows[i].sub), by_sub_self);
		}
	}
	if (r->wall_ns < r->in_ops_ns + r->idle_ns) /* clock rounding between threads' events and calls */
		r->idle_ns = r->wall_ns > r->in_ops_ns ? r->wall_ns - r->in_ops_ns : 0;
	if (r->wall_ns < r->in_ops_ns)
		r->wall_ns = r->in_ops_ns;
	if (r->wall_ns < r->in_ops_ns + r->idle_ns + r->pool_ns) /* the same, --thread on a pool thread */
		r->pool_ns = r->wall_ns - r->in_ops_ns - r->idle_ns;
	r->lost_events = t->lost_events;
	for (size_t i = 0; i < r->nrows; i++)
		if (r->rows[i].ndur)
			tprof_sort(r->rows[i].dur_ns, r->rows[i].ndur, sizeof(uint64_t), by_u64);
	free(sb);
	state_free(&s);
	return 0;
}

void ops_free(struct ops_result *r)
{
	row_ix_free(r);
	for (size_t i = 0; i < r->nregs; i++)
		free(r->regs[i].name);
	free(r->regs);
	for (size_t i = 0; i < r->nthr; i++)
		free(r->thr[i].name);
	free(r->thr);
	for (size_t i = 0; i < r->nrows; i++) {
		free(r->rows[i].name);
		free(r->rows[i].dur_ns);
		for (size_t j = 0; j < r->rows[i].nsub; j++)
			free(r->rows[i].sub[j].name);
		free(r->rows[i].sub);
	}
	free(r->rows);
	free(r->step_ns);
	for (size_t i = 0; i < r->nparams; i++)
		free(r->param_name[i]);
	free(r->param_name);
	free(r->param_value);
	memset(r, 0, sizeof(*r));
}

/* The continued fraction of the regularized incomplete beta function I_x(a, b), evaluated by the
 * modified Lentz method; converges fast for x < (a + 1) / (a + b + 2). */
static double beta_cf(double a, double b, double x)
{
	const double tiny = 1e-300;
	double c = 1, d = 1 - (a + b) * x / (a + 1);
	d = 1 / (fabs(d) < tiny ? tiny : d);
	double h = d;
	for (int m = 1; m <= 500; m++) {
		double m2 = 2.0 * m;
		double num = m * (b - m) * x / ((a + m2 - 1) * (a + m2)); /* the even step */
		d = 1 + num * d;
		d = 1 / (fabs(d) < tiny ? tiny : d);
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		h *= d * c;
		num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1)); /* the odd step */
		d = 1 + num * d;
		d = 1 / (fabs(d) < tiny ? tiny : d);
		c = 1 + num / c;
		c = fabs(c) < tiny ? tiny : c;
		double step = d * c;
		h *= step;
		if (fabs(step - 1) < 1e-15)
			break;
	}
	return h;
}

/* I_x(a, b), the regularized incomplete beta function, for 0 <= x <= 1. */
static double beta_inc(double a, double b, double x)
{
	if (x <= 0)
		return 0;
	if (x >= 1)
		return 1;
	double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
	if (x < (a + 1) / (a + b + 2))
		return front * beta_cf(a, b, x) / a;
	return 1 - front * beta_cf(b, a, 1 - x) / b;
}

/* The 97.5 % quantile of Student's t with df degrees of freedom (a real number: Welch's is one), for
 * a two-sided 95 % interval: the t whose upper tail P(T > t) = I_{df/(df+t²)}(df/2, 1/2) / 2 is
 * 0.025, by bisection to 1e-12 relative (12.7062047 for 1, 2.0555294 for 26; lgamma's rounding
 * leaves about 1e-9 at a hundred million degrees of freedom, where it is the normal quantile). */
static double t975(double df)
{
	if (!(df > 0))
		return 0;
	if (df > 1e9)
		return 1.959963984540054; /* the normal quantile */
	double lo = 1.959963984540054, hi = 16;
	while (beta_inc(df / 2, 0.5, df / (df + hi * hi)) / 2 > 0.025 && hi < 1e12)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
		double mid = (lo + hi) / 2;
		if (beta_inc(df / 2, 0.5, df / (df + mid * mid)) / 2 > 0.025)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

/* Nearest-rank percentile of a sorted sample. */
static uint64_t pct(const uint64_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	size_t k = (size_t)ceil(p / 100.0 * (double)n);
	return v[k ? k - 1 : 0];
}

void ops_dist(uint64_t *v, size_t n, struct ops_dist *d)
{
	memset(d, 0, sizeof(*d));
	d->n = n;
	d->ci_lo = d->ci_hi = NAN; /* no interval from fewer than two values (no degree of freedom) */
	if (!n)
		return;
	tprof_sort(v, n, sizeof(uint64_t), by_u64);
	double sum = 0, sq = 0;
	for (size_t i = 0; i < n; i++)
		sum += (double)v[i];
	d->mean = sum / (double)n;
	for (size_t i = 0; i < n; i++)
		sq += ((double)v[i] - d->mean) * ((double)v[i] - d->mean);
	d->sd = n > 1 ? sqrt(sq / (double)(n - 1)) : 0;
	if (n > 1) {
		double half = t975((double)(n - 1)) * d->sd / sqrt((double)n);
		d->ci_lo = d->mean - half > 0 ? d->mean - half : 0;
		d->ci_hi = d->mean + half;
	}
	d->p50 = pct(v, n, 50);
	d->p95 = pct(v, n, 95);
	d->p99 = pct(v, n, 99);
	d->min = v[0];
	d->max = v[n - 1];
}

int ops_diff_ci(const struct ops_dist *a, const struct ops_dist *b, double *lo, double *hi)
{
	if (a->n < 2 || b->n < 2)
		return -1;
	double va = a->sd * a->sd / (double)a->n, vb = b->sd * b->sd / (double)b->n;
	double d = b->mean - a->mean, se = sqrt(va + vb);
	if (se == 0) { /* two constant samples: the difference is exact */
		*lo = *hi = d;
		return 0;
	}
	double df = (va + vb) * (va + vb) / (va * va / (double)(a->n - 1) + vb * vb / (double)(b->n - 1));
	double half = t975(df >= 1 ? df : 1) * se;
	*lo = d - half;
	*hi = d + half;
	return 0;
}
