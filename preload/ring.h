/* Single-producer single-consumer ring of fixed 32-byte events: the hand-off between a traced thread
 * (producer, inside a malloc hook) and the writer thread (consumer). The producer never blocks here:
 * it reserves, fills and publishes; waiting or dropping when the ring is full is the caller's policy.
 * head and tail are free-running 32-bit counters; capacity is a power of two below 2^31. */
#ifndef TPROF_RING_H
#define TPROF_RING_H

#include <stdatomic.h>
#include <stdint.h>

/* One raw event as the hook saw it. The writer turns runs of these into compact records. */
struct tprof_ev {
	uint64_t tick;     /* clock reading (for the second half of a realloc: after the call) */
	uint64_t seq_kind; /* sequence number, stack id and kind: tprof_ev_pack() in preload.h */
	uint64_t size;     /* requested bytes (calloc: nmemb * size) */
	uint64_t ptr;      /* returned block, or the block being freed */
};

/* A ring entry's seq_kind word: the low 36 bits of the sequence number (the recorder restores the
 * rest from the global counter: no event stays in a ring for 2^35 events), a 24-bit stack id and
 * the 4-bit kind. */
#define TPROF_EV_SEQ_SHIFT 28
#define TPROF_EV_SEQ_BITS 36
static inline uint64_t tprof_ev_pack(uint64_t seq, uint32_t stack, unsigned kind)
{
	return seq << TPROF_EV_SEQ_SHIFT | (uint64_t)stack << 4 | kind;
}

/* Kind used only inside rings: the second entry of a realloc pair, carrying the old pointer. */
#define TPROF_RING_REALLOC_TAIL 15u

/* Kinds of kernel calls and annotations (preload.h packs them; the writer turns them into KERNELS
 * records). A call is one KCALL entry and the KSHAPE entries its shape needs, published together:
 *   KCALL:  tick = enter tick; seq_kind = duration << 19 | wide << 18 | nshape << 14 | op << 4 | 11;
 *           size, ptr = the first 4 shape values as 32-bit words (size low and high halves, then
 *           ptr's), or with `wide` the first 2 as 64-bit words; the writer computes FLOPs and bytes;
 *   KSHAPE: the next 7 shape values as 32-bit words (seq_kind bits 32..63, then tick, size, ptr low
 *           and high halves), or with `wide` 3 values as 64-bit words (tick, size, ptr).
 *   ANNOT:  seq_kind = tprof_ev_pack(seq, name id, 13); tick; size = annotation kind; ptr = value. */
#define TPROF_RING_KCALL 11u
#define TPROF_RING_KSHAPE 12u
#define TPROF_RING_ANNOT 13u
#define TPROF_RING_KDUR_SHIFT 19
#define TPROF_RING_KDUR_MAX ((1ull << 45) - 1)

struct tprof_ring {
	_Alignas(64) _Atomic uint32_t head; /* next slot to publish; written by the producer only */
	uint32_t cached_tail;               /* producer's last view of tail */
	_Atomic uint64_t lost;              /* events dropped (lossy mode, or no writer) */
	_Alignas(64) _Atomic uint32_t tail; /* next slot to consume; written by the consumer only */
	_Atomic uint32_t waiting;           /* a producer sleeps on tail (futex) */
	uint32_t mask;                      /* capacity - 1 */
	_Alignas(64) struct tprof_ev ev[];
};

static inline uint64_t tprof_ring_bytes(uint32_t capacity)
{
	return sizeof(struct tprof_ring) + (uint64_t)capacity * sizeof(struct tprof_ev);
}

/* Prepares zeroed memory of tprof_ring_bytes(capacity) as an empty ring. capacity: power of two. */
static inline void tprof_ring_init(struct tprof_ring *r, uint32_t capacity)
{
	atomic_store_explicit(&r->head, 0, memory_order_relaxed);
	atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&r->lost, 0, memory_order_relaxed);
	atomic_store_explicit(&r->waiting, 0, memory_order_relaxed);
	r->cached_tail = 0;
	r->mask = capacity - 1;
}

/* Producer: returns 1 when n slots are free from head on (refreshing the cached tail only when the
 * cached view says full), 0 otherwise. */
static inline int tprof_ring_reserve(struct tprof_ring *r, uint32_t n)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	if (h - r->cached_tail + n <= r->mask + 1)
		return 1;
	r->cached_tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	return h - r->cached_tail + n <= r->mask + 1;
}

/* Producer: the i-th slot past head (i < reserved n). */
static inline struct tprof_ev *tprof_ring_slot(struct tprof_ring *r, uint32_t i)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	return &r->ev[(h + i) & r->mask];
}

/* Producer: asks for the line of a slot it will fill soon, for writing. The writer has read that line
 * on another core since the ring last came round, so a store to it must first take it back; a
 * hook's atomic counter waits for every earlier store, so without this each such line's trip is
 * paid in full on the hook path (about 5 ns per event in a ring drained by another core). x86's
 * PREFETCHW is a no-op on processors without it; elsewhere the compiler's hint. */
#define TPROF_RING_AHEAD 32 /* slots: 16 lines, well ahead of a cross-core transfer */
static inline void tprof_prefetch_write(const void *p)
{
#if defined(__x86_64__)
	__asm__ volatile("prefetchw %0" ::"m"(*(const char *)p));
#else
	__builtin_prefetch(p, 1, 3);
#endif
}

/* Producer: makes n filled slots visible to the consumer. */
static inline void tprof_ring_publish(struct tprof_ring *r, uint32_t n)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	atomic_store_explicit(&r->head, h + n, memory_order_release);
}

/* Consumer: number of published, unconsumed events; *first receives the tail counter. */
static inline uint32_t tprof_ring_available(struct tprof_ring *r, uint32_t *first)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&r->head, memory_order_acquire);
	*first = t;
	return h - t;
}

/* Consumer: the event at counter value i (between tail and head). */
static inline const struct tprof_ev *tprof_ring_at(const struct tprof_ring *r, uint32_t i)
{
	return &r->ev[i & r->mask];
}

/* Consumer: releases n events to the producer. */
static inline void tprof_ring_consume(struct tprof_ring *r, uint32_t n)
{
	uint32_t t = atomic_load_explicit(&r->tail, memory_order_relaxed);
	atomic_store_explicit(&r->tail, t + n, memory_order_release);
}

#endif
