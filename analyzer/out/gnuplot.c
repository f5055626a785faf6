/* Implementation of the shared part of out/gnuplot.h: scripts' preambles, data files' headers,
 * the step boundaries and the files themselves. */
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

uint64_t plot_ns_of(const struct plot_ctx *c, uint64_t tick)
{
	return tprof_trace_ns(c->t, tick);
}

/* Seconds with nanosecond precision, exactly: "12.000345678". */
const char *plot_secs(uint64_t ns, char *buf)
{
	snprintf(buf, 32, "%" PRIu64 ".%09" PRIu64, ns / 1000000000u, ns % 1000000000u);
	return buf;
}

/* The step boundaries (tprof_step) drawn on a plot area plot_px pixels wide (the x axis from 0 to
 * c->span): each one STEP_PX pixels or more after the last drawn, the first always (the most lines
 * that can be drawn that far apart, whatever the steps' lengths). Writes their seconds, one per line
 * ("NaN" if none), and returns how many it wrote; *nsteps is how many there are, *every their ratio
 * to those drawn, rounded up (1: every one). */
size_t plot_write_steps(FILE *f, const struct plot_ctx *c, int plot_px, size_t *nsteps, size_t *every)
{
	const struct tprof_trace *t = c->t;
	size_t n = 0, drawn = 0;
	char a[32];
	/* the least distance between two lines, in ns: STEP_PX pixels of the span */
	double gap = plot_px > 0 ? (double)c->span * STEP_PX / plot_px : 0;
	uint64_t last = 0;
	for (size_t i = 0; i < t->nannots; i++) {
		if (t->annots[i].kind != TPROF_ANNOT_STEP)
			continue;
		n++;
		uint64_t ns = plot_ns_of(c, t->annots[i].tick);
		if (drawn && (double)(ns - (ns > last ? last : ns)) < gap)
			continue;
		fprintf(f, "%s\n", plot_secs(ns, a));
		last = ns;
		drawn++;
	}
	*nsteps = n;
	*every = drawn ? (n + drawn - 1) / drawn : 1;
	if (!drawn)
		fprintf(f, "NaN\n");
	return drawn;
}

/* The key's words for the step lines write_steps drew. */
const char *plot_steps_title(char *buf, size_t n, size_t nsteps, size_t drawn)
{
	if (drawn < nsteps)
		snprintf(buf, n, "step boundary (%zu of %zu shown)", drawn, nsteps);
	else
		snprintf(buf, n, "step boundary");
	return buf;
}

void plot_fail(struct plot_ctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

FILE *plot_out_open(struct plot_ctx *c, const char *name, const char *ext, char *path)
{
	snprintf(path, PATH_MAX, "%s/%s.%s", c->dir, name, ext);
	if (tprof_same_file(path, c->file)) {
		plot_fail(c, "plot: %s is the trace being read: not written over", path);
		return NULL;
	}
	FILE *f = fopen(path, "w");
	if (!f)
		plot_fail(c, "plot: cannot write %s: %s", path, strerror(errno));
	return f;
}

int plot_out_close(struct plot_ctx *c, FILE *f, const char *path)
{
	int bad = ferror(f);
	if (fclose(f) != 0 || bad) {
		plot_fail(c, "plot: cannot write %s: %s", path, strerror(errno ? errno : EIO));
		return -1;
	}
	return 0;
}

/* The first lines of a script: what it draws, how to re-run it, the terminal and the colours. */
void plot_gp_preamble(FILE *f, const struct plot_ctx *c, const char *name, const char *what, int w, int h)
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

void plot_gp_margins(FILE *f, int w, int h, int l, int r, int top, int bottom)
{
	fprintf(f, "set lmargin at screen %.6f; set rmargin at screen %.6f\n", (double)l / w, 1.0 - (double)r / w);
	if (top && bottom)
		fprintf(f, "set tmargin at screen %.6f; set bmargin at screen %.6f\n", 1.0 - (double)top / h,
			(double)bottom / h);
}

/* The key under the x axis's label, in as many columns as fit (room is kept for three). */
void plot_gp_key_below(FILE *f, int h, int entries)
{
	int rows = (entries + 2) / 3, bottom = rows * 19 + 62;
	fprintf(f, "set key at screen 0.5, screen %.6f center top horizontal maxcols 5 samplen 1.8 spacing 1.15 "
		   "width 2\nset bmargin at screen %.6f\n",
		(bottom - 56.0) / h, (double)bottom / h);
}

/* Block 0 of every .dat: the pid and the program's name. */
void plot_dat_header(FILE *f, const char *what)
{
	fprintf(f, "# tprof plot: %s\n# Blocks are separated by two blank lines (gnuplot: index N); strings are "
		   "double-quoted, with gnuplot's escapes.\n",
		what);
	fprintf(f, "# index 0: pid, program name\n");
}

void plot_dat_meta(FILE *f, const struct plot_ctx *c)
{
	fprintf(f, "%" PRIu64 " ", c->t->info.pid);
	plot_gp_field(f, c->t->info.program && *c->t->info.program ? c->t->info.program : "?");
	fprintf(f, "\n\n\n");
}

/* Characters shown of a name (plot_gp_text cuts at PLOT_TEXT_CHARS). */
size_t plot_shown_chars(const char *s)
{
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += (*p & 0xc0) != 0x80;
	return n > PLOT_TEXT_CHARS ? PLOT_TEXT_CHARS : n;
}

/* A unit for the time axis of a span of ns: seconds, or milliseconds below one second. */
void plot_time_unit(FILE *f, uint64_t span)
{
	if (span < 1000000000u)
		fprintf(f, "tscale = 1e3; tunit = \"ms\"\n");
	else
		fprintf(f, "tscale = 1; tunit = \"s\"\n");
}

/* ---- strings ---- */


/* Appends the form of one character of the input: at most 7 bytes. */
static size_t put_char(char *o, const unsigned char *s, long cp, int len)
{
	if (cp < 0 || (cp >= 0x80 && cp < 0xa0) || cp == 0xfffe || cp == 0xffff) {
		memcpy(o, "\xef\xbf\xbd", 3); /* U+FFFD */
		return 3;
	}
	if (cp == '"')
		return (size_t)sprintf(o, "\\042");
	if (cp == '\\')
		return (size_t)sprintf(o, "\\134");
	/* Control characters are shown, not obeyed: a backslash (escaped for gnuplot) and a letter. */
	if (cp == '\n')
		return (size_t)sprintf(o, "\\134n");
	if (cp == '\r')
		return (size_t)sprintf(o, "\\134r");
	if (cp == '\t')
		return (size_t)sprintf(o, "\\134t");
	if (cp < 0x20 || cp == 0x7f)
		return (size_t)sprintf(o, "\\134x%02x", (unsigned)cp);
	memcpy(o, s, (size_t)len);
	return (size_t)len;
}

const char *plot_gp_text(char *buf, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	size_t chars = 0;
	int len;
	for (const unsigned char *p = s; *p; p += len)
		tprof_utf8_next(p, &len), chars++;
	size_t limit = chars > PLOT_TEXT_CHARS ? PLOT_TEXT_CHARS - 3 : chars, o = 0;
	for (size_t i = 0; i < limit; i++) {
		long cp = tprof_utf8_next(s, &len);
		o += put_char(buf + o, s, cp, len);
		s += len;
	}
	if (limit < chars)
		o += (size_t)sprintf(buf + o, "...");
	buf[o] = 0;
	return buf;
}

void plot_gp_field(FILE *f, const char *s)
{
	char buf[PLOT_TEXT_SIZE];
	fprintf(f, "\"%s\"", plot_gp_text(buf, s));
}
