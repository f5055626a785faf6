/* Unit tests of the SPSC ring in preload/ring.h: empty/full boundaries, wrap-around of the 32-bit
 * counters, and a two-thread stress in which the consumer must see every event exactly once and
 * in order. */
#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "../unittest.h"
#include "ring.h"

static struct tprof_ring *new_ring(uint32_t cap)
{
	struct tprof_ring *r = aligned_alloc(64, (tprof_ring_bytes(cap) + 63) & ~63ull);
	memset(r, 0, tprof_ring_bytes(cap));
	tprof_ring_init(r, cap);
	return r;
}

static void test_empty_full(void)
{
	struct tprof_ring *r = new_ring(8);
	uint32_t first;
	CHECK_EQ(tprof_ring_available(r, &first), 0);
	for (uint32_t i = 0; i < 8; i++) {
		CHECK_EQ(tprof_ring_reserve(r, 1), 1);
		tprof_ring_slot(r, 0)->size = i;
		tprof_ring_publish(r, 1);
	}
	CHECK_EQ(tprof_ring_reserve(r, 1), 0); /* full */
	CHECK_EQ(tprof_ring_available(r, &first), 8);
	CHECK_EQ(tprof_ring_at(r, first)->size, 0);
	CHECK_EQ(tprof_ring_at(r, first + 7)->size, 7);
	tprof_ring_consume(r, 3);
	CHECK_EQ(tprof_ring_reserve(r, 3), 1);
	CHECK_EQ(tprof_ring_reserve(r, 4), 0);
	tprof_ring_consume(r, 5);
	CHECK_EQ(tprof_ring_available(r, &first), 0);
	CHECK_EQ(tprof_ring_reserve(r, 8), 1);
	CHECK_EQ(tprof_ring_reserve(r, 9), 0);
	free(r);
}

static void test_counter_wrap(void)
{
	struct tprof_ring *r = new_ring(4);
	/* start just below 2^32 so head and tail wrap during the test */
	atomic_store(&r->head, UINT32_MAX - 2);
	atomic_store(&r->tail, UINT32_MAX - 2);
	r->cached_tail = UINT32_MAX - 2;
	uint64_t next = 0, seen = 0;
	for (int round = 0; round < 10; round++) {
		while (tprof_ring_reserve(r, 1)) {
			tprof_ring_slot(r, 0)->size = next++;
			tprof_ring_publish(r, 1);
		}
		uint32_t first, n = tprof_ring_available(r, &first);
		CHECK_EQ(n, 4);
		for (uint32_t i = 0; i < n; i++)
			CHECK_EQ(tprof_ring_at(r, first + i)->size, seen++);
		tprof_ring_consume(r, n);
	}
	CHECK_EQ(next, 40);
	free(r);
}

enum { STRESS_N = 2000000 };
static struct tprof_ring *stress_ring;

static void *producer(void *arg)
{
	(void)arg;
	for (uint64_t i = 0; i < STRESS_N;) {
		uint32_t n = i % 5 == 0 ? 2 : 1; /* pairs too, as reallocs publish */
		if (i + n > STRESS_N)
			n = 1;
		if (!tprof_ring_reserve(stress_ring, n))
			continue;
		for (uint32_t k = 0; k < n; k++) {
			struct tprof_ev *e = tprof_ring_slot(stress_ring, k);
			e->seq_kind = (i + k) << 8;
			e->size = (i + k) * 3;
		}
		tprof_ring_publish(stress_ring, n);
		i += n;
	}
	return NULL;
}

static void test_two_thread_stress(void)
{
	stress_ring = new_ring(256);
	pthread_t p;
	pthread_create(&p, NULL, producer, NULL);
	uint64_t expect = 0;
	int bad = 0;
	while (expect < STRESS_N) {
		uint32_t first, n = tprof_ring_available(stress_ring, &first);
		for (uint32_t i = 0; i < n; i++) {
			const struct tprof_ev *e = tprof_ring_at(stress_ring, first + i);
			if ((e->seq_kind >> 8) != expect || e->size != expect * 3)
				bad++;
			expect++;
		}
		tprof_ring_consume(stress_ring, n);
	}
	pthread_join(p, NULL);
	CHECK_EQ(bad, 0);
	CHECK_EQ(expect, STRESS_N);
	free(stress_ring);
}

int main(void)
{
	RUN(test_empty_full);
	RUN(test_counter_wrap);
	RUN(test_two_thread_stress);
	return UT_DONE();
}
