/* Unit tests of the reader's handling of what version 4 added and of files cut short
 * (analyzer/trace/): traces built here block by block, plain and zstd-compressed EVENTS blocks
 * among them, are written to a temporary file and opened. INFO's malloc owner (and its absence
 * before version 4), END flags and reasons by version, and every prefix of a trace: an error while
 * INFO is not whole, else the blocks before the cut read, with the right offset and counts, and the
 * same events as the whole file up to there. And the replay of a random three-thread heap history
 * (cross-thread frees, addresses taken again, reallocs; blocks across chunk and block boundaries):
 * heap totals and every temporary allocation as the definitions say, computed here from the
 * history itself, whatever the reader's pairing guessed. */
#include <stdlib.h>
#include <zstd.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

#include "trace/reader.h"
#include "trace/reader_int.h"
#include "analysis/heap.h"
#include "analysis/stacks.h"
#include "base/util.h"
#include "../unittest.h"

#define TID 77

struct buf {
	uint8_t *p;
	size_t n, cap;
	size_t off[64]; /* where each block starts */
	uint32_t records[64]; /* heap records in it */
	size_t nblocks;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 256;
		b->p = xrealloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void put_varint(struct buf *b, uint64_t v)
{
	uint8_t tmp[10];
	put(b, tmp, (size_t)(tprof_put_varint(tmp, v) - tmp));
}

static void put_string(struct buf *b, const char *s)
{
	put_varint(b, strlen(s));
	put(b, s, strlen(s));
}

static void file_header(struct buf *b, unsigned version)
{
	uint8_t h[TPROF_FILE_HEADER_LEN] = {0};
	memcpy(h, TPROF_MAGIC, TPROF_MAGIC_LEN);
	tprof_put_u16(h + 8, (uint16_t)version);
	tprof_put_u16(h + 10, TPROF_FILE_HEADER_LEN);
	put(b, h, sizeof(h));
}

static void block(struct buf *b, uint8_t type, const struct buf *payload, uint32_t records)
{
	uint8_t h[TPROF_BLOCK_HEADER_LEN];
	h[0] = type;
	tprof_put_u32(h + 1, (uint32_t)payload->n);
	tprof_put_u32(h + 5, tprof_crc32c_update(tprof_crc32c_update(0, &type, 1), payload->p, payload->n));
	b->off[b->nblocks] = b->n;
	b->records[b->nblocks++] = records;
	put(b, h, sizeof(h));
	put(b, payload->p, payload->n);
}

/* INFO; owner NULL leaves out the string that version 4 ends it with. */
static void info(struct buf *b, const char *owner)
{
	struct buf p = {0};
	put_varint(&p, TID);
	put_varint(&p, 1);
	put_varint(&p, TPROF_CLOCK_MONOTONIC);
	for (int i = 0; i < 6; i++) /* flags, page size, pointer size, start time, ring, depth */
		put_varint(&p, i == 1 ? 4096 : i == 2 ? 8 : 0);
	put_string(&p, "/bin/prog");
	put_varint(&p, 1);
	put_string(&p, "prog");
	if (owner)
		put_string(&p, owner);
	block(b, TPROF_BLK_INFO, &p, 0);
	free(p.p);
}

/* An EVENTS (or, compressed, ZEVENTS) block of thread tid holding recs[0 .. n), the codec starting
 * from seq0 and tick0. */
static void records_block(struct buf *b, uint32_t tid, const struct tprof_rec *const *recs, size_t n,
			  uint64_t seq0, uint64_t tick0, int compress)
{
	struct tprof_rec_encoder *e = xmalloc(sizeof(*e));
	tprof_rec_encoder_init(e, seq0, tick0);
	uint8_t *streams[TPROF_NSTREAMS], *start[TPROF_NSTREAMS];
	for (int k = 0; k < TPROF_NSTREAMS; k++)
		streams[k] = start[k] = xmalloc(n * TPROF_REC_MAX_BYTES + 16);
	for (size_t i = 0; i < n; i++)
		tprof_rec_encode(streams, e, recs[i]);
	struct buf raw = {0};
	put_varint(&raw, tid);
	put_varint(&raw, n);
	put_varint(&raw, seq0);
	put_varint(&raw, tick0);
	for (int k = 0; k < TPROF_NSTREAMS; k++)
		put_varint(&raw, (uint64_t)(streams[k] - start[k]));
	for (int k = 0; k < TPROF_NSTREAMS; k++)
		put(&raw, start[k], (size_t)(streams[k] - start[k]));
	if (compress) {
		struct buf z = {0};
		put_varint(&z, tid);
		put_varint(&z, raw.n);
		size_t bound = ZSTD_compressBound(raw.n);
		uint8_t *c = xmalloc(bound);
		size_t got = ZSTD_compress(c, bound, raw.p, raw.n, 3);
		CHECK(!ZSTD_isError(got));
		put(&z, c, got);
		block(b, TPROF_BLK_ZEVENTS, &z, (uint32_t)n);
		free(c);
		free(z.p);
	} else {
		block(b, TPROF_BLK_EVENTS, &raw, (uint32_t)n);
	}
	free(raw.p);
	for (int k = 0; k < TPROF_NSTREAMS; k++)
		free(start[k]);
	free(e);
}

/* An EVENTS (or, compressed, ZEVENTS) block of n mallocs with seqs seq0 + 1 .. seq0 + n. */
static void events(struct buf *b, uint64_t seq0, uint32_t n, int compress)
{
	struct tprof_rec *r = xcalloc(n, sizeof(*r));
	const struct tprof_rec **rp = xcalloc(n, sizeof(*rp));
	for (uint32_t i = 0; i < n; i++) {
		r[i] = (struct tprof_rec){.kind = TPROF_EV_MALLOC, .seq = seq0 + 1 + i, .tick = 1000 + seq0 + 1 + i,
					  .size = 32 + i, .ptr = 0x100000 + 0x40 * (seq0 + i)};
		rp[i] = &r[i];
	}
	records_block(b, TID, rp, n, seq0, 1000 + seq0, compress);
	free(rp);
	free(r);
}

static void end(struct buf *b, unsigned version, uint64_t reason, uint64_t value, uint64_t flags, uint64_t records)
{
	struct buf p = {0};
	put_varint(&p, reason);
	put_varint(&p, value);
	put_varint(&p, records + 1);
	put_varint(&p, records);
	for (int i = 0; i < 3; i++)
		put_varint(&p, 0);
	if (version >= 4)
		put_varint(&p, flags);
	block(b, TPROF_BLK_END, &p, 0);
	free(p.p);
}

/* The CLOCK block every test trace has: tick 1000 at CLOCK_MONOTONIC 1000 ns (CLOCK_REALTIME 5). */
static void clock_block(struct buf *b)
{
	struct buf c = {0};
	put_varint(&c, 1000);
	put_varint(&c, 1000);
	put_varint(&c, 5);
	block(b, TPROF_BLK_CLOCK, &c, 0);
	free(c.p);
}

/* b made the start of a version 4 trace: the file header, INFO and CLOCK. */
static void begin(struct buf *b)
{
	memset(b, 0, sizeof(*b));
	file_header(b, 4);
	info(b, "");
	clock_block(b);
}

/* A trace of the given version: INFO, CLOCK, then EVENTS blocks of 3, 5 (compressed), 2 and 7
 * (compressed) mallocs, END. */
static void build(struct buf *b, unsigned version, const char *owner, uint64_t reason, uint64_t value,
		  uint64_t flags)
{
	memset(b, 0, sizeof(*b));
	file_header(b, version);
	info(b, owner);
	clock_block(b);
	static const uint32_t n[] = {3, 5, 2, 7};
	uint64_t seq = 0;
	for (int i = 0; i < 4; i++) {
		events(b, seq, n[i], i % 2);
		seq += n[i];
	}
	end(b, version, reason, value, flags, seq);
}

static char path[64];

/* Writes the first len bytes of b and opens them: 0 and *t, or -1 with err. */
static int open_prefix(const struct buf *b, size_t len, struct tprof_trace **t, char *err, size_t errlen)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(b->p, 1, len, f);
	fclose(f);
	return tprof_trace_open(path, t, err, errlen);
}

static uint64_t count_events(struct tprof_trace *t)
{
	struct tprof_event e;
	uint64_t n = 0;
	int r;
	while ((r = tprof_trace_next(t, &e)) > 0)
		n++;
	CHECK_EQ(r, 0);
	return n;
}

static void test_malloc_owner(void)
{
	struct buf b;
	struct tprof_trace *t;
	char err[512];
	build(&b, 4, "/usr/lib/libjemalloc.so.2", TPROF_END_EXIT, 3, 0);
	CHECK_EQ(open_prefix(&b, b.n, &t, err, sizeof(err)), 0);
	if (t) {
		CHECK_STR(t->info.malloc_owner, "/usr/lib/libjemalloc.so.2");
		CHECK(t->ended && t->complete && !t->cut);
		CHECK_EQ(t->end_value, 3);
		CHECK_EQ(count_events(t), 17);
		tprof_trace_close(t);
	}
	free(b.p);
	build(&b, 4, "", TPROF_END_EXIT, 0, 0);
	CHECK_EQ(open_prefix(&b, b.n, &t, err, sizeof(err)), 0);
	if (t) {
		CHECK_STR(t->info.malloc_owner, "");
		tprof_trace_close(t);
	}
	free(b.p);
	build(&b, 3, NULL, TPROF_END_EXEC, 0, 0); /* no owner field before version 4 */
	CHECK_EQ(open_prefix(&b, b.n, &t, err, sizeof(err)), 0);
	if (t) {
		CHECK_STR(t->info.malloc_owner, "");
		CHECK_EQ(t->end_flags, 0);
		CHECK(t->complete);
		tprof_trace_close(t);
	}
	free(b.p);
	build(&b, 4, NULL, TPROF_END_EXIT, 0, 0); /* version 4 without it */
	CHECK_EQ(open_prefix(&b, b.n, &t, err, sizeof(err)), -1);
	CHECK(strstr(err, "byte 16: corrupt: INFO block without the malloc owner") != NULL);
	free(b.p);
}

static void test_end_flags_and_reasons(void)
{
	struct buf b;
	struct tprof_trace *t;
	char err[512];
	build(&b, 4, "", TPROF_END_SIGNAL, 11, TPROF_ENDF_INFLIGHT);
	CHECK_EQ(open_prefix(&b, b.n, &t, err, sizeof(err)), 0);
	if (t) {
		CHECK(t->ended);
		CHECK(!t->complete);
		CHECK(!t->cut);
		CHECK_EQ(t->end_reason, TPROF_END_SIGNAL);
		CHECK_EQ(t->end_value, 11);
		CHECK_EQ(t->end_flags, TPROF_ENDF_INFLIGHT);
		tprof_trace_close(t);
	}
	free(b.p);
	build(&b, 10, "", TPROF_END_EXIT, 0, TPROF_ENDF_INFLIGHT | TPROF_ENDF_INCALL); /* a deferred call lost */
	CHECK_EQ(open_prefix(&b, b.n, &t, err, sizeof(err)), 0);
	if (t) {
		CHECK(!t->complete);
		CHECK_EQ(t->end_flags, TPROF_ENDF_INFLIGHT | TPROF_ENDF_INCALL);
		tprof_trace_close(t);
	}
	free(b.p);
	static const struct {
		unsigned version;
		uint64_t reason, flags;
		const char *err; /* NULL: reads */
	} cases[] = {
		{4, TPROF_END_QUICK_EXIT, 0, NULL},
		{4, TPROF_END_VANISHED, 0, NULL},
		{4, 7, 0, "corrupt: END block with unknown reason 7 (format version 4 has 1 to 6)"},
		{4, 0, 0, "corrupt: END block with unknown reason 0 (format version 4 has 1 to 6)"},
		{3, TPROF_END_QUICK_EXIT, 0, "corrupt: END block with unknown reason 5 (format version 3 has 1 to 4)"},
		{2, TPROF_END_VANISHED, 0, "corrupt: END block with unknown reason 6 (format version 2 has 1 to 4)"},
		{4, TPROF_END_EXIT, 2, "corrupt: END block with unknown flags 0x2"},
		{9, TPROF_END_EXIT, TPROF_ENDF_INCALL, "corrupt: END block with unknown flags 0x8"},
		{10, TPROF_END_EXIT, TPROF_ENDF_INCALL, NULL}, /* a call never returned: still complete */
		{10, TPROF_END_EXIT, 0x10, "corrupt: END block with unknown flags 0x10"},
		{4, TPROF_END_EXIT, 1ull << 63 | 1, "corrupt: END block with unknown flags 0x8000000000000000"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		build(&b, cases[i].version, cases[i].version >= 4 ? "" : NULL, cases[i].reason, 0, cases[i].flags);
		int rc = open_prefix(&b, b.n, &t, err, sizeof(err));
		if (cases[i].err) {
			CHECK_EQ(rc, -1);
			char want[256];
			snprintf(want, sizeof(want), "byte %zu: %s", b.off[b.nblocks - 1], cases[i].err);
			if (!strstr(err, want))
				printf("# case %zu: %s\n", i, err);
			CHECK(strstr(err, want) != NULL);
		} else {
			CHECK_EQ(rc, 0);
			if (t) {
				CHECK(t->complete);
				CHECK_EQ(t->end_reason, cases[i].reason);
				tprof_trace_close(t);
			}
		}
		free(b.p);
	}
}

/* Every prefix of the file: an error until INFO is whole; then the blocks before the cut read,
 * the cut at the start of the block the file ends in, with the records of the EVENTS blocks before
 * it counted (compressed ones included), and those events read. */
static void test_every_prefix(void)
{
	struct buf b;
	build(&b, 4, "", TPROF_END_EXIT, 0, 0);
	char err[512];
	for (size_t len = 0; len <= b.n; len++) {
		struct tprof_trace *t = NULL;
		int rc = open_prefix(&b, len, &t, err, sizeof(err));
		if (len < b.off[1]) {
			CHECK_EQ(rc, -1);
			if (len > b.off[0] && !strstr(err, "byte 16: truncated: no complete INFO block")) {
				printf("# %zu: %s\n", len, err);
				CHECK(0);
			}
			continue;
		}
		CHECK_EQ(rc, 0);
		if (rc != 0) {
			printf("# %zu: %s\n", len, err);
			continue;
		}
		size_t k = 0; /* the block the prefix ends in (or at) */
		while (k + 1 < b.nblocks && b.off[k + 1] <= len)
			k++;
		int at_boundary = len == b.n || b.off[k] == len;
		if (at_boundary && len != b.n)
			k--; /* ends just before block k + 1: blocks 0..k whole */
		uint64_t before = 0;
		for (size_t i = 0; i < (at_boundary ? k + 1 : k); i++)
			before += b.records[i];
		CHECK_EQ(t->cut, !at_boundary);
		CHECK_EQ(t->complete, len == b.n);
		CHECK_EQ(t->ended, len == b.n);
		if (t->cut) {
			CHECK_EQ(t->cut_at, b.off[k]);
			CHECK_EQ(t->cut_blocks, k);
			CHECK_EQ(t->blocks, k);
			CHECK_EQ(t->cut_events, before);
			CHECK_EQ(t->cut_have, len - b.off[k]);
			uint64_t whole = (k + 1 < b.nblocks ? b.off[k + 1] : b.n) - b.off[k];
			CHECK_EQ(t->cut_want, t->cut_have >= 5 ? whole : 0);
			char note[256], want[96];
			tprof_trace_cut_note(t, note, sizeof(note));
			snprintf(want, sizeof(want), "trace cut at byte %zu after %zu complete blocks: the rest is lost (",
				 b.off[k], k);
			CHECK(strncmp(note, want, strlen(want)) == 0);
		}
		CHECK_EQ(count_events(t), before);
		tprof_trace_close(t);
	}
	free(b.p);
}

/* A cut compressed block that does not decompress to its header is corrupt, not counted as 0. */
static void test_cut_after_bad_zevents(void)
{
	struct buf b;
	build(&b, 4, "", TPROF_END_EXIT, 0, 0);
	/* the second EVENTS block (block 3) is compressed: break its zstd magic, fix its checksum */
	size_t o = b.off[3];
	CHECK_EQ(b.p[o], TPROF_BLK_ZEVENTS);
	uint32_t len = tprof_load_u32(b.p + o + 1);
	uint8_t *pl = b.p + o + TPROF_BLOCK_HEADER_LEN;
	struct tprof_cursor c = {pl, pl + len};
	uint64_t v;
	CHECK_EQ(tprof_get_varint(&c, &v), 0);
	CHECK_EQ(tprof_get_varint(&c, &v), 0);
	size_t zat = (size_t)(c.p - b.p);
	b.p[zat] ^= 0xff;
	uint8_t type = TPROF_BLK_ZEVENTS;
	tprof_put_u32(b.p + o + 5, tprof_crc32c_update(tprof_crc32c_update(0, &type, 1), pl, len));
	struct tprof_trace *t;
	char err[512], want[128];
	/* whole: opens (the block is read when the events are) */
	CHECK_EQ(open_prefix(&b, b.n, &t, err, sizeof(err)), 0);
	if (t)
		tprof_trace_close(t);
	/* cut: counting the events before the cut finds it */
	CHECK_EQ(open_prefix(&b, b.n - 1, &t, err, sizeof(err)), -1);
	snprintf(want, sizeof(want), "byte %zu: corrupt: compressed EVENTS block of thread %d", zat, TID);
	if (!strstr(err, want))
		printf("# %s\n", err);
	CHECK(strstr(err, want) != NULL);
	free(b.p);
}


/* ---- pairing and temporaries over a random history */

#define RT_THREADS 3
#define RT_ADDRS 96

struct rt_rec {
	struct tprof_rec r;
	uint32_t tid;
	int temporary; /* frees and reallocs: whether the block given back is a temporary allocation */
};

/* One thread's records [from, to) of recs (by idx) as an EVENTS (or compressed) block. */
static void rt_block(struct buf *b, const struct rt_rec *recs, const uint32_t *idx, size_t from, size_t to,
		     uint64_t seq0, uint64_t tick0, int compress)
{
	const struct tprof_rec **rp = xcalloc(to - from, sizeof(*rp));
	for (size_t i = from; i < to; i++)
		rp[i - from] = &recs[idx[i]].r;
	records_block(b, recs[idx[from]].tid, rp, to - from, seq0, tick0, compress);
	free(rp);
}

static uint64_t rt_state = 88172645463325252ull;
static uint32_t rt_rand(uint32_t n)
{
	rt_state ^= rt_state << 13;
	rt_state ^= rt_state >> 7;
	rt_state ^= rt_state << 17;
	return (uint32_t)(rt_state % n);
}

/* The history as it is made: each address free or a live block with its thread and allocation's
 * seq; each thread's latest take; the totals. */
struct rt_hist {
	struct {
		int live;
		uint32_t tid;
		uint64_t seq, size;
	} a[RT_ADDRS];
	uint64_t last_take[RT_THREADS], live_bytes, peak, allocs, frees, temporaries;
};

static uint64_t rt_addr(uint32_t k)
{
	return 0x10000 + 0x1000 * (uint64_t)k;
}

/* Thread th gives back the block at k: 1 when it is a temporary allocation. */
static int rt_give(struct rt_hist *h, uint32_t th, uint32_t k)
{
	int temporary = h->a[k].tid == th && h->last_take[th] == h->a[k].seq;
	h->temporaries += (uint64_t)temporary;
	h->a[k].live = 0;
	h->live_bytes -= h->a[k].size;
	h->frees++;
	return temporary;
}

/* Thread th takes a block of size at k, by the event of sequence number seq. */
static void rt_take(struct rt_hist *h, uint32_t th, uint32_t k, uint64_t size, uint64_t seq)
{
	h->a[k].live = 1;
	h->a[k].tid = th;
	h->a[k].seq = seq;
	h->a[k].size = size;
	h->last_take[th] = seq;
	h->live_bytes += size;
	h->peak = h->live_bytes > h->peak ? h->live_bytes : h->peak;
	h->allocs++;
}

static void test_pairing_and_temporaries(void)
{
	enum { N = 20000 };
	struct rt_rec *recs = xcalloc(N, sizeof(*recs));
	static struct rt_hist h;
	uint64_t seq = 0;
	for (size_t i = 0; i < N; i++) {
		struct rt_rec *x = &recs[i];
		uint32_t th = rt_rand(RT_THREADS), k = rt_rand(RT_ADDRS), op = rt_rand(10);
		x->tid = 100 + th;
		x->r.seq = ++seq;
		x->r.tick = 1000 + 10 * seq;
		x->r.no_tick = rt_rand(4) != 0;
		if (!h.a[k].live) { /* an allocation at a free address */
			x->r.kind = op < 6 ? TPROF_EV_MALLOC : op < 8 ? TPROF_EV_CALLOC : TPROF_EV_MEMALIGN;
			x->r.size = 16 + rt_rand(2000);
			x->r.ptr = rt_addr(k);
			rt_take(&h, th, k, x->r.size, seq);
		} else if (op < 7) { /* a free, often of the block this thread took last */
			for (uint32_t j = 0; op < 4 && j < RT_ADDRS; j++)
				if (h.a[j].live && h.a[j].seq == h.last_take[th])
					k = j;
			x->r.kind = TPROF_EV_FREE;
			x->r.ptr = rt_addr(k);
			x->temporary = rt_give(&h, th, k);
		} else { /* a realloc to another free address, or in place */
			uint32_t to = rt_rand(RT_ADDRS);
			if (h.a[to].live)
				to = k;
			x->r.kind = TPROF_EV_REALLOC;
			x->r.old_ptr = rt_addr(k);
			x->r.ptr = rt_addr(to);
			x->r.size = 16 + rt_rand(2000);
			x->r.seq2 = ++seq;
			x->r.tick2 = 1000 + 10 * seq;
			x->temporary = rt_give(&h, th, k);
			rt_take(&h, th, to, x->r.size, seq);
		}
	}
	/* each thread's records in blocks of 1 to 3000, the threads' blocks interleaved in the file */
	struct buf b;
	begin(&b);
	uint32_t *idx[RT_THREADS];
	size_t cnt[RT_THREADS] = {0}, pos[RT_THREADS] = {0};
	uint64_t prev_seq[RT_THREADS] = {0}, prev_tick[RT_THREADS];
	for (int t = 0; t < RT_THREADS; t++) {
		idx[t] = xmalloc(N * sizeof(uint32_t));
		prev_tick[t] = 1000;
	}
	for (size_t i = 0; i < N; i++) {
		uint32_t t = recs[i].tid - 100;
		idx[t][cnt[t]++] = (uint32_t)i;
	}
	int left = 1, nb = 0;
	while (left) {
		left = 0;
		for (int t = 0; t < RT_THREADS; t++) {
			if (pos[t] == cnt[t])
				continue;
			size_t to = pos[t] + 1 + rt_rand(3000);
			if (to > cnt[t])
				to = cnt[t];
			/* a block ends with a measured record */
			struct tprof_rec *lr = &recs[idx[t][to - 1]].r;
			lr->no_tick = 0;
			if (b.nblocks == sizeof(b.off) / sizeof(b.off[0]))
				b.nblocks = 0; /* only the offsets of the first blocks are kept */
			rt_block(&b, recs, idx[t], pos[t], to, prev_seq[t], prev_tick[t], nb++ % 2);
			prev_seq[t] = lr->seq2 ? lr->seq2 : lr->seq;
			prev_tick[t] = lr->seq2 ? lr->tick2 : lr->tick;
			pos[t] = to;
			left |= pos[t] < cnt[t];
		}
	}
	end(&b, 4, TPROF_END_EXIT, 0, 0, N);
	struct tprof_trace *tr;
	char err[512];
	int opened = open_prefix(&b, b.n, &tr, err, sizeof(err));
	if (opened != 0)
		printf("# %s\n", err);
	CHECK_EQ(opened, 0);
	if (opened == 0) {
		struct heap_stats hs;
		struct temporaries tp;
		heap_init(&hs, 1);
		temporaries_init(&tp);
		const struct tprof_event *e;
		uint64_t paired = 0, got_temp = 0, wrong = 0, seen = 0;
		int r;
		while ((r = tprof_trace_next_ref(tr, &e)) > 0) {
			struct heap_change ch;
			heap_step(&hs, e, &ch);
			int tmp = temporaries_step(&tp, e, &ch);
			paired += e->paired && e->kind == TPROF_EV_FREE;
			got_temp += (uint64_t)tmp;
			if (ch.freed_ptr) {
				/* the record of this free: phase 0 of a realloc carries the record's seq */
				const struct rt_rec *x = NULL;
				for (size_t i = seen; i < N && !x; i++)
					if (recs[i].r.seq == e->seq)
						x = &recs[i], seen = i;
				wrong += !x || x->temporary != tmp;
			}
		}
		CHECK_EQ(r, 0);
		CHECK_EQ(wrong, 0);
		CHECK_EQ(got_temp, h.temporaries);
		CHECK_EQ(hs.allocations, h.allocs);
		CHECK_EQ(hs.frees, h.frees);
		CHECK_EQ(hs.peak_bytes, h.peak);
		CHECK_EQ(hs.live_bytes, h.live_bytes);
		/* the history exercises both paths: frees paired within a chunk, and the others */
		CHECK(paired > h.frees / 4 && paired < h.frees);
		CHECK(h.temporaries > h.frees / 10);
		temporaries_free(&tp);
		heap_release(&hs);
		tprof_trace_close(tr);
	}
	for (int t = 0; t < RT_THREADS; t++)
		free(idx[t]);
	free(recs);
	free(b.p);
}

/* Stacks whose frames are equal are one stack, however they were written: two threads may intern
 * the same new stack at once, and a frame may come in a longer varint than it needs (it reads the
 * same). The truncated flag and every frame count. */
static void test_duplicate_stacks(void)
{
	struct buf b;
	begin(&b);
	/* ids 1 to 6: A; A with +5 in two bytes (0x8a 0x00, zigzag 10); A truncated; B; B again; A
	 * with the first frame in a longer form (0x80 0x80 ... 0x00 is not the shortest) */
	static const uint8_t frames[][12] = {
		{0x80, 0xa0, 0x80, 0x02, 0x0a, 0x05},       /* 0x401000, +5, -3 */
		{0x80, 0xa0, 0x80, 0x02, 0x8a, 0x00, 0x05}, /* the same, +5 longer */
		{0x80, 0xa0, 0x80, 0x02, 0x0a, 0x05},       /* truncated */
		{0x80, 0xa0, 0x80, 0x02, 0x0a, 0x07},       /* 0x401000, +5, -4 */
		{0x80, 0xa0, 0x80, 0x02, 0x0a, 0x07},
		{0x80, 0xa0, 0x80, 0x82, 0x00, 0x0a, 0x05}, /* A, its first frame longer */
	};
	static const size_t len[] = {6, 7, 6, 6, 6, 7};
	static const uint32_t expect[] = {1, 1, 3, 4, 4, 1}; /* each id's stack as read */
	struct buf st = {0};
	put_varint(&st, 6);
	for (uint32_t i = 0; i < 6; i++) {
		put_varint(&st, i + 1);
		put_varint(&st, i == 2 ? TPROF_STACK_TRUNCATED : 0);
		put_varint(&st, 3);
		put(&st, frames[i], len[i]);
	}
	block(&b, TPROF_BLK_STACKS, &st, 0);
	free(st.p);
	struct tprof_rec r[6];
	const struct tprof_rec *rp[6];
	for (uint32_t i = 0; i < 6; i++) {
		r[i] = (struct tprof_rec){.kind = TPROF_EV_MALLOC, .stack = i + 1, .seq = i + 1, .tick = 1001 + i,
					  .size = 32, .ptr = 0x100000 + 0x40 * i};
		rp[i] = &r[i];
	}
	records_block(&b, TID, rp, 6, 0, 1000, 0);
	end(&b, 4, TPROF_END_EXIT, 0, 0, 6);
	struct tprof_trace *t;
	char err[512];
	int opened = open_prefix(&b, b.n, &t, err, sizeof(err));
	if (opened != 0)
		printf("# %s\n", err);
	CHECK_EQ(opened, 0);
	if (opened == 0) {
		struct tprof_event e;
		uint32_t got[6] = {0}, n = 0;
		while (tprof_trace_next(t, &e) > 0 && n < 6)
			got[n++] = e.stack;
		CHECK_EQ(n, 6);
		for (uint32_t i = 0; i < 6; i++) {
			if (got[i] != got[expect[i] - 1])
				printf("# id %u reads as stack %u, id %u as %u\n", i + 1, got[i], expect[i],
				       got[expect[i] - 1]);
			CHECK_EQ(got[i], got[expect[i] - 1]);
		}
		CHECK(got[0] != got[2] && got[0] != got[3] && got[2] != got[3]);
		tprof_trace_close(t);
	}
	free(b.p);
}

/* The check that frames are in the shortest varint form, eight bytes at a time, against a plain
 * decode and re-encode of each varint: random runs of varints of every length, some written longer
 * than they need (a zero last byte) or longer than 64 bits, some cut short, and random bytes. */
static const uint8_t *shortest_ref(const uint8_t *p, const uint8_t *end, uint64_t n)
{
	for (; n; n--) {
		uint64_t v = 0;
		int len = 0, last = 0;
		while (!last) {
			if (p + len >= end || len == 10)
				return NULL;
			uint8_t c = p[len];
			if (len == 9 && c > 1)
				return NULL; /* past 64 bits */
			v |= (uint64_t)(c & 0x7f) << (7 * len);
			last = !(c & 0x80);
			len++;
		}
		int need = 1;
		for (uint64_t w = v >> 7; w; w >>= 7)
			need++;
		if (len != need)
			return NULL;
		p += len;
	}
	return p;
}

static void test_shortest_varints(void)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint8_t buf[96];
	uint64_t differ = 0, longer = 0, accepted = 0;
	for (int round = 0; round < 200000; round++) {
		size_t len = 0;
		uint64_t count = 0;
		while (len < sizeof(buf) - 12) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			uint64_t r = seed >> 11;
			if (r % 97 == 0) { /* a random byte */
				buf[len++] = (uint8_t)(r >> 8);
				count++;
				continue;
			}
			int bits = (int)(r % 65);
			uint64_t v = bits == 0 ? 0 : (r * 0x2545f4914f6cdd1dull) >> (64 - bits);
			do {
				uint8_t c = v & 0x7f;
				v >>= 7;
				buf[len++] = (uint8_t)(c | (v ? 0x80 : 0));
			} while (v && len < sizeof(buf));
			if (r % 53 == 1 && len + 1 < sizeof(buf)) { /* one byte longer than it needs */
				buf[len - 1] |= 0x80;
				buf[len++] = 0;
			}
			count++;
		}
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t n = (seed >> 33) % (count + 2), cut = (seed >> 20) % 13 == 0 ? (seed >> 40) % len : len;
		const uint8_t *want = shortest_ref(buf, buf + cut, n);
		const uint8_t *got = rd_shortest_varints(buf, buf + cut, n);
		differ += got != want;
		if (got != want && differ <= 3)
			printf("# round %d: n %llu of %zu bytes: %td against %td\n", round, (unsigned long long)n,
			       (size_t)cut, got ? got - buf : -1, want ? want - buf : -1);
		accepted += want != NULL;
		longer += want == NULL;
	}
	CHECK_EQ(differ, 0);
	CHECK(accepted > 1000 && longer > 1000); /* both answers were asked for */
}

int main(void)
{
	snprintf(path, sizeof(path), "/tmp/tprof_test_reader.%d.trace", (int)getpid());
	RUN(test_malloc_owner);
	RUN(test_end_flags_and_reasons);
	RUN(test_every_prefix);
	RUN(test_cut_after_bad_zevents);
	RUN(test_pairing_and_temporaries);
	RUN(test_duplicate_stacks);
	RUN(test_shortest_varints);
	unlink(path);
	return UT_DONE();
}
