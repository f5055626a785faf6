/* Implementation of analyzer/reader.h. Pass one maps the file and walks its blocks, checking
 * framing, CRC-32C and the small fixed blocks (INFO, CLOCK, THREAD, LOST, END), reading the rare
 * ones whole (STACKS, MODULE, NAMES, KERNELS, RSS), and indexes each thread's EVENTS blocks. Pass
 * two decodes the EVENTS lazily and merges the threads by sequence number, so memory stays
 * proportional to the threads: each thread's blocks are decoded chunk by chunk as the merge needs
 * them, while a decode thread decodes whole blocks a few ahead of it (see decoder_main). A file that
 * ends inside a block is read up to that block, and says where it was cut. */
#include "reader.h"

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

#include "util.h"

struct block_ref {
	uint64_t off; /* of the payload */
	uint32_t len;
	uint32_t raw_len; /* ZEVENTS: length once decompressed; 0 for a plain EVENTS block */
	uint32_t job;     /* its index in the decode thread's jobs */
};

/* The merge decodes its blocks in chunks of about this many records: small enough to stay in the
 * cache between being decoded and being merged, large enough that pairs (pair_event) are rarely
 * split between chunks. */
#define CHUNK 2048

/* Decoded events (a realloc as its two): a chunk, or a whole block from the decode thread. */
struct decoded {
	struct tprof_event *ev;
	size_t n, cap;
	int status;   /* 1: events; -1: corrupt after the n events */
	char err[512];
};

/* An allocation of the events being decoded that no later event has freed yet (see pair_event). */
#define PEND_BITS 9
struct pending {
	uint64_t ptr;
	uint64_t at; /* the decoder's event number + 1 */
};

/* The state of decoding one EVENTS block: each cursor has one, the decode thread another. */
struct blockdec {
	const struct block_ref *blk; /* the block being decoded, NULL between blocks */
	uint32_t tid;                /* its thread */
	struct tprof_cursor s[TPROF_NSTREAMS];
	uint64_t count, ri;     /* its records, and how many are decoded */
	struct tprof_rec_state *st; /* the codec's state (23 KiB): only while a block is decoded */
	uint64_t a_seq, a_tick; /* the last measured record */
	uint8_t *zbuf;          /* its decompressed payload */
	size_t zcap;
	uint64_t evno;          /* events decoded so far, over all blocks (pair_event's numbering) */
	struct pending *pend;   /* 2^pend_bits slots, sized by the largest block met (a thread of a
				 * few events costs a few slots, not 8 KiB) */
	unsigned pend_bits;
};

/* One thread's stream of EVENTS blocks, as the merge reads it: a block the decode thread decoded
 * (held), or else chunks it decodes itself (own). */
struct cursor {
	uint32_t tid;
	size_t thread; /* index into t->threads */
	struct block_ref *blocks;
	size_t nblocks, cap;
	size_t next_block;      /* the next block to begin */
	struct blockdec d;
	struct decoded own;
	struct job *held;
	int holding;                             /* the merge is reading own or held->out */
	const struct tprof_event *next, *end;    /* the merge's position in it */
};

/* Every EVENTS block in file order, which is about the order the merge needs them in (a block is
 * written when its thread's ring fills or the writer's epoch ends). The merge takes each block as
 * it comes to it: free (it decodes the block itself, chunk by chunk), busy (it waits), ready (it
 * reads the events the decode thread made of it). Under lock. */
enum job_state { JOB_FREE, JOB_BUSY, JOB_READY, JOB_TAKEN };

struct job {
	const struct block_ref *b;
	uint32_t tid;
	enum job_state state;
	int next; /* the next block of its thread: the merge may come to it any moment */
	struct decoded out; /* JOB_READY, JOB_TAKEN by a cursor: the block's events */
};

/* How far the decode thread may run ahead of the merge: a few blocks, and a few MiB of events; and
 * the largest block it takes (the recorder's default rings give blocks of about 60 KiB; larger ones,
 * from larger rings, the merge decodes in chunks, so that what is held ahead stays bounded). */
#define DECODE_AHEAD 6
#define DECODE_AHEAD_BYTES (16u << 20)
#define DECODE_MAX_RAW (1u << 20)
#define POOL (DECODE_AHEAD + 4)

struct stack_def {
	uint64_t first; /* index into frames */
	uint32_t depth; /* 0: not defined */
	uint32_t canon;
	uint8_t truncated;
};

struct clock_pair {
	uint64_t tick, mono;
};

/* A thread id's entries: in t->threads, and in the cursors (SIZE_MAX: none yet). */
struct tid_entry {
	uint32_t tid;
	size_t thread, cursor;
	UT_hash_handle hh;
};

/* A stack id of the file far above the number of stacks it defines, and the reader's id for it. */
struct sid_entry {
	uint32_t file_id, id;
	UT_hash_handle hh;
};

struct tprof_reader_priv {
	const uint8_t *map;
	size_t size;
	/* the progress line on a terminal (progress_step): wanted, when the reading began, when the
	 * line was last drawn (0: never) */
	int progress;
	uint64_t progress_t0, progress_shown;
	struct cursor *cur;
	size_t ncur, cap_cur;
	struct tid_entry *tids; /* by tid */
	size_t cap_threads;
	ZSTD_DCtx *dctx;
	/* the decode thread (see start_decoder) and its jobs */
	struct job *jobs;
	size_t njobs;
	int threaded, stop;
	size_t ahead;         /* jobs decoded or being decoded that the merge has not taken */
	uint64_t ahead_bytes; /* their events' bytes */
	struct decoded pool[POOL]; /* event buffers of jobs read, for the next ones */
	size_t npool;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t want;  /* the decode thread waits for the merge to take a block */
	pthread_cond_t ready; /* the merge waits for the block the decode thread is on */
	/* stacks: per id, where its frames are; canon maps an id to the first with equal frames. Ids
	 * are the reader's own, 1.. in the order the file defines them, so that every table an
	 * analysis sizes by nstacks is as large as what the file holds, whatever ids the file uses:
	 * idmap turns a file id into ours (ids up to a bound that grows with the stacks defined),
	 * sparse the ones above it */
	uint32_t *idmap;
	uint32_t idmap_cap;
	struct sid_entry *sparse;
	struct stack_def *stacks;
	uint32_t nstacks, cap_stacks;
	uint64_t *frames;
	size_t nframes, cap_frames;
	size_t *heap; /* indexes into cur, ordered by cur[i].ev.seq */
	uint64_t *next_seq; /* per cursor: the seq of its next event, UINT64_MAX when it has none */
	size_t nheap;
	int started;
	int handed;       /* the last call handed out cur[handed_ci]'s next event, not yet passed */
	size_t handed_ci;
	uint64_t run_bound; /* linear merge: the smallest next seq of the cursors other than handed_ci's */
	uint64_t dropped_to; /* the pages of the mapping below this offset were given back */
	uint64_t drop_check_at; /* drop_consumed looks again once a block this far is begun */
	uint64_t last_seq;
	struct clock_pair *clocks;
	size_t nclocks;
	double ns_per_tick;
	uint64_t tick0;
};

static int progress_wanted(size_t size);
static void progress_end(struct tprof_reader_priv *p);

static void set_err(char *err, size_t errlen, const char *path, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void set_err(char *err, size_t errlen, const char *path, uint64_t off, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s: byte %llu: %s", path, (unsigned long long)off, msg);
}

static struct tid_entry *tid_entry(struct tprof_reader_priv *p, uint32_t tid)
{
	struct tid_entry *e;
	HASH_FIND(hh, p->tids, &tid, sizeof(tid), e);
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		e->tid = tid;
		e->thread = e->cursor = SIZE_MAX;
		HASH_ADD(hh, p->tids, tid, sizeof(e->tid), e);
	}
	return e;
}

static size_t thread_index(struct tprof_trace *t, uint32_t tid)
{
	struct tprof_reader_priv *p = t->priv;
	struct tid_entry *e = tid_entry(p, tid);
	if (e->thread != SIZE_MAX)
		return e->thread;
	if (t->nthreads == p->cap_threads) {
		p->cap_threads = p->cap_threads ? 2 * p->cap_threads : 16;
		t->threads = xrealloc(t->threads, p->cap_threads * sizeof(*t->threads));
	}
	memset(&t->threads[t->nthreads], 0, sizeof(*t->threads));
	t->threads[t->nthreads].tid = tid;
	t->threads[t->nthreads].name = xstrndup("", 0);
	return e->thread = t->nthreads++;
}

static struct cursor *cursor_for(struct tprof_trace *t, uint32_t tid)
{
	struct tprof_reader_priv *p = t->priv;
	struct tid_entry *e = tid_entry(p, tid);
	if (e->cursor != SIZE_MAX)
		return &p->cur[e->cursor];
	if (p->ncur == p->cap_cur) {
		p->cap_cur = p->cap_cur ? 2 * p->cap_cur : 16;
		p->cur = xrealloc(p->cur, p->cap_cur * sizeof(*p->cur));
	}
	e->cursor = p->ncur;
	struct cursor *c = &p->cur[p->ncur++];
	memset(c, 0, sizeof(*c));
	c->tid = c->d.tid = tid;
	c->thread = thread_index(t, tid);
	return c;
}

/* LEAKS: entries by increasing address (across blocks), then one summary that counts them. */
static int parse_leaks(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
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
static int parse_info(struct tprof_trace *t, struct tprof_cursor *c, unsigned version, const char **why)
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

/* The END flags this reader knows; a file with any other bit set is corrupt (a recorder that sets
 * a new one writes a newer version). */
#define END_FLAGS_KNOWN ((uint64_t)TPROF_ENDF_INFLIGHT)

/* END: reason, value, next seq, records, lost, stacks, stacks dropped; version 4 adds flags. A
 * reason or flag the version cannot hold is corrupt, said in buf. */
static int parse_end(struct tprof_trace *t, struct tprof_cursor *c, unsigned version, const char **why,
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
	if (t->end_flags & ~END_FLAGS_KNOWN) {
		snprintf(buf, len, "END block with unknown flags 0x%llx",
			 (unsigned long long)(t->end_flags & ~END_FLAGS_KNOWN));
		*why = buf;
		return -1;
	}
	return 0;
}

/* A STACKS block: entries (id, flags, depth, frames as deltas). Ids are defined once. */
/* The reader's id for file id fid, 0 when the file has not defined it. */
static uint32_t id_find(const struct tprof_reader_priv *p, uint32_t fid)
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
		p->idmap = xrealloc(p->idmap, ncap * sizeof(*p->idmap));
		memset(p->idmap + p->idmap_cap, 0, (ncap - p->idmap_cap) * sizeof(*p->idmap));
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

static int parse_stacks(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
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
		    depth > 1024 || depth > (uint64_t)(c->end - c->p))
			return -1;
		uint32_t *slot = id_slot(p, (uint32_t)id);
		if (*slot) {
			*why = "stack defined twice";
			return -1;
		}
		uint32_t our = p->nstacks ? p->nstacks : 1;
		if (our >= p->cap_stacks) {
			uint32_t ncap = p->cap_stacks ? 2 * p->cap_stacks : 256;
			p->stacks = xrealloc(p->stacks, ncap * sizeof(*p->stacks));
			memset(p->stacks + p->cap_stacks, 0, (ncap - p->cap_stacks) * sizeof(*p->stacks));
			p->cap_stacks = ncap;
		}
		*slot = our;
		p->nstacks = our + 1;
		struct stack_def *s = &p->stacks[our];
		if (p->nframes + depth > p->cap_frames) {
			p->cap_frames = (p->cap_frames ? p->cap_frames * 2 : 4096) + depth;
			p->frames = xrealloc(p->frames, p->cap_frames * sizeof(*p->frames));
		}
		uint64_t *fr = p->frames + p->nframes;
		for (uint64_t i = 0; i < depth; i++) {
			int64_t d;
			if (i == 0 ? tprof_get_varint(c, &f) : tprof_get_svarint(c, &d))
				return -1;
			fr[i] = i == 0 ? f : fr[i - 1] + (uint64_t)d;
		}
		s->first = p->nframes;
		s->depth = (uint32_t)depth;
		s->truncated = (uint8_t)(flags & TPROF_STACK_TRUNCATED);
		s->canon = our;
		p->nframes += depth;
	}
	return c->p == c->end ? 0 : -1;
}

static int parse_module(struct tprof_trace *t, struct tprof_cursor *c)
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

static int parse_names(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
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

static int parse_kernels(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
{
	static char msg[160];
	uint64_t tid, count, prev = 0;
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
	thread_index(t, (uint32_t)tid);
	return 0;
}

/* An RSS block: samples in time order, each block continuing where the previous one ended. */
static int parse_rss(struct tprof_trace *t, struct tprof_cursor *c, const char **why)
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

static int annot_by_seq(const void *a, const void *b)
{
	const struct tprof_annot *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void merge_duplicate_stacks(struct tprof_trace *t)
{
	struct tprof_reader_priv *p = t->priv;
	size_t cap = 16;
	while (cap < 2 * (size_t)p->nstacks)
		cap *= 2;
	uint32_t *tab = xcalloc(cap, sizeof(*tab));
	for (uint32_t id = 1; id < p->nstacks; id++) {
		struct stack_def *s = &p->stacks[id];
		if (!s->depth)
			continue;
		const uint64_t *f = p->frames + s->first;
		uint64_t h = 1469598103934665603ull ^ s->truncated;
		for (uint32_t i = 0; i < s->depth; i++)
			h = (h ^ f[i]) * 1099511628211ull;
		/* the low bits of a product depend only on the low bits of its factors: frames that
		 * differ above them (the same offsets in other modules) would all meet in one slot */
		h ^= h >> 32;
		h *= 0xd6e8feb86659fd93ull;
		h ^= h >> 32;
		for (size_t k = h & (cap - 1);; k = (k + 1) & (cap - 1)) {
			if (!tab[k]) {
				tab[k] = id;
				break;
			}
			struct stack_def *o = &p->stacks[tab[k]];
			if (o->depth == s->depth && o->truncated == s->truncated &&
			    memcmp(p->frames + o->first, f, s->depth * sizeof(*f)) == 0) {
				s->canon = tab[k];
				break;
			}
		}
	}
	free(tab);
	t->nstacks = p->nstacks;
}

/* Gives back the pages of [from, to) of the mapping: what has been read is not kept resident, so
 * the reader's memory does not grow with the length of the trace. */
static void drop_pages(const uint8_t *map, const uint8_t *from, const uint8_t *to)
{
	uintptr_t a = ((uintptr_t)from + 4095) & ~(uintptr_t)4095, b = (uintptr_t)to & ~(uintptr_t)4095;
	if (b > a && (const uint8_t *)a >= map)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

static int job_by_offset(const void *a, const void *b)
{
	const struct block_ref *x = ((const struct job *)a)->b, *y = ((const struct job *)b)->b;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The jobs: every EVENTS block, in file order. */
static void index_jobs(struct tprof_reader_priv *p)
{
	for (size_t i = 0; i < p->ncur; i++)
		p->njobs += p->cur[i].nblocks;
	if (!p->njobs)
		return;
	p->jobs = xcalloc(p->njobs, sizeof(*p->jobs));
	size_t n = 0;
	for (size_t i = 0; i < p->ncur; i++)
		for (size_t k = 0; k < p->cur[i].nblocks; k++)
			p->jobs[n++] = (struct job){.b = &p->cur[i].blocks[k], .tid = p->cur[i].tid};
	tprof_sort(p->jobs, p->njobs, sizeof(*p->jobs), job_by_offset);
	for (size_t j = 0; j < p->njobs; j++)
		((struct block_ref *)p->jobs[j].b)->job = (uint32_t)j;
}

/* Adds to *n the records of every compressed EVENTS block indexed so far. Their counts are inside
 * the compressed payloads, so each gives only the first bytes it decompresses to (zstd decodes at
 * most one of its blocks, 128 KiB, for them). For a cut trace, which says how many events came
 * before the cut: the plain blocks' counts are summed as they are read. 0, or -1 with a message
 * when a block does not decompress to an EVENTS header of its thread. */
static int count_compressed_events(struct tprof_trace *t, uint64_t *n, char *err, size_t errlen)
{
	struct tprof_reader_priv *p = t->priv;
	ZSTD_DCtx *d = NULL;
	int rc = 0;
	for (size_t i = 0; i < p->ncur && rc == 0; i++) {
		const struct cursor *cu = &p->cur[i];
		for (size_t k = 0; k < cu->nblocks && rc == 0; k++) {
			const struct block_ref *b = &cu->blocks[k];
			if (!b->raw_len)
				continue;
			if (!d && !(d = ZSTD_createDCtx())) {
				snprintf(err, errlen, "%s: cannot create a zstd context", t->path);
				return -1;
			}
			uint8_t head[32];
			ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
			ZSTD_inBuffer in = {p->map + b->off, b->len, 0};
			ZSTD_outBuffer o = {head, b->raw_len < sizeof(head) ? b->raw_len : sizeof(head), 0};
			while (o.pos < o.size && in.pos < in.size) {
				size_t was_in = in.pos, was_out = o.pos;
				size_t r = ZSTD_decompressStream(d, &o, &in);
				if (ZSTD_isError(r) || (in.pos == was_in && o.pos == was_out))
					break;
			}
			struct tprof_cursor c = {head, head + o.pos};
			uint64_t tid, count;
			if (tprof_get_varint(&c, &tid) || tid != cu->tid || tprof_get_varint(&c, &count) ||
			    count == 0 || count > b->raw_len) {
				set_err(err, errlen, t->path, b->off,
					"corrupt: compressed EVENTS block of thread %u does not decompress to "
					"its header",
					cu->tid);
				rc = -1;
			} else {
				*n += count;
			}
		}
	}
	ZSTD_freeDCtx(d);
	return rc;
}

/* The recorder holds an exclusive lock on a trace until it is complete (it ends a moment after the
 * process it records): wait for it, at most TPROF_WAIT_MS (default 10 s), then read what is there.
 * Returns 1 when it waited. */
static int wait_for_recorder(int fd, const char *path)
{
	if (flock(fd, LOCK_SH | LOCK_NB) == 0 || errno != EWOULDBLOCK)
		return 0;
	const char *env = getenv("TPROF_WAIT_MS");
	long limit = env && *env ? strtol(env, NULL, 10) : 10000;
	for (long waited = 0; waited < limit; waited += 10) {
		if (waited == 1000)
			fprintf(stderr, "tprof: waiting for the recorder to finish %s\n", path);
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			return 1;
	}
	fprintf(stderr, "tprof: %s is still being recorded; reading what it holds so far\n", path);
	return 1;
}

int tprof_trace_open(const char *path, struct tprof_trace **out, char *err, size_t errlen)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not hang us */
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -1;
	}
	if (wait_for_recorder(fd, path) && fstat(fd, &st) != 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (st.st_size == 0) {
		snprintf(err, errlen, "%s: byte 0: empty file, not a tprof trace", path);
		close(fd);
		return -1;
	}
	size_t size = (size_t)st.st_size;
	const uint8_t *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "%s: cannot map: %s", path, strerror(errno));
		return -1;
	}
	struct tprof_trace *t = xcalloc(1, sizeof(*t));
	t->path = path;
	t->priv = xcalloc(1, sizeof(*t->priv));
	struct tprof_reader_priv *p = t->priv;
	p->map = map;
	p->size = size;
	p->progress = progress_wanted(size);
	*out = t;

	if (size < TPROF_MAGIC_LEN || memcmp(map, TPROF_MAGIC, TPROF_MAGIC_LEN) != 0) {
		set_err(err, errlen, path, 0, "not a tprof trace (bad magic)");
		goto fail;
	}
	if (size < TPROF_FILE_HEADER_LEN) {
		set_err(err, errlen, path, size, "truncated file header (%zu of %d bytes)", size,
			TPROF_FILE_HEADER_LEN);
		goto fail;
	}
	uint16_t version = tprof_load_u16(map + 8), hlen = tprof_load_u16(map + 10);
	if (version < TPROF_VERSION_OLDEST && version > 0) {
		set_err(err, errlen, path, 8,
			"trace format version %u is older than this tprof reads (%d to %d); record it again",
			version, TPROF_VERSION_OLDEST, TPROF_VERSION);
		goto fail;
	}
	if (version > TPROF_VERSION) {
		set_err(err, errlen, path, 8,
			"trace format version %u is newer than this tprof reads (%d); upgrade tprof",
			version, TPROF_VERSION);
		goto fail;
	}
	if (version == 0) {
		set_err(err, errlen, path, 8, "invalid trace format version 0");
		goto fail;
	}
	if (hlen < TPROF_FILE_HEADER_LEN || hlen > size) {
		set_err(err, errlen, path, 10, "invalid header length %u", hlen);
		goto fail;
	}

	uint64_t off = hlen, events_seen = 0, dropped_to = 0, last_clock_off = 0;
	size_t cap_clocks = 0;
	char clock_why[128];
	int last_was_end = 0;
	while (off < size) {
		if (off - dropped_to >= (16u << 20)) {
			drop_pages(map, map + dropped_to, map + off);
			dropped_to = off;
		}
		/* The header fields that are there are checked first: a block whose type or length is
		 * wrong is corrupt, even where the file ends; one that is right but runs past the end of
		 * the file was cut there. */
		uint64_t have = size - off;
		uint8_t type = map[off];
		uint32_t len = have >= 5 ? tprof_load_u32(map + off + 1) : 0;
		if (type < TPROF_BLK_INFO || type > tprof_block_type_max(version)) {
			if (type <= TPROF_BLK_LEAKS)
				set_err(err, errlen, path, off,
					"corrupt: block type %u does not exist in format version %u", type, version);
			else
				set_err(err, errlen, path, off, "corrupt: unknown block type %u", type);
			goto fail;
		}
		if (len > TPROF_BLOCK_MAX_PAYLOAD) {
			set_err(err, errlen, path, off, "corrupt: block length %u exceeds the %u limit", len,
				TPROF_BLOCK_MAX_PAYLOAD);
			goto fail;
		}
		if (have < TPROF_BLOCK_HEADER_LEN || len > have - TPROF_BLOCK_HEADER_LEN) {
			t->cut = 1;
			t->cut_at = off;
			t->cut_blocks = t->blocks;
			t->cut_have = have;
			t->cut_want = have < 5 ? 0 : (uint64_t)TPROF_BLOCK_HEADER_LEN + len;
			break;
		}
		uint32_t crc = tprof_load_u32(map + off + 5);
		const uint8_t *pl = map + off + TPROF_BLOCK_HEADER_LEN;
		uint32_t want = tprof_crc32c_update(tprof_crc32c_update(0, &type, 1), pl, len);
		if (want != crc) {
			set_err(err, errlen, path, off, "corrupt: block checksum mismatch (type %u, %u bytes)",
				type, len);
			goto fail;
		}
		struct tprof_cursor c = {pl, pl + len};
		if (t->blocks == 0 && type != TPROF_BLK_INFO) {
			set_err(err, errlen, path, off, "corrupt: first block is type %u, not INFO", type);
			goto fail;
		}
		int bad = 0;
		const char *why = NULL;
		char whybuf[96];
		switch (type) {
		case TPROF_BLK_INFO:
			bad = t->blocks != 0 || parse_info(t, &c, version, &why);
			break;
		case TPROF_BLK_CLOCK: {
			uint64_t tick, mono, real;
			bad = tprof_get_varint(&c, &tick) || tprof_get_varint(&c, &mono) ||
			      tprof_get_varint(&c, &real);
			const struct clock_pair *last = p->nclocks ? &p->clocks[p->nclocks - 1] : NULL;
			if (!bad && last && mono < last->mono) { /* CLOCK_MONOTONIC never goes back */
				bad = 1;
				snprintf(clock_why, sizeof(clock_why),
					 "a clock pair goes back in time (%llu ns after %llu ns)",
					 (unsigned long long)mono, (unsigned long long)last->mono);
				why = clock_why;
			}
			/* a tick behind the last pair's (the TSCs of two cores a little apart) gives the
			 * line nothing: the pair is left out */
			if (!bad && (!last || tick >= last->tick)) {
				if (p->nclocks == cap_clocks) {
					cap_clocks = cap_clocks ? 2 * cap_clocks : 16;
					p->clocks = xrealloc(p->clocks, cap_clocks * sizeof(*p->clocks));
				}
				p->clocks[p->nclocks++] = (struct clock_pair){tick, mono};
				last_clock_off = off;
			}
			break;
		}
		case TPROF_BLK_THREAD: {
			uint64_t tid;
			const char *s;
			size_t n;
			bad = tprof_get_varint(&c, &tid) || tid > UINT32_MAX || tprof_get_string(&c, &s, &n);
			if (!bad) {
				size_t ix = thread_index(t, (uint32_t)tid);
				struct tprof_thread_info *ti = &t->threads[ix];
				free(ti->name);
				ti->name = xstrndup(s, n);
				ti->ended = 0;
			}
			break;
		}
		case TPROF_BLK_EVENTS:
		case TPROF_BLK_ZEVENTS: {
			uint64_t tid, count = 0, raw = 0;
			bad = tprof_get_varint(&c, &tid) || tid > UINT32_MAX;
			if (!bad && type == TPROF_BLK_EVENTS)
				bad = tprof_get_varint(&c, &count) || count == 0 || count > len;
			if (!bad && type == TPROF_BLK_ZEVENTS)
				bad = tprof_get_varint(&c, &raw) || raw == 0 || raw > TPROF_ZEVENTS_MAX_RAW;
			if (!bad) {
				struct cursor *cu = cursor_for(t, (uint32_t)tid);
				if (cu->nblocks == cu->cap) {
					cu->cap = cu->cap ? cu->cap * 2 : 2;
					cu->blocks = xrealloc(cu->blocks, cu->cap * sizeof(*cu->blocks));
				}
				uint64_t at = type == TPROF_BLK_EVENTS ? off + TPROF_BLOCK_HEADER_LEN
								       : (uint64_t)(c.p - map);
				cu->blocks[cu->nblocks++] = (struct block_ref){at, (uint32_t)(pl + len - (map + at)),
										(uint32_t)raw};
				events_seen += count;
			}
			break;
		}
		case TPROF_BLK_STACKS:
			bad = parse_stacks(t, &c, &why);
			break;
		case TPROF_BLK_NAMES:
			bad = parse_names(t, &c, &why);
			break;
		case TPROF_BLK_KERNELS:
			bad = parse_kernels(t, &c, &why);
			break;
		case TPROF_BLK_RSS:
			bad = parse_rss(t, &c, &why);
			break;
		case TPROF_BLK_LEAKS:
			bad = parse_leaks(t, &c, &why);
			break;
		case TPROF_BLK_MODULE:
			bad = parse_module(t, &c);
			break;
		case TPROF_BLK_MODULE_END: {
			uint64_t id, seq;
			bad = tprof_get_varint(&c, &id) || tprof_get_varint(&c, &seq) || id >= t->nmodules ||
			      t->modules[id].unload_seq != UINT64_MAX || seq < t->modules[id].load_seq;
			if (!bad)
				t->modules[id].unload_seq = seq;
			break;
		}
		case TPROF_BLK_LOST: {
			uint64_t tid, n;
			bad = tprof_get_varint(&c, &tid) || tid > UINT32_MAX || tprof_get_varint(&c, &n);
			if (!bad) {
				t->lost_events += n;
				if (tid) {
					size_t ix = thread_index(t, (uint32_t)tid);
					t->threads[ix].lost += n;
				}
			}
			break;
		}
		case TPROF_BLK_THREAD_END: {
			uint64_t tid;
			bad = tprof_get_varint(&c, &tid) || tid > UINT32_MAX;
			if (!bad) {
				size_t ix = thread_index(t, (uint32_t)tid);
				t->threads[ix].ended = 1;
			}
			break;
		}
		case TPROF_BLK_END:
			bad = parse_end(t, &c, version, &why, whybuf, sizeof(whybuf));
			break;
		}
		if (bad) {
			if (why)
				set_err(err, errlen, path, off, "corrupt: %s", why);
			else
				set_err(err, errlen, path, off, "corrupt: malformed block of type %u", type);
			goto fail;
		}
		last_was_end = type == TPROF_BLK_END;
		t->blocks++;
		off += TPROF_BLOCK_HEADER_LEN + len;
	}
	if (t->blocks == 0 && t->cut) {
		if (t->cut_want)
			set_err(err, errlen, path, off,
				"truncated: no complete INFO block: the first block has %llu of its %llu bytes",
				(unsigned long long)t->cut_have, (unsigned long long)t->cut_want);
		else
			set_err(err, errlen, path, off,
				"truncated: no complete INFO block: the file ends %llu bytes into the first "
				"block's %d-byte header",
				(unsigned long long)t->cut_have, TPROF_BLOCK_HEADER_LEN);
		goto fail;
	}
	if (t->blocks == 0) {
		set_err(err, errlen, path, off, "truncated: no INFO block after the file header");
		goto fail;
	}
	if (t->cut) {
		t->cut_events = events_seen;
		if (count_compressed_events(t, &t->cut_events, err, errlen) != 0)
			goto fail;
		dropped_to = 0;
	}
	t->ended = last_was_end && !t->cut;
	t->complete = t->ended && !(t->end_flags & TPROF_ENDF_INFLIGHT);
	if (t->nannots)
		tprof_sort(t->annots, t->nannots, sizeof(*t->annots), annot_by_seq);
	drop_pages(map, map + dropped_to, map + size);
	merge_duplicate_stacks(t);

	/* Time base: a straight line through the first and last calibration pairs. */
	p->ns_per_tick = 1.0;
	if (t->info.clock == TPROF_CLOCK_TSC && p->nclocks >= 2 &&
	    p->clocks[p->nclocks - 1].tick > p->clocks[0].tick)
		p->ns_per_tick = (double)(p->clocks[p->nclocks - 1].mono - p->clocks[0].mono) /
				 (double)(p->clocks[p->nclocks - 1].tick - p->clocks[0].tick);
	/* a TSC runs at 10 MHz to 100 GHz: other rates over a millisecond or more are no clock's */
	if (p->ns_per_tick != 1.0 && p->clocks[p->nclocks - 1].mono - p->clocks[0].mono >= 1000000 &&
	    (p->ns_per_tick < 0.01 || p->ns_per_tick > 100)) {
		set_err(err, errlen, path, last_clock_off, "corrupt: impossible clock calibration (%.3g ns per tick)",
			p->ns_per_tick);
		goto fail;
	}
	if (p->nclocks) {
		p->tick0 = p->clocks[0].tick;
		t->t0_ns = p->clocks[0].mono;
		t->end_ns = p->clocks[p->nclocks - 1].mono;
	}
	t->first_tick_seen = UINT64_MAX;
	index_jobs(p);
	p->heap = xcalloc(p->ncur + 1, sizeof(size_t));
	p->next_seq = xcalloc(p->ncur + 1, sizeof(uint64_t));
	return 0;
fail:
	tprof_trace_close(t);
	*out = NULL;
	return -1;
}

static void stop_decoder(struct tprof_reader_priv *p);

void tprof_trace_close(struct tprof_trace *t)
{
	if (!t)
		return;
	struct tprof_reader_priv *p = t->priv;
	if (p) {
		progress_end(p);
		stop_decoder(p); /* before the unmapping: it reads the map */
		munmap((void *)p->map, p->size);
		for (size_t j = 0; j < p->njobs; j++)
			free(p->jobs[j].out.ev);
		free(p->jobs);
		for (size_t k = 0; k < p->npool; k++)
			free(p->pool[k].ev);
		for (size_t i = 0; i < p->ncur; i++) {
			free(p->cur[i].blocks);
			free(p->cur[i].d.zbuf);
			free(p->cur[i].d.pend);
			free(p->cur[i].d.st);
			free(p->cur[i].own.ev);
		}
		free(p->cur);
		struct tid_entry *e, *tmp;
		HASH_ITER(hh, p->tids, e, tmp) {
			HASH_DEL(p->tids, e);
			free(e);
		}
		ZSTD_freeDCtx(p->dctx);
		free(p->stacks);
		free(p->idmap);
		struct sid_entry *se, *stmp;
		HASH_ITER(hh, p->sparse, se, stmp) {
			HASH_DEL(p->sparse, se);
			free(se);
		}
		free(p->frames);
		free(p->heap);
		free(p->next_seq);
		free(p->clocks);
		free(p);
	}
	for (size_t i = 0; i < t->nmodules; i++)
		free((char *)t->modules[i].path);
	free(t->modules);
	for (size_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].name);
	free(t->threads);
	free(t->info.exe);
	free(t->info.program);
	free(t->info.malloc_owner);
	if (t->info.argv)
		for (uint64_t i = 0; i < t->info.argc; i++)
			free(t->info.argv[i]);
	free(t->info.argv);
	free(t->kcalls);
	free(t->kshape);
	free(t->annots);
	free(t->rss);
	free(t->leaks.entries);
	for (uint32_t i = 0; i < t->nop_names; i++) {
		free(t->op_names[i]);
		free(t->op_shape_names[i]);
	}
	free(t->op_names);
	free(t->op_shape_names);
	for (uint32_t i = 0; i < t->nannot_names; i++)
		free(t->annot_names[i]);
	free(t->annot_names);
	free(t);
}

const char *tprof_trace_cut_note(const struct tprof_trace *t, char *buf, size_t len)
{
	char block[96];
	if (t->cut_want)
		snprintf(block, sizeof(block), "the block there has %llu of its %llu bytes",
			 (unsigned long long)t->cut_have, (unsigned long long)t->cut_want);
	else
		snprintf(block, sizeof(block), "the file ends %llu bytes into a %d-byte block header",
			 (unsigned long long)t->cut_have, TPROF_BLOCK_HEADER_LEN);
	snprintf(buf, len, "trace cut at byte %llu after %llu complete blocks: the rest is lost (%llu events "
		 "before it; %s)",
		 (unsigned long long)t->cut_at, (unsigned long long)t->cut_blocks,
		 (unsigned long long)t->cut_events, block);
	return buf;
}

uint64_t tprof_trace_ns(const struct tprof_trace *t, uint64_t tick)
{
	const struct tprof_reader_priv *p = t->priv;
	double mono;
	if (t->info.clock == TPROF_CLOCK_MONOTONIC)
		mono = (double)tick;
	else
		mono = (double)t->t0_ns + ((double)tick - (double)p->tick0) * p->ns_per_tick;
	if (mono <= (double)t->t0_ns)
		return 0;
	double d = mono - (double)t->t0_ns + 0.5;
	return d >= 18446744073709549568.0 ? UINT64_MAX : (uint64_t)d; /* a tick no clock reaches */
}

const uint64_t *tprof_trace_stack(const struct tprof_trace *t, uint32_t id, uint32_t *depth, int *truncated)
{
	const struct tprof_reader_priv *p = t->priv;
	if (id == 0 || id >= p->nstacks || !p->stacks[id].depth)
		return NULL;
	const struct stack_def *s = &p->stacks[id];
	*depth = s->depth;
	if (truncated)
		*truncated = s->truncated;
	return p->frames + s->first;
}

const char *tprof_trace_thread_name(const struct tprof_trace *t, uint32_t tid)
{
	const struct tprof_reader_priv *p = t->priv;
	if (!p->tids) { /* a trace put together in memory (the unit tests'): no index */
		for (size_t i = 0; i < t->nthreads; i++)
			if (t->threads[i].tid == tid)
				return t->threads[i].name;
		return "";
	}
	struct tid_entry *e;
	HASH_FIND(hh, p->tids, &tid, sizeof(tid), e);
	return e && e->thread != SIZE_MAX ? t->threads[e->thread].name : "";
}

/* Tick of a record recorded without one: on the line between the measured records around it, by
 * sequence number (sequence numbers advance with real time across all threads). */
static uint64_t interpolate(uint64_t seq, uint64_t a_seq, uint64_t a_tick, uint64_t b_seq, uint64_t b_tick)
{
	if (b_seq <= a_seq || b_tick <= a_tick || seq <= a_seq)
		return a_tick;
	if (seq >= b_seq)
		return b_tick;
	uint64_t dt = b_tick - a_tick, ds = seq - a_seq;
	if (dt < (1ull << 32) && ds < (1ull << 32)) /* the usual case: no 128-bit division */
		return a_tick + dt * ds / (b_seq - a_seq);
	unsigned __int128 d = (unsigned __int128)(b_tick - a_tick) * (seq - a_seq);
	return a_tick + (uint64_t)(d / (b_seq - a_seq));
}

static uint32_t pend_slot(const struct blockdec *c, uint64_t ptr)
{
	return (uint32_t)((ptr >> 4) * 0x9e3779b97f4a7c15ull >> (64 - c->pend_bits));
}

/* Pairs event ev[i] (the last of a realloc's two) with the allocation it frees, when that allocation
 * is in the same chunk (event number >= base) and nothing touched its address since: c->pend holds
 * the latest allocation at each address (one per slot; a collision only loses a pairing). */
static void pair_event(struct blockdec *c, struct tprof_event *ev, size_t i, uint64_t base)
{
	struct tprof_event *e = &ev[i];
	if (e->kind == TPROF_EV_FREE) {
		struct pending *q = &c->pend[pend_slot(c, e->ptr)];
		if (e->ptr && q->ptr == e->ptr && q->at > base) {
			struct tprof_event *a = &ev[q->at - 1 - base];
			a->paired = e->paired = 1;
			e->freed_size = a->size;
			e->freed_stack = a->stack;
			q->at = 0;
		}
		return;
	}
	if (tprof_kind_is_realloc(e->kind)) { /* its old block is released through the replay's index */
		struct pending *q = &c->pend[pend_slot(c, e->old_ptr)];
		if (q->ptr == e->old_ptr)
			q->at = 0;
	}
	if (e->ptr) {
		struct pending *q = &c->pend[pend_slot(c, e->ptr)];
		q->ptr = e->ptr;
		q->at = base + i + 1;
	}
}

/* Starts decoding block b with c: decompresses it when needed and sets up its streams and state.
 * 0, or -1 with the message in out->err. */
static int begin_block(const struct tprof_trace *t, ZSTD_DCtx **dctx, struct blockdec *c, const struct block_ref *b,
		       struct decoded *out)
{
	const struct tprof_reader_priv *p = t->priv;
	const uint8_t *data = p->map + b->off;
	size_t len = b->len;
	if (b->raw_len) {
		if (!*dctx)
			*dctx = ZSTD_createDCtx();
		if (c->zcap < b->raw_len) {
			free(c->zbuf);
			c->zcap = b->raw_len;
			c->zbuf = xmalloc(c->zcap);
		}
		size_t got = *dctx ? ZSTD_decompressDCtx(*dctx, c->zbuf, b->raw_len, data, len) : (size_t)-1;
		if (ZSTD_isError(got) || got != b->raw_len) {
			set_err(out->err, sizeof(out->err), t->path, b->off,
				"corrupt: compressed EVENTS block of thread %u does not decompress to its %u bytes",
				c->tid, b->raw_len);
			return -1;
		}
		data = c->zbuf;
		len = b->raw_len;
	}
	struct tprof_cursor in = {data, data + len};
	uint64_t tid, seq0, tick0;
	const char *what = "malformed EVENTS block header";
	if (tprof_get_varint(&in, &tid) || tid != c->tid || tprof_get_varint(&in, &c->count) || c->count == 0 ||
	    c->count > len || tprof_get_varint(&in, &seq0) || tprof_get_varint(&in, &tick0))
		goto bad;
	for (int k = 0; k < TPROF_NSTREAMS; k++) {
		uint64_t sl;
		if (tprof_get_varint(&in, &sl))
			goto bad;
		c->s[k].end = (const uint8_t *)(uintptr_t)sl; /* lengths first, positions below */
	}
	for (int k = 0; k < TPROF_NSTREAMS; k++) {
		uint64_t sl = (uint64_t)(uintptr_t)c->s[k].end;
		if (sl > (uint64_t)(in.end - in.p))
			goto bad;
		c->s[k].p = in.p;
		c->s[k].end = in.p + sl;
		in.p += sl;
	}
	if (in.p != in.end) {
		what = "bytes left over after the streams";
		goto bad;
	}
	/* pairing slots: about two per event of a chunk; a larger table drops what the smaller held,
	 * which only pairs within a chunk */
	unsigned bits = 4;
	while (bits < PEND_BITS && (1ull << bits) < 2 * (c->count < CHUNK ? c->count : CHUNK))
		bits++;
	if (bits > c->pend_bits) {
		free(c->pend);
		c->pend = xcalloc(1u << bits, sizeof(*c->pend));
		c->pend_bits = bits;
	}
	if (!c->st)
		c->st = xmalloc(sizeof(*c->st));
	tprof_rec_state_init(c->st, seq0, tick0);
	c->a_seq = seq0;
	c->a_tick = tick0;
	c->ri = 0;
	c->blk = b;
	return 0;
bad:
	set_err(out->err, sizeof(out->err), t->path, b->off, "corrupt: %s (record 0) in an EVENTS block of thread %u",
		what, c->tid);
	return -1;
}

/* Gives the unmeasured events [from, to) their ticks on the line between the measured records
 * (a_seq, a_tick) before them and (b_seq, b_tick) after them. */
static void fill_ticks(struct tprof_event *ev, size_t from, size_t to, uint64_t a_seq, uint64_t a_tick,
		       uint64_t b_seq, uint64_t b_tick)
{
	if (b_seq > a_seq && b_tick > a_tick && b_tick - a_tick < (1ull << 31) && b_seq - a_seq < (1ull << 31)) {
		/* the usual run: one division, then fixed point (the result may differ from the exact
		 * line by one tick) */
		uint64_t slope = ((b_tick - a_tick) << 32) / (b_seq - a_seq);
		for (size_t i = from; i < to; i++) {
			uint64_t sq = ev[i].seq;
			ev[i].tick = sq <= a_seq ? a_tick : sq >= b_seq ? b_tick : a_tick + (((sq - a_seq) * slope) >> 32);
		}
	} else {
		for (size_t i = from; i < to; i++)
			ev[i].tick = interpolate(ev[i].seq, a_seq, a_tick, b_seq, b_tick);
	}
}

/* Decodes the next records of c's block into out: at least limit of them (or the rest of the
 * block), and on to the end of a run of unmeasured records, which get their interpolated ticks
 * when the measured record that ends the run arrives (runs end inside their block). Each record
 * becomes an event with its canonical stack id, a realloc two. On a corrupt record out->status is
 * -1 with the message in out->err, and out->n counts the complete events before it. */
static void decode_chunk(const struct tprof_trace *t, struct blockdec *c, struct decoded *out, uint64_t limit)
{
	const struct tprof_reader_priv *p = t->priv;
	const struct block_ref *b = c->blk;
	const char *what = NULL;
	size_t n = 0, run = SIZE_MAX; /* run: first event of the open unmeasured run */
	uint64_t base = c->evno;
	while (c->ri < c->count && (n < limit || run != SIZE_MAX)) {
		if (n + 2 > out->cap) {
			out->cap = out->cap ? 2 * out->cap : (limit < c->count - c->ri ? limit : c->count - c->ri) + 8;
			out->ev = xrealloc(out->ev, out->cap * sizeof(*out->ev));
		}
		struct tprof_event *ev = out->ev;
		struct tprof_rec r;
		if (tprof_rec_decode(c->s, c->st, &r)) {
			what = "malformed event record";
			goto bad;
		}
		c->ri++;
		uint32_t stack = 0;
		if (r.stack) {
			uint32_t our = id_find(p, r.stack);
			if (!our) {
				out->n = run == SIZE_MAX ? n : run;
				set_err(out->err, sizeof(out->err), t->path, b->off,
					"corrupt: an event of thread %u refers to stack %u, which is not defined",
					c->tid, r.stack);
				goto fail;
			}
			stack = p->stacks[our].canon;
		}
		struct tprof_event *e = &ev[n++];
		*e = (struct tprof_event){.seq = r.seq, .tick = r.tick, .size = r.size, .ptr = r.ptr,
					  .tid = c->tid, .stack = stack, .kind = (uint8_t)r.kind};
		if (r.no_tick) {
			if (run == SIZE_MAX)
				run = n - 1;
		} else {
			if (run != SIZE_MAX) {
				fill_ticks(ev, run, n - 1, c->a_seq, c->a_tick, r.seq, r.tick);
				run = SIZE_MAX;
			}
			c->a_seq = r.seq;
			c->a_tick = r.tick;
			if (tprof_kind_is_realloc(r.kind)) {
				e->old_ptr = r.old_ptr;
				e[1] = e[0];
				e[1].phase = 1;
				e[1].seq = c->a_seq = r.seq2;
				e[1].tick = c->a_tick = r.tick2;
				n++;
			}
		}
		pair_event(c, ev, n - 1, base);
	}
	if (c->ri == c->count) {
		for (int k = 0; k < TPROF_NSTREAMS; k++)
			if (c->s[k].p != c->s[k].end) {
				what = "bytes left over after the last record";
				goto bad;
			}
		if (run != SIZE_MAX) {
			what = "records without a time at the end of the block";
			goto bad;
		}
		c->blk = NULL;
		free(c->st); /* a trace of many threads holds no codec state or decompressed payload */
		c->st = NULL; /* for the threads between two blocks */
		free(c->zbuf);
		c->zbuf = NULL;
		c->zcap = 0;
	}
	c->evno += n;
	out->n = n;
	out->status = 1;
	return;
bad:
	out->n = run == SIZE_MAX ? n : run;
	set_err(out->err, sizeof(out->err), t->path, b->off, "corrupt: %s (record %llu) in an EVENTS block of thread %u",
		what, (unsigned long long)c->ri, c->tid);
fail:
	/* a pair may span the events kept and the ones dropped: keep none */
	for (size_t i = 0; i < out->n; i++)
		out->ev[i].paired = 0;
	c->evno += out->n;
	out->status = -1;
}

/* Gives back the mapped pages below every cursor's next undecoded block, once there are a few MiB
 * of them: the reader's memory does not grow with the length of the trace, and the mapping is not
 * trimmed (a TLB shootdown while the decode thread runs) block by block. The decode thread only
 * reads blocks no cursor has begun, above the mark. */
static void drop_consumed(struct tprof_reader_priv *p, uint64_t at)
{
	/* a look over every cursor, at most once per 4 MiB of the file begun: a trace of many
	 * threads must not cost threads x blocks */
	if (at < p->drop_check_at && at < p->size)
		return;
	p->drop_check_at = at + (4u << 20);
	uint64_t low = p->size;
	for (size_t i = 0; i < p->ncur; i++) {
		const struct cursor *c = &p->cur[i];
		if (c->d.blk && !c->d.blk->raw_len) /* an uncompressed block is decoded in place */
			low = c->d.blk->off < low ? c->d.blk->off : low;
		else if (c->next_block < c->nblocks && c->blocks[c->next_block].off < low)
			low = c->blocks[c->next_block].off;
	}
	if (low >= p->dropped_to + (4u << 20) || (low == p->size && low > p->dropped_to)) {
		drop_pages(p->map, p->map + p->dropped_to, p->map + low);
		p->dropped_to = low;
	}
}

/* Keeps an event buffer for the next job (fresh memory costs page faults), or frees it when the
 * pool is full. Under lock. */
static void pool_put(struct tprof_reader_priv *p, struct decoded d)
{
	if (p->npool < POOL && d.ev)
		p->pool[p->npool++] = d;
	else
		free(d.ev);
}

/* The decode thread: decodes whole blocks in file order, at most DECODE_AHEAD blocks and
 * DECODE_AHEAD_BYTES of events ahead of the merge. It leaves each thread's next block to the merge,
 * which is about to need it: the merge decodes that one itself when it comes to it first, and
 * otherwise only merges and analyzes what is ready, so the two share the decoding as their speeds
 * allow. Blocks decode on their own (docs/FORMAT.md): the events are the same whichever thread
 * decoded a block. */
static void *decoder_main(void *arg)
{
	struct tprof_trace *t = arg;
	struct tprof_reader_priv *p = t->priv;
	struct blockdec *d = calloc(1, sizeof(*d));
	ZSTD_DCtx *dctx = NULL;
	pthread_mutex_lock(&p->lock);
	for (size_t j = 0; d && !p->stop;) {
		/* a job passed over is never the decode thread's again: it was taken, or is next
		 * (which only taking ends), or too large */
		while (j < p->njobs && (p->jobs[j].state != JOB_FREE || p->jobs[j].next ||
					p->jobs[j].b->raw_len > DECODE_MAX_RAW || p->jobs[j].b->len > DECODE_MAX_RAW))
			j++;
		if (j >= p->njobs)
			break;
		if (p->ahead >= DECODE_AHEAD || p->ahead_bytes >= DECODE_AHEAD_BYTES) {
			pthread_cond_wait(&p->want, &p->lock);
			continue;
		}
		struct job *z = &p->jobs[j];
		z->state = JOB_BUSY;
		p->ahead++;
		struct decoded out = {0};
		if (p->npool)
			out = p->pool[--p->npool];
		pthread_mutex_unlock(&p->lock);
		d->tid = z->tid;
		out.n = 0;
		if (begin_block(t, &dctx, d, z->b, &out) < 0)
			out.status = -1;
		else
			decode_chunk(t, d, &out, UINT64_MAX);
		d->blk = NULL;
		pthread_mutex_lock(&p->lock);
		if (z->state == JOB_TAKEN) { /* the merge stopped waiting and decoded it itself */
			pool_put(p, out);
			continue;
		}
		z->out = out;
		__atomic_store_n(&z->state, JOB_READY, __ATOMIC_RELEASE); /* take_job spins on it */
		p->ahead_bytes += out.n * sizeof(*out.ev);
		pthread_cond_broadcast(&p->ready);
	}
	pthread_mutex_unlock(&p->lock);
	if (d) {
		free(d->zbuf);
		free(d->pend);
		free(d->st);
	}
	free(d);
	ZSTD_freeDCtx(dctx);
	return NULL;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* How long the merge waits for the decode thread to finish the block it needs, before it decodes
 * the block itself: a little more than a block takes, so that a decode thread held off its CPU
 * (another program on a shared machine) costs the merge no more than this. */
#define DECODE_WAIT_NS 1000000

/* The merge comes to block b, whose thread's next block is then next (NULL: none): returns b's
 * job with the events when the decode thread decoded it (waiting a moment for it to finish when it
 * is on it), or NULL when the merge is to decode it itself. */
static struct job *take_job(struct tprof_reader_priv *p, const struct block_ref *b, const struct block_ref *next)
{
	if (!p->threaded)
		return NULL;
	struct job *z = &p->jobs[b->job];
	pthread_mutex_lock(&p->lock);
	z->next = 0;
	if (next)
		p->jobs[next->job].next = 1;
	if (z->state == JOB_BUSY) {
		/* the decode thread is usually about to finish: spin a little before sleeping, which
		 * costs a wake-up (tens of microseconds on a virtual machine) */
		pthread_mutex_unlock(&p->lock);
		for (int k = 0; k < 4000 && __atomic_load_n(&z->state, __ATOMIC_ACQUIRE) == JOB_BUSY; k++)
			cpu_relax();
		pthread_mutex_lock(&p->lock);
	}
	if (z->state == JOB_BUSY) {
		struct timespec until;
		clock_gettime(CLOCK_MONOTONIC, &until);
		until.tv_nsec += DECODE_WAIT_NS;
		until.tv_sec += until.tv_nsec / 1000000000;
		until.tv_nsec %= 1000000000;
		while (z->state == JOB_BUSY && pthread_cond_timedwait(&p->ready, &p->lock, &until) == 0)
			;
	}
	int ready = z->state == JOB_READY;
	if (ready || z->state == JOB_BUSY) { /* ready, or left to the decode thread to drop */
		p->ahead--;
		if (ready)
			p->ahead_bytes -= z->out.n * sizeof(*z->out.ev);
		pthread_cond_signal(&p->want);
	}
	z->state = JOB_TAKEN;
	pthread_mutex_unlock(&p->lock);
	return ready ? z : NULL;
}

/* The merge has read job z's events: its buffer goes back to the pool. */
static void release_job(struct tprof_reader_priv *p, struct job *z)
{
	pthread_mutex_lock(&p->lock);
	pool_put(p, z->out);
	z->out.ev = NULL;
	pthread_mutex_unlock(&p->lock);
}

/* The decode thread runs when there are blocks to share and a second CPU to decode them on
 * (TPROF_DECODE_THREAD=0 turns it off; the events are the same either way). */
static void start_decoder(struct tprof_trace *t)
{
	struct tprof_reader_priv *p = t->priv;
	const char *env = getenv("TPROF_DECODE_THREAD");
	if (p->njobs < 2 || (env && strcmp(env, "0") == 0) || sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return;
	for (size_t i = 0; i < p->ncur; i++)
		if (p->cur[i].nblocks)
			p->jobs[p->cur[i].blocks[0].job].next = 1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->want, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->ready, &ca);
	pthread_condattr_destroy(&ca);
	p->threaded = 1;
	if (pthread_create(&p->thread, NULL, decoder_main, t) != 0) {
		p->threaded = 0;
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->want);
		pthread_cond_destroy(&p->ready);
	}
}

static void stop_decoder(struct tprof_reader_priv *p)
{
	if (!p->threaded)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->want);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->want);
	pthread_cond_destroy(&p->ready);
	p->threaded = 0;
}

/* ---- progress: one line on stderr, when it is a terminal and the trace is large ---- */

int tprof_progress = 1;

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether a trace of size bytes gets a progress line: TPROF_PROGRESS=0 never, =1 whatever its
 * size; by default from 100 MB on. Only on a terminal, and only for commands that allow it. */
static int progress_wanted(size_t size)
{
	const char *env = getenv("TPROF_PROGRESS");
	if (!tprof_progress || (env && strcmp(env, "0") == 0) || !isatty(2))
		return 0;
	return (env && strcmp(env, "1") == 0) || size >= 100000000u;
}

/* The reading has come to byte at: redraws the line at most 5 times a second. */
static void progress_step(struct tprof_trace *t, uint64_t at)
{
	struct tprof_reader_priv *p = t->priv;
	uint64_t now = mono_ns();
	if (!p->progress_t0)
		p->progress_t0 = now;
	if (p->progress_shown && now - p->progress_shown < 200000000u)
		return;
	p->progress_shown = now;
	double secs = (double)(now - p->progress_t0) / 1e9;
	fprintf(stderr, "\rtprof: reading %s: %.0f of %.0f MB (%.0f%%), %.0f MB/s\033[K", t->path, (double)at / 1e6,
		(double)p->size / 1e6, 100.0 * (double)at / (double)p->size, secs > 0 ? (double)at / 1e6 / secs : 0.0);
	fflush(stderr);
}

/* The end of the reading (or of the trace): the line is erased, so that the output starts clean. */
static void progress_end(struct tprof_reader_priv *p)
{
	if (p->progress && p->progress_shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->progress = 0;
}

/* Moves the cursor to its next decoded events: 1 when c->next..c->end holds some, 0 at the end of
 * the thread's events, -1 on a corrupt block (t->err; every event before the fault was delivered). */
static int cursor_fill(struct tprof_trace *t, struct cursor *c)
{
	struct tprof_reader_priv *p = t->priv;
	struct decoded *s = c->held ? &c->held->out : &c->own;
	if (c->holding) {
		if (s->status != 1) /* a corrupt block's events were all handed out: now its error */
			goto corrupt;
		c->holding = 0;
		if (c->held) {
			release_job(p, c->held);
			c->held = NULL;
		}
	}
	if (!c->d.blk) { /* between blocks */
		if (c->next_block == c->nblocks)
			return 0;
		const struct block_ref *b = &c->blocks[c->next_block++];
		c->held = take_job(p, b, c->next_block < c->nblocks ? &c->blocks[c->next_block] : NULL);
		if (!c->held && begin_block(t, &p->dctx, &c->d, b, &c->own) < 0) {
			c->own.n = 0;
			c->own.status = -1;
		}
		drop_consumed(p, b->off);
		if (p->progress)
			progress_step(t, b->off);
	}
	if (c->d.blk) /* a block of its own, being decoded */
		decode_chunk(t, &c->d, &c->own, CHUNK);
	s = c->held ? &c->held->out : &c->own;
	c->holding = 1;
	c->next = s->ev;
	c->end = s->ev ? s->ev + s->n : s->ev; /* no events yet: no buffer either */
	if (c->next < c->end)
		return 1;
corrupt:
	snprintf(t->err, sizeof(t->err), "%s", s->err);
	progress_end(p); /* the message that follows starts on a line of its own */
	return -1;
}

static int heap_less(struct tprof_reader_priv *p, size_t a, size_t b)
{
	return p->next_seq[p->heap[a]] < p->next_seq[p->heap[b]];
}

static void heap_swap(struct tprof_reader_priv *p, size_t a, size_t b)
{
	size_t x = p->heap[a];
	p->heap[a] = p->heap[b];
	p->heap[b] = x;
}

static void heap_down(struct tprof_reader_priv *p, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < p->nheap && heap_less(p, l, m))
			m = l;
		if (r < p->nheap && heap_less(p, r, m))
			m = r;
		if (m == i)
			return;
		heap_swap(p, i, m);
		i = m;
	}
}

static void heap_up(struct tprof_reader_priv *p, size_t i)
{
	while (i && heap_less(p, i, (i - 1) / 2)) {
		heap_swap(p, i, (i - 1) / 2);
		i = (i - 1) / 2;
	}
}

/* With few threads (the usual case) the next event is found by a linear scan of one small array of
 * the cursors' next sequence numbers; with many, by the binary heap. */
#define LINEAR_MERGE_MAX 16

/* After cursor ci handed out an event: the sequence number of its next one, UINT64_MAX when it has
 * none, and 0 when its next block is corrupt, so that the next call stops there and reports it. */
static void cursor_step(struct tprof_trace *t, size_t ci)
{
	struct tprof_reader_priv *p = t->priv;
	struct cursor *c = &p->cur[ci];
	int r = 1;
	if (c->next == c->end)
		r = cursor_fill(t, c);
	p->next_seq[ci] = r < 0 ? 0 : r ? c->next->seq : UINT64_MAX;
}

/* Moves cursor ci past the event the previous call handed out. */
static void advance(struct tprof_reader_priv *p, struct tprof_trace *t, size_t ci, int linear)
{
	struct cursor *c = &p->cur[ci];
	if (++c->next != c->end)
		p->next_seq[ci] = c->next->seq;
	else
		cursor_step(t, ci);
	if (!linear) {
		if (p->next_seq[ci] == UINT64_MAX)
			p->heap[0] = p->heap[--p->nheap];
		heap_down(p, 0);
	}
}

static inline int hand_out(struct tprof_reader_priv *p, struct tprof_trace *t, size_t ci,
			   const struct tprof_event **out);

int tprof_trace_next_ref(struct tprof_trace *t, const struct tprof_event **out)
{
	struct tprof_reader_priv *p = t->priv;
	int linear = p->ncur <= LINEAR_MERGE_MAX;
	if (!p->started) {
		p->started = 1;
		start_decoder(t);
		for (size_t i = 0; i < p->ncur; i++) {
			cursor_step(t, i);
			if (p->next_seq[i] != UINT64_MAX && !linear) {
				p->heap[p->nheap++] = i;
				heap_up(p, p->nheap - 1);
			}
		}
	} else if (p->handed) {
		/* the event handed out last stays valid until now: its chunk is released only here */
		p->handed = 0;
		struct cursor *hc = &p->cur[p->handed_ci];
		if (linear && hc->next + 1 < hc->end && hc->next[1].seq < p->run_bound) {
			/* still below every other cursor's next event: no need to look at them */
			hc->next++;
			p->next_seq[p->handed_ci] = hc->next->seq;
			return hand_out(p, t, p->handed_ci, out);
		}
		advance(p, t, p->handed_ci, linear);
	}
	size_t ci;
	if (linear) {
		uint64_t best = UINT64_MAX, second = UINT64_MAX;
		ci = 0;
		for (size_t i = 0; i < p->ncur; i++) {
			uint64_t q = p->next_seq[i];
			if (q < best) {
				second = best;
				best = q;
				ci = i;
			} else if (q < second) {
				second = q;
			}
		}
		if (best == UINT64_MAX) {
			progress_end(p);
			return 0;
		}
		p->run_bound = second;
	} else {
		if (p->nheap == 0) {
			progress_end(p);
			return 0;
		}
		ci = p->heap[0];
	}
	if (p->cur[ci].next == p->cur[ci].end) /* an earlier call stopped at this cursor's corrupt block */
		return cursor_fill(t, &p->cur[ci]) < 0 ? -1 : 0;
	return hand_out(p, t, ci, out);
}

/* Hands out cursor ci's next event (checked to follow the last one), keeping it where it is. */
static inline int hand_out(struct tprof_reader_priv *p, struct tprof_trace *t, size_t ci,
			   const struct tprof_event **out)
{
	struct cursor *c = &p->cur[ci];
	const struct tprof_event *ev = c->next;
	if (ev->seq <= p->last_seq && p->last_seq) {
		snprintf(t->err, sizeof(t->err),
			 "%s: corrupt: event sequence number %llu of thread %u repeats or goes back "
			 "(last %llu)",
			 t->path, (unsigned long long)ev->seq, ev->tid, (unsigned long long)p->last_seq);
		return -1;
	}
	p->last_seq = ev->seq;
	t->threads[c->thread].events++;
	if (ev->tick < t->first_tick_seen)
		t->first_tick_seen = ev->tick;
	if (ev->tick > t->last_tick_seen)
		t->last_tick_seen = ev->tick;
	p->handed = 1;
	p->handed_ci = ci;
	*out = ev;
	return 1;
}

int tprof_trace_next_run(struct tprof_trace *t, const struct tprof_event **ev, size_t *n)
{
	struct tprof_reader_priv *p = t->priv;
	int r = tprof_trace_next_ref(t, ev);
	if (r != 1)
		return r;
	/* the events after the first that come before every other cursor's next one */
	struct cursor *c = &p->cur[p->handed_ci];
	uint64_t bound = p->run_bound;
	if (p->ncur > LINEAR_MERGE_MAX) {
		bound = UINT64_MAX;
		for (size_t k = 1; k <= 2 && k < p->nheap; k++)
			if (p->next_seq[p->heap[k]] < bound)
				bound = p->next_seq[p->heap[k]];
	}
	const struct tprof_event *lo = c->next + 1, *hi = c->end; /* seqs increase within a chunk */
	/* runs are long when one thread dominates, a few events when threads interleave: look at the
	 * next few one by one (no unpredictable branches for a short run), then bisect the rest */
	for (int k = 0; k < 16 && lo < hi && lo->seq < bound; k++)
		lo++;
	if (lo < hi && lo->seq >= bound) {
		hi = lo;
	} else if (hi > lo && hi[-1].seq >= bound) {
		while (lo < hi) { /* the first at or past the bound */
			const struct tprof_event *mid = lo + (hi - lo) / 2;
			if (mid->seq < bound)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	const struct tprof_event *last = hi - 1;
	*n = (size_t)(hi - c->next);
	if (*n > 1) {
		uint64_t mn = t->first_tick_seen, mx = t->last_tick_seen;
		for (const struct tprof_event *e = c->next + 1; e < hi; e++) {
			mn = e->tick < mn ? e->tick : mn;
			mx = e->tick > mx ? e->tick : mx;
		}
		t->first_tick_seen = mn;
		t->last_tick_seen = mx;
		t->threads[c->thread].events += *n - 1;
		p->last_seq = last->seq;
		p->next_seq[p->handed_ci] = last->seq;
		c->next = last; /* handed out last: the next call moves past it */
	}
	return 1;
}

int tprof_trace_next(struct tprof_trace *t, struct tprof_event *ev)
{
	const struct tprof_event *e;
	int r = tprof_trace_next_ref(t, &e);
	if (r == 1)
		*ev = *e;
	return r;
}
