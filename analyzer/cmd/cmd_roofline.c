/* tprof roofline: this machine's roofline, the FP32 and FP64 FMA peaks and the STREAM triad bandwidth on
 * one core and on all cores, and the ridge point where they meet. Read from the cache that the other
 * commands use too, or measured (first run, --remeasure) and saved there (roofline.h, docs/ROOFLINE.md).
 * Text for people, --json for tools, --csv for spreadsheets (the figures as one row; --csv=by_isa the
 * FMA peaks of each instruction set). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/roofline.h"
#include "base/util.h"
#include "out/table.h"

/* One figure: what it is, its value and unit, and a remark; "not known" for 0. */
static void figure(const char *what, double v, const char *unit, const char *remark)
{
	if (v > 0 && *remark)
		printf("  %-46s %8.1f %-11s%s\n", what, v, unit, remark);
	else if (v > 0)
		printf("  %-46s %8.1f %s\n", what, v, unit);
	else
		printf("  %-46s %8s\n", what, "not known");
}

/* "(1.98 x 1 core)" into buf, or "" when a figure is unknown. */
static void scaling(double all, double one, char *buf, size_t size)
{
	buf[0] = 0;
	if (all > 0 && one > 0)
		snprintf(buf, size, "(%.2f x 1 core)", all / one);
}

static void print_origin(const struct tprof_roofline *r)
{
	char when[64] = "?";
	time_t t = (time_t)r->measured_at;
	struct tm tm;
	if (r->measured_at && localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M", &tm);
	if (strcmp(r->source, "TPROF_PEAK_GFLOPS") == 0)
		printf("  FP32 all-core peak set by TPROF_PEAK_GFLOPS; ");
	else
		printf("  ");
	if (strcmp(r->others_from, "measured") == 0) {
		printf("measured in %.1f s; ", r->seconds);
		if (r->cache_saved)
			printf("saved to %s\n", r->cache_path);
		else
			printf("not saved%s\n", r->cache_path[0] ? " (see the error above)" : " (no HOME, no cache)");
	} else if (strcmp(r->others_from, "cache") == 0) {
		printf("read from %s (measured %s in %.1f s; --remeasure measures again)\n", r->cache_path, when,
		       r->seconds);
	} else {
		printf("other figures not known: no cache at %s; run 'tprof roofline' without TPROF_PEAK_GFLOPS\n",
		       r->cache_path[0] ? r->cache_path : "(no HOME)");
	}
}

static void print_text(const struct tprof_roofline *r)
{
	char what[96], rem[64];
	printf("tprof roofline: ");
	tprof_text_str(stdout, r->cpu, 0); /* the cache file may say anything */
	printf(", %d core%s\n", r->cores, r->cores == 1 ? "" : "s");
	print_origin(r);
	if (r->busy)
		printf("  BUSY: other processes took CPU time from every repetition of some figure, which may be\n"
		       "  low; run 'tprof roofline --remeasure' on an idle machine.\n");
	printf("\n");
	snprintf(what, sizeof(what), "FP32 FMA peak, 1 core (%s)", r->isa);
	figure(what, r->fp32_gflops_1core, "GFLOP/s", "");
	snprintf(what, sizeof(what), "FP32 FMA peak, all %d cores (%s)", r->cores,
		 strcmp(r->source, "TPROF_PEAK_GFLOPS") == 0 ? "TPROF_PEAK_GFLOPS" : r->isa);
	scaling(r->fp32_gflops_all, r->fp32_gflops_1core, rem, sizeof(rem));
	figure(what, r->fp32_gflops_all, "GFLOP/s", rem);
	snprintf(what, sizeof(what), "FP64 FMA peak, 1 core (%s)", r->isa);
	figure(what, r->fp64_gflops_1core, "GFLOP/s", "");
	snprintf(what, sizeof(what), "FP64 FMA peak, all %d cores (%s)", r->cores, r->isa);
	scaling(r->fp64_gflops_all, r->fp64_gflops_1core, rem, sizeof(rem));
	figure(what, r->fp64_gflops_all, "GFLOP/s", rem);
	figure("STREAM triad bandwidth, 1 core", r->stream_gbs_1core, "GB/s", "");
	snprintf(what, sizeof(what), "STREAM triad bandwidth, all %d cores", r->cores);
	scaling(r->stream_gbs_all, r->stream_gbs_1core, rem, sizeof(rem));
	figure(what, r->stream_gbs_all, "GB/s", rem);
	figure("ridge point, FP32, all cores", tprof_roofline_ridge(r, 32), "FLOP/byte", "(FP32 peak / triad GB/s)");
	figure("ridge point, FP64, all cores", tprof_roofline_ridge(r, 64), "FLOP/byte", "(FP64 peak / triad GB/s)");
	printf("\n  Below its ridge point a kernel is bound by memory bandwidth: it can reach at most\n"
	       "  (FLOP/byte x triad GB/s) GFLOP/s; above it, the FMA peak.\n");

	if (r->nisa > 0) {
		printf("\n  FMA peak by ISA, GFLOP/s   FP32 1 core   FP32 all   FP64 1 core   FP64 all"
		       "   FP32 all, %% of peak\n");
		for (int i = 0; i < r->nisa; i++) {
			const struct tprof_roofline_isa *o = &r->by_isa[i];
			printf("  %-25s %12.1f %10.1f %13.1f %10.1f", o->name, o->fp32_gflops_1core, o->fp32_gflops_all,
			       o->fp64_gflops_1core, o->fp64_gflops_all);
			if (r->fp32_gflops_all > 0)
				printf(" %17.1f%%", 100.0 * o->fp32_gflops_all / r->fp32_gflops_all);
			printf("\n");
		}
	}
	printf("\n  GFLOP/s: 1e9 floating-point operations per second, an FMA counting 2. GB/s: 1e9 bytes per\n"
	       "  second, counted as STREAM does (24 bytes per triad element, no write-allocate)");
	if (r->stream_array_mib > 0)
		printf("; arrays 3 x %.0f MiB", r->stream_array_mib);
	printf(".\n");
}

/* --json and --csv (out/table.h). The figures: one row, the JSON's top-level members (--csv), then
 * the FMA peaks of each instruction set (--csv=by_isa). Columns added later go at the end of their
 * table, so that a reader that takes CSV columns by position keeps working. */
static const struct out_col roofline_cols[] = {
	{"version", OUT_I64, "", NULL, NULL},
	{"cpu", OUT_STR, "", NULL, NULL},
	{"cores", OUT_I64, "cores", NULL, NULL},
	{"isa", OUT_STR, "", NULL, NULL},
	{"fp32_gflops_1core", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"fp32_gflops_all", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"fp64_gflops_1core", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"fp64_gflops_all", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"stream_gbs_1core", OUT_F64, "GB/s", "%.6g", NULL},
	{"stream_gbs_all", OUT_F64, "GB/s", "%.6g", NULL},
	{"stream_array_mib", OUT_F64, "MiB", "%.6g", NULL},
	{"seconds", OUT_F64, "s", "%.6g", NULL},
	{"measured_at", OUT_I64, "s", NULL, NULL},
	{"busy", OUT_BOOL, "", NULL, NULL},
	{"source", OUT_STR, "", NULL, NULL},
	{"others_from", OUT_STR, "", NULL, NULL},
	{"cache_path", OUT_STR, "", NULL, NULL},
	{"cache_saved", OUT_BOOL, "", NULL, NULL},
	{"ridge_fp32", OUT_F64, "FLOP/byte", "%.6g", NULL},
	{"ridge_fp64", OUT_F64, "FLOP/byte", "%.6g", NULL},
};
static const struct out_table roofline_table = {"roofline", NULL, roofline_cols, OUT_NCOLS(roofline_cols),
						OUT_INLINE};

static const struct out_col isa_cols[] = {
	{"isa", OUT_STR, "", NULL, NULL},
	{"fp32_gflops_1core", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"fp32_gflops_all", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"fp64_gflops_1core", OUT_F64, "GFLOP/s", "%.6g", NULL},
	{"fp64_gflops_all", OUT_F64, "GFLOP/s", "%.6g", NULL},
};
static const struct out_table isa_table = {"by_isa", "by_isa", isa_cols, OUT_NCOLS(isa_cols), 0};

/* A figure as the cache file writes it: 0 when not finite. */
static void put_figure(struct out *w, double v)
{
	out_f64(w, isfinite(v) ? v : 0.0);
}

/* The roofline as --json or --csv. A write error leaves the exit status as it was. */
static void put_roofline(const struct cmd_opts *o, const struct tprof_roofline *r)
{
	struct out w;
	cmd_out_begin(&w, o);
	out_table_begin(&w, &roofline_table);
	out_row_begin(&w);
	out_i64(&w, TPROF_ROOFLINE_VERSION);
	out_str(&w, r->cpu);
	out_i64(&w, r->cores);
	out_str(&w, r->isa);
	put_figure(&w, r->fp32_gflops_1core);
	put_figure(&w, r->fp32_gflops_all);
	put_figure(&w, r->fp64_gflops_1core);
	put_figure(&w, r->fp64_gflops_all);
	put_figure(&w, r->stream_gbs_1core);
	put_figure(&w, r->stream_gbs_all);
	put_figure(&w, r->stream_array_mib);
	put_figure(&w, r->seconds);
	out_i64(&w, r->measured_at);
	out_bool(&w, r->busy);
	out_str(&w, r->source);
	out_str(&w, r->others_from);
	out_str(&w, r->cache_path);
	out_bool(&w, r->cache_saved);
	put_figure(&w, tprof_roofline_ridge(r, 32));
	put_figure(&w, tprof_roofline_ridge(r, 64));
	out_row_end(&w);
	out_table_end(&w);
	out_table_begin(&w, &isa_table);
	for (int i = 0; i < r->nisa; i++) {
		const struct tprof_roofline_isa *b = &r->by_isa[i];
		out_row_begin(&w);
		out_str(&w, b->name);
		put_figure(&w, b->fp32_gflops_1core);
		put_figure(&w, b->fp32_gflops_all);
		put_figure(&w, b->fp64_gflops_1core);
		put_figure(&w, b->fp64_gflops_all);
		out_row_end(&w);
	}
	out_table_end(&w);
	out_end(&w);
}

#define USAGE                                                                                      \
	"usage: tprof roofline [--json | --csv[=roofline|by_isa]] [--remeasure]\n\n"                   \
	"Prints this machine's FP32/FP64 FMA peaks and STREAM triad bandwidth (1 core,\n"              \
	"all cores) and the ridge point. The first run measures them (a few seconds) and\n"           \
	"saves them to $TPROF_ROOFLINE_CACHE, $XDG_CACHE_HOME/tprof/roofline.json or\n"               \
	"~/.cache/tprof/roofline.json; later runs read that file. --remeasure measures\n"             \
	"again. TPROF_PEAK_GFLOPS=X sets the FP32 all-core peak. Exit status: 0 ok,\n"                \
	"1 usage, 2 the measurement failed."

/* roofline's own option, for cmd_parse. */
static int parse_roofline_opt(void *ctx, int argc, char **argv, int *i)
{
	(void)argc;
	if (strcmp(argv[*i], "--remeasure") != 0)
		return CMD_OTHER;
	*(int *)ctx |= TPROF_ROOFLINE_REMEASURE;
	return CMD_RUN;
}

int cmd_roofline(int argc, char **argv)
{
	static const char *const tables[] = {"roofline", "by_isa", NULL};
	int flags = TPROF_ROOFLINE_MEASURE;
	struct cmd_opts o = { .name = "roofline", .usage = USAGE, .accept = CMD_JSON | CMD_CSV,
			      .takes = CMD_FILES_NONE, .csv_tables = tables, .extra = parse_roofline_opt,
			      .ctx = &flags };
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	struct tprof_roofline r;
	rc = tprof_roofline_get(&r, flags);
	if (o.json || o.csv)
		put_roofline(&o, &r);
	else
		print_text(&r);
	if (rc != 0)
		tprof_err("roofline: the measurement failed");
	return rc == 0 ? 0 : 2;
}
