/* tprof peak: the exact peak of live requested bytes (the same peak as tprof report's) and what was
 * live at that moment, grouped by allocation stack, largest first. Two passes over the trace, so
 * that memory stays bounded by live blocks and distinct stacks: the first finds the sequence number
 * of the allocation that reached the peak, the second replays up to that event with stacks. --csv
 * lists the records of what was live. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "cmdline.h"
#include "cmds.h"
#include "heap.h"
#include "reader.h"
#include "stacks.h"
#include "util.h"

#define USAGE "usage: tprof peak [--json | --csv] [--top N] FILE"

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
	if (json) {
		printf("{\"peak_bytes\":%" PRIu64 ",\"peak_blocks\":%" PRIu64 ",\"peak_time_ns\":%" PRIu64
		       ",\"peak_seq\":%" PRIu64 ",\"records\":%zu,\"live\":[",
		       peak.peak_bytes, peak.peak_blocks, when, peak.peak_bytes ? peak.peak_seq : 0, nrec);
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
