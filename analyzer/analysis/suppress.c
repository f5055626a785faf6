/* Implementation of analysis/suppress.h, and the built-in suppression list. */
#include "analysis/suppress.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/* The built-in list: what the C library and the dynamic loader allocate once for themselves and
 * keep for the life of the process. __libc_freeres, which libtprof runs at exit, frees most of it;
 * not when threads are still running at exit, nor what the loader keeps for libraries that were
 * never dlclose'd. Only leak_site lines, so a rule can match only frames of the module that called
 * the allocator; function names are anchored and reserved to the implementation (a leading
 * underscore) or are the C library's own public names, so no function of the program can match. */
const char supp_default_text[] =
	"# The dynamic loader (ld-linux*.so): link maps and search paths of dlopen'ed libraries, TLS\n"
	"# blocks, thread DTVs, dlerror() strings. It runs a program's code (constructors) only by calling\n"
	"# into another module, so an allocation site inside it is always the loader's own.\n"
	"leak_site:/ld-linux\n"
	"# The C library's side of dlopen and dlerror.\n"
	"leak_site:^_dl_\n"
	"leak_site:^__libc_dl\n"
	"leak_site:^_dlerror_run\n"
	"# Locale data, character set converters, name-service modules, time zone data: loaded once, kept.\n"
	"leak_site:^_nl_\n"
	"leak_site:^__gconv_\n"
	"leak_site:^__nss_\n"
	"leak_site:^__tz\n"
	"leak_site:^setlocale$\n"
	"leak_site:^__GI_setlocale$\n"
	"# The static result buffers of getpwnam, getgrgid, gethostbyname, ... (found by source file:\n"
	"# needs the C library's debug information).\n"
	"leak_site:/getXXbyYY.c$\n"
	"# Blocks of the atexit() / on_exit() handler list.\n"
	"leak_site:^__new_exitfn\n";

void supp_init(struct suppressions *s)
{
	memset(s, 0, sizeof(*s));
}

void supp_free(struct suppressions *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->rules[i].text);
		free(s->rules[i].glob);
		free(s->rules[i].origin);
	}
	free(s->rules);
	memset(s, 0, sizeof(*s));
}

/* LeakSanitizer's pattern as a glob over the whole string: "*" in front unless it starts with
 * '^', "*" behind unless it ends with '$'. */
static char *to_glob(const char *pat, size_t len)
{
	int start = len && pat[0] == '^';
	int end = len > (size_t)start && pat[len - 1] == '$';
	const char *body = pat + start;
	size_t blen = len - start - end;
	char *g = xmalloc(blen + 3);
	size_t k = 0;
	if (!start)
		g[k++] = '*';
	memcpy(g + k, body, blen);
	k += blen;
	if (!end)
		g[k++] = '*';
	g[k] = 0;
	return g;
}

/* Whether glob (only '*' is special) matches all of str. Greedy with one backtrack point: the
 * last '*' seen takes one more character whenever what follows it fails. */
static int glob_match(const char *p, const char *s)
{
	const char *star = NULL, *resume = NULL;
	while (*s) {
		if (*p == '*') {
			star = p++;
			resume = s;
		} else if (*p == *s) {
			p++;
			s++;
		} else if (star) {
			p = star + 1;
			s = ++resume;
		} else {
			return 0;
		}
	}
	while (*p == '*')
		p++;
	return *p == 0;
}

int supp_pattern_match(const char *pattern, const char *str)
{
	if (!str || !*str)
		return 0;
	char *g = to_glob(pattern, strlen(pattern));
	int m = glob_match(g, str);
	free(g);
	return m;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/* Drops the rules from index n0 on. */
static void truncate_rules(struct suppressions *s, size_t n0)
{
	while (s->n > n0) {
		struct supp_rule *r = &s->rules[--s->n];
		free(r->text);
		free(r->glob);
		free(r->origin);
	}
}

int supp_parse(struct suppressions *s, const char *origin, const char *text, char *err, size_t errlen)
{
	size_t n0 = s->n;
	int lineno = 0;
	for (const char *line = text; *line;) {
		const char *eol = strchr(line, '\n');
		const char *next = eol ? eol + 1 : line + strlen(line);
		if (!eol)
			eol = next;
		lineno++;
		while (line < eol && (*line == ' ' || *line == '\t'))
			line++;
		const char *end = eol;
		while (end > line && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
			end--;
		size_t len = (size_t)(end - line);
		if (len == 0 || line[0] == '#') {
			line = next;
			continue;
		}
		if (memchr(line, 0, len)) {
			set_err(err, errlen, "%s:%d: a NUL byte in a suppression", origin, lineno);
			truncate_rules(s, n0);
			return -1;
		}
		const char *colon = memchr(line, ':', len);
		size_t tlen = colon ? (size_t)(colon - line) : len;
		int site_only;
		if (colon && tlen == 4 && memcmp(line, "leak", 4) == 0)
			site_only = 0;
		else if (colon && tlen == 9 && memcmp(line, "leak_site", 9) == 0)
			site_only = 1;
		else {
			set_err(err, errlen,
				"%s:%d: not a suppression: '%.*s' (expected leak:PATTERN or "
				"leak_site:PATTERN)",
				origin, lineno, (int)(len > 80 ? 80 : len), line);
			truncate_rules(s, n0);
			return -1;
		}
		const char *pat = colon + 1;
		size_t plen = (size_t)(end - pat);
		if (plen == 0 || (plen == 1 && (*pat == '^' || *pat == '$'))) {
			set_err(err, errlen, "%s:%d: empty pattern", origin, lineno);
			truncate_rules(s, n0);
			return -1;
		}
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 16;
			s->rules = xrealloc(s->rules, s->cap * sizeof(*s->rules));
		}
		char where[64];
		snprintf(where, sizeof(where), ":%d", lineno);
		size_t olen = strlen(origin);
		struct supp_rule *r = &s->rules[s->n++];
		memset(r, 0, sizeof(*r));
		r->text = xstrndup(line, len);
		r->glob = to_glob(pat, plen);
		r->site_only = site_only;
		r->origin = xmalloc(olen + strlen(where) + 1);
		memcpy(r->origin, origin, olen);
		strcpy(r->origin + olen, where);
		line = next;
	}
	return 0;
}

void supp_add_default(struct suppressions *s)
{
	char err[256];
	if (supp_parse(s, "default", supp_default_text, err, sizeof(err)) != 0)
		tprof_bug("the built-in suppressions: %s", err); /* a bug, not input */
}

int supp_load(struct suppressions *s, const char *path, char *err, size_t errlen)
{
	FILE *f = tprof_fopen_nowait(path, "r");
	if (!f) {
		set_err(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	size_t len = 0, cap = 4096;
	char *buf = xmalloc(cap);
	size_t got;
	while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
		len += got;
		if (cap - len - 1 == 0) {
			cap *= 2;
			buf = xrealloc(buf, cap);
		}
	}
	int bad = ferror(f), e = errno;
	fclose(f);
	if (bad) {
		set_err(err, errlen, "%s: %s", path, e ? strerror(e) : "read error");
		free(buf);
		return -1;
	}
	buf[len] = 0;
	if (strlen(buf) != len) {
		set_err(err, errlen, "%s: not a text file (NUL byte)", path);
		free(buf);
		return -1;
	}
	int r = supp_parse(s, path, buf, err, errlen);
	free(buf);
	return r;
}

static int frame_matches(const struct supp_rule *r, const struct stack_frame *f)
{
	const char *fields[3] = {f->sym.function, f->sym.file, f->module_path};
	for (int i = 0; i < 3; i++)
		if (fields[i] && *fields[i] && glob_match(r->glob, fields[i]))
			return 1;
	return 0;
}

static int same_module(const struct stack_frame *a, const struct stack_frame *b)
{
	if (!a->module_path || !b->module_path)
		return a->module_path == b->module_path;
	return a->module_path == b->module_path || strcmp(a->module_path, b->module_path) == 0;
}

struct supp_rule *supp_match(struct suppressions *s, const struct stack_frame *fr, size_t n)
{
	size_t site = 0; /* frames [0, site) are the allocation site */
	while (site < n && same_module(&fr[site], &fr[0]))
		site++;
	for (size_t i = 0; i < s->n; i++) {
		struct supp_rule *r = &s->rules[i];
		size_t upto = r->site_only ? site : n;
		for (size_t k = 0; k < upto; k++)
			if (frame_matches(r, &fr[k]))
				return r;
	}
	return NULL;
}
