/* The trace reader's own state, shared by its parts and by nothing else: open.c (pass one: map,
 * walk and index the blocks), blocks.c (the small and rare blocks), decode.c (EVENTS records into
 * events), prefetch.c (the decode thread that decompresses blocks ahead of the merge) and merge.c (the
 * threads merged into global order, and the progress line). */
#ifndef TPROF_READER_INT_H
#define TPROF_READER_INT_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>
#include <uthash.h>
#include <zstd.h>

#include "trace/reader.h"

struct block_ref {
	uint64_t off; /* of the payload */
	uint32_t len;
	uint32_t raw_len; /* ZEVENTS: length once decompressed; 0 for a plain EVENTS block */
	uint32_t job;     /* its index in the decode thread's jobs */
};

/* The merge decodes its blocks in chunks of about this many records: small enough to stay in the
 * cache between being decoded and being merged, large enough that pairs (decode.c) are rarely
 * split between chunks. */
#define CHUNK 2048
/* The events the chunks of every thread being decoded may hold together (about 3.5 MiB), above
 * which a thread's chunks are smaller, down to CHUNK_MIN events (merge.c). */
#define CHUNKS_HELD (32u * CHUNK)
#define CHUNK_MIN 128

/* The pipeline: with at most PIPE_MAX_CURSORS threads in the trace, the decode thread decodes the
 * records too, up to PIPE_SLOTS chunks ahead of the merge in each thread and PIPE_CHUNKS in all
 * (about 7 MiB; prefetch.c). Fewer chunks made it slower: the decode thread then writes events
 * into lines still in the merge's CPU's second-level cache (1 MiB here), which costs a transfer
 * between the two CPUs' caches each; and with 16 chunks of one thread (32k events, less than two
 * blocks) it waited, its queue full, while the merge decoded a block left to it (the summary of
 * the 2 M-pair storm took 44-45 ms at best against 40-41 with 32). */
#define PIPE_SLOTS 32
#define PIPE_CHUNKS 64
#define PIPE_MAX_CURSORS 16

/* Decoded events (a realloc as its two): a chunk. */
/* What was wrong with a block, kept small (one per thread) and made
 * into a message only when the merge comes to it (rd_dec_err_text). */
enum dec_err_kind { DEC_ERR_RECORD, DEC_ERR_DECOMPRESS, DEC_ERR_STACK };
struct dec_err {
	enum dec_err_kind kind;
	const char *what;  /* DEC_ERR_RECORD: a constant string */
	uint64_t off;      /* the block's payload */
	uint64_t value;    /* the record, the decompressed size, or the stack id */
	uint32_t tid;
};

struct decoded {
	struct tprof_event *ev;
	size_t n, cap;
	int status;   /* 1: events; -1: corrupt after the n events (err) */
	struct dec_err err;
	uint64_t at;  /* the pipeline's chunks: the offset of the block they begin, 0 when none */
	const struct block_ref *deleg; /* the pipeline: no events, but this block for the merge to
					* decode itself */
};

/* The state of decoding one EVENTS block: each cursor has one. */
struct blockdec {
	const struct block_ref *blk; /* the block being decoded, NULL between blocks */
	uint32_t tid;                /* its thread */
	struct tprof_cursor s[TPROF_NSTREAMS];
	uint64_t count, ri;     /* its records, and how many are decoded */
	struct tprof_rec_state *st; /* the codec's state (25 KiB with alloc_at): only while a block is
				     * decoded */
	uint64_t *alloc_at;     /* in st's allocation: per allocation history entry, its event number
				 * + 1 (decode.c's pairing), 0 once a free named it */
	uint64_t a_seq, a_tick; /* the last measured record */
	uint8_t *zbuf;          /* its decompressed payload */
	size_t zcap;
	int zready;             /* zbuf holds the next block's payload, decompressed ahead (by the decode
				 * thread, or by the merge while it waited for that thread) */
	uint64_t evno;          /* events decoded so far, over all blocks (the pairing's numbering) */
};

/* One thread's stream of EVENTS blocks, as the merge reads it: the chunks it decodes (own). */
struct cursor {
	uint32_t tid;
	size_t thread; /* index into t->threads */
	struct block_ref *blocks;
	size_t nblocks, cap;
	size_t next_block;      /* the next block to begin */
	struct blockdec d;
	struct decoded own;
	int holding;                             /* the merge is reading own (q[qhead] when piped) */
	const struct tprof_event *next, *end;    /* the merge's position in it */
	uint64_t ev_off;                         /* the offset of the block those events are from */
	/* The pipeline (prefetch.c): the chunks the decode thread decoded ahead, q[qhead] to
	 * q[qtail - 1] (mod PIPE_SLOTS). The decode thread writes qtail, dec_done and dec_seq and owns
	 * d; the merge writes qhead. */
	struct decoded *q; /* PIPE_SLOTS chunks, made when the pipeline starts */
	unsigned qhead, qtail;
	int dec_done;     /* the thread's last chunk (or a corrupt one) is queued */
	uint64_t dec_seq; /* the sequence number of the last event decoded */
	uint64_t deleg_off; /* the block handed to the merge, until it is decoded; else UINT64_MAX */
	int inl;            /* the merge is decoding that block (into own, with md) */
	struct blockdec md;
};

/* Every EVENTS block in file order, which is about the order the merge needs them in (a block is
 * written when its thread's ring fills or the writer's epoch ends). The merge takes each block as
 * it comes to it: free (it decompresses the block itself), busy (it waits), ready (it takes the
 * payload the decode thread decompressed); then it decodes the block chunk by chunk. Under lock. */
enum job_state { JOB_FREE, JOB_BUSY, JOB_READY, JOB_TAKEN };

struct job {
	const struct block_ref *b;
	uint32_t tid;
	enum job_state state;
	int next; /* the next block of its thread: the merge may come to it any moment */
	uint8_t *zbuf;      /* JOB_READY: the block's payload, decompressed */
	size_t zcap;
	int zok;            /* it decompressed to its length */
};

struct zbuf {
	uint8_t *buf;
	size_t cap;
};

/* How far the decode thread may run ahead of the merge: a few blocks, and a few MiB of payload; and
 * the largest block it takes (a payload is at most 1 MiB, TPROF_ZEVENTS_MAX_RAW, which the reader
 * checks when it opens the file; one that compressed to more, the merge decompresses itself). */
#define DECODE_AHEAD 10
#define DECODE_AHEAD_BYTES (16u << 20)
#define DECODE_MAX_RAW (1u << 20)
#define POOL (DECODE_AHEAD + 4)

/* A stack's frames are kept as the file encodes them (docs/FORMAT.md, STACKS: the first return
 * address as a varint, each next one as an svarint of its difference to the one before), written
 * again minimal: 2 to 3 bytes a frame instead of 8, for traces of millions of stacks. */
struct stack_def {
	uint64_t first; /* offset of its encoded frames in frames */
	uint32_t depth; /* 0: not defined */
	uint32_t canon;
	uint32_t bytes; /* of its encoded frames */
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
	int heap_only; /* TPROF_OPEN_HEAP_ONLY: kernel calls and annotations checked, not kept */
	/* the progress line on a terminal (progress_step): wanted, when the reading began, when the
	 * line was last drawn (0: never) */
	int progress;
	uint64_t progress_t0, progress_shown;
	struct cursor *cur;
	size_t ncur, cap_cur;
	size_t nown; /* cursors that hold a chunk's buffer (cursor.own) */
	struct tid_entry *tids; /* by tid */
	size_t cap_threads;
	ZSTD_DCtx *dctx;
	/* the decode thread (see start_decoder) and its jobs */
	struct job *jobs;
	size_t njobs;
	int threaded, stop;
	size_t ahead;         /* jobs decompressed or being decompressed that the merge has not taken */
	uint64_t ahead_bytes; /* their payloads' bytes */
	struct zbuf zpool[POOL]; /* payload buffers of blocks decoded, for the next ones */
	size_t nzpool;
	int decoder_done;        /* the decode thread has no block left to take */
	pthread_t thread;
	cpu_set_t cpus; /* the CPUs this process may run on: the decode thread's, once it runs */
	int cpus_known; /* cpus was read */
	pthread_mutex_t lock;
	pthread_cond_t want;  /* the decode thread waits for the merge to take a block */
	pthread_cond_t ready; /* the merge waits for the block the decode thread is on */
	ZSTD_DCtx *help_dctx; /* the merge's, for the blocks it decompresses ahead (rd_begin_taken) */
	/* the pipeline (see rd_start_decoder): on, and which side sleeps on its condition (merge:
	 * avail, for a chunk; decode thread: want, for room) */
	int piped, merge_sleeping, dec_sleeping;
	int asking; /* the decode thread first answers round_trip (prefetch.c) */
	int merge_waited; /* the merge found a queue empty since the decode thread last looked */
	unsigned pipe_slots; /* chunks a thread may have queued: PIPE_CHUNKS over the threads */
	pthread_cond_t avail;
	size_t help_next; /* the first job that may still be open to decompress ahead */
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
	uint8_t *frames; /* every stack's encoded frames (stack_def) */
	size_t nframes, cap_frames; /* bytes */
	size_t *heap; /* indexes into cur, ordered by cur[i].ev.seq */
	uint64_t *next_seq; /* per cursor: the seq of its next event, UINT64_MAX when it has none */
	size_t nheap;
	int started;
	int handed;       /* the last call handed out cur[handed_ci]'s next event, not yet passed */
	size_t handed_ci;
	uint64_t run_bound; /* linear merge: the smallest next seq of the cursors other than handed_ci's */
	uint64_t dropped_to; /* the pages of the mapping below this offset were given back */
	uint64_t begun_bytes;   /* the bytes of the blocks the merge has begun */
	uint64_t drop_check_at; /* drop_consumed looks again once begun_bytes is this far */
	uint64_t last_seq;
	struct clock_pair *clocks;
	size_t nclocks;
	double ns_per_tick;
	uint64_t tick0;
};

/* open.c */
void rd_set_err(char *err, size_t errlen, const char *path, uint64_t off, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
size_t rd_thread_index(struct tprof_trace *t, uint32_t tid);
void rd_drop_pages(const uint8_t *map, const uint8_t *from, const uint8_t *to);

/* blocks.c: each returns 0, or -1 with why set */
int rd_parse_leaks(struct tprof_trace *t, struct tprof_cursor *c, const char **why);
int rd_parse_info(struct tprof_trace *t, struct tprof_cursor *c, unsigned version, const char **why);
int rd_parse_end(struct tprof_trace *t, struct tprof_cursor *c, unsigned version, const char **why,
		 char *buf, size_t len);
uint32_t rd_id_find(const struct tprof_reader_priv *p, uint32_t fid);
int rd_parse_stacks(struct tprof_trace *t, struct tprof_cursor *c, const char **why);
int rd_parse_module(struct tprof_trace *t, struct tprof_cursor *c);
int rd_parse_names(struct tprof_trace *t, struct tprof_cursor *c, const char **why);
int rd_parse_kernels(struct tprof_trace *t, struct tprof_cursor *c, const char **why);
int rd_parse_rss(struct tprof_trace *t, struct tprof_cursor *c, const char **why);
int rd_annot_by_seq(const void *a, const void *b);
/* Points each stack at the first one with the same frames and truncation (stack_def.canon), so that
 * the analyses group by call stack however often the recorder defined it. */
void rd_merge_duplicate_stacks(struct tprof_trace *t);
/* The end of the n varints from p on when each is in its shortest form and of 64 bits at most,
 * else NULL (blocks.c). */
const uint8_t *rd_shortest_varints(const uint8_t *p, const uint8_t *end, uint64_t n);

/* decode.c */
/* The message of a block's error ("FILE: byte N: corrupt: ..."), into buf. */
void rd_dec_err_text(const struct tprof_trace *t, const struct dec_err *e, char *buf, size_t len);
int rd_inflate(const struct tprof_reader_priv *p, ZSTD_DCtx **dctx, uint8_t **buf, size_t *cap,
	       const struct block_ref *b);
int rd_begin_block(const struct tprof_trace *t, ZSTD_DCtx **dctx, struct blockdec *c, const struct block_ref *b,
		   struct decoded *out);
void rd_decode_chunk(const struct tprof_trace *t, struct blockdec *c, struct decoded *out, uint64_t limit);

/* prefetch.c */
void rd_drop_consumed(struct tprof_reader_priv *p, const struct block_ref *b);
/* CLOCK_MONOTONIC in ns (progress reports, the decode thread's round trips). */
static inline uint64_t rd_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void rd_start_decoder(struct tprof_trace *t);
void rd_zbuf_done(struct tprof_reader_priv *p, struct blockdec *c);
void rd_zbuf_take(struct tprof_reader_priv *p, struct blockdec *c);
void rd_stop_decoder(struct tprof_reader_priv *p);
struct decoded *rd_pipe_next(struct tprof_trace *t, struct cursor *c);
int rd_begin_taken(struct tprof_trace *t, struct blockdec *d, const struct block_ref *b, const struct block_ref *next,
		   ZSTD_DCtx **dctx, struct decoded *out);
void rd_pipe_release(struct tprof_reader_priv *p, struct cursor *c);

/* merge.c */
int rd_progress_wanted(size_t size);
void rd_progress_end(struct tprof_reader_priv *p);

#endif
