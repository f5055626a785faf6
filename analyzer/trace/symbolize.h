/* Offline symbolization: turns the raw return addresses of a trace's call stacks into function,
 * source file, line and inlined frames, using the modules (path, load address, size, build-id) the
 * recorder logged. Built on libdw (elfutils): DWARF first (in the file or in a separate debug file
 * found the standard way: .gnu_debuglink, /usr/lib/debug/.build-id, and debuginfod when
 * DEBUGINFOD_URLS is set), then the ELF symbol tables, then module+offset. Results are cached per
 * address, and on disk between runs (trace/symcache.h: TPROF_SYMBOL_CACHE). A module whose file is missing or whose build-id differs from the recorded one is
 * reported as such, never guessed. Not thread-safe: one symbolizer per thread. */
#ifndef TPROF_SYMBOLIZE_H
#define TPROF_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

/* One module as the recorder saw it. load_seq/unload_seq bound its lifetime in event-sequence
 * numbers (unload_seq = UINT64_MAX while loaded at the end), so an address reused by a later
 * dlopen resolves against the module that was there when a stack was taken. */
struct tprof_module {
	const char *path;   /* as the loader reported it; "" for the main program is replaced by exe */
	uint64_t base;      /* load bias: runtime address = base + ELF virtual address */
	uint64_t start, end; /* runtime address range [start, end) covered by its PT_LOAD segments */
	uint8_t build_id[64];
	size_t build_id_len;  /* 0: the module had no build-id note */
	uint64_t load_seq, unload_seq;
};

/* One resolved frame. All strings belong to the symbolizer and live until sym_free. */
struct tprof_sym_frame {
	const char *function; /* demangled; NULL when unknown */
	const char *file;     /* source file, NULL when there is no line information */
	int line;             /* 0 when unknown */
	const char *module;   /* basename of the module's path (of exe for the main program); NULL
			       * when no module covers the address */
	uint64_t offset;      /* the return address minus the module's base, i.e. its ELF virtual
			       * address in the module's file; the address itself when no module */
	int inlined;          /* 1: this frame was inlined into the next one of the same address */
};

/* Why a module's frames show only module+offset. */
enum tprof_sym_status {
	TPROF_SYM_OK = 0,
	TPROF_SYM_MISSING = 1,   /* the file cannot be opened */
	TPROF_SYM_MISMATCH = 2,  /* its build-id is not the recorded one */
	TPROF_SYM_NO_INFO = 3,   /* opened, but not readable as ELF, or neither symbols nor debug info */
};

struct tprof_symbolizer;

/* modules: copied (n may be 0). exe: the traced program's path, used for a module whose path is
 * empty or NULL; may be NULL. No file is opened until sym_resolve needs it; each file in use then
 * keeps a descriptor open (two with a separate debug file) until sym_free. */
struct tprof_symbolizer *sym_new(const struct tprof_module *modules, size_t n, const char *exe);
void sym_free(struct tprof_symbolizer *s);

/* Resolves a return address taken by the recorder (the lookup uses addr - 1, inside the call) at
 * sequence number seq: the module is the one covering addr - 1 with load_seq <= seq < unload_seq,
 * else the latest-loaded one covering it. Writes up to max frames, innermost inlined frame first
 * and the frame of the real function last; returns how many (at least 1 when max >= 1, 0 when
 * max is 0). With more inlined levels than max, the outer inlined frames are dropped and the real
 * function stays last. Never fails: an address no usable module covers gives one frame with only
 * module and offset (or neither). Repeated addresses are answered from the cache. */
size_t sym_resolve(struct tprof_symbolizer *s, uint64_t addr, uint64_t seq, struct tprof_sym_frame *out,
		   size_t max);

/* The path of the module sym_resolve would take for addr at seq (exe for the main program), or
 * NULL when no module covers it; opens nothing. */
const char *sym_module_path(const struct tprof_symbolizer *s, uint64_t addr, uint64_t seq);

/* The modules that could not be used, for the report's warnings: calls fn once per path and status
 * among the modules sym_resolve has needed so far (modules no address fell in are never opened,
 * so call this after resolving). path is exe for the main program. */
void sym_problems(struct tprof_symbolizer *s,
		  void (*fn)(void *ctx, const char *path, enum tprof_sym_status st), void *ctx);

/* How many addresses went to libdw so far, i.e. the cache's misses (for tests). */
size_t sym_lookups(const struct tprof_symbolizer *s);

#endif
