/* tprof summary: what heaptrack_print answers by default, in one pass over the trace: the heap totals,
 * the allocation sites with the most calls, the largest consumers at the peak, the sites with the
 * most temporary allocations, and what is in use at exit by site, with its leak kinds when the trace's
 * reachability scan classifies them. The per-site figures are those of tprof allocs, peak and leaks,
 * which each read the trace on their own (peak twice); here the peak's consumers are kept on the way:
 * when the live heap reaches a new peak, the sites whose live bytes changed since the last peak copy
 * them to their at-peak figures, so the work follows the events, never sites times peaks.
 * Temporary is tprof allocs' definition; calls count failed calls too. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/heap.h"
#include "analysis/leakclass.h"
#include "trace/reader.h"
#include "analysis/stacks.h"
#include "out/frames.h"
#include "out/table.h"
#include "base/util.h"

#define USAGE                                                                                              \
	"usage: tprof summary [--json | --csv[=by_calls|peak_consumers|by_temporary|in_use_at_exit]] [--top N]\n" \
	"                     FILE\n"                                                                             \
	"In one pass: the heap totals, the allocation sites with the most calls, the largest consumers at\n"  \
	"the peak, the sites with the most temporary allocations (freed by their thread before its next\n"  \
	"allocation) and the blocks in use at exit by site, with their leak kinds when classified."
#define DEFAULT_TOP 10

/* One allocation site (stack id). */
struct site {
	uint64_t calls, bytes, temporary; /* allocations, requested bytes, temporary ones */
	uint64_t live_bytes, live_blocks; /* now */
	uint64_t peak_bytes, peak_blocks; /* when the live heap was at its peak */
	uint64_t seq;                     /* its latest allocation: which modules to symbolize with */
	int dirty;                        /* live figures changed since the last peak */
};

struct summary {
	struct site *site; /* indexed by stack id; 0: no stack */
	uint32_t nsite;
	uint32_t *dirty; /* the dirty sites */
	size_t ndirty;
	uint64_t temporary;
	struct heap_stats hs; /* replayed with stacks; at the end its live map holds the blocks in use */
};

static struct site *site_of(struct summary *m, uint32_t id)
{
	return &m->site[id < m->nsite ? id : 0];
}

static void touch(struct summary *m, struct site *st)
{
	if (!st->dirty) {
		st->dirty = 1;
		m->dirty[m->ndirty++] = (uint32_t)(st - m->site);
	}
}

/* The live heap just reached a new peak: the changed sites' live figures are the peak's. */
static void at_peak(struct summary *m)
{
	for (size_t i = 0; i < m->ndirty; i++) {
		struct site *st = &m->site[m->dirty[i]];
		st->peak_bytes = st->live_bytes;
		st->peak_blocks = st->live_blocks;
		st->dirty = 0;
	}
	m->ndirty = 0;
}

/* Site st takes e's block. */
static void site_take(struct summary *m, struct site *st, const struct tprof_event *e)
{
	st->calls++;
	st->bytes += e->size;
	st->live_bytes += e->size;
	st->live_blocks++;
	st->seq = e->seq;
	touch(m, st);
}

/* One event through the replay, the temporaries and the sites. */
static void step(struct summary *m, struct temporaries *tp, const struct tprof_event *e)
{
	struct heap_change c;
	uint64_t peak = m->hs.peak_bytes, failed = m->hs.failed;
	heap_step(&m->hs, e, &c);
	if (m->hs.failed != failed) /* a call that failed is its site's call too, as in the totals */
		site_of(m, e->stack)->calls++;
	if (c.freed_ptr) {
		struct site *st = site_of(m, c.freed_stack);
		st->live_bytes -= c.freed_size;
		st->live_blocks--;
		touch(m, st);
	}
	if (temporaries_step(tp, e, &c)) {
		site_of(m, c.freed_stack)->temporary++;
		m->temporary++;
	}
	if (c.taken_ptr)
		site_take(m, site_of(m, e->stack), e);
	if (m->hs.peak_bytes != peak)
		at_peak(m);
}

/* A run of events (tprof_trace_next_run) through step, but for the two commonest events, which are
 * taken here with what heap_step, temporaries_step and step would do to them: a free of the block
 * in its address's slot of the pairs table, and an allocation whose slot is free and that fits
 * there (heap_pair_fits). The rest, and an allocation whose byte totals would pass 2^64, take step.
 * The heap's counters stay in locals (as in heap.c's heap_run): the sites, the temporaries and the
 * events are all made of uint64_t, so through s every store to a site would reload them. */
static void run(struct summary *m, struct temporaries *tp, const struct tprof_event *ev, size_t n)
{
	struct heap_stats *s = &m->hs;
	uint64_t live = s->live_bytes, blocks = s->live_blocks, peak = s->peak_bytes, bytes = s->bytes_allocated;
	uint64_t nfree = 0, nalloc = 0, temporary = 0, calls[TPROF_EV_KIND_MAX + 1] = {0};
	/* a run is one thread's: its entry once (entries stay where they are; step may look up another) */
	struct temp_thread *th = n ? temporaries_thread_fast(tp, ev[0].tid) : NULL;
	for (size_t i = 0; i < n; i++) {
		const struct tprof_event *e = &ev[i];
		struct heap_pair *q = heap_pair_of(s, e->ptr);
		if (e->kind == TPROF_EV_FREE && e->ptr && q->ptr == e->ptr) {
			struct site *st = site_of(m, q->stack);
			nfree++;
			live -= q->size;
			blocks--;
			st->live_bytes -= q->size;
			st->live_blocks--;
			touch(m, st);
			if (q->seq == th->last_seq) {
				st->temporary++;
				temporary++;
			}
			q->ptr = 0;
			continue;
		}
		if (e->ptr && !q->ptr && e->kind != TPROF_EV_FREE && !tprof_kind_is_realloc(e->kind) &&
		    heap_pair_fits(s, q, e) && e->size <= UINT64_MAX - bytes && e->size <= UINT64_MAX - live) {
			uint64_t seq;
			if (th->owned_in_map && addrmap_get(&tp->owner, th->owned, &seq) && seq == th->owned_seq)
				addrmap_del(&tp->owner, th->owned, NULL);
			th->owned = e->ptr;
			th->owned_seq = e->seq;
			th->owned_in_map = 0;
			th->last_seq = e->seq;
			*q = (struct heap_pair){e->ptr, e->seq, e->size, e->stack, e->tid};
			nalloc++;
			calls[e->kind]++;
			bytes += e->size;
			live += e->size;
			blocks++;
			site_take(m, site_of(m, e->stack), e);
			if (live > peak) { /* heap_peak_check */
				peak = live;
				s->peak_bytes = live;
				s->peak_blocks = blocks;
				s->peak_seq = e->seq;
				s->peak_tick = e->tick;
				s->peak_tid = e->tid;
				at_peak(m);
			}
			continue;
		}
		/* anything else takes step, on the counters as they stand */
		s->live_bytes = live;
		s->live_blocks = blocks;
		s->bytes_allocated = bytes;
		step(m, tp, e);
		live = s->live_bytes;
		blocks = s->live_blocks;
		bytes = s->bytes_allocated;
		peak = s->peak_bytes;
	}
	s->live_bytes = live;
	s->live_blocks = blocks;
	s->bytes_allocated = bytes;
	s->events += nfree + nalloc;
	s->frees += nfree;
	s->allocations += nalloc;
	calls[TPROF_EV_FREE] += nfree;
	for (int k = 0; k <= TPROF_EV_KIND_MAX; k++)
		s->calls[k] += calls[k];
	m->temporary += temporary;
}

/* The one pass. */
static int replay(struct tprof_trace *t, struct summary *m)
{
	struct temporaries tp;
	temporaries_init(&tp);
	heap_init(&m->hs, 1);
	const struct tprof_event *ev;
	size_t n;
	int r;
	while ((r = tprof_trace_next_run(t, &ev, &n)) > 0)
		run(m, &tp, ev, n);
	temporaries_free(&tp);
	return r < 0 ? r : heap_finish(&m->hs, t);
}

/* The four tables. */
enum table { BY_CALLS, PEAK, TEMPORARY, IN_USE, NTABLES };
static const char *const table_title[NTABLES] = {"most calls to allocation functions", "largest consumers at the peak",
						 "most temporary allocations", "in use at exit"};

static uint64_t key1(const struct site *s, enum table k)
{
	return k == BY_CALLS ? s->calls : k == PEAK ? s->peak_bytes : k == TEMPORARY ? s->temporary : s->live_bytes;
}

static uint64_t key2(const struct site *s, enum table k)
{
	return k == BY_CALLS ? s->bytes : k == PEAK ? s->peak_blocks : k == TEMPORARY ? s->calls : s->live_blocks;
}

static const struct site *sort_sites;
static enum table sort_table;

static int by_key(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct site *p = &sort_sites[x], *q = &sort_sites[y];
	uint64_t p1 = key1(p, sort_table), q1 = key1(q, sort_table), p2 = key2(p, sort_table), q2 = key2(q, sort_table);
	if (p1 != q1)
		return p1 > q1 ? -1 : 1;
	if (p2 != q2)
		return p2 > q2 ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The sites with a nonzero first figure in table k (or blocks at the peak or in use: blocks of 0
 * bytes count), the first top of them (0: all) sorted; *n receives the count. */
static uint32_t *sorted(const struct summary *m, enum table k, size_t *n, size_t top)
{
	uint32_t *ids = xmalloc(((size_t)m->nsite + 1) * sizeof(uint32_t));
	*n = 0;
	for (uint32_t i = 0; i < m->nsite; i++)
		if (key1(&m->site[i], k) || ((k == PEAK || k == IN_USE) && key2(&m->site[i], k)))
			ids[(*n)++] = i;
	sort_sites = m->site;
	sort_table = k;
	if (*n)
		tprof_sort_top(ids, *n, top ? top : *n, sizeof(uint32_t), by_key);
	return ids;
}

/* The four tables of --json and --csv (out/table.h), in the order of enum table: a site's figures,
 * then truncated and its stack. Columns added later go at the end of a table, so that a reader that
 * takes CSV columns by position keeps working. */
static const struct out_col calls_cols[] = {
	{"calls", OUT_U64, "calls", NULL, NULL},
	{"bytes", OUT_U64, "bytes", NULL, NULL},
	{"temporary", OUT_U64, "calls", NULL, NULL},
	{"truncated", OUT_BOOL, "", NULL, NULL},
	{"stack", OUT_STACK, "", NULL, NULL},
};
static const struct out_col live_cols[] = {
	{"bytes", OUT_U64, "bytes", NULL, NULL},
	{"blocks", OUT_U64, "blocks", NULL, NULL},
	{"truncated", OUT_BOOL, "", NULL, NULL},
	{"stack", OUT_STACK, "", NULL, NULL},
};
static const struct out_col temporary_cols[] = {
	{"temporary", OUT_U64, "calls", NULL, NULL},
	{"calls", OUT_U64, "calls", NULL, NULL},
	{"bytes", OUT_U64, "bytes", NULL, NULL},
	{"truncated", OUT_BOOL, "", NULL, NULL},
	{"stack", OUT_STACK, "", NULL, NULL},
};
static const struct out_table site_tables[NTABLES] = {
	{"by_calls", "by_calls", calls_cols, OUT_NCOLS(calls_cols), 0},
	{"peak_consumers", "peak_consumers", live_cols, OUT_NCOLS(live_cols), 0},
	{"by_temporary", "by_temporary", temporary_cols, OUT_NCOLS(temporary_cols), 0},
	{"in_use_at_exit", "in_use_at_exit", live_cols, OUT_NCOLS(live_cols), 0},
};

static void table_text(const struct summary *m, enum table k, const uint32_t *ids, size_t n, size_t shown,
		       struct stack_sym *ss)
{
	char a[32], b[32], c[32];
	printf("\n%s (%s%zu of %zu site%s)\n", table_title[k], shown < n ? "the top " : "", shown, n,
	       n == 1 ? "" : "s");
	for (size_t i = 0; i < shown; i++) {
		const struct site *s = &m->site[ids[i]];
		switch (k) {
		case BY_CALLS:
			printf("\n  %s call%s, %s bytes, %s temporary\n", tprof_commas(s->calls, a), s->calls == 1 ? "" : "s",
			       tprof_commas(s->bytes, b), tprof_commas(s->temporary, c));
			break;
		case PEAK:
			printf("\n  %s bytes in %s block%s at the peak\n", tprof_commas(s->peak_bytes, a),
			       tprof_commas(s->peak_blocks, b), s->peak_blocks == 1 ? "" : "s");
			break;
		case TEMPORARY:
			printf("\n  %s temporary of %s call%s (%.1f%%)\n", tprof_commas(s->temporary, a),
			       tprof_commas(s->calls, b), s->calls == 1 ? "" : "s",
			       s->calls ? 100.0 * (double)s->temporary / (double)s->calls : 0.0);
			break;
		default:
			printf("\n  %s bytes in %s block%s\n", tprof_commas(s->live_bytes, a), tprof_commas(s->live_blocks, b),
			       s->live_blocks == 1 ? "" : "s");
		}
		size_t nf;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, ids[i], s->seq, &nf, &trunc);
		stack_print_text(stdout, fr, nf, trunc, "      ");
	}
}

/* Table k's rows. Their stacks are symbolized only when the table is written: in JSON, or when --csv
 * asked for it. */
static void table_out(struct out *w, const struct summary *m, enum table k, const uint32_t *ids, size_t shown,
		      struct stack_sym *ss)
{
	out_table_begin(w, &site_tables[k]);
	for (size_t i = 0; i < shown && out_table_written(w); i++) {
		const struct site *s = &m->site[ids[i]];
		size_t nf;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, ids[i], s->seq, &nf, &trunc);
		out_row_begin(w);
		switch (k) {
		case BY_CALLS:
			out_u64(w, s->calls);
			out_u64(w, s->bytes);
			out_u64(w, s->temporary);
			break;
		case PEAK:
			out_u64(w, s->peak_bytes);
			out_u64(w, s->peak_blocks);
			break;
		case TEMPORARY:
			out_u64(w, s->temporary);
			out_u64(w, s->calls);
			out_u64(w, s->bytes);
			break;
		default:
			out_u64(w, s->live_bytes);
			out_u64(w, s->live_blocks);
		}
		out_bool(w, trunc);
		out_stack(w, fr, nf);
		out_row_end(w);
	}
	out_table_end(w);
}

static void totals_text(const struct tprof_trace *t, const struct summary *m, const struct leak_class *lc,
			size_t nsites)
{
	const struct heap_stats *s = &m->hs;
	char a[32], b[32], c[32], d[32];
	uint64_t ns = cmd_trace_duration_ns(t);
	printf("tprof summary: ");
	tprof_text_str(stdout, t->path, 0);
	printf(" (");
	tprof_text_str(stdout, t->info.program, 0);
	printf(", pid %" PRIu64 "), %s\n\n", t->info.pid, tprof_fmt_ns(ns, a));
	printf("  %s calls to allocation functions (%s/s) from %zu site%s, %s frees, %s bytes allocated\n",
	       tprof_commas(s->allocations + s->failed, a),
	       tprof_commas(ns ? (uint64_t)((double)(s->allocations + s->failed) * 1e9 / (double)ns) : 0, b), nsites,
	       nsites == 1 ? "" : "s", tprof_commas(s->frees, c), tprof_commas(s->bytes_allocated, d));
	printf("  %s temporary allocations (%.1f%%): freed by their thread before its next allocation\n",
	       tprof_commas(m->temporary, a),
	       s->allocations ? 100.0 * (double)m->temporary / (double)s->allocations : 0.0);
	printf("  peak heap: %s bytes in %s blocks, at %s\n", tprof_commas(s->peak_bytes, a),
	       tprof_commas(s->peak_blocks, b), tprof_fmt_ns(tprof_trace_ns(t, s->peak_tick), c));
	const struct tprof_rss *r = NULL;
	for (size_t i = 0; i < t->nrss; i++)
		if (!r || t->rss[i].rss_bytes > r->rss_bytes)
			r = &t->rss[i];
	if (r)
		printf("  peak RSS: %s bytes, at %s (of %s samples%s)\n", tprof_commas(r->rss_bytes, a),
		       tprof_fmt_ns(tprof_trace_ns(t, r->tick), b), tprof_commas(t->nrss, c),
		       tprof_rss_has_own(t) ? "; tprof's shared memory included" : "");
	printf("  in use at exit: %s bytes in %s blocks", tprof_commas(s->live_bytes, a), tprof_commas(s->live_blocks, b));
	if (lc->classified && s->live_blocks) {
		uint64_t kb[LEAK_KINDS + 1], kn[LEAK_KINDS + 1];
		leak_class_totals(lc, s, kb, kn);
		/* memcheck's order, definitely lost first, on a line of their own (within 120 columns) */
		for (int k = LEAK_KINDS - 1; k >= 0; k--)
			printf("%s%s %s bytes", k < LEAK_KINDS - 1 ? ", " : "\n    ", leak_kind_words(k), tprof_commas(kb[k], c));
		if (kn[LEAK_LATE])
			printf(", allocated after the scan %s bytes", tprof_commas(kb[LEAK_LATE], c));
	} else if (s->live_blocks) {
		printf(" (not classified: %s)", lc->why);
	}
	printf("\n");
	if (s->reused_live) /* a block dropped that way is in no site's figures: they may not add up */
		printf("  %s allocations returned an address still live (events were lost): the per-site live\n"
		       "  figures count the blocks that address had before as still live\n",
		       tprof_commas(s->reused_live, a));
}

/* The totals: JSON's top-level members (none in CSV). */
static void totals_out(struct out *w, const struct tprof_trace *t, const struct summary *m, const struct leak_class *lc,
		       size_t nsites)
{
	const struct heap_stats *s = &m->hs;
	out_key(w, "file");
	out_str(w, t->path);
	out_key(w, "program");
	out_str(w, t->info.program);
	out_key(w, "pid");
	out_u64(w, t->info.pid);
	out_key(w, "duration_ns");
	out_u64(w, cmd_trace_duration_ns(t));
	out_key(w, "calls");
	out_u64(w, s->allocations + s->failed);
	out_key(w, "allocations");
	out_u64(w, s->allocations);
	out_key(w, "frees");
	out_u64(w, s->frees);
	out_key(w, "bytes_allocated");
	out_u64(w, s->bytes_allocated);
	out_key(w, "temporary");
	out_u64(w, m->temporary);
	out_key(w, "sites");
	out_u64(w, nsites);
	out_key(w, "peak_bytes");
	out_u64(w, s->peak_bytes);
	out_key(w, "peak_blocks");
	out_u64(w, s->peak_blocks);
	out_key(w, "peak_time_ns");
	out_u64(w, tprof_trace_ns(t, s->peak_tick));
	out_key(w, "in_use_bytes");
	out_u64(w, s->live_bytes);
	out_key(w, "in_use_blocks");
	out_u64(w, s->live_blocks);
	out_key(w, "reused_live_addresses");
	out_u64(w, s->reused_live);
	out_key(w, "leaks_classified");
	out_bool(w, lc->classified);
	uint64_t kb[LEAK_KINDS + 1] = {0}, kn[LEAK_KINDS + 1] = {0};
	if (lc->classified)
		leak_class_totals(lc, s, kb, kn);
	for (int k = LEAK_KINDS - 1; k >= 0; k--) {
		char bytes[64], blocks[64];
		snprintf(bytes, sizeof(bytes), "%s_bytes", leak_kind_key(k));
		snprintf(blocks, sizeof(blocks), "%s_blocks", leak_kind_key(k));
		out_key(w, bytes);
		if (lc->classified)
			out_u64(w, kb[k]);
		else
			out_null(w);
		out_key(w, blocks);
		if (lc->classified)
			out_u64(w, kn[k]);
		else
			out_null(w);
	}
	/* the peak RSS, as report names it (null when the trace has no sample) */
	const struct tprof_rss *r = NULL;
	for (size_t i = 0; i < t->nrss; i++)
		if (!r || t->rss[i].rss_bytes > r->rss_bytes)
			r = &t->rss[i];
	out_key(w, "peak_rss_bytes");
	if (r)
		out_u64(w, r->rss_bytes);
	else
		out_null(w);
	out_key(w, "peak_rss_time_ns");
	if (r)
		out_u64(w, tprof_trace_ns(t, r->tick));
	else
		out_null(w);
	out_key(w, "rss_samples");
	out_u64(w, t->nrss);
	out_key(w, "peak_rss_includes_tprof");
	out_bool(w, r && tprof_rss_has_own(t));
}

int cmd_summary(int argc, char **argv)
{
	static const char *const tables[] = {"by_calls", "peak_consumers", "by_temporary", "in_use_at_exit", NULL};
	struct cmd_opts o = {.name = "summary", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP,
			     .top = DEFAULT_TOP, .csv_tables = tables};
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	struct tprof_trace *t = cmd_open_trace_flags(o.file, TPROF_OPEN_HEAP_ONLY);
	if (!t)
		return 2;
	struct summary m = {0};
	m.nsite = t->nstacks ? t->nstacks : 1;
	m.site = xzalloc(m.nsite, sizeof(*m.site)); /* read before written, all over (util.h) */
	m.dirty = xmalloc(m.nsite * sizeof(uint32_t));
	if (replay(t, &m) < 0) {
		tprof_err("%s", t->err);
		heap_release(&m.hs);
		free(m.site);
		free(m.dirty);
		tprof_trace_close(t);
		return 2;
	}
	struct leak_class lc;
	leak_class_init(&lc, t, &m.hs);
	uint32_t *ids[NTABLES];
	size_t n[NTABLES], shown[NTABLES];
	for (int k = 0; k < NTABLES; k++) {
		ids[k] = sorted(&m, (enum table)k, &n[k], o.top);
		shown[k] = o.top && o.top < n[k] ? o.top : n[k];
	}
	struct stack_sym *ss = stack_sym_new(t);
	if (o.json || o.csv) {
		struct out w;
		cmd_out_begin(&w, &o);
		totals_out(&w, t, &m, &lc, n[BY_CALLS]);
		for (int k = 0; k < NTABLES; k++)
			table_out(&w, &m, (enum table)k, ids[k], shown[k], ss);
		out_end(&w); /* a failed write is reported by main (tprof.c), as for every command */
	} else {
		totals_text(t, &m, &lc, n[BY_CALLS]);
		for (int k = 0; k < NTABLES; k++)
			table_text(&m, (enum table)k, ids[k], n[k], shown[k], ss);
	}
	stack_sym_warn(ss);
	stack_sym_free(ss);
	for (int k = 0; k < NTABLES; k++)
		free(ids[k]);
	heap_release(&m.hs);
	free(m.site);
	free(m.dirty);
	tprof_trace_close(t);
	return 0;
}
