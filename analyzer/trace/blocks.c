/* The trace reader's rare blocks, read whole in pass one (open.c): LEAKS, INFO, END, STACKS (with
 * the reader's own stack ids and the merge of equal stacks), MODULE, NAMES, KERNELS and RSS. */
#include "trace/reader_int.h"


#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uthash.h>
#include <zstd.h>


#include "base/util.h"

int rd_parse_leaks(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
{
	struct tprof_leakscan *l = &t->leaks;
	uint8_t part;
	if (tprof_get_u8(c, &part))
		return -1;
	if (l->present) {
		*why = "LEAKS block after the scan's summary";
		return -1;
	}
	if (part == TPROF_LEAKS_PART_BLOCKS) {
		uint64_t n;
		if (tprof_get_varint(c, &n) || n == 0 || n > (uint64_t)(c->end - c->p)) {
			*why = "LEAKS block with a bad entry count";
			return -1;
		}
		uint64_t prev = l->n ? l->entries[l->n - 1].addr : 0;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t d, size, ind = 0;
			uint8_t kh;
			if (tprof_get_varint(c, &d) || tprof_get_varint(c, &size) || tprof_get_u8(c, &kh))
				return -1;
			unsigned kind = kh & 3, heur = kh >> 2, late = kh == TPROF_LEAKS_LATE;
			if (late)
				heur = 0;
			if (heur > TPROF_LEAK_HEUR_MAX) {
				*why = "LEAKS entry with an unknown heuristic";
				return -1;
			}
			if (kind == TPROF_LEAK_DEFINITE && tprof_get_varint(c, &ind))
				return -1;
			if ((l->n && d == 0) || d > UINT64_MAX - prev || (d == 0 && prev == 0)) {
				*why = "LEAKS entries not in increasing address order";
				return -1;
			}
			if (kind == TPROF_LEAK_REACHABLE && !heur && !late) {
				*why = "LEAKS entry for a block reachable without a heuristic";
				return -1;
			}
			prev += d;
			if (l->n == l->cap) {
				l->cap = l->cap ? l->cap * 2 : 64;
				l->entries = xrealloc(l->entries, l->cap * sizeof(*l->entries));
			}
			l->entries[l->n++] = (struct tprof_leak_entry){prev, size, ind, (uint8_t)kind, (uint8_t)heur,
								       (uint8_t)late};
		}
		return c->p == c->end ? 0 : -1;
	}
	if (part != TPROF_LEAKS_PART_SUMMARY) {
		*why = "LEAKS block of an unknown part";
		return -1;
	}
	uint64_t listed;
	if (tprof_get_varint(c, &l->status) || tprof_get_varint(c, &l->err) || tprof_get_varint(c, &l->reason) ||
	    tprof_get_varint(c, &l->live_blocks) || tprof_get_varint(c, &l->live_bytes) ||
	    tprof_get_varint(c, &listed) || tprof_get_varint(c, &l->threads_stopped) ||
	    tprof_get_varint(c, &l->threads_missed) || tprof_get_varint(c, &l->ns) ||
	    tprof_get_varint(c, &l->root_bytes) || tprof_get_varint(c, &l->block_bytes))
		return -1;
	if (l->status > TPROF_LEAKS_STATUS_MAX) {
		*why = "LEAKS summary with an unknown status";
		return -1;
	}
	if (listed != l->n || listed > l->live_blocks) {
		*why = "LEAKS summary whose count differs from the entries before it";
		return -1;
	}
	l->present = 1;
	return c->p == c->end ? 0 : -1;
}

/* INFO; version 4 adds the module that owns the program's malloc after argv. */
int rd_parse_info(struct tprof_trace *t, struct tprof_cursor *c, unsigned version, const char **why)
{
	struct tprof_trace_info *in = &t->info;
	const char *s;
	size_t n;
	if (tprof_get_varint(c, &in->pid) || tprof_get_varint(c, &in->ppid) ||
	    tprof_get_varint(c, &in->clock) || tprof_get_varint(c, &in->flags) ||
	    tprof_get_varint(c, &in->page_size) || tprof_get_varint(c, &in->ptr_size) ||
	    tprof_get_varint(c, &in->start_realtime_ns) || tprof_get_varint(c, &in->ring_entries) ||
	    tprof_get_varint(c, &in->depth) || tprof_get_string(c, &s, &n))
		return -1;
	in->exe = xstrndup(s, n);
	if (tprof_get_varint(c, &in->argc) || in->argc > (uint64_t)(c->end - c->p))
		return -1;
	in->argv = xcalloc(in->argc + 1, sizeof(char *));
	for (uint64_t i = 0; i < in->argc; i++) {
		if (tprof_get_string(c, &s, &n))
			return -1;
		in->argv[i] = xstrndup(s, n);
	}
	n = 0;
	s = "";
	if (version >= 4 && tprof_get_string(c, &s, &n)) {
		*why = "INFO block without the malloc owner that format version 4 ends it with";
		return -1;
	}
	in->malloc_owner = xstrndup(s, n);
	if (in->clock != TPROF_CLOCK_TSC && in->clock != TPROF_CLOCK_MONOTONIC)
		return -1;
	const char *base = in->argc && in->argv[0][0] ? in->argv[0] : in->exe;
	const char *slash = strrchr(base, '/');
	in->program = xstrndup(slash ? slash + 1 : base, strlen(slash ? slash + 1 : base));
	return 0;
}

/* The END flags each version has; a file with any other bit set is corrupt (a recorder that sets
 * a new one writes a newer version). */
static uint64_t end_flags_known(unsigned version)
{
	if (version >= 11)
		return TPROF_ENDF_INFLIGHT | TPROF_ENDF_RESERVE | TPROF_ENDF_SECCOMP | TPROF_ENDF_INCALL |
		       TPROF_ENDF_NEW_UNHOOKED | TPROF_ENDF_DEEPBIND;
	if (version >= 10)
		return TPROF_ENDF_INFLIGHT | TPROF_ENDF_RESERVE | TPROF_ENDF_SECCOMP | TPROF_ENDF_INCALL;
	if (version >= 7)
		return TPROF_ENDF_INFLIGHT | TPROF_ENDF_RESERVE | TPROF_ENDF_SECCOMP;
	return version >= 6 ? TPROF_ENDF_INFLIGHT | TPROF_ENDF_RESERVE : TPROF_ENDF_INFLIGHT;
}

/* END: reason, value, next seq, records, lost, stacks, stacks dropped; version 4 adds flags. A
 * reason or flag the version cannot hold is corrupt, said in buf. */
int rd_parse_end(struct tprof_trace *t, struct tprof_cursor *c, unsigned version, const char **why,
		     char *buf, size_t len)
{
	unsigned reason_max = version >= 4 ? TPROF_END_VANISHED : TPROF_END_EXEC;
	if (tprof_get_varint(c, &t->end_reason) || tprof_get_varint(c, &t->end_value) ||
	    tprof_get_varint(c, &t->end_seq) || tprof_get_varint(c, &t->end_events) ||
	    tprof_get_varint(c, &t->end_lost) || tprof_get_varint(c, &t->end_stacks) ||
	    tprof_get_varint(c, &t->end_stacks_dropped))
		return -1;
	t->end_flags = 0;
	if (version >= 4 && tprof_get_varint(c, &t->end_flags))
		return -1;
	if (t->end_reason < TPROF_END_EXIT || t->end_reason > reason_max) {
		snprintf(buf, len, "END block with unknown reason %llu (format version %u has 1 to %u)",
			 (unsigned long long)t->end_reason, version, reason_max);
		*why = buf;
		return -1;
	}
	if (t->end_flags & ~end_flags_known(version)) {
		snprintf(buf, len, "END block with unknown flags 0x%llx",
			 (unsigned long long)(t->end_flags & ~end_flags_known(version)));
		*why = buf;
		return -1;
	}
	return 0;
}

/* A STACKS block: entries (id, flags, depth, frames as deltas). Ids are defined once. */
/* The reader's id for file id fid, 0 when the file has not defined it. */
uint32_t rd_id_find(const struct tprof_reader_priv *p, uint32_t fid)
{
	if (fid < p->idmap_cap)
		return p->idmap[fid];
	struct sid_entry *head = p->sparse, *e;
	HASH_FIND(hh, head, &fid, sizeof(fid), e);
	return e ? e->id : 0;
}

/* Where the reader's id for file id fid is kept (0 there: not defined yet), made if need be. */
static uint32_t *id_slot(struct tprof_reader_priv *p, uint32_t fid)
{
	if (fid < p->idmap_cap)
		return &p->idmap[fid];
	uint64_t bound = 4 * (uint64_t)p->nstacks + 65536;
	if (fid < bound) {
		uint32_t ncap = p->idmap_cap ? p->idmap_cap : 1024;
		while (ncap <= fid)
			ncap *= 2;
		if (ncap > bound)
			ncap = (uint32_t)bound;
		p->idmap = xgrow(p->idmap, p->idmap_cap * sizeof(*p->idmap), ncap * sizeof(*p->idmap));
		p->idmap_cap = ncap;
		return &p->idmap[fid];
	}
	struct sid_entry *e;
	HASH_FIND(hh, p->sparse, &fid, sizeof(fid), e);
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		e->file_id = fid;
		HASH_ADD(hh, p->sparse, file_id, sizeof(e->file_id), e);
	}
	return &e->id;
}

/* The end of the n varints from p on when each is in its shortest form and of 64 bits at most,
 * as tprof's writer makes them; else NULL (one is cut short, longer than it needs to be, or too
 * long), and the frames are decoded and encoded again. Frames are kept in the shortest form, so
 * that equal stacks are equal bytes (rd_merge_duplicate_stacks); most are one or two bytes, and
 * checking them is several times cheaper than decoding and encoding them again. */
static const uint8_t *shortest_varints_slow(const uint8_t *p, const uint8_t *end, uint64_t n)
{
	for (; n; n--) {
		if (p < end && *p < 0x80) {
			p++;
			continue;
		}
		const uint8_t *q = p;
		while (q < end && (*q & 0x80) && q - p < 9)
			q++;
		if (q >= end || (*q & 0x80) || *q == 0 || (q - p == 9 && *q > 1))
			return NULL;
		p = q + 1;
	}
	return p;
}

/* The same, eight bytes at a time from a varint's start: a varint ends at each byte below 0x80,
 * so the word's last such byte (or the nth) ends a run of whole varints, each of eight bytes at
 * most (in range), and one is longer than it needs to be when a zero byte ends it after another
 * of its bytes. A word with no end, and the last seven bytes, go byte by byte. One branch per
 * word instead of one or two per frame, which the mix of one- and two-byte frames mispredicts. */
#define HIGH_BITS 0x8080808080808080ull
const uint8_t *rd_shortest_varints(const uint8_t *p, const uint8_t *end, uint64_t n)
{
	while (n && end - p >= 8) {
		uint64_t x;
		memcpy(&x, p, 8); /* little-endian: byte k is bits 8k to 8k + 7 */
		uint64_t ends = ~x & HIGH_BITS;
		if (!ends)
			break;
		uint64_t t = ((ends >> 7) * 0x0101010101010101ull) >> 56; /* how many: the bytes' sum */
		if (t > n) { /* the nth end: the lower n - 1 ends dropped */
			for (uint64_t k = 1; k < n; k++)
				ends &= ends - 1;
			ends &= -ends;
			t = n;
		}
		unsigned last = (unsigned)(63 - __builtin_clzll(ends)) >> 3; /* its byte */
		uint64_t in = last == 7 ? ~0ull : (1ull << (8 * last + 8)) - 1;
		/* zero bytes: a byte's high bit is set by the add unless it is zero */
		uint64_t zero = ~(x | ((x & ~HIGH_BITS) + ~HIGH_BITS)) & HIGH_BITS;
		if (zero & ((x & HIGH_BITS) << 8) & in)
			return NULL;
		p += last + 1;
		n -= t;
	}
	return shortest_varints_slow(p, end, n);
}

int rd_parse_stacks(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
{
	struct tprof_reader_priv *p = t->priv;
	uint64_t count;
	*why = "malformed STACKS block";
	if (tprof_get_varint(c, &count) || count == 0 || count > (uint64_t)(c->end - c->p))
		return -1;
	for (uint64_t k = 0; k < count; k++) {
		uint64_t id, flags, depth, f;
		if (tprof_get_varint(c, &id) || tprof_get_varint(c, &flags) || tprof_get_varint(c, &depth))
			return -1;
		if (id == 0 || id >= (1u << 24) || flags & ~(uint64_t)TPROF_STACK_TRUNCATED || depth == 0 ||
		    depth > TPROF_STACK_MAX_DEPTH || depth > (uint64_t)(c->end - c->p))
			return -1;
		uint32_t *slot = id_slot(p, (uint32_t)id);
		if (*slot) {
			*why = "stack defined twice";
			return -1;
		}
		uint32_t our = p->nstacks ? p->nstacks : 1;
		if (our >= p->cap_stacks) {
			uint32_t ncap = p->cap_stacks ? 2 * p->cap_stacks : 256;
			p->stacks = xgrow(p->stacks, p->cap_stacks * sizeof(*p->stacks), ncap * sizeof(*p->stacks));
			p->cap_stacks = ncap;
		}
		*slot = our;
		p->nstacks = our + 1;
		struct stack_def *s = &p->stacks[our];
		if (p->nframes + depth * 10 > p->cap_frames) {
			p->cap_frames = (p->cap_frames ? p->cap_frames * 2 : 65536) + depth * 10;
			p->frames = xgrow(p->frames, p->nframes, p->cap_frames);
		}
		uint8_t *out = p->frames + p->nframes;
		const uint8_t *shortest = rd_shortest_varints(c->p, c->end, depth);
		if (shortest) { /* as written: copied whole */
			memcpy(out, c->p, (size_t)(shortest - c->p));
			out += shortest - c->p;
			c->p = shortest;
		} else {
			for (uint64_t i = 0; i < depth; i++) {
				int64_t d;
				if (i == 0 ? tprof_get_varint(c, &f) : tprof_get_svarint(c, &d))
					return -1;
				out = i == 0 ? tprof_put_varint(out, f) : tprof_put_svarint(out, d);
			}
		}
		s->first = p->nframes;
		s->bytes = (uint32_t)(out - (p->frames + p->nframes));
		s->depth = (uint32_t)depth;
		s->truncated = (uint8_t)(flags & TPROF_STACK_TRUNCATED);
		s->canon = our;
		p->nframes += s->bytes;
	}
	return c->p == c->end ? 0 : -1;
}

int rd_parse_module(struct tprof_trace *t, struct tprof_cursor *c)
{
	uint64_t id, bid_len;
	struct tprof_module m;
	memset(&m, 0, sizeof(m));
	const char *s;
	size_t n;
	if (tprof_get_varint(c, &id) || tprof_get_varint(c, &m.load_seq) || tprof_get_varint(c, &m.base) ||
	    tprof_get_varint(c, &m.start) || tprof_get_varint(c, &m.end) || tprof_get_varint(c, &bid_len) ||
	    bid_len > sizeof(m.build_id) || bid_len > (uint64_t)(c->end - c->p) || m.end < m.start)
		return -1;
	memcpy(m.build_id, c->p, bid_len);
	m.build_id_len = bid_len;
	c->p += bid_len;
	if (tprof_get_string(c, &s, &n) || c->p != c->end || id != t->nmodules)
		return -1; /* ids are given in order, from 0 */
	m.path = xstrndup(s, n);
	m.unload_seq = UINT64_MAX;
	t->modules = xrealloc(t->modules, (t->nmodules + 1) * sizeof(*t->modules));
	t->modules[t->nmodules++] = m;
	return 0;
}

/* Gives ids whose frames equal an earlier id's that earlier id (two threads may have interned the
 * same new stack at once). */
static void set_name(char ***names, uint32_t *n, uint64_t id, const char *s, size_t len)
{
	if (id >= *n) {
		uint32_t cap = (uint32_t)id + 1;
		*names = xrealloc(*names, cap * sizeof(**names));
		memset(*names + *n, 0, (cap - *n) * sizeof(**names));
		*n = cap;
	}
	free((*names)[id]);
	(*names)[id] = xstrndup(s, len);
}

int rd_parse_names(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
{
	uint64_t count;
	if (tprof_get_varint(c, &count) || count == 0 || count > (uint64_t)(c->end - c->p)) {
		*why = "NAMES block with a bad count";
		return -1;
	}
	for (uint64_t i = 0; i < count; i++) {
		uint64_t space, id;
		const char *name, *detail;
		size_t nl, dl;
		if (tprof_get_varint(c, &space) || tprof_get_varint(c, &id) || tprof_get_string(c, &name, &nl) ||
		    tprof_get_string(c, &detail, &dl)) {
			*why = "NAMES entry cut short";
			return -1;
		}
		if (space > TPROF_NAMES_ANNOT || id == 0 || id > 65535 || nl == 0) {
			*why = "NAMES entry with an unknown space, id 0, an id above 65535 or an empty name";
			return -1;
		}
		if (space == TPROF_NAMES_OP) {
			uint32_t n = t->nop_names;
			set_name(&t->op_names, &t->nop_names, id, name, nl);
			t->op_shape_names = xrealloc(t->op_shape_names, t->nop_names * sizeof(char *));
			memset(t->op_shape_names + n, 0, (t->nop_names - n) * sizeof(char *));
			free(t->op_shape_names[id]);
			t->op_shape_names[id] = xstrndup(detail, dl);
		} else {
			set_name(&t->annot_names, &t->nannot_names, id, name, nl);
		}
	}
	if (c->p != c->end) {
		*why = "NAMES block longer than its entries";
		return -1;
	}
	return 0;
}

int rd_parse_kernels(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
{
	static char msg[160];
	uint64_t tid, count, prev = 0;
	const int heap_only = t->priv->heap_only;
	if (tprof_get_varint(c, &tid) || tid > UINT32_MAX || tprof_get_varint(c, &count) || count == 0 ||
	    count > (uint64_t)(c->end - c->p)) {
		*why = "KERNELS block with a bad thread id or count";
		return -1;
	}
	for (uint64_t i = 0; i < count; i++) {
		uint8_t type;
		int64_t d;
		if (tprof_get_u8(c, &type)) {
			*why = "KERNELS block holds fewer records than its count";
			return -1;
		}
		if (type == TPROF_KREC_CALL) {
			uint64_t op, dur, flops, bytes, ns;
			if (tprof_get_varint(c, &op) || tprof_get_svarint(c, &d) || tprof_get_varint(c, &dur) ||
			    tprof_get_varint(c, &flops) || tprof_get_varint(c, &bytes) || tprof_get_varint(c, &ns)) {
				*why = "kernel call record cut short";
				return -1;
			}
			if (op == 0 || op >= t->nop_names || !t->op_names[op]) {
				snprintf(msg, sizeof(msg), "kernel call record %llu names op %llu, which no NAMES block "
					 "defined before it", (unsigned long long)i, (unsigned long long)op);
				*why = msg;
				return -1;
			}
			if (ns > TPROF_KSHAPE_MAX) {
				snprintf(msg, sizeof(msg), "kernel call record %llu has %llu shape values (at most %d)",
					 (unsigned long long)i, (unsigned long long)ns, TPROF_KSHAPE_MAX);
				*why = msg;
				return -1;
			}
			t->kcalls_seen++;
			if (heap_only) { /* checked, not kept */
				int64_t v;
				for (uint64_t k = 0; k < ns; k++)
					if (tprof_get_svarint(c, &v)) {
						*why = "kernel call record cut short in its shape";
						return -1;
					}
				prev += (uint64_t)d;
				continue;
			}
			size_t cap = 64;
			while (cap < t->nkshape)
				cap *= 2;
			if (t->nkshape + ns > cap || !t->kshape) {
				while (cap < t->nkshape + ns)
					cap *= 2;
				t->kshape = xrealloc(t->kshape, cap * sizeof(*t->kshape));
			}
			for (uint64_t k = 0; k < ns; k++)
				if (tprof_get_svarint(c, &t->kshape[t->nkshape + k])) {
					*why = "kernel call record cut short in its shape";
					return -1;
				}
			if ((t->nkcalls & (t->nkcalls - 1)) == 0 || t->nkcalls == 0)
				t->kcalls = xrealloc(t->kcalls, (t->nkcalls ? 2 * t->nkcalls : 16) * sizeof(*t->kcalls));
			struct tprof_kcall *k = &t->kcalls[t->nkcalls++];
			k->t0 = prev + (uint64_t)d;
			k->t1 = k->t0 + dur;
			prev = k->t0;
			k->flops = flops;
			k->bytes = bytes;
			k->tid = (uint32_t)tid;
			k->op = (uint16_t)op;
			k->nshape = (uint8_t)ns;
			k->shape_at = (uint32_t)t->nkshape;
			t->nkshape += ns;
		} else if (type == TPROF_KREC_ANNOT) {
			uint64_t kind, seq, name;
			int64_t value;
			if (tprof_get_varint(c, &kind) || tprof_get_varint(c, &seq) || tprof_get_svarint(c, &d) ||
			    tprof_get_varint(c, &name) || tprof_get_svarint(c, &value)) {
				*why = "annotation record cut short";
				return -1;
			}
			if (kind == 0 || kind > TPROF_ANNOT_KIND_MAX || seq == 0) {
				snprintf(msg, sizeof(msg), "annotation record %llu has kind %llu (1..%d) or sequence 0",
					 (unsigned long long)i, (unsigned long long)kind, TPROF_ANNOT_KIND_MAX);
				*why = msg;
				return -1;
			}
			if (name && (name >= t->nannot_names || !t->annot_names[name])) {
				snprintf(msg, sizeof(msg), "annotation record %llu names %llu, which no NAMES block "
					 "defined before it", (unsigned long long)i, (unsigned long long)name);
				*why = msg;
				return -1;
			}
			t->annots_seen++;
			if (heap_only) {
				prev += (uint64_t)d;
				continue;
			}
			if ((t->nannots & (t->nannots - 1)) == 0 || t->nannots == 0)
				t->annots = xrealloc(t->annots, (t->nannots ? 2 * t->nannots : 16) * sizeof(*t->annots));
			struct tprof_annot *a = &t->annots[t->nannots++];
			a->seq = seq;
			a->tick = prev + (uint64_t)d;
			prev = a->tick;
			a->value = value;
			a->tid = (uint32_t)tid;
			a->name = (uint32_t)name;
			a->kind = (uint8_t)kind;
		} else {
			snprintf(msg, sizeof(msg), "KERNELS record %llu has unknown type %u", (unsigned long long)i, type);
			*why = msg;
			return -1;
		}
	}
	if (c->p != c->end) {
		*why = "KERNELS block longer than its records";
		return -1;
	}
	rd_thread_index(t, (uint32_t)tid);
	return 0;
}

/* An RSS block: samples in time order, each block continuing where the previous one ended. */
int rd_parse_rss(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
{
	static char msg[160];
	uint64_t count, tick = 0, bytes = 0;
	if (tprof_get_varint(c, &count) || count == 0 || count > (uint64_t)(c->end - c->p) / 2) {
		*why = "RSS block with a bad sample count";
		return -1;
	}
	uint64_t prev = t->nrss ? t->rss[t->nrss - 1].tick : 0;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t dt = 0;
		int64_t d = 0;
		int cut = i == 0 ? tprof_get_varint(c, &tick) || tprof_get_varint(c, &bytes)
				 : tprof_get_varint(c, &dt) || tprof_get_svarint(c, &d);
		if (cut) {
			snprintf(msg, sizeof(msg), "RSS sample %llu of %llu cut short", (unsigned long long)i,
				 (unsigned long long)count);
			*why = msg;
			return -1;
		}
		if (tick + dt < tick || (d < 0 ? (uint64_t)-(d + 1) >= bytes : bytes + (uint64_t)d < bytes)) {
			snprintf(msg, sizeof(msg), "RSS sample %llu has a time or size out of range",
				 (unsigned long long)i);
			*why = msg;
			return -1;
		}
		tick += dt;
		bytes += (uint64_t)d;
		if (tick < prev) {
			snprintf(msg, sizeof(msg), "RSS sample %llu is earlier than the sample before it",
				 (unsigned long long)i);
			*why = msg;
			return -1;
		}
		prev = tick;
		if ((t->nrss & (t->nrss - 1)) == 0)
			t->rss = xrealloc(t->rss, (t->nrss ? 2 * t->nrss : 1) * sizeof(*t->rss));
		t->rss[t->nrss++] = (struct tprof_rss){tick, bytes};
	}
	if (c->p != c->end) {
		*why = "RSS block longer than its samples";
		return -1;
	}
	return 0;
}

int rd_annot_by_seq(const void *a, const void *b)
{
	const struct tprof_annot *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A hash of a stack's encoded frames (minimal, so equal frames are equal bytes) and flag. */
static uint64_t frames_hash(const uint8_t *f, uint32_t bytes, uint32_t depth, int truncated)
{
	uint64_t h = (uint64_t)depth << 1 | (truncated != 0);
	uint32_t i = 0;
	for (; i + 8 <= bytes; i += 8) {
		uint64_t w;
		memcpy(&w, f + i, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ull;
		h ^= h >> 29;
	}
	uint64_t w = 0;
	memcpy(&w, f + i, bytes - i);
	h = (h ^ w ^ (uint64_t)bytes << 56) * 0x9e3779b97f4a7c15ull;
	return h ^ h >> 29;
}

void rd_merge_duplicate_stacks(struct tprof_trace *t)
{
	struct tprof_reader_priv *p = t->priv;
	/* an open-addressing table of the first id of each distinct stack (frames and truncated
	 * flag) with its hash's high half, at most half full: one array, no allocation per stack (a
	 * trace may define millions), and only a probe whose hash matches reads another's frames.
	 * The hashes are taken first, in one sequential pass, so that each probe's line can be asked
	 * for PREFETCH stacks ahead: a table of millions of stacks is far larger than the caches, and a
	 * probe that waits for its line took four fifths of the pass (100 ns a stack on a VM). */
	enum { PREFETCH = 16 };
	size_t cap = 16;
	while (cap < 2 * (size_t)p->nstacks)
		cap *= 2;
	struct {
		uint32_t id, tag;
	} *slot = xzalloc(cap, sizeof(*slot)); /* probed all over (util.h) */
	uint64_t *hash = xmalloc((p->nstacks ? p->nstacks : 1) * sizeof(*hash));
	for (uint32_t id = 1; id < p->nstacks; id++) {
		const struct stack_def *s = &p->stacks[id];
		hash[id] = s->depth ? frames_hash(p->frames + s->first, s->bytes, s->depth, s->truncated) : 0;
	}
	for (uint32_t id = 1; id < p->nstacks; id++) {
		if (id + PREFETCH < p->nstacks)
			__builtin_prefetch(&slot[hash[id + PREFETCH] & (cap - 1)]);
		struct stack_def *s = &p->stacks[id];
		if (!s->depth)
			continue;
		const uint8_t *f = p->frames + s->first;
		uint64_t h = hash[id];
		uint32_t tag = (uint32_t)(h >> 32);
		for (size_t i = h & (cap - 1);; i = (i + 1) & (cap - 1)) {
			if (!slot[i].id) {
				slot[i].id = id;
				slot[i].tag = tag;
				break;
			}
			const struct stack_def *o = &p->stacks[slot[i].id];
			if (slot[i].tag == tag && o->depth == s->depth && o->bytes == s->bytes &&
			    !o->truncated == !s->truncated && memcmp(p->frames + o->first, f, s->bytes) == 0) {
				s->canon = slot[i].id;
				break;
			}
		}
	}
	free(hash);
	free(slot);
	t->nstacks = p->nstacks;
}

/* Gives back the pages of [from, to) of the mapping: what has been read is not kept resident, so
 * the reader's memory does not grow with the length of the trace. */
