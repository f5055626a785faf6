/* Unit tests of the commands' shared command line (analyzer/cmd/cmdline.c): counts and --steps
 * ranges, which options a command accepts, the exit statuses of usage errors, --csv tables, the
 * FILE arguments a command takes, and a command's own options handed to its callback. Messages go
 * to stderr; the checks look at what was parsed and at the statuses. */
#include <stdlib.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "../unittest.h"

static void test_counts_and_steps(void)
{
	size_t n = 99;
	CHECK_EQ(cmd_parse_count("0", &n), 0);
	CHECK_EQ(n, 0);
	CHECK_EQ(cmd_parse_count("123456789012", &n), 0);
	CHECK_EQ(n, 123456789012ull);
	CHECK_EQ(cmd_parse_count("1234567890123", &n), -1); /* 13 digits: refused, never wraps */
	CHECK_EQ(cmd_parse_count("-1", &n), -1);
	CHECK_EQ(cmd_parse_count("1e3", &n), -1);
	CHECK_EQ(cmd_parse_count("", &n), -1);
	CHECK_EQ(cmd_parse_count(NULL, &n), -1);

	uint64_t a, b;
	CHECK_EQ(cmd_parse_steps("2-5", &a, &b), 0);
	CHECK(a == 2 && b == 5);
	CHECK_EQ(cmd_parse_steps("3", &a, &b), 0);
	CHECK(a == 3 && b == 3);
	CHECK_EQ(cmd_parse_steps("4-", &a, &b), 0);
	CHECK(a == 4 && b == UINT64_MAX);
	CHECK_EQ(cmd_parse_steps("5-2", &a, &b), -1);
	CHECK_EQ(cmd_parse_steps("-2", &a, &b), -1);
	CHECK_EQ(cmd_parse_steps("1-x", &a, &b), -1);
	CHECK_EQ(cmd_parse_steps(NULL, &a, &b), -1);
}

/* Parses a command line given as one string of space-separated words. */
static int parse(struct cmd_opts *o, const char *line)
{
	static char buf[512];
	static char *argv[32];
	int argc = 0;
	snprintf(buf, sizeof(buf), "cmd %s", line);
	for (char *w = strtok(buf, " "); w && argc < 31; w = strtok(NULL, " "))
		argv[argc++] = w;
	argv[argc] = NULL;
	return cmd_parse(o, argc, argv);
}

static void test_shared_options(void)
{
	static const char *const tables[] = {"first", "second", NULL};
	struct cmd_opts o = {.name = "t", .usage = "# usage: t", .accept = CMD_JSON | CMD_CSV | CMD_TOP | CMD_SKIP_STEPS,
			     .top = 20, .csv_tables = tables};
	CHECK_EQ(parse(&o, "--json --top 5 --skip-steps 3 a.trace"), CMD_RUN);
	CHECK(o.json && !o.csv && o.top == 5 && o.skip_steps == 3);
	CHECK_STR(o.file, "a.trace");
	CHECK_EQ(parse(&o, "--csv a.trace"), CMD_RUN);
	CHECK(o.csv == 1 && o.skip_steps == 0); /* a second parse starts afresh */
	CHECK_EQ(parse(&o, "--csv=second a.trace"), CMD_RUN);
	CHECK_EQ(o.csv, 2);
	CHECK_EQ(parse(&o, "--csv=third a.trace"), 1);
	CHECK_EQ(parse(&o, "--json --csv a.trace"), 1);
	CHECK_EQ(parse(&o, "--top x a.trace"), 1);
	CHECK_EQ(parse(&o, "--top"), 1);
	CHECK_EQ(parse(&o, "--skip-steps 99999999999 a.trace"), 1); /* past 2^32 */
	CHECK_EQ(parse(&o, "--steps 1-2 a.trace"), 1);            /* not accepted by this command */
	CHECK_EQ(parse(&o, "--bogus a.trace"), 1);
	CHECK_EQ(parse(&o, ""), 1);                               /* FILE missing */
	CHECK_EQ(parse(&o, "a.trace b.trace"), 1);                /* one at a time */
	CHECK_EQ(parse(&o, "--help"), 0);
	CHECK_EQ(parse(&o, "- "), CMD_RUN); /* "-" is a file name (standard input's), not an option */

	struct cmd_opts s = {.name = "s", .usage = "usage: s", .accept = CMD_STEPS};
	CHECK_EQ(parse(&s, "--steps 2- x"), CMD_RUN);
	CHECK(s.steps && s.step_first == 2 && s.step_last == UINT64_MAX);
	CHECK_EQ(parse(&s, "--json x"), 1); /* not accepted */

	struct cmd_opts two = {.name = "d", .usage = "usage: d", .takes = CMD_FILES_TWO};
	CHECK_EQ(parse(&two, "a"), 1);
	CHECK_EQ(parse(&two, "a b"), CMD_RUN);
	CHECK(two.nfiles == 2 && strcmp(two.files[1], "b") == 0);
	CHECK_EQ(parse(&two, "a b c"), 1);
	struct cmd_opts none = {.name = "n", .usage = "usage: n", .takes = CMD_FILES_NONE};
	CHECK_EQ(parse(&none, ""), CMD_RUN);
	CHECK_EQ(parse(&none, "a"), 1);
}

static int seen_wide;

static int own_option(void *ctx, int argc, char **argv, int *i)
{
	(void)ctx;
	(void)argc;
	if (strcmp(argv[*i], "--wide") == 0) {
		seen_wide++;
		return CMD_RUN;
	}
	if (strcmp(argv[*i], "--stop") == 0)
		return 7; /* an exit status of the command's own */
	return CMD_OTHER;
}

static void test_own_options(void)
{
	struct cmd_opts o = {.name = "o", .usage = "usage: o", .accept = CMD_JSON, .extra = own_option};
	seen_wide = 0;
	CHECK_EQ(parse(&o, "--wide x --json"), CMD_RUN);
	CHECK(seen_wide == 1 && o.json);
	CHECK_EQ(parse(&o, "--stop x"), 7);
	CHECK_EQ(parse(&o, "--other x"), 1);
}

int main(void)
{
	RUN(test_counts_and_steps);
	RUN(test_shared_options);
	RUN(test_own_options);
	return UT_DONE();
}
