/* The roofline picture (out/gnuplot.h): each op's GFLOP/s against its FLOP per byte under this
 * machine's FP32, FP64 and memory roofs, labels placed to avoid one another. */
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

/* Roofline labels are placed in pixels of the plot area (its size is fixed by the margins). */
#define RL_AW (WIDTH - RL_L - RL_R)
#define RL_AH (ROOFLINE_H - RL_T - RL_B)

struct rl_box {
	double x0, y0, x1, y1; /* pixels from the plot area's bottom left */
};

static double overlap(const struct rl_box *a, const struct rl_box *b)
{
	double w = fmin(a->x1, b->x1) - fmax(a->x0, b->x0), h = fmin(a->y1, b->y1) - fmax(a->y0, b->y0);
	return w > 0 && h > 0 ? w * h : 0;
}

struct rl_point {
	const struct ops_row *w;
	double x, y, pct; /* FLOP/byte, GFLOP/s, % of the wall time in its calls */
	size_t cls;
	double px, py, r; /* pixels: centre and radius */
	double lx, ly;    /* pixels: where its name is anchored */
	int align;        /* 0 left, 1 right, 2 centre */
};

struct obstacles {
	struct rl_box *b;
	size_t n, cap;
};

static void obstacle(struct obstacles *o, double x, double y, double half)
{
	if (o->n == o->cap)
		o->b = xrealloc(o->b, (o->cap = o->cap ? 2 * o->cap : 256) * sizeof(*o->b));
	o->b[o->n++] = (struct rl_box){x - half, y - half, x + half, y + half};
}

static double cost_of(const struct rl_box *b, const struct obstacles *o)
{
	struct rl_box area = {0, 0, RL_AW, RL_AH};
	double cost = 4 * ((b->x1 - b->x0) * (b->y1 - b->y0) - overlap(b, &area)); /* outside the plot area */
	for (size_t j = 0; j < o->n; j++)
		cost += overlap(b, &o->b[j]);
	return cost;
}

/* Puts each point's name at the spot around it (right, left, the four diagonals, above, below) that
 * covers the least of the obstacles (points, roofs, other labels, names placed before) and of the
 * outside of the plot area; names are placed in order of self time, so that the costly ops get the
 * best spots. Each name placed becomes an obstacle. */
static void place_labels(struct rl_point *p, size_t n, struct obstacles *o)
{
	for (size_t i = 0; i < n; i++) {
		double w = 7.0 * (double)plot_shown_chars(p[i].w->name) + 4, h = 16, r = p[i].r + 3, d = r * 0.75;
		const struct {
			double dx, dy;
			int align;
		} cand[] = {{r, 0, 0}, {-r, 0, 1}, {d, d + 6, 0}, {d, -d - 6, 0}, {-d, d + 6, 1},
			    {-d, -d - 6, 1}, {0, r + 8, 2}, {0, -r - 8, 2}, {r, 16, 0}, {r, -16, 0}, {-r, 16, 1}, {-r, -16, 1}};
		double best = HUGE_VAL;
		struct rl_box chosen = {0, 0, 0, 0};
		for (size_t k = 0; k < sizeof(cand) / sizeof(cand[0]); k++) {
			double ax = p[i].px + cand[k].dx, ay = p[i].py + cand[k].dy;
			double x0 = cand[k].align == 0 ? ax : cand[k].align == 1 ? ax - w : ax - w / 2;
			struct rl_box b = {x0, ay - h / 2, x0 + w, ay + h / 2};
			double cost = cost_of(&b, o);
			if (cost < best) {
				best = cost;
				chosen = b;
				p[i].lx = ax, p[i].ly = ay, p[i].align = cand[k].align;
			}
			if (cost == 0)
				break;
		}
		if (o->n == o->cap)
			o->b = xrealloc(o->b, (o->cap = o->cap ? 2 * o->cap : 256) * sizeof(*o->b));
		o->b[o->n++] = chosen;
	}
}

int plot_roofline(struct plot_ctx *c)
{
	const struct ops_result *r = &c->r;
	const struct tprof_roofline *rf = &c->rf;
	double wall = r->wall_ns ? (double)r->wall_ns : 1;
	double p32 = rf->fp32_gflops_all, p64 = rf->fp64_gflops_all, bw = rf->stream_gbs_all;
	double ridge = tprof_roofline_ridge(rf, 32);
	struct rl_point *p = xmalloc((r->nrows + 1) * sizeof(*p));
	size_t n = 0, without = 0;
	int fp64 = 0;
	double xmin = HUGE_VAL, xmax = 0, ymin = HUGE_VAL, ymax = 0;
	for (size_t i = 0; i < r->nrows; i++) {
		const struct ops_row *w = &r->rows[i];
		if (!w->flops || !w->bytes || !w->total_ns) {
			without++;
			continue;
		}
		struct rl_point *q = &p[n++];
		memset(q, 0, sizeof(*q));
		q->w = w;
		q->x = (double)w->flops / (double)w->bytes;
		q->y = (double)w->flops / (double)w->total_ns;
		q->pct = 100.0 * (double)w->total_ns / wall;
		q->cls = i < NCLASS - 1 || r->nrows <= NCLASS ? i + 1 : NCLASS;
		xmin = fmin(xmin, q->x), xmax = fmax(xmax, q->x);
		ymin = fmin(ymin, q->y), ymax = fmax(ymax, q->y);
		fp64 |= w->fp_bits == 64;
	}
	/* Log axes from a power of ten below everything drawn to one above. */
	if (ridge > 0)
		xmin = fmin(xmin, ridge), xmax = fmax(xmax, ridge);
	if (p32 > 0)
		ymin = fmin(ymin, p32), ymax = fmax(ymax, p32);
	if (fp64 && p64 > 0)
		ymin = fmin(ymin, p64), ymax = fmax(ymax, p64);
	if (!(xmax > 0))
		xmin = 0.1, xmax = 100;
	if (!(ymax > 0))
		ymin = 1, ymax = 100;
	double lx0 = floor(log10(xmin / 3)), lx1 = ceil(log10(xmax * 3));
	double ly0 = floor(log10(ymin / 3)), ly1 = ceil(log10(ymax * 3));
	struct obstacles obs = {0};
	for (size_t i = 0; i < n; i++) {
		p[i].px = (log10(p[i].x) - lx0) / (lx1 - lx0) * RL_AW;
		p[i].py = (log10(p[i].y) - ly0) / (ly1 - ly0) * RL_AH;
		p[i].r = 3.0 * (1.2 + 0.5 * sqrt(p[i].pct)) + 1; /* psize() below, about 3 pixels a unit */
		obstacle(&obs, p[i].px, p[i].py, p[i].r);
	}
	/* The roofs, as a chain of small boxes along them. */
	for (int fp = 32; fp <= 64; fp += 32) {
		double peak = fp == 32 ? p32 : fp64 ? p64 : 0;
		for (double X = 0; peak > 0 && X <= RL_AW; X += 4) {
			double x = pow(10, lx0 + X / RL_AW * (lx1 - lx0)), y = bw > 0 && x * bw < peak ? x * bw : peak;
			obstacle(&obs, X, (log10(y) - ly0) / (ly1 - ly0) * RL_AH, 3);
		}
	}
	/* The bandwidth along the slope (a slope of 1 in log-log, at the angle the decades' sizes in pixels
	 * give it), where it is long enough for it and covers the fewest points. */
	double ppdx = RL_AW / (lx1 - lx0), ppdy = RL_AH / (ly1 - ly0), ang = atan2(ppdy, ppdx);
	double ls = bw > 0 ? fmax(lx0, ly0 - log10(bw)) : 0, le = ridge > 0 ? log10(ridge) : 0;
	double len = (le - ls) * ppdx / cos(ang), stream_at = 0; /* log10 of the label's x */
	int stream_ok = 0;
	char stream[64];
	snprintf(stream, sizeof(stream), "STREAM triad %.1f GB/s", bw);
	double sw = 7.0 * (double)strlen(stream) + 10;
	struct obstacles best_fp = {0};
	if (ridge > 0 && p32 > 0 && le > ls && len > sw + 20) {
		static const double where[] = {0.5, 0.35, 0.65, 0.2, 0.8};
		double best = HUGE_VAL;
		for (size_t w = 0; w < sizeof(where) / sizeof(where[0]) && best > 0; w++) {
			double s_px = where[w] * len;
			if (s_px - sw / 2 < 0 || s_px + sw / 2 > len)
				continue;
			double lx = ls + where[w] * (le - ls), cx = (lx - lx0) * ppdx, cy = (lx + log10(bw) - ly0) * ppdy;
			struct obstacles fp = {0}; /* the rotated text's footprint, above the line */
			for (double k = -sw / 2; k <= sw / 2; k += 6)
				obstacle(&fp, cx + k * cos(ang) - 12 * sin(ang), cy + k * sin(ang) + 12 * cos(ang), 6);
			double cost = 0;
			for (size_t j = 0; j < fp.n; j++)
				for (size_t q = 0; q < n; q++)
					cost += overlap(&fp.b[j], &obs.b[q]);
			if (cost < best) {
				best = cost, stream_at = lx, stream_ok = 1;
				free(best_fp.b);
				best_fp = fp;
			} else {
				free(fp.b);
			}
		}
	}
	for (size_t j = 0; j < best_fp.n; j++)
		obstacle(&obs, (best_fp.b[j].x0 + best_fp.b[j].x1) / 2, (best_fp.b[j].y0 + best_fp.b[j].y1) / 2, 6);
	free(best_fp.b);
	place_labels(p, n, &obs);
	free(obs.b);

	char path[PATH_MAX];
	int rc = -1, used_align[3] = {0};
	FILE *f = plot_out_open(c, "roofline", "dat", path);
	if (!f)
		goto out;
	plot_dat_header(f, "roofline.dat, the data of roofline.gp: GFLOP/s against FLOP/byte per op");
	fprintf(f, "# index 1: ops with FLOPs and bytes: FLOP/byte, GFLOP/s (FLOPs / total time), percent of the\n"
		   "#          traced wall time in its calls (total), colour class, FP bits, name, and where the\n"
		   "#          name goes: x, y, alignment (0 left, 1 right, 2 centre)\n"
		   "# index 2: the CPU model of this machine (whose roofs are drawn)\n");
	plot_dat_meta(f, c);
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%.6g %.6g %.4f %zu %d ", p[i].x, p[i].y, p[i].pct, p[i].cls, p[i].w->fp_bits);
		plot_gp_field(f, p[i].w->name);
		fprintf(f, " %.6g %.6g %d\n", pow(10, lx0 + p[i].lx / RL_AW * (lx1 - lx0)),
			pow(10, ly0 + p[i].ly / RL_AH * (ly1 - ly0)), p[i].align);
		used_align[p[i].align] = 1;
	}
	if (!n)
		fprintf(f, "NaN NaN NaN 1 32 \"\" NaN NaN 0\n");
	fprintf(f, "\n\n0 ");
	plot_gp_field(f, rf->cpu[0] ? rf->cpu : "unknown CPU");
	fprintf(f, "\n");
	if (plot_out_close(c, f, path) != 0)
		goto out;

	if (!(f = plot_out_open(c, "roofline", "gp", path)))
		goto out;
	plot_gp_preamble(f, c, "roofline", "achieved GFLOP/s per op against its arithmetic intensity, under the roofline",
		    WIDTH, ROOFLINE_H);
	fprintf(f, "stats 'roofline.dat' index 2 using (cpu = strcol(2), $1) nooutput\n");
	fprintf(f, "peak32 = %.6g; peak64 = %.6g; bw = %.6g # GFLOP/s, GFLOP/s, GB/s (0: not known)\n", p32, p64, bw);
	fprintf(f, "roof(x, peak) = bw > 0 && x * bw < peak ? x * bw : peak\n");
	char roofs[256];
	if (p32 > 0 && bw > 0)
		snprintf(roofs, sizeof(roofs), "FP32 FMA peak %.1f GFLOP/s (%s), STREAM triad %.1f GB/s, ridge point %.2f FLOP/byte",
			 p32, rf->source, bw, ridge);
	else if (p32 > 0)
		snprintf(roofs, sizeof(roofs), "FP32 FMA peak %.1f GFLOP/s (%s); memory bandwidth not known (tprof roofline)",
			 p32, rf->source);
	else
		snprintf(roofs, sizeof(roofs), "roofs not known: run tprof roofline, or set TPROF_PEAK_GFLOPS");
	fprintf(f, "set title sprintf(\"%%s (pid %%d): achieved GFLOP/s of each op against the roofline of this machine\\n"
		   "%%s, %d CPUs: %s\", program, pid, cpu)\n",
		rf->cores, roofs);
	plot_gp_margins(f, WIDTH, ROOFLINE_H, RL_L, RL_R, RL_T, RL_B);
	fprintf(f, "set xlabel \"arithmetic intensity (FLOP/byte: FLOPs per byte of compulsory memory traffic)\"\n"
		   "set ylabel \"achieved GFLOP/s (FLOPs / total time of the calls)\"\n"
		   "set logscale xy 10\n"
		   "set xrange [%g:%g]\n"
		   "set yrange [%g:%g]\n"
		   "set format x \"%%g\"\nset format y \"%%g\"\n"
		   "set grid xtics ytics mxtics mytics lc rgb \"#e8e8e8\", lc rgb \"#f4f4f4\"\n"
		   "set tics nomirror\n"
		   "set samples 1000\n"
		   "set key top left opaque box lc rgb \"#bbbbbb\" spacing 1.2\n",
		pow(10, lx0), pow(10, lx1), pow(10, ly0), pow(10, ly1));
	if (p32 > 0)
		fprintf(f, "set label 3 sprintf(\"FP32 FMA peak %%.1f GFLOP/s\", peak32) at graph 0.99, first peak32 right "
			   "offset 0,0.8 tc rgb \"#333333\"\n");
	if (fp64 && p64 > 0)
		fprintf(f, "set label 4 sprintf(\"FP64 FMA peak %%.1f GFLOP/s\", peak64) at graph 0.99, first peak64 right "
			   "offset 0,-0.8 tc rgb \"#777777\"\n");
	if (ridge > 0 && p32 > 0) {
		fprintf(f, "set arrow 1 from %.6g, graph 0 to %.6g, %.6g nohead dt 3 lc rgb \"#777777\"\n"
			   "set label 2 \"ridge point %.2f FLOP/byte\" at %.6g, graph 0.02 left offset 0.5,0 tc rgb \"#555555\"\n",
			ridge, ridge, p32, ridge, ridge);
		if (stream_ok) {
			double xm = pow(10, stream_at);
			fprintf(f, "set label 5 \"%s\" at %.6g, %.6g center rotate by %.2f offset %.2f,%.2f tc rgb \"#333333\"\n",
				stream, xm, xm * bw, ang * 180 / M_PI, -sin(ang) * 0.9, cos(ang) * 0.9);
		}
	}
	if (!n)
		fprintf(f, "set label 1 \"no kernel calls with FLOPs and bytes in this trace\" at graph 0.5, graph 0.5 center\n");
	if (without)
		fprintf(f, "# %zu op%s without FLOPs or bytes cannot be placed on log axes and are left out\n", without,
			without == 1 ? "" : "s");
	fprintf(f, "# point area grows with the share of the wall time spent in the op's calls\n"
		   "psize(pct) = 1.2 + 0.5 * sqrt(pct)\n");
	fprintf(f, "plot ");
	const char *sep = "";
	if (p32 > 0) {
		fprintf(f, "roof(x, peak32) with lines lw 2.5 lc rgb \"#333333\" title \"roofline FP32: "
			   "min(peak, bandwidth x intensity)\"");
		sep = ", \\\n     ";
	}
	if (fp64 && p64 > 0) {
		fprintf(f, "%sroof(x, peak64) with lines lw 2 dt 2 lc rgb \"#777777\" title \"roofline FP64\"", sep);
		sep = ", \\\n     ";
	}
	if (n)
		fprintf(f, "%s'roofline.dat' index 1 using 1:2:(psize($3)):4 with points pt 7 ps variable lc variable "
			   "title \"op (area: share of the wall time in its calls)\"",
			sep);
	else if (!*sep)
		fprintf(f, "NaN notitle");
	static const char *const how[] = {"left", "right", "center"};
	for (int k = 0; k < 3; k++)
		if (used_align[k])
			fprintf(f, ", \\\n     '' index 1 using ($9 == %d ? $7 : NaN):8:6 with labels %s "
				   "font \",10\" notitle",
				k, how[k]);
	fprintf(f, "\n");
	if (plot_out_close(c, f, path) != 0)
		goto out;
	rc = 0;
out:
	free(p);
	return rc;
}
