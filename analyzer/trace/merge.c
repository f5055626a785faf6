/* The trace reader's pass two: each thread's decoded events, merged into their global order by
 * sequence number (a heap of cursors, or a linear run while one thread leads), and the progress
 * line on a terminal while a large trace is read. */
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

/* ---- progress: reported to the command's hook (reader.h), at most 5 times a second ---- */

const struct tprof_progress *tprof_progress_hook;

int rd_progress_wanted(size_t size)
{
	return tprof_progress_hook && tprof_progress_hook->want(size);
}

/* The reading has come to byte at: the hook hears of it at most 5 times a second. */
static void progress_step(struct tprof_trace *t, uint64_t at)
{
	struct tprof_reader_priv *p = t->priv;
	uint64_t now = rd_mono_ns();
	if (!p->progress_t0)
		p->progress_t0 = now;
	if (p->progress_shown && now - p->progress_shown < 200000000u)
		return;
	p->progress_shown = now;
	tprof_progress_hook->show(t->path, at, p->size, (double)(now - p->progress_t0) / 1e9);
}

/* The end of the reading (or of the trace), so that what follows starts clean. */
void rd_progress_end(struct tprof_reader_priv *p)
{
	if (p->progress && p->progress_shown)
		tprof_progress_hook->end();
	p->progress = 0;
}

/* Moves the cursor to its next decoded events: 1 when c->next..c->end holds some, 0 at the end of
 * the thread's events, -1 on a corrupt block (t->err; every event before the fault was delivered). */
static int cursor_fill(struct tprof_trace *t, struct cursor *c)
{
	struct tprof_reader_priv *p = t->priv;
	struct decoded *s = &c->own;
	if (p->piped) { /* the decode thread decoded them (prefetch.c) */
		if (c->inl) { /* a block it left to the merge, decoded here chunk by chunk */
			if (s->status != 1)
				goto corrupt;
			c->holding = 0;
			if (c->md.blk) {
				rd_decode_chunk(t, &c->md, s, CHUNK);
				goto hold;
			}
			c->inl = 0;
			__atomic_store_n(&c->deleg_off, UINT64_MAX, __ATOMIC_SEQ_CST);
			rd_pipe_release(p, c);
		} else if (c->holding) {
			s = &c->q[c->qhead % PIPE_SLOTS];
			if (s->status != 1)
				goto corrupt;
			c->holding = 0;
			rd_pipe_release(p, c);
		}
		if (!(s = rd_pipe_next(t, c)))
			return 0;
		if (s->at)
			c->ev_off = s->at;
		if (p->progress && s->at)
			progress_step(t, s->at);
		if (s->deleg) {
			const struct block_ref *b = s->deleg;
			size_t k = (size_t)(b - c->blocks) + 1;
			c->ev_off = b->off;
			s = &c->own;
			c->inl = 1;
			s->status = 1;
			if (rd_begin_taken(t, &c->md, b, k < c->nblocks ? &c->blocks[k] : NULL, &p->help_dctx, s) < 0) {
				s->n = 0;
				s->status = -1;
			} else {
				rd_decode_chunk(t, &c->md, s, CHUNK);
			}
		}
		goto hold;
	}
	if (c->holding) {
		if (s->status != 1) /* a corrupt block's events were all handed out: now its error */
			goto corrupt;
		c->holding = 0;
	}
	if (!c->d.blk) { /* between blocks */
		if (c->next_block == c->nblocks) { /* the thread's events are all read: its buffers go */
			if (c->own.ev)
				p->nown--;
			free(c->own.ev);
			c->own.ev = NULL;
			c->own.cap = 0;
			return 0;
		}
		const struct block_ref *b = &c->blocks[c->next_block++];
		c->ev_off = b->off;
		if (rd_begin_taken(t, &c->d, b, c->next_block < c->nblocks ? &c->blocks[c->next_block] : NULL, &p->dctx,
				   &c->own) < 0) {
			c->own.n = 0;
			c->own.status = -1;
		}
		rd_drop_consumed(p, b);
		if (p->progress)
			progress_step(t, b->off);
	}
	if (c->d.blk) { /* a block of its own, being decoded */
		/* a chunk of CHUNK events while few threads hold one, fewer when many do (each holds
		 * its chunk's buffer while the merge takes the others' events): the chunks of a
		 * thousand threads alive at once would otherwise be 110 MiB */
		if (!c->own.ev)
			p->nown++;
		uint64_t limit = CHUNKS_HELD / p->nown;
		rd_decode_chunk(t, &c->d, &c->own, limit > CHUNK ? CHUNK : limit < CHUNK_MIN ? CHUNK_MIN : limit);
	}
hold:
	c->holding = 1;
	c->next = s->ev;
	c->end = s->ev ? s->ev + s->n : s->ev; /* no events yet: no buffer either */
	if (c->next < c->end)
		return 1;
corrupt:
	rd_dec_err_text(t, &s->err, t->err, sizeof(t->err));
	rd_progress_end(p); /* the message that follows starts on a line of its own */
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
		rd_start_decoder(t);
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
			rd_progress_end(p);
			return 0;
		}
		p->run_bound = second;
	} else {
		if (p->nheap == 0) {
			rd_progress_end(p);
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
		rd_set_err(t->err, sizeof(t->err), t->path, c->ev_off,
			   "corrupt: event sequence number %llu of thread %u repeats or goes back (last %llu), in an "
			   "EVENTS block",
			   (unsigned long long)ev->seq, ev->tid, (unsigned long long)p->last_seq);
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
