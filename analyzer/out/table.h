/* The one output layer for --json and --csv. A command declares each of its tables once (its
 * columns: name, type, unit) and writes its rows through the out_* calls; the same calls produce the
 * JSON document and the one CSV table asked for, so that a table's CSV columns are its JSON rows'
 * members in the same order and can never drift apart. Text output is the commands' own (see
 * out/text.h for the shared text tables).
 *
 * JSON: one object. A table is a member holding an array of row objects (OUT_OBJECT: one object;
 * OUT_INLINE: its one row's members written into the enclosing object). Members that belong to no
 * CSV table (nested summaries, lists) are written with out_key and the structural calls.
 *
 * CSV (RFC 4180): only the table whose csv name was asked for is written, a header row first; every
 * other call is a no-op. A column's JSON value maps to CSV fields by its type:
 *   OUT_U64, OUT_I64, OUT_F64, OUT_STR, OUT_BOOL: one field, named as the member;
 *   grouped columns (col.group "calls"): JSON "calls":{"malloc":..}, CSV calls_malloc;
 *   OUT_PAIR "x_ns": JSON [lo, hi], CSV x_lo_ns, x_hi_ns;
 *   OUT_STACK "stack": JSON the frames, CSV function, file, line, module, offset (the innermost
 *     frame's) and stack (every frame's label, joined by ';');
 *   OUT_LIST: a JSON list of strings, no CSV field;
 *   OUT_LABELS: a JSON list of strings, one CSV field that joins them with ';';
 *   OUT_NUM: a number that is an integer in some rows and a rate in others (diff's figures):
 *     out_u64 exactly, out_num as an integer when it is one (below 2^53), else to 6 digits.
 * null is an empty field. */
#ifndef TPROF_OUT_TABLE_H
#define TPROF_OUT_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct stack_frame;

enum out_format { OUT_TEXT, OUT_JSON, OUT_CSV };

enum out_type { OUT_U64, OUT_I64, OUT_F64, OUT_STR, OUT_BOOL, OUT_PAIR, OUT_STACK, OUT_LIST, OUT_NUM, OUT_LABELS };

struct out_col {
	const char *name;  /* the JSON member; the CSV column (see above for groups, pairs, stacks) */
	enum out_type type;
	const char *unit;  /* what a number counts ("ns", "bytes", "FLOP", "calls", "%", ...), for the docs */
	const char *fmt;   /* OUT_F64, OUT_PAIR: printf format of the number (default "%.6g") */
	const char *group; /* consecutive columns of one group form one JSON object */
};

#define OUT_OBJECT 1u /* a one-row table: a JSON object, not an array */
#define OUT_INLINE 2u /* a one-row table whose members go into the enclosing JSON object */

struct out_table {
	const char *csv;  /* its name for --csv=NAME; NULL: JSON only */
	const char *json; /* the JSON member holding it (NULL with OUT_INLINE) */
	const struct out_col *cols;
	size_t ncols;
	unsigned flags;
};

#define OUT_NCOLS(cols) (sizeof(cols) / sizeof((cols)[0]))

#define OUT_DEPTH 16

struct out {
	FILE *f;
	enum out_format fmt;
	const char *csv; /* CSV: the table written; NULL or "": the first with a CSV name */
	int depth;                /* JSON: open containers */
	int first[OUT_DEPTH];     /* JSON: no member written yet in each */
	const char *key;          /* JSON: the key of the next value outside a table row */
	const struct out_table *t; /* the table being written */
	int on;                   /* CSV: t is the table written */
	int in_row;
	int tail;                 /* JSON-only members after the row's last column (out_key) */
	size_t col;               /* the next column of the row */
	const char *group;        /* JSON: the group object open in the row */
	int csv_field;            /* CSV: a field was written in this record */
	int csv_done;             /* CSV: the table asked for was written */
};

/* Starts a document in fmt on f; csv_table names the CSV table to write (fmt OUT_CSV). JSON
 * opens the document's object. */
void out_begin(struct out *o, FILE *f, enum out_format fmt, const char *csv_table);
/* Ends it (JSON: closes the object and the line). Returns 0, or -1 when writing failed. */
int out_end(struct out *o);

/* Tables and rows. Values fill the row's columns in order, each of the column's type or null; a
 * row must give every column. A mistake here is the program's, and aborts with a message. */
void out_table_begin(struct out *o, const struct out_table *t);
void out_table_end(struct out *o);
/* Whether the table just begun is written (JSON: always; CSV: the one asked for), so that a command
 * need not compute what no format will show (symbolize stacks, say). */
int out_table_written(const struct out *o);
void out_row_begin(struct out *o);
void out_row_end(struct out *o);

void out_u64(struct out *o, uint64_t v);
void out_i64(struct out *o, int64_t v);
void out_f64(struct out *o, double v); /* NaN and infinities are null */
void out_str(struct out *o, const char *s); /* NULL is null */
void out_bool(struct out *o, int v);
void out_null(struct out *o);
void out_pair(struct out *o, double lo, double hi);
void out_stack(struct out *o, const struct stack_frame *fr, size_t n);
void out_list(struct out *o, const char *const *v, size_t n);
void out_labels(struct out *o, const char *const *v, size_t n);
void out_num(struct out *o, double v);

/* JSON members outside the tables (no-ops in CSV): out_key names the next value or container. In a
 * row, after its last column, out_key begins JSON-only members of that row (a nested list). */
void out_key(struct out *o, const char *key);
void out_obj_begin(struct out *o);
void out_obj_end(struct out *o);
void out_arr_begin(struct out *o);
void out_arr_end(struct out *o);

/* The CSV header of a table, as out_table_begin writes it (for tests and docs). */
void out_csv_header(FILE *f, const struct out_table *t);

#endif
