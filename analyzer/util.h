/* Small helpers shared by the analyzer's commands: checked allocation (aborts with file:line on
 * failure), error messages, number formatting and JSON string escaping. */
#ifndef TPROF_UTIL_H
#define TPROF_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define xmalloc(n) tprof_xmalloc((n), __FILE__, __LINE__)
#define xcalloc(n, s) tprof_xcalloc((n), (s), __FILE__, __LINE__)
#define xrealloc(p, n) tprof_xrealloc((p), (n), __FILE__, __LINE__)
#define xstrndup(s, n) tprof_xstrndup((s), (n), __FILE__, __LINE__)

void *tprof_xmalloc(size_t n, const char *file, int line);
void *tprof_xcalloc(size_t n, size_t size, const char *file, int line);
void *tprof_xrealloc(void *p, size_t n, const char *file, int line);
char *tprof_xstrndup(const char *s, size_t n, const char *file, int line);

/* Prints "tprof: " + message to stderr. */
void tprof_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes s as a JSON string literal (quotes included): every control character, quote and
 * backslash escaped, invalid UTF-8 bytes replaced by U+FFFD, so the output is always valid JSON. */
void tprof_json_str(FILE *f, const char *s);

/* "1,234,567" into buf (at least 32 bytes); returns buf. */
const char *tprof_commas(uint64_t v, char *buf);

/* Human-readable duration ("12.3 ms") into buf (at least 32 bytes); returns buf. */
const char *tprof_fmt_ns(uint64_t ns, char *buf);

/* Human-readable byte count ("1.5 MiB", exact below 1 KiB) into buf (>= 32 bytes); returns buf. */
const char *tprof_fmt_bytes(uint64_t b, char *buf);

#endif
