/* tprof compare: several runs side by side (the MLP vs CNN vs transformer view): parameters (from
 * tprof_param("params", n)), steps, time per step, FLOPs per step, GFLOP/s over the steps, the share of
 * the machine's FP32 peak, time in kernels and the heap peak. Text, --json, or --csv (one row per run). */
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
#include "base/util.h"

struct run {
	const char *path;
	char *program;
	int64_t params;
	struct ops_dist steps;
	double flops_step, gflops, kernel_share;
	uint64_t heap_peak;
};

#define USAGE                                                                        \
	"usage: tprof compare [--json | --csv] [--skip-steps N] A.trace B.trace ...\n"     \
	"Parameters, time and FLOPs per step, GFLOP/s and % of the FP32 peak, heap peak, side by side."

/* compare's own option, for cmd_parse. */
static int parse_compare_opt(void *ctx, int argc, char **argv, int *i)
{
	struct ops_options *o = ctx;
	size_t n;
	if (strcmp(argv[*i], "--skip-steps") != 0)
		return CMD_OTHER;
	if (stacks_parse_top(*i + 1 < argc ? argv[++*i] : NULL, &n) != 0 || n > UINT32_MAX) {
		tprof_err("compare: --skip-steps needs a number of steps");
		return 1;
	}
	o->skip_steps = (unsigned)n;
	return CMD_RUN;
}

int cmd_compare(int argc, char **argv)
{
	struct ops_options o = {0};
	struct cmd_opts co = { .name = "compare", .usage = USAGE, .accept = CMD_JSON | CMD_CSV,
			       .takes = CMD_FILES_SOME, .extra = parse_compare_opt, .ctx = &o };
	int rc = cmd_parse(&co, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	int json = co.json;
	size_t n = co.nfiles;
	struct run *runs = xcalloc(n, sizeof(*runs));
	for (size_t i = 0; i < n; i++)
		runs[i].path = co.files[i];
	rc = 0;
	for (size_t i = 0; i < n; i++) {
		struct run *w = &runs[i];
		struct tprof_trace *t = cmd_open_trace(w->path);
		if (!t) {
			rc = 2;
			goto out;
		}
		struct ops_result r;
		if (ops_analyze(t, &o, &r) != 0) {
			tprof_err("%s", t->err);
			tprof_trace_close(t);
			rc = 2;
			goto out;
		}
		w->program = xstrndup(t->info.program, strlen(t->info.program));
		w->params = -1;
		for (size_t k = 0; k < r.nparams; k++)
			if (!strcmp(r.param_name[k], "params"))
				w->params = r.param_value[k];
		ops_dist(r.step_ns, r.nsteps, &w->steps);
		w->flops_step = r.nsteps ? (double)r.step_flops / (double)r.nsteps : 0;
		w->gflops = r.steps_ns ? (double)r.step_flops / (double)r.steps_ns : 0;
		w->kernel_share = r.wall_ns ? (double)r.in_ops_ns / (double)r.wall_ns : 0;
		w->heap_peak = r.heap_peak;
		ops_free(&r);
		tprof_trace_close(t);
	}
	struct tprof_roofline rf;
	tprof_roofline_get(&rf, TPROF_ROOFLINE_MEASURE);
	if (json) {
		printf("{\"peak_gflops\":%.6g,\"runs\":[", rf.fp32_gflops_all);
		for (size_t i = 0; i < n; i++) {
			struct run *w = &runs[i];
			printf("%s{\"file\":", i ? "," : "");
			tprof_json_str(stdout, w->path);
			printf(",\"program\":");
			tprof_json_str(stdout, w->program);
			printf(",\"params\":%" PRId64 ",\"steps\":%zu,\"step_mean_ns\":%.0f,\"step_ci95_ns\":[%.0f,%.0f]"
			       ",\"flops_per_step\":%.0f,\"gflops_per_s\":%.6g,\"kernel_share\":%.4f,\"heap_peak_bytes\":%" PRIu64 "}",
			       w->params, w->steps.n, w->steps.mean, w->steps.ci_lo, w->steps.ci_hi, w->flops_step, w->gflops,
			       w->kernel_share, w->heap_peak);
		}
		printf("]}\n");
		goto out;
	}
	if (co.csv) {
		printf("file,program,params,steps,step_mean_ns,step_ci95_lo_ns,step_ci95_hi_ns,flops_per_step,gflops_per_s,"
		       "kernel_share,heap_peak_bytes" TPROF_CSV_EOL);
		for (size_t i = 0; i < n; i++) {
			struct run *w = &runs[i];
			tprof_csv_str(stdout, w->path);
			putchar(',');
			tprof_csv_str(stdout, w->program);
			printf(",%" PRId64 ",%zu,%.0f,%.0f,%.0f,%.0f,%.6g,%.4f,%" PRIu64 TPROF_CSV_EOL, w->params,
			       w->steps.n, w->steps.mean, w->steps.ci_lo, w->steps.ci_hi, w->flops_step, w->gflops,
			       w->kernel_share, w->heap_peak);
		}
		goto out;
	}
	/* runs are named by file (two runs of one program are told apart), one unit per column */
	uint64_t mt = 0, mh = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = (uint64_t)(runs[i].steps.ci_hi > runs[i].steps.mean ? runs[i].steps.ci_hi : runs[i].steps.mean);
		mt = v > mt ? v : mt;
		mh = runs[i].heap_peak > mh ? runs[i].heap_peak : mh;
	}
	struct tprof_unit ut = tprof_ns_unit(mt), uh = tprof_bytes_unit(mh);
	char h1[32], h2[32], h3[32];
	snprintf(h1, sizeof(h1), "step %s", ut.name);
	snprintf(h2, sizeof(h2), "95%% CI %s", ut.name);
	snprintf(h3, sizeof(h3), "heap %s", uh.name);
	printf("%-20s %11s %5s %9s %19s %10s %8s %6s %6s %9s\n", "run (file)", "params", "steps", h1, h2, "FLOPs/step",
	       "GFLOP/s", "%peak", "krn%", h3);
	for (size_t i = 0; i < n; i++) {
		struct run *w = &runs[i];
		char a[32], b[32], c[32], d[32], ci[72], pk[16] = "-";
		snprintf(ci, sizeof(ci), "[%s, %s]", tprof_fmt_in((uint64_t)w->steps.ci_lo, ut, b),
			 tprof_fmt_in((uint64_t)w->steps.ci_hi, ut, c));
		if (rf.fp32_gflops_all > 0)
			snprintf(pk, sizeof(pk), "%.1f%%", 100.0 * w->gflops / rf.fp32_gflops_all);
		char params[32] = "-";
		if (w->params >= 0)
			tprof_commas((uint64_t)w->params, params);
		const char *base = strrchr(w->path, '/');
		tprof_text_cut(stdout, base ? base + 1 : w->path, -20);
		printf(" %11s %5zu %9s %19s %10.4g %8.2f %6s %5.1f%% %9s\n", params, w->steps.n,
		       tprof_fmt_in((uint64_t)w->steps.mean, ut, a), ci, w->flops_step, w->gflops, pk, 100.0 * w->kernel_share,
		       tprof_fmt_in(w->heap_peak, uh, d));
	}
	printf("\n%%peak: of the all-core FP32 FMA peak (%.1f GFLOP/s, %s); FLOPs/step: top-level kernel calls;\n"
	       "krn%%: time in kernels, of the traced threads' wall time; step: mean time per step\n",
	       rf.fp32_gflops_all, rf.source);
out:
	for (size_t i = 0; i < n; i++)
		free(runs[i].program);
	free(runs);
	return rc;
}
