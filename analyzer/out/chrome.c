/* Implementation of out/chrome.h: writes the timeline (analysis/timeline.c) as trace-event JSON.
 * Times are printed as microseconds with three decimals from the timeline's integer nanoseconds. */
#include "out/chrome.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* ---- writing ---- */

/* Microseconds with three decimals: exact nanoseconds, no floating-point rounding. */
static void put_us(FILE *f, uint64_t ns)
{
	fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

struct out {
	FILE *f;
	const struct chrome_doc *d;
	uint64_t pid;
	int first;
};

/* Opens one event. "ph" and "ts" come first: some versions of Perfetto's importer find "ts" by
 * scanning the event's keys in order and give up at a string escape they do not know (\u). */
static void ev_begin(struct out *w, const char *ph, uint64_t ts_ns, uint64_t tid)
{
	fputs(w->first ? "\n" : ",\n", w->f);
	w->first = 0;
	fprintf(w->f, "{\"ph\":\"%s\",\"ts\":", ph);
	put_us(w->f, ts_ns);
	fprintf(w->f, ",\"pid\":%" PRIu64 ",\"tid\":%" PRIu64, w->pid, tid);
}

static void meta(struct out *w, uint64_t tid, const char *what, const char *key, const char *str, long num)
{
	ev_begin(w, "M", 0, tid);
	fprintf(w->f, ",\"name\":\"%s\",\"args\":{\"%s\":", what, key);
	if (str)
		tprof_json_str(w->f, str);
	else
		fprintf(w->f, "%ld", num);
	fputs("}}", w->f);
}

static const char *annot_name(const struct tprof_trace *t, uint32_t id)
{
	return id && id < t->nannot_names && t->annot_names[id] ? t->annot_names[id] : "?";
}

/* {"M":64,"N":768,"K":768}: the shape values named by the op's NAMES detail ("M,N,K"). */
static void put_shape(FILE *f, const struct tprof_trace *t, const struct tprof_kcall *k)
{
	const char *sn = t->op_shape_names && k->op < t->nop_names && t->op_shape_names[k->op]
				 ? t->op_shape_names[k->op]
				 : "";
	fputc('{', f);
	for (unsigned i = 0; i < k->nshape; i++) {
		const char *comma = strchr(sn, ',');
		size_t nl = comma ? (size_t)(comma - sn) : strlen(sn);
		while (nl && *sn == ' ')
			sn++, nl--;
		char key[64];
		if (nl && nl < sizeof(key))
			snprintf(key, sizeof(key), "%.*s", (int)nl, sn);
		else
			snprintf(key, sizeof(key), "s%u", i);
		if (i)
			fputc(',', f);
		tprof_json_str(f, key);
		fprintf(f, ":%lld", (long long)t->kshape[k->shape_at + i]);
		sn = comma ? comma + 1 : sn + nl;
	}
	fputc('}', f);
}

static void put_recorded(FILE *f, const struct slice *s)
{
	fputs(",\"recorded_ts\":", f);
	put_us(f, s->rec_start);
	fputs(",\"recorded_dur\":", f);
	put_us(f, s->rec_end - s->rec_start);
}

/* "name":true in an args object that already holds n members; returns n + 1. */
static int put_flag(FILE *f, int n, const char *name)
{
	fprintf(f, "%s\"%s\":true", n ? "," : "", name);
	return n + 1;
}

static void put_slice(struct out *w, uint32_t tid, const struct slice *s)
{
	const struct tprof_trace *t = w->d->t;
	FILE *f = w->f;
	ev_begin(w, "X", s->start, tid);
	fputs(",\"dur\":", f);
	put_us(f, s->end - s->start);
	if (s->kind == SL_KERNEL) {
		const struct tprof_kcall *k = &t->kcalls[s->ix];
		uint64_t dur = s->rec_end - s->rec_start;
		fputs(",\"cat\":\"kernel\",\"name\":", f);
		tprof_json_str(f, t->op_names && k->op < t->nop_names && t->op_names[k->op] ? t->op_names[k->op] : "?");
		fprintf(f, ",\"args\":{\"flops\":%" PRIu64 ",\"bytes\":%" PRIu64, k->flops, k->bytes);
		if (dur)
			fprintf(f, ",\"gflops_per_s\":%.6g", (double)k->flops / (double)dur);
		if (k->bytes)
			fprintf(f, ",\"intensity\":%.6g", (double)k->flops / (double)k->bytes);
		fputs(",\"shape\":", f);
		put_shape(f, t, k);
	} else if (s->kind == SL_RANGE) {
		fputs(",\"cat\":\"range\",\"name\":", f);
		tprof_json_str(f, annot_name(t, s->name));
		fputs(",\"args\":{", f);
		int n = 0;
		if (s->flags & F_UNCLOSED)
			n = put_flag(f, n, "unclosed");
		if (s->flags & F_CUT)
			n = put_flag(f, n, "cut_at_steps");
		if (s->flags & F_SNAPPED)
			n = put_flag(f, n, "moved_out_of_kernel");
		if (s->flags & F_CLIPPED)
			n = put_flag(f, n, "clipped_to_nest");
		if (s->flags & (F_CUT | F_SNAPPED | F_CLIPPED)) /* n > 0: a member precedes */
			put_recorded(f, s);
		fputs("}}", f);
		return;
	} else {
		fprintf(f, ",\"cat\":\"step\",\"name\":\"step %zu\",\"args\":{\"step\":%zu", s->ix, s->ix);
	}
	if (s->flags & F_CLIPPED) { /* args are not empty here */
		put_flag(f, 1, "clipped_to_nest");
		put_recorded(f, s);
	}
	fputs("}}", f);
}

static void put_counter(struct out *w, const char *name, const struct series *c)
{
	for (size_t i = 0; i < c->n; i++) {
		ev_begin(w, "C", c->out[i].t, w->pid);
		fprintf(w->f, ",\"name\":\"%s\",\"args\":{\"bytes\":%" PRIu64 "}}", name, c->out[i].v);
	}
}

static uint64_t counter_max(const struct series *c)
{
	uint64_t m = 0;
	for (size_t i = 0; i < c->n; i++)
		if (c->out[i].v > m)
			m = c->out[i].v;
	return m;
}

/* For each annotation name id, the id of the first name written the same in JSON (invalid UTF-8 is
 * U+FFFD there: "x\xff", "x\xfe" and a U+FFFD of its own make one key), so that params holds each
 * key once. */
struct param_key {
	char *json;
	uint32_t id;
};

static int param_key_cmp(const void *a, const void *b)
{
	const struct param_key *x = a, *y = b;
	int c = strcmp(x->json, y->json);
	return c ? c : (x->id > y->id) - (x->id < y->id);
}

static uint32_t *param_keys(const struct tprof_trace *t, size_t nn)
{
	uint32_t *key = xcalloc(nn, sizeof(*key));
	struct param_key *k = xcalloc(nn, sizeof(*k));
	for (size_t i = 0; i < nn; i++) {
		/* a U+FFFD of the name's own reads as the \ufffd an invalid byte is written as: it
		 * becomes such a byte (0xff) before the name is written */
		const char *name = annot_name(t, (uint32_t)i);
		char *norm = xstrndup(name, strlen(name));
		for (char *r; (r = strstr(norm, "\xef\xbf\xbd"));)
			memmove(r, "\xff", 1), memmove(r + 1, r + 3, strlen(r + 3) + 1);
		size_t len = 0;
		FILE *m = open_memstream(&k[i].json, &len);
		if (m) {
			tprof_json_str(m, norm);
			fclose(m);
		}
		free(norm);
		if (!k[i].json)
			k[i].json = xstrndup("", 0);
		k[i].id = (uint32_t)i;
	}
	qsort(k, nn, sizeof(*k), param_key_cmp);
	for (size_t i = 0; i < nn; i++) {
		key[k[i].id] = i && strcmp(k[i].json, k[i - 1].json) == 0 ? key[k[i - 1].id] : k[i].id;
		if (i)
			free(k[i - 1].json);
	}
	if (nn)
		free(k[nn - 1].json);
	free(k);
	return key;
}

static void put_other(const struct chrome_doc *d, FILE *f)
{
	const struct tprof_trace *t = d->t;
	const struct chrome_options *o = &d->o;
	fputs("\"otherData\":{\"exporter\":\"tprof export --chrome\",\"trace_format_version\":", f);
	fprintf(f, "%d,\"program\":", TPROF_VERSION);
	tprof_json_str(f, t->info.program);
	fputs(",\"exe\":", f);
	tprof_json_str(f, t->info.exe);
	fputs(",\"argv\":[", f);
	for (uint64_t i = 0; i < t->info.argc && t->info.argv; i++) {
		if (i)
			fputc(',', f);
		tprof_json_str(f, t->info.argv[i]);
	}
	fprintf(f, "],\"pid\":%" PRIu64 ",\"complete\":%s,\"lost_events\":%" PRIu64, t->info.pid,
		t->complete ? "true" : "false", t->lost_events);
	fprintf(f, ",\"peak_bytes\":%" PRIu64 ",\"peak_ts\":", d->peak_bytes);
	put_us(f, d->peak_ns);
	fprintf(f, ",\"kernel_calls\":%zu,\"kernel_slices\":%" PRIu64 ",\"range_slices\":%" PRIu64
		   ",\"marks\":%" PRIu64 ",\"step_slices\":%zu,\"steps_tid\":%u",
		t->nkcalls, d->kernels, d->ranges, d->marks, d->nsteps, CHROME_STEPS_TID);
	fprintf(f, ",\"heap_changes\":%" PRIu64 ",\"heap_samples\":%zu,\"heap_max_bytes\":%" PRIu64,
		d->heap.changes, d->heap.n, counter_max(&d->heap));
	fprintf(f, ",\"rss_samples\":%zu,\"rss_max_bytes\":%" PRIu64, d->rss.n, counter_max(&d->rss));
	fprintf(f, ",\"min_dur_ns\":%" PRIu64 ",\"dropped_shorter_than_min_dur\":%" PRIu64, o->min_dur_ns,
		d->short_kernels);
	if (o->steps) {
		fprintf(f, ",\"steps\":{\"first\":%" PRIu64 ",\"last\":", o->step_first);
		if (o->step_last == UINT64_MAX)
			fputs("null", f);
		else
			fprintf(f, "%" PRIu64, o->step_last);
		fputs(",\"window_start\":", f);
		put_us(f, d->w0);
		fputs(",\"window_end\":", f);
		if (d->w1 == UINT64_MAX)
			fputs("null", f);
		else
			put_us(f, d->w1);
		fprintf(f, ",\"dropped_kernels\":%" PRIu64 ",\"dropped_ranges\":%" PRIu64 ",\"dropped_marks\":%" PRIu64 "}",
			d->out_kernels, d->out_ranges, d->out_marks);
	} else {
		fputs(",\"steps\":null", f);
	}
	fprintf(f, ",\"ranges_unclosed\":%" PRIu64 ",\"ranges_snapped\":%" PRIu64 ",\"slices_clipped\":%" PRIu64,
		d->unclosed, d->snapped, d->clipped);
	/* the program's tprof_param() values: the last one of each name, names in order of appearance */
	fputs(",\"params\":{", f);
	size_t nn = t->nannot_names + 1;
	uint32_t *key = param_keys(t, nn);
	int64_t *last = xcalloc(nn, sizeof(*last));
	size_t *first = xcalloc(nn, sizeof(*first)); /* index + 1 of the name's first value; 0: none */
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *a = &t->annots[i];
		if (a->kind != TPROF_ANNOT_PARAM || a->name >= nn)
			continue;
		if (!first[key[a->name]])
			first[key[a->name]] = i + 1;
		last[key[a->name]] = a->value;
	}
	int any = 0;
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *a = &t->annots[i];
		if (a->kind != TPROF_ANNOT_PARAM || a->name >= nn || first[key[a->name]] != i + 1)
			continue;
		fputs(any ? "," : "", f);
		any = 1;
		tprof_json_str(f, annot_name(t, a->name));
		fprintf(f, ":%" PRId64, last[key[a->name]]);
	}
	free(last);
	free(first);
	free(key);
	fputs("}}", f);
}

void chrome_write(const struct chrome_doc *d, FILE *f)
{
	const struct tprof_trace *t = d->t;
	struct out w = {f, d, t->info.pid, 1};
	fputs("{\"traceEvents\":[", f);
	meta(&w, w.pid, "process_name", "name", t->info.program ? t->info.program : "", 0);
	if (d->nsteps || d->nbounds) {
		meta(&w, CHROME_STEPS_TID, "thread_name", "name", "steps", 0);
		meta(&w, CHROME_STEPS_TID, "thread_sort_index", "sort_index", NULL, 0);
	}
	for (size_t i = 0; i < d->nth; i++) {
		const struct cthread *h = &d->th[i];
		const char *name = tprof_trace_thread_name(t, h->tid);
		if (name && *name)
			meta(&w, h->tid, "thread_name", "name", name, 0);
		/* the main thread first, then the others as they began */
		meta(&w, h->tid, "thread_sort_index", "sort_index", NULL, h->tid == w.pid ? 1 : (long)i + 2);
	}
	for (size_t i = 0; i < d->nth; i++)
		for (size_t j = 0; j < d->th[i].nall; j++)
			put_slice(&w, d->th[i].tid, &d->th[i].all[j]);
	for (size_t i = 0; i < d->nsteps; i++)
		put_slice(&w, CHROME_STEPS_TID, &d->steps[i]);
	for (size_t i = 0; i < d->nbounds; i++)
		if (in_window(d, d->bounds[i]) || (d->w1 != UINT64_MAX && d->bounds[i] == d->w1)) {
			ev_begin(&w, "i", d->bounds[i], CHROME_STEPS_TID);
			fprintf(f, ",\"s\":\"t\",\"cat\":\"step\",\"name\":\"step boundary\",\"args\":{\"boundary\":%zu}}", i);
		}
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *a = &t->annots[i];
		uint64_t ns = tprof_trace_ns(t, a->tick);
		if (a->kind != TPROF_ANNOT_MARK || !in_window(d, ns))
			continue;
		ev_begin(&w, "i", ns, a->tid);
		fputs(",\"s\":\"t\",\"cat\":\"mark\",\"name\":", f);
		tprof_json_str(f, annot_name(t, a->name));
		fputc('}', f);
	}
	put_counter(&w, "live heap", &d->heap);
	put_counter(&w, "RSS", &d->rss);
	fputs("\n],\n", f);
	put_other(d, f);
	fputs("}\n", f);
}
