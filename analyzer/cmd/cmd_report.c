/* tprof report: the summary of one trace. Heap totals counted the way valgrind memcheck's HEAP
 * SUMMARY counts them, the exact peak, what was in use at exit, the peak of the sampled resident set
 * size, per-function call counts, threads, lost events, how the process ended (exit status, signal)
 * and whether the trace is complete (or where it was cut), and whether the recorder intercepted
 * the program's malloc at all. Text for
 * people, --json for tools, --csv for spreadsheets (the summary as one row; --csv=threads the
 * threads). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/heap.h"
#include "analysis/leakclass.h"
#include "trace/reader.h"
#include "base/util.h"
#include "out/table.h"

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

/* The threads of the trace: every thread id, and each time the kernel gave an id again to a new
 * thread after the one before had ended. */
static size_t thread_count(const struct tprof_trace *t)
{
	size_t n = t->nthreads;
	for (size_t i = 0; i < t->nthreads; i++)
		n += t->threads[i].reused;
	return n;
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

/* The summary: one row, JSON's top level and --csv's one record. Columns added later go at the end,
 * so that a reader that takes CSV columns by position keeps working. */
static struct out_col summary_cols[64];
static struct out_table summary_table = {"summary", NULL, summary_cols, 0, OUT_INLINE};
static char summary_names[2 * (LEAK_KINDS + 1)][40];

static void add_col(const char *name, enum out_type type, const char *unit, const char *group)
{
	summary_cols[summary_table.ncols++] = (struct out_col){name, type, unit, NULL, group};
}

static void declare_summary(void)
{
	if (summary_table.ncols)
		return;
	add_col("file", OUT_STR, "", NULL);
	add_col("program", OUT_STR, "", NULL);
	add_col("exe", OUT_STR, "", NULL);
	add_col("argv", OUT_LIST, "", NULL);
	add_col("pid", OUT_U64, "", NULL);
	add_col("ppid", OUT_U64, "", NULL);
	add_col("clock", OUT_STR, "", NULL);
	add_col("duration_ns", OUT_U64, "ns", NULL);
	add_col("threads", OUT_U64, "threads", NULL);
	add_col("events", OUT_U64, "events", NULL);
	add_col("allocations", OUT_U64, "calls", NULL);
	add_col("frees", OUT_U64, "calls", NULL);
	add_col("bytes_allocated", OUT_U64, "bytes", NULL);
	add_col("peak_bytes", OUT_U64, "bytes", NULL);
	add_col("peak_blocks", OUT_U64, "blocks", NULL);
	add_col("peak_time_ns", OUT_U64, "ns", NULL);
	add_col("leaked_bytes", OUT_U64, "bytes", NULL);
	add_col("leaked_blocks", OUT_U64, "blocks", NULL);
	add_col("unmatched_frees", OUT_U64, "calls", NULL);
	add_col("failed_allocations", OUT_U64, "calls", NULL);
	add_col("reused_live_addresses", OUT_U64, "calls", NULL);
	add_col("lost_events", OUT_U64, "events", NULL);
	add_col("lossy", OUT_BOOL, "", NULL);
	add_col("complete", OUT_BOOL, "", NULL);
	add_col("end", OUT_STR, "", NULL);
	add_col("signal", OUT_U64, "", NULL);
	for (unsigned k = 1; k <= TPROF_EV_KIND_MAX; k++)
		add_col(tprof_event_name(k), OUT_U64, "calls", "calls");
	add_col("peak_rss_bytes", OUT_U64, "bytes", NULL);
	add_col("peak_rss_time_ns", OUT_U64, "ns", NULL);
	add_col("rss_samples", OUT_U64, "samples", NULL);
	add_col("exit_status", OUT_U64, "", NULL);
	add_col("malloc_owner", OUT_STR, "", NULL);
	add_col("cut_at_byte", OUT_U64, "bytes", NULL);
	add_col("reserve_failed", OUT_BOOL, "", NULL);
	add_col("seccomp", OUT_BOOL, "", NULL);
	add_col("leaks_classified", OUT_BOOL, "", NULL);
	for (int k = LEAK_KINDS - 1, n = 0; k >= 0; k--, n += 2) {
		snprintf(summary_names[n], sizeof(summary_names[n]), "%s_bytes", leak_kind_key(k));
		snprintf(summary_names[n + 1], sizeof(summary_names[n + 1]), "%s_blocks", leak_kind_key(k));
		add_col(summary_names[n], OUT_U64, "bytes", NULL);
		add_col(summary_names[n + 1], OUT_U64, "blocks", NULL);
	}
	add_col("not_classified", OUT_STR, "", NULL);
	add_col("peak_rss_includes_tprof", OUT_BOOL, "", NULL);
	add_col("unfinished_call", OUT_BOOL, "", NULL);
	add_col("new_unhooked", OUT_BOOL, "", NULL);
	add_col("deepbind", OUT_BOOL, "", NULL);
}

static const struct out_col thread_cols[] = {
	{"tid", OUT_U64, "", NULL, NULL},
	{"name", OUT_STR, "", NULL, NULL},
	{"events", OUT_U64, "events", NULL, NULL},
	{"lost", OUT_U64, "events", NULL, NULL},
};
static const struct out_table thread_table = {"threads", "thread_list", thread_cols, OUT_NCOLS(thread_cols), 0};

static void put_opt(struct out *w, int has, uint64_t v)
{
	if (has)
		out_u64(w, v);
	else
		out_null(w);
}

static int print_tables(const struct cmd_opts *o, const struct tprof_trace *t, const struct heap_stats *s,
			const struct kinds *kd)
{
	const struct tprof_trace_info *in = &t->info;
	struct out w;
	declare_summary();
	cmd_out_begin(&w, o);
	out_table_begin(&w, &summary_table);
	out_row_begin(&w);
	out_str(&w, t->path);
	out_str(&w, in->program);
	out_str(&w, in->exe);
	out_list(&w, (const char *const *)in->argv, in->argc);
	out_u64(&w, in->pid);
	out_u64(&w, in->ppid);
	out_str(&w, in->clock == TPROF_CLOCK_TSC ? "tsc" : "monotonic");
	out_u64(&w, cmd_trace_duration_ns(t));
	out_u64(&w, thread_count(t));
	out_u64(&w, s->events);
	out_u64(&w, s->allocations);
	out_u64(&w, s->frees);
	out_u64(&w, s->bytes_allocated);
	out_u64(&w, s->peak_bytes);
	out_u64(&w, s->peak_blocks);
	out_u64(&w, s->peak_bytes ? tprof_trace_ns(t, s->peak_tick) : 0);
	out_u64(&w, s->live_bytes);
	out_u64(&w, s->live_blocks);
	out_u64(&w, s->unmatched_frees);
	out_u64(&w, s->failed);
	out_u64(&w, s->reused_live);
	out_u64(&w, t->lost_events);
	out_bool(&w, in->flags & TPROF_INFO_LOSSY);
	out_bool(&w, t->complete);
	out_str(&w, end_name(t));
	put_opt(&w, t->ended && t->end_reason == TPROF_END_SIGNAL, t->end_value);
	for (unsigned k = 1; k <= TPROF_EV_KIND_MAX; k++)
		out_u64(&w, s->calls[k]);
	const struct tprof_rss *r = peak_rss(t);
	put_opt(&w, r != NULL, r ? r->rss_bytes : 0);
	put_opt(&w, r != NULL, r ? tprof_trace_ns(t, r->tick) : 0);
	out_u64(&w, t->nrss);
	put_opt(&w, has_exit_status(t), t->end_value);
	out_str(&w, in->malloc_owner);
	put_opt(&w, t->cut, t->cut_at);
	out_bool(&w, t->ended && (t->end_flags & TPROF_ENDF_RESERVE));
	out_bool(&w, t->ended && (t->end_flags & TPROF_ENDF_SECCOMP));
	out_bool(&w, kd->lc.classified);
	for (int k = LEAK_KINDS - 1; k >= 0; k--) {
		put_opt(&w, kd->lc.classified, kd->bytes[k]);
		put_opt(&w, kd->lc.classified, kd->blocks[k]);
	}
	out_str(&w, kd->lc.classified ? NULL : kd->lc.why);
	out_bool(&w, r != NULL && tprof_rss_has_own(t));
	out_bool(&w, t->ended && (t->end_flags & TPROF_ENDF_INCALL));
	out_bool(&w, t->ended && (t->end_flags & TPROF_ENDF_NEW_UNHOOKED));
	out_bool(&w, t->ended && (t->end_flags & TPROF_ENDF_DEEPBIND));
	out_row_end(&w);
	out_table_end(&w);

	out_table_begin(&w, &thread_table);
	for (size_t i = 0; i < t->nthreads; i++) {
		out_row_begin(&w);
		out_u64(&w, t->threads[i].tid);
		out_str(&w, t->threads[i].name);
		out_u64(&w, t->threads[i].events);
		out_u64(&w, t->threads[i].lost);
		out_row_end(&w);
	}
	out_table_end(&w);
	return out_end(&w);
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
	printf("  duration       %s, %zu thread%s, %s\n", tprof_fmt_ns(cmd_trace_duration_ns(t), a), thread_count(t),
	       thread_count(t) == 1 ? "" : "s", end_text(t, end, sizeof(end)));
	if (t->ended && (t->end_flags & TPROF_ENDF_INFLIGHT))
		printf("  incomplete     %s\n", tprof_trace_inflight_note(t));
	if (t->ended && (t->end_flags & TPROF_ENDF_INCALL))
		printf("  unfinished     a thread was inside a heap call when the process ended: the call never "
		       "returned to the program\n");
	if (t->cut)
		printf("  incomplete     %s\n", tprof_trace_cut_note(t, note, sizeof(note)));
	printf("  events         %s recorded, %s lost%s\n", tprof_commas(s->events, a),
	       tprof_commas(t->lost_events, b),
	       t->lost_events ? (t->info.flags & TPROF_INFO_LOSSY
					 ? " (TOTALS BELOW UNDERCOUNT: lossy mode dropped events)"
					 : " (TOTALS BELOW UNDERCOUNT: events were dropped)")
			      : "");
	if (t->ended && (t->end_flags & TPROF_ENDF_RESERVE))
		printf("  warning        memory for call stacks or a thread's ring was refused (an address space, "
		       "locked memory or file size limit, or a tool such as valgrind around the program): fewer "
		       "distinct stacks, allocations without one, smaller rings, or events lost (counted)\n");
	if (t->ended && (t->end_flags & TPROF_ENDF_NEW_UNHOOKED))
		printf("  warning        C++ new and delete were an allocator's that serves them without malloc "
		       "(one preloaded after libtprof.so: tcmalloc, jemalloc, mimalloc): they are not in the "
		       "totals (TOTALS BELOW UNDERCOUNT)\n");
	if (t->ended && (t->end_flags & TPROF_ENDF_DEEPBIND))
		printf("  warning        a library was loaded with RTLD_DEEPBIND: its heap calls went straight to "
		       "the C library's and are not in the totals (TOTALS BELOW UNDERCOUNT)\n");
	if (t->ended && (t->end_flags & TPROF_ENDF_SECCOMP))
		printf("  note           the process installed a seccomp filter: from then on tprof made no call "
		       "it might forbid (no scan of leaks, no resident size at the end; stacks that reach "
		       "unchecked stack pages are cut), and its fork children were not traced\n");
	const char *owner_base = strrchr(in->malloc_owner, '/');
	owner_base = owner_base ? owner_base + 1 : in->malloc_owner;
	if (strncmp(owner_base, "vgpreload_", 10) == 0) {
		/* whatever reached tprof came by a name the tool does not replace (reallocarray) */
		printf("  warning        the heap functions were a valgrind tool's (");
		tprof_text_str(stdout, in->malloc_owner, 0);
		printf("), on its own heap: only calls by names it does not replace reached tprof "
		       "(TOTALS BELOW UNDERCOUNT)\n");
	} else if (!s->events && in->malloc_owner[0]) {
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
		printf("  peak RSS       %s bytes (%s), at %s, of %s samples%s\n", tprof_commas(r->rss_bytes, a),
		       tprof_fmt_bytes(r->rss_bytes, b), tprof_fmt_ns(tprof_trace_ns(t, r->tick), c),
		       tprof_commas(t->nrss, (char[32]){0}), tprof_rss_has_own(t) ? " (tprof's shared memory included)" : "");
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
	struct tprof_trace *t = cmd_open_trace_unwarned_flags(o.file, TPROF_OPEN_HEAP_ONLY); /* a cut is said in the report */
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
	if (o.json || o.csv)
		print_tables(&o, t, &s, &kd);
	else
		print_text(t, &s, &kd);
out:
	heap_release(&s);
	tprof_trace_close(t);
	return rc;
}
