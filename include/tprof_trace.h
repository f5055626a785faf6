/* The tprof trace format (TPROF_VERSION below): the contract between the recorder (tprof-recorder, fed by
 * libtprof.so through shared memory) and the reader
 * (the tprof analyzer). Constants, block and record kinds, and the byte-level codec (little-endian
 * fixed fields, LEB128 varints, zigzag signed varints, CRC-32C) that both sides share. Every layout
 * here is documented byte by byte in docs/FORMAT.md; change both together and bump the version when
 * an old reader could misread a new file. Header-only, no allocation, usable inside the preload. */
#ifndef TPROF_TRACE_H
#define TPROF_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TPROF_MAGIC "TPROFTRC"   /* 8 bytes at offset 0, no terminator */
#define TPROF_MAGIC_LEN 8
#define TPROF_VERSION 11          /* readers reject newer files */
#define TPROF_VERSION_OLDEST 2    /* and older ones than this; version 2 is 3 without RSS blocks */
#define TPROF_FILE_HEADER_LEN 16  /* magic, u16 version, u16 header length, u32 flags */

/* Every block: u8 type, u32 payload length, u32 CRC-32C of (type byte + payload), payload. */
#define TPROF_BLOCK_HEADER_LEN 9
#define TPROF_BLOCK_MAX_PAYLOAD (16u << 20) /* readers reject longer blocks as corrupt */
/* No recorder writes a longer block (each is made in its 1 MiB output buffer): one that runs past
 * the end of the file was not cut there, its length is corrupt. */
#define TPROF_BLOCK_MAX_WRITTEN ((1u << 20) - TPROF_BLOCK_HEADER_LEN)
/* A ZEVENTS block's payload once decompressed (the recorder's are under 100 KiB): a few bytes of
 * zstd can claim far more, and a reader holds one such buffer per thread being decoded. */
#define TPROF_ZEVENTS_MAX_RAW (1u << 20)
/* A ZSTACKS or ZKERNELS block's payload once decompressed: at most this, and at most
 * TPROF_ZBLOCK_MAX_RATIO times its compressed bytes (the recorder writes the plain block rather than
 * pass either), so that a few bytes cannot claim the tables of a far larger file. */
#define TPROF_ZBLOCK_MAX_RAW (1u << 20)
#define TPROF_ZBLOCK_MAX_RATIO 64

enum tprof_block_type {
	TPROF_BLK_INFO = 1,       /* process description; first block of every file */
	TPROF_BLK_CLOCK = 2,      /* (tick, CLOCK_MONOTONIC ns) calibration pair */
	TPROF_BLK_THREAD = 3,     /* a thread appears: tid, name */
	TPROF_BLK_EVENTS = 4,     /* a run of one thread's events */
	TPROF_BLK_LOST = 5,       /* events a thread dropped (lossy mode only) */
	TPROF_BLK_THREAD_END = 6, /* a thread is gone; all of its events precede this block */
	TPROF_BLK_END = 7,        /* the process ended (or exec'd); totals for cross-checking */
	TPROF_BLK_STACKS = 8,     /* call stacks, each defined once, before the first event using it */
	TPROF_BLK_MODULE = 9,     /* a module was found loaded: path, addresses, build-id */
	TPROF_BLK_MODULE_END = 10, /* a module was unloaded (dlclose) */
	TPROF_BLK_ZEVENTS = 11,   /* an EVENTS payload compressed with zstd */
	TPROF_BLK_KERNELS = 12,   /* a run of one thread's kernel calls and annotations */
	TPROF_BLK_NAMES = 13,     /* op and annotation names, each defined before its first use */
	TPROF_BLK_RSS = 14,       /* resident set size samples (version 3) */
	TPROF_BLK_LEAKS = 15,     /* the reachability scan at the process's end (version 5) */
	TPROF_BLK_ZSTACKS = 16,   /* a STACKS payload compressed with zstd (version 8) */
	TPROF_BLK_ZKERNELS = 17,  /* a KERNELS payload compressed with zstd (version 8) */
};

/* The last block type a file of the given version may hold. */
static inline unsigned tprof_block_type_max(unsigned version)
{
	return version >= 8   ? TPROF_BLK_ZKERNELS
	       : version >= 5 ? TPROF_BLK_LEAKS
	       : version >= 3 ? TPROF_BLK_RSS
			      : TPROF_BLK_NAMES;
}

/* ---- leak classification (LEAKS blocks, docs/FORMAT.md) ----
 *
 * What the reachability scan at the process's end made of the blocks live then, in memcheck's
 * terms. LEAKS payload: u8 part, then
 *   part 0 (blocks): varint count, then count entries, by increasing address: varint address minus
 *     the previous entry's (of any earlier part 0 block; 0 before the first), varint size, u8 kind
 *     (bits 0-1, enum tprof_leak_kind) | heuristic << 2 (enum tprof_leak_heuristic), and for a
 *     definitely lost block varint indirect bytes (of the blocks lost through it); or the kind byte
 *     TPROF_LEAKS_LATE alone: a block allocated after the scan by a thread still running then, which
 *     has no kind. Blocks not listed are still reachable through a start pointer. The entries and the
 *     summary describe the blocks in use when the process ended.
 *   part 1 (summary, once, after every part 0): varint status (enum tprof_leak_status), varint errno,
 *     varint the end reason that asked for the scan, varint live blocks, varint live bytes (both as
 *     the scan saw them: a reader checks them against its own replay), varint entries listed,
 *     varint threads stopped, varint threads that did not stop, varint scan nanoseconds, varint
 *     root bytes read, varint block bytes read.
 * A trace without a summary was not classified: the process was killed or exec'd, the scan was
 * turned off (TPROF_LEAKSCAN=0), or the recorder could not finish it. */
enum tprof_leak_kind {
	TPROF_LEAK_REACHABLE = 0,
	TPROF_LEAK_POSSIBLE = 1,
	TPROF_LEAK_INDIRECT = 2,
	TPROF_LEAK_DEFINITE = 3,
};
enum tprof_leak_heuristic {
	TPROF_LEAK_HEUR_NONE = 0,
	TPROF_LEAK_HEUR_STDSTRING = 1,
	TPROF_LEAK_HEUR_LENGTH64 = 2,
	TPROF_LEAK_HEUR_NEWARRAY = 3,
	TPROF_LEAK_HEUR_MULTIPLE_INHERITANCE = 4,
	TPROF_LEAK_HEUR_MAX = 4,
};
enum tprof_leak_status {
	TPROF_LEAKS_OK = 0,         /* every live block classified */
	TPROF_LEAKS_UNREADABLE = 1, /* the recorder may not read the process's memory (errno says why) */
	TPROF_LEAKS_GONE = 2,       /* the process ended during the scan */
	TPROF_LEAKS_NOMEM = 3,      /* the recorder ran out of memory */
	TPROF_LEAKS_STATUS_MAX = 3,
};
#define TPROF_LEAKS_LATE 0x20u /* an entry's kind byte: allocated after the scan, no kind */
#define TPROF_LEAKS_PART_BLOCKS 0
#define TPROF_LEAKS_PART_SUMMARY 1

/* ---- resident set size samples (RSS blocks, docs/FORMAT.md) ----
 *
 * RSS payload: varint count (>= 1), then count samples in time order: the first as varint tick and
 * varint bytes, each later one as varint tick - previous tick and svarint bytes - previous bytes.
 * Each block decodes on its own; a block's first tick is not earlier than the previous block's
 * last. bytes is the resident set size (resident pages times the page size). */
#define TPROF_RSS_BLOCK_MAX 64 /* samples per block the recorder writes (readers take any count) */

/* ---- kernel calls and annotations (KERNELS and NAMES blocks, docs/FORMAT.md) ----
 *
 * KERNELS payload: varint tid, varint count, then count records, each starting with a u8 type.
 * Ticks are svarint deltas against the previous record's tick in the block (0 before the first).
 *   TPROF_KREC_CALL:  varint op, svarint enter tick delta, varint duration (ticks), varint flops,
 *                     varint bytes, varint nshape (at most TPROF_KSHAPE_MAX), nshape svarints
 *   TPROF_KREC_ANNOT: varint annotation kind, varint seq, svarint tick delta, varint name id (0: none),
 *                     svarint value
 * NAMES payload: varint count, then count entries: varint space, varint id, string name, string
 * detail (ops: the comma-separated names of the shape values; annotations: empty). */
enum tprof_krec_type {
	TPROF_KREC_CALL = 1,
	TPROF_KREC_ANNOT = 2,
};
#define TPROF_KSHAPE_MAX 16

enum tprof_annot_kind {
	TPROF_ANNOT_PUSH = 1,  /* a named range begins (tprof_range_push) */
	TPROF_ANNOT_POP = 2,   /* the innermost open range of the thread ends (tprof_range_pop) */
	TPROF_ANNOT_STEP = 3,  /* an iteration boundary (tprof_step) */
	TPROF_ANNOT_MARK = 4,  /* an instant (tprof_mark) */
	TPROF_ANNOT_PARAM = 5, /* a named number the program reports (tprof_param), e.g. "params" */
	TPROF_ANNOT_API_MAX = 5, /* the kinds a program can record; the ones below libtprof.so records */
	/* OpenMP parallel regions (version 5), value = the region's number in the process (1, 2, ...):
	 * FORK on the thread that opens it, just before the runtime starts its threads; BEGIN and END
	 * on each thread that runs its body, the opening one included, around that body. */
	TPROF_ANNOT_OMP_FORK = 6,
	TPROF_ANNOT_OMP_BEGIN = 7,
	TPROF_ANNOT_OMP_END = 8,
	TPROF_ANNOT_KIND_MAX = 8,
};

enum tprof_name_space {
	TPROF_NAMES_OP = 0,    /* op ids of KERNELS call records (include/tprof_ops.h numbering) */
	TPROF_NAMES_ANNOT = 1, /* name ids of annotation records */
};
#define TPROF_NAME_MAX 63 /* longer annotation names are cut */

/* STACKS entry flags */
#define TPROF_STACK_TRUNCATED 0x1u /* the stack was deeper than the recorder's depth limit */

/* Event kinds, one per wrapped entry point. Values are stable: they are in files. */
enum tprof_event_kind {
	TPROF_EV_MALLOC = 1,
	TPROF_EV_CALLOC = 2,
	TPROF_EV_REALLOC = 3,
	TPROF_EV_REALLOCARRAY = 4,
	TPROF_EV_FREE = 5,
	TPROF_EV_POSIX_MEMALIGN = 6,
	TPROF_EV_ALIGNED_ALLOC = 7,
	TPROF_EV_MEMALIGN = 8,
	TPROF_EV_VALLOC = 9,
	TPROF_EV_PVALLOC = 10,
	TPROF_EV_KIND_MAX = 10,
};


enum tprof_clock_id {
	TPROF_CLOCK_TSC = 1,       /* raw rdtsc ticks, converted through CLOCK blocks */
	TPROF_CLOCK_MONOTONIC = 2, /* CLOCK_MONOTONIC nanoseconds */
};

/* INFO flags */
#define TPROF_INFO_LOSSY 0x1u /* TPROF_LOSSY=1: full rings dropped events instead of waiting */
/* Version 4 INFO ends with one more string: the module whose malloc the program's calls reach when
 * it is not libtprof.so (the executable defines malloc itself, or another allocator was preloaded
 * ahead of it), empty when the calls are intercepted. */

/* END reasons */
enum tprof_end_reason {
	TPROF_END_EXIT = 1,   /* exit() or return from main: library destructors ran */
	TPROF_END__EXIT = 2,  /* _exit()/_Exit() called directly */
	TPROF_END_SIGNAL = 3, /* a fatal signal with default action; value = signal number */
	TPROF_END_EXEC = 4,   /* the image was replaced by exec; value = 0 */
	TPROF_END_QUICK_EXIT = 5, /* quick_exit(); value = status (version 4) */
	TPROF_END_VANISHED = 6,   /* gone without an exit call the recorder saw: the raw exit system
				   * call, or a signal it could not learn; value = 0 (version 4) */
};

/* Version 4 END ends with one more varint of flags: */
#define TPROF_ENDF_INFLIGHT 0x1u /* a heap call may be missing, so the trace is not complete: a
				  * thread was inside a heap call when the process ended (before
				  * version 10), or a signal handler's call had returned while its
				  * event waited for the call it interrupted (version 10) */
#define TPROF_ENDF_RESERVE 0x2u  /* version 6: memory for call stacks or a thread's ring could not
				  * be reserved (an address space, locked memory or file size limit) */
#define TPROF_ENDF_SECCOMP 0x4u  /* version 7: the process installed a seccomp filter, after which
				  * tprof made no call it might forbid: no scan at the end, no resident
				  * size at the end, stacks walked only over pages checked before */
#define TPROF_ENDF_INCALL 0x8u   /* version 10: a thread was inside a heap call when the process
				  * ended (another thread's exit, a signal): the call never returned to
				  * the program (its event is in only if it was recorded by then); the
				  * trace is still complete */
#define TPROF_ENDF_NEW_UNHOOKED 0x10u /* version 11: C++ operator new and delete were an allocator's
				       * that serves them without malloc (one preloaded after
				       * libtprof.so): they are not in the trace */
#define TPROF_ENDF_DEEPBIND 0x20u     /* version 11: a library was loaded with RTLD_DEEPBIND: its
				       * heap calls reached the C library's directly, not in the trace */

static inline const char *tprof_event_name(unsigned kind)
{
	static const char *const names[] = {
		"?",       "malloc",         "calloc",        "realloc",  "reallocarray", "free",
		"posix_memalign", "aligned_alloc", "memalign", "valloc",       "pvalloc",
	};
	return kind <= TPROF_EV_KIND_MAX ? names[kind] : "?";
}

/* ---- encoding: callers guarantee room (at most 10 bytes per varint) ---- */

static inline uint8_t *tprof_put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	return p + 2;
}

static inline uint8_t *tprof_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	return p + 4;
}

static inline uint8_t *tprof_put_varint(uint8_t *p, uint64_t v)
{
	if (v < 0x80) { /* the common cases first: small deltas */
		*p = (uint8_t)v;
		return p + 1;
	}
	if (v < 0x4000) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)(v >> 7);
		return p + 2;
	}
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static inline uint64_t tprof_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t tprof_unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline uint8_t *tprof_put_svarint(uint8_t *p, int64_t v)
{
	return tprof_put_varint(p, tprof_zigzag(v));
}

/* ---- decoding: every getter checks bounds and returns 0 on success, -1 on overrun/overlong ---- */

struct tprof_cursor {
	const uint8_t *p, *end;
};

static inline int tprof_get_u8(struct tprof_cursor *c, uint8_t *out)
{
	if (c->p >= c->end)
		return -1;
	*out = *c->p++;
	return 0;
}

static inline uint16_t tprof_load_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t tprof_load_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline int tprof_get_varint(struct tprof_cursor *c, uint64_t *out)
{
	if (c->p < c->end && *c->p < 0x80) { /* the common case: one byte */
		*out = *c->p++;
		return 0;
	}
	if (c->end - c->p >= 2 && c->p[1] < 0x80) { /* then two (sizes, distances) */
		*out = (uint64_t)(c->p[0] & 0x7f) | (uint64_t)c->p[1] << 7;
		c->p += 2;
		return 0;
	}
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (c->p >= c->end)
			return -1;
		uint8_t b = *c->p++;
		if (shift == 63 && b > 1)
			return -1; /* more than 64 bits */
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return 0;
		}
	}
	return -1;
}

static inline int tprof_get_svarint(struct tprof_cursor *c, int64_t *out)
{
	uint64_t v;
	if (tprof_get_varint(c, &v))
		return -1;
	*out = tprof_unzigzag(v);
	return 0;
}

/* A string is a varint length then that many bytes (no terminator). *s points into the buffer. */
static inline int tprof_get_string(struct tprof_cursor *c, const char **s, size_t *len)
{
	uint64_t n;
	if (tprof_get_varint(c, &n) || n > (uint64_t)(c->end - c->p))
		return -1;
	*s = (const char *)c->p;
	*len = (size_t)n;
	c->p += n;
	return 0;
}

/* ---- event records (inside EVENTS blocks) ----
 *
 * An EVENTS payload stores its records column by column: each field of a record goes to the
 * stream of its kind (head bytes, sequence deltas, tick deltas, sizes, stack deltas, pointers), so
 * that zstd finds the regularities of each field. Fields are delta-encoded against the previous
 * record of the same block (struct tprof_rec_state), and pointers may instead name a recent
 * allocation or free of the same block by distance (the usual pattern: a block freed a while after
 * it was allocated, or reused just after it was freed). docs/FORMAT.md has the full layout. */

enum tprof_stream {
	TPROF_S_HEAD = 0,  /* u8 per record */
	TPROF_S_SEQ = 1,   /* varint seq - previous seq - 1 (absent with SEQ_NEXT); realloc: seq2 too */
	TPROF_S_TICK = 2,  /* svarint tick - previous stated tick (absent with NO_TICK); realloc: tick2 */
	TPROF_S_SIZE = 3,  /* varint requested size, allocations only */
	TPROF_S_STACK = 4, /* svarint stack - previous stack (allocations without SAME_STACK) */
	TPROF_S_PTR = 5,   /* svarint ptr - previous ptr, or varint distance (PTR_HIST); realloc: old */
	TPROF_NSTREAMS = 6,
};

/* Head byte: kind in the low 4 bits, then flags. */
#define TPROF_REC_KIND_MASK 0x0fu
#define TPROF_REC_SEQ_NEXT 0x10u   /* seq is the previous seq + 1 */
#define TPROF_REC_SAME_STACK 0x20u /* allocations: the stack of the previous allocation record */
#define TPROF_REC_NO_TICK 0x40u    /* not measured: the reader interpolates (not for reallocs) */
#define TPROF_REC_PTR_HIST 0x80u   /* ptr given by distance in the history (not for reallocs) */

/* Pointer histories: the last TPROF_PTR_HIST blocks returned by allocations and the last passed to
 * free, in this EVENTS block. A free names its block by how many allocations ago it was returned;
 * an allocation names its block by how many frees ago it was freed, or (distance 0) as the block
 * its size class predicts: allocators keep freed blocks in last-in first-out lists per size class,
 * so a model of those lists (blocks whose size is known, in 16-byte classes up to 4 KiB, 8 deep)
 * usually names the block an allocation gets. */
#define TPROF_PTR_HIST 256u
#define TPROF_CLASSES 257u
#define TPROF_CLASS_DEPTH 8u

/* The size class of a request: glibc's chunk size / 16 (16-byte steps, 32 bytes at least), or 0
 * for sizes the model does not track. */
static inline uint32_t tprof_size_class(uint64_t size)
{
	if (size > 4072)
		return 0;
	uint64_t chunk = (size + 8 + 15) & ~(uint64_t)15;
	return (uint32_t)(chunk < 32 ? 2 : chunk >> 4);
}

/* One record, decoded. Realloc records carry the second half (seq2, tick2: after the call) and the
 * old pointer; other kinds leave those zero. free records have size 0 and stack 0. */
struct tprof_rec {
	unsigned kind;
	int no_tick;    /* tick not measured; decode: tick must be interpolated by the caller */
	uint32_t stack; /* allocations: stack id (0: none); free: 0 */
	uint64_t seq, tick, size, ptr;
	uint64_t old_ptr, seq2, tick2;
	uint32_t hist_dist; /* decode: a free named by its distance in the allocation history (1..),
			     * i.e. the allocation record that pushed its block there; else 0 */
};

/* The running values records are coded against; starts as the EVENTS block header says (base seq,
 * base tick), everything else zero. */
struct tprof_rec_state {
	uint64_t seq, tick, ptr;
	uint32_t stack;
	uint32_t nalloc, nfree; /* pushes into the histories so far */
	uint64_t alloc_hist[TPROF_PTR_HIST], free_hist[TPROF_PTR_HIST];
	uint16_t alloc_cls[TPROF_PTR_HIST]; /* the size class of each alloc_hist entry (0: none) */
	/* per-class lists as rings: the list of class c holds cls[c] & 0xff entries, its newest at
	 * class_ptr[c][((cls[c] >> 8) - 1) % TPROF_CLASS_DEPTH] (a top counting pushes mod 256); a push
	 * onto a full list overwrites the oldest. Count and top are one 16-bit word, read and written
	 * whole: the records of a storm read them just after the previous record wrote them, and a
	 * load that spans two byte stores waits for both to reach the cache */
	uint16_t cls[TPROF_CLASSES];
	uint64_t class_ptr[TPROF_CLASSES][TPROF_CLASS_DEPTH];
};

#define TPROF_REC_MAX_BYTES 81 /* over all streams: head + 8 varints */

static inline int tprof_kind_is_realloc(unsigned kind)
{
	return kind == TPROF_EV_REALLOC || kind == TPROF_EV_REALLOCARRAY;
}

static inline void tprof_rec_state_init(struct tprof_rec_state *st, uint64_t seq, uint64_t tick)
{
	st->seq = seq;
	st->tick = tick;
	st->ptr = 0;
	st->stack = 0;
	st->nalloc = st->nfree = 0;
	__builtin_memset(st->cls, 0, sizeof(st->cls));
}

/* The newest block of class c's list (c != 0), or 0 when the list is empty. */
static inline uint64_t tprof_class_top(const struct tprof_rec_state *st, uint32_t c)
{
	uint16_t l = st->cls[c];
	return l & 0xff ? st->class_ptr[c][(uint8_t)((l >> 8) - 1) % TPROF_CLASS_DEPTH] : 0;
}

/* The block the class lists predict for an allocation of class c (tprof_size_class), or 0. */
static inline uint64_t tprof_class_predict(const struct tprof_rec_state *st, uint32_t c)
{
	return c ? tprof_class_top(st, c) : 0;
}

/* After a record: the histories and class lists, in the same order on both sides. freed_cls: the
 * size class of the block a free released when the record named it from the history, else 0.
 * predicted: an allocation whose block is its class list's newest (tprof_class_predict), which it
 * takes off the list; otherwise the list is looked at. c: an allocation's size class (the caller
 * has it already). Always inlined: called once per record on both sides, a call would cost more
 * than the work. */
static inline __attribute__((always_inline)) void tprof_rec_push(struct tprof_rec_state *st,
								 const struct tprof_rec *r, uint32_t freed_cls,
								 int predicted, uint32_t c)
{
	if (r->kind == TPROF_EV_FREE) {
		if (!r->ptr)
			return;
		st->free_hist[st->nfree++ % TPROF_PTR_HIST] = r->ptr;
		c = freed_cls;
		if (c) {
			uint16_t l = st->cls[c];
			st->class_ptr[c][(l >> 8) % TPROF_CLASS_DEPTH] = r->ptr;
			st->cls[c] = (uint16_t)(l + 0x100 + ((l & 0xff) < TPROF_CLASS_DEPTH));
		}
		return;
	}
	if (tprof_kind_is_realloc(r->kind) && r->old_ptr)
		st->free_hist[st->nfree++ % TPROF_PTR_HIST] = r->old_ptr;
	if (r->ptr) {
		if (c && (predicted || tprof_class_top(st, c) == r->ptr))
			st->cls[c] = (uint16_t)(st->cls[c] - 0x101); /* count and top one less */
		st->alloc_cls[st->nalloc % TPROF_PTR_HIST] = (uint16_t)c;
		st->alloc_hist[st->nalloc++ % TPROF_PTR_HIST] = r->ptr;
	}
}

/* The encoder's index of the histories: a small two-way table per history from a pointer's hash to
 * the last pushes (number + 1; 0: none) of pointers with that hash, two per hash. The history entry
 * a push made says whether it was this pointer, so the table holds no pointers: 4 KiB each, which
 * leaves the first-level cache to the histories and class lists. Two ways, not one: a pointer
 * whose slot a later push took is not found, and its record is coded in full (and the writer's
 * live-block table takes the pair, a cache miss in a large table: leakscan.h); with one way that
 * befell one free in 16 of a storm of 64 live blocks, with two one in a hundred. Only the writer
 * needs it; readers never do. */
#define TPROF_PTR_MAP 1024u
struct tprof_rec_encoder {
	struct tprof_rec_state st;
	uint32_t amap[TPROF_PTR_MAP], fmap[TPROF_PTR_MAP];
};

static inline void tprof_rec_encoder_init(struct tprof_rec_encoder *e, uint64_t seq, uint64_t tick)
{
	tprof_rec_state_init(&e->st, seq, tick);
	__builtin_memset(e->amap, 0, sizeof(e->amap));
	__builtin_memset(e->fmap, 0, sizeof(e->fmap));
}

/* A map entry: the push number + 1 (0: none) in its low 22 bits (a block holds fewer than 2^21
 * records), and 10 more bits of the pointer's hash above them (the tag), which tell which of the
 * two slots may be the pointer's without reading the history: one history read per look-up. */
#define TPROF_PTR_PUSH_MASK 0x3fffffu

/* The first of the two slots of p's hash, and its tag. */
static inline uint32_t tprof_ptr_slot(uint64_t p, uint32_t *tag)
{
	uint64_t h = (p >> 4) * 0x9e3779b97f4a7c15ull;
	*tag = (uint32_t)(h >> 45) & 0x3ffu;
	return (uint32_t)(h >> 55) << 1; /* 9 bits: 512 pairs */
}

/* The map entry of the two at s whose tag is tag (0: neither). */
static inline uint32_t tprof_ptr_pick(const uint32_t *map, uint32_t s, uint32_t tag)
{
	uint32_t e0 = map[s], e1 = map[s + 1];
	return (e0 >> 22) == tag && (e0 & TPROF_PTR_PUSH_MASK) ? e0 : (e1 >> 22) == tag ? e1 : 0;
}

/* Distance (1..TPROF_PTR_HIST) of p's latest push in a history through its map, or 0 when it is
 * not there (or a pointer of the same hash and tag took its slot). */
static inline uint32_t tprof_ptr_find(const uint32_t *map, const uint64_t *hist, uint32_t pushes, uint64_t p)
{
	uint32_t tag, s = tprof_ptr_slot(p, &tag);
	uint32_t at = tprof_ptr_pick(map, s, tag) & TPROF_PTR_PUSH_MASK;
	if (at == 0)
		return 0;
	uint32_t d = pushes - (at - 1);
	if (d == 0 || d > TPROF_PTR_HIST || hist[(at - 1) % TPROF_PTR_HIST] != p)
		return 0;
	return d;
}

/* Before push number pushes of p into the history: the slot of p's tag (its earlier push, so
 * that the latest is the one found), else the older of the two. */
static inline void tprof_ptr_note(uint32_t *map, uint32_t pushes, uint64_t p)
{
	uint32_t tag, s = tprof_ptr_slot(p, &tag);
	uint32_t e0 = map[s], e1 = map[s + 1];
	int w0 = (e0 >> 22) == tag && (e0 & TPROF_PTR_PUSH_MASK);
	int w1 = (e1 >> 22) == tag && (e1 & TPROF_PTR_PUSH_MASK);
	uint32_t w = w0 ? s : w1 ? s + 1 : (e0 & TPROF_PTR_PUSH_MASK) <= (e1 & TPROF_PTR_PUSH_MASK) ? s : s + 1;
	map[w] = tag << 22 | (pushes + 1);
}

/* Appends record r to the streams (each out[i] advances). r->seq > previous seq; for reallocs
 * r->seq2 > r->seq and r->no_tick is ignored. Returns, for a free that names its block by distance
 * in the allocation history, that distance (the record that allocated it made push number
 * e->st.nalloc - distance, counted from 0 since tprof_rec_encoder_init), else 0. */
static inline uint32_t tprof_rec_encode(uint8_t *out[TPROF_NSTREAMS], struct tprof_rec_encoder *e,
				    const struct tprof_rec *r)
{
	struct tprof_rec_state *st = &e->st;
	int alloc = r->kind != TPROF_EV_FREE, re = tprof_kind_is_realloc(r->kind);
	uint8_t head = (uint8_t)r->kind;
	uint32_t dist = 0;
	if (r->seq == st->seq + 1)
		head |= TPROF_REC_SEQ_NEXT;
	if (alloc && r->stack == st->stack)
		head |= TPROF_REC_SAME_STACK;
	if (r->no_tick && !re)
		head |= TPROF_REC_NO_TICK;
	int hist = 0;
	uint32_t freed_cls = 0, c = alloc ? tprof_size_class(r->size) : 0;
	if (!re && r->ptr) {
		if (r->kind == TPROF_EV_FREE) {
			dist = tprof_ptr_find(e->amap, st->alloc_hist, st->nalloc, r->ptr);
			hist = dist != 0;
			if (hist)
				freed_cls = st->alloc_cls[(st->nalloc - dist) % TPROF_PTR_HIST];
		} else if (tprof_class_predict(st, c) == r->ptr) {
			hist = 1; /* distance 0 */
		} else {
			dist = tprof_ptr_find(e->fmap, st->free_hist, st->nfree, r->ptr);
			hist = dist != 0;
		}
		if (hist)
			head |= TPROF_REC_PTR_HIST;
	}
	*out[TPROF_S_HEAD]++ = head;
	if (!(head & TPROF_REC_SEQ_NEXT))
		out[TPROF_S_SEQ] = tprof_put_varint(out[TPROF_S_SEQ], r->seq - st->seq - 1);
	if (!(head & TPROF_REC_NO_TICK)) {
		out[TPROF_S_TICK] = tprof_put_svarint(out[TPROF_S_TICK], (int64_t)(r->tick - st->tick));
		st->tick = r->tick;
	}
	if (alloc) {
		out[TPROF_S_SIZE] = tprof_put_varint(out[TPROF_S_SIZE], r->size);
		if (!(head & TPROF_REC_SAME_STACK))
			out[TPROF_S_STACK] = tprof_put_svarint(out[TPROF_S_STACK], (int64_t)r->stack - (int64_t)st->stack);
		st->stack = r->stack;
	}
	if (hist) {
		out[TPROF_S_PTR] = tprof_put_varint(out[TPROF_S_PTR], dist);
	} else {
		out[TPROF_S_PTR] = tprof_put_svarint(out[TPROF_S_PTR], (int64_t)(r->ptr - st->ptr));
		st->ptr = r->ptr;
	}
	st->seq = r->seq;
	if (re) {
		out[TPROF_S_PTR] = tprof_put_svarint(out[TPROF_S_PTR], (int64_t)(r->old_ptr - r->ptr));
		out[TPROF_S_SEQ] = tprof_put_varint(out[TPROF_S_SEQ], r->seq2 - r->seq - 1);
		out[TPROF_S_TICK] = tprof_put_svarint(out[TPROF_S_TICK], (int64_t)(r->tick2 - r->tick));
		st->seq = r->seq2;
		st->tick = r->tick2;
	}
	/* histories and their maps */
	if (r->kind == TPROF_EV_FREE || (re && r->old_ptr)) {
		uint64_t p = r->kind == TPROF_EV_FREE ? r->ptr : r->old_ptr;
		if (p)
			tprof_ptr_note(e->fmap, st->nfree, p);
	}
	if (r->kind != TPROF_EV_FREE && r->ptr)
		tprof_ptr_note(e->amap, st->nalloc, r->ptr);
	tprof_rec_push(st, r, freed_cls, alloc && hist && dist == 0, c);
	return r->kind == TPROF_EV_FREE && hist ? dist : 0;
}

/* Reads one record from the stream cursors; 0 on success, -1 when it is malformed (overrun,
 * unknown kind, flags a kind cannot have, sequence numbers that do not increase, a distance
 * outside the history, a stack id out of range). A NO_TICK record has no_tick set and tick 0. */
static inline int tprof_rec_decode(struct tprof_cursor in[TPROF_NSTREAMS], struct tprof_rec_state *st,
				   struct tprof_rec *r)
{
	uint8_t head;
	uint64_t u = 0;
	int64_t d;
	if (tprof_get_u8(&in[TPROF_S_HEAD], &head))
		return -1;
	r->kind = head & TPROF_REC_KIND_MASK;
	if (r->kind == 0 || r->kind > TPROF_EV_KIND_MAX)
		return -1;
	int alloc = r->kind != TPROF_EV_FREE, re = tprof_kind_is_realloc(r->kind);
	if ((!alloc && (head & TPROF_REC_SAME_STACK)) || (re && (head & (TPROF_REC_NO_TICK | TPROF_REC_PTR_HIST))))
		return -1;
	if (!(head & TPROF_REC_SEQ_NEXT) && tprof_get_varint(&in[TPROF_S_SEQ], &u))
		return -1;
	r->seq = st->seq + 1 + u;
	if (r->seq <= st->seq)
		return -1;
	r->no_tick = (head & TPROF_REC_NO_TICK) != 0;
	r->tick = 0;
	if (!r->no_tick) {
		if (tprof_get_svarint(&in[TPROF_S_TICK], &d))
			return -1;
		r->tick = st->tick + (uint64_t)d;
		st->tick = r->tick;
	}
	r->size = 0;
	r->stack = 0;
	uint32_t c = 0;
	if (alloc) {
		if (tprof_get_varint(&in[TPROF_S_SIZE], &r->size))
			return -1;
		c = tprof_size_class(r->size);
		if (head & TPROF_REC_SAME_STACK) {
			r->stack = st->stack;
		} else {
			if (tprof_get_svarint(&in[TPROF_S_STACK], &d))
				return -1;
			int64_t s = (int64_t)st->stack + d;
			if (s < 0 || s > 0xffffffffll)
				return -1;
			r->stack = (uint32_t)s;
		}
		st->stack = r->stack;
	}
	uint32_t freed_cls = 0;
	int predicted = 0;
	r->hist_dist = 0;
	if (head & TPROF_REC_PTR_HIST) { /* a free names an allocation, an allocation a free */
		uint32_t pushes = alloc ? st->nfree : st->nalloc;
		const uint64_t *hist = alloc ? st->free_hist : st->alloc_hist;
		if (tprof_get_varint(&in[TPROF_S_PTR], &u) || u > TPROF_PTR_HIST || u > pushes)
			return -1;
		if (u == 0) { /* the class lists' prediction */
			if (!alloc || !(r->ptr = tprof_class_predict(st, c)))
				return -1;
			predicted = 1;
		} else {
			r->ptr = hist[(pushes - u) % TPROF_PTR_HIST];
			if (!alloc) {
				freed_cls = st->alloc_cls[(pushes - u) % TPROF_PTR_HIST];
				r->hist_dist = (uint32_t)u;
			}
		}
	} else {
		if (tprof_get_svarint(&in[TPROF_S_PTR], &d))
			return -1;
		r->ptr = st->ptr + (uint64_t)d;
		st->ptr = r->ptr;
	}
	r->old_ptr = r->seq2 = r->tick2 = 0;
	st->seq = r->seq;
	if (re) {
		int64_t dold, dt;
		if (tprof_get_svarint(&in[TPROF_S_PTR], &dold) || tprof_get_varint(&in[TPROF_S_SEQ], &u) ||
		    tprof_get_svarint(&in[TPROF_S_TICK], &dt))
			return -1;
		r->old_ptr = r->ptr + (uint64_t)dold;
		r->seq2 = r->seq + 1 + u;
		r->tick2 = r->tick + (uint64_t)dt;
		if (r->seq2 <= r->seq)
			return -1;
		st->seq = r->seq2;
		st->tick = r->tick2;
	}
	tprof_rec_push(st, r, freed_cls, predicted, c);
	return 0;
}

/* ---- CRC-32C (Castagnoli), reflected, init and final xor 0xffffffff ---- */

static inline uint32_t tprof_crc32c_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82f63b78u & -(crc & 1u));
	}
	return crc;
}

/* The product a * b of two polynomials in the CRC's reflected form (bit 31: x^0), modulo the
 * CRC-32C polynomial. The register after n more zero bytes is its product with x^(8n) mod P. */
static inline uint32_t tprof_crc32c_mulmod(uint32_t a, uint32_t b)
{
	uint32_t prod = 0;
	for (int i = 31; i >= 0; i--) {
		prod ^= b & -((a >> i) & 1u);
		b = (b >> 1) ^ (0x82f63b78u & -(b & 1u));
	}
	return prod;
}

/* The hardware CRC runs in three lanes of TPROF_CRC_LANE bytes at once: each instruction waits for
 * its lane's last one, three lanes keep the unit busy. The lanes are joined by the linearity of the
 * CRC: crc(r, A B) = r * x^(8|AB|) xor crc(0, A) * x^(8|B|) xor crc(0, B), all mod P; the two
 * powers are constants (tests/unit/test_codec.c computes them again). */
#define TPROF_CRC_LANE 1024u
#define TPROF_CRC_X_LANE 0xe4172b16u   /* x^(8 * TPROF_CRC_LANE) mod P, reflected */
#define TPROF_CRC_X_2LANES 0x0d65762au /* x^(16 * TPROF_CRC_LANE) mod P, reflected */
_Static_assert(TPROF_CRC_LANE % 8 == 0, "the lanes are read 8 bytes at a time");

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static inline uint32_t tprof_crc32c_hw(uint32_t crc, const uint8_t *p,
									size_t len)
{
	uint64_t c = crc;
	for (; len >= 3 * TPROF_CRC_LANE; len -= 3 * TPROF_CRC_LANE, p += 3 * TPROF_CRC_LANE) {
		uint64_t c1 = 0, c2 = 0;
		for (size_t i = 0; i < TPROF_CRC_LANE; i += 8) {
			uint64_t w0, w1, w2;
			__builtin_memcpy(&w0, p + i, 8);
			__builtin_memcpy(&w1, p + TPROF_CRC_LANE + i, 8);
			__builtin_memcpy(&w2, p + 2 * TPROF_CRC_LANE + i, 8);
			c = __builtin_ia32_crc32di(c, w0);
			c1 = __builtin_ia32_crc32di(c1, w1);
			c2 = __builtin_ia32_crc32di(c2, w2);
		}
		c = tprof_crc32c_mulmod((uint32_t)c, TPROF_CRC_X_2LANES) ^
		    tprof_crc32c_mulmod((uint32_t)c1, TPROF_CRC_X_LANE) ^ (uint32_t)c2;
	}
	for (; len >= 8; len -= 8, p += 8) {
		uint64_t w;
		__builtin_memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	crc = (uint32_t)c;
	while (len--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#endif

/* CRC-32C of data, continuing from crc (pass 0 to start). Uses the SSE4.2 instruction when present. */
static inline uint32_t tprof_crc32c_update(uint32_t crc, const void *data, size_t len)
{
	const uint8_t *p = data;
	crc = ~crc;
#if defined(__x86_64__)
	static int have_hw = -1;
	if (have_hw < 0) {
		__builtin_cpu_init();
		have_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	}
	if (have_hw)
		return ~tprof_crc32c_hw(crc, p, len);
#endif
	return ~tprof_crc32c_sw(crc, p, len);
}

#endif
