/* tprof peak: the exact peak of live requested bytes (the same peak as tprof report's) and what was
 * live at that moment, grouped by allocation stack, largest first. Two passes over the trace, so
 * that memory stays bounded by live blocks and distinct stacks: the first finds the sequence number
 * of the allocation that reached the peak, the second replays up to that event with stacks. --json
 * and --csv are written through out/table.h; --csv lists the records of what was live. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/heap.h"
#include "trace/reader.h"
#include "analysis/stacks.h"
#include "out/frames.h"
#include "out/table.h"
#include "base/util.h"

#define USAGE "usage: tprof peak [--json | --csv] [--top N] FILE"

/* What was live at the peak, by allocation stack: JSON's "live", --csv's one table. Columns added
 * later go at the end, so that a reader that takes CSV columns by position keeps working. */
static const struct out_col live_cols[] = {
	{"bytes", OUT_U64, "bytes", NULL, NULL},
	{"blocks", OUT_U64, "blocks", NULL, NULL},
	{"truncated", OUT_BOOL, "", NULL, NULL},
	{"stack", OUT_STACK, "", NULL, NULL},
};
static const struct out_table live_table = {"live", "live", live_cols, OUT_NCOLS(live_cols), 0};

/* Where the peak fell: the step (0, 1, ... between the program's tprof_step boundaries; -1 before
 * the first, nsteps after the last) and the innermost range open on the thread that allocated
 * (its path, "" when none; a pool thread in an OpenMP region that has none gets the opening thread's
 * range at the fork), from the annotations before the peak's event. */
static long peak_step(const struct tprof_trace *t, uint64_t seq, long *nsteps)
{
	long before = 0, all = 0;
	for (size_t i = 0; i < t->nannots; i++)
		if (t->annots[i].kind == TPROF_ANNOT_STEP) {
			all++;
			before += t->annots[i].seq < seq;
		}
	*nsteps = all > 0 ? all - 1 : 0;
	return all == 0 ? -2 : before - 1;
}

static void peak_range(const struct tprof_trace *t, uint64_t seq, uint32_t tid, char *path, size_t cap, int hops)
{
	size_t len[65], depth = 0, folded = 0, nreg = 0;
	int64_t region[64]; /* the OpenMP regions the thread is running, innermost last */
	path[0] = 0;
	len[0] = 0;
	for (size_t i = 0; i < t->nannots && t->annots[i].seq < seq; i++) {
		const struct tprof_annot *a = &t->annots[i];
		if (a->tid != tid)
			continue;
		if (a->kind == TPROF_ANNOT_OMP_BEGIN && nreg < 64)
			region[nreg++] = a->value;
		else if (a->kind == TPROF_ANNOT_OMP_END && nreg)
			nreg--;
		if (a->kind == TPROF_ANNOT_PUSH) {
			if (depth == 64) {
				folded++;
				continue;
			}
			const char *name = a->name && a->name < t->nannot_names && t->annot_names[a->name]
						   ? t->annot_names[a->name] : "?";
			/* as tprof ops names ranges: a '/' of a name is written "\/" (and a '\' "\\"), so
			 * that a range "a/b" is not "b" inside "a" */
			char *p = path + len[depth], *end = path + cap - 1;
			if (len[depth] && p < end)
				*p++ = '/';
			for (const char *c = name; *c && p < end; c++) {
				if (*c == '/' || *c == '\\') {
					if (p + 1 >= end)
						break; /* full: cut before the pair, never in it */
					*p++ = '\\';
				}
				*p++ = *c;
			}
			*p = 0;
			len[++depth] = (size_t)(p - path);
		} else if (a->kind == TPROF_ANNOT_POP) {
			if (folded)
				folded--;
			else if (depth)
				path[len[--depth]] = 0;
		}
	}
	/* no range of its own inside a region another thread opened: that thread's, at the fork */
	if (!depth && nreg && hops < 8)
		for (size_t i = 0; i < t->nannots && t->annots[i].seq < seq; i++) {
			const struct tprof_annot *a = &t->annots[i];
			if (a->kind == TPROF_ANNOT_OMP_FORK && a->value == region[nreg - 1]) {
				if (a->tid != tid)
					peak_range(t, a->seq, a->tid, path, cap, hops + 1);
				break;
			}
		}
}

int cmd_peak(int argc, char **argv)
{
	struct cmd_opts o = { .name = "peak", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP };
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	const char *file = o.file;
	int tables = o.json || o.csv; /* else text */
	size_t top = o.top;
	struct heap_stats peak, s;
	struct stack_table tab;
	struct tprof_trace *t = cmd_open_at_peak(file, &peak, &s, &tab);
	if (!t)
		return 2;
	struct stack_sym *ss = NULL;
	uint32_t *ids = NULL;
	size_t nrec;
	ids = stack_table_sorted(&tab, STACK_BY_BYTES, &nrec);
	ss = stack_sym_new(t);
	uint64_t when = peak.peak_bytes ? tprof_trace_ns(t, peak.peak_tick) : 0;
	size_t shown = top && top < nrec ? top : nrec;
	char a[32], b[32], c[32];
	long nsteps = 0, step = peak.peak_bytes ? peak_step(t, peak.peak_seq, &nsteps) : -2;
	char range[1024];
	peak_range(t, peak.peak_bytes ? peak.peak_seq : 0, peak.peak_tid, range, sizeof(range), 0);
	struct out w;
	if (tables) {
		cmd_out_begin(&w, &o);
		out_key(&w, "peak_bytes");
		out_u64(&w, peak.peak_bytes);
		out_key(&w, "peak_blocks");
		out_u64(&w, peak.peak_blocks);
		out_key(&w, "peak_time_ns");
		out_u64(&w, when);
		out_key(&w, "peak_seq");
		out_u64(&w, peak.peak_bytes ? peak.peak_seq : 0);
		out_key(&w, "peak_tid");
		out_u64(&w, peak.peak_bytes ? peak.peak_tid : 0);
		out_key(&w, "peak_step");
		if (step >= 0 && step < nsteps)
			out_u64(&w, (uint64_t)step);
		else
			out_null(&w);
		out_key(&w, "peak_range");
		out_str(&w, range[0] ? range : NULL);
		out_key(&w, "records");
		out_u64(&w, nrec);
		out_table_begin(&w, &live_table);
	} else {
		printf("tprof peak: ");
		tprof_text_str(stdout, t->path, 0);
		printf(" (");
		tprof_text_str(stdout, t->info.program, 0);
		printf(", pid %" PRIu64 ")\n\n", t->info.pid);
		printf("peak: %s bytes (%s) in %s blocks, at %s (event %" PRIu64 ")\n",
		       tprof_commas(peak.peak_bytes, a), tprof_fmt_bytes(peak.peak_bytes, b),
		       tprof_commas(peak.peak_blocks, c), tprof_fmt_ns(when, (char[32]){0}),
		       peak.peak_bytes ? peak.peak_seq : 0);
		if (peak.peak_bytes && (step != -2 || range[0])) {
			printf("  in ");
			if (step >= 0 && step < nsteps)
				printf("step %ld of %ld", step, nsteps);
			else if (step == -1)
				printf("no step (before the first step boundary)");
			else if (step != -2)
				printf("no step (after the last step boundary)");
			if (range[0]) {
				printf("%srange ", step != -2 ? ", " : "");
				tprof_text_str(stdout, range, 0);
			}
			printf(" (thread %u)\n", peak.peak_tid);
		}
		if (nrec)
			printf("live at the peak, by allocation stack%s:\n",
			       shown < nrec ? " (the largest; --top)" : "");
	}
	for (size_t i = 0; i < shown; i++) {
		const struct stack_cost *sc = &tab.cost[ids[i]];
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, ids[i], sc->seq, &n, &trunc);
		if (tables) {
			out_row_begin(&w);
			out_u64(&w, sc->bytes);
			out_u64(&w, sc->blocks);
			out_bool(&w, trunc);
			out_stack(&w, fr, n);
			out_row_end(&w);
		} else {
			printf("\n%s bytes in %s block%s (%.1f%% of the peak): record %zu of %zu\n",
			       tprof_commas(sc->bytes, a), tprof_commas(sc->blocks, b),
			       sc->blocks == 1 ? "" : "s",
			       100.0 * (double)sc->bytes / (double)peak.peak_bytes, i + 1, nrec);
			stack_print_text(stdout, fr, n, trunc, "    ");
		}
	}
	if (tables) {
		out_table_end(&w);
		out_end(&w); /* a failed write is reported by main (tprof.c), as for every command */
	}
	stack_sym_warn(ss);
	free(ids);
	stack_sym_free(ss);
	heap_release(&s);
	stack_table_free(&tab);
	tprof_trace_close(t);
	return 0;
}
