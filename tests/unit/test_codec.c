/* Unit tests of the trace codec in include/tprof_trace.h: varints at their boundaries, zigzag,
 * CRC-32C (hardware and software agree, known vector), and event records: round trip of random and
 * extreme records, and rejection of every truncation and of reserved bits. */
#include <stdlib.h>

#include "../unittest.h"
#include "tprof_trace.h"

static void test_varint_boundaries(void)
{
	static const uint64_t vals[] = {0, 1, 127, 128, 16383, 16384, (1ull << 32) - 1, 1ull << 32,
					(1ull << 63) - 1, 1ull << 63, UINT64_MAX};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		uint8_t buf[16];
		uint8_t *end = tprof_put_varint(buf, vals[i]);
		struct tprof_cursor c = {buf, end};
		uint64_t v = 0;
		CHECK_EQ(tprof_get_varint(&c, &v), 0);
		CHECK(v == vals[i]);
		CHECK(c.p == end);
		CHECK(end - buf <= 10);
		/* every shorter prefix is an overrun */
		for (uint8_t *cut = buf; cut < end; cut++) {
			struct tprof_cursor t = {buf, cut};
			CHECK_EQ(tprof_get_varint(&t, &v), -1);
		}
	}
}

static void test_varint_overlong(void)
{
	uint8_t buf[11];
	memset(buf, 0xff, sizeof(buf));
	struct tprof_cursor c = {buf, buf + 11};
	uint64_t v = 0;
	CHECK_EQ(tprof_get_varint(&c, &v), -1); /* 11 bytes: longer than 64 bits */
	uint8_t ten[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
	struct tprof_cursor d = {ten, ten + 10};
	CHECK_EQ(tprof_get_varint(&d, &v), -1); /* bit 64 set */
}

static void test_zigzag(void)
{
	static const int64_t vals[] = {0, -1, 1, -64, 63, -65, INT64_MIN, INT64_MAX};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		CHECK(tprof_unzigzag(tprof_zigzag(vals[i])) == vals[i]);
		uint8_t buf[16];
		struct tprof_cursor c = {buf, tprof_put_svarint(buf, vals[i])};
		int64_t v = 0;
		CHECK_EQ(tprof_get_svarint(&c, &v), 0);
		CHECK(v == vals[i]);
	}
	CHECK_EQ(tprof_zigzag(-1), 1);
	CHECK_EQ(tprof_zigzag(1), 2);
}

static void test_string(void)
{
	uint8_t buf[32];
	uint8_t *p = tprof_put_varint(buf, 5);
	memcpy(p, "hello", 5);
	struct tprof_cursor c = {buf, p + 5};
	const char *s = NULL;
	size_t n = 0;
	CHECK_EQ(tprof_get_string(&c, &s, &n), 0);
	CHECK_EQ(n, 5);
	CHECK(memcmp(s, "hello", 5) == 0);
	struct tprof_cursor t = {buf, p + 4};
	CHECK_EQ(tprof_get_string(&t, &s, &n), -1);
}

static void test_crc32c(void)
{
	CHECK_EQ(tprof_crc32c_update(0, "123456789", 9), 0xe3069283u);
	uint8_t data[1000];
	for (int i = 0; i < 1000; i++)
		data[i] = (uint8_t)(i * 7 + 3);
	uint32_t whole = tprof_crc32c_update(0, data, sizeof(data));
	uint32_t parts = tprof_crc32c_update(tprof_crc32c_update(0, data, 333), data + 333, 667);
	CHECK_EQ(whole, parts);
	CHECK_EQ(~tprof_crc32c_sw(~0u, data, sizeof(data)), whole);

	/* the lanes' constants: the register x^0 after one and two lanes of zero bytes */
	uint8_t *zero = calloc(2 * TPROF_CRC_LANE, 1);
	CHECK_EQ(tprof_crc32c_sw(0x80000000u, zero, TPROF_CRC_LANE), TPROF_CRC_X_LANE);
	CHECK_EQ(tprof_crc32c_sw(0x80000000u, zero, 2 * TPROF_CRC_LANE), TPROF_CRC_X_2LANES);
	free(zero);
	/* lengths below, at and over one and two rounds of three lanes, at odd addresses, against the
	 * software CRC byte by byte */
	size_t big = 7 * TPROF_CRC_LANE + 9;
	uint8_t *b = malloc(big);
	for (size_t i = 0; i < big; i++)
		b[i] = (uint8_t)(i * 131 + (i >> 9));
	const size_t lens[] = {3 * TPROF_CRC_LANE - 1, 3 * TPROF_CRC_LANE, 3 * TPROF_CRC_LANE + 7,
			       6 * TPROF_CRC_LANE, 7 * TPROF_CRC_LANE + 8};
	for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
		uint32_t sw = ~tprof_crc32c_sw(~0x1234u, b + 1, lens[k]);
		CHECK_EQ(tprof_crc32c_update(0x1234u, b + 1, lens[k]), sw);
	}
	free(b);
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Streams for the record tests: encode into them, then read them back through cursors. */
enum { SCAP = 1 << 21 };
static uint8_t sbuf[TPROF_NSTREAMS][SCAP];

static void streams_open(uint8_t *out[TPROF_NSTREAMS])
{
	for (int s = 0; s < TPROF_NSTREAMS; s++)
		out[s] = sbuf[s];
}

static void streams_cursors(uint8_t *const out[TPROF_NSTREAMS], struct tprof_cursor in[TPROF_NSTREAMS])
{
	for (int s = 0; s < TPROF_NSTREAMS; s++)
		in[s] = (struct tprof_cursor){sbuf[s], out[s]};
}

static int same_rec(const struct tprof_rec *a, const struct tprof_rec *b)
{
	int re = tprof_kind_is_realloc(a->kind);
	int tick_ok = a->no_tick && !re ? b->no_tick && b->tick == 0 : !b->no_tick && a->tick == b->tick;
	return a->kind == b->kind && a->seq == b->seq && tick_ok && a->size == b->size && a->ptr == b->ptr &&
	       a->stack == b->stack &&
	       (!re || (a->old_ptr == b->old_ptr && a->seq2 == b->seq2 && a->tick2 == b->tick2));
}

/* Random records with extreme values mixed in, and the pointer patterns the histories and class
 * lists are built for (blocks freed some allocations later, blocks reused after a free): encode a
 * run, decode it back, compare. */
static void test_record_round_trip(void)
{
	enum { N = 20000, LIVE = 64 };
	static struct tprof_rec in[N], out;
	static struct tprof_rec_encoder enc;
	static struct tprof_rec_state dst;
	tprof_rec_encoder_init(&enc, 1000, 5000000);
	tprof_rec_state_init(&dst, 1000, 5000000);
	uint64_t seq = 1000, tick = 5000000, next_addr = 0x7f0000000000ull;
	uint64_t live[LIVE] = {0}, freed[LIVE] = {0};
	for (int i = 0; i < N; i++) {
		struct tprof_rec *r = &in[i];
		unsigned pick = (unsigned)(rnd() % 10);
		r->kind = pick < 4 ? TPROF_EV_FREE : pick < 8 ? TPROF_EV_MALLOC : 1 + (unsigned)(rnd() % TPROF_EV_KIND_MAX);
		seq += (rnd() % 4 == 0) ? 1 + rnd() % 100000 : 1;
		if (i % 997 == 0)
			seq += 1ull << 40;
		r->seq = seq;
		r->no_tick = rnd() % 3 == 0;
		tick += (i % 13 == 0) ? (uint64_t)-(int64_t)(rnd() % 50) : rnd() % 3000; /* may go back */
		r->tick = r->no_tick && !tprof_kind_is_realloc(r->kind) ? 0 : tick;
		r->size = r->kind == TPROF_EV_FREE ? 0 : (i % 501 == 0 ? UINT64_MAX : rnd() % (i % 2 ? 1100 : 100000));
		int k = (int)(rnd() % LIVE);
		if (r->kind == TPROF_EV_FREE) {
			r->ptr = i % 7 == 0 ? 0 : live[k] ? live[k] : next_addr + rnd() % 4096;
			freed[k] = r->ptr;
			live[k] = 0;
		} else {
			r->ptr = i % 11 == 0 ? 0
				 : i % 1009 == 0 ? UINT64_MAX
				 : freed[k] && rnd() % 2 ? freed[k]
							 : (next_addr += 16 + rnd() % 2048);
			live[k] = r->ptr;
		}
		if (r->kind != TPROF_EV_FREE) /* runs of one stack, jumps, none, the largest id */
			r->stack = i % 5 ? (i > 0 ? in[i - 1].stack : 7)
					 : (i % 3 == 0 ? 0 : (i % 11 == 0 ? (1u << 24) - 1 : (uint32_t)(rnd() % 5000)));
		if (tprof_kind_is_realloc(r->kind)) {
			r->old_ptr = i % 3 ? r->ptr + (rnd() % 4096) - 2048 : 0;
			seq += 1 + rnd() % 3;
			r->seq2 = seq;
			tick += rnd() % 500;
			r->tick2 = tick;
		}
	}
	uint8_t *o[TPROF_NSTREAMS];
	streams_open(o);
	for (int i = 0; i < N; i++)
		tprof_rec_encode(o, &enc, &in[i]);
	struct tprof_cursor c[TPROF_NSTREAMS];
	streams_cursors(o, c);
	int bad = 0;
	for (int i = 0; i < N && !bad; i++) {
		if (tprof_rec_decode(c, &dst, &out) != 0 || !same_rec(&in[i], &out)) {
			printf("# record %d differs\n", i);
			bad = 1;
		}
	}
	CHECK_EQ(bad, 0);
	size_t total = 0;
	for (int s = 0; s < TPROF_NSTREAMS; s++) {
		CHECK(c[s].p == o[s]);
		total += (size_t)(o[s] - sbuf[s]);
	}
	printf("# %d records in %zu bytes (%.2f bytes/record)\n", N, total, (double)total / N);
}

/* The storm pattern: each free names the allocation 64 before it, each allocation reuses the last
 * block freed in its size class. Both must be coded by history, not spelled out. */
static void test_record_histories(void)
{
	enum { N = 4096, W = 64 };
	static struct tprof_rec_encoder enc;
	static struct tprof_rec_state dst;
	tprof_rec_encoder_init(&enc, 0, 0);
	tprof_rec_state_init(&dst, 0, 0);
	uint8_t *o[TPROF_NSTREAMS];
	streams_open(o);
	uint64_t live[W], seq = 0, addr = 0x10000;
	for (int i = 0; i < W; i++) {
		struct tprof_rec r = {.kind = TPROF_EV_MALLOC, .seq = ++seq, .tick = seq, .size = 40, .ptr = addr += 64};
		live[i] = r.ptr;
		tprof_rec_encode(o, &enc, &r);
	}
	uint8_t *ptr_before = o[TPROF_S_PTR];
	for (int i = 0; i < N; i++) {
		struct tprof_rec f = {.kind = TPROF_EV_FREE, .seq = ++seq, .no_tick = 1, .ptr = live[i % W]};
		tprof_rec_encode(o, &enc, &f);
		struct tprof_rec m = {.kind = TPROF_EV_MALLOC, .seq = ++seq, .tick = seq, .size = 40, .ptr = f.ptr};
		tprof_rec_encode(o, &enc, &m);
	}
	/* one byte per pointer: the free's distance 64, the allocation's 0 (the class prediction) */
	CHECK_EQ((long)(o[TPROF_S_PTR] - ptr_before), 2L * N);
	int pattern = 1;
	for (int i = 0; i < 2 * N; i++)
		pattern &= ptr_before[i] == (i % 2 ? 0 : 64);
	CHECK(pattern);
	struct tprof_cursor c[TPROF_NSTREAMS];
	streams_cursors(o, c);
	struct tprof_rec r;
	int ok = 1;
	for (int i = 0; i < W + 2 * N; i++)
		ok &= tprof_rec_decode(c, &dst, &r) == 0 &&
		      (i < W || r.ptr == live[((i - W) / 2) % W]);
	CHECK(ok);
}

/* Decodes a single record from raw stream contents; returns tprof_rec_decode's result. */
static int decode_raw(const uint8_t *head, size_t hn, const uint8_t *ptr, size_t pn, struct tprof_rec_state *st)
{
	static const uint8_t zeros[16];
	struct tprof_cursor c[TPROF_NSTREAMS] = {
		[TPROF_S_HEAD] = {head, head + hn}, [TPROF_S_SEQ] = {zeros, zeros + 16},
		[TPROF_S_TICK] = {zeros, zeros + 16}, [TPROF_S_SIZE] = {zeros, zeros + 16},
		[TPROF_S_STACK] = {zeros, zeros + 16}, [TPROF_S_PTR] = {ptr, ptr + pn},
	};
	struct tprof_rec r;
	return tprof_rec_decode(c, st, &r);
}

/* Cutting any stream short, flags a kind cannot have, distances outside the history, an unknown
 * kind, a stack below 0 or a sequence number that wraps: all are errors. */
static void test_record_corruption(void)
{
	struct tprof_rec r = {.kind = TPROF_EV_REALLOC, .seq = 50, .tick = 1000, .size = 300, .stack = 4,
			      .ptr = 0x5000, .old_ptr = 0x4000, .seq2 = 70, .tick2 = 1500};
	static struct tprof_rec_encoder enc;
	static struct tprof_rec_state st;
	tprof_rec_encoder_init(&enc, 10, 10);
	uint8_t *o[TPROF_NSTREAMS];
	streams_open(o);
	tprof_rec_encode(o, &enc, &r);
	for (int s = 0; s < TPROF_NSTREAMS; s++) {
		for (uint8_t *cut = sbuf[s]; cut < o[s]; cut++) {
			struct tprof_cursor c[TPROF_NSTREAMS];
			streams_cursors(o, c);
			c[s].end = cut;
			tprof_rec_state_init(&st, 10, 10);
			struct tprof_rec x;
			CHECK_EQ(tprof_rec_decode(c, &st, &x), -1);
		}
	}
	uint8_t p0 = 0, p1 = 1, p9[2] = {0x80, 0x02}; /* distances 0, 1, 256 */
	uint8_t h;
	/* a realloc cannot be untimed or coded by history */
	h = TPROF_EV_REALLOC | TPROF_REC_NO_TICK;
	tprof_rec_state_init(&st, 0, 0);
	CHECK_EQ(decode_raw(&h, 1, &p0, 1, &st), -1);
	h = TPROF_EV_REALLOC | TPROF_REC_PTR_HIST;
	tprof_rec_state_init(&st, 0, 0);
	CHECK_EQ(decode_raw(&h, 1, &p1, 1, &st), -1);
	/* "same stack" on a free, which has no stack */
	h = TPROF_EV_FREE | TPROF_REC_SAME_STACK;
	tprof_rec_state_init(&st, 0, 0);
	CHECK_EQ(decode_raw(&h, 1, &p0, 1, &st), -1);
	/* a free by distance into an empty history, by distance 0, beyond the history */
	h = TPROF_EV_FREE | TPROF_REC_PTR_HIST;
	tprof_rec_state_init(&st, 0, 0);
	CHECK_EQ(decode_raw(&h, 1, &p1, 1, &st), -1);
	tprof_rec_state_init(&st, 0, 0);
	st.nalloc = 300;
	CHECK_EQ(decode_raw(&h, 1, &p0, 1, &st), -1);
	tprof_rec_state_init(&st, 0, 0);
	st.nalloc = 300;
	uint8_t p257[2] = {0x81, 0x02};
	CHECK_EQ(decode_raw(&h, 1, p257, 2, &st), -1);
	tprof_rec_state_init(&st, 0, 0);
	st.nalloc = 300;
	CHECK_EQ(decode_raw(&h, 1, p9, 2, &st), 0); /* 256 is the last one kept */
	/* an allocation predicted by an empty class list */
	h = TPROF_EV_MALLOC | TPROF_REC_PTR_HIST;
	tprof_rec_state_init(&st, 0, 0);
	CHECK_EQ(decode_raw(&h, 1, &p0, 1, &st), -1);
	/* a stack delta leading below 0: head, tick 0, size 5, stack -2, ptr 0 */
	struct tprof_cursor c[TPROF_NSTREAMS];
	uint8_t hd = TPROF_EV_MALLOC | TPROF_REC_SEQ_NEXT, tk = 0, sz = 5, sk = 3, pt = 0;
	c[TPROF_S_HEAD] = (struct tprof_cursor){&hd, &hd + 1};
	c[TPROF_S_SEQ] = (struct tprof_cursor){&tk, &tk};
	c[TPROF_S_TICK] = (struct tprof_cursor){&tk, &tk + 1};
	c[TPROF_S_SIZE] = (struct tprof_cursor){&sz, &sz + 1};
	c[TPROF_S_STACK] = (struct tprof_cursor){&sk, &sk + 1};
	c[TPROF_S_PTR] = (struct tprof_cursor){&pt, &pt + 1};
	tprof_rec_state_init(&st, 0, 0);
	st.stack = 1;
	struct tprof_rec x;
	CHECK_EQ(tprof_rec_decode(c, &st, &x), -1);
	/* unknown kinds */
	h = 0x10;
	tprof_rec_state_init(&st, 0, 0);
	CHECK_EQ(decode_raw(&h, 1, &p0, 1, &st), -1);
	h = 0x1f;
	CHECK_EQ(decode_raw(&h, 1, &p0, 1, &st), -1);
	/* a sequence number that wraps instead of increasing */
	uint8_t hw = TPROF_EV_FREE, sq[10];
	uint8_t *e = tprof_put_varint(sq, 5);
	c[TPROF_S_HEAD] = (struct tprof_cursor){&hw, &hw + 1};
	c[TPROF_S_SEQ] = (struct tprof_cursor){sq, e};
	c[TPROF_S_TICK] = (struct tprof_cursor){&tk, &tk + 1};
	c[TPROF_S_PTR] = (struct tprof_cursor){&pt, &pt + 1};
	tprof_rec_state_init(&st, UINT64_MAX - 1, 0);
	CHECK_EQ(tprof_rec_decode(c, &st, &x), -1);
}

static void test_event_names(void)
{
	CHECK_STR(tprof_event_name(TPROF_EV_MALLOC), "malloc");
	CHECK_STR(tprof_event_name(TPROF_EV_PVALLOC), "pvalloc");
	CHECK_STR(tprof_event_name(99), "?");
}

int main(void)
{
	RUN(test_varint_boundaries);
	RUN(test_varint_overlong);
	RUN(test_zigzag);
	RUN(test_string);
	RUN(test_crc32c);
	RUN(test_record_round_trip);
	RUN(test_record_histories);
	RUN(test_record_corruption);
	RUN(test_event_names);
	return UT_DONE();
}
