/* The kind of each block in use at exit (definitely, indirectly, possibly lost, still reachable),
 * from the trace's reachability scan (LEAKS blocks), checked against the analyzer's own replay: the
 * scan classifies only when the blocks it saw are exactly the blocks the trace replays to. */
#ifndef TPROF_LEAKCLASS_H
#define TPROF_LEAKCLASS_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/heap.h"
#include "trace/reader.h"

#define LEAK_KINDS 4 /* enum tprof_leak_kind */
#define LEAK_LATE LEAK_KINDS /* leak_class_of: allocated after the scan, no kind */

struct leak_class {
	int classified;               /* every live block has a kind */
	char why[256];                /* when not: why, for people */
	const struct tprof_leakscan *scan;
};

/* Decides whether t's scan classifies the blocks live in s (a replay of the whole trace). */
void leak_class_init(struct leak_class *lc, const struct tprof_trace *t, const struct heap_stats *s);
/* The kind of live block addr (classified only), or LEAK_LATE for a block a thread still running
 * allocated after the scan; *entry: the scan's entry, NULL for a block reachable through a start
 * pointer. */
int leak_class_of(const struct leak_class *lc, uint64_t addr, const struct tprof_leak_entry **entry);
/* Bytes and blocks of each kind among the blocks live in s (classified only); index LEAK_LATE:
 * those allocated after the scan. */
void leak_class_totals(const struct leak_class *lc, const struct heap_stats *s, uint64_t bytes[LEAK_KINDS + 1],
		       uint64_t blocks[LEAK_KINDS + 1]);
/* The report's member names of each kind: "definitely_lost", ..., "still_reachable" */
const char *leak_kind_key(int kind);
/* "definite", "indirect", "possible", "reachable" (names for --kinds and JSON) */
const char *leak_kind_name(int kind);
/* "definitely lost", "indirectly lost", "possibly lost", "still reachable" */
const char *leak_kind_words(int kind);
/* "stdstring", "length64", "newarray", "multipleinheritance" (memcheck's names); "" for none */
const char *leak_heuristic_name(int h);
/* Parses a --kinds list ("definite,possible", "all", "lost" = the three lost kinds) into a mask of
 * 1 << kind; -1 on an unknown name. */
int leak_kinds_parse(const char *arg);

#endif
