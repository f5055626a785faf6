/* Leak suppressions for tprof leaks, in the format of LeakSanitizer's suppression files plus one
 * narrower kind of line:
 *
 *     # a comment                  (whole lines only; blank lines are ignored)
 *     leak:PATTERN                 as LeakSanitizer: matches when any frame of the stack matches
 *     leak_site:PATTERN            matches only frames of the allocation site (below)
 *
 * A PATTERN matches a frame when it matches the frame's function name (demangled), its source file
 * or its module's full path: as a substring, with '*' matching any run of characters, '^' at the
 * start anchoring it to the beginning and '$' at the end to the end (LeakSanitizer's rules).
 *
 * The allocation site is the innermost frame (the caller of malloc, new, ...) and the frames around
 * it that belong to the same module: the code that made the allocation before control goes back to
 * another module. The built-in list uses only leak_site lines, so it can hide what the C library or
 * the loader allocate for themselves but never a leak whose site is in the program's own code, even
 * when that code runs under the loader (a constructor of a dlopen'ed library) or the C library
 * (main itself). */
#ifndef TPROF_SUPPRESS_H
#define TPROF_SUPPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/stacks.h"

struct supp_rule {
	char *text;      /* the line as written, e.g. "leak_site:^_dl_" */
	char *glob;      /* the pattern as a '*'-only glob over the whole string */
	int site_only;   /* leak_site: */
	char *origin;    /* "FILE:LINE", or "default" for the built-in list */
	uint64_t bytes, blocks, stacks; /* what it suppressed (the first rule that matches counts) */
};

struct suppressions {
	struct supp_rule *rules;
	size_t n, cap;
};

void supp_init(struct suppressions *s);
void supp_free(struct suppressions *s);

/* Adds the built-in list (supp_default_text). */
void supp_add_default(struct suppressions *s);

/* Adds the rules of a file. 0 on success; -1 with "FILE:LINE: what" (or "FILE: errno text") in err,
 * and then none of the file's rules are added. */
int supp_load(struct suppressions *s, const char *path, char *err, size_t errlen);

/* Adds the rules in text; origin names it in messages ("default", a file name). 0, or -1 + err
 * (and nothing added). */
int supp_parse(struct suppressions *s, const char *origin, const char *text, char *err, size_t errlen);

/* The first rule matching a stack (frames innermost first, from stack_frames), or NULL. */
struct supp_rule *supp_match(struct suppressions *s, const struct stack_frame *fr, size_t n);

/* Whether pattern (a suppression's PATTERN) matches str; str NULL or empty never matches. */
int supp_pattern_match(const char *pattern, const char *str);

/* The built-in suppressions, one rule per line. */
extern const char supp_default_text[];

#endif
