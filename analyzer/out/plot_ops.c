/* The ops picture (out/gnuplot.h): the self-time share of each op, of the thread that marks steps
 * (else the main thread) when several threads made kernel calls, with the pool's share in the title. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap.h"
#include "base/util.h"
#include "out/gnuplot.h"

int plot_row_by_self(const void *a, const void *b)
{
	const struct ops_row *x = a, *y = b;
	if (x->self_ns != y->self_ns)
		return x->self_ns > y->self_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The thread ops.png gives shares of when several threads have kernel calls: the one that marks
 * steps (tprof_step), else the main thread (tid = pid). 0: one thread, whose table is the whole one. */
static uint32_t focus_thread(const struct plot_ctx *c)
{
	if (c->r.nthr <= 1)
		return 0;
	for (size_t i = 0; i < c->t->nannots; i++)
		if (c->t->annots[i].kind == TPROF_ANNOT_STEP)
			return c->t->annots[i].tid;
	return (uint32_t)c->t->info.pid;
}

/* An op's colour class, as the timeline gives it (NCLASS: "other ops"). */
static uint32_t class_of(const struct plot_ctx *c, const char *name)
{
	for (uint32_t k = 1; k < NCLASS; k++)
		if (c->class_name[k] && strcmp(c->class_name[k], name) == 0)
			return k;
	return NCLASS;
}

int plot_ops(struct plot_ctx *c)
{
	/* the focus thread's own table (tprof ops --thread), or the whole one */
	struct ops_result one;
	const struct ops_result *r = &c->r;
	uint32_t ft = focus_thread(c);
	const char *why = "";
	struct tprof_trace *t1 = NULL; /* its heap events not yet read, which c->t's are */
	if (ft && !(t1 = c->open_again(c->file)))
		return -1; /* read once already: it changed or went away since */
	if (ft) {
		struct ops_options oo = {.one_thread = 1, .tid = ft};
		if (ops_analyze(t1, &oo, &one) == 0) {
			if (one.nrows)
				tprof_sort(one.rows, one.nrows, sizeof(*one.rows), plot_row_by_self);
			r = &one;
			int marks = 0;
			for (size_t i = 0; i < c->t->nannots && !marks; i++)
				marks = c->t->annots[i].kind == TPROF_ANNOT_STEP;
			why = !marks ? "the main thread"
			      : ft == (uint32_t)c->t->info.pid ? "the main thread, which marks steps"
							       : "the thread that marks steps";
		} else
			ft = 0; /* it made no call and ran no region: the whole table */
	}
	char path[PATH_MAX], a[32];
	int rc = -1;
	FILE *f = plot_out_open(c, "ops", "dat", path);
	if (!f)
		goto out;
	double wall = r->wall_ns ? (double)r->wall_ns : 1;
	plot_dat_header(f, "ops.dat, the data of ops.gp: self time per op");
	fprintf(f, "# index 1: bars, largest first: rank, percent of %s wall time, self seconds, colour class, name, "
		   "value label\n",
		ft ? "the thread's" : "the traced");
	plot_dat_meta(f, c);
	size_t shown = r->nrows <= NCLASS ? r->nrows : NCLASS - 1, bars = 0;
	double maxpct = 0;
	for (size_t i = 0; i < shown; i++) {
		double pct = 100.0 * (double)r->rows[i].self_ns / wall;
		fprintf(f, "%zu %.6f %.9f %u ", bars++, pct, r->rows[i].self_ns / 1e9, class_of(c, r->rows[i].name));
		plot_gp_field(f, r->rows[i].name);
		fprintf(f, " \"%.1f %%  (%s, %" PRIu64 " calls)\"\n", pct, tprof_fmt_ns(r->rows[i].self_ns, a),
			r->rows[i].calls);
		maxpct = pct > maxpct ? pct : maxpct;
	}
	if (shown < r->nrows) {
		uint64_t ns = 0, calls = 0;
		for (size_t i = shown; i < r->nrows; i++)
			ns += r->rows[i].self_ns, calls += r->rows[i].calls;
		double pct = 100.0 * (double)ns / wall;
		fprintf(f, "%zu %.6f %.9f %d \"other ops (%zu)\" \"%.1f %%  (%s, %" PRIu64 " calls)\"\n", bars++, pct,
			ns / 1e9, NCLASS, r->nrows - shown, pct, tprof_fmt_ns(ns, a), calls);
		maxpct = pct > maxpct ? pct : maxpct;
	}
	if (r->wall_ns) {
		uint64_t ns = r->wall_ns - r->in_ops_ns - r->idle_ns;
		double pct = 100.0 * (double)ns / wall;
		fprintf(f, "%zu %.6f %.9f %d \"(outside kernels)\" \"%.1f %%  (%s)\"\n", bars++, pct, ns / 1e9,
			NCLASS + 1, pct, tprof_fmt_ns(ns, a));
		maxpct = pct > maxpct ? pct : maxpct;
	}
	if (r->idle_ns) { /* OpenMP pool threads waiting between regions: neither kernels nor program */
		double pct = 100.0 * (double)r->idle_ns / wall;
		fprintf(f, "%zu %.6f %.9f %d \"(idle OpenMP threads)\" \"%.1f %%  (%s)\"\n", bars++, pct,
			r->idle_ns / 1e9, NCLASS + 1, pct, tprof_fmt_ns(r->idle_ns, a));
		maxpct = pct > maxpct ? pct : maxpct;
	}
	if (!bars)
		fprintf(f, "0 NaN NaN 1 \"\" \"\"\n");
	if (plot_out_close(c, f, path) != 0)
		goto out;

	if (!(f = plot_out_open(c, "ops", "gp", path)))
		goto out;
	plot_gp_preamble(f, c, "ops", "self time per op, as a share of a thread's or the traced wall time", WIDTH, OPS_H);
	char w[32];
	fprintf(f, "nbars = %zu\n", bars ? bars : 1);
	if (ft) {
		/* the other threads' time, from the whole table's per-thread figures */
		uint64_t ow = 0, ok = 0, op = 0, oi = 0;
		size_t on = 0;
		for (size_t i = 0; i < c->r.nthr; i++)
			if (c->r.thr[i].tid != ft) {
				const struct ops_thread *h = &c->r.thr[i];
				ow += h->wall_ns, ok += h->kernel_ns, op += h->pool_ns, oi += h->idle_ns, on++;
			}
		double d = ow ? (double)ow / 100.0 : 1;
		uint64_t oo = ow > ok + op + oi ? ow - ok - op - oi : 0;
		fprintf(f, "set title sprintf(\"%%s (pid %%d): self time per kernel op, %%%% of one thread's wall time\\n"
			   "thread %" PRIu32 ", %s: %s; self time leaves out the calls a kernel makes\\n"
			   "%s: in %s own calls %.1f %%%%, OpenMP work for other threads' calls %.1f %%%%, "
			   "idle %.1f %%%%, outside kernels %.1f %%%%\", program, pid)\n",
			ft, why, tprof_fmt_ns(r->wall_ns, w), on == 1 ? "the other thread" : "the other threads",
			on == 1 ? "its" : "their", (double)ok / d, (double)op / d, (double)oi / d, (double)oo / d);
		fprintf(f, "set xlabel \"self time (%% of thread %" PRIu32 "'s wall time)\"\n", ft);
	} else {
		fprintf(f, "set title sprintf(\"%%s (pid %%d): self time per kernel op, %%%% of the traced wall time\\n"
			   "wall time %s: first to last event of each of the %zu thread%s with kernel calls, summed; "
			   "self time leaves out the calls a kernel makes\", program, pid)\n",
			tprof_fmt_ns(r->wall_ns, w), r->threads, r->threads == 1 ? "" : "s");
		fprintf(f, "set xlabel \"self time (%% of the traced wall time)\"\n");
	}
	fprintf(f, "set xrange [0:%.3f]\n"
		   "set yrange [nbars - 0.4:-0.6]\n"
		   "set ytics scale 0\n"
		   "set grid xtics noytics\n"
		   "set tics nomirror\n"
		   "set style fill solid 0.85 noborder\n",
		maxpct > 0 ? maxpct * 1.3 + 1 : 100);
	if (!bars)
		fprintf(f, "set label 1 \"no kernel calls in this trace\" at graph 0.5, graph 0.5 center\n");
	fprintf(f, "plot 'ops.dat' index 1 using ($2 / 2):1:($2 / 2):(0.36):4:ytic(strcol(5)) with boxxyerror "
		   "lc variable notitle");
	/* gnuplot 5.4 crashes on a labels plot none of whose points is defined */
	if (bars)
		fprintf(f, ", \\\n     '' index 1 using 2:1:6 with labels left offset 0.8,0 notitle");
	fprintf(f, "\n");
	if (plot_out_close(c, f, path) != 0)
		goto out;
	rc = 0;
out:
	if (r == &one)
		ops_free(&one);
	if (t1)
		tprof_trace_close(t1);
	return rc;
}
