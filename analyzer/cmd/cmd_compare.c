/* tprof compare: several runs side by side (the MLP vs CNN vs transformer view): parameters (from
 * tprof_param("params", n)), steps, time per step, FLOPs per step, GFLOP/s over the steps, the share of
 * the machine's FP32 peak, time in kernels and the heap peak. Text, --json, or --csv (one row per run). */
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
#include "base/util.h"
#include "out/table.h"

struct run {
	const char *path;
	char *program;
	int64_t params;
	int has_params; /* the run said tprof_param("params", n) */
	struct ops_dist steps;
	double flops_step, gflops, kernel_share;
	uint64_t heap_peak;
};

/* --json and --csv (out/table.h): one row per run. Columns added later go at the end, so that a
 * reader that takes CSV columns by position keeps working. */
static const struct out_col run_cols[] = {
	{"file", OUT_STR, "", NULL, NULL},
	{"program", OUT_STR, "", NULL, NULL},
	{"params", OUT_I64, "parameters", NULL, NULL},
	{"steps", OUT_U64, "steps", NULL, NULL},
	{"step_mean_ns", OUT_F64, "ns", "%.0f", NULL},
	{"step_ci95_ns", OUT_PAIR, "ns", "%.0f", NULL},
	{"flops_per_step", OUT_F64, "FLOP", "%.0f", NULL},
	{"gflops_per_s", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"kernel_share", OUT_F64, "fraction", "%.4f", NULL},
	{"heap_peak_bytes", OUT_U64, "bytes", NULL, NULL},
};
static const struct out_table run_table = {"runs", "runs", run_cols, OUT_NCOLS(run_cols), 0};

/* The JSON document's own member before the runs (no CSV): the FP32 peak the runs are set against. */
static const struct out_col head_cols[] = {
	{"peak_gflops", OUT_F64, "GFLOP/s", "%.6g", NULL},
};
static const struct out_table head_table = {NULL, NULL, head_cols, OUT_NCOLS(head_cols), OUT_INLINE};

/* The runs as --json or --csv. A write error leaves the exit status 0, as it always did. */
static void put_runs(const struct cmd_opts *co, const struct run *runs, size_t n, const struct tprof_roofline *rf)
{
	struct out w;
	cmd_out_begin(&w, co);
	out_table_begin(&w, &head_table);
	out_row_begin(&w);
	out_f64(&w, rf->fp32_gflops_all);
	out_row_end(&w);
	out_table_end(&w);
	out_table_begin(&w, &run_table);
	for (size_t i = 0; i < n; i++) {
		const struct run *u = &runs[i];
		out_row_begin(&w);
		out_str(&w, u->path);
		out_str(&w, u->program);
		if (u->has_params)
			out_i64(&w, u->params);
		else
			out_null(&w);
		out_u64(&w, u->steps.n);
		if (u->steps.n) {
			out_f64(&w, u->steps.mean);
			out_pair(&w, u->steps.ci_lo, u->steps.ci_hi);
			out_f64(&w, u->flops_step);
			out_f64(&w, u->gflops);
		} else { /* no step: nothing per step to say */
			out_null(&w);
			out_null(&w);
			out_null(&w);
			out_null(&w);
		}
		out_f64(&w, u->kernel_share);
		out_u64(&w, u->heap_peak);
		out_row_end(&w);
	}
	out_table_end(&w);
	out_end(&w);
}

#define USAGE                                                                        \
	"usage: tprof compare [--json | --csv] [--skip-steps N] A.trace B.trace ...\n"     \
	"Parameters, time and FLOPs per step, GFLOP/s and % of the FP32 peak, heap peak, side by side."

int cmd_compare(int argc, char **argv)
{
	struct ops_options o = {0};
	struct cmd_opts co = { .name = "compare", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_SKIP_STEPS,
			       .takes = CMD_FILES_SOME };
	int rc = cmd_parse(&co, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	o.skip_steps = co.skip_steps;
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
		for (size_t k = 0; k < r.nparams; k++)
			if (!strcmp(r.param_name[k], "params")) {
				w->params = r.param_value[k];
				w->has_params = 1;
			}
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
	if (json || co.csv) {
		put_runs(&co, runs, n, &rf);
		goto out;
	}
	/* runs are named by file (two runs of one program are told apart), one unit per column */
	uint64_t mt = 0, mh = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t v = (uint64_t)(isfinite(runs[i].steps.ci_hi) && runs[i].steps.ci_hi > runs[i].steps.mean
					    ? runs[i].steps.ci_hi : runs[i].steps.mean);
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
		char a[32], b[32], c[32], d[32], ci[72] = "-", pk[16] = "-"; /* "-": fewer than two steps */
		if (isfinite(w->steps.ci_lo))
			snprintf(ci, sizeof(ci), "[%s, %s]", tprof_fmt_in((uint64_t)w->steps.ci_lo, ut, b),
				 tprof_fmt_in((uint64_t)w->steps.ci_hi, ut, c));
		if (rf.fp32_gflops_all > 0)
			snprintf(pk, sizeof(pk), "%.1f%%", 100.0 * w->gflops / rf.fp32_gflops_all);
		char params[32] = "-";
		if (w->has_params && w->params >= 0)
			tprof_commas((uint64_t)w->params, params);
		else if (w->has_params)
			snprintf(params, sizeof(params), "%lld", (long long)w->params);
		char fs[32] = "-", gf[32] = "-";
		const char *mean = "-";
		if (w->steps.n) {
			snprintf(fs, sizeof(fs), "%.4g", w->flops_step);
			snprintf(gf, sizeof(gf), "%.2f", w->gflops);
			mean = tprof_fmt_in((uint64_t)w->steps.mean, ut, a);
		} else { /* no step: nothing per step to say */
			snprintf(ci, sizeof(ci), "-");
			snprintf(pk, sizeof(pk), "-");
		}
		const char *base = strrchr(w->path, '/');
		tprof_text_cut(stdout, base ? base + 1 : w->path, -20);
		printf(" %11s %5zu %9s %19s %10s %8s %6s %5.1f%% %9s\n", params, w->steps.n, mean, ci, fs, gf, pk,
		       100.0 * w->kernel_share, tprof_fmt_in(w->heap_peak, uh, d));
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
