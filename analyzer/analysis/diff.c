/* Implementation of analysis/diff.h: each run's figures read from its trace, allocation sites keyed
 * by the labels of their symbolized frames, and the two runs' ops and sites paired by a merge of
 * their sorted names and keys, then sorted by the size of the change. */
#include "analysis/diff.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap.h"
#include "base/util.h"

/* ---- one run */

static char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct diff_site *)a)->key, ((const struct diff_site *)b)->key);
}

/* The site of stack id (allocated at seq), its key built from the symbolized frames. */
static void site_of(struct stack_sym *ss, uint32_t id, uint64_t seq, struct diff_site *s)
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

static void site_free(struct diff_site *s)
{
	for (size_t i = 0; i < s->nframes; i++)
		free(s->frames[i]);
	free(s->frames);
	free(s->key);
}

int diff_run_read_ops(struct diff_run *r, struct tprof_trace *t, const struct ops_options *o)
{
	if (ops_analyze(t, o, &r->ops) != 0)
		return -1;
	r->program = xstrdup(t->info.program);
	r->pid = t->info.pid;
	ops_dist(r->ops.step_ns, r->ops.nsteps, &r->steps);
	return 0;
}

int diff_run_read_heap(struct diff_run *r, struct tprof_trace *t, struct stack_sym **ssp)
{
	struct heap_stats hs;
	struct stack_table tab;
	*ssp = NULL;
	stack_table_init(&tab, t);
	if (stacks_replay(t, UINT64_MAX, &hs, &tab) < 0) {
		heap_release(&hs);
		stack_table_free(&tab);
		return -1;
	}
	r->allocations = hs.allocations;
	r->bytes_allocated = hs.bytes_allocated;
	r->peak_bytes = hs.peak_bytes;
	r->leaked_bytes = hs.live_bytes;
	r->leaked_blocks = hs.live_blocks;
	/* Allocation counts first: stack_table_set_live replaces them by the live blocks. */
	struct stack_cost *alloc = xmalloc(tab.n * sizeof(*alloc));
	memcpy(alloc, tab.cost, tab.n * sizeof(*alloc));
	stack_table_set_live(&tab, &hs);
	struct stack_sym *ss = stack_sym_new(t);
	r->sites = xcalloc(tab.n, sizeof(*r->sites));
	for (uint32_t id = 0; id < tab.n; id++) {
		if (!alloc[id].blocks && !tab.cost[id].blocks)
			continue;
		struct diff_site *s = &r->sites[r->nsites++];
		site_of(ss, id, alloc[id].seq, s);
		s->allocs = alloc[id].blocks;
		s->bytes = alloc[id].bytes;
		s->leaked_bytes = tab.cost[id].bytes;
		s->leaked_blocks = tab.cost[id].blocks;
	}
	tprof_sort(r->sites, r->nsites, sizeof(*r->sites), by_key);
	size_t k = 0;
	for (size_t i = 0; i < r->nsites; i++) {
		struct diff_site *s = &r->sites[i];
		if (k && strcmp(r->sites[k - 1].key, s->key) == 0) {
			struct diff_site *m = &r->sites[k - 1];
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
	free(alloc);
	heap_release(&hs);
	stack_table_free(&tab);
	*ssp = ss;
	return 0;
}

void diff_run_free(struct diff_run *r)
{
	for (size_t i = 0; i < r->nsites; i++)
		site_free(&r->sites[i]);
	free(r->sites);
	free(r->program);
	ops_free(&r->ops);
}

/* ---- changes */

static struct diff_metric mint(uint64_t a, uint64_t b)
{
	return (struct diff_metric){0, a, b, (double)a, (double)b};
}

static struct diff_metric mflt(double x, double y)
{
	return (struct diff_metric){1, 0, 0, x, y};
}

double diff_delta(const struct diff_metric *m)
{
	return m->flt ? m->y - m->x : (double)(int64_t)(m->b - m->a);
}

int diff_changed(const struct diff_metric *m)
{
	return m->flt ? m->x != m->y : m->a != m->b;
}

double diff_rel(const struct diff_metric *m)
{
	if (!diff_changed(m))
		return 0;
	return m->x != 0 ? diff_delta(m) / m->x : NAN;
}

const char *diff_status_name(enum diff_status s)
{
	switch (s) {
	case DIFF_SAME:
		return "same";
	case DIFF_CHANGED:
		return "changed";
	case DIFF_ADDED:
		return "added";
	case DIFF_REMOVED:
		return "removed";
	}
	return "?";
}

const char *diff_verdict_name(enum diff_verdict v)
{
	switch (v) {
	case DIFF_TOO_FEW_STEPS:
		return "too few steps";
	case DIFF_SLOWER:
		return "slower";
	case DIFF_FASTER:
		return "faster";
	case DIFF_WITHIN_NOISE:
		return "within noise";
	}
	return "?";
}

static double rate(uint64_t flops, uint64_t ns)
{
	return ns ? (double)flops / (double)ns : 0;
}

/* Descending by |a|, then by |b|, ...: the first key that differs decides. */
static int cmp_abs(double a, double b)
{
	a = fabs(a), b = fabs(b);
	return a > b ? -1 : a < b;
}

/* ---- ops matched by name */

static int row_by_name(const void *a, const void *b)
{
	return strcmp(((const struct ops_row *)a)->name, ((const struct ops_row *)b)->name);
}

static void op_fill(struct diff_op *p, const struct ops_row *x, const struct ops_row *y)
{
	static const struct ops_row none;
	const struct ops_row *a = x ? x : &none, *b = y ? y : &none;
	p->name = x ? x->name : y->name;
	p->calls = mint(a->calls, b->calls);
	p->self_ns = mint(a->self_ns, b->self_ns);
	p->total_ns = mint(a->total_ns, b->total_ns);
	p->flops = mint(a->flops, b->flops);
	p->gflops = mflt(rate(a->flops, a->total_ns), rate(b->flops, b->total_ns));
	if (!x)
		p->status = DIFF_ADDED;
	else if (!y)
		p->status = DIFF_REMOVED;
	else if (diff_changed(&p->calls) || diff_changed(&p->self_ns) || diff_changed(&p->total_ns) ||
		 diff_changed(&p->flops))
		p->status = DIFF_CHANGED;
	else
		p->status = DIFF_SAME;
}

static int op_cmp(const void *pa, const void *pb)
{
	const struct diff_op *x = pa, *y = pb;
	int c;
	if ((c = cmp_abs(diff_delta(&x->self_ns), diff_delta(&y->self_ns))) ||
	    (c = cmp_abs(diff_delta(&x->flops), diff_delta(&y->flops))) ||
	    (c = cmp_abs(diff_delta(&x->calls), diff_delta(&y->calls))) ||
	    (c = cmp_abs(diff_delta(&x->total_ns), diff_delta(&y->total_ns))))
		return c;
	return strcmp(x->name, y->name);
}

/* The ops of both runs matched by name, largest change first; *n receives the count. */
static struct diff_op *match_ops(struct diff_run *a, struct diff_run *b, size_t *n)
{
	struct ops_result *ra = &a->ops, *rb = &b->ops;
	tprof_sort(ra->rows, ra->nrows, sizeof(struct ops_row), row_by_name);
	tprof_sort(rb->rows, rb->nrows, sizeof(struct ops_row), row_by_name);
	struct diff_op *p = xcalloc(ra->nrows + rb->nrows + 1, sizeof(*p));
	size_t i = 0, j = 0, k = 0;
	while (i < ra->nrows || j < rb->nrows) {
		int c = i == ra->nrows ? 1 : j == rb->nrows ? -1 : strcmp(ra->rows[i].name, rb->rows[j].name);
		op_fill(&p[k++], c <= 0 ? &ra->rows[i] : NULL, c >= 0 ? &rb->rows[j] : NULL);
		i += c <= 0;
		j += c >= 0;
	}
	tprof_sort(p, k, sizeof(*p), op_cmp);
	*n = k;
	return p;
}

/* ---- allocation sites matched by frames */

static int site_cmp(const void *pa, const void *pb)
{
	const struct diff_site_pair *x = pa, *y = pb;
	int c;
	if ((c = cmp_abs(diff_delta(&x->bytes), diff_delta(&y->bytes))) ||
	    (c = cmp_abs(diff_delta(&x->leaked_bytes), diff_delta(&y->leaked_bytes))) ||
	    (c = cmp_abs(diff_delta(&x->allocs), diff_delta(&y->allocs))) ||
	    (c = cmp_abs(diff_delta(&x->leaked_blocks), diff_delta(&y->leaked_blocks))))
		return c;
	return strcmp(x->s->key, y->s->key);
}

/* The sites of both runs matched by key, largest change first; *n receives the count. */
static struct diff_site_pair *match_sites(const struct diff_run *a, const struct diff_run *b, size_t *n)
{
	static const struct diff_site none;
	struct diff_site_pair *p = xcalloc(a->nsites + b->nsites + 1, sizeof(*p));
	size_t i = 0, j = 0, k = 0;
	while (i < a->nsites || j < b->nsites) {
		int c = i == a->nsites ? 1 : j == b->nsites ? -1 : strcmp(a->sites[i].key, b->sites[j].key);
		const struct diff_site *x = c <= 0 ? &a->sites[i] : &none, *y = c >= 0 ? &b->sites[j] : &none;
		struct diff_site_pair *q = &p[k++];
		q->s = c >= 0 ? y : x;
		q->allocs = mint(x->allocs, y->allocs);
		q->bytes = mint(x->bytes, y->bytes);
		q->leaked_bytes = mint(x->leaked_bytes, y->leaked_bytes);
		q->leaked_blocks = mint(x->leaked_blocks, y->leaked_blocks);
		if (c > 0)
			q->status = DIFF_ADDED;
		else if (c < 0)
			q->status = DIFF_REMOVED;
		else if (diff_changed(&q->allocs) || diff_changed(&q->bytes) || diff_changed(&q->leaked_bytes) ||
			 diff_changed(&q->leaked_blocks))
			q->status = DIFF_CHANGED;
		else
			q->status = DIFF_SAME;
		i += c <= 0;
		j += c >= 0;
	}
	tprof_sort(p, k, sizeof(*p), site_cmp);
	*n = k;
	return p;
}

/* ---- summary and steps */

static double per_step(const struct diff_run *r)
{
	return r->steps.n ? (double)r->ops.step_flops / (double)r->steps.n : 0;
}

static void add_row(struct diff_result *d, enum diff_figure fig, struct diff_metric m)
{
	d->sum[d->nsum++] = (struct diff_summary_row){fig, m};
}

/* The summary's rows into d->sum, in the order of enum diff_figure; the per-step rows only when
 * both runs have steps. */
static void summary_rows(struct diff_result *d, const struct diff_run *a, const struct diff_run *b)
{
	int marked = a->ops.step_marks && b->ops.step_marks, steps = a->steps.n && b->steps.n;
	add_row(d, DIFF_WALL_NS, mint(a->wall_ns, b->wall_ns));
	add_row(d, DIFF_KERNEL_NS, mint(a->ops.in_ops_ns, b->ops.in_ops_ns));
	if (marked)
		add_row(d, DIFF_STEPS, mint(a->steps.n, b->steps.n));
	if (steps) /* the means unrounded: the change and its ratio from them */
		add_row(d, DIFF_STEP_MEAN_NS, mflt(a->steps.mean, b->steps.mean));
	add_row(d, DIFF_PEAK_BYTES, mint(a->peak_bytes, b->peak_bytes));
	add_row(d, DIFF_LEAKED_BYTES, mint(a->leaked_bytes, b->leaked_bytes));
	add_row(d, DIFF_LEAKED_BLOCKS, mint(a->leaked_blocks, b->leaked_blocks));
	add_row(d, DIFF_BYTES_ALLOCATED, mint(a->bytes_allocated, b->bytes_allocated));
	add_row(d, DIFF_ALLOCATIONS, mint(a->allocations, b->allocations));
	add_row(d, DIFF_FLOPS, mint(a->ops.top_flops, b->ops.top_flops));
	add_row(d, DIFF_GFLOPS_PER_S,
		mflt(rate(a->ops.top_flops, a->ops.in_ops_ns), rate(b->ops.top_flops, b->ops.in_ops_ns)));
	if (steps)
		add_row(d, DIFF_FLOPS_PER_STEP, mflt(per_step(a), per_step(b)));
}

/* The per-step comparison into d->steps when both runs mark steps. */
static void steps_compare(struct diff_result *d, const struct diff_run *a, const struct diff_run *b)
{
	struct diff_steps *c = &d->steps;
	/* both runs mark steps (tprof_step), though one may keep fewer than one after --skip-steps: the
	 * verdict is then "too few steps" */
	d->have_steps = a->ops.step_marks && b->ops.step_marks;
	if (!d->have_steps)
		return;
	c->mean = mflt(a->steps.mean, b->steps.mean);
	c->flops = mflt(per_step(a), per_step(b));
	c->gflops_a = rate(a->ops.step_flops, a->ops.steps_ns);
	c->gflops_b = rate(b->ops.step_flops, b->ops.steps_ns);
	c->have_ci = ops_diff_ci(&a->steps, &b->steps, &c->lo, &c->hi) == 0;
	if (!c->have_ci)
		c->verdict = DIFF_TOO_FEW_STEPS;
	else if (c->lo > 0)
		c->verdict = DIFF_SLOWER;
	else if (c->hi < 0)
		c->verdict = DIFF_FASTER;
	else
		c->verdict = DIFF_WITHIN_NOISE;
}

void diff_compare(struct diff_result *d, struct diff_run *a, struct diff_run *b)
{
	memset(d, 0, sizeof(*d));
	d->a = a;
	d->b = b;
	summary_rows(d, a, b);
	steps_compare(d, a, b);
	d->ops = match_ops(a, b, &d->nops);
	d->sites = match_sites(a, b, &d->nsites);
}

void diff_free(struct diff_result *d)
{
	free(d->ops);
	free(d->sites);
	d->ops = NULL;
	d->sites = NULL;
}
