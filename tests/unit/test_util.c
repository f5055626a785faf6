/* Unit tests of analyzer/base/util.c: the output writers that every command's names go through (CSV
 * fields: RFC 4180 quoting, exact bytes; names in text tables: escaped so that no byte can break a
 * line or a column, padded by characters, not bytes), and the top-k sort of the tables' rows. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "../unittest.h"

/* What the writers write for s (and width), in a buffer the caller frees; *ret receives
 * tprof_text_str's result. */
static char *csv_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	tprof_csv_str(f, s);
	fclose(f);
	return buf;
}

static char *text_of(const char *s, int width, int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	*ret = tprof_text_str(f, s, width);
	fclose(f);
	return buf;
}

#define CHECK_CSV(in, out)                    \
	do {                                  \
		char *ut_s = csv_of(in);      \
		CHECK_STR(ut_s, out);         \
		free(ut_s);                   \
	} while (0)

#define CHECK_TEXT(in, width, out, cols)                 \
	do {                                             \
		int ut_r;                                \
		char *ut_s = text_of(in, width, &ut_r);  \
		CHECK_STR(ut_s, out);                    \
		CHECK_EQ(ut_r, cols);                    \
		free(ut_s);                              \
	} while (0)

static void test_csv(void)
{
	CHECK_CSV("plain", "plain");
	CHECK_CSV("", "");
	CHECK_CSV(NULL, "");
	CHECK_CSV("a,b", "\"a,b\"");
	CHECK_CSV("say \"hi\"", "\"say \"\"hi\"\"\"");
	CHECK_CSV("\"", "\"\"\"\"");
	CHECK_CSV("line\nbreak", "\"line\nbreak\"");
	CHECK_CSV("cr\r", "\"cr\r\"");
	/* no quoting needed: kept byte for byte, invalid UTF-8 and control bytes included */
	CHECK_CSV("tab\there;semi 'q' \x01\x7f \xff\xfe", "tab\there;semi 'q' \x01\x7f \xff\xfe");
	CHECK_CSV("\xc3\xa9t\xc3\xa9, \xe2\x82\xac", "\"\xc3\xa9t\xc3\xa9, \xe2\x82\xac\"");
}

static void test_text(void)
{
	CHECK_TEXT("plain", 0, "plain", 5);
	CHECK_TEXT(NULL, 0, "", 0);
	CHECK_TEXT("line\nbreak\r\ttab", 0, "line\\nbreak\\r\\ttab", 18);
	CHECK_TEXT("back\\slash \"q\"", 0, "back\\\\slash \"q\"", 15);
	CHECK_TEXT("\x01\x1f ctl \x7f", 0, "\\x01\\x1f ctl \\x7f", 17);
	CHECK_TEXT("bad utf8 \xff\xfe \xc3", 0, "bad utf8 \\xff\\xfe \\xc3", 22);
	CHECK_TEXT("cut \xe2\x82", 0, "cut \\xe2\\x82", 12);
	/* U+009B (CSI) as UTF-8 is a control a terminal may obey; U+00A0 and above are text */
	CHECK_TEXT("c1 \xc2\x9b x \xc2\xa0", 0, "c1 \\xc2\\x9b x \xc2\xa0", 15);
	/* padding counts characters: "été" is 3 columns in 5 bytes */
	CHECK_TEXT("\xc3\xa9t\xc3\xa9", -6, "\xc3\xa9t\xc3\xa9   ", 6);
	CHECK_TEXT("\xc3\xa9t\xc3\xa9", 6, "   \xc3\xa9t\xc3\xa9", 6);
	CHECK_TEXT("a\tb", -6, "a\\tb  ", 6);
	CHECK_TEXT("a\tb", 6, "  a\\tb", 6);
	CHECK_TEXT("longer than width", -4, "longer than width", 17);
	CHECK_TEXT("longer than width", 4, "longer than width", 17);
	/* columns as a terminal shows them: CJK and emoji take 2, a combining accent 0 */
	CHECK_TEXT("\xe4\xb8\xad\xe6\x96\x87", -6, "\xe4\xb8\xad\xe6\x96\x87  ", 6);
	CHECK_TEXT("\xf0\x9f\x98\x80x", 5, "  \xf0\x9f\x98\x80x", 5);
	CHECK_TEXT("e\xcc\x81", -3, "e\xcc\x81  ", 3);
	CHECK_EQ(tprof_text_cols("\xea\xb0\x80\xef\xbc\xa1"), 4); /* a Hangul syllable, a fullwidth A */
	CHECK_EQ(tprof_text_cols("\xf0\x9f\x9a\x80\xe2\x9c\x85\xe2\x98\x95\xe2\x9a\xa1"), 8); /* rocket, check, coffee, bolt */
	CHECK_EQ(tprof_text_cols("\xe2\x98\x80\xe2\x9c\x93"), 2); /* sun, check mark: narrow */
	/* cut: a wide character that does not fit whole before the ellipsis leaves a space */
	char *cut = NULL;
	size_t cutlen = 0;
	FILE *f = open_memstream(&cut, &cutlen);
	CHECK_EQ(tprof_text_cut(f, "a\xe4\xb8\xad\xe6\x96\x87\xe5\xad\x97", -5), 5);
	fclose(f);
	CHECK_STR(cut, "a\xe4\xb8\xad\xe2\x80\xa6 ");
	free(cut);
}

struct row {
	uint32_t key, id;
};

static int by_key_then_id(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->key != y->key)
		return x->key > y->key ? -1 : 1; /* larger first, as the tables are */
	return x->id < y->id ? -1 : x->id > y->id;
}

/* tprof_sort_top's first k equal a full sort's, for every k, with many equal keys (ties broken by
 * id: a total order), any n. */
static void test_sort_top(void)
{
	uint32_t x = 12345;
	for (size_t n = 0; n < 3000; n = n * 3 + 1) {
		struct row *a = malloc((n + 1) * sizeof(*a)), *b = malloc((n + 1) * sizeof(*b));
		for (size_t i = 0; i < n; i++) {
			x = x * 1664525u + 1013904223u;
			a[i] = (struct row){x >> 28, (uint32_t)i}; /* 16 distinct keys */
		}
		for (size_t k = 0; k <= n; k = k * 2 + 1) {
			memcpy(b, a, n * sizeof(*a));
			tprof_sort_top(b, n, k, sizeof(*b), by_key_then_id);
			struct row *c = malloc((n + 1) * sizeof(*c));
			memcpy(c, a, n * sizeof(*a));
			tprof_sort(c, n, sizeof(*c), by_key_then_id);
			size_t want = k == 0 ? n : k; /* 0: all */
			CHECK(memcmp(b, c, (want < n ? want : n) * sizeof(*b)) == 0);
			free(c);
		}
		free(a);
		free(b);
	}
}

int main(void)
{
	RUN(test_csv);
	RUN(test_text);
	RUN(test_sort_top);
	return UT_DONE();
}
