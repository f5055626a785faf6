/* Call stacks inside libtprof.so: capture with libunwind, intern into a lock-free table so each
 * distinct stack gets a small id (the trace references stacks by id and defines each once), and the
 * table of loaded modules the analyzer needs to symbolize return addresses offline. Everything here
 * lives in mmap'd memory: no malloc, no locks on the path of an allocation. */
#ifndef TPROF_STACKS_H
#define TPROF_STACKS_H

#include <stdatomic.h>
#include <stdint.h>

#define TPROF_DEPTH_DEFAULT 64
#define TPROF_DEPTH_MAX 256
#define TPROF_STACK_ID_BITS 24 /* ids travel in 24 bits of a ring entry; id 0 is "no stack" */
#define TPROF_STACK_IDS (1u << TPROF_STACK_ID_BITS)

/* One interned stack, as the writer reads it back. */
struct tprof_stack_ref {
	const uint64_t *frames; /* return addresses, innermost first */
	uint32_t depth;
	uint32_t truncated; /* the capture filled TPROF_DEPTH: deeper frames were cut */
};

/* Sets up the tables (at init, before recording starts); 0 on success. On failure stacks are off. */
int tprof_stacks_init(unsigned depth);

/* Captures the calling thread's stack, skipping libtprof.so's own frames, and returns its id; 0 when
 * stacks are off or the table is full. Call with the hook guard held. */
uint32_t tprof_stack_capture(void);

/* Writer: the stack with this id (published before the event that references it). 0 if unknown. */
int tprof_stack_get(uint32_t id, struct tprof_stack_ref *out);

/* Capture statistics for the END block. */
uint64_t tprof_stacks_dropped(void); /* allocations whose stack could not be interned */
uint32_t tprof_stacks_count(void);

/* A module (the main program, a shared library, the vDSO) as dl_iterate_phdr reports it. */
struct tprof_module_rec {
	uint32_t id;
	uint64_t base, start, end;
	uint64_t load_seq, unload_seq; /* unload_seq 0: still loaded */
	uint8_t build_id[32];
	uint8_t build_id_len;
	const char *path;
	int written, unload_written; /* writer-private */
};

/* Writer thread only: compares the loaded modules with the table (cheaply, by the loader's
 * load/unload counters unless force is set) and updates it. Returns 1 when something changed. */
int tprof_modules_scan(int force);
/* Writer thread only: the table, for writing MODULE blocks. */
struct tprof_module_rec *tprof_modules(uint32_t *n);
/* dlclose hook: a module may be gone; stacks taken from now on must not reuse older ids. */
void tprof_modules_closed(uint64_t seq);

#endif
