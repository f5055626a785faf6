/* Symbolized stacks (analysis/stacks.h's frames) written out: as text lines, as one-line labels
 * (CSV cells, folded stacks, matching sites across runs), as CSV fields and as JSON frames. */
#ifndef TPROF_FRAMES_H
#define TPROF_FRAMES_H

#include <stddef.h>
#include <stdio.h>

#include "analysis/stacks.h"

/* Text, one frame per line: "<indent>at FUNCTION (FILE:LINE) [MODULE]", "by" after the first;
 * "MODULE+0xOFFSET" when the function is unknown; a last line when the stack was truncated. Names
 * are escaped as tprof_text_str does. */
void stack_print_text(FILE *f, const struct stack_frame *fr, size_t n, int truncated, const char *indent);

/* One frame on one line, for CSV cells and for matching allocation sites across runs (which the
 * addresses cannot do): "FUNCTION (FILE:LINE)" with FILE's basename, "FUNCTION (FILE)" without a
 * line, "FUNCTION [MODULE]" without a file, "MODULE+0xOFFSET" when the function is unknown, else
 * "0xADDRESS"; then " (inlined)" for an inlined frame. The names' bytes are written as they are. */
void stack_print_label(FILE *f, const struct stack_frame *fr);

/* The same label in a string the caller frees. */
char *stack_frame_label(const struct stack_frame *fr);

/* A stack's CSV fields, in the columns of STACK_CSV_HEADER: the innermost frame's function, file,
 * line, module and offset (empty when unknown; line empty when 0, offset in decimal), then the
 * labels of every frame, innermost first, joined by ';'. No record separator. */
#define STACK_CSV_HEADER "function,file,line,module,offset,stack"
void stack_print_csv(FILE *f, const struct stack_frame *fr, size_t n);

/* A JSON array of frames: {"function","file","line","module","offset","address","inlined"}, with
 * null for unknown strings, line 0 when unknown, offset null without a module. */
void stack_print_json(FILE *f, const struct stack_frame *fr, size_t n);

/* A frame's name for folded stacks and summaries: the function, else MODULE+0xOFFSET (written into
 * buf, of size len), else the address (likewise). Returns the function's own string or buf. */
const char *stack_frame_name(const struct stack_frame *fr, char *buf, size_t len);

#endif
