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
	RUN(test_radix_sort);
	return UT_DONE();
}
