/* tprof plot: four pictures of a trace, drawn by gnuplot, each written next to the gnuplot script and
 * the data that make it, so that a user can restyle and re-run it: memory (live heap bytes over time,
 * the exact peak, step boundaries, RSS), timeline (per thread, the kernel call running at each moment
 * and the annotated ranges above it), ops (self-time share per op) and roofline (each op's GFLOP/s
 * against its arithmetic intensity under this machine's roofs). Safe by construction: the scripts
 * contain no string from the trace; every such string is a field of the .dat files (plot.h), which
 * gnuplot reads as text and never as a command. docs/PLOT.md. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/heap.h"
#include "analysis/ops.h"
#include "analysis/plot.h"
#include "trace/reader.h"
#include "analysis/roofline.h"
#include "base/util.h"

#define USAGE                                                                                            \
	"usage: tprof plot [-o|--output DIR] [--format png|svg] FILE\n"                                  \
	"Draws memory, timeline, ops and roofline pictures of the trace with gnuplot into DIR (default: .),\n" \
	"each beside the .gp script and .dat data that make it. Exit status 3: gnuplot missing or failed."

#define PLOT_FAILED 3 /* the pictures could not be made (gnuplot missing or failing, DIR not writable) */

/* Picture sizes in pixels (docs/PLOT.md). The memory, timeline and roofline plots have fixed margins
 * (left, right, top, bottom; 0: gnuplot's choice), so that the plot area's size in pixels is known:
 * the downsampling works at its resolution and the roofline's labels are placed in it. */
#define WIDTH 1400
#define MEMORY_H 720
#define OPS_H 720
#define ROOFLINE_H 900
#define TIMELINE_H(lanes) ((lanes) * 140 + 300 < 580 ? 580 : (lanes) * 140 + 300 > 2400 ? 2400 : (lanes) * 140 + 300)
#define MEM_L 90
#define MEM_R 40
#define TL_L 150
#define TL_R 40
#define RL_L 90
#define RL_R 40
#define RL_T 80
#define RL_B 70

/* Colour classes of ops: the NCLASS - 1 with the most self time get a colour each, the others share
 * the last one ("other ops"); the same colours in the timeline, ops and roofline pictures. */
#define NCLASS 12
#define MAX_LEVELS 4  /* range nesting levels drawn above a lane */
#define STEP_PX 12    /* at most one step boundary line per 12 pixels: denser ones are thinned */

struct ctx {
	const char *file, *dir, *ext;
	int svg;
	struct tprof_trace *t; /* kernel calls, annotations and names; its heap events are read */
	struct ops_result r;   /* op rows, most self time first */
	struct tprof_roofline rf;
	uint64_t span;         /* ns from time zero to the last thing recorded */
	uint32_t *op_class;    /* per op id of the trace: its colour class, 1..NCLASS */
	const char *class_name[NCLASS + 1]; /* NULL: "other ops" */
};

/* ---- helpers ---- */

static uint64_t ns_of(const struct ctx *c, uint64_t tick)
{
	return tprof_trace_ns(c->t, tick);
}

/* Seconds with nanosecond precision, exactly: "12.000345678". */
static const char *secs(uint64_t ns, char *buf)
{
	snprintf(buf, 32, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
	return buf;
}

/* The step boundaries (tprof_step) drawn on a plot area plot_px pixels wide: every one, or every n-th
 * when there are more than one per STEP_PX pixels. Writes their seconds, one per line ("NaN" if
 * none), and returns how many it wrote; *nsteps is how many there are, *every the n. */
static size_t write_steps(FILE *f, const struct ctx *c, int plot_px, size_t *nsteps, size_t *every)
{
	const struct tprof_trace *t = c->t;
	size_t n = 0, most = (size_t)(plot_px / STEP_PX), drawn = 0;
	char a[32];
	for (size_t i = 0; i < t->nannots; i++)
		n += t->annots[i].kind == TPROF_ANNOT_STEP;
	*nsteps = n;
	*every = n > most ? (n + most - 1) / most : 1;
	for (size_t i = 0, k = 0; i < t->nannots; i++)
		if (t->annots[i].kind == TPROF_ANNOT_STEP && k++ % *every == 0) {
			fprintf(f, "%s\n", secs(ns_of(c, t->annots[i].tick), a));
			drawn++;
		}
	if (!drawn)
		fprintf(f, "NaN\n");
	return drawn;
}

/* The key's words for the step lines write_steps drew. */
static const char *steps_title(char *buf, size_t n, size_t nsteps, size_t every)
{
	if (every > 1) {
		size_t t = every % 100;
		const char *suf = t / 10 == 1 ? "th" : t % 10 == 1 ? "st" : t % 10 == 2 ? "nd" : t % 10 == 3 ? "rd" : "th";
		snprintf(buf, n, "step boundary (every %zu%s of %zu)", every, suf, nsteps);
	} else {
		snprintf(buf, n, "step boundary");
	}
	return buf;
}

static FILE *out_open(const struct ctx *c, const char *name, const char *ext, char *path)
{
	snprintf(path, PATH_MAX, "%s/%s.%s", c->dir, name, ext);
	FILE *f = fopen(path, "w");
	if (!f)
		tprof_err("plot: cannot write %s: %s", path, strerror(errno));
	return f;
}

static int out_close(FILE *f, const char *path)
{
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		tprof_err("plot: cannot write %s: %s", path, strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

/* The first lines of a script: what it draws, how to re-run it, the terminal and the colours. */
static void gp_preamble(FILE *f, const struct ctx *c, const char *name, const char *what, int w, int h)
{
	fprintf(f, "# tprof plot: %s\n", what);
	fprintf(f, "# Re-run from this directory: gnuplot %s.gp (data: %s.dat, whose header says what each\n"
		   "# block holds). Every string that comes from the trace (program, thread, op and range names)\n"
		   "# is read from %s.dat as data; this script contains none.\n\n",
		name, name, name);
	fprintf(f, "set encoding utf8\n");
	if (c->svg)
		fprintf(f, "set terminal svg size %d,%d font \"sans-serif,13\" noenhanced background \"white\"\n", w, h);
	else
		fprintf(f, "if (strstrt(\" \".GPVAL_TERMINALS.\" \", \" pngcairo \") > 0) {\n"
			   "    set terminal pngcairo size %d,%d font \"Sans,11\" noenhanced background \"white\"\n"
			   "} else {\n"
			   "    set terminal png size %d,%d noenhanced\n"
			   "}\n",
			w, h, w, h);
	fprintf(f, "set output '%s.%s'\n\n", name, c->ext);
	/* Tableau 10 and two more; the last is "other ops", 13 "outside kernels". */
	static const char *const colour[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
					     "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#17becf",
					     "#bcbd22", "#a0a0a0", "#d9d9d9"};
	for (size_t i = 0; i < sizeof(colour) / sizeof(colour[0]); i++)
		fprintf(f, "set linetype %zu lc rgb \"%s\" lw 1.5\n", i + 1, colour[i]);
	fprintf(f, "set border lc rgb \"#555555\"\nset grid lc rgb \"#e4e4e4\" lw 1\n");
	/* The program's name, from the data: gnuplot only ever handles it as a string value. */
	fprintf(f, "stats '%s.dat' index 0 using (program = strcol(2), $1) nooutput\n", name);
	fprintf(f, "pid = %" PRIu64 "\n", c->t->info.pid);
}

static void gp_margins(FILE *f, int w, int h, int l, int r, int top, int bottom)
{
	fprintf(f, "set lmargin at screen %.6f; set rmargin at screen %.6f\n", (double)l / w, 1.0 - (double)r / w);
	if (top && bottom)
		fprintf(f, "set tmargin at screen %.6f; set bmargin at screen %.6f\n", 1.0 - (double)top / h,
			(double)bottom / h);
}

/* The key under the x axis's label, in as many columns as fit (room is kept for three). */
static void gp_key_below(FILE *f, int h, int entries)
{
	int rows = (entries + 2) / 3, bottom = rows * 19 + 62;
	fprintf(f, "set key at screen 0.5, screen %.6f center top horizontal maxcols 5 samplen 1.8 spacing 1.15 "
		   "width 2\nset bmargin at screen %.6f\n",
		(bottom - 56.0) / h, (double)bottom / h);
}

/* Block 0 of every .dat: the pid and the program's name. */
static void dat_header(FILE *f, const char *what)
{
	fprintf(f, "# tprof plot: %s\n# Blocks are separated by two blank lines (gnuplot: index N); strings are "
		   "double-quoted, with gnuplot's escapes.\n",
		what);
	fprintf(f, "# index 0: pid, program name\n");
}

static void dat_meta(FILE *f, const struct ctx *c)
{
	fprintf(f, "%" PRIu64 " ", c->t->info.pid);
	plot_gp_field(f, c->t->info.program && *c->t->info.program ? c->t->info.program : "?");
	fprintf(f, "\n\n\n");
}

/* Characters shown of a name (plot_gp_text cuts at PLOT_TEXT_CHARS). */
static size_t shown_chars(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n > PLOT_TEXT_CHARS ? PLOT_TEXT_CHARS : n;
}

/* A unit for the time axis of a span of ns: seconds, or milliseconds below one second. */
static void time_unit(FILE *f, uint64_t span)
{
	if (span < 1000000000u)
		fprintf(f, "tscale = 1e3; tunit = \"ms\"\n");
	else
		fprintf(f, "tscale = 1; tunit = \"s\"\n");
}

/* ---- memory ---- */

static void write_points(FILE *f, const struct plot_point *p, size_t n)
{
	char a[32];
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s %" PRIu64 "\n", secs(p[i].t, a), p[i].v);
	if (!n)
		fprintf(f, "NaN NaN\n");
	fprintf(f, "\n\n");
}

static int plot_memory(struct ctx *c)
{
	struct tprof_trace *t = cmd_open_trace(c->file);
	if (!t)
		return 2;
	struct heap_stats hs;
	struct plot_series heap, rss;
	heap_init(&hs, 0);
	plot_series_init(&heap, c->span, WIDTH - MEM_L - MEM_R);
	plot_series_init(&rss, c->span, WIDTH - MEM_L - MEM_R);
	plot_series_add(&heap, 0, 0);
	struct tprof_event e;
	int rc;
	uint64_t events = 0;
	while ((rc = tprof_trace_next(t, &e)) == 1) {
		heap_step(&hs, &e, NULL);
		plot_series_add(&heap, tprof_trace_ns(t, e.tick), hs.live_bytes);
		events++;
	}
	struct plot_point *hp = NULL, *rp = NULL;
	size_t nhp = 0, nrp = 0;
	char path[PATH_MAX], a[32], b[32];
	FILE *f = NULL;
	if (rc < 0) {
		tprof_err("%s", t->err);
		rc = 2;
		goto out;
	}
	if (heap.max_v != hs.peak_bytes) { /* the same replay: cannot differ */
		tprof_err("plot: %s: the downsampled heap curve misses the peak", c->file);
		rc = 2;
		goto out;
	}
	for (size_t i = 0; i < t->nrss; i++)
		plot_series_add(&rss, tprof_trace_ns(t, t->rss[i].tick), t->rss[i].rss_bytes);
	nhp = plot_series_points(&heap, &hp);
	nrp = plot_series_points(&rss, &rp);
	uint64_t peak_ns = hs.peak_bytes ? heap.max_t : 0; /* the peak event's time, as on the curve */

	rc = PLOT_FAILED;
	if (!(f = out_open(c, "memory", "dat", path)))
		goto out;
	dat_header(f, "memory.dat, the data of memory.gp: live heap bytes over time");
	fprintf(f, "# index 1: live heap bytes (requested sizes of the blocks the malloc family handed out and that\n"
		   "#          were not freed yet): seconds since the trace began, bytes. Downsampled to the first,\n"
		   "#          smallest, largest and last value of each 1/%d of the time axis: the maximum is exact.\n"
		   "# index 2: the peak (the first time it was reached): seconds, bytes\n"
		   "#          (times never go backwards: an event timed before the one before it, as the clocks of\n"
		   "#          concurrent threads may have it, is put at that one's time)\n"
		   "# index 3: step boundaries (tprof_step): seconds (NaN: none)\n"
		   "# index 4: process RSS samples: seconds, bytes (NaN NaN: the trace has none)\n",
		   WIDTH - MEM_L - MEM_R);
	dat_meta(f, c);
	write_points(f, hp, nhp);
	fprintf(f, "%s %" PRIu64 "\n\n\n", secs(peak_ns, a), hs.peak_bytes);
	size_t nsteps = 0, every = 1, drawn = write_steps(f, c, WIDTH - MEM_L - MEM_R, &nsteps, &every);
	fprintf(f, "\n\n");
	write_points(f, rp, nrp);
	if (out_close(f, path) != 0)
		goto out;

	if (!(f = out_open(c, "memory", "gp", path)))
		goto out;
	gp_preamble(f, c, "memory", "live heap bytes over time, the exact peak, step boundaries, RSS", WIDTH,
		    MEMORY_H);
	uint64_t top = hs.peak_bytes > rss.max_v ? hs.peak_bytes : rss.max_v;
	const char *unit = top >= (1ull << 30) ? "GiB" : top >= (1ull << 20) ? "MiB" : top >= 1024 ? "KiB" : "bytes";
	int shift = top >= (1ull << 30) ? 30 : top >= (1ull << 20) ? 20 : top >= 1024 ? 10 : 0;
	time_unit(f, c->span);
	fprintf(f, "unit = 2.0**%d; uname = \"%s\"\n", shift, unit);
	fprintf(f, "span = %s; peak_t = %s; peak_bytes = %" PRIu64 "\n", secs(c->span, a), secs(peak_ns, b),
		hs.peak_bytes);
	fprintf(f, "ytop = (%" PRIu64 " > 0 ? %" PRIu64 " / unit : 1) * 1.18\n", top, top);
	fprintf(f, "set title sprintf(\"%%s (pid %%d): live heap bytes over time\\n"
		   "the requested bytes of the blocks in use (malloc family); %s\\n"
		   "%" PRIu64 " heap events, %zu points drawn: the smallest and largest per pixel, and the exact peak\", "
		   "program, pid)\n",
		nrp ? "RSS: the resident set size the recorder sampled" : "RSS not drawn: this trace has no RSS samples",
		events, nhp);
	gp_margins(f, WIDTH, MEMORY_H, MEM_L, MEM_R, 0, 0);
	fprintf(f, "set xlabel sprintf(\"time since the trace began (%%s)\", tunit)\n"
		   "set ylabel sprintf(\"bytes (%%s)\", uname)\n"
		   "set xrange [0:(span > 0 ? span : 1e-9) * tscale]\n"
		   "set yrange [0:ytop]\n"
		   "set format y \"%%.4g\"\n"
		   "set style fill solid 1.0 noborder\n"
		   "set tics nomirror\n");
	gp_key_below(f, MEMORY_H, 1 + (nrp > 0) + (drawn > 0) + (hs.peak_bytes > 0));
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
	if (nrp)
		fprintf(f, ", \\\n     '' index 4 using ($1 * tscale):($2 / unit) with lines lc 2 lw 1.5 title \"process RSS\"");
	if (drawn) {
		char st[96];
		fprintf(f, ", \\\n     '' index 3 using ($1 * tscale):(ytop) with impulses lc rgb \"#888888\" lw 1 dt 2 "
			   "title \"%s\"",
			steps_title(st, sizeof(st), nsteps, every));
	}
	if (hs.peak_bytes)
		fprintf(f, ", \\\n     '' index 2 using ($1 * tscale):($2 / unit) with points pt 7 ps 1.6 lc 3 "
			   "title \"exact peak\"");
	fprintf(f, "\n");
	if (out_close(f, path) != 0)
		goto out;
	rc = 0;
out:
	free(hp);
	free(rp);
	plot_series_free(&heap);
	plot_series_free(&rss);
	heap_release(&hs);
	tprof_trace_close(t);
	return rc;
}

/* ---- timeline ---- */

struct lane {
	uint32_t tid;
	uint64_t first; /* ns of its first kernel call or range */
};

static int lane_by_tid(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int lane_by_first(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The lane of tid in lanes sorted by tid (its index in drawing order is in .first after renumbering). */
static struct lane *lane_find(struct lane *byid, size_t n, uint32_t tid)
{
	struct lane key = {tid, 0};
	return bsearch(&key, byid, n, sizeof(*byid), lane_by_tid);
}

static void lane_note(struct lane **l, size_t *n, uint32_t tid, uint64_t ns)
{
	for (size_t i = 0; i < *n; i++)
		if ((*l)[i].tid == tid) {
			if (ns < (*l)[i].first)
				(*l)[i].first = ns;
			return;
		}
	*l = xrealloc(*l, (*n + 1) * sizeof(**l));
	(*l)[(*n)++] = (struct lane){tid, ns};
}

/* One range instance. */
struct inst {
	uint32_t lane, depth;
	struct plot_span s; /* key: annotation name id */
};

static int inst_cmp(const void *a, const void *b)
{
	const struct inst *x = a, *y = b;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->s.t0 < y->s.t0 ? -1 : x->s.t0 > y->s.t0;
}

static int plot_timeline(struct ctx *c)
{
	struct tprof_trace *t = c->t;
	struct lane *lanes = NULL, *byid;
	size_t nl = 0;
	for (size_t i = 0; i < t->nkcalls; i++)
		lane_note(&lanes, &nl, t->kcalls[i].tid, ns_of(c, t->kcalls[i].t0));
	for (size_t i = 0; i < t->nannots; i++)
		if (t->annots[i].kind == TPROF_ANNOT_PUSH)
			lane_note(&lanes, &nl, t->annots[i].tid, ns_of(c, t->annots[i].tick));
	if (nl)
		tprof_sort(lanes, nl, sizeof(*lanes), lane_by_first);
	/* byid maps a tid to its lane number (kept in .first) */
	byid = xmalloc((nl + 1) * sizeof(*byid));
	for (size_t i = 0; i < nl; i++)
		byid[i] = (struct lane){lanes[i].tid, i};
	tprof_sort(byid, nl, sizeof(*byid), lane_by_tid);

	/* kernel calls per lane, flattened and merged */
	uint64_t min_ns = c->span / (WIDTH - TL_L - TL_R);
	size_t *nper = xcalloc(nl + 1, sizeof(size_t));
	struct plot_span **per = xcalloc(nl + 1, sizeof(*per));
	for (size_t i = 0; i < t->nkcalls; i++) {
		const struct tprof_kcall *k = &t->kcalls[i];
		size_t l = (size_t)lane_find(byid, nl, k->tid)->first;
		if (nper[l] % 256 == 0)
			per[l] = xrealloc(per[l], (nper[l] + 256) * sizeof(**per));
		per[l][nper[l]++] = (struct plot_span){ns_of(c, k->t0), ns_of(c, k->t1),
						       k->op < t->nop_names ? c->op_class[k->op] : NCLASS};
	}
	struct plot_box **boxes = xcalloc(nl + 1, sizeof(*boxes));
	size_t *nboxes = xcalloc(nl + 1, sizeof(size_t));
	int used[NCLASS + 1] = {0};
	for (size_t l = 0; l < nl; l++) {
		nboxes[l] = plot_flatten(per[l], nper[l], &boxes[l]);
		nboxes[l] = plot_merge(boxes[l], nboxes[l], min_ns);
		for (size_t i = 0; i < nboxes[l]; i++)
			used[boxes[l][i].key] = 1;
		free(per[l]);
	}
	free(per);

	/* ranges: instances per lane and nesting level, merged like the calls. A lane keeps 64 open
	 * ranges; deeper pushes are only counted, so that their pops close nothing drawn. */
	struct inst *in = NULL;
	size_t nin = 0, cap = 0;
	struct pushed {
		uint64_t t0;
		uint32_t name;
	} (*stk)[64] = xcalloc(nl + 1, sizeof(*stk));
	uint32_t *depth = xcalloc(nl + 1, sizeof(uint32_t)), *deeper = xcalloc(nl + 1, sizeof(uint32_t));
	uint32_t levels = 0;
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *an = &t->annots[i];
		if (an->kind != TPROF_ANNOT_PUSH && an->kind != TPROF_ANNOT_POP)
			continue;
		const struct lane *ln = lane_find(byid, nl, an->tid);
		if (!ln)
			continue; /* a pop on a thread that never pushed */
		size_t l = (size_t)ln->first;
		if (an->kind == TPROF_ANNOT_PUSH) {
			if (depth[l] < 64)
				stk[l][depth[l]++] = (struct pushed){ns_of(c, an->tick), an->name};
			else
				deeper[l]++;
			continue;
		}
		if (deeper[l]) {
			deeper[l]--;
			continue;
		}
		if (!depth[l])
			continue; /* a pop without a push */
		uint64_t end = ns_of(c, an->tick);
		struct pushed *o = &stk[l][--depth[l]];
		if (depth[l] < MAX_LEVELS) {
			if (nin == cap)
				in = xrealloc(in, (cap = cap ? 2 * cap : 256) * sizeof(*in));
			in[nin++] = (struct inst){(uint32_t)l, depth[l], {o->t0, end > o->t0 ? end : o->t0, o->name}};
			levels = depth[l] + 1 > levels ? depth[l] + 1 : levels;
		}
	}
	for (size_t l = 0; l < nl; l++) /* ranges still open at the end last until then */
		while (depth[l]) {
			struct pushed *o = &stk[l][--depth[l]];
			if (depth[l] >= MAX_LEVELS)
				continue;
			if (nin == cap)
				in = xrealloc(in, (cap = cap ? 2 * cap : 256) * sizeof(*in));
			in[nin++] = (struct inst){(uint32_t)l, depth[l], {o->t0, c->span > o->t0 ? c->span : o->t0, o->name}};
			levels = depth[l] + 1 > levels ? depth[l] + 1 : levels;
		}
	free(stk);
	free(depth);
	free(deeper);
	if (nin)
		tprof_sort(in, nin, sizeof(*in), inst_cmp);

	char path[PATH_MAX], a[32], b[32];
	int rc = PLOT_FAILED;
	FILE *f = out_open(c, "timeline", "dat", path);
	if (!f)
		goto out;
	size_t nused = 0;
	for (int k = 1; k <= NCLASS; k++)
		nused += used[k];
	dat_header(f, "timeline.dat, the data of timeline.gp: kernel calls and ranges per thread");
	fprintf(f, "# index 1: lanes: lane number, label (thread name and tid)\n"
		   "# index 2..%zu: one block per op colour class, its first line the class's name: start and end\n"
		   "#          (seconds since the trace began), lane, class. Each box is the innermost kernel call\n"
		   "#          running; runs of boxes narrower than 1/%d of the time axis are merged into one box\n"
		   "#          of the class that covers most of it.\n"
		   "# index %zu: ranges: start, end, lane, level (0: outermost), name (\"\": several merged)\n"
		   "# index %zu: the names of the ranges whose box is wide enough for them: middle, lane, level, name\n"
		   "# index %zu: step boundaries: seconds (NaN: none)\n",
		1 + nused, WIDTH - TL_L - TL_R, 2 + nused, 3 + nused, 4 + nused);
	dat_meta(f, c);
	for (size_t l = 0; l < nl; l++) {
		char buf[PLOT_TEXT_SIZE];
		const char *name = tprof_trace_thread_name(t, lanes[l].tid);
		/* "\n" here is gnuplot's escape, inside the quotes: a second line under the name */
		if (name && *name)
			fprintf(f, "%zu \"%s\\ntid %" PRIu32 "\"\n", l, plot_gp_text(buf, name), lanes[l].tid);
		else
			fprintf(f, "%zu \"tid %" PRIu32 "\"\n", l, lanes[l].tid);
	}
	if (!nl)
		fprintf(f, "0 \"\"\n");
	fprintf(f, "\n\n");
	char classes[NCLASS * 4] = "";
	for (uint32_t k = 1; k <= NCLASS; k++) {
		if (!used[k])
			continue;
		snprintf(classes + strlen(classes), sizeof(classes) - strlen(classes), "%s%u", *classes ? " " : "", k);
		plot_gp_field(f, c->class_name[k] ? c->class_name[k] : "other ops");
		fprintf(f, "\n");
		for (size_t l = 0; l < nl; l++)
			for (size_t i = 0; i < nboxes[l]; i++)
				if (boxes[l][i].key == k)
					fprintf(f, "%s %s %zu %u\n", secs(boxes[l][i].t0, a), secs(boxes[l][i].t1, b), l, k);
		fprintf(f, "\n\n");
	}
	size_t nrbox = 0, nlabels = 0, labels_len = 0;
	char *labels = NULL;
	FILE *lf = open_memstream(&labels, &labels_len);
	if (!lf) {
		tprof_err("plot: out of memory");
		fclose(f);
		goto out;
	}
	double px_per_ns = c->span ? (double)(WIDTH - TL_L - TL_R) / (double)c->span : 0;
	for (size_t i = 0; i < nin;) {
		size_t j = i;
		while (j < nin && in[j].lane == in[i].lane && in[j].depth == in[i].depth)
			j++;
		struct plot_box *rb = xmalloc((j - i) * sizeof(*rb));
		for (size_t q = i; q < j; q++)
			rb[q - i] = (struct plot_box){in[q].s.t0, in[q].s.t1, in[q].s.key, 0};
		size_t n = plot_merge(rb, j - i, min_ns);
		for (size_t q = 0; q < n; q++) {
			const char *name = rb[q].key < t->nannot_names && t->annot_names[rb[q].key] ? t->annot_names[rb[q].key] : "?";
			fprintf(f, "%s %s %u %u ", secs(rb[q].t0, a), secs(rb[q].t1, b), in[i].lane, in[i].depth);
			plot_gp_field(f, rb[q].mixed ? "" : name);
			fprintf(f, "\n");
			/* a name is written where its box holds it at the labels' font (about 6 pixels a character) */
			if (!rb[q].mixed && (double)(rb[q].t1 - rb[q].t0) * px_per_ns >= 6.0 * (double)shown_chars(name) + 8) {
				fprintf(lf, "%s %u %u ", secs(rb[q].t0 / 2 + rb[q].t1 / 2, a), in[i].lane, in[i].depth);
				plot_gp_field(lf, name);
				fprintf(lf, "\n");
				nlabels++;
			}
		}
		nrbox += n;
		free(rb);
		i = j;
	}
	if (!nrbox)
		fprintf(f, "NaN NaN NaN NaN \"\"\n");
	fprintf(f, "\n\n");
	fclose(lf);
	fwrite(labels, 1, labels_len, f);
	free(labels);
	fprintf(f, "%s\n\n", nlabels ? "" : "NaN NaN NaN \"\"\n");
	size_t nsteps = 0, every = 1, drawn = write_steps(f, c, WIDTH - TL_L - TL_R, &nsteps, &every);
	fprintf(f, "\n");
	if (out_close(f, path) != 0)
		goto out;

	if (!(f = out_open(c, "timeline", "gp", path)))
		goto out;
	size_t nlanes = nl ? nl : 1;
	gp_preamble(f, c, "timeline", "per thread, the kernel call running at each moment, annotated ranges above",
		    WIDTH, TIMELINE_H((int)nlanes));
	time_unit(f, c->span);
	fprintf(f, "span = %s; nlanes = %zu; levels = %u\n", secs(c->span, a), nlanes, levels);
	fprintf(f, "classes = \"%s\" # the colour (linetype) of each op block, in order\n", classes);
	fprintf(f, "# Lane geometry (y grows downwards): kernel calls from k_top to k_bot below the lane's\n"
		   "# number; above them range level d (0: outermost, on top) from r_top(d) to r_bot(d).\n"
		   "k_top = 0.0; k_bot = 0.40\n"
		   "rh = levels > 0 ? (0.44 / levels < 0.15 ? 0.44 / levels : 0.15) : 0\n"
		   "r_bot(d) = -0.05 - (levels - 1 - d) * rh; r_top(d) = r_bot(d) - 0.88 * rh\n"
		   "y_first = levels > 0 ? r_top(0) - 0.1 : -0.15; y_last = nlanes - 0.45\n");
	fprintf(f, "set title sprintf(\"%%s (pid %%d): kernel calls per thread over time\\n"
		   "each lane shows the innermost kernel call running (the op its self time goes to), the annotated "
		   "ranges above it\\n%zu kernel calls; boxes narrower than a pixel merged\", program, pid)\n",
		t->nkcalls);
	gp_margins(f, WIDTH, TIMELINE_H((int)nlanes), TL_L, TL_R, 0, 0);
	fprintf(f, "set xlabel sprintf(\"time since the trace began (%%s)\", tunit)\n"
		   "set xrange [0:(span > 0 ? span : 1e-9) * tscale]\n"
		   "set yrange [y_last:y_first]\n"
		   "set ytics scale 0 font \",10\"\n"
		   "set grid xtics noytics\n"
		   "set tics nomirror\n"
		   "set style fill solid 0.9 noborder\n");
	gp_key_below(f, TIMELINE_H((int)nlanes), (int)nused + (nrbox > 0) + (drawn > 0));
	if (!nl)
		fprintf(f, "set label 1 \"no kernel calls or annotated ranges in this trace\" at graph 0.5, graph 0.5 center\n");
	fprintf(f, "plot 'timeline.dat' index 1 using (NaN):($1 + (k_top + k_bot) / 2):ytic(strcol(2)) notitle");
	if (nused)
		fprintf(f, ", \\\n     for [k = 1:words(classes)] '' index 1 + k using ($1 * tscale):3:($1 * tscale):($2 * tscale):"
			   "($3 + k_top):($3 + k_bot) with boxxyerror lt int(word(classes, k)) title columnheader(1)");
	if (nrbox)
		fprintf(f, ", \\\n     '' index %zu using ($1 * tscale):3:($1 * tscale):($2 * tscale):($3 + r_top($4)):"
			   "($3 + r_bot($4)) with boxxyerror fs solid 0.35 border lc rgb \"#6b8fb3\" lc rgb \"#9ecae1\" "
			   "title \"annotated range\"",
			2 + nused);
	/* Labels from a plain column: gnuplot 5.4 decodes escapes once more in a string computed by an
	 * expression, and crashes on a labels plot without a single defined point. */
	if (nlabels)
		fprintf(f, ", \\\n     '' index %zu using ($1 * tscale):($2 + (r_top($3) + r_bot($3)) / 2):4 with labels "
			   "font \",8\" tc rgb \"#08306b\" notitle",
			3 + nused);
	if (drawn) {
		char st[96];
		fprintf(f, ", \\\n     '' index %zu using ($1 * tscale):(y_last):(0):(y_first - y_last) with vectors nohead "
			   "lc rgb \"#888888\" dt 2 title \"%s\"",
			4 + nused, steps_title(st, sizeof(st), nsteps, every));
	}
	fprintf(f, "\n");
	if (out_close(f, path) != 0)
		goto out;
	rc = 0;
out:
	for (size_t l = 0; l < nl; l++)
		free(boxes[l]);
	free(boxes);
	free(nboxes);
	free(nper);
	free(in);
	free(lanes);
	free(byid);
	return rc;
}

/* ---- ops ---- */

static int row_by_self(const void *a, const void *b)
{
	const struct ops_row *x = a, *y = b;
	if (x->self_ns != y->self_ns)
		return x->self_ns > y->self_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The thread ops.png gives shares of when several threads have kernel calls: the one that marks
 * steps (tprof_step), else the main thread (tid = pid). 0: one thread, whose table is the whole one. */
static uint32_t focus_thread(const struct ctx *c)
{
	if (c->r.nthr <= 1)
		return 0;
	for (size_t i = 0; i < c->t->nannots; i++)
		if (c->t->annots[i].kind == TPROF_ANNOT_STEP)
			return c->t->annots[i].tid;
	return (uint32_t)c->t->info.pid;
}

/* An op's colour class, as the timeline gives it (NCLASS: "other ops"). */
static uint32_t class_of(const struct ctx *c, const char *name)
{
	for (uint32_t k = 1; k < NCLASS; k++)
		if (c->class_name[k] && strcmp(c->class_name[k], name) == 0)
			return k;
	return NCLASS;
}

static int plot_ops(struct ctx *c)
{
	/* the focus thread's own table (tprof ops --thread), or the whole one */
	struct ops_result one;
	const struct ops_result *r = &c->r;
	uint32_t ft = focus_thread(c);
	const char *why = "";
	struct tprof_trace *t1 = NULL; /* its heap events not yet read, which c->t's are */
	if (ft && !(t1 = cmd_open_trace(c->file)))
		return PLOT_FAILED; /* read once already: it changed or went away since */
	if (ft) {
		struct ops_options oo = {.one_thread = 1, .tid = ft};
		if (ops_analyze(t1, &oo, &one) == 0) {
			if (one.nrows)
				tprof_sort(one.rows, one.nrows, sizeof(*one.rows), row_by_self);
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
	int rc = PLOT_FAILED;
	FILE *f = out_open(c, "ops", "dat", path);
	if (!f)
		goto out;
	double wall = r->wall_ns ? (double)r->wall_ns : 1;
	dat_header(f, "ops.dat, the data of ops.gp: self time per op");
	fprintf(f, "# index 1: bars, largest first: rank, percent of %s wall time, self seconds, colour class, name, "
		   "value label\n",
		ft ? "the thread's" : "the traced");
	dat_meta(f, c);
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
	if (out_close(f, path) != 0)
		goto out;

	if (!(f = out_open(c, "ops", "gp", path)))
		goto out;
	gp_preamble(f, c, "ops", "self time per op, as a share of a thread's or the traced wall time", WIDTH, OPS_H);
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
	if (out_close(f, path) != 0)
		goto out;
	rc = 0;
out:
	if (r == &one)
		ops_free(&one);
	if (t1)
		tprof_trace_close(t1);
	return rc;
}

/* ---- roofline ---- */

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
		double w = 7.0 * (double)shown_chars(p[i].w->name) + 4, h = 16, r = p[i].r + 3, d = r * 0.75;
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

static int plot_roofline(struct ctx *c)
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
	int rc = PLOT_FAILED, used_align[3] = {0};
	FILE *f = out_open(c, "roofline", "dat", path);
	if (!f)
		goto out;
	dat_header(f, "roofline.dat, the data of roofline.gp: GFLOP/s against FLOP/byte per op");
	fprintf(f, "# index 1: ops with FLOPs and bytes: FLOP/byte, GFLOP/s (FLOPs / total time), percent of the\n"
		   "#          traced wall time in its calls (total), colour class, FP bits, name, and where the\n"
		   "#          name goes: x, y, alignment (0 left, 1 right, 2 centre)\n"
		   "# index 2: the CPU model of this machine (whose roofs are drawn)\n");
	dat_meta(f, c);
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
	if (out_close(f, path) != 0)
		goto out;

	if (!(f = out_open(c, "roofline", "gp", path)))
		goto out;
	gp_preamble(f, c, "roofline", "achieved GFLOP/s per op against its arithmetic intensity, under the roofline",
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
	gp_margins(f, WIDTH, ROOFLINE_H, RL_L, RL_R, RL_T, RL_B);
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
	if (out_close(f, path) != 0)
		goto out;
	rc = 0;
out:
	free(p);
	return rc;
}

/* ---- gnuplot ---- */

/* The gnuplot executable the way execvp would find it in PATH. 0 with its path in buf, or -1. */
static int find_gnuplot(char *buf, size_t n)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		struct stat st;
		snprintf(buf, n, "%.*s/gnuplot", (int)len, len ? p : ".");
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return 0;
		if (!colon)
			return -1;
		p = colon + 1;
	}
}

/* Runs gnuplot on NAME.gp inside dir. 0 on success; else prints what gnuplot said, removes the picture
 * it may have left half-written and returns PLOT_FAILED. */
static int run_gnuplot(const struct ctx *c, const char *gnuplot, const char *name)
{
	char script[64], pic[PATH_MAX];
	snprintf(script, sizeof(script), "%s.gp", name);
	snprintf(pic, sizeof(pic), "%s/%s.%s", c->dir, name, c->ext);
	FILE *msgs = tmpfile();
	if (!msgs) {
		tprof_err("plot: cannot create a temporary file: %s", strerror(errno));
		return PLOT_FAILED;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		tprof_err("plot: cannot start gnuplot: %s", strerror(errno));
		fclose(msgs);
		return PLOT_FAILED;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(fileno(msgs), 1);
		dup2(fileno(msgs), 2);
		if (chdir(c->dir) != 0) {
			fprintf(stderr, "cannot enter %s: %s\n", c->dir, strerror(errno));
			_exit(126);
		}
		execl(gnuplot, "gnuplot", script, (char *)NULL);
		fprintf(stderr, "cannot run %s: %s\n", gnuplot, strerror(errno));
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = -1;
			break;
		}
	struct stat st;
	int ok = status == 0 && stat(pic, &st) == 0 && st.st_size > 0;
	if (ok)
		;
	else if (status == -1)
		tprof_err("plot: gnuplot %s/%s: lost track of the process", c->dir, script);
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		tprof_err("plot: gnuplot failed on %s/%s (exit status %d):", c->dir, script, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		tprof_err("plot: gnuplot was killed by signal %d on %s/%s:", WTERMSIG(status), c->dir, script);
	else
		tprof_err("plot: gnuplot wrote no %s:", pic);
	/* What gnuplot said, warnings included: they point at a script that needs looking at. */
	rewind(msgs);
	char line[1024];
	for (size_t shown = 0; fgets(line, sizeof(line), msgs) && shown < 200; shown++)
		fputs(line, stderr);
	fclose(msgs);
	if (ok)
		return 0;
	unlink(pic);
	return PLOT_FAILED;
}

/* ---- the command ---- */

struct plot_opts {
	const char *dir;
	int svg;
};

static int plot_option(void *ctx, int argc, char **argv, int *i)
{
	struct plot_opts *p = ctx;
	const char *a = argv[*i];
	if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
		if (*i + 1 >= argc || !argv[*i + 1][0]) {
			tprof_err("plot: %s needs a directory", a);
			return 1;
		}
		p->dir = argv[++*i];
		return CMD_RUN;
	}
	if (!strcmp(a, "--format")) {
		const char *v = *i + 1 < argc ? argv[++*i] : "";
		if (!strcmp(v, "png") || !strcmp(v, "svg")) {
			p->svg = v[0] == 's';
			return CMD_RUN;
		}
		tprof_err("plot: --format takes png or svg");
		return 1;
	}
	return CMD_OTHER;
}

/* Ops, most self time first; ties by name, so that the colours do not depend on the file order. */
/* The time from time zero to the last thing the trace holds. Call after the heap events were read. */
static uint64_t trace_span(const struct ctx *c)
{
	const struct tprof_trace *t = c->t;
	uint64_t s = t->end_ns > t->t0_ns ? t->end_ns - t->t0_ns : 0, x;
#define SEE(tick) (x = ns_of(c, (tick)), s = x > s ? x : s)
	if (t->last_tick_seen)
		SEE(t->last_tick_seen);
	for (size_t i = 0; i < t->nkcalls; i++)
		SEE(t->kcalls[i].t1);
	for (size_t i = 0; i < t->nannots; i++)
		SEE(t->annots[i].tick);
	for (size_t i = 0; i < t->nrss; i++)
		SEE(t->rss[i].tick);
#undef SEE
	return s;
}

int cmd_plot(int argc, char **argv)
{
	struct plot_opts po = {".", 0};
	struct cmd_opts o = {.name = "plot", .usage = USAGE, .extra = plot_option, .ctx = &po};
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	struct ctx c = {.file = o.file, .dir = po.dir, .svg = po.svg, .ext = po.svg ? "svg" : "png"};
	c.t = cmd_open_trace(c.file);
	if (!c.t)
		return 2;
	char gnuplot[PATH_MAX];
	if (find_gnuplot(gnuplot, sizeof(gnuplot)) != 0) {
		tprof_err("plot: gnuplot is not installed (not found in PATH); install the package gnuplot-nox "
			  "(apt-get install gnuplot-nox) and run this again");
		tprof_trace_close(c.t);
		return PLOT_FAILED;
	}
	struct ops_options oo = {0};
	if (ops_analyze(c.t, &oo, &c.r) != 0) {
		tprof_err("%s", c.t->err);
		tprof_trace_close(c.t);
		return 2;
	}
	if (c.r.nrows) /* rows is NULL when there are none */
		tprof_sort(c.r.rows, c.r.nrows, sizeof(*c.r.rows), row_by_self);
	c.op_class = xcalloc(c.t->nop_names + 1, sizeof(uint32_t));
	for (uint32_t id = 0; id < c.t->nop_names; id++) {
		c.op_class[id] = NCLASS;
		for (size_t i = 0; c.t->op_names[id] && i < c.r.nrows; i++)
			if (strcmp(c.r.rows[i].name, c.t->op_names[id]) == 0 && (i < NCLASS - 1 || c.r.nrows <= NCLASS))
				c.op_class[id] = (uint32_t)i + 1;
	}
	for (size_t i = 0; i < c.r.nrows && i < NCLASS; i++)
		c.class_name[i + 1] = i < NCLASS - 1 || c.r.nrows <= NCLASS ? c.r.rows[i].name : NULL;
	c.span = trace_span(&c);
	tprof_roofline_get(&c.rf, TPROF_ROOFLINE_MEASURE);

	struct stat st;
	if (stat(c.dir, &st) != 0 && (errno != ENOENT || mkdir(c.dir, 0777) != 0)) {
		tprof_err("plot: cannot create the directory %s: %s", c.dir, strerror(errno));
		rc = PLOT_FAILED;
		goto out;
	} else if (stat(c.dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		tprof_err("plot: %s is not a directory", c.dir);
		rc = PLOT_FAILED;
		goto out;
	}
	static const char *const names[] = {"memory", "timeline", "ops", "roofline"};
	int (*const make[])(struct ctx *) = {plot_memory, plot_timeline, plot_ops, plot_roofline};
	/* a trace without kernel calls gets no empty pictures of them (the timeline stays for ranges) */
	int ranges = 0;
	for (size_t i = 0; i < c.t->nannots && !ranges; i++)
		ranges = c.t->annots[i].kind == TPROF_ANNOT_PUSH;
	int want[4] = {1, c.t->nkcalls > 0 || ranges, c.t->nkcalls > 0, c.t->nkcalls > 0};
	for (size_t i = 0; i < 4; i++) {
		if (want[i] && ((rc = make[i](&c)) != 0 || (rc = run_gnuplot(&c, gnuplot, names[i])) != 0))
			goto out;
	}
	for (size_t i = 0; i < 4; i++)
		if (want[i])
			printf("%s/%s.%s\n", c.dir, names[i], c.ext);
	if (!c.t->nkcalls) /* on stdout: it says what was made, like the names above */
		printf("(the trace has no kernel calls: no ops%s or roofline picture)\n", want[1] ? "" : ", timeline");
	rc = 0;
out:
	free(c.op_class);
	ops_free(&c.r);
	tprof_trace_close(c.t);
	return rc;
}
