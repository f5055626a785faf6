/* Leak kinds for the commands that show blocks in use at exit: the recorder's scan (LEAKS blocks)
 * names the lost and possibly lost blocks by address; this file checks that the scan saw exactly
 * the blocks the trace replays to (count, bytes, each listed block live with its size) before any
 * command trusts it, and says why when it cannot: no kind is ever guessed. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analysis/leakclass.h"
#include "base/util.h"

static const char *end_words(const struct tprof_trace *t)
{
	if (!t->ended)
		return "the trace is incomplete (the process was killed, or the file was cut short)";
	if (t->end_flags & TPROF_ENDF_SECCOMP)
		return "the process installed a seccomp filter, which might have ended it at the scan's calls";
	switch (t->end_reason) {
	case TPROF_END_SIGNAL:
		return "the process was killed by a signal, after which nothing of it runs";
	case TPROF_END_EXEC:
		return "the process image ended in exec, which leaves nothing to scan";
	case TPROF_END_VANISHED:
		return "the process ended without an exit call tprof saw";
	case TPROF_END_EXIT:
		/* the scan runs last at exit: a thread that called exit at the same time as another may
		 * run the last handlers and end the process first */
		return "the trace holds no scan (threads called exit at once, and one ended the process "
		       "before the scan; or it was recorded with TPROF_LEAKSCAN=0, by an older tprof, or the "
		       "recorder was gone)";
	case TPROF_END__EXIT:
		/* _exit through its hook asks for a scan: without one, the exit system call was made
		 * directly (the program's own system call; the C library's daemon() in the parent, before
		 * tprof hooked daemon) */
		return "the process ended by the exit system call without an _exit call tprof saw (a system "
		       "call of its own), or was recorded with TPROF_LEAKSCAN=0, or the recorder was gone";
	default:
		return "the trace holds no scan (recorded with TPROF_LEAKSCAN=0, by an older tprof, or the "
		       "recorder was gone)";
	}
}

void leak_class_init(struct leak_class *lc, const struct tprof_trace *t, const struct heap_stats *s)
{
	memset(lc, 0, sizeof(*lc));
	const struct tprof_leakscan *l = &t->leaks;
	lc->scan = l;
	if (!l->present) {
		snprintf(lc->why, sizeof(lc->why), "%s", end_words(t));
		return;
	}
	switch (l->status) {
	case TPROF_LEAKS_OK:
		break;
	case TPROF_LEAKS_UNREADABLE:
		snprintf(lc->why, sizeof(lc->why), "the recorder may not read the process's memory (%s)",
			 l->err && l->err < 4096 ? strerror((int)l->err) : "unknown error");
		return;
	case TPROF_LEAKS_GONE:
		snprintf(lc->why, sizeof(lc->why), "the process ended while it was scanned");
		return;
	default:
		snprintf(lc->why, sizeof(lc->why), "the recorder ran out of memory while it scanned");
		return;
	}
	if (l->live_blocks != s->live_blocks || l->live_bytes != s->live_bytes) {
		char a[32], b[32], c[32], d[32]; /* with separators, as every count in text */
		snprintf(lc->why, sizeof(lc->why), "the scan saw %s blocks (%s bytes) in use, the trace replays to %s (%s bytes)%s",
			 tprof_commas(l->live_blocks, a), tprof_commas(l->live_bytes, b), tprof_commas(s->live_blocks, c),
			 tprof_commas(s->live_bytes, d), t->lost_events ? ": events were lost" : "");
		return;
	}
	for (size_t i = 0; i < l->n; i++) {
		uint64_t size;
		if (!addrmap_get(&s->live, l->entries[i].addr, &size) || size != l->entries[i].size) {
			snprintf(lc->why, sizeof(lc->why),
				 "the scan names a block at %#llx of %llu bytes that the trace does not replay to",
				 (unsigned long long)l->entries[i].addr, (unsigned long long)l->entries[i].size);
			return;
		}
	}
	lc->classified = 1;
}

int leak_class_of(const struct leak_class *lc, uint64_t addr, const struct tprof_leak_entry **entry)
{
	const struct tprof_leakscan *l = lc->scan;
	size_t lo = 0, hi = l->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (l->entries[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < l->n && l->entries[lo].addr == addr) {
		*entry = &l->entries[lo];
		return l->entries[lo].late ? LEAK_LATE : l->entries[lo].kind;
	}
	*entry = NULL;
	return TPROF_LEAK_REACHABLE;
}

void leak_class_totals(const struct leak_class *lc, const struct heap_stats *s, uint64_t bytes[LEAK_KINDS + 1],
		       uint64_t blocks[LEAK_KINDS + 1])
{
	for (int k = 0; k <= LEAK_KINDS; k++)
		bytes[k] = blocks[k] = 0;
	if (!lc->classified)
		return;
	for (size_t i = 0; i < s->live.cap; i++) {
		if (!s->live.keys[i])
			continue;
		const struct tprof_leak_entry *e;
		int k = leak_class_of(lc, s->live.keys[i], &e);
		bytes[k] += s->live.vals[i];
		blocks[k]++;
	}
}

const char *leak_kind_key(int kind)
{
	static const char *const n[] = {"still_reachable", "possibly_lost", "indirectly_lost", "definitely_lost"};
	return kind >= 0 && kind < LEAK_KINDS ? n[kind] : "";
}

const char *leak_kind_name(int kind)
{
	static const char *const n[] = {"reachable", "possible", "indirect", "definite"};
	return kind >= 0 && kind < LEAK_KINDS ? n[kind] : "unclassified";
}

const char *leak_kind_words(int kind)
{
	static const char *const n[] = {"still reachable", "possibly lost", "indirectly lost", "definitely lost"};
	return kind >= 0 && kind < LEAK_KINDS ? n[kind] : "in use at exit";
}

const char *leak_heuristic_name(int h)
{
	static const char *const n[] = {"", "stdstring", "length64", "newarray", "multipleinheritance"};
	return h >= 0 && h <= TPROF_LEAK_HEUR_MAX ? n[h] : "";
}

int leak_kinds_parse(const char *arg)
{
	int mask = 0;
	const char *p = arg;
	while (*p) {
		size_t n = strcspn(p, ",");
		int k = -1;
		if (n == 3 && strncmp(p, "all", 3) == 0)
			mask |= 15;
		else if (n == 4 && strncmp(p, "lost", 4) == 0)
			mask |= 1 << TPROF_LEAK_DEFINITE | 1 << TPROF_LEAK_INDIRECT | 1 << TPROF_LEAK_POSSIBLE;
		else {
			for (int i = 0; i < LEAK_KINDS; i++)
				if (strlen(leak_kind_name(i)) == n && strncmp(p, leak_kind_name(i), n) == 0)
					k = i;
			if (k < 0)
				return -1;
			mask |= 1 << k;
		}
		p += n;
		if (*p == ',' && !*++p)
			return -1; /* a trailing comma: a kind left out, as an empty one between two */
	}
	return mask ? mask : -1;
}
