/* Unit tests of the leak suppressions in analyzer/analysis/suppress.c: LeakSanitizer's pattern rules
 * (substring, '*', '^', '$'), parsing (comments, blanks, errors with file:line), which frames
 * leak: and leak_site: look at, and that the built-in list matches loader and C-library sites but
 * no site in a program's own code. */
#include <stdlib.h>
#include <string.h>

#include "analysis/suppress.h"
#include "base/util.h"
#include "../unittest.h"

static void test_patterns(void)
{
	CHECK(supp_pattern_match("foo", "xfooy"));
	CHECK(supp_pattern_match("^foo", "foobar"));
	CHECK(!supp_pattern_match("^foo", "xfoo"));
	CHECK(supp_pattern_match("foo$", "xfoo"));
	CHECK(!supp_pattern_match("foo$", "foox"));
	CHECK(supp_pattern_match("^foo$", "foo"));
	CHECK(!supp_pattern_match("^foo$", "fooo"));
	CHECK(supp_pattern_match("a*c", "abc"));
	CHECK(supp_pattern_match("a*c", "ac"));
	CHECK(supp_pattern_match("^a*b*c$", "aXbYbZc"));
	CHECK(!supp_pattern_match("^a*b*c$", "aXbYbZcd"));
	CHECK(supp_pattern_match("*", "anything"));
	CHECK(!supp_pattern_match("*", ""));
	CHECK(!supp_pattern_match("foo", NULL));
	CHECK(!supp_pattern_match("^_nl_", "my_nl_parse"));
	CHECK(supp_pattern_match("/ld-linux", "/lib64/ld-linux-x86-64.so.2"));
	CHECK(!supp_pattern_match("/ld-linux", "/home/u/build-linux/prog"));
}

static void test_parse(void)
{
	struct suppressions s;
	char err[256];
	supp_init(&s);
	CHECK_EQ(supp_parse(&s, "f.supp", "# comment\n\n  leak:foo  \r\nleak_site:^bar$\n\tleak:*", err,
			    sizeof(err)),
		 0);
	CHECK_EQ(s.n, 3);
	CHECK_STR(s.rules[0].text, "leak:foo");
	CHECK_STR(s.rules[0].origin, "f.supp:3");
	CHECK_EQ(s.rules[0].site_only, 0);
	CHECK_STR(s.rules[1].glob, "bar");
	CHECK_EQ(s.rules[1].site_only, 1);
	CHECK_STR(s.rules[2].origin, "f.supp:5");

	CHECK_EQ(supp_parse(&s, "g.supp", "leak:ok\nleek:foo\n", err, sizeof(err)), -1);
	CHECK(strstr(err, "g.supp:2: not a suppression") != NULL);
	CHECK_EQ(s.n, 3); /* a bad file adds nothing, not even its good lines */
	CHECK_EQ(supp_parse(&s, "h.supp", "leak:\n", err, sizeof(err)), -1);
	CHECK(strstr(err, "h.supp:1: empty pattern") != NULL);
	CHECK_EQ(supp_parse(&s, "i.supp", "interceptor_via_fun:x\n", err, sizeof(err)), -1);
	CHECK_EQ(supp_load(&s, "/nonexistent/x.supp", err, sizeof(err)), -1);
	CHECK(strstr(err, "/nonexistent/x.supp") != NULL);
	supp_free(&s);
}

static struct stack_frame frame(const char *fn, const char *module_path)
{
	struct stack_frame f;
	memset(&f, 0, sizeof(f));
	f.sym.function = fn;
	f.module_path = module_path;
	return f;
}

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define LD "/lib64/ld-linux-x86-64.so.2"
#define EXE "/home/u/prog"

static void test_scope(void)
{
	struct suppressions s;
	char err[256];
	/* strdup in the C library called by the program's plant() */
	struct stack_frame dup[] = {frame("__strdup", LIBC), frame("plant", EXE), frame("main", EXE),
				    frame("__libc_start_main", LIBC)};
	supp_init(&s);
	supp_parse(&s, "t", "leak_site:plant\n", err, sizeof(err));
	CHECK(supp_match(&s, dup, 4) == NULL); /* plant is past the allocation site */
	supp_free(&s);
	supp_init(&s);
	supp_parse(&s, "t", "leak:plant\n", err, sizeof(err));
	CHECK(supp_match(&s, dup, 4) == &s.rules[0]);
	supp_free(&s);
	supp_init(&s);
	supp_parse(&s, "t", "leak_site:strdup\nleak_site:libc.so\n", err, sizeof(err));
	CHECK(supp_match(&s, dup, 4) == &s.rules[0]);
	supp_free(&s);
}

static void test_default(void)
{
	struct suppressions s;
	supp_init(&s);
	supp_add_default(&s);
	CHECK(s.n > 5);
	for (size_t i = 0; i < s.n; i++)
		CHECK(s.rules[i].site_only);
	/* the loader's own allocation */
	struct stack_frame ld[] = {frame("_dl_new_object", LD), frame("_dl_map_object", LD),
				   frame("dlopen", LIBC), frame("main", EXE)};
	CHECK(supp_match(&s, ld, 4) != NULL);
	/* a constructor of a dlopen'ed library runs under the loader: still the library's leak */
	struct stack_frame ctor[] = {frame("plugin_ctor", "/tmp/libp.so"),
				     frame("call_init", LD),
				     frame("_dl_init", LD),
				     frame("_dl_open", LD),
				     frame("dlopen", LIBC),
				     frame("main", EXE)};
	CHECK(supp_match(&s, ctor, 6) == NULL);
	/* locale data, and a program's functions that look like the C library's */
	struct stack_frame loc[] = {frame("_nl_load_locale", LIBC), frame("setlocale", LIBC),
				    frame("main", EXE)};
	CHECK(supp_match(&s, loc, 3) != NULL);
	struct stack_frame mine[] = {frame("my_nl_cache", EXE), frame("nss_init", EXE),
				     frame("setlocale_wrap", EXE), frame("main", EXE),
				     frame("_dl_start_user", LD)};
	CHECK(supp_match(&s, mine, 5) == NULL);
	struct stack_frame dup[] = {frame("__strdup", LIBC), frame("main", EXE)};
	CHECK(supp_match(&s, dup, 2) == NULL);
	supp_free(&s);
}

int main(void)
{
	RUN(test_patterns);
	RUN(test_parse);
	RUN(test_scope);
	RUN(test_default);
	return UT_DONE();
}
