/* Implementation of out/table.h. JSON containers nest on a small stack of "first member" flags;
 * inside a row the keys come from the table's columns, checked against the values' types, so a
 * command cannot write a member its CSV header lacks or write them in another order. */
#include "out/table.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "out/frames.h"

__attribute__((noreturn)) static void misuse(const struct out *o, const char *what)
{
	const char *name = !o->t ? "-" : o->t->csv ? o->t->csv : o->t->json ? o->t->json : "(top level)";
	tprof_bug("output table %s, column %zu: %s", name, o->col, what);
}

/* ---- JSON structure ---- */

static void json_sep(struct out *o)
{
	if (o->depth > 0) {
		if (!o->first[o->depth - 1])
			fputc(',', o->f);
		o->first[o->depth - 1] = 0;
	}
}

static void json_key(struct out *o, const char *key)
{
	json_sep(o);
	if (key) {
		tprof_json_str(o->f, key);
		fputc(':', o->f);
	}
}

static void json_open(struct out *o, const char *key, char c)
{
	json_key(o, key);
	fputc(c, o->f);
	if (o->depth == OUT_DEPTH)
		misuse(o, "JSON nested too deep");
	o->first[o->depth++] = 1;
}

static void json_close(struct out *o, char c)
{
	if (o->depth == 0)
		misuse(o, "closing a JSON container never opened");
	o->depth--;
	fputc(c, o->f);
}

/* ---- CSV ---- */

static void csv_sep(struct out *o)
{
	if (o->csv_field)
		fputc(',', o->f);
	o->csv_field = 1;
}

static const char *pair_part(const char *name, const char *part, char *buf, size_t len)
{
	size_t n = strlen(name);
	if (n > 3 && strcmp(name + n - 3, "_ns") == 0)
		snprintf(buf, len, "%.*s_%s_ns", (int)(n - 3), name, part);
	else
		snprintf(buf, len, "%s_%s", name, part);
	return buf;
}

void out_csv_header(FILE *f, const struct out_table *t)
{
	int first = 1;
	for (size_t i = 0; i < t->ncols; i++) {
		const struct out_col *c = &t->cols[i];
		char buf[256];
		if (c->type == OUT_LIST)
			continue;
		if (!first)
			fputc(',', f);
		first = 0;
		if (c->type == OUT_STACK) {
			fputs(STACK_CSV_HEADER, f);
		} else if (c->type == OUT_PAIR) {
			fputs(pair_part(c->name, "lo", buf, sizeof(buf)), f);
			fputc(',', f);
			fputs(pair_part(c->name, "hi", buf, sizeof(buf)), f);
		} else if (c->group) {
			fprintf(f, "%s_%s", c->group, c->name);
		} else {
			fputs(c->name, f);
		}
	}
	fputs(TPROF_CSV_EOL, f);
}

/* ---- the document ---- */

void out_begin(struct out *o, FILE *f, enum out_format fmt, const char *csv_table)
{
	memset(o, 0, sizeof(*o));
	o->f = f;
	o->fmt = fmt;
	o->csv = csv_table;
	if (fmt == OUT_JSON)
		json_open(o, NULL, '{');
}

int out_end(struct out *o)
{
	if (o->t || o->in_row)
		misuse(o, "document ended inside a table");
	if (o->fmt == OUT_JSON) {
		json_close(o, '}');
		fputc('\n', o->f);
		if (o->depth)
			misuse(o, "document ended with JSON containers open");
	}
	if (o->fmt == OUT_CSV && !o->csv_done)
		misuse(o, "the CSV table asked for was never written");
	return ferror(o->f) ? -1 : 0;
}

void out_table_begin(struct out *o, const struct out_table *t)
{
	if (o->t)
		misuse(o, "table begun inside a table");
	o->t = t;
	o->col = 0;
	if (o->fmt == OUT_JSON) {
		if (!(t->flags & OUT_INLINE))
			json_open(o, t->json, t->flags & OUT_OBJECT ? '{' : '[');
	} else if (o->fmt == OUT_CSV) {
		o->on = t->csv && (!o->csv || !*o->csv || strcmp(t->csv, o->csv) == 0) && !o->csv_done;
		if (o->on)
			out_csv_header(o->f, t);
	}
}

void out_table_end(struct out *o)
{
	if (!o->t || o->in_row)
		misuse(o, "table ended outside a table or inside a row");
	if (o->fmt == OUT_JSON && !(o->t->flags & OUT_INLINE))
		json_close(o, o->t->flags & OUT_OBJECT ? '}' : ']');
	if (o->fmt == OUT_CSV && o->on)
		o->csv_done = 1;
	o->on = 0;
	o->t = NULL;
}

int out_table_written(const struct out *o)
{
	return o->fmt == OUT_JSON || (o->fmt == OUT_CSV && o->on);
}

void out_row_begin(struct out *o)
{
	if (!o->t || o->in_row)
		misuse(o, "row begun outside a table or inside a row");
	o->in_row = 1;
	o->tail = 0;
	o->col = 0;
	o->group = NULL;
	o->csv_field = 0;
	if (o->fmt == OUT_JSON && !(o->t->flags & (OUT_OBJECT | OUT_INLINE)))
		json_open(o, NULL, '{');
}

static void close_group(struct out *o)
{
	if (o->group) {
		json_close(o, '}');
		o->group = NULL;
	}
}

void out_row_end(struct out *o)
{
	if (!o->in_row)
		misuse(o, "row ended outside a row");
	if (o->col != o->t->ncols)
		misuse(o, "row ended before its last column");
	if (o->fmt == OUT_JSON) {
		close_group(o);
		if (!(o->t->flags & (OUT_OBJECT | OUT_INLINE)))
			json_close(o, '}');
	} else if (o->fmt == OUT_CSV && o->on) {
		fputs(TPROF_CSV_EOL, o->f);
	}
	o->in_row = 0;
	o->tail = 0;
}

/* The column the next value fills, checked; in JSON its key (and group) is written. NULL: the
 * value goes nowhere (text, or a CSV table not asked for). Outside a row: out_key's key. */
static const struct out_col *next_col(struct out *o, enum out_type type, int is_null)
{
	if (!o->in_row || o->tail) {
		if (o->fmt != OUT_JSON)
			return NULL;
		json_key(o, o->key);
		o->key = NULL;
		return NULL;
	}
	if (o->col >= o->t->ncols)
		misuse(o, "more values than columns");
	const struct out_col *c = &o->t->cols[o->col++];
	if (c->type != type && !is_null && !(c->type == OUT_NUM && type == OUT_U64))
		misuse(o, "value of another type than its column");
	if (o->fmt == OUT_JSON) {
		if (o->group != c->group && (!o->group || !c->group || strcmp(o->group, c->group) != 0)) {
			close_group(o);
			if (c->group) {
				json_open(o, c->group, '{');
				o->group = c->group;
			}
		}
		json_key(o, c->name);
		return c;
	}
	if (o->fmt == OUT_CSV && o->on)
		return c;
	return NULL;
}

/* Whether the value is written: JSON always, CSV in the table asked for. */
static int writes(const struct out *o)
{
	return o->fmt == OUT_JSON || (o->fmt == OUT_CSV && o->on && o->in_row && !o->tail);
}

static void null_fields(struct out *o, const struct out_col *c)
{
	int n = c->type == OUT_STACK ? 6 : c->type == OUT_PAIR ? 2 : c->type == OUT_LIST ? 0 : 1;
	for (int i = 0; i < n; i++)
		csv_sep(o);
}

void out_null(struct out *o)
{
	const struct out_col *c = next_col(o, OUT_U64, 1);
	if (!writes(o))
		return;
	if (o->fmt == OUT_JSON) {
		fputs("null", o->f);
		return;
	}
	null_fields(o, c);
}

void out_u64(struct out *o, uint64_t v)
{
	next_col(o, OUT_U64, 0);
	if (!writes(o))
		return;
	if (o->fmt == OUT_CSV)
		csv_sep(o);
	fprintf(o->f, "%" PRIu64, v);
}

void out_i64(struct out *o, int64_t v)
{
	next_col(o, OUT_I64, 0);
	if (!writes(o))
		return;
	if (o->fmt == OUT_CSV)
		csv_sep(o);
	fprintf(o->f, "%" PRId64, v);
}

static void put_num(struct out *o, const struct out_col *c, double v)
{
	if (!isfinite(v)) {
		if (o->fmt == OUT_JSON)
			fputs("null", o->f);
		return;
	}
	/* a column's format is one of the declarations' constant strings */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	fprintf(o->f, c && c->fmt ? c->fmt : "%.6g", v);
#pragma GCC diagnostic pop
}

void out_f64(struct out *o, double v)
{
	const struct out_col *c = next_col(o, OUT_F64, 0);
	if (!writes(o))
		return;
	if (o->fmt == OUT_CSV)
		csv_sep(o);
	put_num(o, c, v);
}

void out_pair(struct out *o, double lo, double hi)
{
	const struct out_col *c = next_col(o, OUT_PAIR, 0);
	if (!writes(o))
		return;
	if (o->fmt == OUT_JSON) {
		if (!isfinite(lo) && !isfinite(hi)) { /* no interval: null (CSV: two empty fields) */
			fputs("null", o->f);
			return;
		}
		fputc('[', o->f);
		put_num(o, c, lo);
		fputc(',', o->f);
		put_num(o, c, hi);
		fputc(']', o->f);
		return;
	}
	csv_sep(o);
	put_num(o, c, lo);
	csv_sep(o);
	put_num(o, c, hi);
}

void out_str(struct out *o, const char *s)
{
	next_col(o, OUT_STR, !s);
	if (!writes(o))
		return;
	if (o->fmt == OUT_JSON) {
		if (s)
			tprof_json_str(o->f, s);
		else
			fputs("null", o->f);
		return;
	}
	csv_sep(o);
	if (s)
		tprof_csv_str(o->f, s);
}

void out_bool(struct out *o, int v)
{
	next_col(o, OUT_BOOL, 0);
	if (!writes(o))
		return;
	if (o->fmt == OUT_CSV)
		csv_sep(o);
	fputs(v ? "true" : "false", o->f);
}

void out_stack(struct out *o, const struct stack_frame *fr, size_t n)
{
	next_col(o, OUT_STACK, 0);
	if (!writes(o))
		return;
	if (o->fmt == OUT_JSON) {
		stack_print_json(o->f, fr, n);
		return;
	}
	csv_sep(o);
	stack_print_csv(o->f, fr, n);
}

/* A JSON list of strings. */
static void json_strs(struct out *o, const char *const *v, size_t n)
{
	fputc('[', o->f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', o->f);
		tprof_json_str(o->f, v[i]);
	}
	fputc(']', o->f);
}

void out_num(struct out *o, double v)
{
	next_col(o, OUT_NUM, 0);
	if (!writes(o))
		return;
	if (o->fmt == OUT_CSV)
		csv_sep(o);
	if (!isfinite(v)) {
		if (o->fmt == OUT_JSON)
			fputs("null", o->f);
		return;
	}
	fprintf(o->f, v == floor(v) && fabs(v) < 9007199254740992.0 ? "%.0f" : "%.6g", v);
}

void out_labels(struct out *o, const char *const *v, size_t n)
{
	next_col(o, OUT_LABELS, 0);
	if (!writes(o))
		return;
	if (o->fmt == OUT_JSON) {
		json_strs(o, v, n);
		return;
	}
	csv_sep(o);
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(v[i]) + 1;
	char *joined = xmalloc(len), *p = joined;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(v[i]);
		if (i)
			*p++ = ';';
		memcpy(p, v[i], l);
		p += l;
	}
	*p = 0;
	tprof_csv_str(o->f, joined);
	free(joined);
}

void out_list(struct out *o, const char *const *v, size_t n)
{
	next_col(o, OUT_LIST, 0);
	if (o->fmt == OUT_JSON)
		json_strs(o, v, n);
}

/* ---- JSON outside tables ---- */

void out_key(struct out *o, const char *key)
{
	if (o->in_row) {
		if (o->col != o->t->ncols)
			misuse(o, "out_key inside a row before its last column");
		if (o->fmt == OUT_JSON)
			close_group(o);
		o->tail = 1;
	}
	o->key = key;
}

void out_obj_begin(struct out *o)
{
	if (o->in_row && !o->tail)
		misuse(o, "a JSON object inside a row's columns");
	if (o->fmt != OUT_JSON)
		return;
	json_open(o, o->key, '{');
	o->key = NULL;
}

void out_obj_end(struct out *o)
{
	if (o->fmt == OUT_JSON)
		json_close(o, '}');
}

void out_arr_begin(struct out *o)
{
	if (o->in_row && !o->tail)
		misuse(o, "a JSON array inside a row's columns");
	if (o->fmt != OUT_JSON)
		return;
	json_open(o, o->key, '[');
	o->key = NULL;
}

void out_arr_end(struct out *o)
{
	if (o->fmt == OUT_JSON)
		json_close(o, ']');
}
