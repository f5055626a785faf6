/* Heap costs grouped by call stack, and symbolized stacks for the stack-based commands (leaks, peak,
 * allocs, export). A stack is the reader's stack id: the reader merges stacks with the same return
 * addresses, so grouping by id is grouping by content, as valgrind groups its loss records. Costs
 * live in one array indexed by id (memory grows with distinct stacks, never with events). Frames
 * are symbolized on demand, each distinct address once (the symbolizer caches), and printed the same
 * way by every command: text, JSON and folded lines. */
#ifndef TPROF_STACKS_H
#define TPROF_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uthash.h>

#include "analysis/heap.h"
#include "trace/reader.h"
#include "trace/symbolize.h"

/* ---- grouping */

struct stack_cost {
	uint64_t bytes;     /* requested bytes attributed to the stack */
	uint64_t blocks;    /* live blocks (leaks, peak) or allocations (allocs) */
	uint64_t temporary; /* allocs: allocations freed before their thread's next allocation */
	uint64_t seq;       /* the latest allocation with this stack: when to resolve its modules */
};

struct stack_table {
	struct stack_cost *cost; /* indexed by stack id; cost[0] holds what had no stack */
	uint32_t n;              /* = the trace's nstacks (at least 1) */
};

void stack_table_init(struct stack_table *tab, const struct tprof_trace *t);
void stack_table_free(struct stack_table *tab);

/* The entry of stack id; ids the table does not know count as "no stack" (entry 0). */
static inline struct stack_cost *stack_cost_of(struct stack_table *tab, uint32_t id)
{
	return &tab->cost[id < tab->n ? id : 0];
}

/* Notes an allocation of e (taken by heap_step): remembers its sequence number for symbolization. */
static inline void stack_table_seen(struct stack_table *tab, const struct tprof_event *e)
{
	stack_cost_of(tab, e->stack)->seq = e->seq;
}

/* Replaces every stack's bytes and blocks by those of its blocks live in s (replayed with stacks). */
void stack_table_set_live(struct stack_table *tab, const struct heap_stats *s);

enum stack_order {
	STACK_BY_BYTES,  /* bytes, then blocks, descending */
	STACK_BY_BLOCKS, /* blocks, then bytes, descending */
};

/* The ids whose blocks are not zero, sorted (ties by id, ascending); *n receives the count. The
 * caller frees the array. */
uint32_t *stack_table_sorted(const struct stack_table *tab, enum stack_order order, size_t *n);

/* Replays t from its start with stacks (heap_init(s, 1)) up to and including the event whose
 * sequence number is stop_seq (UINT64_MAX: to the end), adding each allocation to its stack in tab
 * (blocks: allocations, bytes: bytes allocated). Returns 0, or -1 on a corrupt record (t->err).
 * The caller releases s with heap_release. */
int stacks_replay(struct tprof_trace *t, uint64_t stop_seq, struct heap_stats *s, struct stack_table *tab);

/* The second pass of the peak commands: replays t to the peak a first pass found (heap_analyze)
 * and puts what was live there into tab's live figures; an empty table when nothing was ever live.
 * Returns 0, or -1 with t->err set: a corrupt record, or a replay that does not reach that peak
 * (the file changed between the passes). The caller releases s with heap_release. */
int stacks_replay_to_peak(struct tprof_trace *t, const struct heap_stats *peak, struct heap_stats *s,
			  struct stack_table *tab);

/* Temporary allocations (tprof's definition, close to heaptrack's: README): an allocation freed
 * before the next allocation of the same thread, i.e. the thread's most recent allocation, freed by
 * that thread. Each thread keeps the sequence number of its latest take; a free is temporary when
 * the block it gives back was taken by exactly that event. The replay's pairs table (heap.h) knows
 * that of its blocks; for the others owner maps the address to its allocation's sequence number,
 * for each thread's latest allocation only (an older one can no longer be temporary): at most one
 * entry per thread. */
struct temp_thread {
	uint32_t tid;
	uint64_t last_seq;         /* its latest event that took a block */
	uint64_t owned, owned_seq; /* that block while it may be in owner, else 0 */
	int owned_in_map;          /* it is in owner (it is in the replay's live map, not its pairs) */
	UT_hash_handle hh;
};
struct temporaries {
	struct addrmap owner;
	struct temp_thread *threads, *cur; /* per thread: its latest take; cur: the last one looked up */
	struct temp_thread *prev;          /* the one before cur (two threads' runs alternate) */
};
void temporaries_init(struct temporaries *tp);
void temporaries_free(struct temporaries *tp);
/* After heap_step(e) changed c: 1 when what c gave back was a temporary allocation. */
int temporaries_step(struct temporaries *tp, const struct tprof_event *e, const struct heap_change *c);
/* Thread tid's entry (made when new). Events come in runs of one thread: the last one is kept. */
struct temp_thread *temporaries_thread(struct temporaries *tp, uint32_t tid);
static inline struct temp_thread *temporaries_thread_fast(struct temporaries *tp, uint32_t tid)
{
	return tp->cur && tp->cur->tid == tid ? tp->cur : temporaries_thread(tp, tid);
}

/* ---- symbolized frames */

/* One frame of a symbolized stack. A return address whose code was inlined yields several frames,
 * innermost first, all with the same addr; the last of them has inlined = 0. */
struct stack_frame {
	struct tprof_sym_frame sym; /* function, file, line, module (basename), offset, inlined */
	uint64_t addr;              /* the return address as recorded */
	const char *module_path;    /* the module's full path (the trace's); NULL when none covers addr */
};

struct stack_sym;

/* A symbolizer over t's modules. t must outlive it. */
struct stack_sym *stack_sym_new(const struct tprof_trace *t);
void stack_sym_free(struct stack_sym *ss);

/* The frames of stack id, innermost first, resolved as of sequence number seq. The array belongs
 * to ss and stays valid until the next call; *n is 0 for id 0 (no stack recorded). *truncated
 * (may be NULL) is set when the recorder cut the stack at its depth limit. */
const struct stack_frame *stack_frames(struct stack_sym *ss, uint32_t id, uint64_t seq, size_t *n,
				       int *truncated);

/* Only the frames of the allocation site: the innermost return address and those after it that lie
 * in the same module (the code that called the allocator, up to where control came from another
 * module). Cheaper than stack_frames when that is all a caller needs (leak_site suppressions). */
const struct stack_frame *stack_site_frames(struct stack_sym *ss, uint32_t id, uint64_t seq, size_t *n);

/* Calls fn once per module whose frames could only be shown as module+offset (file missing,
 * build-id mismatch, no symbols), for the modules looked up so far; cmd/'s stack_sym_warn says so. */
void stack_sym_problems(struct stack_sym *ss, void (*fn)(void *ctx, const char *path, enum tprof_sym_status st),
			void *ctx);


/* One frame on one line, for CSV cells and for matching allocation sites across runs (which the
 * addresses cannot do): "FUNCTION (FILE:LINE)" with FILE's basename, "FUNCTION (FILE)" without a
 * line, "FUNCTION [MODULE]" without a file, "MODULE+0xOFFSET" when the function is unknown, else
 * "0xADDRESS"; then " (inlined)" for an inlined frame. The names' bytes are written as they are. */
void stack_print_label(FILE *f, const struct stack_frame *fr);

/* The same label in a string the caller frees. */
char *stack_frame_label(const struct stack_frame *fr);

/* A frame's name for folded stacks and summaries: the function, else MODULE+0xOFFSET (written into
 * buf, of size len), else the address (likewise). Returns the function's own string or buf. */
const char *stack_frame_name(const struct stack_frame *fr, char *buf, size_t len);

#endif
