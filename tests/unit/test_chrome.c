/* Unit tests of the Chrome trace-event export (analysis/timeline.c, out/chrome.c) on inputs no real program gives
 * on demand: the counter thinning (bounded, the exact peak and its time kept), ranges that cross
 * kernel calls (random nestings: after snapping nothing needs clipping), and a hand-made trace with
 * RSS samples, hostile thread names, a range pushed inside a call and one never popped, steps and
 * parameters, written out and checked piece by piece. */
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "out/chrome.h"
#include "analysis/heap.h"
#include "trace/reader.h"
#include "trace/reader_int.h" /* a fake trace's private part */
#include "base/util.h"
#include "cmd/cmdline.h"
#include "../unittest.h"

/* --steps as tprof export hands it to the timeline (cmd/cmdline.c parses it). */
static int parse_steps(const char *text, struct chrome_options *o)
{
	if (cmd_parse_steps(text, &o->step_first, &o->step_last) != 0)
		return -1;
	o->steps = 1;
	return 0;
}

static uint64_t rng = 88172645463325252ull;

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void test_thin_bounded_peak_kept(void)
{
	struct series c;
	series_init(&c, 10000000, 1000, SERIES_CHANGES);
	uint64_t v = 0, top = 0, top_ns = 0;
	for (uint64_t i = 0; i < 2000000; i++) {
		uint64_t ns = i * 5;
		v = (v + next_rand() % 2001) > 1000 ? v + next_rand() % 2001 - 1000 : v + next_rand() % 1000;
		if (v > top)
			top = v, top_ns = ns;
		series_add(&c, ns, v);
	}
	series_end(&c);
	CHECK(c.n <= 3 * 1000 + 3);
	CHECK(c.changes > 1000000);
	uint64_t m = 0, m_ns = 0;
	for (size_t i = 0; i < c.n; i++) {
		if (c.out[i].v > m)
			m = c.out[i].v, m_ns = c.out[i].t;
		if (i)
			CHECK(c.out[i].v != c.out[i - 1].v);
	}
	CHECK_EQ(m, top);
	CHECK_EQ(m_ns, top_ns);
	CHECK_EQ(c.out[c.n - 1].v, v); /* the level at the end */
	free(c.out);
}

static void test_thin_few_changes_all_kept(void)
{
	struct series c;
	series_init(&c, 1000000, 4096, SERIES_CHANGES);
	uint64_t vals[] = {0, 10, 10, 30, 5, 5, 40, 0};
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		series_add(&c, i * 10000, vals[i]);
	series_end(&c);
	CHECK_EQ(c.n, 6); /* repeats dropped */
	CHECK_EQ(c.out[1].v, 10);
	CHECK_EQ(c.out[1].t, 10000);
	CHECK_EQ(c.out[2].t, 30000);
	CHECK_EQ(c.out[5].v, 0);
	free(c.out);

	/* times that go back (threads' interpolated clocks) stay as they are, buckets do not */
	series_init(&c, 1000, 10, SERIES_CHANGES);
	series_add(&c, 500, 1);
	series_add(&c, 100, 7);
	series_add(&c, 510, 2);
	series_end(&c);
	CHECK_EQ(c.n, 3);
	CHECK_EQ(c.out[1].t, 100);
	CHECK_EQ(c.out[1].v, 7);
	free(c.out);
}

static struct slice mk(uint8_t kind, uint64_t a, uint64_t b, size_t ix)
{
	struct slice s;
	memset(&s, 0, sizeof(s));
	s.kind = kind;
	s.start = s.rec_start = a;
	s.end = s.rec_end = b;
	s.ix = ix;
	s.parent = -1;
	return s;
}

static void test_snap_cases(void)
{
	struct slice k[] = {mk(SL_KERNEL, 10, 20, 1), mk(SL_KERNEL, 12, 15, 0), mk(SL_KERNEL, 40, 50, 2)};
	uint64_t clipped = 0;
	nest(k, 3, &clipped);
	CHECK_EQ(clipped, 0);
	struct slice r = mk(SL_RANGE, 14, 30, 0); /* pushed inside both calls, popped after them */
	CHECK(snap_range(&r, k, 3));
	CHECK_EQ(r.start, 20);
	CHECK_EQ(r.end, 30);
	r = mk(SL_RANGE, 5, 13, 0); /* popped inside both */
	CHECK(snap_range(&r, k, 3));
	CHECK_EQ(r.start, 5);
	CHECK_EQ(r.end, 10);
	r = mk(SL_RANGE, 11, 14, 0); /* inside the outer call, crossing the inner one */
	CHECK(snap_range(&r, k, 3));
	CHECK_EQ(r.start, 11);
	CHECK_EQ(r.end, 12);
	r = mk(SL_RANGE, 13, 14, 0); /* inside both: nests as it is */
	CHECK(!snap_range(&r, k, 3));
	r = mk(SL_RANGE, 12, 15, 0); /* the same interval as a call, and touching ones */
	CHECK(!snap_range(&r, k, 3));
	r = mk(SL_RANGE, 20, 40, 0);
	CHECK(!snap_range(&r, k, 3));
	r = mk(SL_RANGE, 45, 60, 0);
	CHECK(snap_range(&r, k, 3));
	CHECK_EQ(r.start, 50);
	r = mk(SL_RANGE, 14, 45, 0); /* from inside one top-level call to inside the next */
	CHECK(snap_range(&r, k, 3));
	CHECK_EQ(r.start, 20);
	CHECK_EQ(r.end, 40);
}

/* Random nested calls and random nested ranges on one thread: once the ranges are snapped, the two
 * together nest without any clipping. */
static void test_snap_random(void)
{
	for (int round = 0; round < 300; round++) {
		size_t cap = 200, nk = 0, nr = 0;
		struct slice *k = xcalloc(cap, sizeof(*k)), *r = xcalloc(cap, sizeof(*r));
		struct slice *all = xcalloc(2 * cap, sizeof(*all));
		/* a random walk of enter/exit for calls and push/pop for ranges, on one clock */
		uint64_t now = 0, kst[64], rst[64];
		size_t kd = 0, rd = 0;
		for (int step = 0; step < 300; step++) {
			now += next_rand() % 3; /* equal times happen */
			switch (next_rand() % 4) {
			case 0:
				if (kd < 64 && nk + kd < cap)
					kst[kd++] = now;
				break;
			case 1:
				if (kd)
					k[nk] = mk(SL_KERNEL, kst[--kd], now, nk), nk++;
				break;
			case 2:
				if (rd < 64 && nr + rd < cap)
					rst[rd++] = now;
				break;
			default:
				if (rd)
					r[nr] = mk(SL_RANGE, rst[--rd], now, nr), nr++;
			}
		}
		while (kd)
			k[nk] = mk(SL_KERNEL, kst[--kd], now, nk), nk++;
		while (rd)
			r[nr] = mk(SL_RANGE, rst[--rd], now, nr), nr++;
		uint64_t clipped = 0;
		nest(k, nk, &clipped);
		CHECK_EQ(clipped, 0);
		for (size_t i = 0; i < nr; i++)
			snap_range(&r[i], k, nk);
		memcpy(all, k, nk * sizeof(*k));
		memcpy(all + nk, r, nr * sizeof(*r));
		nest(all, nk + nr, &clipped);
		CHECK_EQ(clipped, 0);
		for (size_t i = 0; i < nk + nr; i++) /* kernel calls keep their times */
			if (all[i].kind == SL_KERNEL)
				CHECK(all[i].start == all[i].rec_start && all[i].end == all[i].rec_end);
		free(k);
		free(r);
		free(all);
	}
}

static void test_parse_steps(void)
{
	struct chrome_options o;
	memset(&o, 0, sizeof(o));
	CHECK_EQ(parse_steps("2-5", &o), 0);
	CHECK(o.steps && o.step_first == 2 && o.step_last == 5);
	CHECK_EQ(parse_steps("3", &o), 0);
	CHECK(o.step_first == 3 && o.step_last == 3);
	CHECK_EQ(parse_steps("4-", &o), 0);
	CHECK(o.step_first == 4 && o.step_last == UINT64_MAX);
	CHECK_EQ(parse_steps("5-2", &o), -1);
	CHECK_EQ(parse_steps("2:5", &o), -1);
	CHECK_EQ(parse_steps("-2", &o), -1);
	CHECK_EQ(parse_steps("", &o), -1);
	CHECK_EQ(parse_steps("1-x", &o), -1);
	CHECK_EQ(parse_steps(NULL, &o), -1);
}

/* ---- a hand-made trace ---- */

struct fake {
	struct tprof_trace t;
	struct tprof_thread_info th[2];
	struct tprof_kcall k[3];
	int64_t shape[3];
	struct tprof_annot a[16];
	struct tprof_rss rss[4];
	char *op_names[2], *op_shape_names[2], *annot_names[5];
};

static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	struct tprof_trace *t = &f->t;
	t->path = "fake.trace";
	t->info.pid = 100;
	t->info.clock = TPROF_CLOCK_MONOTONIC; /* ticks are nanoseconds: no clock pairs needed */
	t->info.program = "prog\"ram";
	t->end_ns = 100000;
	t->priv = xcalloc(1, sizeof(struct tprof_reader_priv)); /* no events blocks: no heap events */
	f->th[0] = (struct tprof_thread_info){.tid = 100, .name = "main"};
	f->th[1] = (struct tprof_thread_info){.tid = 101, .name = "w\"k\n\\\x01\xff"};
	t->threads = f->th;
	t->nthreads = 2;
	f->op_names[1] = "tnn_matmul";
	f->op_shape_names[1] = "M,N,K";
	t->op_names = f->op_names;
	t->op_shape_names = f->op_shape_names;
	t->nop_names = 2;
	f->shape[0] = 64, f->shape[1] = 768, f->shape[2] = 768;
	/* thread 100: calls [1000, 5000] and [20000, 21000]; thread 101: [3000, 4000] */
	f->k[0] = (struct tprof_kcall){.t0 = 1000, .t1 = 5000, .flops = 4000, .bytes = 100, .tid = 100, .op = 1,
				       .nshape = 3};
	f->k[1] = (struct tprof_kcall){.t0 = 20000, .t1 = 21000, .flops = 7, .tid = 100, .op = 1, .nshape = 3};
	f->k[2] = (struct tprof_kcall){.t0 = 3000, .t1 = 4000, .flops = 1, .bytes = 1, .tid = 101, .op = 1};
	t->kcalls = f->k;
	t->nkcalls = 3;
	t->kshape = f->shape;
	t->nkshape = 3;
	f->annot_names[1] = "outer";
	f->annot_names[2] = "inside";
	f->annot_names[3] = "open";
	f->annot_names[4] = "n";
	t->annot_names = f->annot_names;
	t->nannot_names = 5;
	struct tprof_annot *a = f->a;
	size_t n = 0;
	a[n++] = (struct tprof_annot){.tick = 500, .tid = 100, .kind = TPROF_ANNOT_STEP};
	a[n++] = (struct tprof_annot){.tick = 600, .tid = 100, .name = 1, .kind = TPROF_ANNOT_PUSH};
	a[n++] = (struct tprof_annot){.tick = 2000, .tid = 100, .name = 2, .kind = TPROF_ANNOT_PUSH}; /* in a call */
	a[n++] = (struct tprof_annot){.tick = 8000, .tid = 100, .kind = TPROF_ANNOT_POP};
	a[n++] = (struct tprof_annot){.tick = 9000, .tid = 100, .kind = TPROF_ANNOT_POP};
	a[n++] = (struct tprof_annot){.tick = 10000, .tid = 100, .kind = TPROF_ANNOT_STEP};
	a[n++] = (struct tprof_annot){.tick = 11000, .tid = 100, .name = 3, .kind = TPROF_ANNOT_PUSH}; /* never popped */
	a[n++] = (struct tprof_annot){.tick = 12000, .tid = 101, .name = 2, .kind = TPROF_ANNOT_MARK};
	a[n++] = (struct tprof_annot){.tick = 13000, .tid = 100, .name = 4, .kind = TPROF_ANNOT_PARAM, .value = 1};
	a[n++] = (struct tprof_annot){.tick = 14000, .tid = 100, .name = 4, .kind = TPROF_ANNOT_PARAM, .value = -5};
	a[n++] = (struct tprof_annot){.tick = 30000, .tid = 100, .kind = TPROF_ANNOT_STEP};
	a[n++] = (struct tprof_annot){.tick = 30500, .tid = 100, .kind = TPROF_ANNOT_POP};   /* closes "open" */
	a[n++] = (struct tprof_annot){.tick = 31000, .tid = 100, .kind = TPROF_ANNOT_POP};   /* pop without push */
	a[n++] = (struct tprof_annot){.tick = 32000, .tid = 100, .name = 3, .kind = TPROF_ANNOT_PUSH}; /* open */
	t->annots = a;
	t->nannots = n;
	f->rss[0] = (struct tprof_rss){1000, 4096};
	f->rss[1] = (struct tprof_rss){11000, 8192};
	f->rss[2] = (struct tprof_rss){21000, 8192};
	f->rss[3] = (struct tprof_rss){31000, 4096};
	t->rss = f->rss;
	t->nrss = 4;
}

static char *export_fake(struct fake *f, const struct chrome_options *o, int *rc)
{
	struct chrome_doc *d;
	*rc = chrome_build(&f->t, o, &d);
	if (*rc)
		return NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	chrome_write(d, m);
	fclose(m);
	chrome_free(d);
	return buf;
}

static int has(const char *hay, const char *needle)
{
	if (!strstr(hay, needle)) {
		printf("# missing: %s\n", needle);
		return 0;
	}
	return 1;
}

static void test_fake_trace(void)
{
	struct fake f;
	fake_init(&f);
	struct chrome_options o;
	memset(&o, 0, sizeof(o));
	int rc;
	char *s = export_fake(&f, &o, &rc);
	CHECK_EQ(rc, 0);
	if (!s)
		return;
	CHECK(has(s, "\"args\":{\"name\":\"prog\\\"ram\"}"));
	CHECK(has(s, "\"tid\":101,\"name\":\"thread_name\",\"args\":{\"name\":\"w\\\"k\\u000a\\\\\\u0001\\ufffd\"}"));
	CHECK(has(s, "{\"ph\":\"X\",\"ts\":1.000,\"pid\":100,\"tid\":100,\"dur\":4.000,\"cat\":\"kernel\","
		     "\"name\":\"tnn_matmul\",\"args\":{\"flops\":4000,\"bytes\":100,\"gflops_per_s\":1,"
		     "\"intensity\":40,\"shape\":{\"M\":64,\"N\":768,\"K\":768}}}"));
	CHECK(has(s, "\"name\":\"tnn_matmul\",\"args\":{\"flops\":1,\"bytes\":1,\"gflops_per_s\":0.001,"
		     "\"intensity\":1,\"shape\":{}}"));
	/* "inside" was pushed at 2 us, inside the call [1, 5], popped at 8: it now begins after the call */
	CHECK(has(s, "\"ts\":5.000,\"pid\":100,\"tid\":100,\"dur\":3.000,\"cat\":\"range\",\"name\":\"inside\","
		     "\"args\":{\"moved_out_of_kernel\":true,\"recorded_ts\":2.000,\"recorded_dur\":6.000}}"));
	CHECK(has(s, "\"ts\":0.600,\"pid\":100,\"tid\":100,\"dur\":8.400,\"cat\":\"range\",\"name\":\"outer\",\"args\":{}}"));
	CHECK(has(s, "\"ts\":11.000,\"pid\":100,\"tid\":100,\"dur\":19.500,\"cat\":\"range\",\"name\":\"open\",\"args\":{}}"));
	/* never popped: closed at the thread's last event (32 us, the push itself) */
	CHECK(has(s, "\"ts\":32.000,\"pid\":100,\"tid\":100,\"dur\":0.000,\"cat\":\"range\",\"name\":\"open\","
		     "\"args\":{\"unclosed\":true}}"));
	CHECK(has(s, "{\"ph\":\"i\",\"ts\":12.000,\"pid\":100,\"tid\":101,\"s\":\"t\",\"cat\":\"mark\",\"name\":\"inside\"}"));
	CHECK(has(s, "\"ts\":0.500,\"pid\":100,\"tid\":4194304,\"dur\":9.500,\"cat\":\"step\",\"name\":\"step 0\""));
	CHECK(has(s, "\"ts\":10.000,\"pid\":100,\"tid\":4194304,\"dur\":20.000,\"cat\":\"step\",\"name\":\"step 1\""));
	CHECK(has(s, "{\"ph\":\"C\",\"ts\":1.000,\"pid\":100,\"tid\":100,\"name\":\"RSS\",\"args\":{\"bytes\":4096}}"));
	CHECK(has(s, "{\"ph\":\"C\",\"ts\":11.000,\"pid\":100,\"tid\":100,\"name\":\"RSS\",\"args\":{\"bytes\":8192}}"));
	CHECK(has(s, "{\"ph\":\"C\",\"ts\":31.000,\"pid\":100,\"tid\":100,\"name\":\"RSS\",\"args\":{\"bytes\":4096}}"));
	CHECK(!strstr(s, "\"ts\":21.000,\"pid\":100,\"tid\":100,\"name\":\"RSS\"")); /* no change */
	CHECK(has(s, "\"rss_samples\":3,\"rss_max_bytes\":8192"));
	CHECK(has(s, "\"params\":{\"n\":-5}"));
	CHECK(has(s, "\"ranges_unclosed\":1,\"ranges_snapped\":1,\"slices_clipped\":0"));
	/* the heap counter: no heap events, one sample of 0 where the export begins */
	CHECK(has(s, "{\"ph\":\"C\",\"ts\":0.000,\"pid\":100,\"tid\":100,\"name\":\"live heap\",\"args\":{\"bytes\":0}}"));
	free(s);

	/* step 1 only: [10, 30] us */
	CHECK_EQ(parse_steps("1", &o), 0);
	s = export_fake(&f, &o, &rc);
	CHECK_EQ(rc, 0);
	if (!s)
		return;
	CHECK(!strstr(s, "\"name\":\"step 0\""));
	CHECK(has(s, "\"name\":\"step 1\""));
	CHECK(!strstr(s, "\"ts\":1.000,\"pid\":100,\"tid\":100,\"dur\":4.000,\"cat\":\"kernel\""));
	CHECK(has(s, "\"ts\":20.000,\"pid\":100,\"tid\":100,\"dur\":1.000,\"cat\":\"kernel\""));
	CHECK(!strstr(s, "\"name\":\"outer\""));
	/* "open" [11, 30.5] is cut at the window's end, 30 us */
	CHECK(has(s, "\"ts\":11.000,\"pid\":100,\"tid\":100,\"dur\":19.000,\"cat\":\"range\",\"name\":\"open\","
		     "\"args\":{\"cut_at_steps\":true,\"recorded_ts\":11.000,\"recorded_dur\":19.500}}"));
	CHECK(has(s, "\"dropped_kernels\":2,\"dropped_ranges\":3,\"dropped_marks\":0"));
	CHECK(!strstr(s, "\"ts\":1.000,\"pid\":100,\"tid\":100,\"name\":\"RSS\""));
	free(s);

	CHECK_EQ(parse_steps("2", &o), 0);
	s = export_fake(&f, &o, &rc);
	CHECK_EQ(rc, -1);
	CHECK(has(f.t.err, "--steps asks for step 2, but the program marked 3 step boundaries (tprof_step): steps 0 to 1"));
	free(s);
	CHECK_EQ(parse_steps("2-", &o), 0); /* the tail after the last boundary */
	s = export_fake(&f, &o, &rc);
	CHECK_EQ(rc, 0);
	if (s) {
		CHECK(!strstr(s, "\"name\":\"step 1\""));
		CHECK(has(s, "{\"ph\":\"i\",\"ts\":30.000,\"pid\":100,\"tid\":4194304,\"s\":\"t\",\"cat\":\"step\","
			     "\"name\":\"step boundary\",\"args\":{\"boundary\":2}}"));
		CHECK(has(s, "\"name\":\"open\",\"args\":{\"unclosed\":true}}"));
	}
	free(s);

	o.steps = 0;
	o.min_dur_ns = 1001;
	s = export_fake(&f, &o, &rc);
	CHECK_EQ(rc, 0);
	if (s) {
		CHECK(has(s, "\"kernel_slices\":1,"));
		CHECK(has(s, "\"dropped_shorter_than_min_dur\":2"));
	}
	free(s);
	free(f.t.priv);
}

int main(void)
{
	RUN(test_thin_bounded_peak_kept);
	RUN(test_thin_few_changes_all_kept);
	RUN(test_snap_cases);
	RUN(test_snap_random);
	RUN(test_parse_steps);
	RUN(test_fake_trace);
	return UT_DONE();
}
