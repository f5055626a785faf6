/* Unit tests of analyzer/out/gnuplot.c, analysis/series.c and analysis/plot.c: trace strings made
 * safe for gnuplot's data files (exact forms, and random bytes that must always come out as one
 * well-formed field), the downsampler (the maximum and every bucket's extremes kept, in time order), the flattening of nested kernel calls to
 * the innermost one, and the merging of boxes narrower than a pixel. */
#include <stdlib.h>

#include <stdlib.h>
#include <string.h>

#include "analysis/plot.h"
#include "analysis/series.h"
#include "out/gnuplot.h"
#include "base/util.h"
#include "../unittest.h"

static const char *text(const char *s)
{
	static char buf[PLOT_TEXT_SIZE];
	return plot_gp_text(buf, s);
}

static void test_text_forms(void)
{
	CHECK_STR(text("tnn_matmul"), "tnn_matmul");
	CHECK_STR(text(""), "");
	CHECK_STR(text(NULL), "");
	CHECK_STR(text("a\"b\\c"), "a\\042b\\134c");
	CHECK_STR(text("\n\r\t\x01\x7f"), "\\134n\\134r\\134t\\134x01\\134x7f");
	CHECK_STR(text("`touch x` @m #c 'q' $v"), "`touch x` @m #c 'q' $v");
	CHECK_STR(text("caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80"), "caf\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80");
	/* not UTF-8: a stray byte, an overlong '/', a surrogate, a C1 control, U+FFFE, a cut sequence */
	CHECK_STR(text("\xff"), "\xef\xbf\xbd");
	CHECK_STR(text("\xc0\xaf"), "\xef\xbf\xbd\xef\xbf\xbd");
	CHECK_STR(text("\xed\xa0\x80"), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	CHECK_STR(text("\xc2\x80"), "\xef\xbf\xbd");
	CHECK_STR(text("\xef\xbf\xbe"), "\xef\xbf\xbd");
	CHECK_STR(text("x\xe2\x80"), "x\xef\xbf\xbd\xef\xbf\xbd");
	char long_name[200];
	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = 0;
	const char *t = text(long_name);
	CHECK_EQ(strlen(t), PLOT_TEXT_CHARS);
	CHECK(strcmp(t + PLOT_TEXT_CHARS - 3, "...") == 0);
	long_name[PLOT_TEXT_CHARS] = 0; /* exactly the limit: not cut */
	CHECK_STR(text(long_name), long_name);
}

/* What gnuplot's data reader makes of a field: the octal escapes decoded. NULL when the text holds
 * anything a field must not (a quote, a backslash that is not one of the two escapes, a control
 * byte) or is not valid UTF-8. */
static char *gnuplot_reads(const char *s, char *out)
{
	size_t o = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		if (*p == '"' || *p < 0x20 || *p == 0x7f)
			return NULL;
		if (*p == '\\') {
			if (strncmp((const char *)p, "\\042", 4) == 0)
				out[o++] = '"';
			else if (strncmp((const char *)p, "\\134", 4) == 0)
				out[o++] = '\\';
			else
				return NULL;
			p += 4;
			continue;
		}
		int len;
		if (tprof_utf8_next(p, &len) < 0)
			return NULL;
		memcpy(out + o, p, (size_t)len);
		o += (size_t)len, p += len;
	}
	out[o] = 0;
	return out;
}

static void test_text_random(void)
{
	srand(12345);
	char in[80], back[PLOT_TEXT_SIZE];
	int bad = 0, same = 0;
	for (int i = 0; i < 20000; i++) {
		size_t n = (size_t)(rand() % 70);
		int ascii = i % 2;
		for (size_t k = 0; k < n; k++) {
			in[k] = (char)(ascii ? 0x20 + rand() % 95 : 1 + rand() % 255);
		}
		in[n] = 0;
		const char *t = text(in);
		if (strlen(t) >= PLOT_TEXT_SIZE || !gnuplot_reads(t, back)) {
			if (bad++ < 3)
				printf("# bad field for input %d: %s\n", i, t);
			continue;
		}
		/* printable ASCII comes back unchanged, unless it had to be cut */
		if (ascii && n <= PLOT_TEXT_CHARS)
			same += strcmp(back, in) == 0;
	}
	CHECK_EQ(bad, 0);
	int expect = 0;
	srand(12345);
	for (int i = 0; i < 20000; i++) {
		size_t n = (size_t)(rand() % 70);
		for (size_t k = 0; k < n; k++)
			(void)rand();
		expect += i % 2 && n <= PLOT_TEXT_CHARS;
	}
	CHECK_EQ(same, expect);
}

static void test_series(void)
{
	struct series s;
	series_init(&s, 1000000, 100, SERIES_FIRST | SERIES_FORWARD);
	uint64_t v = 1000, max_v = 0, max_t = 0;
	srand(7);
	/* a random walk with one spike, and a plateau at the maximum reached twice */
	for (uint64_t t = 0; t < 1000000; t += 7) {
		int d = rand() % 21 - 10;
		if ((int64_t)v + d > 0)
			v = (uint64_t)((int64_t)v + d);
		uint64_t x = t == 500003 ? 1000000 : t == 700000 ? 1000000 : v;
		if (x > max_v)
			max_v = x, max_t = t;
		series_add(&s, t, x);
	}
	series_end(&s);
	CHECK_EQ(s.max_v, max_v);
	CHECK_EQ(s.max_t, max_t);
	const struct series_point *p = s.out;
	size_t n = s.n;
	CHECK(n > 100 && n <= 400);
	int has_max = 0;
	uint64_t top = 0;
	for (size_t i = 0; i < n; i++) {
		has_max |= p[i].t == max_t && p[i].v == max_v;
		top = p[i].v > top ? p[i].v : top;
		if (i)
			CHECK(p[i].t >= p[i - 1].t);
	}
	CHECK(has_max);
	CHECK_EQ(top, max_v);
	series_free(&s);

	/* everything at one time, and a span of 0: one bucket, its four values */
	series_init(&s, 0, 10, SERIES_FIRST | SERIES_FORWARD);
	uint64_t vals[] = {5, 9, 1, 9, 3};
	for (int i = 0; i < 5; i++)
		series_add(&s, 42, vals[i]);
	series_end(&s);
	CHECK_EQ(s.n, 4);
	CHECK_EQ(s.out[0].v, 5);
	CHECK_EQ(s.out[1].v, 9); /* the first 9: where the maximum was first reached */
	CHECK_EQ(s.out[2].v, 1);
	CHECK_EQ(s.out[3].v, 3);
	series_free(&s);

	/* without SERIES_FIRST (the Chrome counters): lowest, highest, last of the bucket */
	series_init(&s, 0, 10, 0);
	for (int i = 0; i < 5; i++)
		series_add(&s, 42, vals[i]);
	series_end(&s);
	CHECK_EQ(s.n, 3);
	CHECK_EQ(s.out[0].v, 9);
	CHECK_EQ(s.out[1].v, 1);
	CHECK_EQ(s.out[2].v, 3);
	series_free(&s);

	/* a time that goes back is taken forward with SERIES_FORWARD */
	series_init(&s, 1000, 10, SERIES_FIRST | SERIES_FORWARD);
	series_add(&s, 500, 1);
	series_add(&s, 100, 7);
	series_end(&s);
	CHECK_EQ(s.n, 2);
	CHECK_EQ(s.out[1].t, 500);
	series_free(&s);

	series_init(&s, 100, 10, SERIES_FIRST);
	series_end(&s);
	CHECK_EQ(s.n, 0);
	series_free(&s);
}

static void test_flatten(void)
{
	/* A calls B, then C, which calls D; E is a second top-level call; F takes no time inside A */
	struct plot_span calls[] = {
		{40, 50, 4}, {0, 100, 1}, {30, 60, 3}, {10, 20, 2}, {200, 210, 5}, {70, 70, 6},
	};
	struct plot_box *b;
	size_t n = plot_flatten(calls, sizeof(calls) / sizeof(calls[0]), &b);
	const struct plot_box want[] = {{0, 10, 1, 0},  {10, 20, 2, 0}, {20, 30, 1, 0}, {30, 40, 3, 0},
					{40, 50, 4, 0}, {50, 60, 3, 0}, {60, 100, 1, 0}, {200, 210, 5, 0}};
	CHECK_EQ(n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < n && i < sizeof(want) / sizeof(want[0]); i++) {
		CHECK_EQ(b[i].t0, want[i].t0);
		CHECK_EQ(b[i].t1, want[i].t1);
		CHECK_EQ(b[i].key, want[i].key);
	}
	free(b);

	/* a nested call that ends after its caller (clock rounding): no overlap, nothing lost */
	struct plot_span skew[] = {{0, 100, 1}, {90, 105, 2}, {105, 120, 3}};
	n = plot_flatten(skew, 3, &b);
	CHECK_EQ(n, 3);
	for (size_t i = 1; i < n; i++)
		CHECK(b[i].t0 >= b[i - 1].t1);
	CHECK_EQ(b[n - 1].t1, 120);
	free(b);

	CHECK_EQ(plot_flatten(NULL, 0, &b), 0);
	free(b);
}

static void test_merge(void)
{
	/* 1000 boxes of 1 ns, keys 1 and 2 alternating with key 1 twice as long, then a wide box */
	struct plot_box b[1002];
	size_t n = 0;
	for (uint64_t t = 0; t < 1500; t += 3) {
		b[n++] = (struct plot_box){t, t + 2, 1, 0};
		b[n++] = (struct plot_box){t + 2, t + 3, 2, 0};
	}
	b[n++] = (struct plot_box){5000, 6000, 3, 0};
	size_t m = plot_merge(b, n, 30);
	CHECK(m >= 50 && m <= 52); /* 1500 ns in runs of 30, and the wide box */
	for (size_t i = 0; i + 1 < m; i++) {
		CHECK(b[i].t1 - b[i].t0 >= 30 || i == m - 2);
		CHECK_EQ(b[i].key, 1);
		CHECK_EQ(b[i].mixed, 1);
	}
	CHECK_EQ(b[m - 1].t0, 5000);
	CHECK_EQ(b[m - 1].key, 3);
	CHECK_EQ(b[m - 1].mixed, 0);

	/* a gap of half the threshold ends a run; lone narrow boxes stay as they are */
	struct plot_box c[] = {{0, 2, 7, 0}, {2, 4, 7, 0}, {20, 22, 8, 0}};
	m = plot_merge(c, 3, 30);
	CHECK_EQ(m, 2);
	CHECK_EQ(c[0].t1, 4);
	CHECK_EQ(c[0].mixed, 0);
	CHECK_EQ(c[1].key, 8);
	CHECK_EQ(plot_merge(c, 2, 0), 2);
}

int main(void)
{
	RUN(test_text_forms);
	RUN(test_text_random);
	RUN(test_series);
	RUN(test_flatten);
	RUN(test_merge);
	return UT_DONE();
}
