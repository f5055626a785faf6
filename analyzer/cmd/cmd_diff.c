/* tprof diff A B: the before/after view of two runs of a program. A summary (wall time, time in
 * kernels, time and FLOPs per step with a verdict on the noise, heap peak, leaks, allocations, FLOPs,
 * GFLOP/s), then the ops whose calls, time or FLOPs changed and the allocation sites whose bytes,
 * allocations or leaks changed, each sorted by the size of the change. Ops are matched by name;
 * allocation sites by their symbolized frames (stack_print_label: function and file:line, else
 * module+offset), never by address, which differs from run to run (ASLR). Text for people, --json
 * for tools (docs/DIFF.md), --csv for spreadsheets (one table per invocation). */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/heap.h"
#include "analysis/ops.h"
#include "trace/reader.h"
#include "analysis/stacks.h"
#include "out/frames.h"
#include "base/util.h"

#define USAGE                                                                                      \
	"usage: tprof diff [--json | --csv[=summary|ops|sites|steps]] [--top N] [--skip-steps N] A B\n" \
	"What changed from run A to run B: summary, time and FLOPs per step, ops and allocation sites,\n" \
	"largest change first (--top: rows per table, default 20, 0: all)."
#define DEFAULT_TOP 20

/* ---- one run */

/* One allocation site: a stack, named by its frames' labels. */
struct site {
	char *key;     /* the labels joined by '\n' (then "\n..." when cut): what matches across runs */
	char **frames; /* the labels, innermost first */
	size_t nframes;
	int truncated;
	uint64_t allocs, bytes, leaked_bytes, leaked_blocks;
};

struct run {
	const char *path;
	char *program;
	uint64_t pid;
	uint64_t wall_ns;
	uint64_t allocations, bytes_allocated, peak_bytes, leaked_bytes, leaked_blocks;
	struct ops_result ops;
	struct ops_dist steps; /* of ops.step_ns */
	struct site *sites;    /* sorted by key, keys distinct */
	size_t nsites;
};

static char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct site *)a)->key, ((const struct site *)b)->key);
}

/* The site of stack id (allocated at seq), its key built from the symbolized frames. */
static void site_of(struct stack_sym *ss, uint32_t id, uint64_t seq, struct site *s)
{
	size_t n;
	int trunc;
	const struct stack_frame *fr = stack_frames(ss, id, seq, &n, &trunc);
	memset(s, 0, sizeof(*s));
	s->truncated = trunc;
	s->nframes = n ? n : 1;
	s->frames = xcalloc(s->nframes, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		s->frames[i] = stack_frame_label(&fr[i]);
	if (!n)
		s->frames[0] = xstrdup("(no stack recorded)");
	size_t len = sizeof("\n...");
	for (size_t i = 0; i < s->nframes; i++)
		len += strlen(s->frames[i]) + 1;
	s->key = xmalloc(len);
	s->key[0] = 0;
	char *k = s->key;
	for (size_t i = 0; i < s->nframes; i++)
		k += sprintf(k, "%s%s", i ? "\n" : "", s->frames[i]);
	if (trunc)
		strcpy(k, "\n...");
}

static void site_free(struct site *s)
{
	for (size_t i = 0; i < s->nframes; i++)
		free(s->frames[i]);
	free(s->frames);
	free(s->key);
}

/* Reads the heap with stacks: totals, and every stack that allocated as a site; sites with equal
 * frames (stacks that differ only where symbolization cannot tell) are merged. 0, or 2 (reported). */
static int load_sites(struct run *r)
{
	struct tprof_trace *t = cmd_open_trace(r->path);
	if (!t)
		return 2;
	struct heap_stats hs;
	struct stack_table tab;
	stack_table_init(&tab, t);
	if (stacks_replay(t, UINT64_MAX, &hs, &tab) < 0) {
		tprof_err("%s", t->err);
		heap_release(&hs);
		stack_table_free(&tab);
		tprof_trace_close(t);
		return 2;
	}
	r->wall_ns = cmd_trace_duration_ns(t);
	r->allocations = hs.allocations;
	r->bytes_allocated = hs.bytes_allocated;
	r->peak_bytes = hs.peak_bytes;
	r->leaked_bytes = hs.live_bytes;
	r->leaked_blocks = hs.live_blocks;
	/* allocation counts first: stack_table_set_live replaces them by the live blocks */
	struct stack_cost *alloc = xmalloc(tab.n * sizeof(*alloc));
	memcpy(alloc, tab.cost, tab.n * sizeof(*alloc));
	stack_table_set_live(&tab, &hs);
	struct stack_sym *ss = stack_sym_new(t);
	r->sites = xcalloc(tab.n, sizeof(*r->sites));
	for (uint32_t id = 0; id < tab.n; id++) {
		if (!alloc[id].blocks && !tab.cost[id].blocks)
			continue;
		struct site *s = &r->sites[r->nsites++];
		site_of(ss, id, alloc[id].seq, s);
		s->allocs = alloc[id].blocks;
		s->bytes = alloc[id].bytes;
		s->leaked_bytes = tab.cost[id].bytes;
		s->leaked_blocks = tab.cost[id].blocks;
	}
	tprof_sort(r->sites, r->nsites, sizeof(*r->sites), by_key);
	size_t k = 0;
	for (size_t i = 0; i < r->nsites; i++) {
		struct site *s = &r->sites[i];
		if (k && strcmp(r->sites[k - 1].key, s->key) == 0) {
			struct site *m = &r->sites[k - 1];
			m->allocs += s->allocs;
			m->bytes += s->bytes;
			m->leaked_bytes += s->leaked_bytes;
			m->leaked_blocks += s->leaked_blocks;
			site_free(s);
		} else {
			r->sites[k++] = *s;
		}
	}
	r->nsites = k;
	stack_sym_warn(ss);
	stack_sym_free(ss);
	free(alloc);
	heap_release(&hs);
	stack_table_free(&tab);
	tprof_trace_close(t);
	return 0;
}

/* Reads run r from r->path: the op analysis, then the heap with stacks. 0, or 2 (reported). */
static int load_run(struct run *r, const struct ops_options *oo)
{
	struct tprof_trace *t = cmd_open_trace(r->path);
	if (!t)
		return 2;
	if (ops_analyze(t, oo, &r->ops) != 0) {
		tprof_err("%s", t->err);
		tprof_trace_close(t);
		return 2;
	}
	r->program = xstrdup(t->info.program);
	r->pid = t->info.pid;
	tprof_trace_close(t);
	ops_dist(r->ops.step_ns, r->ops.nsteps, &r->steps);
	return load_sites(r);
}

static void run_free(struct run *r)
{
	for (size_t i = 0; i < r->nsites; i++)
		site_free(&r->sites[i]);
	free(r->sites);
	free(r->program);
	ops_free(&r->ops);
}

/* ---- changes */

/* One figure in both runs: exact integers, or rates and means. */
struct metric {
	int flt;
	uint64_t a, b;
	double x, y;
};

static struct metric mint(uint64_t a, uint64_t b)
{
	return (struct metric){0, a, b, (double)a, (double)b};
}

static struct metric mflt(double x, double y)
{
	return (struct metric){1, 0, 0, x, y};
}

static double m_delta(const struct metric *m)
{
	return m->flt ? m->y - m->x : (double)(int64_t)(m->b - m->a);
}

static int m_changed(const struct metric *m)
{
	return m->flt ? m->x != m->y : m->a != m->b;
}

/* The relative change (B - A) / A; 0 when both are 0; NAN when only A is 0 (no ratio exists). */
static double m_rel(const struct metric *m)
{
	if (!m_changed(m))
		return 0;
	return m->x != 0 ? m_delta(m) / m->x : NAN;
}

/* A number as JSON and CSV write it: integers exactly, other values to 6 significant digits. */
static void put_num(FILE *f, double v)
{
	if (!isfinite(v))
		fputs("null", f);
	else if (v == floor(v) && fabs(v) < 9007199254740992.0)
		fprintf(f, "%.0f", v);
	else
		fprintf(f, "%.6g", v);
}

/* a, b, delta and rel of m: JSON members "<key>_a", ... ("a", ... for key "") or CSV fields, each
 * after a comma; rel is null (JSON) or empty (CSV) when A is 0 and B is not. */
static void put_metric(const char *key, const struct metric *m, int json)
{
	static const char *const suffix[] = {"a", "b", "delta", "rel"};
	for (int k = 0; k < 4; k++) {
		if (json)
			printf(",\"%s%s%s\":", key, *key ? "_" : "", suffix[k]);
		else
			putchar(',');
		if (k < 2 && !m->flt)
			printf("%" PRIu64, k ? m->b : m->a);
		else if (k < 2)
			put_num(stdout, k ? m->y : m->x);
		else if (k == 2)
			put_num(stdout, m_delta(m));
		else if (json || isfinite(m_rel(m)))
			put_num(stdout, m_rel(m));
	}
}

enum unit { U_NS, U_BYTES, U_COUNT, U_RATE };

/* A value in its unit for text ("1.23 ms", "1,234 B", "1,234", "2.345"); sign: + before a positive one. */
static const char *fmt_val(double v, enum unit u, int sign, char *buf)
{
	char tmp[32];
	double a = fabs(v);
	const char *s = v < 0 ? "-" : sign && v > 0 ? "+" : "";
	switch (u) {
	case U_NS:
		snprintf(buf, 48, "%s%s", s, tprof_fmt_ns((uint64_t)llround(a), tmp));
		break;
	case U_BYTES:
		snprintf(buf, 48, "%s%s B", s, tprof_commas((uint64_t)llround(a), tmp));
		break;
	case U_COUNT:
		snprintf(buf, 48, "%s%s", s, tprof_commas((uint64_t)llround(a), tmp));
		break;
	case U_RATE:
		snprintf(buf, 48, "%s%.3f", s, a);
		break;
	}
	return buf;
}

/* "+12.3%", "new" (A was 0), or "" when nothing changed. */
static const char *fmt_rel(const struct metric *m, char *buf)
{
	double r = m_rel(m);
	if (!m_changed(m))
		snprintf(buf, 16, "%s", "");
	else if (!isfinite(r))
		snprintf(buf, 16, "new");
	else
		snprintf(buf, 16, "%+.1f%%", 100.0 * r);
	return buf;
}

/* A table cell: "B (change, rel)", or "B (=)" when unchanged. */
static const char *fmt_cell(const struct metric *m, enum unit u, char *buf, size_t size)
{
	char b[48], d[48], r[16];
	if (!m_changed(m))
		snprintf(buf, size, "%s (=)", fmt_val(m->y, u, 0, b));
	else
		snprintf(buf, size, "%s (%s, %s)", fmt_val(m->y, u, 0, b), fmt_val(m_delta(m), u, 1, d),
			 fmt_rel(m, r));
	return buf;
}

/* A narrow table cell: B as the caller formatted it, then the relative change or "=". */
static const char *short_cell(const struct metric *m, const char *b, char *buf)
{
	char r[16];
	snprintf(buf, 64, "%s (%s)", b, m_changed(m) ? fmt_rel(m, r) : "=");
	return buf;
}

/* ---- ops matched by name */

struct op_pair {
	const char *name;
	struct metric calls, self, total, flops, gflops;
	const char *status; /* "added", "removed", "changed", "same" */
};

static int row_by_name(const void *a, const void *b)
{
	return strcmp(((const struct ops_row *)a)->name, ((const struct ops_row *)b)->name);
}

static double rate(uint64_t flops, uint64_t ns)
{
	return ns ? (double)flops / (double)ns : 0;
}

static void op_fill(struct op_pair *p, const struct ops_row *x, const struct ops_row *y)
{
	static const struct ops_row none;
	const struct ops_row *a = x ? x : &none, *b = y ? y : &none;
	p->name = x ? x->name : y->name;
	p->calls = mint(a->calls, b->calls);
	p->self = mint(a->self_ns, b->self_ns);
	p->total = mint(a->total_ns, b->total_ns);
	p->flops = mint(a->flops, b->flops);
	p->gflops = mflt(rate(a->flops, a->total_ns), rate(b->flops, b->total_ns));
	if (!x)
		p->status = "added";
	else if (!y)
		p->status = "removed";
	else if (m_changed(&p->calls) || m_changed(&p->self) || m_changed(&p->total) || m_changed(&p->flops))
		p->status = "changed";
	else
		p->status = "same";
}

/* Descending by |a|, then by |b|, ...: the first key that differs decides. */
static int cmp_abs(double a, double b)
{
	a = fabs(a), b = fabs(b);
	return a > b ? -1 : a < b;
}

static int op_cmp(const void *pa, const void *pb)
{
	const struct op_pair *x = pa, *y = pb;
	int c;
	if ((c = cmp_abs(m_delta(&x->self), m_delta(&y->self))) || (c = cmp_abs(m_delta(&x->flops), m_delta(&y->flops))) ||
	    (c = cmp_abs(m_delta(&x->calls), m_delta(&y->calls))) || (c = cmp_abs(m_delta(&x->total), m_delta(&y->total))))
		return c;
	return strcmp(x->name, y->name);
}

/* The ops of both runs matched by name, largest change first; *n receives the count. */
static struct op_pair *match_ops(struct run *a, struct run *b, size_t *n)
{
	if (a->ops.nrows) /* a run without kernel calls may have no rows array, which qsort may not get */
		tprof_sort(a->ops.rows, a->ops.nrows, sizeof(struct ops_row), row_by_name);
	if (b->ops.nrows)
		tprof_sort(b->ops.rows, b->ops.nrows, sizeof(struct ops_row), row_by_name);
	struct op_pair *p = xcalloc(a->ops.nrows + b->ops.nrows + 1, sizeof(*p));
	size_t i = 0, j = 0, k = 0;
	while (i < a->ops.nrows || j < b->ops.nrows) {
		int c = i == a->ops.nrows ? 1 : j == b->ops.nrows ? -1 : strcmp(a->ops.rows[i].name, b->ops.rows[j].name);
		op_fill(&p[k++], c <= 0 ? &a->ops.rows[i] : NULL, c >= 0 ? &b->ops.rows[j] : NULL);
		i += c <= 0;
		j += c >= 0;
	}
	tprof_sort(p, k, sizeof(*p), op_cmp);
	*n = k;
	return p;
}

/* ---- allocation sites matched by frames */

struct site_pair {
	const struct site *s; /* B's when in B, else A's: frames to show */
	struct metric allocs, bytes, leaked_bytes, leaked_blocks;
	const char *status;
};

static int site_cmp(const void *pa, const void *pb)
{
	const struct site_pair *x = pa, *y = pb;
	int c;
	if ((c = cmp_abs(m_delta(&x->bytes), m_delta(&y->bytes))) ||
	    (c = cmp_abs(m_delta(&x->leaked_bytes), m_delta(&y->leaked_bytes))) ||
	    (c = cmp_abs(m_delta(&x->allocs), m_delta(&y->allocs))) ||
	    (c = cmp_abs(m_delta(&x->leaked_blocks), m_delta(&y->leaked_blocks))))
		return c;
	return strcmp(x->s->key, y->s->key);
}

static struct site_pair *match_sites(const struct run *a, const struct run *b, size_t *n)
{
	static const struct site none;
	struct site_pair *p = xcalloc(a->nsites + b->nsites + 1, sizeof(*p));
	size_t i = 0, j = 0, k = 0;
	while (i < a->nsites || j < b->nsites) {
		int c = i == a->nsites ? 1 : j == b->nsites ? -1 : strcmp(a->sites[i].key, b->sites[j].key);
		const struct site *x = c <= 0 ? &a->sites[i] : &none, *y = c >= 0 ? &b->sites[j] : &none;
		struct site_pair *q = &p[k++];
		q->s = c >= 0 ? y : x;
		q->allocs = mint(x->allocs, y->allocs);
		q->bytes = mint(x->bytes, y->bytes);
		q->leaked_bytes = mint(x->leaked_bytes, y->leaked_bytes);
		q->leaked_blocks = mint(x->leaked_blocks, y->leaked_blocks);
		if (c > 0)
			q->status = "added";
		else if (c < 0)
			q->status = "removed";
		else if (m_changed(&q->allocs) || m_changed(&q->bytes) || m_changed(&q->leaked_bytes) ||
			 m_changed(&q->leaked_blocks))
			q->status = "changed";
		else
			q->status = "same";
		i += c <= 0;
		j += c >= 0;
	}
	tprof_sort(p, k, sizeof(*p), site_cmp);
	*n = k;
	return p;
}

/* ---- summary and steps */

struct summary_row {
	const char *metric; /* the JSON and CSV name */
	const char *label;  /* the text's */
	enum unit unit;
	struct metric m;
};

/* The summary's rows into out (at least 16); returns how many. Per-step rows only when both runs
 * have steps. */
static size_t summary_rows(const struct run *a, const struct run *b, struct summary_row *out)
{
	size_t n = 0;
	out[n++] = (struct summary_row){"wall_ns", "wall time", U_NS, mint(a->wall_ns, b->wall_ns)};
	out[n++] = (struct summary_row){"kernel_ns", "time in kernels", U_NS, mint(a->ops.in_ops_ns, b->ops.in_ops_ns)};
	if (a->steps.n && b->steps.n) {
		out[n++] = (struct summary_row){"steps", "steps", U_COUNT, mint(a->steps.n, b->steps.n)};
		out[n++] = (struct summary_row){"step_mean_ns", "time per step (mean)", U_NS,
						mflt(round(a->steps.mean), round(b->steps.mean))};
	}
	out[n++] = (struct summary_row){"peak_bytes", "heap peak", U_BYTES, mint(a->peak_bytes, b->peak_bytes)};
	out[n++] = (struct summary_row){"leaked_bytes", "leaked bytes", U_BYTES, mint(a->leaked_bytes, b->leaked_bytes)};
	out[n++] = (struct summary_row){"leaked_blocks", "leaked blocks", U_COUNT,
					mint(a->leaked_blocks, b->leaked_blocks)};
	out[n++] = (struct summary_row){"bytes_allocated", "bytes allocated", U_BYTES,
					mint(a->bytes_allocated, b->bytes_allocated)};
	out[n++] = (struct summary_row){"allocations", "allocations", U_COUNT, mint(a->allocations, b->allocations)};
	out[n++] = (struct summary_row){"flops", "FLOPs (top-level calls)", U_COUNT,
					mint(a->ops.top_flops, b->ops.top_flops)};
	out[n++] = (struct summary_row){"gflops_per_s", "GFLOP/s in kernels", U_RATE,
					mflt(rate(a->ops.top_flops, a->ops.in_ops_ns), rate(b->ops.top_flops, b->ops.in_ops_ns))};
	if (a->steps.n && b->steps.n) {
		out[n++] = (struct summary_row){"flops_per_step", "FLOPs per step", U_COUNT,
						mflt((double)a->ops.step_flops / (double)a->steps.n,
						     (double)b->ops.step_flops / (double)b->steps.n)};
	}
	return n;
}

/* The per-step comparison, when both runs mark steps. */
struct step_cmp {
	struct metric mean, flops;
	double gflops_a, gflops_b;
	int have_ci;
	double lo, hi; /* 95 % CI of the change of the mean */
	const char *verdict;
};

static int steps_compare(const struct run *a, const struct run *b, struct step_cmp *c)
{
	if (!a->steps.n || !b->steps.n)
		return 0;
	c->mean = mflt(round(a->steps.mean), round(b->steps.mean));
	c->flops = mflt((double)a->ops.step_flops / (double)a->steps.n, (double)b->ops.step_flops / (double)b->steps.n);
	c->gflops_a = rate(a->ops.step_flops, a->ops.steps_ns);
	c->gflops_b = rate(b->ops.step_flops, b->ops.steps_ns);
	c->have_ci = ops_diff_ci(&a->steps, &b->steps, &c->lo, &c->hi) == 0;
	if (!c->have_ci)
		c->verdict = "too few steps";
	else if (c->lo > 0)
		c->verdict = "slower";
	else if (c->hi < 0)
		c->verdict = "faster";
	else
		c->verdict = "within noise";
	return 1;
}

/* ---- output */

struct diff {
	struct run *a, *b;
	struct summary_row sum[16];
	size_t nsum;
	struct step_cmp st;
	int have_steps;
	struct op_pair *ops;
	size_t nops, shown_ops;
	struct site_pair *sites;
	size_t nsites, shown_sites;
};

static void json_run(const char *key, const struct run *r)
{
	printf("\"%s\":{\"file\":", key);
	tprof_json_str(stdout, r->path);
	printf(",\"program\":");
	tprof_json_str(stdout, r->program);
	printf(",\"pid\":%" PRIu64 "}", r->pid);
}

/* Before a value: its JSON member name, or the CSV field separator. */
static void put_key(const char *name, int json)
{
	if (json)
		printf(",\"%s\":", name);
	else
		putchar(',');
}

static void put_steps(const struct diff *d, int json)
{
	const struct step_cmp *c = &d->st;
	const struct ops_dist *sa = &d->a->steps, *sb = &d->b->steps;
	if (json)
		printf("\"count_a\":%zu,\"count_b\":%zu", sa->n, sb->n);
	else
		printf("%zu,%zu", sa->n, sb->n);
	const double v[] = {sa->mean, sb->mean, sa->sd, sb->sd, sa->ci_lo, sa->ci_hi, sb->ci_lo, sb->ci_hi};
	const char *names[] = {"mean_ns_a", "mean_ns_b", "std_ns_a", "std_ns_b",
			       "ci95_lo_ns_a", "ci95_hi_ns_a", "ci95_lo_ns_b", "ci95_hi_ns_b"};
	for (int k = 0; k < 8; k++) {
		put_key(names[k], json);
		printf("%.0f", v[k]);
	}
	put_key("delta_mean_ns", json);
	printf("%.0f", m_delta(&c->mean));
	put_key("rel", json);
	put_num(stdout, m_rel(&c->mean));
	put_key("delta_ci95_lo_ns", json);
	if (c->have_ci)
		printf("%.0f", c->lo);
	else if (json)
		printf("null");
	put_key("delta_ci95_hi_ns", json);
	if (c->have_ci)
		printf("%.0f", c->hi);
	else if (json)
		printf("null");
	put_key("verdict", json);
	if (json)
		tprof_json_str(stdout, c->verdict);
	else
		tprof_csv_str(stdout, c->verdict);
	put_metric("flops_per_step", &c->flops, json);
	put_key("gflops_per_s_a", json);
	put_num(stdout, c->gflops_a);
	put_key("gflops_per_s_b", json);
	put_num(stdout, c->gflops_b);
}

#define OPS_CSV_HEADER                                                                             \
	"name,status,calls_a,calls_b,calls_delta,calls_rel,self_ns_a,self_ns_b,self_ns_delta,self_ns_rel," \
	"total_ns_a,total_ns_b,total_ns_delta,total_ns_rel,flops_a,flops_b,flops_delta,flops_rel,"        \
	"gflops_per_s_a,gflops_per_s_b,gflops_per_s_delta,gflops_per_s_rel"

static void put_op(const struct op_pair *p, int json)
{
	if (json) {
		printf("{\"name\":");
		tprof_json_str(stdout, p->name);
		printf(",\"status\":\"%s\"", p->status);
	} else {
		tprof_csv_str(stdout, p->name);
		printf(",%s", p->status);
	}
	put_metric("calls", &p->calls, json);
	put_metric("self_ns", &p->self, json);
	put_metric("total_ns", &p->total, json);
	put_metric("flops", &p->flops, json);
	put_metric("gflops_per_s", &p->gflops, json);
	printf(json ? "}" : TPROF_CSV_EOL);
}

#define SITES_CSV_HEADER                                                                            \
	"site,stack,truncated,status,allocations_a,allocations_b,allocations_delta,allocations_rel,"      \
	"bytes_a,bytes_b,bytes_delta,bytes_rel,leaked_bytes_a,leaked_bytes_b,leaked_bytes_delta,"          \
	"leaked_bytes_rel,leaked_blocks_a,leaked_blocks_b,leaked_blocks_delta,leaked_blocks_rel"

static void put_site(const struct site_pair *p, int json)
{
	const struct site *s = p->s;
	if (json) {
		printf("{\"site\":");
		tprof_json_str(stdout, s->frames[0]);
		printf(",\"stack\":[");
		for (size_t i = 0; i < s->nframes; i++) {
			if (i)
				putchar(',');
			tprof_json_str(stdout, s->frames[i]);
		}
		printf("],\"truncated\":%s,\"status\":\"%s\"", s->truncated ? "true" : "false", p->status);
	} else {
		tprof_csv_str(stdout, s->frames[0]);
		putchar(',');
		size_t len = 1;
		for (size_t i = 0; i < s->nframes; i++)
			len += strlen(s->frames[i]) + 1;
		char *stack = xmalloc(len), *w = stack;
		for (size_t i = 0; i < s->nframes; i++)
			w += sprintf(w, "%s%s", i ? ";" : "", s->frames[i]);
		tprof_csv_str(stdout, stack);
		free(stack);
		printf(",%s,%s", s->truncated ? "true" : "false", p->status);
	}
	put_metric("allocations", &p->allocs, json);
	put_metric("bytes", &p->bytes, json);
	put_metric("leaked_bytes", &p->leaked_bytes, json);
	put_metric("leaked_blocks", &p->leaked_blocks, json);
	printf(json ? "}" : TPROF_CSV_EOL);
}

static void print_json(const struct diff *d)
{
	printf("{");
	json_run("a", d->a);
	putchar(',');
	json_run("b", d->b);
	printf(",\"summary\":[");
	for (size_t i = 0; i < d->nsum; i++) {
		const struct summary_row *r = &d->sum[i];
		printf("%s{\"metric\":\"%s\"", i ? "," : "", r->metric);
		put_metric("", &r->m, 1);
		putchar('}');
	}
	printf("],\"steps\":");
	if (d->have_steps) {
		putchar('{');
		put_steps(d, 1);
		putchar('}');
	} else {
		printf("null");
	}
	printf(",\"ops_total\":%zu,\"ops\":[", d->nops);
	for (size_t i = 0; i < d->shown_ops; i++) {
		if (i)
			putchar(',');
		put_op(&d->ops[i], 1);
	}
	printf("],\"sites_total\":%zu,\"sites\":[", d->nsites);
	for (size_t i = 0; i < d->shown_sites; i++) {
		if (i)
			putchar(',');
		put_site(&d->sites[i], 1);
	}
	printf("]}\n");
}

static void print_csv(const struct diff *d, int table)
{
	switch (table) {
	case 1:
		printf("metric,a,b,delta,rel" TPROF_CSV_EOL);
		for (size_t i = 0; i < d->nsum; i++) {
			printf("%s", d->sum[i].metric);
			put_metric("", &d->sum[i].m, 0);
			printf(TPROF_CSV_EOL);
		}
		break;
	case 2:
		printf(OPS_CSV_HEADER TPROF_CSV_EOL);
		for (size_t i = 0; i < d->shown_ops; i++)
			put_op(&d->ops[i], 0);
		break;
	case 3:
		printf(SITES_CSV_HEADER TPROF_CSV_EOL);
		for (size_t i = 0; i < d->shown_sites; i++)
			put_site(&d->sites[i], 0);
		break;
	case 4:
		printf("count_a,count_b,mean_ns_a,mean_ns_b,std_ns_a,std_ns_b,ci95_lo_ns_a,ci95_hi_ns_a,ci95_lo_ns_b,"
		       "ci95_hi_ns_b,delta_mean_ns,rel,delta_ci95_lo_ns,delta_ci95_hi_ns,verdict,flops_per_step_a,"
		       "flops_per_step_b,flops_per_step_delta,flops_per_step_rel,gflops_per_s_a,gflops_per_s_b" TPROF_CSV_EOL);
		if (d->have_steps) {
			put_steps(d, 0);
			printf(TPROF_CSV_EOL);
		}
		break;
	}
}

static void text_run(const char *which, const struct run *r)
{
	printf("  %s  ", which);
	tprof_text_str(stdout, r->path, 0);
	printf(" (");
	tprof_text_str(stdout, r->program, 0);
	printf(", pid %" PRIu64 ")\n", r->pid);
}

static void print_text_steps(const struct diff *d)
{
	const struct step_cmp *c = &d->st;
	const struct ops_dist *sa = &d->a->steps, *sb = &d->b->steps;
	char x[48], y[48], z[48], w[48], r[16];
	if (!d->have_steps) {
		printf("\nsteps: %s\n", sa->n || sb->n ? "marked in one run only: no per-step comparison"
						     : "none marked (the program calls tprof_step() at iteration boundaries)");
		return;
	}
	printf("\nsteps: A %zu, B %zu%s\n", sa->n, sb->n, d->a->ops.steps_skipped ? " (after the warm-up skipped)" : "");
	printf("  time per step  A %s, 95%% CI [%s, %s]\n", fmt_val(sa->mean, U_NS, 0, x),
	       fmt_val(sa->ci_lo, U_NS, 0, y), fmt_val(sa->ci_hi, U_NS, 0, z));
	printf("                 B %s, 95%% CI [%s, %s]\n", fmt_val(sb->mean, U_NS, 0, x), fmt_val(sb->ci_lo, U_NS, 0, y),
	       fmt_val(sb->ci_hi, U_NS, 0, z));
	printf("  change         %s", fmt_val(m_delta(&c->mean), U_NS, 1, x));
	if (m_changed(&c->mean))
		printf(" (%s)", fmt_rel(&c->mean, r));
	if (!c->have_ci)
		printf(": too few steps to tell it from the noise (2 per run at least)\n");
	else
		printf(", 95%% CI of the change [%s, %s]: %s\n", fmt_val(c->lo, U_NS, 1, y), fmt_val(c->hi, U_NS, 1, w),
		       c->lo > 0 ? "slower, outside the noise"
		       : c->hi < 0 ? "faster, outside the noise"
				   : "within the noise");
	printf("  FLOPs per step A %s   B %s   change %s", fmt_val(c->flops.x, U_COUNT, 0, x),
	       fmt_val(c->flops.y, U_COUNT, 0, y), fmt_val(m_delta(&c->flops), U_COUNT, 1, z));
	if (m_changed(&c->flops))
		printf(" (%s)", fmt_rel(&c->flops, r));
	printf("\n  GFLOP/s over the steps  A %.3f   B %.3f\n", c->gflops_a, c->gflops_b);
}

static void print_text(const struct diff *d)
{
	char x[48], y[48], z[48], r[16];
	printf("tprof diff: what changed from A to B\n");
	text_run("A", d->a);
	text_run("B", d->b);
	printf("\n  %-26s %18s %18s %18s\n", "", "A", "B", "change");
	for (size_t i = 0; i < d->nsum; i++) {
		const struct summary_row *s = &d->sum[i];
		printf("  %-26s %18s %18s %18s", s->label, fmt_val(s->m.x, s->unit, 0, x), fmt_val(s->m.y, s->unit, 0, y),
		       m_changed(&s->m) ? fmt_val(m_delta(&s->m), s->unit, 1, z) : "=");
		if (m_changed(&s->m))
			printf(" %9s", fmt_rel(&s->m, r));
		putchar('\n');
	}
	print_text_steps(d);

	printf("\nops (%s%zu of %zu, by the change in self time; each cell: B, then its change from A)\n",
	       d->shown_ops < d->nops ? "the top " : "", d->shown_ops, d->nops);
	/* each cell: B in the column's unit, then the relative change (JSON and CSV: every figure) */
	double ms = 0, mt = 0;
	for (size_t i = 0; i < d->shown_ops; i++) {
		ms = d->ops[i].self.y > ms ? d->ops[i].self.y : ms;
		mt = d->ops[i].total.y > mt ? d->ops[i].total.y : mt;
	}
	struct tprof_unit us = tprof_ns_unit((uint64_t)ms), ut = tprof_ns_unit((uint64_t)mt);
	if (d->nops) {
		char h1[32], h2[32];
		snprintf(h1, sizeof(h1), "self %s", us.name);
		snprintf(h2, sizeof(h2), "total %s", ut.name);
		printf("%-21s %-7s %-16s %-19s %-19s %-16s %s\n", "op", "status", "calls", h1, h2, "GFLOP", "GFLOP/s");
	}
	for (size_t i = 0; i < d->shown_ops; i++) {
		const struct op_pair *p = &d->ops[i];
		char c1[64], c2[64], c3[64], c4[64], c5[64], v[32];
		tprof_text_cut(stdout, p->name, -21);
		snprintf(v, sizeof(v), "%.0f", p->calls.y);
		short_cell(&p->calls, v, c1);
		short_cell(&p->self, tprof_fmt_in((uint64_t)llround(p->self.y), us, v), c2);
		short_cell(&p->total, tprof_fmt_in((uint64_t)llround(p->total.y), ut, v), c3);
		snprintf(v, sizeof(v), "%.3f", p->flops.y / 1e9);
		short_cell(&p->flops, v, c4);
		snprintf(v, sizeof(v), "%.2f", p->gflops.y);
		short_cell(&p->gflops, v, c5);
		printf(" %-7s %-16s %-19s %-19s %-16s %s\n", p->status, c1, c2, c3, c4, c5);
	}

	printf("\nallocation sites (%s%zu of %zu, by the change in bytes allocated; each figure: B, then the "
	       "change from A)\n",
	       d->shown_sites < d->nsites ? "the top " : "", d->shown_sites, d->nsites);
	for (size_t i = 0; i < d->shown_sites; i++) {
		const struct site_pair *p = &d->sites[i];
		char c1[96], c2[96], c3[96], c4[96];
		printf("\n  %s: bytes allocated %s, allocations %s\n", p->status,
		       fmt_cell(&p->bytes, U_BYTES, c1, sizeof(c1)), fmt_cell(&p->allocs, U_COUNT, c2, sizeof(c2)));
		printf("  %*s  leaked %s in %s blocks\n", (int)strlen(p->status), "",
		       fmt_cell(&p->leaked_bytes, U_BYTES, c3, sizeof(c3)),
		       fmt_cell(&p->leaked_blocks, U_COUNT, c4, sizeof(c4)));
		for (size_t k = 0; k < p->s->nframes; k++) {
			printf("      %s ", k ? "by" : "at");
			tprof_text_str(stdout, p->s->frames[k], 0);
			putchar('\n');
		}
		if (p->s->truncated)
			printf("      ... (cut at the recorder's depth limit, TPROF_DEPTH)\n");
	}
}

/* diff's own option, for cmd_parse. */
static int parse_diff_opt(void *ctx, int argc, char **argv, int *i)
{
	struct ops_options *o = ctx;
	size_t n;
	if (strcmp(argv[*i], "--skip-steps") != 0)
		return CMD_OTHER;
	if (stacks_parse_top(*i + 1 < argc ? argv[++*i] : NULL, &n) != 0 || n > UINT32_MAX) {
		tprof_err("diff: --skip-steps needs a number of steps");
		return 1;
	}
	o->skip_steps = (unsigned)n;
	return CMD_RUN;
}

int cmd_diff(int argc, char **argv)
{
	static const char *const tables[] = {"summary", "ops", "sites", "steps", NULL};
	struct ops_options oo = {0};
	struct cmd_opts o = { .name = "diff", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP,
			      .top = DEFAULT_TOP, .takes = CMD_FILES_TWO, .csv_tables = tables,
			      .extra = parse_diff_opt, .ctx = &oo };
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	struct run a = {.path = o.files[0]}, b = {.path = o.files[1]};
	struct diff d = {.a = &a, .b = &b};
	if ((rc = load_run(&a, &oo)) != 0 || (rc = load_run(&b, &oo)) != 0)
		goto out;
	d.nsum = summary_rows(&a, &b, d.sum);
	d.have_steps = steps_compare(&a, &b, &d.st);
	d.ops = match_ops(&a, &b, &d.nops);
	d.sites = match_sites(&a, &b, &d.nsites);
	d.shown_ops = o.top && o.top < d.nops ? o.top : d.nops;
	d.shown_sites = o.top && o.top < d.nsites ? o.top : d.nsites;
	if (o.json)
		print_json(&d);
	else if (o.csv)
		print_csv(&d, o.csv);
	else
		print_text(&d);
out:
	free(d.ops);
	free(d.sites);
	run_free(&a);
	run_free(&b);
	return rc;
}
