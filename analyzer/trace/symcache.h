/* The symbolizer's persistent cache: what libdw said about the addresses of one ELF file, kept in a
 * file named after the file's build-id, so that the next analysis of any trace of that file skips
 * loading its debug information (for the C library's compressed separate debug file, about 90 ms of
 * inflating on every command). An entry is valid only with the files it came from: the cache
 * records the module's file and the debug file libdw used (path, size, modification time, inode; or
 * that none was found at the build-id path), and is ignored when either has changed (a stripped copy
 * has the same build-id, but not the same answers). Each path of a build-id has its own file. A file that cannot be read, is not ours, is
 * damaged or of another version is ignored and rewritten; the cache never changes a result.
 *
 * Where: TPROF_SYMBOL_CACHE (a directory; "0" or "off" turns the cache off), else
 * $XDG_CACHE_HOME/tprof/symbols, else $HOME/.cache/tprof/symbols; at most SYMCACHE_MAX_FILES files,
 * the least recently used going first. The format is in docs/FORMAT.md. */
#ifndef TPROF_SYMCACHE_H
#define TPROF_SYMCACHE_H

#include <stddef.h>
#include <stdint.h>

#define SYMCACHE_MAGIC "TPROFSYM"
#define SYMCACHE_VERSION 1u
#define SYMCACHE_MAX_BYTES (64u << 20) /* a larger file is neither read nor written */
#define SYMCACHE_MAX_FILES 1000u       /* past this many, the least recently used go */

/* The debug file libdw used for a module: path[0] == 0 when none (the module's own symbols and
 * DWARF, or none at all). */
struct symcache_sig {
	char path[4096];
	uint64_t size, mtime_ns, ino;
};

/* One frame as the symbolizer resolved it; NULL strings where unknown. */
struct symcache_frame {
	const char *function, *file;
	int32_t line;
	uint8_t inlined;
};

/* What a cache file holds besides its entries. */
struct symcache_head {
	uint32_t status; /* the symbolizer's enum tprof_sym_status, TPROF_SYM_OK or TPROF_SYM_NO_INFO */
	struct symcache_sig sig;  /* the debug file */
	struct symcache_sig main; /* the module's own file */
};

/* Writes the cache directory (created when missing) to dir: 0, or -1 when the cache is off, has
 * no home or cannot be made. */
int symcache_dir(char *dir, size_t cap);

/* The debug file state to compare with a cache's: the recorded path's, or for an empty path whether
 * a debug file now exists at the build-id path. 0 when sig still holds. */
int symcache_sig_holds(const struct symcache_sig *sig, const uint8_t *id, size_t id_len);

/* Fills sig with the identity of path (NULL or "": none). */
void symcache_sig_of(struct symcache_sig *sig, const char *path);

/* Parses a cache file's bytes for build-id id: 0 when they are a complete, valid cache of that
 * build-id (check_crc 0 skips the checksum, for the fuzzer), -1 otherwise. On success fills head
 * and calls entry once per entry, frames valid during the call only; nothing is called on failure. */
int symcache_parse(const uint8_t *data, size_t len, const uint8_t *id, size_t id_len, int check_crc,
		   struct symcache_head *head,
		   void (*entry)(void *ctx, uint64_t vaddr, const struct symcache_frame *frames, uint32_t n),
		   void *ctx);

/* Reads dir's cache of build-id id for the module file main (its identity as it is now) into head
 * and entry() (as symcache_parse): 0, or -1 when there is none that can be used (missing, not a
 * regular file of this user, damaged, made from another file or debug file). */
int symcache_load(const char *dir, const uint8_t *id, size_t id_len, const struct symcache_sig *main,
		  struct symcache_head *head,
		  void (*entry)(void *ctx, uint64_t vaddr, const struct symcache_frame *frames, uint32_t n),
		  void *ctx);

/* Keeps dir to max_files cache files: past that, removes the least recently used (a file's time is
 * set each time it is read) down to 80% of max_files; also removes temporary files of writers that
 * died an hour ago or more. Only this user's regular files are touched. Returns how many went.
 * Called after a new file is written. */
size_t symcache_prune(const char *dir, size_t max_files);

/* A cache file under construction. */
struct symcache_out;
struct symcache_out *symcache_out_new(const struct symcache_head *head, const uint8_t *id, size_t id_len);
void symcache_out_add(struct symcache_out *o, uint64_t vaddr, const struct symcache_frame *frames, uint32_t n);
/* Replaces dir's cache of the build-id and head->main's path atomically (a temporary file renamed over it) and frees o;
 * 0, or -1 when it could not be written (nothing changes then). */
int symcache_out_write(struct symcache_out *o, const char *dir);

#endif
