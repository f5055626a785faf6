/* The commands' shared command line: one parser for the options they have in common, so that every
 * command accepts, rejects and words them the same way, and one place that opens a trace or says
 * why it cannot. See cmdline.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "out/table.h"
#include "trace/reader.h"
#include "analysis/heap.h"
#include "analysis/stacks.h"
#include "base/util.h"

/* --csv or --csv=NAME: sets o->csv, or returns 1 after saying what is wrong. */
static int parse_csv(struct cmd_opts *o, const char *arg)
{
	const char *name = arg[5] == '=' ? arg + 6 : NULL;
	if (!name || (o->csv_tables && o->csv_tables[0] && strcmp(name, o->csv_tables[0]) == 0)) {
		o->csv = 1;
		return 0;
	}
	for (size_t k = 0; o->csv_tables && o->csv_tables[k]; k++)
		if (strcmp(name, o->csv_tables[k]) == 0) {
			o->csv = (int)k + 1;
			return 0;
		}
	if (!o->csv_tables || !o->csv_tables[0] || !o->csv_tables[1]) {
		tprof_err("%s: --csv prints the one table there is; it takes no '=%s'", o->name, name);
		return 1;
	}
	char list[256] = "";
	for (size_t k = 0, len = 0; o->csv_tables[k] && len < sizeof(list); k++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", k ? ", " : "", o->csv_tables[k]);
	tprof_err("%s: no table '%s' for --csv= (tables: %s)", o->name, name, list);
	return 1;
}

static size_t files_max(enum cmd_files f)
{
	switch (f) {
	case CMD_FILES_NONE:
		return 0;
	case CMD_FILES_ONE:
		return 1;
	case CMD_FILES_TWO:
		return 2;
	case CMD_FILES_SOME:
		break;
	}
	return CMD_MAX_FILES;
}

int cmd_parse_count(const char *arg, size_t *n)
{
	if (!arg || !*arg || strspn(arg, "0123456789") != strlen(arg) || strlen(arg) > 12)
		return -1;
	*n = (size_t)strtoull(arg, NULL, 10);
	return 0;
}

int cmd_parse_steps(const char *text, uint64_t *first, uint64_t *last)
{
	const char *s = text;
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	unsigned long long a = strtoull(s, &end, 10), b = a;
	if (*end == '-') {
		s = end + 1;
		if (!*s) {
			b = UINT64_MAX;
		} else {
			if (*s < '0' || *s > '9')
				return -1;
			b = strtoull(s, &end, 10);
			if (*end || b < a || b == UINT64_MAX)
				return -1;
		}
	} else if (*end) {
		return -1;
	}
	*first = a;
	*last = b;
	return 0;
}

const char *cmd_long_eq(const char *arg)
{
	const char *eq = strchr(arg, '=');
	return arg[0] == '-' && arg[1] == '-' && eq && eq > arg + 2 && strncmp(arg, "--csv=", 6) != 0 ? eq : NULL;
}

/* "--name=value", as GNU programs take it: the two words "--name" and "value", in a copy of argv
 * that stays reachable until exit (*valued marks the values so split off). */
static char **split_av;
static unsigned char *split_valued;

static int split_long(int argc, char **argv, char ***out, unsigned char **valued)
{
	int n = argc;
	for (int i = 1; i < argc; i++)
		n += cmd_long_eq(argv[i]) != NULL;
	char **av = xmalloc(((size_t)n + 1) * sizeof(*av));
	unsigned char *v = xcalloc((size_t)n + 1, 1);
	int k = 0;
	for (int i = 0; i < argc; i++) {
		const char *eq = i ? cmd_long_eq(argv[i]) : NULL;
		if (eq) {
			av[k++] = xstrndup(argv[i], (size_t)(eq - argv[i]));
			v[k] = 1;
			av[k++] = (char *)(eq + 1);
		} else {
			av[k++] = argv[i];
		}
	}
	av[k] = NULL;
	free(split_av);
	free(split_valued);
	split_av = av;
	split_valued = v;
	*out = av;
	*valued = v;
	return k;
}

int cmd_parse(struct cmd_opts *o, int argc, char **argv)
{
	unsigned char *valued;
	argc = split_long(argc, argv, &argv, &valued);
	o->json = 0;
	o->csv = 0;
	o->skip_steps = 0;
	o->steps = 0;
	o->file = NULL;
	o->nfiles = 0;
	size_t max = files_max(o->takes);
	for (int i = 1; i < argc; i++) {
		int rc;
		if (valued[i]) { /* the option before it took no value */
			tprof_err("%s: %s takes no value ('%s=%s')", o->name, argv[i - 1], argv[i - 1], argv[i]);
			return 1;
		}
		if ((o->accept & CMD_JSON) && strcmp(argv[i], "--json") == 0) {
			o->json = 1;
		} else if ((o->accept & CMD_CSV) && strncmp(argv[i], "--csv", 5) == 0 &&
			   (argv[i][5] == 0 || argv[i][5] == '=')) {
			if (parse_csv(o, argv[i]) != 0)
				return 1;
		} else if ((o->accept & CMD_TOP) && strcmp(argv[i], "--top") == 0) {
			if (cmd_parse_count(i + 1 < argc ? argv[++i] : NULL, &o->top) != 0) {
				tprof_err("%s: --top needs a number (0: all)", o->name);
				return 1;
			}
		} else if ((o->accept & CMD_SKIP_STEPS) && strcmp(argv[i], "--skip-steps") == 0) {
			size_t n;
			if (cmd_parse_count(i + 1 < argc ? argv[++i] : NULL, &n) != 0 || n > UINT32_MAX) {
				tprof_err("%s: --skip-steps needs a number of steps", o->name);
				return 1;
			}
			o->skip_steps = (unsigned)n;
		} else if ((o->accept & CMD_STEPS) && strcmp(argv[i], "--steps") == 0) {
			if (cmd_parse_steps(i + 1 < argc ? argv[++i] : NULL, &o->step_first, &o->step_last) != 0) {
				tprof_err("%s: --steps takes A-B (steps A to B, both included, from 0), A, or A- (to the end)",
					  o->name);
				return 1;
			}
			o->steps = 1;
		} else if (o->extra && (rc = o->extra(o->ctx, argc, argv, &i)) != CMD_OTHER) {
			if (rc != CMD_RUN)
				return rc;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("%s\n", o->usage);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			tprof_err("%s: unknown option '%s'", o->name, argv[i]);
			return 1;
		} else if (o->nfiles < max) {
			o->files[o->nfiles++] = argv[i];
		} else {
			if (max == 0)
				tprof_err("%s: takes no file ('%s')", o->name, argv[i]);
			else if (max == 1)
				tprof_err("%s: one trace at a time", o->name);
			else if (max == 2)
				tprof_err("%s: two traces, A and B", o->name);
			else
				tprof_err("%s: at most %d traces", o->name, CMD_MAX_FILES);
			return 1;
		}
	}
	if (o->json && o->csv) {
		tprof_err("%s: --json and --csv exclude each other", o->name);
		return 1;
	}
	if (o->nfiles < (o->takes == CMD_FILES_NONE ? 0u : o->takes == CMD_FILES_TWO ? 2u : 1u)) {
		/* the text as it is, line breaks and all (tprof_err escapes them, as it does names) */
		fprintf(stderr, "tprof: %s\n", o->usage);
		return 1;
	}
	o->file = o->nfiles ? o->files[0] : NULL;
	if (o->json || o->csv) /* output for tools: no progress line beside it */
		cmd_progress_off();
	return CMD_RUN;
}

struct tprof_trace *cmd_open_trace_unwarned(const char *path)
{
	return cmd_open_trace_unwarned_flags(path, 0);
}

struct tprof_trace *cmd_open_trace_unwarned_flags(const char *path, unsigned flags)
{
	char err[512];
	struct tprof_trace *t;
	if (tprof_trace_open_flags(path, flags, &t, err, sizeof(err)) != 0) {
		tprof_err("%s", err);
		return NULL;
	}
	return t;
}

/* The paths whose cut was said: a command may open one trace more than once (diff, plot, the two
 * passes of peak), and says it once. */
static char *cut_said[CMD_MAX_FILES];
static size_t ncut_said;

struct tprof_trace *cmd_open_trace(const char *path)
{
	return cmd_open_trace_flags(path, 0);
}

struct tprof_trace *cmd_open_trace_flags(const char *path, unsigned flags)
{
	struct tprof_trace *t = cmd_open_trace_unwarned_flags(path, flags);
	if (!t || !t->cut)
		return t;
	for (size_t i = 0; i < ncut_said; i++)
		if (strcmp(cut_said[i], path) == 0)
			return t;
	if (ncut_said < CMD_MAX_FILES)
		cut_said[ncut_said++] = xstrndup(path, strlen(path));
	char note[256];
	tprof_err("warning: %s: %s", path, tprof_trace_cut_note(t, note, sizeof(note)));
	return t;
}

uint64_t cmd_trace_duration_ns(const struct tprof_trace *t)
{
	uint64_t d = t->end_ns > t->t0_ns ? t->end_ns - t->t0_ns : 0;
	if (t->last_tick_seen) {
		uint64_t last = tprof_trace_ns(t, t->last_tick_seen);
		if (last > d)
			d = last;
	}
	return d;
}

void cmd_out_begin(struct out *w, const struct cmd_opts *o)
{
	const char *table = o->csv && o->csv_tables ? o->csv_tables[o->csv - 1] : "";
	out_begin(w, stdout, o->json ? OUT_JSON : o->csv ? OUT_CSV : OUT_TEXT, table);
}

static void warn_one(void *ctx, const char *path, enum tprof_sym_status st)
{
	(void)ctx;
	const char *why = "has neither symbols nor debug information";
	if (st == TPROF_SYM_MISSING)
		why = "cannot be opened";
	else if (st == TPROF_SYM_MISMATCH)
		why = "is not the file that was traced (build-id differs)";
	tprof_err("warning: %s %s; its frames are shown as module+offset", path, why);
}

void stack_sym_warn(struct stack_sym *ss)
{
	stack_sym_problems(ss, warn_one, NULL);
}

struct tprof_trace *cmd_open_at_peak(const char *path, struct heap_stats *peak, struct heap_stats *s,
				     struct stack_table *tab)
{
	struct tprof_trace *t = cmd_open_trace(path);
	if (!t)
		return NULL;
	int r = heap_analyze(t, peak); /* the first pass: where the peak is */
	if (r < 0)
		tprof_err("%s", t->err);
	heap_release(peak);
	tprof_trace_close(t);
	if (r < 0 || !(t = cmd_open_trace(path)))
		return NULL;
	stack_table_init(tab, t);
	if (stacks_replay_to_peak(t, peak, s, tab) < 0) {
		tprof_err("%s", t->err);
		heap_release(s);
		stack_table_free(tab);
		tprof_trace_close(t);
		return NULL;
	}
	return t;
}
