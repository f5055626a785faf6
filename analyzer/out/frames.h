/* Symbolized stacks (analysis/stacks.h's frames) written out: as text lines, as CSV fields (with the
 * frames' labels of analysis/stacks.h) and as JSON frames. */
#ifndef TPROF_FRAMES_H
#define TPROF_FRAMES_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/stacks.h"

/* Text, one frame per line: "<indent>at FUNCTION (FILE:LINE) [MODULE]", "by" after the first;
 * "MODULE+0xOFFSET" when the function is unknown; a last line when the stack was truncated. Names
 * are escaped as tprof_text_str does. */
void stack_print_text(FILE *f, const struct stack_frame *fr, size_t n, int truncated, const char *indent);

/* A stack's CSV fields, in the columns of STACK_CSV_HEADER: the innermost frame's function, file,
 * line, module and offset (empty when unknown; line empty when 0, offset in decimal), then the
 * labels of every frame, innermost first, joined by ';'. No record separator. */
#define STACK_CSV_HEADER "function,file,line,module,offset,stack"
void stack_print_csv(FILE *f, const struct stack_frame *fr, size_t n);

/* A JSON array of frames: {"function","file","line","module","offset","address","inlined"}, with
 * null for unknown strings, line 0 when unknown, offset null without a module. */
void stack_print_json(FILE *f, const struct stack_frame *fr, size_t n);

#endif
