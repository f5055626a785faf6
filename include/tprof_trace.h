/* The tprof trace format, version 2: the contract between the recorder (libtprof.so) and the reader
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
#define TPROF_VERSION 2           /* readers reject files of any other version */
#define TPROF_FILE_HEADER_LEN 16  /* magic, u16 version, u16 header length, u32 flags */

/* Every block: u8 type, u32 payload length, u32 CRC-32C of (type byte + payload), payload. */
#define TPROF_BLOCK_HEADER_LEN 9
#define TPROF_BLOCK_MAX_PAYLOAD (16u << 20) /* readers reject longer blocks as corrupt */

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
};

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

/* Record head byte: kind in the low 4 bits; bit 4 set means "seq is the previous seq + 1" and no
 * seq delta follows; bit 5 (allocations only) means "same stack as the previous record that had
 * one" and no stack delta follows. Bits 6..7 are reserved and must be zero. */
#define TPROF_REC_KIND_MASK 0x0fu
#define TPROF_REC_SEQ_NEXT 0x10u
#define TPROF_REC_SAME_STACK 0x20u
#define TPROF_REC_RESERVED 0xc0u

enum tprof_clock_id {
	TPROF_CLOCK_TSC = 1,       /* raw rdtsc ticks, converted through CLOCK blocks */
	TPROF_CLOCK_MONOTONIC = 2, /* CLOCK_MONOTONIC nanoseconds */
};

/* INFO flags */
#define TPROF_INFO_LOSSY 0x1u /* TPROF_LOSSY=1: full rings dropped events instead of waiting */

/* END reasons */
enum tprof_end_reason {
	TPROF_END_EXIT = 1,   /* exit() or return from main: library destructors ran */
	TPROF_END__EXIT = 2,  /* _exit()/_Exit() called directly */
	TPROF_END_SIGNAL = 3, /* a fatal signal with default action; value = signal number */
	TPROF_END_EXEC = 4,   /* the image was replaced by exec; value = 0 */
};

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

/* ---- event records (inside EVENTS blocks) ---- */

/* One record, decoded. Realloc records carry the second half (seq2, tick2: after the call) and the
 * old pointer; other kinds leave those zero. free records have size 0. */
struct tprof_rec {
	unsigned kind;
	uint32_t stack; /* allocations: stack id (0: none); free: 0 */
	uint64_t seq, tick, size, ptr;
	uint64_t old_ptr, seq2, tick2;
};

/* The running values records are delta-encoded against; starts as the EVENTS block header says
 * (base seq, base tick) with ptr 0. */
struct tprof_rec_state {
	uint64_t seq, tick, ptr;
	uint32_t stack;
};

#define TPROF_REC_MAX_BYTES 81 /* head + 8 varints */

static inline int tprof_kind_is_realloc(unsigned kind)
{
	return kind == TPROF_EV_REALLOC || kind == TPROF_EV_REALLOCARRAY;
}

/* Appends r (r->seq > st->seq; for reallocs r->seq2 > r->seq) at p; returns the new end. */
static inline uint8_t *tprof_rec_encode(uint8_t *p, struct tprof_rec_state *st, const struct tprof_rec *r)
{
	uint8_t head = (uint8_t)r->kind;
	int alloc = r->kind != TPROF_EV_FREE;
	if (r->seq == st->seq + 1)
		head |= TPROF_REC_SEQ_NEXT;
	if (alloc && r->stack == st->stack)
		head |= TPROF_REC_SAME_STACK;
	*p++ = head;
	if (!(head & TPROF_REC_SEQ_NEXT))
		p = tprof_put_varint(p, r->seq - st->seq - 1);
	p = tprof_put_svarint(p, (int64_t)(r->tick - st->tick));
	if (alloc) {
		p = tprof_put_varint(p, r->size);
		if (!(head & TPROF_REC_SAME_STACK))
			p = tprof_put_svarint(p, (int64_t)r->stack - (int64_t)st->stack);
		st->stack = r->stack;
	}
	p = tprof_put_svarint(p, (int64_t)(r->ptr - st->ptr));
	st->seq = r->seq;
	st->tick = r->tick;
	st->ptr = r->ptr;
	if (tprof_kind_is_realloc(r->kind)) {
		p = tprof_put_svarint(p, (int64_t)(r->old_ptr - r->ptr));
		p = tprof_put_varint(p, r->seq2 - r->seq - 1);
		p = tprof_put_svarint(p, (int64_t)(r->tick2 - r->tick));
		st->seq = r->seq2;
		st->tick = r->tick2;
	}
	return p;
}

/* Reads one record; 0 on success, -1 when it is malformed (overrun, reserved bits, unknown kind,
 * sequence numbers that do not increase). */
static inline int tprof_rec_decode(struct tprof_cursor *c, struct tprof_rec_state *st, struct tprof_rec *r)
{
	uint8_t head;
	uint64_t u = 0;
	int64_t d;
	if (tprof_get_u8(c, &head) || (head & TPROF_REC_RESERVED))
		return -1;
	r->kind = head & TPROF_REC_KIND_MASK;
	if (r->kind == 0 || r->kind > TPROF_EV_KIND_MAX)
		return -1;
	if (!(head & TPROF_REC_SEQ_NEXT) && tprof_get_varint(c, &u))
		return -1;
	r->seq = st->seq + 1 + u;
	if (r->seq <= st->seq)
		return -1;
	if (tprof_get_svarint(c, &d))
		return -1;
	r->tick = st->tick + (uint64_t)d;
	r->size = 0;
	r->stack = 0;
	if (r->kind == TPROF_EV_FREE) {
		if (head & TPROF_REC_SAME_STACK)
			return -1;
	} else {
		if (tprof_get_varint(c, &r->size))
			return -1;
		if (head & TPROF_REC_SAME_STACK) {
			r->stack = st->stack;
		} else {
			if (tprof_get_svarint(c, &d))
				return -1;
			int64_t s = (int64_t)st->stack + d;
			if (s < 0 || s > 0xffffffffll)
				return -1;
			r->stack = (uint32_t)s;
		}
		st->stack = r->stack;
	}
	if (tprof_get_svarint(c, &d))
		return -1;
	r->ptr = st->ptr + (uint64_t)d;
	r->old_ptr = r->seq2 = r->tick2 = 0;
	st->seq = r->seq;
	st->tick = r->tick;
	st->ptr = r->ptr;
	if (tprof_kind_is_realloc(r->kind)) {
		int64_t dold, dt;
		if (tprof_get_svarint(c, &dold) || tprof_get_varint(c, &u) || tprof_get_svarint(c, &dt))
			return -1;
		r->old_ptr = r->ptr + (uint64_t)dold;
		r->seq2 = r->seq + 1 + u;
		r->tick2 = r->tick + (uint64_t)dt;
		if (r->seq2 <= r->seq)
			return -1;
		st->seq = r->seq2;
		st->tick = r->tick2;
	}
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

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static inline uint32_t tprof_crc32c_hw(uint32_t crc, const uint8_t *p,
									size_t len)
{
	uint64_t c = crc;
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
