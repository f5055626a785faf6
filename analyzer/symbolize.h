/* Offline symbolization: turns the raw return addresses of a trace's call stacks into function,
 * source file, line and inlined frames, using the modules (path, load address, size, build-id) the
 * recorder logged. Built on libdw (elfutils). Results are cached per address. A module whose file is
 * missing or whose build-id differs from the recorded one is reported as such, never guessed. */
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
	const char *module;   /* basename of the module's path; NULL when no module covers the address */
	uint64_t offset;      /* address relative to the module's base (ELF virtual address) */
	int inlined;          /* 1: this frame was inlined into the next one of the same address */
};

/* Why a module's frames show only module+offset. */
enum tprof_sym_status {
	TPROF_SYM_OK = 0,
	TPROF_SYM_MISSING = 1,   /* the file cannot be opened */
	TPROF_SYM_MISMATCH = 2,  /* its build-id is not the recorded one */
	TPROF_SYM_NO_INFO = 3,   /* opened, but neither symbols nor debug info */
};

struct tprof_symbolizer;

/* modules: copied. exe: the traced program's path, used for a module with an empty path. */
struct tprof_symbolizer *sym_new(const struct tprof_module *modules, size_t n, const char *exe);
void sym_free(struct tprof_symbolizer *s);

/* Resolves a return address taken by the recorder (the lookup uses addr - 1, inside the call) at
 * sequence number seq. Writes up to max frames, innermost inlined frame first and the frame of
 * the real function last; returns how many (at least 1 when max >= 1). */
size_t sym_resolve(struct tprof_symbolizer *s, uint64_t addr, uint64_t seq, struct tprof_sym_frame *out,
		   size_t max);

/* The modules that could not be used, for the report's warnings: calls fn once per such module. */
void sym_problems(struct tprof_symbolizer *s,
		  void (*fn)(void *ctx, const char *path, enum tprof_sym_status st), void *ctx);

#endif
