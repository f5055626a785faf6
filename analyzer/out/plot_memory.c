/* The memory picture (out/gnuplot.h): live heap bytes over time from a replay of the heap events,
 * downsampled to the plot's pixels with the exact peak kept, the step boundaries and the RSS samples. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap.h"
#include "analysis/series.h"
#include "base/util.h"
#include "out/gnuplot.h"

static void write_points(FILE *f, const struct series_point *p, size_t n)
{
	char a[32];
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %" PRIu64 "\n", plot_secs(p[i].t, a), p[i].v);
	if (!n)
		fprintf(f, "NaN NaN\n");
	fprintf(f, "\n\n");
}

int plot_memory(struct plot_ctx *c)
{
	struct tprof_trace *t = c->open_again(c->file);
	if (!t)
		return -1;
	struct heap_stats hs;
	struct series heap, rss;
	heap_init(&hs, 0);
	series_init(&heap, c->span, WIDTH - MEM_L - MEM_R, SERIES_FIRST | SERIES_FORWARD);
	series_init(&rss, c->span, WIDTH - MEM_L - MEM_R, SERIES_FIRST | SERIES_FORWARD);
	series_add(&heap, 0, 0);
	struct tprof_event e;
	int rc;
	uint64_t events = 0;
	while ((rc = tprof_trace_next(t, &e)) == 1) {
		heap_step(&hs, &e, NULL);
		series_add(&heap, tprof_trace_ns(t, e.tick), hs.live_bytes);
		events++;
	}
	char path[PATH_MAX], a[32], b[32];
	FILE *f = NULL;
	if (rc < 0 || heap_finish(&hs, t) < 0) {
		plot_fail(c, "%s", t->err);
		rc = -1;
		goto out;
	}
	if (heap.max_v != hs.peak_bytes) { /* the same replay: cannot differ */
		plot_fail(c, "plot: %s: the downsampled heap curve misses the peak", c->file);
		rc = -1;
		goto out;
	}
	for (size_t i = 0; i < t->nrss; i++)
		series_add(&rss, tprof_trace_ns(t, t->rss[i].tick), t->rss[i].rss_bytes);
	series_end(&heap);
	series_end(&rss);
	uint64_t peak_ns = hs.peak_bytes ? heap.max_t : 0; /* the peak event's time, as on the curve */

	rc = -1;
	if (!(f = plot_out_open(c, "memory", "dat", path)))
		goto out;
	plot_dat_header(f, "memory.dat, the data of memory.gp: live heap bytes over time");
	fprintf(f, "# index 1: live heap bytes (requested sizes of the blocks the malloc family handed out and that\n"
		   "#          were not freed yet): seconds since the trace began, bytes. Downsampled to the first,\n"
		   "#          smallest, largest and last value of each 1/%d of the time axis: the maximum is exact.\n"
		   "# index 2: the peak (the first time it was reached): seconds, bytes\n"
		   "#          (times never go backwards: an event timed before the one before it, as the clocks of\n"
		   "#          concurrent threads may have it, is put at that one's time)\n"
		   "# index 3: step boundaries (tprof_step): seconds (NaN: none)\n"
		   "# index 4: process RSS samples: seconds, bytes (NaN NaN: the trace has none)\n",
		   WIDTH - MEM_L - MEM_R);
	plot_dat_meta(f, c);
	write_points(f, heap.out, heap.n);
	fprintf(f, "%s %" PRIu64 "\n\n\n", plot_secs(peak_ns, a), hs.peak_bytes);
	size_t nsteps = 0, every = 1, drawn = plot_write_steps(f, c, WIDTH - MEM_L - MEM_R, &nsteps, &every);
	fprintf(f, "\n\n");
	write_points(f, rss.out, rss.n);
	if (plot_out_close(c, f, path) != 0)
		goto out;

	if (!(f = plot_out_open(c, "memory", "gp", path)))
		goto out;
	plot_gp_preamble(f, c, "memory", "live heap bytes over time, the exact peak, step boundaries, RSS", WIDTH,
		    MEMORY_H);
	uint64_t top = hs.peak_bytes > rss.max_v ? hs.peak_bytes : rss.max_v;
	const char *unit = top >= (1ull << 30) ? "GiB" : top >= (1ull << 20) ? "MiB" : top >= 1024 ? "KiB" : "bytes";
	int shift = top >= (1ull << 30) ? 30 : top >= (1ull << 20) ? 20 : top >= 1024 ? 10 : 0;
	plot_time_unit(f, c->span);
	fprintf(f, "unit = 2.0**%d; uname = \"%s\"\n", shift, unit);
	fprintf(f, "span = %s; peak_t = %s; peak_bytes = %" PRIu64 "\n", plot_secs(c->span, a), plot_secs(peak_ns, b),
		hs.peak_bytes);
	fprintf(f, "ytop = (%" PRIu64 " > 0 ? %" PRIu64 " / unit : 1) * 1.18\n", top, top);
	fprintf(f, "set title sprintf(\"%%s (pid %%d): live heap bytes over time\\n"
		   "the requested bytes of the blocks in use (malloc family); %s\\n"
		   "%" PRIu64 " heap events, %zu points drawn: the smallest and largest per pixel, and the exact peak\", "
		   "program, pid)\n",
		!rss.n			 ? "RSS not drawn: this trace has no RSS samples"
		: tprof_rss_has_own(t) ? "RSS: the resident set size the recorder sampled, tprof's rings included"
					 : "RSS: the resident set size the recorder sampled, tprof's rings left out",
		events, heap.n);
	plot_gp_margins(f, WIDTH, MEMORY_H, MEM_L, MEM_R, 0, 0);
	fprintf(f, "set xlabel sprintf(\"time since the trace began (%%s)\", tunit)\n"
		   "set ylabel sprintf(\"bytes (%%s)\", uname)\n"
		   "set xrange [0:(span > 0 ? span : 1e-9) * tscale]\n"
		   "set yrange [0:ytop]\n"
		   "set format y \"%%.4g\"\n"
		   "set style fill solid 1.0 noborder\n"
		   "set tics nomirror\n");
	plot_gp_key_below(f, MEMORY_H, 1 + (rss.n > 0) + (drawn > 0) + (hs.peak_bytes > 0));
	/* The peak's label on the side with room for it. */
	int right = c->span && peak_ns > c->span / 10 * 7;
	char commas[32];
	if (hs.peak_bytes)
		fprintf(f, "set label 1 sprintf(\"peak %%.1f %%s (%s bytes) at %%.3f %%s\", peak_bytes / unit, uname, "
			   "peak_t * tscale, tunit) at peak_t * tscale, peak_bytes / unit %s offset %s,0.9 front\n",
			tprof_commas(hs.peak_bytes, commas), right ? "right" : "left", right ? "-1.2" : "1.2");
	/* Live bytes change in steps: draw steps, not slopes between the kept points. */
	fprintf(f, "plot 'memory.dat' index 1 using ($1 * tscale):($2 / unit) with fillsteps lc rgb \"#d5dfeb\" notitle, \\\n"
		   "     '' index 1 using ($1 * tscale):($2 / unit) with steps lc 1 lw 1.5 title \"live heap (requested bytes)\"");
	if (rss.n)
		fprintf(f, ", \\\n     '' index 4 using ($1 * tscale):($2 / unit) with lines lc 2 lw 1.5 title \"process RSS\"");
	if (drawn) {
		char st[96];
		fprintf(f, ", \\\n     '' index 3 using ($1 * tscale):(ytop) with impulses lc rgb \"#888888\" lw 1 dt 2 "
			   "title \"%s\"",
			plot_steps_title(st, sizeof(st), nsteps, drawn));
	}
	if (hs.peak_bytes)
		fprintf(f, ", \\\n     '' index 2 using ($1 * tscale):($2 / unit) with points pt 7 ps 1.6 lc 3 "
			   "title \"exact peak\"");
	fprintf(f, "\n");
	if (plot_out_close(c, f, path) != 0)
		goto out;
	rc = 0;
out:
	series_free(&heap);
	series_free(&rss);
	heap_release(&hs);
	tprof_trace_close(t);
	return rc;
}
