/* The Chrome trace-event export behind `tprof export --chrome`: a trace as the JSON object that
 * ui.perfetto.dev and chrome://tracing open. One track per thread with its kernel calls and annotated
 * ranges as properly nested complete ("X") slices and its marks as instants, a track of step slices,
 * counter tracks for the live heap bytes (thinned, the exact peak kept) and the RSS, thread and
 * process names, and what was left out in "otherData". Layout and conventions: docs/EXPORT.md. */
#ifndef TPROF_CHROME_H
#define TPROF_CHROME_H

#include <stdint.h>
#include <stdio.h>

#include "analysis/timeline.h"

/* Writes d as one JSON object to f. Write errors are the caller's to detect (ferror, fclose). */
void chrome_write(const struct chrome_doc *d, FILE *f);

#endif
