/* The heap analysis: replays the merged event stream of a trace and counts what valgrind memcheck's
 * HEAP SUMMARY counts (allocations, frees, bytes allocated, in use at exit), plus the exact peak of
 * live requested bytes and when it happened. The counting conventions are in docs/FORMAT.md. */
#ifndef TPROF_HEAP_H
#define TPROF_HEAP_H

#include <stdint.h>

#include "analysis/addrmap.h"
#include "trace/reader.h"

struct heap_stats {
	uint64_t calls[TPROF_EV_KIND_MAX + 1]; /* every call, failed ones and free(NULL) included */
	uint64_t events;
	uint64_t allocations;     /* blocks obtained (realloc: the new block) */
	uint64_t frees;           /* blocks given back that were obtained inside the trace */
	uint64_t bytes_allocated; /* requested bytes of all allocations */
	uint64_t failed;          /* allocation calls that returned NULL/an error */
	uint64_t unmatched_frees; /* frees of addresses never allocated in the trace */
	uint64_t reused_live;     /* allocations returning an address still live (never in order) */
	uint64_t live_bytes, live_blocks;
	uint64_t peak_bytes, peak_blocks, peak_seq, peak_tick;
	uint32_t peak_tid;        /* the thread whose allocation reached the peak */
	/* A byte total passed 2^64 (only a corrupt trace claims that much): the sequence number of
	 * the event where it did, the totals from there on meaningless (heap_overflow). */
	int overflowed;
	uint64_t overflow_seq;
	struct addrmap live; /* address -> size of live blocks (see index_all and pairs; after
			      * heap_finish: every live block, i.e. at the end the leaks) */
	/* Blocks the reader paired with a free of their thread (reader.h) live in a small table by
	 * address instead of live: they are short-lived, and a table slot costs far less than a map
	 * entry. The pairing is the decoder's guess from one thread's events; another thread may still
	 * free such a block (and its address be taken again) before the free it was paired with, so a
	 * free looks here first, whatever its flag, and a block whose slot is wanted moves to live.
	 * Every live block is in exactly one of the two. NULL with index_all. */
	struct heap_pair *pairs;
	struct addrmap live_stack; /* address -> stack id of live blocks; only with heap_init(s, 1) */
	int with_stacks;
	/* Index every live block in live. By default a block the reader paired with its free is kept
	 * in pairs, so live holds every live block only after heap_finish; set this after heap_init
	 * to stop a replay early and look at live (e.g. at the peak). */
	int index_all;
};

/* What one event did to the live set, for analyses that follow the replay step by step. */
struct heap_change {
	uint64_t freed_ptr;   /* 0: no block was given back */
	uint64_t freed_size;
	uint32_t freed_stack; /* the freed block's stack id (with stacks only) */
	uint32_t freed_tid;   /* with freed_seq: the thread that took the freed block */
	uint64_t freed_seq;   /* the sequence number of the freed block's allocation when it was in
			       * pairs; 0 when it came from live */
	uint64_t taken_ptr;   /* 0: no block was obtained */
	int taken_paired;     /* the block taken went to pairs, not live */
	/* A paired block moved to live to free its slot (0: none), its allocation and thread. */
	uint64_t moved_ptr, moved_seq;
	uint32_t moved_tid;
};

/* The pairs table (heap_stats.pairs): direct-mapped by address, a block in the slot of its address.
 * Exposed for replays that keep figures of their own per event (tprof summary) and take the two
 * commonest events without heap_step: a free of the block in its address's slot (ptr equal), and an
 * allocation whose slot is free (ptr 0) and that fits there (heap_pair_fits). Each such step must do
 * to the slot and to the counters exactly what heap_step does (heap.c, heap_run). */
#define HEAP_PAIR_BITS 12
struct heap_pair {
	uint64_t ptr, seq, size; /* ptr 0: free slot */
	uint32_t stack, tid;
};

static inline struct heap_pair *heap_pair_of(const struct heap_stats *s, uint64_t ptr)
{
	return &s->pairs[(ptr >> 4) * 0x9e3779b97f4a7c15ull >> (64 - HEAP_PAIR_BITS)];
}

/* Whether e's block (an allocation) goes into its slot q of the pairs table rather than into live:
 * when the reader paired it with a free (the occupant of the slot, if any, then moves to live), or
 * when the slot is free and the address is not in live (an unpaired block costs the slot nothing
 * until another block wants it, then moves; an address still in live was taken again while live,
 * which live's insertion counts). */
static inline int heap_pair_fits(const struct heap_stats *s, const struct heap_pair *q,
				  const struct tprof_event *e)
{
	return e->paired || (!q->ptr && (!s->live.len || !addrmap_get(&s->live, e->ptr, NULL)));
}

/* The live heap has just grown by e's block: when it passes the peak, this is the new peak.
 * 1 when it was. */
static inline int heap_peak_check(struct heap_stats *s, const struct tprof_event *e)
{
	if (s->live_bytes <= s->peak_bytes)
		return 0;
	s->peak_bytes = s->live_bytes;
	s->peak_blocks = s->live_blocks;
	s->peak_seq = e->seq;
	s->peak_tick = e->tick;
	s->peak_tid = e->tid;
	return 1;
}

/* Replays t from its current position to the end. 0 on success; -1 on a corrupt record or byte
 * totals past 2^64 (t->err).
 * The caller releases s->live with addrmap_free (or heap_release). */
int heap_analyze(struct tprof_trace *t, struct heap_stats *s);

/* The same replay one event at a time: heap_init, heap_step per event in trace order, heap_release.
 * with_stacks also remembers each live block's stack id (one more map entry per live block). */
void heap_init(struct heap_stats *s, int with_stacks);
/* Applies e exactly as heap_analyze counts it; c (may be NULL) receives what changed. */
void heap_step(struct heap_stats *s, const struct tprof_event *e, struct heap_change *c);
void heap_release(struct heap_stats *s);
/* Sets index_all (right after heap_init, before any step). */
void heap_index_all(struct heap_stats *s);

/* After a replay by heap_step (or where it stops): moves every paired block still live into live
 * (and live_stack), so that live holds every live block; then 0, or -1 with a message in t->err
 * when a byte total passed 2^64. */
int heap_finish(struct heap_stats *s, struct tprof_trace *t);

#endif
