/* Small helpers shared by the analyzer's commands: checked allocation (aborts with file:line on
 * failure), error messages, number formatting, and the one way each output format writes a name:
 * JSON string escaping, CSV fields, and escaped names in text tables. */
#ifndef TPROF_UTIL_H
#define TPROF_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define xmalloc(n) tprof_xmalloc((n), __FILE__, __LINE__)
#define xcalloc(n, s) tprof_xcalloc((n), (s), __FILE__, __LINE__)
#define xzalloc(n, s) tprof_xzalloc((n), (s), __FILE__, __LINE__)
#define xrealloc(p, n) tprof_xrealloc((p), (n), __FILE__, __LINE__)
#define xstrndup(s, n) tprof_xstrndup((s), (n), __FILE__, __LINE__)

void *tprof_xmalloc(size_t n, const char *file, int line);

/* qsort for any count: qsort's base must not be NULL, which an empty table's may be. */
void tprof_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *));
/* The first k of base's n elements in cmp's order, sorted, at its start; the others after them in
 * no order. With a total order (no two elements equal) they are tprof_sort's first k; it takes
 * n log k comparisons instead of n log n, for the top rows of a table of millions. */
void tprof_sort_top(void *base, size_t n, size_t k, size_t size, int (*cmp)(const void *, const void *));

void *tprof_xcalloc(size_t n, size_t size, const char *file, int line);
/* n zeroed elements, made present and writable at once (tprof_prefault): for a table that is read
 * all over long before most of it is written. A page calloc leaves untouched is the shared zero
 * page until its first write, which then copies it and flushes the TLB of every CPU the process
 * runs on (the decode thread's too: an interprocessor interrupt per page). calloc alone stays best
 * where most pages are never touched. */
void *tprof_xzalloc(size_t n, size_t size, const char *file, int line);
void *tprof_xrealloc(void *p, size_t n, const char *file, int line);
/* Makes the pages of [p, p + n) present and writable at once, its 2 MiB-aligned part on huge pages
 * where the system gives them on request (transparent huge pages): for a large table about to be
 * written all over. Page by page, each first touch of a 4 KiB page costs a fault (on a VM about
 * 11 us, again at the hypervisor's level after the kernel has made it present): 37 MB took 120 ms
 * so, 7 ms on huge pages. Ranges under 1 MiB are left as they are; before Linux 5.14 (no
 * MADV_POPULATE_WRITE) only the huge-page request is made. That request splits the block's
 * mapping, which realloc then cannot move (mremap) and copies instead: such a block grows with
 * xgrow, which copies into a block made present so. */
void tprof_prefault(void *p, size_t n);
/* p, of which old bytes are kept, grown to n bytes, the new ones zero: a large one into a new block
 * made present at once (tprof_prefault), the old bytes copied, p freed; a small one by realloc. */
#define xgrow(p, old, n) tprof_xgrow((p), (old), (n), __FILE__, __LINE__)
void *tprof_xgrow(void *p, size_t old, size_t n, const char *file, int line);
char *tprof_xstrndup(const char *s, size_t n, const char *file, int line);

/* The exit statuses of tprof (README, "Exit status"): usage error, bad input (a file that cannot be
 * read or written, or is not a valid trace), a tool that is missing or failed (gnuplot), out of
 * memory. Only cmd/ chooses one, but for the last: an allocation that fails ends the process. */
enum tprof_exit {
	TPROF_EXIT_OK = 0,
	TPROF_EXIT_USAGE = 1,
	TPROF_EXIT_INPUT = 2,
	TPROF_EXIT_TOOL = 3,
	TPROF_EXIT_NOMEM = 4,
};

/* Out of memory for n bytes at file:line: says so on stderr and exits with TPROF_EXIT_NOMEM. */
void tprof_oom(size_t n, const char *file, int line) __attribute__((noreturn));

/* A bug in tprof itself (never bad input): says so on stderr and aborts. */
void tprof_bug(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Prints "tprof: " + message to stderr. For cmd/ only: the layers below return their errors. */
void tprof_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A warning from the layers below cmd/ (trace/, analysis/, out/) that does not stop the work: a
 * cache ignored, a recorder still writing, a module without symbols; or a note on what is being
 * done (a measurement that takes seconds), which matters only to someone watching a terminal. Both
 * go to the sink that cmd/ installed (note 0 for a warning, 1 for a note); without one they are
 * dropped (unit tests, the fuzz target). */
typedef void (*tprof_warn_fn)(int note, const char *msg);
void tprof_set_warn(tprof_warn_fn fn);
void tprof_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tprof_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* 1 when paths a and b name one existing file (an output about to be written over the trace being
 * read), else 0. */
int tprof_same_file(const char *a, const char *b);

/* A switch from the environment, worded as libtprof.so takes them: 1, y, yes, true, on or 0, n,
 * no, false, off (any case); unset or empty: dflt. Another value is warned about, and dflt kept. */
int tprof_env_switch(const char *name, int dflt);

/* The code point of the UTF-8 sequence at s and its length in *len, or -1 (with *len 1) when the
 * bytes there are not the shortest encoding of a scalar value (overlong forms, surrogates and code
 * points above U+10FFFF are invalid). The one UTF-8 decoder of the analyzer. */
long tprof_utf8_next(const unsigned char *s, int *len);

/* Writes s as a JSON string literal (quotes included): every control character, quote and
 * backslash escaped, invalid UTF-8 bytes replaced by U+FFFD, so the output is always valid JSON. */
/* fopen for "r" or "w" that never waits: a FIFO no process has open at the other end reads as
 * empty, and one written fails with ENXIO, where fopen would wait for a peer for good. */
FILE *tprof_fopen_nowait(const char *path, const char *mode);
void tprof_json_str(FILE *f, const char *s);

/* Writes s as one CSV field (RFC 4180): as it is, or between double quotes with every quote doubled
 * when it contains a comma, a quote, CR or LF. The bytes are kept exactly (no UTF-8 check); NULL
 * is an empty field. Records end with TPROF_CSV_EOL. */
void tprof_csv_str(FILE *f, const char *s);

/* The end of a CSV record: RFC 4180's CRLF. */
#define TPROF_CSV_EOL "\r\n"

/* Writes s for a text table, so that no name can break a line or a column: valid UTF-8 other than
 * control characters as it is; a backslash as \\; newline, carriage return and tab as \n, \r, \t;
 * any other control byte (DEL included) and any byte of invalid UTF-8 as \xNN. Then pads with spaces
 * to |width| columns (one column per character written): width < 0 left-aligns like printf's
 * "%-*s", width > 0 right-aligns, 0 does not pad. NULL is written as "". Returns the columns
 * written, padding included. */
int tprof_text_str(FILE *f, const char *s, int width);
/* The columns tprof_text_str takes for s, escapes included, without writing it. */
int tprof_text_cols(const char *s);
/* The same, cut to |width| columns when longer: as much of it as fits in |width| - 1 columns, then
 * an ellipsis (…). Returns |width|, or what tprof_text_str returns when s fits. */
int tprof_text_cut(FILE *f, const char *s, int width);

/* A unit for a column of durations or byte counts, chosen from its largest value so that the whole
 * column is in one unit. */
struct tprof_unit {
	const char *name; /* "ns", "us", "ms", "s"; "B", "KiB", "MiB", "GiB" */
	double div;
	int decimals;
};
struct tprof_unit tprof_ns_unit(uint64_t max_ns);
struct tprof_unit tprof_bytes_unit(uint64_t max_bytes);
/* v in unit u, as a number only ("12.34"), into buf (at least 32 bytes); returns buf. */
const char *tprof_fmt_in(uint64_t v, struct tprof_unit u, char *buf);

/* "1,234,567" into buf (at least 32 bytes); returns buf. */
const char *tprof_commas(uint64_t v, char *buf);

/* Human-readable duration ("12.3 ms") into buf (at least 32 bytes); returns buf. */
const char *tprof_fmt_ns(uint64_t ns, char *buf);

/* Human-readable byte count ("1.5 MiB", exact below 1 KiB) into buf (>= 32 bytes); returns buf. */
const char *tprof_fmt_bytes(uint64_t b, char *buf);

/* The last component of a path: what follows its last slash (all of it when it has none). */
const char *tprof_base_name(const char *path);

#endif
