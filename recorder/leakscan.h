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
 * still taken for freed: a freed address is remembered until leak_live_prune. */
struct leak_live;

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
void leak_live_block_rec(struct leak_live *m, const struct tprof_rec *r, uint32_t free_dist, uint32_t pushes);
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
