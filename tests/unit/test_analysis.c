/* Unit tests of the analyses that had none: the heap replay (analysis/heap.c) counted the way
 * valgrind memcheck's HEAP SUMMARY counts, event by event (realloc's two halves, realloc(p, 0), failed
 * calls, frees of unknown addresses, an address reused while live, paired events, the peak, byte
 * totals past 2^64), and the ops statistics (analysis/ops.c): nearest-rank percentiles, the 95 %
 * interval of a mean with Student's t, and Welch's interval of a difference, against values worked
 * out by hand from the textbook formulas. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap.h"
#include "analysis/ops.h"
#include "tprof_ops.h"
#include "../unittest.h"

static uint64_t seq;

static struct tprof_event ev(uint8_t kind, uint64_t size, uint64_t ptr)
{
	return (struct tprof_event){.seq = ++seq, .tick = seq * 10, .size = size, .ptr = ptr, .kind = kind, .tid = 1};
}

static void step(struct heap_stats *s, struct tprof_event e)
{
	heap_step(s, &e, NULL);
}

static void test_heap_counts(void)
{
	struct heap_stats s;
	heap_init(&s, 0);
	step(&s, ev(TPROF_EV_MALLOC, 100, 0x1000));
	step(&s, ev(TPROF_EV_CALLOC, 50, 0x2000));
	step(&s, ev(TPROF_EV_FREE, 0, 0x1000));
	CHECK_EQ(s.live_bytes, 50);
	CHECK_EQ(s.peak_bytes, 150);
	CHECK_EQ(s.peak_blocks, 2);
	CHECK_EQ(s.peak_seq, 2);
	/* realloc: the old block given back (phase 0), the new one taken (phase 1), as memcheck
	 * counts one free and one allocation */
	struct tprof_event r0 = ev(TPROF_EV_REALLOC, 80, 0x3000), r1 = r0;
	r0.old_ptr = 0x2000;
	r0.phase = 0;
	r1.phase = 1;
	r1.seq = ++seq;
	heap_step(&s, &r0, NULL);
	struct heap_change c;
	heap_step(&s, &r1, &c);
	CHECK_EQ(c.taken_ptr, 0x3000);
	CHECK_EQ(s.live_bytes, 80);
	CHECK_EQ(s.allocations, 3);
	CHECK_EQ(s.frees, 2);
	CHECK_EQ(s.bytes_allocated, 230);
	CHECK_EQ(s.calls[TPROF_EV_REALLOC], 1);
	/* realloc(p, 0) frees p and returns NULL: a free, not a failure */
	struct tprof_event z = ev(TPROF_EV_REALLOC, 0, 0);
	z.old_ptr = 0x3000;
	heap_step(&s, &z, &c);
	CHECK_EQ(c.freed_ptr, 0x3000);
	CHECK_EQ(c.freed_size, 80);
	CHECK_EQ(s.failed, 0);
	CHECK_EQ(s.live_blocks, 0);
	/* a failed malloc, a free of an unknown address, free(NULL) */
	step(&s, ev(TPROF_EV_MALLOC, 1ull << 40, 0));
	step(&s, ev(TPROF_EV_FREE, 0, 0x9000));
	step(&s, ev(TPROF_EV_FREE, 0, 0));
	CHECK_EQ(s.failed, 1);
	CHECK_EQ(s.unmatched_frees, 1);
	CHECK_EQ(s.calls[TPROF_EV_FREE], 3);
	CHECK_EQ(s.calls[TPROF_EV_MALLOC], 2);
	/* an address handed out while still live (lost events): counted, the old block taken as gone */
	step(&s, ev(TPROF_EV_MALLOC, 10, 0x5000));
	step(&s, ev(TPROF_EV_MALLOC, 20, 0x5000));
	CHECK_EQ(s.reused_live, 1);
	CHECK_EQ(s.live_bytes, 20);
	CHECK_EQ(s.live_blocks, 1);
	CHECK_EQ(s.events, 11);
	CHECK_EQ(heap_finish(&s, NULL), 0);
	heap_release(&s);
}

/* A paired allocation and free (the reader pairs them within a block) count without the live map. */
static void test_heap_paired(void)
{
	struct heap_stats s;
	heap_init(&s, 0);
	struct tprof_event a = ev(TPROF_EV_MALLOC, 64, 0x7000), f = ev(TPROF_EV_FREE, 0, 0x7000);
	a.paired = f.paired = 1;
	heap_step(&s, &a, NULL);
	CHECK_EQ(s.live.len, 0); /* not indexed */
	struct heap_change c;
	heap_step(&s, &f, &c);
	CHECK_EQ(c.freed_size, 64);
	CHECK_EQ(s.frees, 1);
	CHECK_EQ(s.live_bytes, 0);
	CHECK_EQ(s.peak_bytes, 64);
	heap_release(&s);
}

static void test_heap_overflow(void)
{
	struct heap_stats s;
	struct tprof_trace t;
	memset(&t, 0, sizeof(t));
	t.path = "x.trace";
	heap_init(&s, 0);
	for (int i = 0; i < 3; i++)
		step(&s, ev(TPROF_EV_MALLOC, 1ull << 62, 0x10000 + 0x100 * (uint64_t)i));
	CHECK_EQ(heap_finish(&s, &t), 0);
	uint64_t at = seq + 1;
	step(&s, ev(TPROF_EV_MALLOC, 1ull << 62, 0x20000)); /* 2^64: past the largest total */
	CHECK_EQ(heap_finish(&s, &t), -1);
	CHECK_EQ(s.overflow_seq, at);
	CHECK(strstr(t.err, "pass 2^64") != NULL);
	heap_release(&s);
}

static int near(double a, double b, double eps)
{
	return fabs(a - b) <= eps;
}

static void test_ops_dist(void)
{
	/* 10, 20, ..., 100: mean 55, sd sqrt(916.67) = 30.277, t(9) = 2.26215716279821 (the quantile to 15
	 * digits, from the density integrated numerically, apart from the code's incomplete beta) */
	uint64_t v[10];
	for (int i = 0; i < 10; i++)
		v[i] = (uint64_t)(100 - 10 * i); /* unsorted on purpose */
	struct ops_dist d;
	ops_dist(v, 10, &d);
	CHECK_EQ(d.n, 10);
	CHECK(near(d.mean, 55, 1e-9));
	CHECK(near(d.sd, 30.2765035, 1e-6));
	double half = 2.26215716279821 * d.sd / sqrt(10);
	CHECK(near(d.ci_lo, 55 - half, 1e-9) && near(d.ci_hi, 55 + half, 1e-9));
	CHECK_EQ(d.p50, 50); /* nearest rank: ceil(0.5 * 10) = 5th */
	CHECK_EQ(d.p95, 100); /* ceil(9.5) = 10th */
	CHECK_EQ(d.min, 10);
	CHECK_EQ(d.max, 100);

	/* 41 values (40 degrees of freedom): t = 2.02107539030627 */
	uint64_t w[41];
	for (int i = 0; i < 41; i++)
		w[i] = (uint64_t)(1000 + (i % 2 ? 10 : -10));
	ops_dist(w, 41, &d);
	double sd = sqrt((41.0 * 100 - 41.0 * pow(d.mean - 1000, 2)) / 40); /* every value 10 from 1000 */
	CHECK(near(d.sd, sd, 1e-6));
	CHECK(near(d.ci_hi - d.mean, 2.02107539030627 * d.sd / sqrt(41), 1e-9));
	/* 4 values (3 degrees of freedom): 3.18244630528371, where a 3-digit table gave 3.182 */
	uint64_t x4[4] = {10, 20, 30, 40};
	ops_dist(x4, 4, &d);
	CHECK(near(d.ci_hi - d.mean, 3.18244630528371 * d.sd / 2, 1e-9));
	uint64_t x2[2] = {10, 20}; /* 1 degree of freedom: 12.7062047361747 */
	ops_dist(x2, 2, &d);
	CHECK(near(d.ci_hi - d.mean, 12.7062047361747 * d.sd / sqrt(2), 1e-9));
	uint64_t x27[27]; /* 26: 2.05552943864287 (the table's 2.056) */
	for (int i = 0; i < 27; i++)
		x27[i] = (uint64_t)(i * i);
	ops_dist(x27, 27, &d);
	CHECK(near(d.ci_hi - d.mean, 2.05552943864287 * d.sd / sqrt(27), 1e-8));

	/* one value: no spread, and no interval (no degree of freedom): NaN, written as null or "-" */
	uint64_t one = 7;
	ops_dist(&one, 1, &d);
	CHECK(d.sd == 0 && isnan(d.ci_lo) && isnan(d.ci_hi) && d.p99 == 7 && d.mean == 7);
	ops_dist(NULL, 0, &d);
	CHECK_EQ(d.n, 0);
}

static void test_welch(void)
{
	/* a: n 5, mean 10, sd 1; b: n 5, mean 12, sd 2. se = sqrt(1/5 + 4/5) = 1; df = 1 / (0.04/4 +
	 * 0.64/4) = 5.882..., not rounded (down to 5 it was 2.571, an interval too wide): t = 2.45882370969915 */
	struct ops_dist a = {.n = 5, .mean = 10, .sd = 1}, b = {.n = 5, .mean = 12, .sd = 2};
	double lo, hi;
	CHECK_EQ(ops_diff_ci(&a, &b, &lo, &hi), 0);
	CHECK(near(lo, 2 - 2.45882370969915, 1e-9) && near(hi, 2 + 2.45882370969915, 1e-9));
	/* constant samples: the difference is exact */
	struct ops_dist c = {.n = 3, .mean = 4}, e = {.n = 3, .mean = 9};
	CHECK_EQ(ops_diff_ci(&c, &e, &lo, &hi), 0);
	CHECK(lo == 5 && hi == 5);
	struct ops_dist single = {.n = 1, .mean = 3};
	CHECK_EQ(ops_diff_ci(&single, &b, &lo, &hi), -1);
}

/* Op costs of int-sized shapes past 2^63 in their 64-bit terms: exact where the cost fits 64 bits
 * (it was signed overflow, then 0), the largest where it does not, 0 for negative shapes. */
static void test_op_cost_wide(void)
{
	const int64_t big = 2147483647; /* INT_MAX: M = 1, N = K = INT_MAX */
	int64_t s[5] = {1, big, big, 0, 0};
	struct tprof_op_cost c = tprof_op_cost(TPROF_OP_tnn_matmul, s, 5);
	CHECK_EQ(c.flops, 2 * (uint64_t)big * (uint64_t)big);
	CHECK_EQ(c.bytes, 4 * ((uint64_t)big * (uint64_t)big + 2 * (uint64_t)big)); /* 2^64 - 4 */
	s[0] = 0; /* M = 0: nothing to compute, nothing moved */
	c = tprof_op_cost(TPROF_OP_tnn_matmul, s, 5);
	CHECK(c.flops == 0 && c.bytes == 0 && c.macs == 0);
	int64_t t[5] = {big, big, big, 0, 0};
	c = tprof_op_cost(TPROF_OP_tnn_matmul, t, 5);
	CHECK_EQ(c.flops, UINT64_MAX);
	CHECK_EQ(c.macs, UINT64_MAX);
	int64_t u[5] = {-1, 4, 4, 0, 0};
	c = tprof_op_cost(TPROF_OP_tnn_matmul, u, 5);
	CHECK(c.flops == 0 && c.bytes == 0);
	int64_t v[5] = {-3, -5, 7, 0, 0}; /* two negatives: still nothing (each is 0 before the formula) */
	c = tprof_op_cost(TPROF_OP_tnn_matmul, v, 5);
	CHECK(c.flops == 0 && c.bytes == 0 && c.macs == 0);
}

int main(void)
{
	RUN(test_op_cost_wide);
	RUN(test_heap_counts);
	RUN(test_heap_paired);
	RUN(test_heap_overflow);
	RUN(test_ops_dist);
	RUN(test_welch);
	return UT_DONE();
}
