/* tprof report: the summary of one trace. Heap totals counted the way valgrind memcheck's HEAP
 * SUMMARY counts them, the exact peak, what was in use at exit, the peak of the sampled resident set
 * size, per-function call counts, threads, lost events, how the process ended (exit status, signal)
 * and whether the trace is complete (or where it was cut), and whether the recorder intercepted
 * the program's malloc at all. Text for
 * people, --json for tools, --csv for spreadsheets (the summary as one row; --csv=threads the
 * threads). */
#include <inttypes.h>
#include <stdio.h>

#include "cmdline.h"
#include "cmds.h"
#include "heap.h"
#include "leakclass.h"
#include "reader.h"
#include "util.h"

/* How the process ended, as JSON's and CSV's "end" say it: the END block's reason, "none" when the
 * file has none. */
static const char *end_name(const struct tprof_trace *t)
{
	if (!t->ended)
		return "none";
	switch (t->end_reason) {
	case TPROF_END_EXIT:
		return "exit";
	case TPROF_END__EXIT:
		return "_exit";
	case TPROF_END_SIGNAL:
		return "fatal signal";
	case TPROF_END_EXEC:
		return "exec";
	case TPROF_END_QUICK_EXIT:
		return "quick_exit";
	case TPROF_END_VANISHED:
		return "vanished";
	}
	return "?"; /* the reader admits no other reason */
}

/* The process ended by a call that has an exit status (END's value). */
static int has_exit_status(const struct tprof_trace *t)
{
	return t->ended && (t->end_reason == TPROF_END_EXIT || t->end_reason == TPROF_END__EXIT ||
			    t->end_reason == TPROF_END_QUICK_EXIT);
}

/* The name of signal sig as Linux numbers signals on x86-64 and arm64 (the generic numbering), the
 * real-time ones counted from glibc's SIGRTMIN; NULL for a number that has none. */
static const char *signal_name(uint64_t sig, char *buf, size_t len)
{
	static const char *const names[] = {
		NULL,      "SIGHUP",  "SIGINT",    "SIGQUIT", "SIGILL",  "SIGTRAP",   "SIGABRT", "SIGBUS",
		"SIGFPE",  "SIGKILL", "SIGUSR1",   "SIGSEGV", "SIGUSR2", "SIGPIPE",   "SIGALRM", "SIGTERM",
		"SIGSTKFLT", "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN",   "SIGTTOU", "SIGURG",
		"SIGXCPU", "SIGXFSZ", "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO",    "SIGPWR",  "SIGSYS",
	};
	if (sig < sizeof(names) / sizeof(names[0]))
		return names[sig];
	if (sig >= 34 && sig <= 64) {
		snprintf(buf, len, "SIGRTMIN+%u", (unsigned)(sig - 34));
		return buf;
	}
	return NULL;
}

/* How the process ended, for people: "ended by exit (status 3)", "ended by fatal signal 11
 * (SIGSEGV)", ... */
static const char *end_text(const struct tprof_trace *t, char *buf, size_t len)
{
	char sb[32];
	const char *sn;
	if (!t->ended)
		return "incomplete: no end recorded (the process was killed, or the trace was cut short)";
	switch (t->end_reason) {
	case TPROF_END_SIGNAL:
		sn = signal_name(t->end_value, sb, sizeof(sb));
		snprintf(buf, len, "ended by fatal signal %" PRIu64 "%s%s%s", t->end_value, sn ? " (" : "",
			 sn ? sn : "", sn ? ")" : "");
		return buf;
	case TPROF_END_VANISHED:
		return "ended without an exit call (raw exit system call or killed)";
	case TPROF_END_EXEC:
		return "ended by exec";
	}
	if (has_exit_status(t))
		snprintf(buf, len, "ended by %s (status %" PRIu64 ")", end_name(t), t->end_value);
	else
		snprintf(buf, len, "ended by %s", end_name(t));
	return buf;
}

/* The largest RSS sample (the first of equals), or NULL when the trace has none. */
static const struct tprof_rss *peak_rss(const struct tprof_trace *t)
{
	const struct tprof_rss *best = NULL;
	for (size_t i = 0; i < t->nrss; i++)
		if (!best || t->rss[i].rss_bytes > best->rss_bytes)
			best = &t->rss[i];
	return best;
}

/* The totals of each leak kind among the blocks in use at exit (leakclass.c), computed once. */
struct kinds {
	struct leak_class lc;
	uint64_t bytes[LEAK_KINDS + 1], blocks[LEAK_KINDS + 1];
};

static void print_json(const struct tprof_trace *t, const struct heap_stats *s, const struct kinds *kd)
{
	const struct tprof_trace_info *in = &t->info;
	printf("{\"file\":");
	tprof_json_str(stdout, t->path);
	printf(",\"program\":");
	tprof_json_str(stdout, in->program);
	printf(",\"exe\":");
	tprof_json_str(stdout, in->exe);
	printf(",\"argv\":[");
	for (uint64_t i = 0; i < in->argc; i++) {
		if (i)
			putchar(',');
		tprof_json_str(stdout, in->argv[i]);
	}
	printf("],\"pid\":%" PRIu64 ",\"ppid\":%" PRIu64, in->pid, in->ppid);
	printf(",\"clock\":\"%s\"", in->clock == TPROF_CLOCK_TSC ? "tsc" : "monotonic");
	printf(",\"duration_ns\":%" PRIu64, cmd_trace_duration_ns(t));
	printf(",\"threads\":%zu", t->nthreads);
	printf(",\"events\":%" PRIu64, s->events);
	printf(",\"allocations\":%" PRIu64 ",\"frees\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64,
	       s->allocations, s->frees, s->bytes_allocated);
	printf(",\"peak_bytes\":%" PRIu64 ",\"peak_blocks\":%" PRIu64 ",\"peak_time_ns\":%" PRIu64,
	       s->peak_bytes, s->peak_blocks, s->peak_bytes ? tprof_trace_ns(t, s->peak_tick) : 0);
	const struct tprof_rss *r = peak_rss(t);
	if (r)
		printf(",\"peak_rss_bytes\":%" PRIu64 ",\"peak_rss_time_ns\":%" PRIu64, r->rss_bytes,
		       tprof_trace_ns(t, r->tick));
	else
		printf(",\"peak_rss_bytes\":null,\"peak_rss_time_ns\":null");
	printf(",\"rss_samples\":%zu", t->nrss);
	printf(",\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64, s->live_bytes, s->live_blocks);
	printf(",\"leaks_classified\":%s", kd->lc.classified ? "true" : "false");
	for (int k = LEAK_KINDS - 1; k >= 0; k--)
		if (kd->lc.classified)
			printf(",\"%s_bytes\":%" PRIu64 ",\"%s_blocks\":%" PRIu64, leak_kind_key(k), kd->bytes[k],
			       leak_kind_key(k), kd->blocks[k]);
		else
			printf(",\"%s_bytes\":null,\"%s_blocks\":null", leak_kind_key(k), leak_kind_key(k));
	printf(",\"not_classified\":");
	if (kd->lc.classified)
		printf("null");
	else
		tprof_json_str(stdout, kd->lc.why);
	printf(",\"unmatched_frees\":%" PRIu64 ",\"failed_allocations\":%" PRIu64, s->unmatched_frees,
	       s->failed);
	printf(",\"reused_live_addresses\":%" PRIu64, s->reused_live);
	printf(",\"lost_events\":%" PRIu64, t->lost_events);
	printf(",\"lossy\":%s", in->flags & TPROF_INFO_LOSSY ? "true" : "false");
	printf(",\"complete\":%s", t->complete ? "true" : "false");
	printf(",\"end\":");
	tprof_json_str(stdout, end_name(t));
	if (t->ended && t->end_reason == TPROF_END_SIGNAL)
		printf(",\"signal\":%" PRIu64, t->end_value);
	if (has_exit_status(t))
		printf(",\"exit_status\":%" PRIu64, t->end_value);
	else
		printf(",\"exit_status\":null");
	printf(",\"malloc_owner\":");
	tprof_json_str(stdout, in->malloc_owner);
	if (t->cut)
		printf(",\"cut_at_byte\":%" PRIu64, t->cut_at);
	else
		printf(",\"cut_at_byte\":null");
	printf(",\"calls\":{");
	for (unsigned k = 1; k <= TPROF_EV_KIND_MAX; k++)
		printf("%s\"%s\":%" PRIu64, k > 1 ? "," : "", tprof_event_name(k), s->calls[k]);
	printf("},\"thread_list\":[");
	for (size_t i = 0; i < t->nthreads; i++) {
		printf("%s{\"tid\":%u,\"name\":", i ? "," : "", t->threads[i].tid);
		tprof_json_str(stdout, t->threads[i].name);
		printf(",\"events\":%" PRIu64 ",\"lost\":%" PRIu64 "}", t->threads[i].events, t->threads[i].lost);
	}
	printf("]}\n");
}

/* The summary as one CSV row: the JSON's scalar fields, calls.NAME as calls_NAME, signal empty
 * unless a signal ended the run, null as an empty field. Columns added later go at the end, so
 * that a reader that takes them by position keeps working. */
static void print_csv_summary(const struct tprof_trace *t, const struct heap_stats *s, const struct kinds *kd)
{
	const struct tprof_trace_info *in = &t->info;
	printf("file,program,exe,pid,ppid,clock,duration_ns,threads,events,allocations,frees,bytes_allocated,"
	       "peak_bytes,peak_blocks,peak_time_ns,leaked_bytes,leaked_blocks,unmatched_frees,failed_allocations,"
	       "reused_live_addresses,lost_events,lossy,complete,end,signal");
	for (unsigned k = 1; k <= TPROF_EV_KIND_MAX; k++)
		printf(",calls_%s", tprof_event_name(k));
	printf(",peak_rss_bytes,peak_rss_time_ns,rss_samples,exit_status,malloc_owner,cut_at_byte,leaks_classified");
	for (int k = LEAK_KINDS - 1; k >= 0; k--)
		printf(",%s_bytes,%s_blocks", leak_kind_key(k), leak_kind_key(k));
	printf(TPROF_CSV_EOL);
	tprof_csv_str(stdout, t->path);
	putchar(',');
	tprof_csv_str(stdout, in->program);
	putchar(',');
	tprof_csv_str(stdout, in->exe);
	printf(",%" PRIu64 ",%" PRIu64 ",%s,%" PRIu64 ",%zu,%" PRIu64, in->pid, in->ppid,
	       in->clock == TPROF_CLOCK_TSC ? "tsc" : "monotonic", cmd_trace_duration_ns(t), t->nthreads, s->events);
	printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, s->allocations, s->frees,
	       s->bytes_allocated, s->peak_bytes, s->peak_blocks, s->peak_bytes ? tprof_trace_ns(t, s->peak_tick) : 0);
	printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%s,%s,", s->live_bytes,
	       s->live_blocks, s->unmatched_frees, s->failed, s->reused_live, t->lost_events,
	       in->flags & TPROF_INFO_LOSSY ? "true" : "false", t->complete ? "true" : "false");
	tprof_csv_str(stdout, end_name(t));
	putchar(',');
	if (t->ended && t->end_reason == TPROF_END_SIGNAL)
		printf("%" PRIu64, t->end_value);
	for (unsigned k = 1; k <= TPROF_EV_KIND_MAX; k++)
		printf(",%" PRIu64, s->calls[k]);
	const struct tprof_rss *r = peak_rss(t); /* empty fields without samples, as JSON's nulls */
	if (r)
		printf(",%" PRIu64 ",%" PRIu64 ",%zu", r->rss_bytes, tprof_trace_ns(t, r->tick), t->nrss);
	else
		printf(",,,0");
	putchar(',');
	if (has_exit_status(t))
		printf("%" PRIu64, t->end_value);
	putchar(',');
	tprof_csv_str(stdout, in->malloc_owner);
	putchar(',');
	if (t->cut)
		printf("%" PRIu64, t->cut_at);
	printf(",%s", kd->lc.classified ? "true" : "false");
	for (int k = LEAK_KINDS - 1; k >= 0; k--)
		if (kd->lc.classified)
			printf(",%" PRIu64 ",%" PRIu64, kd->bytes[k], kd->blocks[k]);
		else
			printf(",,");
	printf(TPROF_CSV_EOL);
}

static void print_csv_threads(const struct tprof_trace *t)
{
	printf("tid,name,events,lost" TPROF_CSV_EOL);
	for (size_t i = 0; i < t->nthreads; i++) {
		printf("%u,", t->threads[i].tid);
		tprof_csv_str(stdout, t->threads[i].name);
		printf(",%" PRIu64 ",%" PRIu64 TPROF_CSV_EOL, t->threads[i].events, t->threads[i].lost);
	}
}

static void print_text(const struct tprof_trace *t, const struct heap_stats *s, const struct kinds *kd)
{
	const struct tprof_trace_info *in = &t->info;
	char a[32], b[32], c[32];
	printf("tprof report: ");
	tprof_text_str(stdout, t->path, 0);
	printf("\n\n  program        ");
	tprof_text_str(stdout, in->program, 0);
	printf(" (pid %" PRIu64 ", parent %" PRIu64 ")\n", in->pid, in->ppid);
	printf("  command       ");
	for (uint64_t i = 0; i < in->argc && i < 16; i++) {
		putchar(' ');
		tprof_text_str(stdout, in->argv[i], 0);
	}
	printf("%s\n", in->argc > 16 ? " ..." : "");
	char end[128], note[256];
	printf("  duration       %s, %zu thread%s, %s\n", tprof_fmt_ns(cmd_trace_duration_ns(t), a), t->nthreads,
	       t->nthreads == 1 ? "" : "s", end_text(t, end, sizeof(end)));
	if (t->ended && (t->end_flags & TPROF_ENDF_INFLIGHT))
		printf("  incomplete     a thread was inside a heap call when the process ended: that call may "
		       "be missing\n");
	if (t->cut)
		printf("  incomplete     %s\n", tprof_trace_cut_note(t, note, sizeof(note)));
	printf("  events         %s recorded, %s lost%s\n", tprof_commas(s->events, a),
	       tprof_commas(t->lost_events, b),
	       t->lost_events ? (t->info.flags & TPROF_INFO_LOSSY
					 ? " (TOTALS BELOW UNDERCOUNT: lossy mode dropped events)"
					 : " (TOTALS BELOW UNDERCOUNT: events were dropped)")
			      : "");
	if (!s->events && in->malloc_owner[0]) {
		printf("  warning        no heap call was intercepted: the program's malloc is ");
		tprof_text_str(stdout, in->malloc_owner, 0);
		printf(" (the executable defines malloc itself, or another allocator was preloaded ahead of "
		       "libtprof.so)\n");
	}
	printf("\n  heap usage     %s allocs, %s frees, %s bytes allocated\n",
	       tprof_commas(s->allocations, a), tprof_commas(s->frees, b),
	       tprof_commas(s->bytes_allocated, c));
	printf("  peak           %s bytes (%s) in %s blocks, at %s\n", tprof_commas(s->peak_bytes, a),
	       tprof_fmt_bytes(s->peak_bytes, b), tprof_commas(s->peak_blocks, c),
	       tprof_fmt_ns(s->peak_bytes ? tprof_trace_ns(t, s->peak_tick) : 0, (char[32]){0}));
	printf("  in use at exit %s bytes in %s blocks\n", tprof_commas(s->live_bytes, a),
	       tprof_commas(s->live_blocks, b));
	if (kd->lc.classified) {
		for (int k = LEAK_KINDS - 1; k >= 0; k--)
			printf("    %-15s %s bytes in %s blocks\n", leak_kind_words(k), tprof_commas(kd->bytes[k], a),
			       tprof_commas(kd->blocks[k], b));
		if (kd->blocks[LEAK_LATE])
			printf("    %-15s %s bytes in %s blocks (allocated after the leak scan by threads still "
			       "running)\n", "no kind", tprof_commas(kd->bytes[LEAK_LATE], a),
			       tprof_commas(kd->blocks[LEAK_LATE], b));
	} else if (s->live_blocks) {
		printf("    not classified: %s\n", kd->lc.why);
	}
	const struct tprof_rss *r = peak_rss(t);
	if (r)
		printf("  peak RSS       %s bytes (%s), at %s, of %s samples\n", tprof_commas(r->rss_bytes, a),
		       tprof_fmt_bytes(r->rss_bytes, b), tprof_fmt_ns(tprof_trace_ns(t, r->tick), c),
		       tprof_commas(t->nrss, (char[32]){0}));
	if (s->unmatched_frees || s->failed || s->reused_live)
		printf("  anomalies      %" PRIu64 " frees of unknown blocks, %" PRIu64
		       " failed allocations, %" PRIu64 " reused live addresses\n",
		       s->unmatched_frees, s->failed, s->reused_live);
	printf("\n  calls         ");
	for (unsigned k = 1; k <= TPROF_EV_KIND_MAX; k++)
		if (s->calls[k])
			printf(" %s %s", tprof_event_name(k), tprof_commas(s->calls[k], a));
	printf("\n");
	if (t->nthreads > 1) {
		printf("\n  threads\n");
		for (size_t i = 0; i < t->nthreads; i++) {
			printf("    %-8u ", t->threads[i].tid);
			tprof_text_str(stdout, t->threads[i].name, -16);
			printf(" %s events%s\n", tprof_commas(t->threads[i].events, a),
			       t->threads[i].lost ? " (lost some)" : "");
		}
	}
}

int cmd_report(int argc, char **argv)
{
	static const char *const tables[] = {"summary", "threads", NULL};
	struct cmd_opts o = { .name = "report", .usage = "usage: tprof report [--json | --csv[=summary|threads]] FILE",
			      .accept = CMD_JSON | CMD_CSV, .csv_tables = tables };
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	struct tprof_trace *t = cmd_open_trace_unwarned(o.file); /* a cut is said in the report */
	if (!t)
		return 2;
	struct heap_stats s;
	rc = 0;
	if (heap_analyze(t, &s) < 0) {
		tprof_err("%s", t->err);
		rc = 2;
		goto out;
	}
	struct kinds kd;
	leak_class_init(&kd.lc, t, &s);
	leak_class_totals(&kd.lc, &s, kd.bytes, kd.blocks);
	if (o.json)
		print_json(t, &s, &kd);
	else if (o.csv == 1)
		print_csv_summary(t, &s, &kd);
	else if (o.csv == 2)
		print_csv_threads(t);
	else
		print_text(t, &s, &kd);
out:
	addrmap_free(&s.live);
	tprof_trace_close(t);
	return rc;
}
