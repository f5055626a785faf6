/* The recorder's half of leak classification: the blocks a traced process has live (kept up to date
 * from the events the writer drains, in any order across threads), and the reachability scan of the
 * process's memory at its end, which sorts every live block into memcheck's four kinds. */
#ifndef TPROF_LEAKSCAN_H
#define TPROF_LEAKSCAN_H

#include <stdint.h>
#include <sys/types.h>

#include "shm.h"
#include "tprof_trace.h"

/* The live blocks by address. Each address keeps its latest event by sequence number, so an
 * allocation drained after the free that followed it (another thread's ring came first) is
 * still taken for freed: a freed address is remembered until leak_live_prune. The fields are
 * here for leak_live_block_rec, which the writer's loop inlines: a call per record cost about 2 ns
 * per malloc/free pair. */
struct live_slot {
	uint64_t addr; /* 0: empty */
	uint64_t seq;  /* of the address's latest event */
	uint64_t size; /* LIVE_FREED: the latest event freed the address */
};
#define LIVE_FREED UINT64_MAX

struct leak_live {
	struct live_slot *s;
	uint64_t mask, used, live, freed; /* freed: entries that remember a free */
	_Atomic uint32_t *beat; /* advanced while the table grows (a process waits on it) */
	/* leak_live_block_rec: the allocations of the block being encoded whose entry waits, by their
	 * push number in the encoder's allocation history (addr 0: none) */
	struct live_slot hold[TPROF_PTR_HIST];
	uint64_t last_seq, run_from; /* the block's last sequence number, and where its run began */
};

/* beat: advanced while the table grows, which can take a while for millions of blocks (the process
 * takes a recorder that stops beating for gone). */
struct leak_live *leak_live_new(_Atomic uint32_t *beat);
void leak_live_free(struct leak_live *m);
/* One heap record as the writer encodes it (realloc: the old block is released at seq, the new one
 * taken at seq2). */
void leak_live_apply(struct leak_live *m, const struct tprof_rec *r);
/* The same for the records of one EVENTS block, in their order, with what the encoder said of each:
 * free_dist, tprof_rec_encode's answer, and pushes, its allocation history's e->st.nalloc after it.
 * An allocation's entry waits until the block ends (leak_live_block_end) and is never made when a
 * later free of the block names it in the history: the table keeps each address's latest event
 * only, which is that free, so the block's short-lived allocations cost one update instead of two. */
/* An address's event, kept when it is the address's latest; and a realloc's release of its old
 * block, returning the sequence number at which the new one is taken (leakscan.c). */
void leak_live_event(struct leak_live *m, uint64_t addr, uint64_t seq, uint64_t size);
uint64_t leak_live_alloc_release(struct leak_live *m, const struct tprof_rec *r);
static inline __attribute__((always_inline)) void leak_live_block_rec(struct leak_live *m, const struct tprof_rec *r,
								      uint32_t free_dist, uint32_t pushes)
{
	if (!m)
		return;
	/* the run of consecutive sequence numbers this record ends: no other thread's event lies
	 * in it */
	uint64_t end = tprof_kind_is_realloc(r->kind) ? r->seq2 : r->seq;
	if (r->seq != m->last_seq + 1 || end - r->seq > 1)
		m->run_from = end;
	m->last_seq = end;
	if (r->kind == TPROF_EV_FREE) {
		if (free_dist) {
			/* its allocation's entry still waits. The address is named by its last
			 * allocation in this block, which another thread may have freed and taken
			 * again since; when no other thread's event came between the two, they are
			 * an allocation and its own free with no event of the address between
			 * them: the pair never reaches the table, and whichever of the address's
			 * events left is the latest decides as before (an allocation is skipped
			 * only with its free, so an older allocation's free is left too) */
			struct live_slot *h = &m->hold[(pushes - free_dist) % TPROF_PTR_HIST];
			int own = h->addr == r->ptr && h->seq >= m->run_from;
			h->addr = 0; /* else its entry would be overtaken by the free at once */
			if (own)
				return;
		}
		leak_live_event(m, r->ptr, r->seq, LIVE_FREED);
		return;
	}
	uint64_t seq = tprof_kind_is_realloc(r->kind) ? leak_live_alloc_release(m, r) : r->seq;
	if (!r->ptr) /* nothing taken, nothing pushed */
		return;
	struct live_slot *h = &m->hold[(pushes - 1) % TPROF_PTR_HIST];
	if (h->addr) /* the entry of the allocation that leaves the history now */
		leak_live_event(m, h->addr, h->seq, h->size);
	*h = (struct live_slot){r->ptr, seq, r->size};
}
void leak_live_block_end(struct leak_live *m);
uint64_t leak_live_count(const struct leak_live *m);
/* Addresses remembered as freed (their latest event), and forgetting those freed before sequence
 * number below: the caller knows that every event before it has been applied. */
uint64_t leak_live_freed(const struct leak_live *m);
void leak_live_prune(struct leak_live *m, uint64_t below);

/* What the scan found. blocks are sorted by address; kind is enum tprof_leak_kind. */
struct leak_block {
	uint64_t addr, size;
	uint64_t indirect; /* definitely lost blocks: the bytes of the blocks lost through this one */
	uint64_t seq;      /* of the event that allocated it */
	uint8_t kind, heuristic, pending, late, pad[4];
};

struct leak_result {
	int status;               /* enum tprof_leak_status */
	int err;                  /* errno for TPROF_LEAKS_UNREADABLE */
	struct leak_block *blocks;
	uint64_t nblocks;
	uint64_t live_blocks, live_bytes; /* as the scan saw them (also when it could not classify) */
	uint64_t root_bytes;      /* bytes of memory read as roots */
	uint64_t block_bytes;     /* bytes of blocks read */
	uint32_t threads_stopped, threads_missed;
	uint64_t ns;              /* how long the scan took */
};

/* Scans the memory of pid (stopped as preload/scan.c leaves it) for pointers to the live blocks;
 * beat is advanced while it works (the process takes a recorder that stops beating for gone). */
void leak_scan(pid_t pid, const struct tprof_shm *shm, struct leak_live *live, _Atomic uint32_t *beat,
	       struct leak_result *out);
void leak_result_free(struct leak_result *r);

/* The scan's blocks as the process ended: threads that went on after the scan may have freed some
 * (dropped) and allocated others (added with late = 1, no kind). live is the table after every
 * event; r->live_blocks and live_bytes become its totals. 0, or -1 when out of memory. */
int leak_result_final(struct leak_result *r, const struct leak_live *live);

#endif
