/* Implementation of out/frames.h. */
#include "out/frames.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

void stack_print_text(FILE *f, const struct stack_frame *fr, size_t n, int truncated, const char *indent)
{
	if (n == 0)
		fprintf(f, "%s(no stack recorded)\n", indent);
	for (size_t i = 0; i < n; i++) {
		const struct tprof_sym_frame *s = &fr[i].sym;
		fprintf(f, "%s%s ", indent, i ? "by" : "at");
		if (s->function) {
			tprof_text_str(f, s->function, 0);
			if (s->file) {
				fputs(" (", f);
				tprof_text_str(f, tprof_base_name(s->file), 0);
				if (s->line)
					fprintf(f, ":%d", s->line);
				fputc(')', f);
			}
			if (s->module) {
				fputs(" [", f);
				tprof_text_str(f, s->module, 0);
				fputc(']', f);
			}
		} else if (s->module) {
			tprof_text_str(f, s->module, 0);
			fprintf(f, "+0x%" PRIx64, s->offset);
			if (s->file && s->line) {
				fputs(" (", f);
				tprof_text_str(f, tprof_base_name(s->file), 0);
				fprintf(f, ":%d)", s->line);
			}
		} else {
			fprintf(f, "0x%" PRIx64 " (no module)", fr[i].addr);
		}
		fputs(s->inlined ? " (inlined)\n" : "\n", f);
	}
	if (truncated)
		fprintf(f, "%s... (cut at the recorder's depth limit, TPROF_DEPTH)\n", indent);
}



void stack_print_csv(FILE *f, const struct stack_frame *fr, size_t n)
{
	const struct tprof_sym_frame *s = n ? &fr[0].sym : NULL;
	if (s) {
		tprof_csv_str(f, s->function);
		fputc(',', f);
		tprof_csv_str(f, s->file);
		fputc(',', f);
		fprintf(f, "%d", s->line > 0 ? s->line : 0); /* as in JSON: an unknown line is 0 */
		fputc(',', f);
		tprof_csv_str(f, s->module);
		fputc(',', f);
		if (s->module)
			fprintf(f, "%" PRIu64, s->offset);
		fputc(',', f);
	} else {
		fputs(",,,,,", f);
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		tprof_oom(0, __FILE__, __LINE__);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(';', m);
		stack_print_label(m, &fr[i]);
	}
	fclose(m);
	tprof_csv_str(f, buf);
	free(buf);
}

static void json_str_or_null(FILE *f, const char *s)
{
	if (s)
		tprof_json_str(f, s);
	else
		fputs("null", f);
}

void stack_print_json(FILE *f, const struct stack_frame *fr, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		const struct tprof_sym_frame *s = &fr[i].sym;
		fputs(i ? ",{\"function\":" : "{\"function\":", f);
		json_str_or_null(f, s->function);
		fputs(",\"file\":", f);
		json_str_or_null(f, s->file);
		fprintf(f, ",\"line\":%d,\"module\":", s->line > 0 ? s->line : 0);
		json_str_or_null(f, s->module);
		if (s->module)
			fprintf(f, ",\"offset\":%" PRIu64, s->offset);
		else
			fputs(",\"offset\":null", f);
		fprintf(f, ",\"address\":\"0x%" PRIx64 "\",\"inlined\":%s}", fr[i].addr,
			s->inlined ? "true" : "false");
	}
	fputc(']', f);
}

