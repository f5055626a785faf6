/* tprof export: a trace in the formats other tools read.
 *
 * --folded: its heap costs as folded stacks, the input of flamegraph.pl and speedscope: one line per
 * distinct symbolized stack, "outer;...;inner VALUE", outermost frame first, named by function
 * (inlined functions are frames of their own, module+0xOFFSET where the function is unknown). Stacks
 * cut at the recorder's depth limit start with "[truncated]", allocations without a stack are
 * "[no stack]". Stacks that symbolize the same are merged. The metrics:
 *   leaked  bytes still in use at exit (no suppressions applied: all of tprof report's leaked_bytes)
 *   peak    bytes live at the peak
 *   allocs  number of allocations
 *   bytes   bytes allocated (the default)
 *
 * --chrome: its timeline as Chrome trace-event JSON for ui.perfetto.dev and chrome://tracing
 * (analyzer/chrome.c, docs/EXPORT.md). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmdline.h"
#include "out/chrome.h"
#include "cmd/cmds.h"
#include "analysis/heap.h"
#include "trace/reader.h"
#include "analysis/stacks.h"
#include "out/frames.h"
#include "base/util.h"

#define USAGE                                                                                              \
	"usage: tprof export FILE --folded OUT [--metric leaked|peak|allocs|bytes]\n"                     \
	"       tprof export FILE --chrome OUT.json [--min-dur NS] [--steps A-B|A|A-]\n"                  \
	"OUT '-': standard output. --steps: steps A to B (0-based, both included), step A, or A to the end"

enum metric { M_LEAKED, M_PEAK, M_ALLOCS, M_BYTES };

struct line {
	char *stack;
	uint64_t value;
};

static int cmp_line(const void *a, const void *b)
{
	return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

/* Appends frame name to out (length *len, capacity *cap) after a ';' unless it is the first; a ';'
 * inside the name, which would split the frame, becomes ':', and a control byte (a line break would
 * split the line) '?'. */
static char *append_frame(char *out, size_t *len, size_t *cap, const char *name)
{
	size_t k = strlen(name);
	if (*len + k + 2 > *cap) {
		*cap = (*len + k + 2) * 2;
		out = xrealloc(out, *cap);
	}
	if (*len)
		out[(*len)++] = ';';
	for (size_t i = 0; i < k; i++)
		out[(*len)++] = name[i] == ';' ? ':' : (unsigned char)name[i] < 0x20 || name[i] == 0x7f ? '?' : name[i];
	out[*len] = 0;
	return out;
}

/* The folded form of a stack: frames outermost first, joined by ';'. Caller frees. */
static char *fold(const struct stack_frame *fr, size_t n, int truncated)
{
	size_t len = 0, cap = 256;
	char *out = xmalloc(cap);
	out[0] = 0;
	char buf[64];
	if (n == 0 || truncated)
		out = append_frame(out, &len, &cap, n == 0 ? "[no stack]" : "[truncated]");
	for (size_t i = n; i-- > 0;)
		out = append_frame(out, &len, &cap, stack_frame_name(&fr[i], buf, sizeof(buf)));
	return out;
}

static void write_folded(FILE *f, struct stack_table *tab, struct stack_sym *ss, enum metric m)
{
	size_t nids;
	uint32_t *ids = stack_table_sorted(tab, STACK_BY_BYTES, &nids);
	struct line *lines = xcalloc(nids ? nids : 1, sizeof(*lines));
	size_t nl = 0;
	for (size_t i = 0; i < nids; i++) {
		const struct stack_cost *c = &tab->cost[ids[i]];
		uint64_t v = m == M_ALLOCS ? c->blocks : c->bytes;
		if (!v)
			continue;
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, ids[i], c->seq, &n, &trunc);
		lines[nl++] = (struct line){fold(fr, n, trunc), v};
	}
	tprof_sort(lines, nl, sizeof(*lines), cmp_line);
	for (size_t i = 0; i < nl; i++) {
		uint64_t v = lines[i].value;
		while (i + 1 < nl && strcmp(lines[i].stack, lines[i + 1].stack) == 0) {
			free(lines[i].stack);
			v += lines[++i].value;
		}
		fprintf(f, "%s %" PRIu64 "\n", lines[i].stack, v);
		free(lines[i].stack);
	}
	free(lines);
	free(ids);
}

struct export_opts {
	const char *out;   /* NULL until --folded or --chrome */
	int chrome;        /* --chrome rather than --folded */
	int metric_given, chrome_only_given;
	enum metric m;
	struct chrome_options c;
};

/* A number of nanoseconds: digits only. */
static int parse_ns(const char *s, uint64_t *out)
{
	char *end;
	if (!s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end || errno)
		return -1;
	*out = v;
	return 0;
}

/* export's own options, for cmd_parse. */
static int parse_export_opt(void *ctx, int argc, char **argv, int *i)
{
	struct export_opts *e = ctx;
	const char *a = argv[*i];
	if (strcmp(a, "--folded") == 0 || strcmp(a, "--chrome") == 0) {
		int chrome = a[2] == 'c';
		if (*i + 1 >= argc) {
			tprof_err("export: %s needs a file name ('-': standard output)", a);
			return 1;
		}
		if (e->out && e->chrome != chrome) {
			tprof_err("export: one of --folded or --chrome at a time");
			return 1;
		}
		e->out = argv[++*i];
		e->chrome = chrome;
	} else if (strcmp(a, "--metric") == 0) {
		const char *v = *i + 1 < argc ? argv[++*i] : "";
		e->metric_given = 1;
		if (strcmp(v, "leaked") == 0)
			e->m = M_LEAKED;
		else if (strcmp(v, "peak") == 0)
			e->m = M_PEAK;
		else if (strcmp(v, "allocs") == 0)
			e->m = M_ALLOCS;
		else if (strcmp(v, "bytes") == 0)
			e->m = M_BYTES;
		else {
			tprof_err("export: --metric is one of leaked, peak, allocs, bytes");
			return 1;
		}
	} else if (strcmp(a, "--min-dur") == 0) {
		e->chrome_only_given = 1;
		if (parse_ns(*i + 1 < argc ? argv[++*i] : NULL, &e->c.min_dur_ns) != 0) {
			tprof_err("export: --min-dur needs a number of nanoseconds");
			return 1;
		}
	} else {
		return CMD_OTHER;
	}
	return CMD_RUN;
}

/* Closes f (flushes standard output); 0, or 2 after saying why the output could not be written and
 * removing what was written of it when it is a regular file (a full file system): no half-written
 * file stays behind. */
static int finish_output(FILE *f, const char *out)
{
	int bad = ferror(f);
	int fd = f != stdout ? fileno(f) : -1;
	struct stat st, named;
	int regular = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
	if (f != stdout ? fclose(f) != 0 : fflush(f) != 0)
		bad = 1;
	if (bad) {
		int e = errno;
		/* only the file written, under its own name: not a symlink to it (/dev/stdout, a link
		 * the user made), nor what the name has come to mean since */
		int gone = regular && lstat(out, &named) == 0 && S_ISREG(named.st_mode) && named.st_dev == st.st_dev &&
			   named.st_ino == st.st_ino && unlink(out) == 0;
		tprof_err("export: %s: %s%s", out, e ? strerror(e) : "write error", gone ? " (the part written is removed)" : "");
		return 2; /* a file that cannot be written (README: exit status) */
	}
	return 0;
}

static FILE *open_output(const char *out, const char *file)
{
	if (strcmp(out, "-") != 0 && tprof_same_file(out, file)) {
		tprof_err("export: %s is the trace being read: not written over", out);
		return NULL;
	}
	FILE *f = strcmp(out, "-") == 0 ? stdout : tprof_fopen_nowait(out, "w");
	if (!f)
		tprof_err("export: %s: %s", out, errno == ENXIO ? "a FIFO no process reads" : strerror(errno));
	return f;
}

static int export_chrome(const char *file, const char *out, const struct chrome_options *c)
{
	struct tprof_trace *t = cmd_open_trace(file);
	if (!t)
		return 2;
	struct chrome_doc *d;
	int rc = chrome_build(t, c, &d);
	if (rc != 0) {
		tprof_err("export: %s", t->err);
		tprof_trace_close(t);
		return 2; /* unreadable, or without the steps asked for: bad input, as ops --skip-steps */
	}
	FILE *f = open_output(out, file);
	if (f) {
		errno = 0;
		chrome_write(d, f);
		rc = finish_output(f, out);
	} else {
		rc = 2;
	}
	chrome_free(d);
	tprof_trace_close(t);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	struct export_opts e = { .out = NULL, .m = M_BYTES };
	struct cmd_opts o = { .name = "export", .usage = USAGE, .accept = CMD_STEPS, .extra = parse_export_opt,
			      .ctx = &e };
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	if (o.steps) {
		e.chrome_only_given = 1;
		e.c.steps = 1;
		e.c.step_first = o.step_first;
		e.c.step_last = o.step_last;
	}
	if (!e.out) {
		fprintf(stderr, "tprof: %s\n", USAGE); /* its lines as they are */
		return 1;
	}
	if (e.chrome ? e.metric_given : e.chrome_only_given) {
		tprof_err("export: %s", e.chrome ? "--metric is for --folded" : "--min-dur and --steps are for --chrome");
		return 1;
	}
	if (e.chrome)
		return export_chrome(o.file, e.out, &e.c);
	const char *file = o.file, *out = e.out;
	enum metric m = e.m;
	struct heap_stats peak, s;
	struct stack_table tab;
	struct tprof_trace *t = m == M_PEAK ? cmd_open_at_peak(file, &peak, &s, &tab) : cmd_open_trace(file);
	if (!t)
		return 2;
	if (m != M_PEAK)
		stack_table_init(&tab, t);
	struct stack_sym *ss = NULL;
	FILE *f = NULL;
	rc = 0;
	if (m != M_PEAK && stacks_replay(t, UINT64_MAX, &s, &tab) < 0) {
		tprof_err("%s", t->err);
		rc = 2;
		goto out;
	}
	if (m == M_LEAKED)
		stack_table_set_live(&tab, &s);
	f = open_output(out, file);
	if (!f) {
		rc = 2;
		goto out;
	}
	ss = stack_sym_new(t);
	errno = 0;
	write_folded(f, &tab, ss, m);
	stack_sym_warn(ss);
	rc = finish_output(f, out);
out:
	stack_sym_free(ss);
	heap_release(&s);
	stack_table_free(&tab);
	tprof_trace_close(t);
	return rc;
}
