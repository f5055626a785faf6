/* tprof peak: the exact peak of live requested bytes (the same peak as tprof report's) and what was
 * live at that moment, grouped by allocation stack, largest first. Two passes over the trace, so
 * that memory stays bounded by live blocks and distinct stacks: the first finds the sequence number
 * of the allocation that reached the peak, the second replays up to that event with stacks. --csv
 * lists the records of what was live. */
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
#include "base/util.h"

#define USAGE "usage: tprof peak [--json | --csv] [--top N] FILE"

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
			size_t n = len[depth];
			snprintf(path + n, cap - n, "%s%s", n ? "/" : "", name);
			len[++depth] = strlen(path);
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
	int json = o.json;
	size_t top = o.top;
	struct heap_stats peak;
	rc = stacks_find_peak(file, &peak);
	if (rc)
		return rc;

	struct tprof_trace *t = cmd_open_trace(file);
	if (!t)
		return 2;
	struct heap_stats s;
	struct stack_table tab;
	stack_table_init(&tab, t);
	struct stack_sym *ss = NULL;
	uint32_t *ids = NULL;
	if (stacks_replay_to_peak(t, &peak, &s, &tab) < 0) {
		tprof_err("%s", t->err);
		rc = 2;
		goto out;
	}
	size_t nrec;
	ids = stack_table_sorted(&tab, STACK_BY_BYTES, &nrec);
	ss = stack_sym_new(t);
	uint64_t when = peak.peak_bytes ? tprof_trace_ns(t, peak.peak_tick) : 0;
	size_t shown = top && top < nrec ? top : nrec;
	char a[32], b[32], c[32];
	long nsteps = 0, step = peak.peak_bytes ? peak_step(t, peak.peak_seq, &nsteps) : -2;
	char range[1024];
	peak_range(t, peak.peak_bytes ? peak.peak_seq : 0, peak.peak_tid, range, sizeof(range), 0);
	if (json) {
		printf("{\"peak_bytes\":%" PRIu64 ",\"peak_blocks\":%" PRIu64 ",\"peak_time_ns\":%" PRIu64
		       ",\"peak_seq\":%" PRIu64 ",\"peak_tid\":%u,\"peak_step\":",
		       peak.peak_bytes, peak.peak_blocks, when, peak.peak_bytes ? peak.peak_seq : 0,
		       peak.peak_bytes ? peak.peak_tid : 0);
		if (step >= 0 && step < nsteps)
			printf("%ld", step);
		else
			printf("null");
		printf(",\"peak_range\":");
		if (range[0])
			tprof_json_str(stdout, range);
		else
			printf("null");
		printf(",\"records\":%zu,\"live\":[", nrec);
	} else if (o.csv) {
		printf("bytes,blocks,truncated," STACK_CSV_HEADER TPROF_CSV_EOL);
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
		if (json) {
			printf("%s{\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"truncated\":%s,\"stack\":",
			       i ? "," : "", sc->bytes, sc->blocks, trunc ? "true" : "false");
			stack_print_json(stdout, fr, n);
			putchar('}');
		} else if (o.csv) {
			printf("%" PRIu64 ",%" PRIu64 ",%s,", sc->bytes, sc->blocks, trunc ? "true" : "false");
			stack_print_csv(stdout, fr, n);
			printf(TPROF_CSV_EOL);
		} else {
			printf("\n%s bytes in %s block%s (%.1f%% of the peak): record %zu of %zu\n",
			       tprof_commas(sc->bytes, a), tprof_commas(sc->blocks, b),
			       sc->blocks == 1 ? "" : "s",
			       100.0 * (double)sc->bytes / (double)peak.peak_bytes, i + 1, nrec);
			stack_print_text(stdout, fr, n, trunc, "    ");
		}
	}
	if (json)
		printf("]}\n");
	stack_sym_warn(ss);
out:
	free(ids);
	stack_sym_free(ss);
	heap_release(&s);
	stack_table_free(&tab);
	tprof_trace_close(t);
	return rc;
}
