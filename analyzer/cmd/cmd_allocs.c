/* tprof allocs: where a program allocates. Allocation sites (stacks) by number of allocations and by
 * bytes allocated, how many of each site's allocations were temporary, and a histogram of requested
 * sizes in power-of-two buckets. --csv prints the sites by number of allocations, --csv=by_bytes
 * the sites by bytes, --csv=histogram the size histogram.
 *
 * Temporary: an allocation freed before the next allocation of the same thread, i.e. the thread's
 * most recent allocation, freed by that thread (the old block of a realloc counts as freed, a realloc
 * being a free and an allocation). heaptrack's count of that name is close but not the same (one
 * order over all threads, blocks matched by size and stack: README). Typical causes are buffers that
 * could live on the stack or be reused. */
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

#define USAGE "usage: tprof allocs [--json | --csv[=by_allocations|by_bytes|histogram]] [--top N] FILE"
#define DEFAULT_TOP 10
#define NBUCKETS 65 /* 0, then [2^k, 2^(k+1) - 1] for k = 0..63 */

struct totals {
	uint64_t allocations, bytes, temporary, sites;
	uint64_t hist_allocs[NBUCKETS], hist_bytes[NBUCKETS];
};

/* Bucket 0 holds size 0; bucket k + 1 holds [2^k, 2^(k+1) - 1]. */
static unsigned bucket_of(uint64_t size)
{
	return size ? 64u - (unsigned)__builtin_clzll(size) : 0u;
}

static uint64_t bucket_min(unsigned b)
{
	return b ? 1ull << (b - 1) : 0;
}

static uint64_t bucket_max(unsigned b)
{
	return b == 0 ? 0 : b == 64 ? UINT64_MAX : (1ull << b) - 1;
}

/* The replay: every allocation counted by stack and by size, and the temporary ones. */
static int replay(struct tprof_trace *t, struct stack_table *tab, struct totals *tot)
{
	struct heap_stats s;
	struct temporaries tp;
	heap_init(&s, 1);
	temporaries_init(&tp);
	const struct tprof_event *e;
	struct heap_change c;
	int r;
	while ((r = tprof_trace_next_ref(t, &e)) > 0) {
		heap_step(&s, e, &c);
		if (temporaries_step(&tp, e, &c)) {
			stack_cost_of(tab, c.freed_stack)->temporary++;
			tot->temporary++;
		}
		if (c.taken_ptr) {
			struct stack_cost *sc = stack_cost_of(tab, e->stack);
			sc->blocks++;
			sc->bytes += e->size;
			stack_table_seen(tab, e);
			unsigned b = bucket_of(e->size);
			tot->hist_allocs[b]++;
			tot->hist_bytes[b] += e->size;
		}
	}
	tot->allocations = s.allocations;
	tot->bytes = s.bytes_allocated;
	if (r >= 0)
		r = heap_finish(&s, t);
	heap_release(&s);
	temporaries_free(&tp);
	if (r < 0)
		tprof_err("%s", t->err);
	return r;
}

/* The tables of --json and --csv (out/table.h): the sites by number of allocations and by bytes, with
 * the same columns, and the size histogram. Columns added later go at the end of a table, so that a
 * reader that takes CSV columns by position keeps working. */
static const struct out_col site_cols[] = {
	{"allocations", OUT_U64, "calls", NULL, NULL},
	{"bytes", OUT_U64, "bytes", NULL, NULL},
	{"temporary", OUT_U64, "calls", NULL, NULL},
	{"truncated", OUT_BOOL, "", NULL, NULL},
	{"stack", OUT_STACK, "", NULL, NULL},
};
static const struct out_table by_allocs_table = {"by_allocations", "by_allocations", site_cols,
						 OUT_NCOLS(site_cols), 0};
static const struct out_table by_bytes_table = {"by_bytes", "by_bytes", site_cols, OUT_NCOLS(site_cols), 0};

static const struct out_col hist_cols[] = {
	{"min", OUT_U64, "bytes", NULL, NULL},
	{"max", OUT_U64, "bytes", NULL, NULL},
	{"allocations", OUT_U64, "calls", NULL, NULL},
	{"bytes", OUT_U64, "bytes", NULL, NULL},
};
static const struct out_table hist_table = {"histogram", "histogram", hist_cols, OUT_NCOLS(hist_cols), 0};

/* One table of sites. Its stacks are symbolized only when the table is written: in JSON, or when
 * --csv asked for it. */
static void sites_table(struct out *w, const struct out_table *tb, const uint32_t *ids, size_t n,
			struct stack_table *tab, struct stack_sym *ss)
{
	out_table_begin(w, tb);
	for (size_t i = 0; i < n && out_table_written(w); i++) {
		const struct stack_cost *sc = &tab->cost[ids[i]];
		size_t nf;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, ids[i], sc->seq, &nf, &trunc);
		out_row_begin(w);
		out_u64(w, sc->blocks);
		out_u64(w, sc->bytes);
		out_u64(w, sc->temporary);
		out_bool(w, trunc);
		out_stack(w, fr, nf);
		out_row_end(w);
	}
	out_table_end(w);
}

/* --json, or the one table --csv asked for. */
static void print_tables(const struct cmd_opts *o, const struct totals *tot, size_t nsites, const uint32_t *by_allocs,
			 const uint32_t *by_bytes, size_t shown, struct stack_table *tab, struct stack_sym *ss)
{
	struct out w;
	cmd_out_begin(&w, o);
	out_key(&w, "allocations");
	out_u64(&w, tot->allocations);
	out_key(&w, "bytes_allocated");
	out_u64(&w, tot->bytes);
	out_key(&w, "temporary");
	out_u64(&w, tot->temporary);
	out_key(&w, "sites");
	out_u64(&w, nsites);
	sites_table(&w, &by_allocs_table, by_allocs, shown, tab, ss);
	sites_table(&w, &by_bytes_table, by_bytes, shown, tab, ss);
	out_table_begin(&w, &hist_table);
	for (unsigned k = 0; k < NBUCKETS; k++) {
		if (!tot->hist_allocs[k])
			continue;
		out_row_begin(&w);
		out_u64(&w, bucket_min(k));
		out_u64(&w, bucket_max(k));
		out_u64(&w, tot->hist_allocs[k]);
		out_u64(&w, tot->hist_bytes[k]);
		out_row_end(&w);
	}
	out_table_end(&w);
	out_end(&w); /* a failed write is reported by main (tprof.c), as for every command */
}

static void print_sites_text(const char *title, const uint32_t *ids, size_t n, size_t nsites,
			     struct stack_table *tab, struct stack_sym *ss)
{
	char a[32], b[32], c[32];
	printf("\n%s (%s%zu of %zu site%s)\n", title, n < nsites ? "the top " : "", n, nsites,
	       nsites == 1 ? "" : "s");
	for (size_t i = 0; i < n; i++) {
		const struct stack_cost *sc = &tab->cost[ids[i]];
		size_t nf;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, ids[i], sc->seq, &nf, &trunc);
		printf("\n  %s allocation%s, %s bytes, %s temporary\n", tprof_commas(sc->blocks, a),
		       sc->blocks == 1 ? "" : "s", tprof_commas(sc->bytes, b),
		       tprof_commas(sc->temporary, c));
		stack_print_text(stdout, fr, nf, trunc, "      ");
	}
}

int cmd_allocs(int argc, char **argv)
{
	static const char *const tables[] = {"by_allocations", "by_bytes", "histogram", NULL};
	struct cmd_opts o = { .name = "allocs", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP,
			      .top = DEFAULT_TOP, .csv_tables = tables };
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	struct tprof_trace *t = cmd_open_trace_flags(o.file, TPROF_OPEN_HEAP_ONLY);
	if (!t)
		return 2;
	struct stack_table tab;
	stack_table_init(&tab, t);
	struct totals tot;
	memset(&tot, 0, sizeof(tot));
	rc = 0;
	if (replay(t, &tab, &tot) < 0) {
		rc = 2;
		stack_table_free(&tab);
		tprof_trace_close(t);
		return rc;
	}
	size_t nsites;
	uint32_t *by_allocs = stack_table_sorted(&tab, STACK_BY_BLOCKS, &nsites);
	uint32_t *by_bytes = stack_table_sorted(&tab, STACK_BY_BYTES, &nsites);
	size_t shown = o.top && o.top < nsites ? o.top : nsites;
	struct stack_sym *ss = stack_sym_new(t);
	char a[32], b[32], c[32];
	if (o.json || o.csv) {
		print_tables(&o, &tot, nsites, by_allocs, by_bytes, shown, &tab, ss);
	} else {
		printf("tprof allocs: ");
		tprof_text_str(stdout, t->path, 0);
		printf(" (");
		tprof_text_str(stdout, t->info.program, 0);
		printf(", pid %" PRIu64 ")\n\n", t->info.pid);
		printf("%s allocations, %s bytes allocated, from %zu site%s\n",
		       tprof_commas(tot.allocations, a), tprof_commas(tot.bytes, b), nsites,
		       nsites == 1 ? "" : "s");
		printf("%s temporary (%.1f%%): freed by their thread before its next allocation\n",
		       tprof_commas(tot.temporary, c),
		       tot.allocations ? 100.0 * (double)tot.temporary / (double)tot.allocations : 0.0);
		print_sites_text("sites by number of allocations", by_allocs, shown, nsites, &tab, ss);
		print_sites_text("sites by bytes allocated", by_bytes, shown, nsites, &tab, ss);
		printf("\nrequested sizes\n\n  %21s  %13s  %17s\n", "bytes", "allocations",
		       "bytes allocated");
		for (unsigned k = 0; k < NBUCKETS; k++) {
			if (!tot.hist_allocs[k])
				continue;
			char range[64];
			if (bucket_min(k) == bucket_max(k))
				snprintf(range, sizeof(range), "%" PRIu64, bucket_min(k));
			else
				snprintf(range, sizeof(range), "%" PRIu64 "..%" PRIu64, bucket_min(k),
					 bucket_max(k));
			printf("  %21s  %13s  %17s\n", range, tprof_commas(tot.hist_allocs[k], a),
			       tprof_commas(tot.hist_bytes[k], b));
		}
	}
	stack_sym_warn(ss);
	stack_sym_free(ss);
	free(by_allocs);
	free(by_bytes);
	stack_table_free(&tab);
	tprof_trace_close(t);
	return rc;
}
