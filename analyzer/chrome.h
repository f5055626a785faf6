/* The Chrome trace-event export behind `tprof export --chrome`: a trace as the JSON object that
 * ui.perfetto.dev and chrome://tracing open. One track per thread with its kernel calls and annotated
 * ranges as properly nested complete ("X") slices and its marks as instants, a track of step slices,
 * counter tracks for the live heap bytes (thinned, the exact peak kept) and the RSS, thread and
 * process names, and what was left out in "otherData". Layout and conventions: docs/EXPORT.md. */
#ifndef TPROF_CHROME_H
#define TPROF_CHROME_H

#include <stdint.h>
#include <stdio.h>

#include "reader.h"

/* The tid of the steps track: PID_MAX_LIMIT, which no Linux thread id reaches. */
#define CHROME_STEPS_TID 4194304u
/* Counter samples are thinned to at most 3 per bucket, the buckets dividing the exported time. */
#define CHROME_COUNTER_BUCKETS 4096u

struct chrome_options {
	uint64_t min_dur_ns; /* kernel calls shorter than this are left out; 0 keeps all */
	int steps;           /* keep only what falls in steps step_first..step_last */
	uint64_t step_first;
	uint64_t step_last;  /* UINT64_MAX: to the end of the trace */
};

struct chrome_doc;

/* Parses a --steps value: "A-B" (steps A to B, both included, numbered from 0 as the intervals
 * between tprof_step() boundaries), "A" (that step) or "A-" (from step A's start to the end of the
 * trace). Returns 0 and fills o's step fields, or -1 when text is none of these. */
int chrome_parse_steps(const char *text, struct chrome_options *o);

/* Computes everything the export holds, reading t's heap events to the end; nothing is written yet,
 * so an error leaves no half-written file. Returns 0 and *out (freed with chrome_free; it refers
 * to t, which must outlive it); -1 with a message in t->err when the steps asked for are not in the
 * trace; -2 with a message in t->err on a corrupt heap record. */
int chrome_build(struct tprof_trace *t, const struct chrome_options *o, struct chrome_doc **out);

/* Writes d as one JSON object to f. Write errors are the caller's to detect (ferror, fclose). */
void chrome_write(const struct chrome_doc *d, FILE *f);

void chrome_free(struct chrome_doc *d);

#endif
