/* tprof diff A B: the before/after view of two runs of a program. A summary (wall time, time in
 * kernels, time and FLOPs per step with a verdict on the noise, heap peak, leaks, allocations, FLOPs,
 * GFLOP/s), then the ops whose calls, time or FLOPs changed and the allocation sites whose bytes,
 * allocations or leaks changed, each sorted by the size of the change. The comparison itself is
 * analysis/diff.c's (ops matched by name, allocation sites by their symbolized frames, never by
 * address); this file reads the options and the traces and writes the result: text for people,
 * --json for tools (docs/DIFF.md), --csv for spreadsheets (one table per invocation), both through
 * out/table.h. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/diff.h"
#include "analysis/ops.h"
#include "analysis/stacks.h"
#include "trace/reader.h"
#include "base/util.h"
#include "out/table.h"

#define USAGE                                                                                      \
	"usage: tprof diff [--json | --csv[=summary|ops|sites|steps]] [--top N] [--skip-steps N] A B\n" \
	"What changed from run A to run B: summary, time and FLOPs per step, ops and allocation sites,\n" \
	"largest change first (--top: rows per table, default 20, 0: all)."
#define DEFAULT_TOP 20

/* Reads run r from path: the op analysis, then (on the trace opened again: its events are read
 * once) the heap with its allocation sites. 0, or TPROF_EXIT_INPUT (reported). */
static int load_run(const char *path, struct diff_run *r, const struct ops_options *oo)
{
	struct tprof_trace *t = cmd_open_trace(path);
	if (!t)
		return TPROF_EXIT_INPUT;
	if (diff_run_read_ops(r, t, oo) != 0) {
		tprof_err("%s", t->err);
		tprof_trace_close(t);
		return TPROF_EXIT_INPUT;
	}
	tprof_trace_close(t);
	if (!(t = cmd_open_trace(path)))
		return TPROF_EXIT_INPUT;
	struct stack_sym *ss;
	if (diff_run_read_heap(r, t, &ss) != 0) {
		tprof_err("%s", t->err);
		tprof_trace_close(t);
		return TPROF_EXIT_INPUT;
	}
	r->wall_ns = cmd_trace_duration_ns(t);
	stack_sym_warn(ss);
	stack_sym_free(ss);
	tprof_trace_close(t);
	return 0;
}

/* The rows of a table that --top keeps. */
static size_t shown(const struct cmd_opts *o, size_t n)
{
	return o->top && o->top < n ? o->top : n;
}

/* ---- text */

enum unit { U_NS, U_BYTES, U_COUNT, U_RATE };

/* The summary's figures: their JSON and CSV name, their text label and unit. */
static const struct {
	const char *metric, *label;
	enum unit unit;
} figures[DIFF_FIGURES] = {
	[DIFF_WALL_NS] = {"wall_ns", "wall time", U_NS},
	[DIFF_KERNEL_NS] = {"kernel_ns", "time in kernels", U_NS},
	[DIFF_STEPS] = {"steps", "steps", U_COUNT},
	[DIFF_STEP_MEAN_NS] = {"step_mean_ns", "time per step (mean)", U_NS},
	[DIFF_PEAK_BYTES] = {"peak_bytes", "heap peak", U_BYTES},
	[DIFF_LEAKED_BYTES] = {"leaked_bytes", "leaked bytes", U_BYTES},
	[DIFF_LEAKED_BLOCKS] = {"leaked_blocks", "leaked blocks", U_COUNT},
	[DIFF_BYTES_ALLOCATED] = {"bytes_allocated", "bytes allocated", U_BYTES},
	[DIFF_ALLOCATIONS] = {"allocations", "allocations", U_COUNT},
	[DIFF_FLOPS] = {"flops", "FLOPs (top-level calls)", U_COUNT},
	[DIFF_GFLOPS_PER_S] = {"gflops_per_s", "GFLOP/s in kernels", U_RATE},
	[DIFF_FLOPS_PER_STEP] = {"flops_per_step", "FLOPs per step", U_COUNT},
};

/* A value in its unit for text ("1.23 ms", "1,234 B", "1,234", "2.345"); sign: + before a positive one. */
static const char *fmt_val(double v, enum unit u, int sign, char *buf)
{
	char tmp[32];
	double a = fabs(v);
	const char *s = v < 0 ? "-" : sign && v > 0 ? "+" : "";
	switch (u) {
	case U_NS:
		snprintf(buf, 48, "%s%s", s, tprof_fmt_ns((uint64_t)llround(a), tmp));
		break;
	case U_BYTES:
		snprintf(buf, 48, "%s%s B", s, tprof_commas((uint64_t)llround(a), tmp));
		break;
	case U_COUNT:
		snprintf(buf, 48, "%s%s", s, tprof_commas((uint64_t)llround(a), tmp));
		break;
	case U_RATE:
		snprintf(buf, 48, "%s%.3f", s, a);
		break;
	}
	return buf;
}

/* "+12.3%", "new" (A was 0), or "" when nothing changed. */
static const char *fmt_rel(const struct diff_metric *m, char *buf)
{
	double r = diff_rel(m);
	if (!diff_changed(m))
		snprintf(buf, 16, "%s", "");
	else if (!isfinite(r))
		snprintf(buf, 16, "new");
	else
		snprintf(buf, 16, "%+.1f%%", 100.0 * r);
	return buf;
}

/* A table cell: "B (change, rel)", or "B (=)" when unchanged. */
static const char *fmt_cell(const struct diff_metric *m, enum unit u, char *buf, size_t size)
{
	char b[48], d[48], r[16];
	if (!diff_changed(m))
		snprintf(buf, size, "%s (=)", fmt_val(m->y, u, 0, b));
	else
		snprintf(buf, size, "%s (%s, %s)", fmt_val(m->y, u, 0, b), fmt_val(diff_delta(m), u, 1, d),
			 fmt_rel(m, r));
	return buf;
}

/* A narrow table cell: B as the caller formatted it, then the relative change or "=". */
static const char *short_cell(const struct diff_metric *m, const char *b, char *buf)
{
	char r[16];
	snprintf(buf, 64, "%s (%s)", b, diff_changed(m) ? fmt_rel(m, r) : "=");
	return buf;
}


static void text_run(const char *which, const char *path, const struct diff_run *r)
{
	printf("  %s  ", which);
	tprof_text_str(stdout, path, 0);
	printf(" (");
	tprof_text_str(stdout, r->program, 0);
	printf(", pid %" PRIu64 ")\n", r->pid);
}

static void print_text_steps(const struct diff_result *d)
{
	const struct diff_steps *c = &d->steps;
	const struct ops_dist *sa = &d->a->steps, *sb = &d->b->steps;
	char x[48], y[48], z[48], w[48], r[16];
	if (!d->have_steps) {
		printf("\nsteps: %s\n", d->a->ops.step_marks || d->b->ops.step_marks
					    ? "marked in one run only: no per-step comparison"
					    : "none marked (the program calls tprof_step() at iteration boundaries)");
		return;
	}
	printf("\nsteps: A %zu, B %zu%s\n", sa->n, sb->n, d->a->ops.steps_skipped ? " (after the warm-up skipped)" : "");
	for (int k = 0; k < 2; k++) {
		const struct ops_dist *s = k ? sb : sa;
		printf("  %s %s %s", k ? "              " : "time per step ", k ? "B" : "A",
		       s->n ? fmt_val(s->mean, U_NS, 0, x) : "-");
		if (isfinite(s->ci_lo))
			printf(", 95%% CI [%s, %s]\n", fmt_val(s->ci_lo, U_NS, 0, y), fmt_val(s->ci_hi, U_NS, 0, z));
		else
			printf(" (%s step%s: no confidence interval)\n", s->n ? "one" : "no", s->n ? "" : "s");
	}
	if (!sa->n || !sb->n) {
		printf("  change         -: too few steps to tell it from the noise (2 per run at least)\n");
		return;
	}
	printf("  change         %s", fmt_val(diff_delta(&c->mean), U_NS, 1, x));
	if (diff_changed(&c->mean))
		printf(" (%s)", fmt_rel(&c->mean, r));
	if (!c->have_ci)
		printf(": too few steps to tell it from the noise (2 per run at least)\n");
	else
		printf(", 95%% CI of the change [%s, %s]: %s\n", fmt_val(c->lo, U_NS, 1, y), fmt_val(c->hi, U_NS, 1, w),
		       c->verdict == DIFF_SLOWER   ? "slower, outside the noise"
		       : c->verdict == DIFF_FASTER ? "faster, outside the noise"
						   : "within the noise");
	printf("  FLOPs per step A %s   B %s   change %s", fmt_val(c->flops.x, U_COUNT, 0, x),
	       fmt_val(c->flops.y, U_COUNT, 0, y), fmt_val(diff_delta(&c->flops), U_COUNT, 1, z));
	if (diff_changed(&c->flops))
		printf(" (%s)", fmt_rel(&c->flops, r));
	printf("\n  GFLOP/s over the steps  A %.3f   B %.3f\n", c->gflops_a, c->gflops_b);
}

static void print_text(const struct cmd_opts *o, const struct diff_result *d)
{
	char x[48], y[48], z[48], r[16];
	size_t shown_ops = shown(o, d->nops), shown_sites = shown(o, d->nsites);
	printf("tprof diff: what changed from A to B\n");
	text_run("A", o->files[0], d->a);
	text_run("B", o->files[1], d->b);
	printf("\n  %-26s %18s %18s %18s\n", "", "A", "B", "change");
	for (size_t i = 0; i < d->nsum; i++) {
		const struct diff_summary_row *s = &d->sum[i];
		enum unit u = figures[s->fig].unit;
		printf("  %-26s %18s %18s %18s", figures[s->fig].label, fmt_val(s->m.x, u, 0, x),
		       fmt_val(s->m.y, u, 0, y), diff_changed(&s->m) ? fmt_val(diff_delta(&s->m), u, 1, z) : "=");
		if (diff_changed(&s->m))
			printf(" %9s", fmt_rel(&s->m, r));
		putchar('\n');
	}
	print_text_steps(d);

	printf("\nops (%s%zu of %zu, by the change in self time; each cell: B, then its change from A)\n",
	       shown_ops < d->nops ? "the top " : "", shown_ops, d->nops);
	/* Each cell: B in the column's unit, then the relative change (JSON and CSV: every figure). */
	double ms = 0, mt = 0;
	for (size_t i = 0; i < shown_ops; i++) {
		ms = d->ops[i].self_ns.y > ms ? d->ops[i].self_ns.y : ms;
		mt = d->ops[i].total_ns.y > mt ? d->ops[i].total_ns.y : mt;
	}
	struct tprof_unit us = tprof_ns_unit((uint64_t)ms), ut = tprof_ns_unit((uint64_t)mt);
	/* the cells first, then each column as wide as its widest cell or heading: a large change
	 * ("+12345.6%") widens its own column only, and the table keeps within 120 columns */
	char(*cell)[5][64] = xcalloc(shown_ops ? shown_ops : 1, sizeof(*cell));
	char h1[32], h2[32];
	snprintf(h1, sizeof(h1), "self %s", us.name);
	snprintf(h2, sizeof(h2), "total %s", ut.name);
	const char *head[5] = {"calls", h1, h2, "GFLOP", "GFLOP/s"};
	int wid[5];
	for (int k = 0; k < 5; k++)
		wid[k] = (int)strlen(head[k]);
	for (size_t i = 0; i < shown_ops; i++) {
		const struct diff_op *p = &d->ops[i];
		char v[32];
		snprintf(v, sizeof(v), "%.0f", p->calls.y);
		short_cell(&p->calls, v, cell[i][0]);
		short_cell(&p->self_ns, tprof_fmt_in((uint64_t)llround(p->self_ns.y), us, v), cell[i][1]);
		short_cell(&p->total_ns, tprof_fmt_in((uint64_t)llround(p->total_ns.y), ut, v), cell[i][2]);
		snprintf(v, sizeof(v), "%.3f", p->flops.y / 1e9);
		short_cell(&p->flops, v, cell[i][3]);
		snprintf(v, sizeof(v), "%.2f", p->gflops.y);
		short_cell(&p->gflops, v, cell[i][4]);
		for (int k = 0; k < 5; k++)
			wid[k] = (int)strlen(cell[i][k]) > wid[k] ? (int)strlen(cell[i][k]) : wid[k];
	}
	if (d->nops)
		printf("%-21s %-7s %-*s  %-*s  %-*s  %-*s  %s\n", "op", "status", wid[0], head[0], wid[1], head[1],
		       wid[2], head[2], wid[3], head[3], head[4]);
	for (size_t i = 0; i < shown_ops; i++) {
		tprof_text_cut(stdout, d->ops[i].name, -21);
		printf(" %-7s %-*s  %-*s  %-*s  %-*s  %s\n", diff_status_name(d->ops[i].status), wid[0], cell[i][0], wid[1],
		       cell[i][1], wid[2], cell[i][2], wid[3], cell[i][3], cell[i][4]);
	}
	free(cell);

	printf("\nallocation sites (%s%zu of %zu, by the change in bytes allocated; each figure: B, then the "
	       "change from A)\n",
	       shown_sites < d->nsites ? "the top " : "", shown_sites, d->nsites);
	for (size_t i = 0; i < shown_sites; i++) {
		const struct diff_site_pair *p = &d->sites[i];
		const char *status = diff_status_name(p->status);
		char c1[96], c2[96], c3[96], c4[96];
		printf("\n  %s: bytes allocated %s, allocations %s\n", status,
		       fmt_cell(&p->bytes, U_BYTES, c1, sizeof(c1)), fmt_cell(&p->allocs, U_COUNT, c2, sizeof(c2)));
		printf("  %*s  leaked %s in %s blocks\n", (int)strlen(status), "",
		       fmt_cell(&p->leaked_bytes, U_BYTES, c3, sizeof(c3)),
		       fmt_cell(&p->leaked_blocks, U_COUNT, c4, sizeof(c4)));
		for (size_t k = 0; k < p->s->nframes; k++) {
			printf("      %s ", k ? "by" : "at");
			tprof_text_str(stdout, p->s->frames[k], 0);
			putchar('\n');
		}
		if (p->s->truncated)
			printf("      ... (cut at the recorder's depth limit, TPROF_DEPTH)\n");
	}
}

/* ---- JSON and CSV
 *
 * Every table is declared once below; its CSV columns are its JSON rows' members, in order. A
 * figure of a row comes as four columns: <figure>_a, <figure>_b, <figure>_delta, <figure>_rel.
 *
 * A figure is an integer in some rows and a rate in others (the summary's a and b): such columns are
 * OUT_NUM, which prints an integer figure exactly and any other number as an integer when it is one,
 * else to 6 significant digits. A site's stack is a JSON list of its frames' labels and one CSV
 * field that joins them with ';' (OUT_LABELS). */

/* The four columns of a figure. */
#define FIGURE_COLS(name, unit)                                                                    \
	{name "_a", OUT_NUM, unit, NULL, NULL}, {name "_b", OUT_NUM, unit, NULL, NULL},            \
	{name "_delta", OUT_NUM, unit, NULL, NULL}, {name "_rel", OUT_NUM, "ratio", NULL, NULL}

/* The summary: one row per figure, named by metric (docs/DIFF.md lists them in order); a, b and
 * delta are in the metric's unit. */
static const struct out_col summary_cols[] = {
	{"metric", OUT_STR, "", NULL, NULL},
	{"a", OUT_NUM, "", NULL, NULL},
	{"b", OUT_NUM, "", NULL, NULL},
	{"delta", OUT_NUM, "", NULL, NULL},
	{"rel", OUT_NUM, "ratio", NULL, NULL},
};
static const struct out_table summary_table = {"summary", "summary", summary_cols, OUT_NCOLS(summary_cols), 0};

/* The per-step comparison: one row (JSON: an object, null when the runs cannot be compared per
 * step). */
static const struct out_col step_cols[] = {
	{"count_a", OUT_U64, "steps", NULL, NULL},
	{"count_b", OUT_U64, "steps", NULL, NULL},
	{"mean_ns_a", OUT_F64, "ns", "%.0f", NULL},
	{"mean_ns_b", OUT_F64, "ns", "%.0f", NULL},
	{"std_ns_a", OUT_F64, "ns", "%.0f", NULL},
	{"std_ns_b", OUT_F64, "ns", "%.0f", NULL},
	{"ci95_lo_ns_a", OUT_F64, "ns", "%.0f", NULL},
	{"ci95_hi_ns_a", OUT_F64, "ns", "%.0f", NULL},
	{"ci95_lo_ns_b", OUT_F64, "ns", "%.0f", NULL},
	{"ci95_hi_ns_b", OUT_F64, "ns", "%.0f", NULL},
	{"delta_mean_ns", OUT_F64, "ns", "%.0f", NULL},
	{"rel", OUT_NUM, "ratio", NULL, NULL},
	{"delta_ci95_lo_ns", OUT_F64, "ns", "%.0f", NULL},
	{"delta_ci95_hi_ns", OUT_F64, "ns", "%.0f", NULL},
	{"verdict", OUT_STR, "", NULL, NULL},
	FIGURE_COLS("flops_per_step", "FLOP"),
	{"gflops_per_s_a", OUT_NUM, "GFLOP/s", NULL, NULL},
	{"gflops_per_s_b", OUT_NUM, "GFLOP/s", NULL, NULL},
};
static const struct out_table step_table = {"steps", "steps", step_cols, OUT_NCOLS(step_cols), OUT_OBJECT};

/* The ops, largest change first (--top of them). */
static const struct out_col op_cols[] = {
	{"name", OUT_STR, "", NULL, NULL},
	{"status", OUT_STR, "", NULL, NULL},
	FIGURE_COLS("calls", "calls"),
	FIGURE_COLS("self_ns", "ns"),
	FIGURE_COLS("total_ns", "ns"),
	FIGURE_COLS("flops", "FLOP"),
	FIGURE_COLS("gflops_per_s", "GFLOP/s"),
};
static const struct out_table op_table = {"ops", "ops", op_cols, OUT_NCOLS(op_cols), 0};

/* The allocation sites, largest change first (--top of them): the innermost frame, then every
 * frame (a JSON list; in CSV one field, the labels joined by ';'). */
static const struct out_col site_cols[] = {
	{"site", OUT_STR, "", NULL, NULL},
	{"stack", OUT_LABELS, "", NULL, NULL},
	{"truncated", OUT_BOOL, "", NULL, NULL},
	{"status", OUT_STR, "", NULL, NULL},
	FIGURE_COLS("allocations", "calls"),
	FIGURE_COLS("bytes", "bytes"),
	FIGURE_COLS("leaked_bytes", "bytes"),
	FIGURE_COLS("leaked_blocks", "blocks"),
};
static const struct out_table site_table = {"sites", "sites", site_cols, OUT_NCOLS(site_cols), 0};

/* A or B (b) of m: an integer figure exactly, any other as a number. */
static void put_side(struct out *w, const struct diff_metric *m, int b)
{
	if (m->flt)
		out_num(w, b ? m->y : m->x);
	else
		out_u64(w, b ? m->b : m->a);
}

/* The four columns of a figure: A, B, the change and the relative change. */
static void put_figure(struct out *w, const struct diff_metric *m)
{
	put_side(w, m, 0);
	put_side(w, m, 1);
	out_num(w, diff_delta(m));
	out_num(w, diff_rel(m));
}

/* A run's JSON object: its file, program and pid. */
static void put_run(struct out *w, const char *key, const char *path, const struct diff_run *r)
{
	out_key(w, key);
	out_obj_begin(w);
	out_key(w, "file");
	out_str(w, path);
	out_key(w, "program");
	out_str(w, r->program);
	out_key(w, "pid");
	out_u64(w, r->pid);
	out_obj_end(w);
}

static void put_steps(struct out *w, const struct diff_result *d)
{
	const struct diff_steps *c = &d->steps;
	const struct ops_dist *sa = &d->a->steps, *sb = &d->b->steps;
	out_row_begin(w);
	int both = sa->n && sb->n; /* a run with no step kept has no mean: null, and no change */
	out_u64(w, sa->n);
	out_u64(w, sb->n);
	out_f64(w, sa->n ? sa->mean : NAN);
	out_f64(w, sb->n ? sb->mean : NAN);
	out_f64(w, sa->n ? sa->sd : NAN);
	out_f64(w, sb->n ? sb->sd : NAN);
	out_f64(w, sa->ci_lo);
	out_f64(w, sa->ci_hi);
	out_f64(w, sb->ci_lo);
	out_f64(w, sb->ci_hi);
	out_f64(w, both ? diff_delta(&c->mean) : NAN);
	out_num(w, both ? diff_rel(&c->mean) : NAN);
	if (c->have_ci) {
		out_f64(w, c->lo);
		out_f64(w, c->hi);
	} else {
		out_null(w);
		out_null(w);
	}
	out_str(w, diff_verdict_name(c->verdict));
	if (both) {
		put_figure(w, &c->flops);
	} else { /* FLOPs per step of a run without a step: none */
		out_num(w, sa->n ? c->flops.x : NAN);
		out_num(w, sb->n ? c->flops.y : NAN);
		out_num(w, NAN);
		out_num(w, NAN);
	}
	out_num(w, sa->n ? c->gflops_a : NAN);
	out_num(w, sb->n ? c->gflops_b : NAN);
	out_row_end(w);
}

static void print_tables(const struct cmd_opts *o, const struct diff_result *d)
{
	struct out w;
	cmd_out_begin(&w, o);
	put_run(&w, "a", o->files[0], d->a);
	put_run(&w, "b", o->files[1], d->b);

	out_table_begin(&w, &summary_table);
	for (size_t i = 0; i < d->nsum; i++) {
		out_row_begin(&w);
		out_str(&w, figures[d->sum[i].fig].metric);
		put_figure(&w, &d->sum[i].m);
		out_row_end(&w);
	}
	out_table_end(&w);

	if (d->have_steps || !o->json) { /* CSV: the header, and the row when there is one */
		out_table_begin(&w, &step_table);
		if (d->have_steps)
			put_steps(&w, d);
		out_table_end(&w);
	} else {
		out_key(&w, "steps");
		out_null(&w);
	}

	out_key(&w, "ops_total");
	out_u64(&w, d->nops);
	out_table_begin(&w, &op_table);
	for (size_t i = 0; i < shown(o, d->nops); i++) {
		const struct diff_op *p = &d->ops[i];
		out_row_begin(&w);
		out_str(&w, p->name);
		out_str(&w, diff_status_name(p->status));
		put_figure(&w, &p->calls);
		put_figure(&w, &p->self_ns);
		put_figure(&w, &p->total_ns);
		put_figure(&w, &p->flops);
		put_figure(&w, &p->gflops);
		out_row_end(&w);
	}
	out_table_end(&w);

	out_key(&w, "sites_total");
	out_u64(&w, d->nsites);
	out_table_begin(&w, &site_table);
	for (size_t i = 0; i < shown(o, d->nsites); i++) {
		const struct diff_site_pair *p = &d->sites[i];
		out_row_begin(&w);
		out_str(&w, p->s->frames[0]);
		out_labels(&w, (const char *const *)p->s->frames, p->s->nframes);
		out_bool(&w, p->s->truncated);
		out_str(&w, diff_status_name(p->status));
		put_figure(&w, &p->allocs);
		put_figure(&w, &p->bytes);
		put_figure(&w, &p->leaked_bytes);
		put_figure(&w, &p->leaked_blocks);
		out_row_end(&w);
	}
	out_table_end(&w);
	out_end(&w); /* a write that failed is main's to report (tprof.c) */
}

/* ---- the command */

int cmd_diff(int argc, char **argv)
{
	static const char *const tables[] = {"summary", "ops", "sites", "steps", NULL};
	struct cmd_opts o = { .name = "diff", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP | CMD_SKIP_STEPS,
			      .top = DEFAULT_TOP, .takes = CMD_FILES_TWO, .csv_tables = tables };
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	struct ops_options oo = {.skip_steps = o.skip_steps};
	struct diff_run a = {0}, b = {0};
	if ((rc = load_run(o.files[0], &a, &oo)) == 0 && (rc = load_run(o.files[1], &b, &oo)) == 0) {
		struct diff_result d;
		diff_compare(&d, &a, &b);
		if (o.json || o.csv)
			print_tables(&o, &d);
		else
			print_text(&o, &d);
		diff_free(&d);
	}
	diff_run_free(&a);
	diff_run_free(&b);
	return rc;
}
