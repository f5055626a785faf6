/* The validating trace reader: opens a trace (docs/FORMAT.md), checks every block (bounds, CRC-32C,
 * known types, version), and yields the events of all threads merged into their global order (the
 * sequence numbers the recorder assigned). Everything that is not a well-formed trace is rejected
 * with a message naming the file and the byte offset, but for a file cut inside its last block
 * (disk full, a killed writer), which is read up to that block and marked cut; nothing here exits
 * or crashes on bad input. */
#ifndef TPROF_READER_H
#define TPROF_READER_H

#include <stddef.h>
#include <stdint.h>

#include "trace/symbolize.h"
#include "tprof_trace.h"

/* One event in global order. A realloc yields two: phase 0 at the moment the old block was given
 * back (before the call), phase 1 when the new one was obtained (after it); both carry all fields. */
struct tprof_event {
	uint64_t seq;
	uint64_t tick;    /* raw clock; tprof_trace_ns() converts */
	uint64_t size;    /* requested bytes; 0 for free */
	uint64_t ptr;     /* block returned (allocations), or freed (free) */
	uint64_t old_ptr; /* realloc: the block passed in */
	uint32_t tid;
	uint32_t stack;   /* allocations: stack id (tprof_trace_stack), 0 when none was taken */
	uint8_t kind;  /* enum tprof_event_kind */
	uint8_t phase; /* realloc only, see above */
	/* A guess of the reader's from one thread's block of events: on an allocation (or the new half
	 * of a realloc), 1 when a later free of the same thread, a few thousand events on at most,
	 * names it in the codec's pointer history (which holds each address's latest allocation of the
	 * thread); on that free, 1 too. Another thread may still have freed the block and the address
	 * been taken again meanwhile: a replay uses the flag only to keep such short-lived blocks in a
	 * cheaper table (heap.h). */
	uint8_t paired;
};

/* One kernel call (KERNELS blocks), read eagerly at open: kernels are far rarer than heap events. */
struct tprof_kcall {
	uint64_t t0, t1;      /* raw clock at entry and exit */
	uint64_t flops, bytes;
	uint32_t tid;
	uint16_t op;          /* index into tprof_trace.op_names */
	uint8_t nshape;
	uint32_t shape_at;    /* the shape values are kshape[shape_at .. shape_at + nshape) */
};

/* One annotation (include/tprof.h): a range push or pop, a step boundary, a mark, a parameter. */
struct tprof_annot {
	uint64_t seq;  /* in the global order of heap events */
	uint64_t tick;
	int64_t value;
	uint32_t tid;
	uint32_t name; /* index into tprof_trace.annot_names; 0: none */
	uint8_t kind;  /* enum tprof_annot_kind */
};

/* One sample of the process's resident set size, taken by the recorder's writer thread every
 * TPROF_RSS_INTERVAL_MS (10 ms by default), at start and at the end (RSS blocks), read at open. */
struct tprof_rss {
	uint64_t tick;      /* raw clock; tprof_trace_ns() converts */
	uint64_t rss_bytes; /* resident pages times the page size (see tprof_rss_has_own) */
};

/* One block the reachability scan listed (LEAKS blocks): every block live at the end that is lost,
 * possibly lost or reachable only through a heuristic; the others are reachable. */
struct tprof_leak_entry {
	uint64_t addr, size;
	uint64_t indirect; /* definitely lost: bytes of the blocks lost through it */
	uint8_t kind;      /* enum tprof_leak_kind */
	uint8_t heuristic; /* enum tprof_leak_heuristic */
	uint8_t late;      /* allocated after the scan (by a thread still running): no kind */
};

/* What the scan at the process's end said (docs/FORMAT.md, LEAKS). */
struct tprof_leakscan {
	int present; /* a summary was read: the scan ran */
	uint64_t status, err, reason;
	uint64_t live_blocks, live_bytes; /* as the scan saw them */
	uint64_t threads_stopped, threads_missed, ns, root_bytes, block_bytes;
	struct tprof_leak_entry *entries; /* by address */
	size_t n, cap;
};

struct tprof_thread_info {
	uint32_t tid;
	char *name;
	uint64_t events; /* records read so far */
	uint64_t lost;
	int ended;       /* a THREAD_END block was seen */
	uint32_t reused; /* threads after the first that had this tid (the kernel reuses ids): a THREAD
			  * block after its THREAD_END; their events are listed with the first's */
};

struct tprof_trace_info {
	uint64_t pid, ppid, clock, flags, page_size, ptr_size, start_realtime_ns, ring_entries;
	uint64_t depth; /* the recorder's stack depth limit; 0: no stacks were taken */
	char *exe;
	char *program; /* basename of argv[0], else of exe */
	uint64_t argc;
	char **argv;
	/* The module whose malloc the program's calls reached when it was not libtprof.so (the
	 * executable defines malloc itself, or another allocator was preloaded ahead of it): then no
	 * heap call was recorded. "" when the calls were intercepted, and in traces before version 4. */
	char *malloc_owner;
};

struct tprof_trace {
	const char *path;
	unsigned version; /* the file's format version */
	struct tprof_trace_info info;
	struct tprof_thread_info *threads;
	size_t nthreads;
	uint64_t lost_events;   /* sum of LOST blocks */
	uint64_t blocks;        /* complete blocks read */
	/* The file ends with an END block: the end_* fields below say how the process ended. */
	int ended;
	/* ended, and nothing may be missing (END flag INFLIGHT: a call that had returned may be; before
	 * version 10, a thread was inside a heap call then), and the file was not cut */
	int complete;
	uint64_t end_reason, end_value, end_seq, end_events, end_lost;
	uint64_t end_stacks, end_stacks_dropped; /* distinct stacks; allocations without a stack */
	uint64_t end_flags;     /* TPROF_ENDF_*; 0 before version 4 */
	/* The file ends inside a block (disk full, a writer killed mid-write): everything before that
	 * block was read, the trace is not complete, and these say where it was cut. */
	int cut;
	uint64_t cut_at;        /* byte offset of the block cut short */
	uint64_t cut_blocks;    /* complete blocks before it */
	uint64_t cut_events;    /* event records in them */
	uint64_t cut_have, cut_want; /* bytes of that block in the file, and its length with header
				      * (0 when its header itself is cut) */
	struct tprof_module *modules; /* every module seen, in order of discovery */
	size_t nmodules;
	uint32_t nstacks;       /* stack ids are below this */
	uint64_t first_tick_seen, last_tick_seen; /* over all events */
	uint64_t t0_ns;         /* CLOCK_MONOTONIC ns of time zero (first clock pair or first event) */
	uint64_t end_ns;        /* CLOCK_MONOTONIC ns of the last clock pair or last event */
	/* kernel calls, in file order per thread (by exit time); annotations in global (seq) order */
	struct tprof_kcall *kcalls;
	size_t nkcalls;
	int64_t *kshape;
	size_t nkshape;
	struct tprof_annot *annots;
	size_t nannots;
	uint64_t kcalls_seen, annots_seen; /* in the file, kept or not (TPROF_OPEN_HEAP_ONLY) */
	/* RSS samples in time order; none in traces recorded without them */
	struct tprof_rss *rss;
	size_t nrss;
	struct tprof_leakscan leaks; /* the reachability scan, when the trace has one */
	/* NAMES: op ids and annotation name ids to names; NULL where undefined */
	char **op_names, **op_shape_names; /* shape_names: comma-separated, e.g. "M,N,K" */
	uint32_t nop_names;
	char **annot_names;
	uint32_t nannot_names;
	char err[512];          /* set when a call fails */
	struct tprof_reader_priv *priv;
};

/* The progress of reading a large trace, for the command to show (cmd/progress.c): want(size) is asked
 * when a trace is opened; if it says yes, show() hears how far the reading has come at most 5 times
 * a second, and end() is called once the reading ends after a show(). NULL: no progress. */
struct tprof_progress {
	int (*want)(uint64_t size);
	void (*show)(const char *path, uint64_t at, uint64_t size, double secs);
	void (*end)(void);
};
extern const struct tprof_progress *tprof_progress_hook;

/* Opens and validates path. On success returns 0 and *out; on failure returns -1 and copies a
 * message ("FILE: byte N: what") into err. The caller frees *out with tprof_trace_close. A file cut
 * inside its last block opens (t->cut) as long as its INFO block is whole; a block that is there
 * but wrong (checksum, type, length, contents) fails. */
int tprof_trace_open(const char *path, struct tprof_trace **out, char *err, size_t errlen);
/* As tprof_trace_open, with flags. TPROF_OPEN_HEAP_ONLY: for a command that reads heap events
 * only. Kernel calls and annotations are validated as always but not kept (kcalls, kshape and
 * annots stay empty; kcalls_seen and annots_seen count them): a long training run records tens of
 * millions, which took the heap commands 1.3 GB for a 150 MB trace. */
#define TPROF_OPEN_HEAP_ONLY 1u
int tprof_trace_open_flags(const char *path, unsigned flags, struct tprof_trace **out, char *err, size_t errlen);
void tprof_trace_close(struct tprof_trace *t);

/* Says where a cut trace was cut, for people: "trace cut at byte X after N complete blocks: the
 * rest is lost (...)", into buf; returns buf. */
const char *tprof_trace_cut_note(const struct tprof_trace *t, char *buf, size_t len);

/* Says why an ended trace is not complete (END flag INFLIGHT), for people, as its version means it. */
const char *tprof_trace_inflight_note(const struct tprof_trace *t);

/* Next event in global order: 1 with *ev filled, 0 at the end, -1 on a corrupt record (t->err). */
int tprof_trace_next(struct tprof_trace *t, struct tprof_event *ev);

/* The same without the copy: *ev points into the reader's buffers and stays valid until the next
 * call on t (or tprof_trace_close). */
int tprof_trace_next_ref(struct tprof_trace *t, const struct tprof_event **ev);

/* The next events in global order at once: 1 with ev[0 .. *n) (*n >= 1), all of one thread and
 * consecutive in the merged order, valid until the next call on t; 0 at the end, -1 on a corrupt
 * record (t->err). Calls may be mixed with tprof_trace_next_ref. */
int tprof_trace_next_run(struct tprof_trace *t, const struct tprof_event **ev, size_t *n);

/* Nanoseconds since time zero for a raw tick (negative ticks before zero clamp to 0). */
uint64_t tprof_trace_ns(const struct tprof_trace *t, uint64_t tick);
/* Whether t's RSS samples count tprof's shared memory too (its rings and tables, which the process
 * maps): so in traces before format version 9; from 9 on the recorder leaves them out. */
static inline int tprof_rss_has_own(const struct tprof_trace *t)
{
	return t->version < 9;
}

/* The frames of stack id (return addresses, innermost first) into frames; returns their number, 0
 * when id is 0 or undefined. Stacks with the same frames have the same id: the reader merges
 * duplicates. */
#define TPROF_STACK_MAX_DEPTH 1024
uint32_t tprof_trace_stack(const struct tprof_trace *t, uint32_t id, uint64_t frames[TPROF_STACK_MAX_DEPTH],
			   int *truncated);

/* The name of thread tid, or "" when unknown. */
const char *tprof_trace_thread_name(const struct tprof_trace *t, uint32_t tid);

#endif
