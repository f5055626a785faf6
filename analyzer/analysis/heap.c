/* Implementation of analysis/heap.h. */
#include "analysis/heap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static void overflow(struct heap_stats *s, const struct tprof_event *e)
{
	if (!s->overflowed) {
		s->overflowed = 1;
		s->overflow_seq = e->seq;
	}
}

/* Moves q's block to live. */
static void pair_move(struct heap_stats *s, struct heap_pair *q, struct heap_change *c)
{
	addrmap_put(&s->live, q->ptr, q->size, NULL);
	if (s->with_stacks)
		addrmap_put(&s->live_stack, q->ptr, q->stack, NULL);
	c->moved_ptr = q->ptr;
	c->moved_seq = q->seq;
	c->moved_tid = q->tid;
	q->ptr = 0;
}

int heap_finish(struct heap_stats *s, struct tprof_trace *t)
{
	struct heap_change c;
	for (size_t i = 0; s->pairs && i < (1u << HEAP_PAIR_BITS); i++)
		if (s->pairs[i].ptr)
			pair_move(s, &s->pairs[i], &c);
	if (!s->overflowed)
		return 0;
	snprintf(t->err, sizeof(t->err),
		 "%s: the heap's byte totals pass 2^64 at event %llu (sequence number): no real program "
		 "allocates that much, the trace is corrupt", t->path, (unsigned long long)s->overflow_seq);
	return -1;
}

/* The address was taken again while still live: never in order, so a gap in the trace (lost
 * events); count it and treat the old block as gone. */
static void reused(struct heap_stats *s, uint64_t old_size)
{
	s->reused_live++;
	s->live_bytes -= old_size;
	s->live_blocks--;
}

static void take(struct heap_stats *s, const struct tprof_event *e, struct heap_change *c)
{
	uint64_t old;
	struct heap_pair *q = s->pairs ? heap_pair_of(s, e->ptr) : NULL;
	if (q && q->ptr == e->ptr) {
		reused(s, q->size);
		q->ptr = 0;
	}
	if (q && heap_pair_fits(s, q, e)) {
		if (q->ptr)
			pair_move(s, q, c);
		*q = (struct heap_pair){e->ptr, e->seq, e->size, e->stack, e->tid};
		c->taken_paired = 1;
	} else {
		if (addrmap_put(&s->live, e->ptr, e->size, &old))
			reused(s, old);
		if (s->with_stacks)
			addrmap_put(&s->live_stack, e->ptr, e->stack, NULL);
	}
	c->taken_ptr = e->ptr;
	s->allocations++;
	if (__builtin_add_overflow(s->bytes_allocated, e->size, &s->bytes_allocated) |
	    __builtin_add_overflow(s->live_bytes, e->size, &s->live_bytes))
		overflow(s, e);
	s->live_blocks++;
	heap_peak_check(s, e);
}

static void give_back(struct heap_stats *s, uint64_t ptr, struct heap_change *c)
{
	uint64_t size, stack = 0;
	if (!ptr)
		return;
	struct heap_pair *q = s->pairs ? heap_pair_of(s, ptr) : NULL;
	if (q && q->ptr == ptr) {
		c->freed_ptr = ptr;
		c->freed_size = q->size;
		c->freed_stack = q->stack;
		c->freed_seq = q->seq;
		c->freed_tid = q->tid;
		q->ptr = 0;
		s->frees++;
		s->live_bytes -= c->freed_size;
		s->live_blocks--;
	} else if (addrmap_del(&s->live, ptr, &size)) {
		if (s->with_stacks)
			addrmap_del(&s->live_stack, ptr, &stack);
		c->freed_ptr = ptr;
		c->freed_size = size;
		c->freed_stack = (uint32_t)stack;
		s->frees++;
		s->live_bytes -= size;
		s->live_blocks--;
	} else {
		s->unmatched_frees++;
	}
}

void heap_init(struct heap_stats *s, int with_stacks)
{
	memset(s, 0, sizeof(*s));
	addrmap_init(&s->live);
	s->with_stacks = with_stacks;
	if (with_stacks)
		addrmap_init(&s->live_stack);
	s->pairs = xcalloc(1u << HEAP_PAIR_BITS, sizeof(*s->pairs)); /* untouched pages cost nothing */
}

void heap_index_all(struct heap_stats *s)
{
	s->index_all = 1;
	free(s->pairs);
	s->pairs = NULL;
}

void heap_release(struct heap_stats *s)
{
	addrmap_free(&s->live);
	if (s->with_stacks)
		addrmap_free(&s->live_stack);
	free(s->pairs);
	s->pairs = NULL;
}

void heap_step(struct heap_stats *s, const struct tprof_event *e, struct heap_change *c)
{
	struct heap_change ignored;
	if (!c)
		c = &ignored;
	memset(c, 0, sizeof(*c));
	s->events++;
	switch (e->kind) {
	case TPROF_EV_FREE:
		s->calls[e->kind]++;
		give_back(s, e->ptr, c);
		break;
	case TPROF_EV_REALLOC:
	case TPROF_EV_REALLOCARRAY:
		if (e->phase == 0) {
			s->calls[e->kind]++;
			/* success, or glibc's realloc(p, 0), which frees p and returns NULL */
			if (e->ptr || (e->size == 0 && e->old_ptr))
				give_back(s, e->old_ptr, c);
			else
				s->failed++;
		} else if (e->ptr) {
			take(s, e, c);
		}
		break;
	default:
		s->calls[e->kind]++;
		if (e->ptr)
			take(s, e, c);
		else
			s->failed++;
		break;
	}
}

/* heap_step over a run of events, with the common cases (a plain allocation into a free slot of the
 * pairs table, the free of a block in its slot) on counters kept in registers: the stats and the
 * events are both made of uint64_t, so through s the compiler would have to store and reload every
 * counter for every event. */
static void heap_run(struct heap_stats *s, const struct tprof_event *ev, size_t n)
{
	uint64_t live = s->live_bytes, blocks = s->live_blocks, peak = s->peak_bytes;
	uint64_t nmalloc = 0, nfree = 0, bytes = 0;
	for (size_t i = 0; i < n; i++) {
		const struct tprof_event *e = &ev[i];
		struct heap_pair *q = s->pairs ? heap_pair_of(s, e->ptr) : NULL;
		if (e->kind == TPROF_EV_FREE && q && q->ptr == e->ptr && e->ptr) {
			nfree++;
			live -= q->size;
			blocks--;
			q->ptr = 0;
			continue;
		}
		if (e->kind == TPROF_EV_MALLOC && e->ptr && q && !q->ptr && heap_pair_fits(s, q, e)) {
			*q = (struct heap_pair){e->ptr, e->seq, e->size, e->stack, e->tid};
			nmalloc++;
			if (__builtin_add_overflow(bytes, e->size, &bytes) |
			    __builtin_add_overflow(live, e->size, &live))
				overflow(s, e);
			blocks++;
			if (live > peak) {
				peak = live;
				s->peak_blocks = blocks;
				s->peak_seq = e->seq;
				s->peak_tick = e->tick;
				s->peak_tid = e->tid;
			}
			continue;
		}
		/* anything else takes the general path, on the stats as they stand */
		s->live_bytes = live;
		s->live_blocks = blocks;
		s->peak_bytes = peak;
		heap_step(s, e, NULL);
		s->events--; /* counted below with the rest */
		live = s->live_bytes;
		blocks = s->live_blocks;
		peak = s->peak_bytes;
	}
	s->live_bytes = live;
	s->live_blocks = blocks;
	s->peak_bytes = peak;
	s->events += n;
	s->allocations += nmalloc;
	if (__builtin_add_overflow(s->bytes_allocated, bytes, &s->bytes_allocated) && n)
		overflow(s, &ev[n - 1]);
	s->frees += nfree;
	s->calls[TPROF_EV_FREE] += nfree;
	s->calls[TPROF_EV_MALLOC] += nmalloc;
}

int heap_analyze(struct tprof_trace *t, struct heap_stats *s)
{
	heap_init(s, 0);
	const struct tprof_event *e;
	size_t n;
	int r;
	while ((r = tprof_trace_next_run(t, &e, &n)) > 0)
		heap_run(s, e, n);
	return r < 0 ? r : heap_finish(s, t);
}
