/* libFuzzer target over the reader of leak suppression files (analyzer/analysis/suppress.c): the
 * bytes are parsed as a file's text (as supp_load hands it over: up to the first NUL), after the
 * built-in list, and every rule then matched against a stack of frames whose names, files and
 * module paths come from the input's last bytes, so that patterns and frames meet. `make fuzz`
 * builds it (build/fuzz/fuzz_supp); tests/integration/fuzz.bats runs it over
 * tests/fuzz/supp_corpus. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/suppress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	/* frames: the last 64 bytes (at most) as three strings, and fixed ones around them */
	size_t tail = size < 64 ? size : 64;
	char *f = malloc(tail + 1);
	if (!f) {
		free(text);
		return 0;
	}
	memcpy(f, data + size - tail, tail);
	f[tail] = 0;
	char *a = f, *b = f + strlen(f) / 3, *c = f + 2 * strlen(f) / 3;
	char fn[32], fl[32], md[32];
	snprintf(fn, sizeof(fn), "%s", a);
	snprintf(fl, sizeof(fl), "%s", b);
	snprintf(md, sizeof(md), "%s", c);
	struct stack_frame fr[4];
	memset(fr, 0, sizeof(fr));
	fr[0].sym.function = "malloc_helper";
	fr[0].module_path = "/usr/lib/libfoo.so";
	fr[1].sym.function = fn;
	fr[1].sym.file = fl;
	fr[1].module_path = md;
	fr[2].sym.function = "main";
	fr[2].sym.file = "main.c";
	fr[2].module_path = "/usr/bin/prog";
	fr[3].sym.function = NULL; /* an unknown frame */
	struct suppressions s;
	supp_init(&s);
	supp_add_default(&s);
	char err[256];
	size_t before = s.n;
	if (supp_parse(&s, "fuzz", text, err, sizeof(err)) != 0 && s.n != before)
		abort(); /* a file that does not parse adds no rule */
	for (size_t k = 0; k <= 4; k++)
		(void)supp_match(&s, fr, k);
	for (size_t i = before; i < s.n; i++) {
		const char *pat = strchr(s.rules[i].text, ':') + 1;
		(void)supp_pattern_match(pat, fn);
		(void)supp_pattern_match(pat, text);
	}
	supp_free(&s);
	free(f);
	free(text);
	return 0;
}
