/* tprof roofline: this machine's roofline, the FP32 and FP64 FMA peaks and the STREAM triad bandwidth on
 * one core and on all cores, and the ridge point where they meet. Read from the cache that the other
 * commands use too, or measured (first run, --remeasure) and saved there (roofline.h, docs/ROOFLINE.md).
 * Text for people, --json for tools. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmds.h"
#include "roofline.h"
#include "util.h"

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
	printf("tprof roofline: %s, %d core%s\n", r->cpu, r->cores, r->cores == 1 ? "" : "s");
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

int cmd_roofline(int argc, char **argv)
{
	int json = 0, flags = TPROF_ROOFLINE_MEASURE;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--remeasure") == 0) {
			flags |= TPROF_ROOFLINE_REMEASURE;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: tprof roofline [--json] [--remeasure]\n\n"
			       "Prints this machine's FP32/FP64 FMA peaks and STREAM triad bandwidth (1 core,\n"
			       "all cores) and the ridge point. The first run measures them (a few seconds) and\n"
			       "saves them to $TPROF_ROOFLINE_CACHE, $XDG_CACHE_HOME/tprof/roofline.json or\n"
			       "~/.cache/tprof/roofline.json; later runs read that file. --remeasure measures\n"
			       "again. TPROF_PEAK_GFLOPS=X sets the FP32 all-core peak. Exit status: 0 ok,\n"
			       "1 usage, 2 the measurement failed.\n");
			return 0;
		} else {
			tprof_err("roofline: unknown argument '%s' (usage: tprof roofline [--json] [--remeasure])",
				  argv[i]);
			return 1;
		}
	}
	struct tprof_roofline r;
	int rc = tprof_roofline_get(&r, flags);
	if (json) {
		tprof_roofline_json(stdout, &r);
		putchar('\n');
	} else {
		print_text(&r);
	}
	if (rc != 0)
		tprof_err("roofline: the measurement failed");
	return rc == 0 ? 0 : 2;
}
