/* Implementation of analysis/stacks.h. */
#include "analysis/stacks.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <uthash.h>

#include "base/util.h"

/* At most this many frames per return address: inlining deeper than that keeps the innermost ones
 * and the real function (sym_resolve's rule). */
#define MAX_INLINE 64

/* ---- grouping */

void stack_table_init(struct stack_table *tab, const struct tprof_trace *t)
{
	tab->n = t->nstacks ? t->nstacks : 1;
	tab->cost = xcalloc(tab->n, sizeof(*tab->cost));
}

void stack_table_free(struct stack_table *tab)
{
	free(tab->cost);
	tab->cost = NULL;
	tab->n = 0;
}

void stack_table_set_live(struct stack_table *tab, const struct heap_stats *s)
{
	for (uint32_t id = 0; id < tab->n; id++)
		tab->cost[id].bytes = tab->cost[id].blocks = 0;
	const struct addrmap *live = &s->live;
	for (size_t i = 0; i < live->cap; i++) {
		if (!live->keys[i])
			continue;
		uint64_t stack = 0;
		if (s->with_stacks)
			addrmap_get(&s->live_stack, live->keys[i], &stack);
		struct stack_cost *c = stack_cost_of(tab, (uint32_t)stack);
		c->bytes += live->vals[i];
		c->blocks++;
	}
}

static int cmp_cost(const void *a, const void *b, void *ctx)
{
	const struct stack_table *tab = ((const void **)ctx)[0];
	enum stack_order order = *(const enum stack_order *)((const void **)ctx)[1];
	uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
	const struct stack_cost *x = &tab->cost[ia], *y = &tab->cost[ib];
	uint64_t x1 = order == STACK_BY_BYTES ? x->bytes : x->blocks;
	uint64_t y1 = order == STACK_BY_BYTES ? y->bytes : y->blocks;
	uint64_t x2 = order == STACK_BY_BYTES ? x->blocks : x->bytes;
	uint64_t y2 = order == STACK_BY_BYTES ? y->blocks : y->bytes;
	if (x1 != y1)
		return x1 > y1 ? -1 : 1;
	if (x2 != y2)
		return x2 > y2 ? -1 : 1;
	return ia < ib ? -1 : ia > ib;
}

uint32_t *stack_table_sorted(const struct stack_table *tab, enum stack_order order, size_t *n)
{
	size_t k = 0;
	for (uint32_t id = 0; id < tab->n; id++)
		if (tab->cost[id].blocks)
			k++;
	uint32_t *ids = xmalloc(k * sizeof(*ids));
	k = 0;
	for (uint32_t id = 0; id < tab->n; id++)
		if (tab->cost[id].blocks)
			ids[k++] = id;
	const void *ctx[2] = {tab, &order};
	qsort_r(ids, k, sizeof(*ids), cmp_cost, ctx);
	*n = k;
	return ids;
}

int stacks_replay(struct tprof_trace *t, uint64_t stop_seq, struct heap_stats *s, struct stack_table *tab)
{
	heap_init(s, 1);
	if (stop_seq != UINT64_MAX) /* the live set is read where the replay stops */
		heap_index_all(s);
	const struct tprof_event *e;
	struct heap_change c;
	int r;
	while ((r = tprof_trace_next_ref(t, &e)) > 0) {
		heap_step(s, e, &c);
		if (c.taken_ptr) {
			struct stack_cost *sc = stack_cost_of(tab, e->stack);
			sc->blocks++;
			sc->bytes += e->size;
			sc->seq = e->seq;
		}
		if (e->seq == stop_seq)
			return heap_finish(s, t);
	}
	return r < 0 ? r : heap_finish(s, t);
}

int stacks_replay_to_peak(struct tprof_trace *t, const struct heap_stats *peak, struct heap_stats *s,
			  struct stack_table *tab)
{
	if (!peak->peak_bytes) {
		heap_init(s, 1); /* nothing was ever live: an empty table, no replay */
		return 0;
	}
	if (stacks_replay(t, peak->peak_seq, s, tab) < 0)
		return -1;
	if (s->live_bytes != peak->peak_bytes || s->live_blocks != peak->peak_blocks) {
		snprintf(t->err, sizeof(t->err),
			 "%s: the second pass does not reach the peak of the first (%" PRIu64 " != %" PRIu64
			 " bytes); was the file changed?",
			 t->path, s->live_bytes, peak->peak_bytes);
		return -1;
	}
	stack_table_set_live(tab, s);
	return 0;
}

void temporaries_init(struct temporaries *tp)
{
	addrmap_init(&tp->owner);
	tp->threads = tp->cur = tp->prev = NULL;
}

void temporaries_free(struct temporaries *tp)
{
	addrmap_free(&tp->owner);
	struct temp_thread *th, *tmp;
	HASH_ITER(hh, tp->threads, th, tmp) {
		HASH_DEL(tp->threads, th);
		free(th);
	}
	tp->cur = tp->prev = NULL;
}

struct temp_thread *temporaries_thread(struct temporaries *tp, uint32_t tid)
{
	if (tp->cur && tp->cur->tid == tid)
		return tp->cur;
	struct temp_thread *th = tp->prev;
	if (!th || th->tid != tid) {
		HASH_FIND(hh, tp->threads, &tid, sizeof(tid), th);
		if (!th) {
			th = xcalloc(1, sizeof(*th));
			th->tid = tid;
			HASH_ADD(hh, tp->threads, tid, sizeof(th->tid), th);
		}
	}
	tp->prev = tp->cur;
	return tp->cur = th;
}

int temporaries_step(struct temporaries *tp, const struct tprof_event *e, const struct heap_change *c)
{
	if (!c->freed_ptr && !c->taken_ptr && !c->moved_ptr)
		return 0;
	if (c->moved_ptr) { /* a paired block went to the live map: so it does here, if it is latest */
		struct temp_thread *m = temporaries_thread_fast(tp, c->moved_tid);
		if (m->owned == c->moved_ptr && m->owned_seq == c->moved_seq && !m->owned_in_map) {
			addrmap_put(&tp->owner, c->moved_ptr, c->moved_seq, NULL);
			m->owned_in_map = 1;
		}
	}
	struct temp_thread *th = temporaries_thread_fast(tp, e->tid);
	int temporary = 0;
	if (c->freed_ptr) {
		uint64_t seq;
		if (c->freed_seq) /* from the replay's pairs, which know the allocation */
			temporary = c->freed_seq == th->last_seq;
		else if (addrmap_del(&tp->owner, c->freed_ptr, &seq))
			temporary = seq == th->last_seq;
	}
	if (c->taken_ptr) {
		/* the thread's previous latest can no longer be temporary: out of owner, unless its
		 * address was given back and taken again since (then the entry is another's) */
		uint64_t seq;
		if (th->owned_in_map && addrmap_get(&tp->owner, th->owned, &seq) && seq == th->owned_seq)
			addrmap_del(&tp->owner, th->owned, NULL);
		th->owned = e->ptr;
		th->owned_seq = e->seq;
		th->owned_in_map = !c->taken_paired;
		if (th->owned_in_map)
			addrmap_put(&tp->owner, e->ptr, e->seq, NULL);
		th->last_seq = e->seq;
	}
	return temporary;
}

/* ---- symbolized frames */

struct stack_sym {
	const struct tprof_trace *t;
	struct tprof_symbolizer *sym;
	struct stack_frame *frames;
	size_t cap;
	uint64_t addrs[TPROF_STACK_MAX_DEPTH]; /* the stack being resolved */
};

struct stack_sym *stack_sym_new(const struct tprof_trace *t)
{
	struct stack_sym *ss = xcalloc(1, sizeof(*ss));
	ss->t = t;
	ss->sym = sym_new(t->modules, t->nmodules, t->info.exe);
	return ss;
}

void stack_sym_free(struct stack_sym *ss)
{
	if (!ss)
		return;
	sym_free(ss->sym);
	free(ss->frames);
	free(ss);
}

static int same_path(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* Resolves the addresses of stack id into ss->frames; with site_only, stops at the first address
 * outside the module of the innermost one. */
static const struct stack_frame *resolve(struct stack_sym *ss, uint32_t id, uint64_t seq, size_t *n,
					 int *truncated, int site_only)
{
	int trunc = 0;
	uint64_t *addrs = ss->addrs;
	uint32_t depth = id ? tprof_trace_stack(ss->t, id, addrs, &trunc) : 0;
	if (truncated)
		*truncated = depth ? trunc : 0;
	*n = 0;
	if (!depth)
		return ss->frames;
	struct tprof_sym_frame buf[MAX_INLINE];
	const char *site = NULL;
	for (uint32_t k = 0; k < depth; k++) {
		const char *path = sym_module_path(ss->sym, addrs[k], seq);
		if (k == 0)
			site = path;
		else if (site_only && !same_path(path, site))
			break;
		size_t got = sym_resolve(ss->sym, addrs[k], seq, buf, MAX_INLINE);
		if (*n + got > ss->cap) {
			ss->cap = (*n + got) * 2;
			ss->frames = xrealloc(ss->frames, ss->cap * sizeof(*ss->frames));
		}
		for (size_t j = 0; j < got; j++)
			ss->frames[(*n)++] = (struct stack_frame){buf[j], addrs[k], path};
	}
	return ss->frames;
}

const struct stack_frame *stack_frames(struct stack_sym *ss, uint32_t id, uint64_t seq, size_t *n,
				       int *truncated)
{
	return resolve(ss, id, seq, n, truncated, 0);
}

const struct stack_frame *stack_site_frames(struct stack_sym *ss, uint32_t id, uint64_t seq, size_t *n)
{
	return resolve(ss, id, seq, n, NULL, 1);
}

void stack_sym_problems(struct stack_sym *ss, void (*fn)(void *ctx, const char *path, enum tprof_sym_status st),
			void *ctx)
{
	sym_problems(ss->sym, fn, ctx);
}

void stack_print_label(FILE *f, const struct stack_frame *fr)
{
	const struct tprof_sym_frame *s = &fr->sym;
	if (s->function && s->file && s->line)
		fprintf(f, "%s (%s:%d)", s->function, tprof_base_name(s->file), s->line);
	else if (s->function && s->file)
		fprintf(f, "%s (%s)", s->function, tprof_base_name(s->file));
	else if (s->function && s->module)
		fprintf(f, "%s [%s]", s->function, s->module);
	else if (s->function)
		fputs(s->function, f);
	else if (s->module)
		fprintf(f, "%s+0x%" PRIx64, s->module, s->offset);
	else
		fprintf(f, "0x%" PRIx64, fr->addr);
	if (s->inlined)
		fputs(" (inlined)", f);
}

char *stack_frame_label(const struct stack_frame *fr)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		tprof_oom(0, __FILE__, __LINE__);
	stack_print_label(f, fr);
	fclose(f);
	return buf;
}

const char *stack_frame_name(const struct stack_frame *fr, char *buf, size_t len)
{
	const struct tprof_sym_frame *s = &fr->sym;
	if (s->function)
		return s->function;
	if (s->module)
		snprintf(buf, len, "%s+0x%" PRIx64, s->module, s->offset);
	else
		snprintf(buf, len, "0x%" PRIx64, fr->addr);
	return buf;
}
