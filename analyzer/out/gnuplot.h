/* What the four pictures of `tprof plot` share (out/plot_memory.c, plot_timeline.c, plot_ops.c,
 * plot_roofline.c): their sizes and colour classes, the context the command fills (the trace, its
 * op table, the roofline), and the writing of gnuplot scripts and data files. Safe by
 * construction: the scripts contain no string from the trace; every such string is a field of the
 * .dat files (plot_gp_field), which gnuplot reads as text and never as a command. Each picture
 * writes NAME.gp and NAME.dat into the directory and returns 0, or -1 with the reason in c->err;
 * the command runs gnuplot on them (docs/PLOT.md). */
#ifndef TPROF_GNUPLOT_H
#define TPROF_GNUPLOT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/ops.h"
#include "analysis/plot.h"
#include "analysis/roofline.h"
#include "trace/reader.h"

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

struct plot_ctx {
	const char *file, *dir, *ext;
	int svg;
	struct tprof_trace *t; /* kernel calls, annotations and names; its heap events are read */
	struct ops_result r;   /* op rows, most self time first */
	struct tprof_roofline rf;
	uint64_t span;         /* ns from time zero to the last thing recorded */
	uint32_t *op_class;    /* per op id of the trace: its colour class, 1..NCLASS */
	const char *class_name[NCLASS + 1]; /* NULL: "other ops" */
	/* The trace at path opened once more (the heap replays read it from the start), or NULL
	 * after saying why: the command's cmd_open_trace. */
	struct tprof_trace *(*open_again)(const char *path);
	char err[600]; /* why a picture could not be written ("" when open_again said it) */
};


/* The pictures. */
int plot_memory(struct plot_ctx *c);
int plot_timeline(struct plot_ctx *c);
int plot_ops(struct plot_ctx *c);
int plot_roofline(struct plot_ctx *c);

/* Ops, most self time first; ties by name, so that the colours do not depend on the file order. */
int plot_row_by_self(const void *a, const void *b);

/* ---- shared by the pictures ---- */

/* Sets c->err (a picture failed). */
void plot_fail(struct plot_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Nanoseconds since time zero of a tick. */
uint64_t plot_ns_of(const struct plot_ctx *c, uint64_t tick);
/* ns as seconds with 9 decimals, into buf (32 bytes). */
const char *plot_secs(uint64_t ns, char *buf);
/* The step boundaries as a data block, no two closer than STEP_PX pixels of plot_px: the count
 * drawn; *nsteps the boundaries in all, *every their ratio to those drawn. */
size_t plot_write_steps(FILE *f, const struct plot_ctx *c, int plot_px, size_t *nsteps, size_t *every);
/* The key's title of the step lines ("step boundary", "step boundary (51 of 101 shown)"). */
const char *plot_steps_title(char *buf, size_t n, size_t nsteps, size_t drawn);
/* DIR/NAME.EXT opened for writing (path receives it, PATH_MAX bytes); NULL with c->err set. */
FILE *plot_out_open(struct plot_ctx *c, const char *name, const char *ext, char *path);
/* Closes f: 0, or -1 with c->err set when anything could not be written. */
int plot_out_close(struct plot_ctx *c, FILE *f, const char *path);
/* The first lines of a script: what it draws, how to re-run it, the terminal and the colours. */
void plot_gp_preamble(FILE *f, const struct plot_ctx *c, const char *name, const char *what, int w, int h);
void plot_gp_margins(FILE *f, int w, int h, int l, int r, int top, int bottom);
void plot_gp_key_below(FILE *f, int h, int entries);
/* The first lines of a data file, and the trace's description in it. */
void plot_dat_header(FILE *f, const char *what);
void plot_dat_meta(FILE *f, const struct plot_ctx *c);
/* The characters gnuplot shows of a data-file string. */
size_t plot_shown_chars(const char *s);
/* The script's time axis unit for a span (ns). */
void plot_time_unit(FILE *f, uint64_t span);

/* ---- strings ---- */

/* Room for plot_gp_text of up to PLOT_TEXT_CHARS characters: at most 7 bytes each, and the cut mark. */
#define PLOT_TEXT_CHARS 60
#define PLOT_TEXT_SIZE (7 * PLOT_TEXT_CHARS + 16)

/* Writes into buf (PLOT_TEXT_SIZE bytes) the inside of a double-quoted gnuplot data-file field that
 * gnuplot's data reader turns back into a readable form of s, at most PLOT_TEXT_CHARS characters
 * (a longer s is cut and ends with "..."). The result holds only printable ASCII other than '"' and
 * '\', backslash escapes that gnuplot decodes ("\042" for '"', "\134" for '\'), and valid UTF-8 of
 * printable characters: so the field can neither end early nor span lines, and it shows control
 * characters as the text \n, \r, \t or \xNN and any byte that is not valid UTF-8 (or a code point
 * that XML forbids) as U+FFFD. An empty or NULL s gives "". Returns buf. */
const char *plot_gp_text(char *buf, const char *s);

/* Writes s as one double-quoted field (plot_gp_text) to f. */
void plot_gp_field(FILE *f, const char *s);

#endif
