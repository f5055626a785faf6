/* tprof ops: the op table of a trace, like PyTorch's key_averages().table() and more: per op (or op
 * and shape, or annotated range) the calls, self and total time with their shares of the traced
 * threads' wall time, the per-call distribution (p50/p95/p99, 95 % CI of the mean), FLOPs, GFLOP/s and
 * its share of this machine's peak, bytes, arithmetic intensity and the roof that bounds it; then
 * the step statistics. Text for people, --json for tools, --csv for spreadsheets (the op table;
 * --csv=steps the step statistics). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/ops.h"
#include "trace/reader.h"
#include "analysis/roofline.h"
#include "analysis/stacks.h"
#include "tprof_ops.h"
#include "base/util.h"
#include "out/table.h"

enum sort_key { SORT_SELF, SORT_TOTAL, SORT_CALLS, SORT_FLOPS, SORT_NAME, SORT_GFLOPS };

static enum sort_key sort_by;

/* FLOPs over total time; for --by range's "(no range)" row, which has no instance and so no total,
 * over its kernel time. */
static double gflops_of(const struct ops_row *w)
{
	uint64_t ns = w->total_ns ? w->total_ns : w->kernel_ns;
	return ns ? (double)w->flops / (double)ns : 0;
}

static int row_cmp(const void *a, const void *b)
{
	const struct ops_row *x = a, *y = b;
	double kx = 0, ky = 0;
	switch (sort_by) {
	case SORT_NAME:
		return strcmp(x->name, y->name);
	case SORT_SELF:
		kx = (double)x->self_ns, ky = (double)y->self_ns;
		break;
	case SORT_TOTAL:
		kx = (double)x->total_ns, ky = (double)y->total_ns;
		break;
	case SORT_CALLS:
		kx = (double)x->calls, ky = (double)y->calls;
		break;
	case SORT_FLOPS:
		kx = (double)x->flops, ky = (double)y->flops;
		break;
	case SORT_GFLOPS:
		kx = gflops_of(x), ky = gflops_of(y);
		break;
	}
	if (kx != ky)
		return kx > ky ? -1 : 1;
	return strcmp(x->name, y->name);
}

static double peak_for(const struct tprof_roofline *rf, int bits)
{
	double p = bits == 64 ? rf->fp64_gflops_all : rf->fp32_gflops_all;
	return p > 0 ? p : 0;
}

static const char *bound_of(const struct tprof_roofline *rf, const struct ops_row *w)
{
	double ridge = tprof_roofline_ridge(rf, w->fp_bits);
	if (!w->bytes || !w->flops || ridge <= 0)
		return "-";
	return (double)w->flops / (double)w->bytes < ridge ? "memory" : "compute";
}

/* Under a range row: the ops whose calls ran inside it, by self time (the largest few, the rest
 * summed), each with its share of the range's kernel time. */
#define RANGE_OPS_SHOWN 4
static void print_range_ops(const struct ops_row *w, struct tprof_unit u)
{
	uint64_t rest_ns = 0, rest_calls = 0;
	size_t rest = 0;
	char a[32];
	for (size_t j = 0; j < w->nsub; j++) {
		const struct ops_sub *v = &w->sub[j];
		if (j >= RANGE_OPS_SHOWN) {
			rest++;
			rest_ns += v->self_ns;
			rest_calls += v->calls;
			continue;
		}
		printf("    ");
		tprof_text_cut(stdout, v->name, -26);
		printf(" %6" PRIu64 " %9s %9s %5.1f%%\n", v->calls, "", tprof_fmt_in(v->self_ns, u, a),
		       w->kernel_ns ? 100.0 * (double)v->self_ns / (double)w->kernel_ns : 0);
	}
	if (rest) {
		char label[48];
		snprintf(label, sizeof(label), "(%zu other ops)", rest);
		printf("    %-26s %6" PRIu64 " %9s %9s %5.1f%%\n", label, rest_calls, "", tprof_fmt_in(rest_ns, u, a),
		       w->kernel_ns ? 100.0 * (double)rest_ns / (double)w->kernel_ns : 0);
	}
}

/* A column heading with its unit ("self ms"), right-aligned in width. */
static void head(const char *name, const char *unit, int width)
{
	char h[48];
	snprintf(h, sizeof(h), "%s%s%s", name, unit[0] ? " " : "", unit);
	printf(" %*s", width, h);
}

#define USAGE                                                                                         \
	"usage: tprof ops [--json | --csv[=ops|steps]] [--sort self|total|calls|flops|gflops|name] [--top N]\n" \
	"                 [--group-by shape] [--by range|thread|region] [--thread main|TID] [--skip-steps N]\n" \
	"                 [--wide] FILE\n"                                                                       \
	"Per-op time shares, per-call distribution, FLOPs and GFLOP/s against this machine's roofline\n"        \
	"(tprof roofline; TPROF_PEAK_GFLOPS=X sets the FP32 peak). --by range: one row per annotated\n"          \
	"range (tprof_range_push), with the kernel time, FLOPs and heap bytes inside it, and under it\n" \
	"the ops that ran inside, with their share of its kernel time. --by thread: each thread's time\n"      \
	"in kernels, working in OpenMP regions other threads opened, outside kernels and idle. --by region:\n" \
	"the OpenMP parallel regions each op opened: their wall time, threads' busy time and imbalance.\n"    \
	"--thread: only that thread's calls and time (main: the process's first thread). The text\n"         \
	"table fits 120 columns, names cut to 26; --wide shows every column and whole names (JSON and\n"  \
	"CSV always have them all)."

static const struct {
	const char *name;
	enum sort_key key;
} sort_keys[] = {{"self", SORT_SELF},   {"total", SORT_TOTAL}, {"calls", SORT_CALLS},
		 {"flops", SORT_FLOPS}, {"name", SORT_NAME},   {"gflops", SORT_GFLOPS}};

/* ops' own options, for cmd_parse. */
static int sort_given; /* --sort was given */

static int parse_ops_opt(void *ctx, int argc, char **argv, int *i)
{
	struct ops_options *o = ctx;
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	if (!strcmp(a, "--wide")) {
		o->wide = 1;
		return CMD_RUN;
	}
	if (strcmp(a, "--sort") && strcmp(a, "--group-by") && strcmp(a, "--by") && strcmp(a, "--thread"))
		return CMD_OTHER;
	if (!v) {
		tprof_err("ops: %s needs a value", a);
		return 1;
	}
	++*i;
	if (!strcmp(a, "--sort")) {
		for (size_t k = 0; k < sizeof(sort_keys) / sizeof(sort_keys[0]); k++)
			if (!strcmp(v, sort_keys[k].name)) {
				sort_by = sort_keys[k].key;
				sort_given = 1;
				return CMD_RUN;
			}
		tprof_err("ops: unknown sort key '%s'", v);
		return 1;
	}
	if (!strcmp(a, "--group-by")) {
		if (strcmp(v, "shape") != 0) {
			tprof_err("ops: --group-by takes 'shape'");
			return 1;
		}
		o->group_shape = 1;
		return CMD_RUN;
	}
	if (!strcmp(a, "--by")) {
		if (o->by_range + o->by_thread + o->by_region) {
			tprof_err("ops: one --by at a time");
			return 1;
		}
		if (strcmp(v, "range") == 0)
			o->by_range = 1;
		else if (strcmp(v, "thread") == 0)
			o->by_thread = 1;
		else if (strcmp(v, "region") == 0)
			o->by_region = 1;
		else {
			tprof_err("ops: --by takes 'range', 'thread' or 'region'");
			return 1;
		}
		return CMD_RUN;
	}
	size_t n; /* --thread */
	if (strcmp(v, "main") != 0 && (cmd_parse_count(v, &n) != 0 || n == 0 || n > UINT32_MAX)) {
		tprof_err("ops: --thread takes 'main' or a thread id");
		return 1;
	}
	o->one_thread = 1;
	o->tid = strcmp(v, "main") ? (uint32_t)n : 0;
	return CMD_RUN;
}

/* The step statistics: the distribution of the kept steps' times, and the FLOPs per step. */
static void step_figures(const struct ops_result *r, struct ops_dist *d, double *flops_step)
{
	uint64_t *v = xmalloc((r->nsteps + 1) * sizeof(uint64_t));
	if (r->nsteps)
		memcpy(v, r->step_ns, r->nsteps * sizeof(uint64_t));
	ops_dist(v, r->nsteps, d);
	free(v);
	*flops_step = r->nsteps ? (double)r->step_flops / (double)r->nsteps : 0;
}

/* The step statistics, as text. */
static void print_steps(const struct ops_result *r)
{
	struct ops_dist d;
	double flops_step;
	step_figures(r, &d, &flops_step);
	if (!r->steps_total) {
		if (r->step_marks == 1) /* a step lies between two boundaries */
			printf("\nsteps: one boundary marked, no whole step (tprof_step() marks where each iteration "
			       "begins)\n");
		else
			printf("\nsteps: none marked (the program calls tprof_step() at iteration boundaries)\n");
		return;
	}
	char a[32], b[32], c[32], e[32], f[32], g[32];
	printf("\nsteps: %zu measured (%zu warm-up skipped of %zu)\n", d.n, r->steps_skipped, r->steps_total);
	if (d.n > 1)
		printf("  per step  mean %s  std %s  p50 %s  p95 %s  95%% CI of the mean [%s, %s]\n",
		       tprof_fmt_ns((uint64_t)llround(d.mean), a), tprof_fmt_ns((uint64_t)llround(d.sd), b),
		       tprof_fmt_ns(d.p50, c), tprof_fmt_ns(d.p95, e), tprof_fmt_ns((uint64_t)llround(d.ci_lo), f),
		       tprof_fmt_ns((uint64_t)llround(d.ci_hi), g)); /* rounded, as in JSON */
	else if (d.n)
		printf("  per step  %s (one step: no spread, no confidence interval)\n", tprof_fmt_ns((uint64_t)llround(d.mean), a));
	if (d.n && flops_step > 0)
		printf("  FLOPs per step %.4g (top-level kernel calls), %.2f GFLOP/s over the steps\n", flops_step,
		       r->steps_ns ? (double)r->step_flops / (double)r->steps_ns : 0);
}

/* The imbalance of an op's regions: the busiest thread's time over the mean thread's, each summed
 * over the regions (1: even; a long region weighs more than a short one). */
static double imbalance(const struct ops_region_row *w)
{
	return w->mean_ns > 0 ? w->max_ns / w->mean_ns : 1;
}

/* --by region, as text. */
static void print_regions(const struct ops_result *r)
{
	uint64_t mx = 0;
	for (size_t i = 0; i < r->nregs; i++)
		mx = r->regs[i].busy_ns > mx ? r->regs[i].busy_ns : mx;
	struct tprof_unit u = tprof_ns_unit(mx);
	printf("%-30s %8s %7s", "opened by", "regions", "threads");
	head("wall", u.name, 12), head("busy", u.name, 12), head("avg wall", u.name, 12);
	head("imbalance", "", 9);
	printf("\n");
	for (size_t i = 0; i < r->nregs; i++) {
		const struct ops_region_row *w = &r->regs[i];
		char a[32], b[32], c[32];
		tprof_text_cut(stdout, w->name, -30);
		printf(" %8" PRIu64 " %7u %12s %12s %12s %9.2f\n", w->regions, w->threads,
		       tprof_fmt_in(w->wall_ns, u, a), tprof_fmt_in(w->busy_ns, u, b),
		       tprof_fmt_in(w->regions ? w->wall_ns / w->regions : 0, u, c), imbalance(w));
	}
	if (!r->nregs)
		printf("(no OpenMP parallel region in this trace)\n");
	printf("\nwall: from the fork to the last thread's end; busy: the threads' time in the regions' bodies;\n"
	       "imbalance: the busiest thread's time over the mean thread's, each summed over the regions (1 = even)\n");
}

/* A thread's time outside kernels, regions and idleness (never below 0: clocks of two threads). */
static uint64_t thread_outside(const struct ops_thread *h)
{
	uint64_t in = h->kernel_ns + h->pool_ns + h->idle_ns;
	return h->wall_ns > in ? h->wall_ns - in : 0;
}

/* --by thread, as text. */
static void print_threads(const struct ops_result *r)
{
	uint64_t mx = 0;
	for (size_t i = 0; i < r->nthr; i++)
		mx = r->thr[i].wall_ns > mx ? r->thr[i].wall_ns : mx;
	struct tprof_unit u = tprof_ns_unit(mx);
	printf("%-8s %-16s", "thread", "name");
	head("wall", u.name, 10), head("in kernels", "", 16), head("OpenMP work", "", 16);
	head("outside kernels", "", 16), head("idle", "", 16), head("calls", "", 7);
	printf("\n");
	for (size_t i = 0; i < r->nthr; i++) {
		const struct ops_thread *h = &r->thr[i];
		double w = h->wall_ns ? (double)h->wall_ns : 1;
		char a[32], b[32], c[32], d[32], e[32];
		uint64_t out = thread_outside(h);
		printf("%-8u ", h->tid);
		tprof_text_str(stdout, h->name, -16);
		printf(" %10s %9s %5.1f%% %9s %5.1f%% %9s %5.1f%% %9s %5.1f%% %7" PRIu64 "%s\n",
		       tprof_fmt_in(h->wall_ns, u, a), tprof_fmt_in(h->kernel_ns, u, b), 100.0 * (double)h->kernel_ns / w,
		       tprof_fmt_in(h->pool_ns, u, c), 100.0 * (double)h->pool_ns / w, tprof_fmt_in(out, u, d),
		       100.0 * (double)out / w, tprof_fmt_in(h->idle_ns, u, e), 100.0 * (double)h->idle_ns / w, h->calls,
		       h->main ? " main" : "");
	}
	printf("\nin kernels: its own calls; OpenMP work: in regions other threads' calls opened, outside its own\n"
	       "calls (that work is the opening call's self time); idle: a pool thread between regions.\n");
	if (r->lost_events) {
		char a[32];
		printf("warning: %s events were lost: calls and regions may be missing, and a thread taken for a\n"
		       "pool thread in regions it opened itself (idle)\n", tprof_commas(r->lost_events, a));
	}
}

/* Under the text table: which of its ops have a nominal FLOP count, each named once. */
static void print_nominal(const struct ops_result *r, size_t n)
{
	int any = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned op = r->rows[i].op;
		if (!op || !tprof_op_nominal(op))
			continue;
		size_t j = 0;
		while (j < i && r->rows[j].op != op)
			j++;
		if (j < i)
			continue;
		printf("%s%s", any ? ", " : "nominal FLOPs (data-dependent iterations; docs/OPS.md): ", tprof_op_info(op)->name);
		any = 1;
	}
	if (any)
		printf("\n");
}

/* --json and --csv (out/table.h). The op table: one row per op, per op and shape, or per range (the
 * last four columns are --by range's only). Columns added later go at the end of their table, so that
 * a reader that takes CSV columns by position keeps working. */
static const struct out_col op_cols[] = {
	{"name", OUT_STR, "", NULL, NULL},
	{"calls", OUT_U64, "calls", NULL, NULL},
	{"self_ns", OUT_U64, "ns", NULL, NULL},
	{"total_ns", OUT_U64, "ns", NULL, NULL},
	{"flops", OUT_U64, "FLOP", NULL, NULL},
	{"macs", OUT_U64, "MAC", NULL, NULL},
	{"bytes", OUT_U64, "bytes", NULL, NULL},
	{"gflops_per_s", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"percent_of_peak", OUT_F64, "%", "%.6g", NULL},
	{"fp_bits", OUT_I64, "bits", NULL, NULL},
	{"intensity", OUT_F64, "FLOP/byte", "%.6g", NULL},
	{"bound", OUT_STR, "", NULL, NULL},
	{"p50_ns", OUT_U64, "ns", NULL, NULL},
	{"p95_ns", OUT_U64, "ns", NULL, NULL},
	{"p99_ns", OUT_U64, "ns", NULL, NULL},
	{"ci95_ns", OUT_PAIR, "ns", "%.0f", NULL},
	{"flops_nominal", OUT_BOOL, "", NULL, NULL},
	/* --by range only */
	{"alloc_bytes", OUT_U64, "bytes", NULL, NULL},
	{"allocs", OUT_U64, "calls", NULL, NULL},
	{"peak_live_growth", OUT_U64, "bytes", NULL, NULL},
	{"kernel_ns", OUT_U64, "ns", NULL, NULL},
};
#define RANGE_COLS 4
static const struct out_table op_table = {"ops", "ops", op_cols, OUT_NCOLS(op_cols) - RANGE_COLS, 0};
static const struct out_table range_table = {"ops", "ops", op_cols, OUT_NCOLS(op_cols), 0};

/* The step statistics: one row, the JSON object "steps". */
static const struct out_col step_cols[] = {
	{"count", OUT_U64, "steps", NULL, NULL},
	{"skipped", OUT_U64, "steps", NULL, NULL},
	{"mean_ns", OUT_F64, "ns", "%.0f", NULL},
	{"std_ns", OUT_F64, "ns", "%.0f", NULL},
	{"p50_ns", OUT_U64, "ns", NULL, NULL},
	{"p95_ns", OUT_U64, "ns", NULL, NULL},
	{"ci95_ns", OUT_PAIR, "ns", "%.0f", NULL},
	{"flops_per_step", OUT_F64, "FLOP", "%.0f", NULL},
};
static const struct out_table step_table = {"steps", "steps", step_cols, OUT_NCOLS(step_cols), OUT_OBJECT};

/* --by thread and --by region: a table of their own in place of the op table, so also the one --csv
 * writes (under any of ops' table names). */
static const struct out_col thread_cols[] = {
	{"tid", OUT_U64, "", NULL, NULL},
	{"name", OUT_STR, "", NULL, NULL},
	{"main", OUT_BOOL, "", NULL, NULL},
	{"wall_ns", OUT_U64, "ns", NULL, NULL},
	{"kernel_ns", OUT_U64, "ns", NULL, NULL},
	{"pool_ns", OUT_U64, "ns", NULL, NULL},
	{"outside_ns", OUT_U64, "ns", NULL, NULL},
	{"idle_ns", OUT_U64, "ns", NULL, NULL},
	{"calls", OUT_U64, "calls", NULL, NULL},
};
static const struct out_table thread_table = {"ops", "threads", thread_cols, OUT_NCOLS(thread_cols), 0};

static const struct out_col region_cols[] = {
	{"opened_by", OUT_STR, "", NULL, NULL},
	{"regions", OUT_U64, "regions", NULL, NULL},
	{"threads", OUT_U64, "threads", NULL, NULL},
	{"wall_ns", OUT_U64, "ns", NULL, NULL},
	{"busy_ns", OUT_U64, "ns", NULL, NULL},
	{"imbalance", OUT_F64, "", "%.4f", NULL},
};
static const struct out_table region_table = {"ops", "regions", region_cols, OUT_NCOLS(region_cols), 0};

/* The JSON document's own members, before its tables (no CSV): the trace and the roofline, and the
 * traced threads' time. --by thread has the file and the times, --by region the file only. */
static const struct out_col head_cols[] = {
	{"file", OUT_STR, "", NULL, NULL},
	{"peak_gflops", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"peak_fp64_gflops", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"peak_source", OUT_STR, "", NULL, NULL},
	{"wall_ns", OUT_U64, "ns", NULL, NULL},
	{"in_ops_ns", OUT_U64, "ns", NULL, NULL},
	{"outside_ns", OUT_U64, "ns", NULL, NULL},
	{"idle_ns", OUT_U64, "ns", NULL, NULL},
	{"pool_ns", OUT_U64, "ns", NULL, NULL},
	{"lost_events", OUT_U64, "events", NULL, NULL},
	{"threads", OUT_U64, "threads", NULL, NULL},
	{"calls", OUT_U64, "calls", NULL, NULL},
	{"by", OUT_STR, "", NULL, NULL},
	{"peak_busy", OUT_BOOL, "", NULL, NULL}, /* the peaks were measured on a busy machine */
};
static const struct out_table head_table = {NULL, NULL, head_cols, OUT_NCOLS(head_cols), OUT_INLINE};

static const struct out_col by_head_cols[] = {
	{"file", OUT_STR, "", NULL, NULL},
	{"wall_ns", OUT_U64, "ns", NULL, NULL},
	{"in_ops_ns", OUT_U64, "ns", NULL, NULL},
	{"outside_ns", OUT_U64, "ns", NULL, NULL},
	{"idle_ns", OUT_U64, "ns", NULL, NULL},
	{"lost_events", OUT_U64, "events", NULL, NULL},
};
static const struct out_table thread_head_table = {NULL, NULL, by_head_cols, OUT_NCOLS(by_head_cols), OUT_INLINE};
static const struct out_table region_head_table = {NULL, NULL, by_head_cols, 1, OUT_INLINE};

/* A range row's "by_op": the ops that ran inside the range, a JSON list of objects after the row's
 * columns (no CSV field). out/table.h has no call for a JSON-only member inside a row, so the row is
 * set aside while the list is written with the calls for members outside rows, then taken up again
 * for out_row_end. */
static void put_range_ops(struct out *w, const struct ops_row *row)
{
	out_key(w, "by_op"); /* JSON only: after the row's last column */
	out_arr_begin(w);
	for (size_t j = 0; j < row->nsub; j++) {
		const struct ops_sub *v = &row->sub[j];
		out_obj_begin(w);
		out_key(w, "name");
		out_str(w, v->name);
		out_key(w, "calls");
		out_u64(w, v->calls);
		out_key(w, "self_ns");
		out_u64(w, v->self_ns);
		out_key(w, "flops");
		out_u64(w, v->flops);
		out_obj_end(w);
	}
	out_arr_end(w);
}

static void put_steps(struct out *w, const struct ops_result *r)
{
	struct ops_dist d;
	double flops_step;
	step_figures(r, &d, &flops_step);
	out_table_begin(w, &step_table);
	out_row_begin(w);
	out_u64(w, d.n);
	out_u64(w, r->steps_skipped);
	if (d.n) {
		out_f64(w, d.mean);
		out_f64(w, d.sd);
		out_u64(w, d.p50);
		out_u64(w, d.p95);
	} else { /* no step: nothing to say of one (null, as compare and diff have it), not 0 ns */
		for (int k = 0; k < 4; k++)
			out_null(w);
	}
	out_pair(w, d.ci_lo, d.ci_hi);
	out_f64(w, d.n ? flops_step : NAN);
	out_row_end(w);
	out_table_end(w);
}

/* The op table's first n rows and the step statistics, as --json or --csv. A write error leaves the
 * exit status 0, as it always did. */
static void put_ops(const struct cmd_opts *co, struct ops_result *r, size_t n, const struct tprof_roofline *rf,
		    int by_range)
{
	struct out w;
	cmd_out_begin(&w, co);
	out_table_begin(&w, &head_table);
	out_row_begin(&w);
	out_str(&w, co->file);
	out_f64(&w, rf->fp32_gflops_all);
	out_f64(&w, rf->fp64_gflops_all);
	out_str(&w, rf->source);
	out_u64(&w, r->wall_ns);
	out_u64(&w, r->in_ops_ns);
	out_u64(&w, r->wall_ns - r->in_ops_ns - r->idle_ns - r->pool_ns);
	out_u64(&w, r->idle_ns);
	out_u64(&w, r->pool_ns);
	out_u64(&w, r->lost_events);
	out_u64(&w, r->threads);
	out_u64(&w, r->calls);
	out_str(&w, by_range ? "range" : "op");
	out_bool(&w, rf->busy);
	out_row_end(&w);
	out_table_end(&w);

	out_table_begin(&w, by_range ? &range_table : &op_table);
	for (size_t i = 0; i < n; i++) {
		struct ops_row *row = &r->rows[i];
		struct ops_dist d;
		ops_dist(row->dur_ns, row->ndur, &d);
		double peak = peak_for(rf, row->fp_bits);
		out_row_begin(&w);
		out_str(&w, row->name);
		out_u64(&w, row->calls);
		out_u64(&w, row->self_ns);
		out_u64(&w, row->total_ns);
		out_u64(&w, row->flops);
		out_u64(&w, row->macs);
		out_u64(&w, row->bytes);
		out_f64(&w, gflops_of(row));
		if (peak > 0)
			out_f64(&w, 100.0 * gflops_of(row) / peak);
		else
			out_null(&w);
		out_i64(&w, row->fp_bits);
		out_f64(&w, row->bytes ? (double)row->flops / (double)row->bytes : 0);
		out_str(&w, bound_of(rf, row));
		out_u64(&w, d.p50);
		out_u64(&w, d.p95);
		out_u64(&w, d.p99);
		out_pair(&w, d.ci_lo, d.ci_hi);
		out_bool(&w, row->op && tprof_op_nominal(row->op));
		if (by_range) {
			out_u64(&w, row->alloc_bytes);
			out_u64(&w, row->allocs);
			out_u64(&w, row->peak_growth);
			out_u64(&w, row->kernel_ns);
			put_range_ops(&w, row);
		}
		out_row_end(&w);
	}
	out_table_end(&w);
	put_steps(&w, r);
	out_end(&w);
}

/* --by thread or --by region as --json or --csv (its table whichever of ops' tables --csv named; with
 * both, the regions, and in JSON the threads' times too). */
static void put_by(const struct cmd_opts *co, const struct ops_result *r, const struct ops_options *o)
{
	struct cmd_opts one = *co;
	one.csv = co->csv ? 1 : 0;
	struct out w;
	cmd_out_begin(&w, &one);
	out_table_begin(&w, o->by_thread ? &thread_head_table : &region_head_table);
	out_row_begin(&w);
	out_str(&w, co->file);
	if (o->by_thread) {
		out_u64(&w, r->wall_ns);
		out_u64(&w, r->in_ops_ns);
		out_u64(&w, r->wall_ns - r->in_ops_ns - r->idle_ns);
		out_u64(&w, r->idle_ns);
		out_u64(&w, r->lost_events);
	}
	out_row_end(&w);
	out_table_end(&w);

	if (!o->by_region) {
		out_table_begin(&w, &thread_table);
		for (size_t i = 0; i < r->nthr; i++) {
			const struct ops_thread *h = &r->thr[i];
			out_row_begin(&w);
			out_u64(&w, h->tid);
			out_str(&w, h->name);
			out_bool(&w, h->main);
			out_u64(&w, h->wall_ns);
			out_u64(&w, h->kernel_ns);
			out_u64(&w, h->pool_ns);
			out_u64(&w, thread_outside(h));
			out_u64(&w, h->idle_ns);
			out_u64(&w, h->calls);
			out_row_end(&w);
		}
	} else {
		out_table_begin(&w, &region_table);
		for (size_t i = 0; i < r->nregs; i++) {
			const struct ops_region_row *g = &r->regs[i];
			out_row_begin(&w);
			out_str(&w, g->name);
			out_u64(&w, g->regions);
			out_u64(&w, g->threads);
			out_u64(&w, g->wall_ns);
			out_u64(&w, g->busy_ns);
			out_f64(&w, imbalance(g));
			out_row_end(&w);
		}
	}
	out_table_end(&w);
	out_end(&w);
}

int cmd_ops(int argc, char **argv)
{
	static const char *const tables[] = {"ops", "steps", NULL};
	struct ops_options o = {0};
	struct cmd_opts co = { .name = "ops", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP | CMD_SKIP_STEPS,
			       .csv_tables = tables, .extra = parse_ops_opt, .ctx = &o };
	sort_by = SORT_SELF;
	sort_given = 0;
	int rc = cmd_parse(&co, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	if ((o.by_thread || o.by_region) && co.csv == 2) { /* --csv=steps: a table of the op table's */
		tprof_err("ops: --csv=steps is for the op table, not --by %s", o.by_thread ? "thread" : "region");
		return 1;
	}
	if (o.by_region && o.one_thread) { /* a region's time is its opener's and its pool threads' at once */
		tprof_err("ops: --thread is not for --by region, whose rows are every thread's regions");
		return 1;
	}
	/* options of the op table, refused where they would change nothing */
	const char *by = o.by_range ? "range" : o.by_thread ? "thread" : o.by_region ? "region" : NULL;
	if (by && (o.group_shape || o.wide || (sort_given && !o.by_range))) {
		tprof_err("ops: %s is for the op table, not --by %s",
			  o.group_shape ? "--group-by" : o.wide ? "--wide" : "--sort", by);
		return 1;
	}
	o.skip_steps = co.skip_steps;
	const char *path = co.file;
	int json = co.json;
	size_t top = co.top;
	struct tprof_trace *t = cmd_open_trace(path);
	if (!t)
		return 2;
	struct ops_result r;
	if (ops_analyze(t, &o, &r) != 0) {
		tprof_err("%s", t->err);
		tprof_trace_close(t);
		return 2;
	}
	struct tprof_roofline rf;
	tprof_roofline_get(&rf, TPROF_ROOFLINE_MEASURE);
	sort_by = o.by_range && sort_by == SORT_SELF ? SORT_TOTAL : sort_by;
	if (r.nrows) /* no rows: r.rows may be NULL, which qsort may not be given */
		tprof_sort(r.rows, r.nrows, sizeof(*r.rows), row_cmp);
	size_t n = top > 0 && top < r.nrows ? top : r.nrows;
	double wall = r.wall_ns ? (double)r.wall_ns : 1;

	if (o.by_region || o.by_thread) { /* a table of their own instead of the op table */
		if (json || co.csv) {
			put_by(&co, &r, &o);
		} else {
			printf("tprof ops --by %s: ", o.by_region ? "region" : "thread");
			tprof_text_str(stdout, path, 0);
			printf("\n\n");
			if (o.by_region)
				print_regions(&r);
			else
				print_threads(&r);
		}
		goto out;
	}
	if (json || co.csv) {
		put_ops(&co, &r, n, &rf, o.by_range);
		goto out;
	}

	char a[32], b[32], c[32];
	printf("tprof ops: ");
	tprof_text_str(stdout, path, 0);
	printf("\n\n");
	if (o.one_thread && r.nthr)
		printf("  thread %" PRIu32 "%s only (--thread): its wall time %s (first to last event%s)\n", r.thr[0].tid,
		       r.thr[0].main ? ", the main thread," : "", tprof_fmt_ns(r.wall_ns, a),
		       o.skip_steps ? ", from the first kept step" : "");
	else
		printf("  traced wall time %s over %zu thread%s with kernel calls (first to last event of each%s)\n",
		       tprof_fmt_ns(r.wall_ns, a), r.threads, r.threads == 1 ? "" : "s",
		       o.skip_steps ? ", from the first kept step" : "");
	uint64_t outside = r.wall_ns - r.in_ops_ns - r.idle_ns - r.pool_ns;
	printf("  in kernels %s (%.1f%%), outside kernels %s (%.1f%%)", tprof_fmt_ns(r.in_ops_ns, b),
	       100.0 * (double)r.in_ops_ns / wall, tprof_fmt_ns(outside, c), 100.0 * (double)outside / wall);
	printf("; %" PRIu64 " calls\n", r.calls);
	if (r.pool_ns)
		printf("  OpenMP work %s (%.1f%%): in regions other threads' calls opened (their self time)\n",
		       tprof_fmt_ns(r.pool_ns, a), 100.0 * (double)r.pool_ns / wall);
	if (r.lost_events)
		printf("  warning: %s events were lost (lossy mode's, or signal handlers' beyond what could be\n"
		       "           kept): calls, ranges and steps may be missing\n",
		       tprof_commas(r.lost_events, a));
	size_t unnamed = 0; /* ranges, marks and parameters whose name the process could not keep */
	for (size_t i = 0; i < t->nannots; i++)
		unnamed += (t->annots[i].kind == TPROF_ANNOT_PUSH || t->annots[i].kind == TPROF_ANNOT_MARK ||
			    t->annots[i].kind == TPROF_ANNOT_PARAM) && !t->annots[i].name;
	if (unnamed)
		printf("  warning: %s ranges, marks or parameters have no name ('?'): given none, or named past the\n"
		       "           4,095 distinct names a process keeps (include/tprof.h)\n",
		       tprof_commas(unnamed, a));
	if (r.idle_ns)
		printf("  idle %s (%.1f%%): OpenMP pool threads waiting between regions\n", tprof_fmt_ns(r.idle_ns, a),
		       100.0 * (double)r.idle_ns / wall);
	for (size_t i = 0; i < r.nthr && r.nthr > 1; i++)
		if (r.thr[i].main) {
			const struct ops_thread *h = &r.thr[i];
			double w = h->wall_ns ? (double)h->wall_ns : 1;
			printf("  main thread: %s, in kernels %.1f%%, outside kernels %.1f%% (--by thread: every thread)\n",
			       tprof_fmt_ns(h->wall_ns, a), 100.0 * (double)(h->kernel_ns + h->pool_ns) / w,
			       100.0 * (double)thread_outside(h) / w);
		}
	if (rf.fp32_gflops_all > 0)
	{
		printf("  %%peak: of this machine's all-core FMA peak in the op's precision: FP32 %.1f GFLOP/s, ",
		       rf.fp32_gflops_all);
		if (rf.fp64_gflops_all > 0)
			printf("FP64 %.1f GFLOP/s", rf.fp64_gflops_all);
		else
			printf("FP64 unknown");
		printf("\n          (%s)\n", rf.source);
		if (rf.busy)
			printf("  BUSY: the peaks were measured while other processes took CPU time, so %%peak may be\n"
			       "  off; run 'tprof roofline --remeasure' on an idle machine.\n");
		if (tprof_roofline_ridge(&rf, 32) > 0)
			printf("  bound: the roof an op's FLOP/B puts it under; ridge points FP32 %.2f, FP64 %.2f FLOP/B "
			       "(STREAM %.1f GB/s)\n",
			       tprof_roofline_ridge(&rf, 32), tprof_roofline_ridge(&rf, 64), rf.stream_gbs_all);
	}
	else
		printf("  %% peak: unknown (run 'tprof roofline' or set TPROF_PEAK_GFLOPS)\n");
	if (!r.nrows && !r.calls && t->nkcalls) {
		printf("\n  no kernel call after the %u skipped step%s\n", o.skip_steps, o.skip_steps == 1 ? "" : "s");
		print_steps(&r);
		goto out;
	}
	if (!r.nrows && !r.calls) {
		printf("\n  the trace has no kernel calls: tprof ops measures the kernels libtprof.so wraps (libtnn's,\n"
		       "  BLAS and LAPACK); 'tprof report' and 'tprof summary' show the heap\n");
		print_steps(&r);
		goto out;
	}
	printf("  self %% and total %%: of %s wall time; times per call: total (nested calls included)\n\n",
	       o.one_thread ? "the thread's" : "the traced");
	/* the name column: 26 columns, names cut to fit; --wide: as wide as the longest name shown (120 at
	 * most), so that shapes (--group-by shape) are whole */
	int nw = 26;
	for (size_t i = 0; o.wide && i < n; i++) {
		int cols = tprof_text_cols(r.rows[i].name);
		nw = cols > nw ? (cols < 120 ? cols : 120) : nw;
	}
	/* one unit per column, from the largest value shown */
	uint64_t mx[10] = {0};
	for (size_t i = 0; i < n; i++) {
		struct ops_row *w = &r.rows[i];
		struct ops_dist d;
		ops_dist(w->dur_ns, w->ndur, &d);
		uint64_t v[10] = {w->self_ns, w->total_ns, w->calls ? w->total_ns / w->calls : 0, d.p50, d.p95, d.p99,
				  isfinite(d.ci_hi) ? (uint64_t)d.ci_hi : 0, w->bytes, w->kernel_ns, w->alloc_bytes > w->peak_growth ? w->alloc_bytes : w->peak_growth};
		for (int k = 0; k < 10; k++)
			mx[k] = v[k] > mx[k] ? v[k] : mx[k];
	}
	if (!o.by_range && outside > mx[0])
		mx[0] = outside;
	if (!o.by_range && r.idle_ns > mx[0])
		mx[0] = r.idle_ns;
	struct tprof_unit u_self = tprof_ns_unit(mx[0]), u_total = tprof_ns_unit(mx[1]), u_avg = tprof_ns_unit(mx[2]);
	struct tprof_unit u_p50 = tprof_ns_unit(mx[3]), u_p95 = tprof_ns_unit(mx[4]), u_p99 = tprof_ns_unit(mx[5]);
	struct tprof_unit u_ci = tprof_ns_unit(mx[6]), u_bytes = tprof_bytes_unit(mx[7]);
	struct tprof_unit u_kern = tprof_ns_unit(mx[8] > mx[1] ? mx[8] : mx[1]), u_mem = tprof_bytes_unit(mx[9]);
	if (o.by_range) {
		printf("%-30s", "range");
		head("count", "", 6), head("total", u_kern.name, 9), head("kernel", u_kern.name, 9), head("krn%", "", 6);
		head("avg", u_avg.name, 9), head("GFLOP", "", 8), head("GFLOP/s", "", 8), head("alloc", u_mem.name, 9);
		head("peak+", u_mem.name, 9), head("allocs", "", 7);
		printf("\n");
	} else {
		printf("%-*s", nw, "name");
		head("calls", "", 7), head("self", u_self.name, 9), head("self%", "", 6), head("total", u_total.name, 9);
		head("tot%", "", 6), head("avg", u_avg.name, 9);
		if (o.wide)
			head("p50", u_p50.name, 9);
		head("p95", u_p95.name, 9);
		if (o.wide)
			head("p99", u_p99.name, 9), head("95% CI of mean", u_ci.name, 21), head("GFLOP", "", 9);
		head("GFLOP/s", "", 8), head("%peak", "", 6);
		if (o.wide)
			head("bytes", u_bytes.name, 9);
		head("FLOP/B", "", 7), printf(" bound\n");
	}
	for (size_t i = 0; i < n; i++) {
		struct ops_row *w = &r.rows[i];
		struct ops_dist d;
		ops_dist(w->dur_ns, w->ndur, &d);
		char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32], s7[32], s8[32], s9[48];
		if (o.by_range) {
			tprof_text_cut(stdout, w->name, -30);
			char kp[16] = "     -"; /* "(no range)": no instance, no total time */
			if (w->total_ns)
				snprintf(kp, sizeof(kp), "%5.1f%%", 100.0 * (double)w->kernel_ns / (double)w->total_ns);
			printf(" %6" PRIu64 " %9s %9s %6s %9s %8.3f %8.2f %9s %9s %7" PRIu64 "\n", w->calls,
			       tprof_fmt_in(w->total_ns, u_kern, s1), tprof_fmt_in(w->kernel_ns, u_kern, s2), kp,
			       tprof_fmt_in(w->calls ? w->total_ns / w->calls : 0, u_avg, s3), (double)w->flops / 1e9,
			       gflops_of(w), tprof_fmt_in(w->alloc_bytes, u_mem, s4), tprof_fmt_in(w->peak_growth, u_mem, s5),
			       w->allocs);
			print_range_ops(w, u_kern);
			continue;
		}
		double peak = peak_for(&rf, w->fp_bits);
		char pk[16];
		if (peak > 0)
			snprintf(pk, sizeof(pk), "%5.1f%%", 100.0 * gflops_of(w) / peak);
		else
			snprintf(pk, sizeof(pk), "-");
		tprof_text_cut(stdout, w->name, -nw);
		printf(" %7" PRIu64 " %9s %5.1f%% %9s %5.1f%% %9s", w->calls, tprof_fmt_in(w->self_ns, u_self, s1),
		       100.0 * (double)w->self_ns / wall, tprof_fmt_in(w->total_ns, u_total, s2),
		       100.0 * (double)w->total_ns / wall, tprof_fmt_in(w->calls ? w->total_ns / w->calls : 0, u_avg, s3));
		if (o.wide)
			printf(" %9s", tprof_fmt_in(d.p50, u_p50, s4));
		printf(" %9s", tprof_fmt_in(d.p95, u_p95, s5));
		if (o.wide) {
			char ci[64] = "-"; /* one call: no interval */
			if (isfinite(d.ci_lo))
				snprintf(ci, sizeof(ci), "[%s, %s]", tprof_fmt_in((uint64_t)d.ci_lo, u_ci, s8),
					 tprof_fmt_in((uint64_t)d.ci_hi, u_ci, s9));
			printf(" %9s %21s %9.3f", tprof_fmt_in(d.p99, u_p99, s6), ci, (double)w->flops / 1e9);
		}
		printf(" %8.2f %6s", gflops_of(w), pk);
		if (o.wide)
			printf(" %9s", tprof_fmt_in(w->bytes, u_bytes, s7));
		printf(" %7.2f %s\n", w->bytes ? (double)w->flops / (double)w->bytes : 0, bound_of(&rf, w));
	}
	if (n < r.nrows)
		printf("... %zu more (--top)\n", r.nrows - n);
	print_nominal(&r, n);
	if (!o.by_range) {
		printf("%-*s %7s %9s %5.1f%%\n", nw, "(outside kernels)", "", tprof_fmt_in(outside, u_self, a),
		       100.0 * (double)outside / wall);
		if (r.idle_ns)
			printf("%-*s %7s %9s %5.1f%%\n", nw, "(idle OpenMP threads)", "", tprof_fmt_in(r.idle_ns, u_self, a),
			       100.0 * (double)r.idle_ns / wall);
	}
	print_steps(&r);
out:
	ops_free(&r);
	tprof_trace_close(t);
	return 0;
}
