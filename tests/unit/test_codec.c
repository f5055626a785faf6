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
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* Random records with extreme values mixed in: encode a run, decode it back, compare. */
static void test_record_round_trip(void)
{
	enum { N = 20000 };
	static struct tprof_rec in[N], out;
	static uint8_t buf[N * TPROF_REC_MAX_BYTES];
	struct tprof_rec_state est = {1000, 5000000, 0, 0}, dst = est;
	uint64_t seq = est.seq, tick = est.tick;
	for (int i = 0; i < N; i++) {
		struct tprof_rec *r = &in[i];
		r->kind = 1 + (unsigned)(rnd() % TPROF_EV_KIND_MAX);
		seq += (rnd() % 4 == 0) ? 1 + rnd() % 100000 : 1;
		if (i % 997 == 0)
			seq += 1ull << 40;
		r->seq = seq;
		tick += (i % 13 == 0) ? (uint64_t)-(int64_t)(rnd() % 50) : rnd() % 3000; /* may go back */
		r->tick = tick;
		r->size = r->kind == TPROF_EV_FREE ? 0 : (i % 501 == 0 ? UINT64_MAX : rnd() % 100000);
		r->ptr = i % 7 == 0 ? 0 : (i % 1009 == 0 ? UINT64_MAX : 0x7f0000000000ull + (rnd() % (1u << 30)));
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
	uint8_t *p = buf;
	for (int i = 0; i < N; i++)
		p = tprof_rec_encode(p, &est, &in[i]);
	struct tprof_cursor c = {buf, p};
	int bad = 0;
	for (int i = 0; i < N && !bad; i++) {
		if (tprof_rec_decode(&c, &dst, &out) != 0) {
			bad = 1;
			break;
		}
		bad |= out.kind != in[i].kind || out.seq != in[i].seq || out.tick != in[i].tick ||
		       out.size != in[i].size || out.ptr != in[i].ptr || out.stack != in[i].stack;
		if (tprof_kind_is_realloc(in[i].kind))
			bad |= out.old_ptr != in[i].old_ptr || out.seq2 != in[i].seq2 || out.tick2 != in[i].tick2;
		if (bad)
			printf("# record %d differs\n", i);
	}
	CHECK_EQ(bad, 0);
	CHECK(c.p == p);
	printf("# %d records in %zu bytes (%.2f bytes/record)\n", N, (size_t)(p - buf), (double)(p - buf) / N);
}

/* Cutting a record anywhere, or setting reserved bits, or an unknown kind, is an error. */
static void test_record_corruption(void)
{
	struct tprof_rec r = {.kind = TPROF_EV_REALLOC, .seq = 50, .tick = 1000, .size = 300,
			      .ptr = 0x5000, .old_ptr = 0x4000, .seq2 = 70, .tick2 = 1500};
	uint8_t buf[TPROF_REC_MAX_BYTES];
	struct tprof_rec_state st = {10, 10, 0, 0};
	uint8_t *end = tprof_rec_encode(buf, &st, &r);
	for (uint8_t *cut = buf; cut < end; cut++) {
		struct tprof_cursor c = {buf, cut};
		struct tprof_rec_state s = {10, 10, 0, 0};
		struct tprof_rec o;
		CHECK_EQ(tprof_rec_decode(&c, &s, &o), -1);
	}
	for (unsigned bit = 6; bit < 8; bit++) {
		uint8_t copy[TPROF_REC_MAX_BYTES];
		memcpy(copy, buf, sizeof(copy));
		copy[0] |= (uint8_t)(1u << bit);
		struct tprof_cursor c = {copy, copy + (end - buf)};
		struct tprof_rec_state s = {10, 10, 0, 0};
		struct tprof_rec o;
		CHECK_EQ(tprof_rec_decode(&c, &s, &o), -1);
	}
	/* "same stack" on a free, which has no stack */
	uint8_t free_same[4] = {TPROF_EV_FREE | TPROF_REC_SEQ_NEXT | TPROF_REC_SAME_STACK, 0, 0, 0};
	struct tprof_rec_state fs = {0, 0, 0, 0};
	CHECK_EQ(tprof_rec_decode(&(struct tprof_cursor){free_same, free_same + 4}, &fs, &(struct tprof_rec){0}), -1);
	/* a stack delta leading below 0 */
	uint8_t neg_stack[5] = {TPROF_EV_MALLOC | TPROF_REC_SEQ_NEXT, 0, 5, 3 /* zigzag -2 */, 0};
	struct tprof_rec_state ns = {0, 0, 0, 1};
	CHECK_EQ(tprof_rec_decode(&(struct tprof_cursor){neg_stack, neg_stack + 5}, &ns, &(struct tprof_rec){0}), -1);
	uint8_t zero_kind[4] = {0x10, 0, 0, 0}, big_kind[4] = {0x1f, 0, 0, 0};
	struct tprof_rec_state s = {0, 0, 0, 0};
	struct tprof_rec o;
	CHECK_EQ(tprof_rec_decode(&(struct tprof_cursor){zero_kind, zero_kind + 4}, &s, &o), -1);
	CHECK_EQ(tprof_rec_decode(&(struct tprof_cursor){big_kind, big_kind + 4}, &s, &o), -1);
	/* a sequence number that wraps instead of increasing */
	struct tprof_rec_state high = {UINT64_MAX - 1, 0, 0, 0};
	uint8_t wrap[16] = {TPROF_EV_FREE};
	uint8_t *w = tprof_put_varint(wrap + 1, 5);
	w = tprof_put_svarint(w, 0);
	w = tprof_put_svarint(w, 0);
	CHECK_EQ(tprof_rec_decode(&(struct tprof_cursor){wrap, w}, &high, &o), -1);
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
	RUN(test_record_corruption);
	RUN(test_event_names);
	return UT_DONE();
}
