/* The trace reader's decoding of one EVENTS or ZEVENTS block into events, chunk by chunk: ticks
 * interpolated between measured records, frees paired with their allocations through the codec's
 * pointer history. */
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

/* Decompresses block b's payload into *buf (grown to fit, its capacity in *cap), with *dctx (made
 * on first use): 1 when it decompressed to its length, else 0. The merge and the decode thread
 * (prefetch.c) both decompress so. */
int rd_inflate(const struct tprof_reader_priv *p, ZSTD_DCtx **dctx, uint8_t **buf, size_t *cap,
	       const struct block_ref *b)
{
	if (!*dctx)
		*dctx = ZSTD_createDCtx();
	if (*cap < b->raw_len) {
		free(*buf);
		*cap = b->raw_len;
		*buf = xmalloc(*cap);
	}
	size_t got = *dctx ? ZSTD_decompressDCtx(*dctx, *buf, b->raw_len, p->map + b->off, b->len) : (size_t)-1;
	return !ZSTD_isError(got) && got == b->raw_len;
}

/* Starts decoding block b with c: decompresses it when needed and sets up its streams and state.
 * 0, or -1 with the message in out->err. */
int rd_begin_block(const struct tprof_trace *t, ZSTD_DCtx **dctx, struct blockdec *c, const struct block_ref *b,
		       struct decoded *out)
{
	const struct tprof_reader_priv *p = t->priv;
	const uint8_t *data = p->map + b->off;
	size_t len = b->len;
	if (b->raw_len && c->zready) { /* decompressed ahead (prefetch.c) */
		c->zready = 0;
		data = c->zbuf;
		len = b->raw_len;
	} else if (b->raw_len) {
		rd_zbuf_take(t->priv, c);
		if (!rd_inflate(p, dctx, &c->zbuf, &c->zcap, b)) {
			out->err = (struct dec_err){DEC_ERR_DECOMPRESS, NULL, b->off, b->raw_len, c->tid};
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
	if (!c->st) {
		/* the codec's state and, after it, the event number + 1 of each allocation in its
		 * history (pairing, below) */
		c->st = xmalloc(sizeof(*c->st) + TPROF_PTR_HIST * sizeof(uint64_t));
		c->alloc_at = (uint64_t *)(c->st + 1);
	}
	/* only entries this block pushes are read (a free's distance is at most its pushes); zeroed
	 * all the same, so that no stale number can pair */
	memset(c->alloc_at, 0, TPROF_PTR_HIST * sizeof(uint64_t));
	tprof_rec_state_init(c->st, seq0, tick0);
	c->a_seq = seq0;
	c->a_tick = tick0;
	c->ri = 0;
	c->blk = b;
	return 0;
bad:
	out->err = (struct dec_err){DEC_ERR_RECORD, what, b->off, 0, c->tid};
	return -1;
}

/* Gives the unmeasured events [from, to) their ticks on the line between the measured records
 * (a_seq, a_tick) before them and (b_seq, b_tick) after them. */
static void fill_ticks(struct tprof_event *ev, size_t from, size_t to, uint64_t a_seq, uint64_t a_tick,
		       uint64_t b_seq, uint64_t b_tick)
{
	if (b_seq > a_seq && b_tick > a_tick && b_tick - a_tick < (1ull << 31) && b_seq - a_seq < (1ull << 31)) {
		/* the usual run: one division, then fixed point (the result may differ from the exact
		 * line by one tick). The events' numbers lie strictly between a_seq and b_seq (they
		 * increase within a block, checked as decoded), so (seq - a_seq) * slope stays below
		 * (b_tick - a_tick) << 32: no clamp, no overflow. */
		uint64_t slope = ((b_tick - a_tick) << 32) / (b_seq - a_seq);
		for (size_t i = from; i < to; i++)
			ev[i].tick = a_tick + (((ev[i].seq - a_seq) * slope) >> 32);
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
void rd_decode_chunk(const struct tprof_trace *t, struct blockdec *c, struct decoded *out, uint64_t limit)
{
	struct tprof_reader_priv *p = t->priv;
	const struct block_ref *b = c->blk;
	const char *what = NULL;
	size_t n = 0, run = SIZE_MAX; /* run: first event of the open unmeasured run */
	uint64_t base = c->evno;
	uint32_t last_fid = 0, last_stack = 0; /* the last stack id looked up, and ours */
	/* In locals: the stores into the events (byte stores among them, which may alias anything)
	 * would otherwise make the compiler load each of these again for every record, and store the
	 * counters back. The counters go back into c when the loop ends and on every error; ev and
	 * cap into out when the buffer grows. */
	struct tprof_rec_state *st = c->st;
	uint64_t *alloc_at = c->alloc_at;
	uint64_t ri = c->ri, count = c->count, a_seq = c->a_seq, a_tick = c->a_tick;
	struct tprof_event *ev = out->ev;
	size_t cap = out->cap;
	while (ri < count && (n < limit || run != SIZE_MAX)) {
		if (n + 2 > cap) {
			/* first: what this chunk can hold, so that the many threads of a few events each
			 * hold a few events each, and room besides for the pair's two halves and the run
			 * of unmeasured records a chunk goes on to the end of (a storm measures one in 16):
			 * a buffer doubled for those few events would be its double's size again in fresh
			 * pages, each a page fault, and a copy */
			cap = cap ? 2 * cap : (limit < count - ri ? limit + limit / 16 + 64 : count - ri + 2);
			ev = out->ev = xrealloc(ev, cap * sizeof(*ev));
			out->cap = cap;
		}
		struct tprof_rec r;
		if (tprof_rec_decode(c->s, st, &r)) {
			what = "malformed event record";
			goto bad;
		}
		uint32_t pushes = st->nalloc; /* before the stores below */
		ri++;
		uint32_t stack = 0;
		if (r.stack == last_fid) { /* most allocations repeat the last record's stack */
			stack = last_stack;
		} else if (r.stack) {
			uint32_t our = rd_id_find(p, r.stack);
			if (!our) {
				out->n = run == SIZE_MAX ? n : run;
				out->err = (struct dec_err){DEC_ERR_STACK, NULL, b->off, r.stack, c->tid};
				goto fail;
			}
			stack = p->stacks[our].canon;
			last_fid = r.stack;
			last_stack = stack;
		}
		struct tprof_event *e = &ev[n++];
		*e = (struct tprof_event){.seq = r.seq, .tick = r.tick, .size = r.size, .ptr = r.ptr,
					  .tid = c->tid, .stack = stack, .kind = (uint8_t)r.kind};
		if (r.no_tick) {
			if (run == SIZE_MAX)
				run = n - 1;
		} else {
			if (run != SIZE_MAX) {
				fill_ticks(ev, run, n - 1, a_seq, a_tick, r.seq, r.tick);
				run = SIZE_MAX;
			}
			a_seq = r.seq;
			a_tick = r.tick;
			if (tprof_kind_is_realloc(r.kind)) {
				e->old_ptr = r.old_ptr;
				e[1] = e[0];
				e[1].phase = 1;
				e[1].seq = a_seq = r.seq2;
				e[1].tick = a_tick = r.tick2;
				n++;
			}
		}
		/* Pairing: a free that names its block by distance in the allocation history frees
		 * the block of the allocation record that pushed it there (the codec's history holds an
		 * address's latest allocation), paired when that event is in this chunk (number >
		 * base) and no free named it before. A hint, see reader.h. */
		if (r.hist_dist) {
			uint64_t *a = &alloc_at[(pushes - r.hist_dist) % TPROF_PTR_HIST];
			if (*a > base)
				ev[*a - 1 - base].paired = ev[n - 1].paired = 1;
			*a = 0;
		} else if (r.kind != TPROF_EV_FREE && r.ptr) {
			alloc_at[(pushes - 1) % TPROF_PTR_HIST] = base + n;
		}
	}
	c->ri = ri;
	c->a_seq = a_seq;
	c->a_tick = a_tick;
	if (ri == count) {
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
		c->alloc_at = NULL;
		rd_zbuf_done(p, c);
	}
	c->evno += n;
	out->n = n;
	out->status = 1;
	return;
bad:
	out->n = run == SIZE_MAX ? n : run;
	out->err = (struct dec_err){DEC_ERR_RECORD, what, b->off, ri, c->tid};
fail:
	c->ri = ri;
	c->a_seq = a_seq;
	c->a_tick = a_tick;
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

void rd_dec_err_text(const struct tprof_trace *t, const struct dec_err *e, char *buf, size_t len)
{
	switch (e->kind) {
	case DEC_ERR_DECOMPRESS:
		rd_set_err(buf, len, t->path, e->off,
			   "corrupt: compressed EVENTS block of thread %u does not decompress to its %llu bytes", e->tid,
			   (unsigned long long)e->value);
		return;
	case DEC_ERR_STACK:
		rd_set_err(buf, len, t->path, e->off,
			   "corrupt: an event of thread %u refers to stack %llu, which is not defined", e->tid,
			   (unsigned long long)e->value);
		return;
	case DEC_ERR_RECORD:
		break;
	}
	rd_set_err(buf, len, t->path, e->off, "corrupt: %s (record %llu) in an EVENTS block of thread %u", e->what,
		   (unsigned long long)e->value, e->tid);
}
