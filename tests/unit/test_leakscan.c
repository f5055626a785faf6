/* Unit tests of the recorder's live-block table (recorder/leakscan.c): the blocks it ends with do
 * not depend on the order in which events arrive (each address keeps its latest event by sequence
 * number: the writer drains one thread's ring after another), reallocs release the old block at
 * their first sequence number and take the new one at the second, and the table survives growth;
 * and the radix sort of the scan orders blocks as a comparison sort does. */
#include <stdlib.h>

#include "../unittest.h"
#include "../../recorder/leakscan.c"

static _Atomic uint32_t test_beat;

static struct tprof_rec ev(unsigned kind, uint64_t ptr, uint64_t seq, uint64_t size)
{
	return (struct tprof_rec){.kind = kind, .ptr = ptr, .seq = seq, .size = size};
}

/* Applies recs in the order given by perm; returns the table. */
static struct leak_live *apply(const struct tprof_rec *recs, const int *perm, int n)
{
	struct leak_live *m = leak_live_new(&test_beat);
	for (int i = 0; i < n; i++)
		leak_live_apply(m, &recs[perm[i]]);
	return m;
}

static int next_perm(int *p, int n)
{
	int i = n - 2;
	while (i >= 0 && p[i] >= p[i + 1])
		i--;
	if (i < 0)
		return 0;
	int j = n - 1;
	while (p[j] <= p[i])
		j--;
	int t = p[i];
	p[i] = p[j];
	p[j] = t;
	for (int a = i + 1, b = n - 1; a < b; a++, b--) {
		t = p[a];
		p[a] = p[b];
		p[b] = t;
	}
	return 1;
}

static uint64_t size_of(struct leak_live *m, uint64_t addr)
{
	struct live_slot *e = live_find(m, addr);
	return e->addr == addr ? e->size : LIVE_FREED;
}

static void test_any_order(void)
{
	/* one address used twice, freed both times: whatever the order, nothing is live */
	const struct tprof_rec a[] = {ev(TPROF_EV_MALLOC, 0x1000, 1, 16), ev(TPROF_EV_FREE, 0x1000, 2, 0),
				      ev(TPROF_EV_MALLOC, 0x1000, 3, 32), ev(TPROF_EV_FREE, 0x1000, 4, 0)};
	int p[4] = {0, 1, 2, 3}, bad = 0;
	do {
		struct leak_live *m = apply(a, p, 4);
		bad += leak_live_count(m) != 0;
		leak_live_free(m);
	} while (next_perm(p, 4));
	CHECK_EQ(bad, 0);
	/* used twice and still live the second time: live, with the second size */
	int q[3] = {0, 1, 2};
	bad = 0;
	do {
		struct leak_live *m = apply(a, q, 3);
		bad += leak_live_count(m) != 1 || size_of(m, 0x1000) != 32;
		leak_live_free(m);
	} while (next_perm(q, 3));
	CHECK_EQ(bad, 0);
}

static void test_realloc(void)
{
	struct leak_live *m = leak_live_new(&test_beat);
	struct tprof_rec r = ev(TPROF_EV_MALLOC, 0x2000, 1, 10);
	leak_live_apply(m, &r);
	/* moved: the old block is released at seq 2, the new one taken at seq 3 */
	r = (struct tprof_rec){.kind = TPROF_EV_REALLOC, .ptr = 0x3000, .old_ptr = 0x2000, .seq = 2, .seq2 = 3,
			       .size = 100};
	leak_live_apply(m, &r);
	CHECK_EQ(leak_live_count(m), 1);
	CHECK_EQ(size_of(m, 0x3000), 100);
	CHECK_EQ(size_of(m, 0x2000), LIVE_FREED);
	/* in place: the same address released and taken again, with the new size */
	r = (struct tprof_rec){.kind = TPROF_EV_REALLOC, .ptr = 0x3000, .old_ptr = 0x3000, .seq = 4, .seq2 = 5,
			       .size = 200};
	leak_live_apply(m, &r);
	CHECK_EQ(leak_live_count(m), 1);
	CHECK_EQ(size_of(m, 0x3000), 200);
	/* failed (NULL, size > 0): the old block stays */
	r = (struct tprof_rec){.kind = TPROF_EV_REALLOC, .ptr = 0, .old_ptr = 0x3000, .seq = 6, .seq2 = 7,
			       .size = 1ull << 60};
	leak_live_apply(m, &r);
	CHECK_EQ(size_of(m, 0x3000), 200);
	/* realloc(p, 0): glibc frees p and returns NULL */
	r = (struct tprof_rec){.kind = TPROF_EV_REALLOC, .ptr = 0, .old_ptr = 0x3000, .seq = 8, .seq2 = 9, .size = 0};
	leak_live_apply(m, &r);
	CHECK_EQ(leak_live_count(m), 0);
	leak_live_free(m);
}

static void test_growth(void)
{
	struct leak_live *m = leak_live_new(&test_beat);
	enum { N = 200000 };
	for (uint64_t i = 0; i < N; i++) {
		struct tprof_rec r = ev(TPROF_EV_MALLOC, 0x10000 + i * 48, i + 1, i % 97);
		leak_live_apply(m, &r);
	}
	for (uint64_t i = 0; i < N; i += 2) {
		struct tprof_rec r = ev(TPROF_EV_FREE, 0x10000 + i * 48, N + i + 1, 0);
		leak_live_apply(m, &r);
	}
	CHECK_EQ(leak_live_count(m), N / 2);
	int bad = 0;
	for (uint64_t i = 0; i < N; i++)
		bad += size_of(m, 0x10000 + i * 48) != (i & 1 ? i % 97 : LIVE_FREED);
	CHECK_EQ(bad, 0);
	/* the freed addresses are remembered until every event before their frees is in */
	CHECK_EQ(leak_live_freed(m), N / 2);
	leak_live_prune(m, N + N / 2);
	CHECK_EQ(leak_live_freed(m), N / 4);
	leak_live_prune(m, 2 * N + 1);
	CHECK_EQ(leak_live_freed(m), 0);
	CHECK_EQ(leak_live_count(m), N / 2);
	bad = 0;
	for (uint64_t i = 1; i < N; i += 2)
		bad += size_of(m, 0x10000 + i * 48) != i % 97;
	CHECK_EQ(bad, 0);
	leak_live_free(m);
}

/* The writer's way (leak_live_block_rec per record with the encoder's answers, leak_live_block_end per
 * block) ends with the table leak_live_apply makes, whatever the order in which threads' blocks come:
 * threads that allocate, free their own and each other's blocks and reallocate, over few addresses
 * (taken again and again), in blocks of random lengths, some longer than the pointer history. */
static int blocks_case(int slots, int burst, uint64_t seed)
{
	enum { T = 3, N = 30000, SLOTS = 400 };
	struct tprof_rec *th[T];
	int nth[T] = {0};
	for (int u = 0; u < T; u++)
		th[u] = calloc(N, sizeof(**th));
	uint64_t live[SLOTS] = {0};
	uint64_t x = seed, seq = 0;
	int t = 0;
#define RND() (x ^= x << 13, x ^= x >> 7, x ^= x << 17, x)
	for (int i = 0; i < N; i++) {
		if (RND() % (uint64_t)burst == 0) /* runs of one thread's events, burst long on average */
			t = (int)(RND() % T);
		int k = (int)(RND() % (uint64_t)slots);
		uint64_t addr = 0x100000 + (uint64_t)k * 4096 + (RND() % 3) * 16; /* no two slots share one */
		struct tprof_rec r = {.seq = ++seq, .tick = seq};
		if (!live[k]) {
			r.kind = RND() % 2 ? TPROF_EV_MALLOC : TPROF_EV_CALLOC;
			r.ptr = live[k] = addr;
			r.size = 1 + RND() % 500;
		} else if (RND() % 5 == 0) {
			r.kind = TPROF_EV_REALLOC;
			r.old_ptr = live[k];
			r.ptr = live[k] = addr; /* sometimes in place */
			r.size = 1 + RND() % 500;
			r.seq2 = ++seq;
			r.tick2 = seq;
		} else {
			r.kind = TPROF_EV_FREE;
			r.ptr = live[k];
			live[k] = 0;
		}
		th[t][nth[t]++] = r;
	}
#undef RND
	int order[T] = {0, 1, 2}, bad = 0;
	struct leak_live *ref = leak_live_new(&test_beat);
	for (int u = 0; u < T; u++)
		for (int i = 0; i < nth[u]; i++)
			leak_live_apply(ref, &th[u][i]);
	static uint8_t bufs[TPROF_NSTREAMS][1000 * TPROF_REC_MAX_BYTES];
	for (int round = 0; round < 6; round++) {
		struct leak_live *m = leak_live_new(&test_beat);
		int at[T] = {0};
		uint64_t y = 12345u + (uint64_t)round * 7919u;
		for (;;) { /* a random thread's next block of 1 to 64 records, until all are in */
			int left = 0;
			for (int u = 0; u < T; u++)
				left += at[order[u]] < nth[order[u]];
			if (!left)
				break;
			y = y * 6364136223846793005ull + 1442695040888963407ull;
			t = (int)((y >> 33) % T);
			if (at[t] == nth[t])
				continue;
			int len = 1 + (int)((y >> 20) % 64);
			if ((y >> 40) % 4 == 0) /* longer than the history: allocations leave it */
				len = 300 + (int)((y >> 44) % 700);
			struct tprof_rec_encoder enc;
			tprof_rec_encoder_init(&enc, at[t] ? th[t][at[t] - 1].seq2 ? th[t][at[t] - 1].seq2 : th[t][at[t] - 1].seq : 0, 0);
			uint8_t *o[TPROF_NSTREAMS];
			for (int k = 0; k < TPROF_NSTREAMS; k++)
				o[k] = bufs[k];
			for (int i = 0; i < len && at[t] < nth[t]; i++, at[t]++) {
				uint32_t dist = tprof_rec_encode(o, &enc, &th[t][at[t]]);
				leak_live_block_rec(m, &th[t][at[t]], dist, enc.st.nalloc);
			}
			leak_live_block_end(m);
		}
		bad += leak_live_count(m) != leak_live_count(ref);
		for (uint64_t i = 0; i <= ref->mask; i++)
			if (ref->s[i].addr && ref->s[i].size != LIVE_FREED)
				bad += size_of(m, ref->s[i].addr) != ref->s[i].size;
		leak_live_free(m);
	}
	bad += leak_live_count(ref) == 0;
	leak_live_free(ref);
	for (t = 0; t < T; t++)
		free(th[t]);
	return bad;
}

/* Threads that take turns at every event, or run for a while (the writer then drops a pair that
 * no other thread's event came between from the table); few addresses, taken again by other
 * threads, or many. */
static void test_blocks(void)
{
	int bad = 0;
	const int slots[] = {400, 60, 12}, bursts[] = {1, 8, 64};
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 3; j++)
			bad += blocks_case(slots[i], bursts[j], 0x9e3779b97f4a7c15ull + (uint64_t)(i * 3 + j));
	CHECK_EQ(bad, 0);
}

static void test_radix_sort(void)
{
	enum { N = 100000 };
	struct scan s = {.beat = &test_beat, .nb = N};
	s.b = calloc(N, sizeof(*s.b));
	uint64_t x = 88172645463325252ull;
	for (uint64_t i = 0; i < N; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		s.b[i].addr = (x & 0x7ffffffffff0ull) | 0x10; /* user addresses, 16-aligned */
		s.b[i].size = i;
	}
	struct leak_block *ref = malloc(N * sizeof(*ref));
	memcpy(ref, s.b, N * sizeof(*ref));
	qsort(ref, N, sizeof(*ref), cmp_block);
	CHECK_EQ(sort_blocks(&s), 0);
	int bad = 0;
	for (uint64_t i = 0; i < N; i++)
		bad += s.b[i].addr != ref[i].addr;
	CHECK_EQ(bad, 0);
	free(ref);
	free(s.b);
}

int main(void)
{
	RUN(test_any_order);
	RUN(test_realloc);
	RUN(test_growth);
	RUN(test_blocks);
	RUN(test_radix_sort);
	return UT_DONE();
}
