/* tprof ops: the op table of a trace, like PyTorch's key_averages().table() and more: per op (or op
 * and shape, or annotated range) the calls, self and total time with their shares of the traced
 * threads' wall time, the per-call distribution (p50/p95/p99, 95 % CI of the mean), FLOPs, GFLOP/s and
 * its share of this machine's peak, bytes, arithmetic intensity and the roof that bounds it; then
 * the step statistics. Text for people, --json for tools, --csv for spreadsheets (the op table;
 * --csv=steps the step statistics). */
#include <inttypes.h>
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

enum sort_key { SORT_SELF, SORT_TOTAL, SORT_CALLS, SORT_FLOPS, SORT_NAME, SORT_GFLOPS };

static enum sort_key sort_by;

static double gflops_of(const struct ops_row *w)
{
	return w->total_ns ? (double)w->flops / (double)w->total_ns : 0;
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
	"table fits 120 columns; --wide shows every column (JSON and CSV always have them all)."

static const struct {
	const char *name;
	enum sort_key key;
} sort_keys[] = {{"self", SORT_SELF},   {"total", SORT_TOTAL}, {"calls", SORT_CALLS},
		 {"flops", SORT_FLOPS}, {"name", SORT_NAME},   {"gflops", SORT_GFLOPS}};

/* ops' own options, for cmd_parse. */
static int parse_ops_opt(void *ctx, int argc, char **argv, int *i)
{
	struct ops_options *o = ctx;
	const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
	if (!strcmp(a, "--wide")) {
		o->wide = 1;
		return CMD_RUN;
	}
	if (strcmp(a, "--sort") && strcmp(a, "--group-by") && strcmp(a, "--by") && strcmp(a, "--skip-steps") &&
	    strcmp(a, "--thread"))
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
	size_t n;
	if (!strcmp(a, "--thread")) {
		if (strcmp(v, "main") != 0 && (stacks_parse_top(v, &n) != 0 || n == 0 || n > UINT32_MAX)) {
			tprof_err("ops: --thread takes 'main' or a thread id");
			return 1;
		}
		o->one_thread = 1;
		o->tid = strcmp(v, "main") ? (uint32_t)n : 0;
		return CMD_RUN;
	}
	if (stacks_parse_top(v, &n) != 0 || n > UINT32_MAX) {
		tprof_err("ops: --skip-steps needs a number of steps");
		return 1;
	}
	o->skip_steps = (unsigned)n;
	return CMD_RUN;
}

/* mode: 0 text, 1 JSON, 2 CSV. */
static void print_steps(const struct ops_result *r, int mode)
{
	struct ops_dist d;
	uint64_t *v = xmalloc((r->nsteps + 1) * sizeof(uint64_t));
	if (r->nsteps)
		memcpy(v, r->step_ns, r->nsteps * sizeof(uint64_t));
	ops_dist(v, r->nsteps, &d);
	free(v);
	double flops_step = r->nsteps ? (double)r->step_flops / (double)r->nsteps : 0;
	if (mode == 1) {
		printf("\"steps\":{\"count\":%zu,\"skipped\":%zu,\"mean_ns\":%.0f,\"std_ns\":%.0f,\"p50_ns\":%" PRIu64
		       ",\"p95_ns\":%" PRIu64 ",\"ci95_ns\":[%.0f,%.0f],\"flops_per_step\":%.0f}",
		       d.n, r->steps_skipped, d.mean, d.sd, d.p50, d.p95, d.ci_lo, d.ci_hi, flops_step);
		return;
	}
	if (mode == 2) {
		printf("count,skipped,mean_ns,std_ns,p50_ns,p95_ns,ci95_lo_ns,ci95_hi_ns,flops_per_step" TPROF_CSV_EOL);
		printf("%zu,%zu,%.0f,%.0f,%" PRIu64 ",%" PRIu64 ",%.0f,%.0f,%.0f" TPROF_CSV_EOL, d.n, r->steps_skipped,
		       d.mean, d.sd, d.p50, d.p95, d.ci_lo, d.ci_hi, flops_step);
		return;
	}
	if (!r->steps_total) {
		printf("\nsteps: none marked (the program calls tprof_step() at iteration boundaries)\n");
		return;
	}
	char a[32], b[32], c[32], e[32], f[32], g[32];
	printf("\nsteps: %zu measured (%zu warm-up skipped of %zu)\n", d.n, r->steps_skipped, r->steps_total);
	if (d.n)
		printf("  per step  mean %s  std %s  p50 %s  p95 %s  95%% CI of the mean [%s, %s]\n",
		       tprof_fmt_ns((uint64_t)d.mean, a), tprof_fmt_ns((uint64_t)d.sd, b), tprof_fmt_ns(d.p50, c),
		       tprof_fmt_ns(d.p95, e), tprof_fmt_ns((uint64_t)d.ci_lo, f), tprof_fmt_ns((uint64_t)d.ci_hi, g));
	if (d.n && flops_step > 0)
		printf("  FLOPs per step %.4g (top-level kernel calls), %.2f GFLOP/s over the steps\n", flops_step,
		       r->steps_ns ? (double)r->step_flops / (double)r->steps_ns : 0);
}

/* --by region: mode 0 text, 1 JSON (the "regions" member), 2 CSV. */
static void print_regions(const struct ops_result *r, int mode)
{
	if (mode == 2)
		printf("opened_by,regions,threads,wall_ns,busy_ns,imbalance" TPROF_CSV_EOL);
	else if (mode == 1)
		printf("\"regions\":[");
	uint64_t mx = 0;
	for (size_t i = 0; i < r->nregs; i++)
		mx = r->regs[i].busy_ns > mx ? r->regs[i].busy_ns : mx;
	struct tprof_unit u = tprof_ns_unit(mx);
	if (mode == 0) {
		printf("%-30s %8s %7s", "opened by", "regions", "threads");
		head("wall", u.name, 12), head("busy", u.name, 12), head("avg wall", u.name, 12);
		head("imbalance", "", 9);
		printf("\n");
	}
	for (size_t i = 0; i < r->nregs; i++) {
		const struct ops_region_row *w = &r->regs[i];
		double imb = w->mean_ns > 0 ? w->max_ns / w->mean_ns : 1;
		if (mode == 2) {
			tprof_csv_str(stdout, w->name);
			printf(",%" PRIu64 ",%u,%" PRIu64 ",%" PRIu64 ",%.4f" TPROF_CSV_EOL, w->regions, w->threads,
			       w->wall_ns, w->busy_ns, imb);
		} else if (mode == 1) {
			printf("%s{\"opened_by\":", i ? "," : "");
			tprof_json_str(stdout, w->name);
			printf(",\"regions\":%" PRIu64 ",\"threads\":%u,\"wall_ns\":%" PRIu64 ",\"busy_ns\":%" PRIu64
			       ",\"imbalance\":%.4f}", w->regions, w->threads, w->wall_ns, w->busy_ns, imb);
		} else {
			char a[32], b[32], c[32];
			tprof_text_cut(stdout, w->name, -30);
			printf(" %8" PRIu64 " %7u %12s %12s %12s %9.2f\n", w->regions, w->threads,
			       tprof_fmt_in(w->wall_ns, u, a), tprof_fmt_in(w->busy_ns, u, b),
			       tprof_fmt_in(w->regions ? w->wall_ns / w->regions : 0, u, c), imb);
		}
	}
	if (mode == 1)
		printf("]");
	else if (mode == 0) {
		if (!r->nregs)
			printf("(no OpenMP parallel region in this trace)\n");
		printf("\nwall: from the fork to the last thread's end; busy: the threads' time in the regions' bodies;\n"
		       "imbalance: the busiest thread's time over the mean thread's, per region, summed (1 = even)\n");
	}
}

/* A thread's time outside kernels, regions and idleness (never below 0: clocks of two threads). */
static uint64_t thread_outside(const struct ops_thread *h)
{
	uint64_t in = h->kernel_ns + h->pool_ns + h->idle_ns;
	return h->wall_ns > in ? h->wall_ns - in : 0;
}

/* --by thread: mode 0 text, 1 JSON (the "threads" member), 2 CSV. */
static void print_threads(const struct ops_result *r, int mode)
{
	if (mode == 2) {
		printf("tid,name,main,wall_ns,kernel_ns,pool_ns,outside_ns,idle_ns,calls" TPROF_CSV_EOL);
		for (size_t i = 0; i < r->nthr; i++) {
			const struct ops_thread *h = &r->thr[i];
			printf("%u,", h->tid);
			tprof_csv_str(stdout, h->name);
			printf(",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 TPROF_CSV_EOL,
			       h->main ? "true" : "false", h->wall_ns, h->kernel_ns, h->pool_ns, thread_outside(h),
			       h->idle_ns, h->calls);
		}
		return;
	}
	if (mode == 1) {
		printf("\"threads\":[");
		for (size_t i = 0; i < r->nthr; i++) {
			const struct ops_thread *h = &r->thr[i];
			printf("%s{\"tid\":%u,\"name\":", i ? "," : "", h->tid);
			tprof_json_str(stdout, h->name);
			printf(",\"main\":%s,\"wall_ns\":%" PRIu64 ",\"kernel_ns\":%" PRIu64 ",\"pool_ns\":%" PRIu64
			       ",\"outside_ns\":%" PRIu64 ",\"idle_ns\":%" PRIu64 ",\"calls\":%" PRIu64 "}",
			       h->main ? "true" : "false", h->wall_ns, h->kernel_ns, h->pool_ns, thread_outside(h), h->idle_ns,
			       h->calls);
		}
		printf("]");
		return;
	}
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

/* The op table's CSV: the JSON rows' fields, ci95_ns as ci95_lo_ns and ci95_hi_ns, null empty. */
static void print_csv(const struct ops_result *r, size_t n, const struct tprof_roofline *rf, int by_range)
{
	printf("name,calls,self_ns,total_ns,flops,macs,bytes,gflops_per_s,percent_of_peak,fp_bits,intensity,bound,"
	       "p50_ns,p95_ns,p99_ns,ci95_lo_ns,ci95_hi_ns,flops_nominal%s" TPROF_CSV_EOL,
	       by_range ? ",alloc_bytes,allocs,peak_live_growth" : "");
	for (size_t i = 0; i < n; i++) {
		struct ops_row *w = &r->rows[i];
		struct ops_dist d;
		ops_dist(w->dur_ns, w->ndur, &d);
		double peak = peak_for(rf, w->fp_bits);
		char pct[32] = "";
		if (peak > 0)
			snprintf(pct, sizeof(pct), "%.6g", 100.0 * gflops_of(w) / peak);
		tprof_csv_str(stdout, w->name);
		printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.6g,%s,%d,%.6g,%s,%" PRIu64
		       ",%" PRIu64 ",%" PRIu64 ",%.0f,%.0f",
		       w->calls, w->self_ns, w->total_ns, w->flops, w->macs, w->bytes, gflops_of(w), pct, w->fp_bits,
		       w->bytes ? (double)w->flops / (double)w->bytes : 0, bound_of(rf, w), d.p50, d.p95, d.p99, d.ci_lo,
		       d.ci_hi);
		printf(",%s", w->op && tprof_op_nominal(w->op) ? "true" : "false");
		if (by_range)
			printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64, w->alloc_bytes, w->allocs, w->peak_growth);
		printf(TPROF_CSV_EOL);
	}
}

int cmd_ops(int argc, char **argv)
{
	static const char *const tables[] = {"ops", "steps", NULL};
	struct ops_options o = {0};
	struct cmd_opts co = { .name = "ops", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP,
			       .csv_tables = tables, .extra = parse_ops_opt, .ctx = &o };
	sort_by = SORT_SELF;
	int rc = cmd_parse(&co, argc, argv);
	if (rc != CMD_RUN)
		return rc;
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
		void (*table)(const struct ops_result *, int) = o.by_region ? print_regions : print_threads;
		if (co.csv) {
			table(&r, 2);
		} else if (json) {
			printf("{\"file\":");
			tprof_json_str(stdout, path);
			if (o.by_thread)
				printf(",\"wall_ns\":%" PRIu64 ",\"in_ops_ns\":%" PRIu64 ",\"outside_ns\":%" PRIu64
				       ",\"idle_ns\":%" PRIu64, r.wall_ns, r.in_ops_ns, r.wall_ns - r.in_ops_ns - r.idle_ns,
				       r.idle_ns);
			printf(",");
			table(&r, 1);
			printf("}\n");
		} else {
			printf("tprof ops --by %s: ", o.by_region ? "region" : "thread");
			tprof_text_str(stdout, path, 0);
			printf("\n\n");
			table(&r, 0);
		}
		goto out;
	}
	if (co.csv == 1) {
		print_csv(&r, n, &rf, o.by_range);
		goto out;
	}
	if (co.csv == 2) {
		print_steps(&r, 2);
		goto out;
	}

	if (json) {
		printf("{\"file\":");
		tprof_json_str(stdout, path);
		printf(",\"peak_gflops\":%.6g,\"peak_fp64_gflops\":%.6g,\"peak_source\":", rf.fp32_gflops_all,
		       rf.fp64_gflops_all);
		tprof_json_str(stdout, rf.source);
		printf(",\"wall_ns\":%" PRIu64 ",\"in_ops_ns\":%" PRIu64 ",\"outside_ns\":%" PRIu64
		       ",\"idle_ns\":%" PRIu64 ",\"threads\":%zu,\"calls\":%" PRIu64 ",\"by\":\"%s\",\"ops\":[",
		       r.wall_ns, r.in_ops_ns, r.wall_ns - r.in_ops_ns - r.idle_ns, r.idle_ns, r.threads, r.calls,
		       o.by_range ? "range" : "op");
		for (size_t i = 0; i < n; i++) {
			struct ops_row *w = &r.rows[i];
			struct ops_dist d;
			ops_dist(w->dur_ns, w->ndur, &d);
			double peak = peak_for(&rf, w->fp_bits);
			char pct[32] = "null";
			if (peak > 0)
				snprintf(pct, sizeof(pct), "%.6g", 100.0 * gflops_of(w) / peak);
			printf("%s{\"name\":", i ? "," : "");
			tprof_json_str(stdout, w->name);
			printf(",\"calls\":%" PRIu64 ",\"self_ns\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"flops\":%" PRIu64
			       ",\"macs\":%" PRIu64 ",\"bytes\":%" PRIu64 ",\"gflops_per_s\":%.6g,\"percent_of_peak\":%s"
			       ",\"fp_bits\":%d,\"intensity\":%.6g,\"bound\":\"%s\",\"p50_ns\":%" PRIu64 ",\"p95_ns\":%" PRIu64
			       ",\"p99_ns\":%" PRIu64 ",\"ci95_ns\":[%.0f,%.0f],\"flops_nominal\":%s",
			       w->calls, w->self_ns, w->total_ns, w->flops, w->macs, w->bytes, gflops_of(w), pct, w->fp_bits,
			       w->bytes ? (double)w->flops / (double)w->bytes : 0, bound_of(&rf, w), d.p50, d.p95, d.p99,
			       d.ci_lo, d.ci_hi, w->op && tprof_op_nominal(w->op) ? "true" : "false");
			if (o.by_range) {
				printf(",\"alloc_bytes\":%" PRIu64 ",\"allocs\":%" PRIu64 ",\"peak_live_growth\":%" PRIu64
				       ",\"kernel_ns\":%" PRIu64 ",\"by_op\":[",
				       w->alloc_bytes, w->allocs, w->peak_growth, w->kernel_ns);
				for (size_t j = 0; j < w->nsub; j++) {
					printf("%s{\"name\":", j ? "," : "");
					tprof_json_str(stdout, w->sub[j].name);
					printf(",\"calls\":%" PRIu64 ",\"self_ns\":%" PRIu64 ",\"flops\":%" PRIu64 "}",
					       w->sub[j].calls, w->sub[j].self_ns, w->sub[j].flops);
				}
				printf("]");
			}
			printf("}");
		}
		printf("],");
		print_steps(&r, 1);
		printf("}\n");
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
	uint64_t outside = r.wall_ns - r.in_ops_ns - r.idle_ns;
	printf("  in kernels %s (%.1f%%), outside kernels %s (%.1f%%)", tprof_fmt_ns(r.in_ops_ns, b),
	       100.0 * (double)r.in_ops_ns / wall, tprof_fmt_ns(outside, c), 100.0 * (double)outside / wall);
	printf("; %" PRIu64 " calls\n", r.calls);
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
		if (tprof_roofline_ridge(&rf, 32) > 0)
			printf("  bound: the roof an op's FLOP/B puts it under; ridge points FP32 %.2f, FP64 %.2f FLOP/B "
			       "(STREAM %.1f GB/s)\n",
			       tprof_roofline_ridge(&rf, 32), tprof_roofline_ridge(&rf, 64), rf.stream_gbs_all);
	}
	else
		printf("  %% peak: unknown (run 'tprof roofline' or set TPROF_PEAK_GFLOPS)\n");
	printf("  self %% and total %%: of the traced wall time; times per call: total (nested calls included)\n\n");
	/* one unit per column, from the largest value shown */
	uint64_t mx[10] = {0};
	for (size_t i = 0; i < n; i++) {
		struct ops_row *w = &r.rows[i];
		struct ops_dist d;
		ops_dist(w->dur_ns, w->ndur, &d);
		uint64_t v[10] = {w->self_ns, w->total_ns, w->calls ? w->total_ns / w->calls : 0, d.p50, d.p95, d.p99,
				  (uint64_t)d.ci_hi, w->bytes, w->kernel_ns, w->alloc_bytes > w->peak_growth ? w->alloc_bytes : w->peak_growth};
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
		printf("%-26s", "name");
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
			printf(" %6" PRIu64 " %9s %9s %5.1f%% %9s %8.3f %8.2f %9s %9s %7" PRIu64 "\n", w->calls,
			       tprof_fmt_in(w->total_ns, u_kern, s1), tprof_fmt_in(w->kernel_ns, u_kern, s2),
			       w->total_ns ? 100.0 * (double)w->kernel_ns / (double)w->total_ns : 0,
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
		tprof_text_cut(stdout, w->name, -26);
		printf(" %7" PRIu64 " %9s %5.1f%% %9s %5.1f%% %9s", w->calls, tprof_fmt_in(w->self_ns, u_self, s1),
		       100.0 * (double)w->self_ns / wall, tprof_fmt_in(w->total_ns, u_total, s2),
		       100.0 * (double)w->total_ns / wall, tprof_fmt_in(w->calls ? w->total_ns / w->calls : 0, u_avg, s3));
		if (o.wide)
			printf(" %9s", tprof_fmt_in(d.p50, u_p50, s4));
		printf(" %9s", tprof_fmt_in(d.p95, u_p95, s5));
		if (o.wide) {
			char ci[64];
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
		printf("%-26s %7s %9s %5.1f%%\n", "(outside kernels)", "", tprof_fmt_in(outside, u_self, a),
		       100.0 * (double)outside / wall);
		if (r.idle_ns)
			printf("%-26s %7s %9s %5.1f%%\n", "(idle OpenMP threads)", "", tprof_fmt_in(r.idle_ns, u_self, a),
			       100.0 * (double)r.idle_ns / wall);
	}
	print_steps(&r, 0);
out:
	ops_free(&r);
	tprof_trace_close(t);
	return 0;
}
