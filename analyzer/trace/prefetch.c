/* The trace reader's decode thread: with a few threads in the trace, a pipeline that decodes their
 * records chunk by chunk ahead of the merge; with many, it only decompresses ZEVENTS blocks a few
 * ahead of the merge, which decodes their records itself (and decompresses some too rather than
 * wait). And the pages of the mapping that every thread has read past are given back. */
#include "trace/reader_int.h"


#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
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

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

void rd_drop_consumed(struct tprof_reader_priv *p, const struct block_ref *b)
{
	/* a look over every cursor once per 4 MiB of blocks begun (wherever they are: a thread whose
	 * next block is the file's last begins it long before the others get there); a trace of many
	 * threads must not cost threads x blocks. What is left goes when the trace is closed. */
	p->begun_bytes += b->len;
	if (p->begun_bytes < p->drop_check_at)
		return;
	p->drop_check_at = p->begun_bytes + (4u << 20);
	uint64_t low = p->size;
	for (size_t i = 0; i < p->ncur; i++) {
		const struct cursor *c = &p->cur[i];
		uint64_t dl = __atomic_load_n(&c->deleg_off, __ATOMIC_SEQ_CST); /* the pipeline's */
		low = dl < low ? dl : low;
		if (c->d.blk && !c->d.blk->raw_len) /* an uncompressed block is decoded in place */
			low = c->d.blk->off < low ? c->d.blk->off : low;
		else if (c->next_block < c->nblocks && c->blocks[c->next_block].off < low)
			low = c->blocks[c->next_block].off;
	}
	if (low >= p->dropped_to + (4u << 20) || (low == p->size && low > p->dropped_to)) {
		rd_drop_pages(p->map, p->map + p->dropped_to, p->map + low);
		p->dropped_to = low;
	}
}

/* Keeps a payload buffer for the next block to decompress, or frees it when the pool is full or
 * the decode thread has no block left. Under lock. */
static void zpool_put(struct tprof_reader_priv *p, uint8_t *buf, size_t cap)
{
	if (p->nzpool < POOL && buf && !p->decoder_done)
		p->zpool[p->nzpool++] = (struct zbuf){buf, cap};
	else
		free(buf);
}

/* Frees the pool's buffers. Under lock (or with the decode thread gone). */
static void zpool_clear(struct tprof_reader_priv *p)
{
	for (size_t k = 0; k < p->nzpool; k++)
		free(p->zpool[k].buf);
	p->nzpool = 0;
}

/* A cursor has decoded its block: the payload buffer goes back to the pool while the decode thread
 * has blocks left (fresh memory costs page faults), else it is freed (a trace of many threads holds
 * no decompressed payload between its blocks). */
void rd_zbuf_done(struct tprof_reader_priv *p, struct blockdec *c)
{
	if (c->zbuf && p->threaded) {
		pthread_mutex_lock(&p->lock);
		zpool_put(p, c->zbuf, c->zcap);
		pthread_mutex_unlock(&p->lock);
	} else {
		free(c->zbuf);
	}
	c->zbuf = NULL;
	c->zcap = 0;
}

/* A payload buffer for the merge to decompress a block into itself: the cursor's, else one from the
 * pool while the decode thread runs, else none (the caller allocates it). */
void rd_zbuf_take(struct tprof_reader_priv *p, struct blockdec *c)
{
	if (c->zbuf || !p->threaded)
		return;
	pthread_mutex_lock(&p->lock);
	if (p->nzpool) {
		p->nzpool--;
		c->zbuf = p->zpool[p->nzpool].buf;
		c->zcap = p->zpool[p->nzpool].cap;
	}
	pthread_mutex_unlock(&p->lock);
}

/* Whether job z is one the decode thread (or the merge, helping) may take: free, compressed (a plain
 * EVENTS block is decoded in place), not the next block of its thread (which the merge decompresses
 * itself when it comes to it), not too large. */
static int job_open(const struct job *z)
{
	return z->state == JOB_FREE && !z->next && z->b->raw_len && z->b->raw_len <= DECODE_MAX_RAW &&
	       z->b->len <= DECODE_MAX_RAW;
}

/* Decompresses job z's payload, as the decode thread does: called and returns with the lock held,
 * which it drops while it decompresses. A payload that does not decompress is left to the merge,
 * which then says why. */
static void decompress_job(struct tprof_trace *t, struct job *z, ZSTD_DCtx **dctx)
{
	struct tprof_reader_priv *p = t->priv;
	const struct block_ref *b = z->b;
	z->state = JOB_BUSY;
	p->ahead++;
	struct zbuf zb = {0};
	if (p->nzpool)
		zb = p->zpool[--p->nzpool];
	pthread_mutex_unlock(&p->lock);
	int ok = rd_inflate(p, dctx, &zb.buf, &zb.cap, b);
	pthread_mutex_lock(&p->lock);
	if (z->state == JOB_TAKEN) { /* the merge stopped waiting and decompressed it itself */
		zpool_put(p, zb.buf, zb.cap);
		return;
	}
	z->zbuf = zb.buf;
	z->zcap = zb.cap;
	z->zok = ok;
	__atomic_store_n(&z->state, JOB_READY, __ATOMIC_RELEASE); /* take_job spins on it */
	p->ahead_bytes += b->raw_len;
	pthread_cond_broadcast(&p->ready);
}

/* The CPUs of attr, for a thread about to be made: those in cpus but the caller's, when there is
 * another. */
static void start_elsewhere(pthread_attr_t *attr, const cpu_set_t *cpus)
{
	int me = sched_getcpu();
	cpu_set_t other = *cpus;
	if (me < 0 || me >= CPU_SETSIZE || !CPU_ISSET(me, &other) || CPU_COUNT(&other) < 2)
		return;
	CPU_CLR(me, &other);
	pthread_attr_setaffinity_np(attr, sizeof(other), &other); /* else where the kernel puts it */
}

/* The decode thread, running (on another CPU than the merge's): every CPU of the process again,
 * so that it goes where there is room if that one gets busy. */
static void reset_cpus(const struct tprof_reader_priv *p)
{
	if (p->cpus_known)
		pthread_setaffinity_np(pthread_self(), sizeof(p->cpus), &p->cpus);
}

/* The decode thread: decompresses blocks in file order, at most DECODE_AHEAD blocks and
 * DECODE_AHEAD_BYTES of payload ahead of the merge. It leaves each thread's next block to the merge,
 * which is about to need it: the merge decompresses that one itself when it comes to it first. Only
 * the payload crosses to the merge's CPU, a few bytes an event, where the events decoded from it
 * (56 bytes each) would cost more to move between the two CPUs' caches than to decode again: the
 * merge decodes every record itself, chunk by chunk, and the events stay in its cache until it
 * has analyzed them. */
static void *decoder_main(void *arg)
{
	struct tprof_trace *t = arg;
	struct tprof_reader_priv *p = t->priv;
	reset_cpus(p);
	ZSTD_DCtx *dctx = NULL;
	pthread_mutex_lock(&p->lock);
	for (size_t j = 0; !p->stop;) {
		/* a job passed over is never the decode thread's again: it was taken, or is next
		 * (which only taking ends), or plain, or too large */
		while (j < p->njobs && !job_open(&p->jobs[j]))
			j++;
		if (j >= p->njobs)
			break;
		if (p->ahead >= DECODE_AHEAD || p->ahead_bytes >= DECODE_AHEAD_BYTES) {
			pthread_cond_wait(&p->want, &p->lock);
			continue;
		}
		decompress_job(t, &p->jobs[j], &dctx);
	}
	/* no block left for it: the buffers kept for it go, and those in use are freed when done */
	p->decoder_done = 1;
	zpool_clear(p);
	pthread_mutex_unlock(&p->lock);
	ZSTD_freeDCtx(dctx);
	return NULL;
}


/* How long the merge waits for the decode thread to finish the block it needs, before it
 * decompresses the block itself: a little more than a block takes, so that a decode thread held
 * off its CPU (another program on a shared machine) costs the merge no more than this. */
#define DECODE_WAIT_NS 1000000

/* The merge comes to block b, whose thread's next block is then next (NULL: none): returns b's
 * job with its payload when the decode thread decompressed it (the merge decompressing blocks after
 * it meanwhile when the decode thread is on it, then waiting a moment for it to finish), or NULL
 * when the merge is to decompress it itself. */
static struct job *take_job(struct tprof_trace *t, const struct block_ref *b, const struct block_ref *next,
			    ZSTD_DCtx **dctx)
{
	struct tprof_reader_priv *p = t->priv;
	if (!p->threaded)
		return NULL;
	struct job *z = &p->jobs[b->job];
	pthread_mutex_lock(&p->lock);
	z->next = 0;
	if (next)
		p->jobs[next->job].next = 1;
	/* The decode thread is on it: rather than wait, the merge decompresses the next block the
	 * decode thread would take after it, as the decode thread would; once there is none to take,
	 * it waits. */
	while (z->state == JOB_BUSY && p->ahead < DECODE_AHEAD && p->ahead_bytes < DECODE_AHEAD_BYTES) {
		size_t j = b->job + 1;
		while (j < p->njobs && j < b->job + 2 * DECODE_AHEAD && !job_open(&p->jobs[j]))
			j++;
		if (j >= p->njobs || j >= b->job + 2 * DECODE_AHEAD)
			break;
		decompress_job(t, &p->jobs[j], dctx);
	}
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
			p->ahead_bytes -= b->raw_len;
		/* the decode thread, waiting once it is far enough ahead, is woken when half of that
		 * is taken: a wake-up costs tens of microseconds on a virtual machine, as much as
		 * decompressing a block, and then buys several */
		if (p->ahead <= DECODE_AHEAD / 2)
			pthread_cond_signal(&p->want);
	}
	z->state = JOB_TAKEN;
	pthread_mutex_unlock(&p->lock);
	return ready ? z : NULL;
}

/* The merge has taken job z's payload (and left it the buffer it had): that buffer goes back to
 * the pool. */
static void release_job(struct tprof_reader_priv *p, struct job *z)
{
	pthread_mutex_lock(&p->lock);
	zpool_put(p, z->zbuf, z->zcap);
	z->zbuf = NULL;
	z->zcap = 0;
	pthread_mutex_unlock(&p->lock);
}

/* Begins decoding block b (whose thread's next block is next, or NULL) with d: takes its payload
 * when it was decompressed ahead, else decompresses it (with *dctx), and sets up its streams. 0,
 * or -1 with the message in out->err. */
int rd_begin_taken(struct tprof_trace *t, struct blockdec *d, const struct block_ref *b, const struct block_ref *next,
		   ZSTD_DCtx **dctx, struct decoded *out)
{
	struct tprof_reader_priv *p = t->priv;
	struct job *z = take_job(t, b, next, dctx);
	if (z) { /* its payload, decompressed ahead (else decompressed below) */
		if (z->zok) {
			uint8_t *buf = d->zbuf;
			size_t cap = d->zcap;
			d->zbuf = z->zbuf;
			d->zcap = z->zcap;
			d->zready = 1;
			z->zbuf = buf;
			z->zcap = cap;
		}
		release_job(p, z);
	}
	return rd_begin_block(t, dctx, d, b, out);
}

/* ---- the pipeline: the decode thread decodes the records too ----
 *
 * With a few threads in the trace the decode thread decodes every record, a chunk at a time, up to
 * PIPE_SLOTS chunks ahead of the merge in each thread, and the merge only merges and hands the
 * events out: the decoding is the larger half of the reading, and the analysis runs meanwhile on the
 * merge's CPU. The decode thread decodes the thread whose decoded events end first, the one the
 * merge will run out of first. Either side that would wait decompresses a block ahead instead
 * (help_ahead), so the two CPUs share that work as each has time. Each side spins a little before
 * it sleeps: a wake-up costs tens of microseconds on a virtual machine, a chunk about as much. */

/* Decompresses the first open job, as the decode thread did before the pipeline, when the blocks
 * decompressed ahead are few enough: 1 when it did. */
static int help_ahead(struct tprof_trace *t, ZSTD_DCtx **dctx)
{
	struct tprof_reader_priv *p = t->priv;
	int did = 0;
	pthread_mutex_lock(&p->lock);
	while (p->help_next < p->njobs && !job_open(&p->jobs[p->help_next]))
		p->help_next++; /* passed over: never open again (see decoder_main) */
	if (p->help_next < p->njobs && p->ahead < DECODE_AHEAD && p->ahead_bytes < DECODE_AHEAD_BYTES) {
		decompress_job(t, &p->jobs[p->help_next], dctx);
		did = 1;
	}
	pthread_mutex_unlock(&p->lock);
	return did;
}

/* How long a side spins before it sleeps: a few chunks' time (a pause is tens of cycles) */
#define PIPE_SPIN 4000

static unsigned q_len(struct cursor *c)
{
	return __atomic_load_n(&c->qtail, __ATOMIC_SEQ_CST) - __atomic_load_n(&c->qhead, __ATOMIC_SEQ_CST);
}

/* The cursor the decode thread is to decode next: of those with room, the one whose decoded events
 * end first. -1 when none has room; *left: some are not done. */
static ssize_t pipe_pick(struct tprof_reader_priv *p, int *left)
{
	ssize_t best = -1;
	*left = 0;
	for (size_t i = 0; i < p->ncur; i++) {
		struct cursor *c = &p->cur[i];
		if (c->dec_done)
			continue;
		*left = 1;
		if (q_len(c) < p->pipe_slots && (best < 0 || c->dec_seq < p->cur[best].dec_seq))
			best = (ssize_t)i;
	}
	return best;
}

/* The decode thread decodes cursor c's next chunk (beginning its next block when it is between
 * two) into its queue. */
static void pipe_decode(struct tprof_trace *t, struct cursor *c)
{
	struct tprof_reader_priv *p = t->priv;
	struct decoded *s = &c->q[c->qtail % PIPE_SLOTS];
	s->n = 0;
	s->status = 1;
	s->at = 0;
	if (!c->d.blk) {
		const struct block_ref *b = &c->blocks[c->next_block++];
		s->at = b->off;
		/* the merge waited for this thread's events since the last block begun: it decodes
		 * this block itself (one at a time), while this thread goes on with the next */
		if (__atomic_load_n(&c->deleg_off, __ATOMIC_SEQ_CST) == UINT64_MAX &&
		    __atomic_exchange_n(&p->merge_waited, 0, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&c->deleg_off, b->off, __ATOMIC_SEQ_CST);
			s->deleg = b;
			goto publish;
		}
		s->deleg = NULL;
		if (rd_begin_taken(t, &c->d, b, c->next_block < c->nblocks ? &c->blocks[c->next_block] : NULL, &p->dctx,
				   s) < 0)
			s->status = -1;
		rd_drop_consumed(p, b);
	} else {
		s->deleg = NULL;
	}
	if (s->status == 1)
		rd_decode_chunk(t, &c->d, s, CHUNK);
	if (s->n)
		c->dec_seq = s->ev[s->n - 1].seq;
publish:
	__atomic_store_n(&c->qtail, c->qtail + 1, __ATOMIC_SEQ_CST);
	if (s->status != 1 || (!c->d.blk && c->next_block == c->nblocks)) /* after: see rd_pipe_next */
		__atomic_store_n(&c->dec_done, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&p->merge_sleeping, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_signal(&p->avail);
		pthread_mutex_unlock(&p->lock);
	}
}

static void *pipe_main(void *arg)
{
	struct tprof_trace *t = arg;
	struct tprof_reader_priv *p = t->priv;
	reset_cpus(p);
	int left = 1;
	while (left && !__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST)) {
		ssize_t ci = pipe_pick(p, &left);
		if (ci >= 0) {
			pipe_decode(t, &p->cur[ci]);
			continue;
		}
		if (!left || help_ahead(t, &p->dctx))
			continue;
		for (int k = 0; k < PIPE_SPIN && ci < 0 && !__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST); k++) {
			cpu_relax();
			if (k % 64 == 63)
				ci = pipe_pick(p, &left);
		}
		if (ci >= 0)
			continue;
		pthread_mutex_lock(&p->lock);
		__atomic_store_n(&p->dec_sleeping, 1, __ATOMIC_SEQ_CST);
		if (pipe_pick(p, &left) < 0 && left && !p->stop)
			pthread_cond_wait(&p->want, &p->lock);
		__atomic_store_n(&p->dec_sleeping, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&p->lock);
	}
	pthread_mutex_lock(&p->lock);
	p->decoder_done = 1;
	zpool_clear(p);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* The merge's next chunk of cursor c, waiting for the decode thread as needed (decompressing
 * blocks ahead meanwhile); NULL when the thread has no more events, and then its chunks' buffers
 * go. */
struct decoded *rd_pipe_next(struct tprof_trace *t, struct cursor *c)
{
	struct tprof_reader_priv *p = t->priv;
	for (;;) {
		/* done before the length: the decode thread queues the last chunk, then says done */
		int done = __atomic_load_n(&c->dec_done, __ATOMIC_SEQ_CST);
		if (q_len(c))
			return &c->q[c->qhead % PIPE_SLOTS];
		if (done)
			break;
		__atomic_store_n(&p->merge_waited, 1, __ATOMIC_SEQ_CST);
		if (help_ahead(t, &p->help_dctx))
			continue;
		int k = 0;
		for (; k < PIPE_SPIN && !q_len(c) && !__atomic_load_n(&c->dec_done, __ATOMIC_SEQ_CST); k++)
			cpu_relax();
		if (k < PIPE_SPIN)
			continue;
		pthread_mutex_lock(&p->lock);
		__atomic_store_n(&p->merge_sleeping, 1, __ATOMIC_SEQ_CST);
		if (!q_len(c) && !__atomic_load_n(&c->dec_done, __ATOMIC_SEQ_CST))
			pthread_cond_wait(&p->avail, &p->lock);
		__atomic_store_n(&p->merge_sleeping, 0, __ATOMIC_SEQ_CST);
		pthread_mutex_unlock(&p->lock);
	}
	for (int k = 0; k < PIPE_SLOTS; k++) {
		free(c->q[k].ev);
		c->q[k].ev = NULL;
		c->q[k].cap = 0;
	}
	free(c->own.ev);
	c->own.ev = NULL;
	c->own.cap = 0;
	return NULL;
}

/* The merge is done with the chunk at the head of c's queue: the decode thread may reuse it. */
void rd_pipe_release(struct tprof_reader_priv *p, struct cursor *c)
{
	__atomic_store_n(&c->qhead, c->qhead + 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&p->dec_sleeping, __ATOMIC_SEQ_CST)) {
		pthread_mutex_lock(&p->lock);
		pthread_cond_signal(&p->want);
		pthread_mutex_unlock(&p->lock);
	}
}

/* ---- how far apart the two CPUs are ----
 *
 * The pipeline moves every decoded event (56 bytes, a cache line) from the decode thread's CPU to
 * the merge's. Between CPUs that share a cache that is cheap; between CPUs far apart (another chip
 * or socket, as a virtual machine's two CPUs may be) each line costs a round trip between them, and
 * the pipeline loses: on the 2 M-pair storm of two threads, with a round trip of 380 to 500 ns
 * here, summary took 95 to 107 ms piped, 71 to 74 decompressing only and 77 to 79 on one thread;
 * with CPUs near each other it took 38 to 41 ms piped, 72 on one thread. A line through those two
 * piped times puts the break-even near 250 ns (FAR_ROUND_TRIP_NS). So the first trace a process reads with the pipeline
 * in view measures it: the decode thread, just started on another CPU, passes a cache line back
 * to the merge's (the best of a few batches of round trips). A thread that does not answer within
 * 20 ms, or batches that take over a millisecond (a CPU busy with another program), count as far.
 * It costs some tens of microseconds, besides the wait for the thread to start, which it pays
 * anyway. */
#define FAR_ROUND_TRIP_NS 250
#define PING_BATCH 16
#define PING_BATCHES 4

static struct {
	_Alignas(64) uint32_t ball; /* odd: the decode thread's turn; even: the merge's */
	_Alignas(64) uint32_t quit; /* the merge has measured, and set the decode thread's part */
} ping;

/* The merge's side: the best round trip to the decode thread's CPU in ns (UINT64_MAX: no answer in
 * time); far above FAR_ROUND_TRIP_NS. */
static uint64_t round_trip(void)
{
	uint32_t ball = 0;
	uint64_t best = UINT64_MAX, deadline = rd_mono_ns() + 20000000; /* the first answer: it starts */
	for (int batch = 0; batch <= PING_BATCHES; batch++) {
		uint64_t t0 = rd_mono_ns();
		for (int k = 0; k < PING_BATCH; k++) {
			__atomic_store_n(&ping.ball, ++ball, __ATOMIC_RELEASE);
			ball++;
			for (unsigned spin = 0; __atomic_load_n(&ping.ball, __ATOMIC_ACQUIRE) != ball; spin++) {
				cpu_relax();
				if (spin % 256 == 255 && rd_mono_ns() > deadline)
					return UINT64_MAX;
			}
		}
		uint64_t now = rd_mono_ns();
		if (batch == 0)
			deadline = now + 1000000; /* the batches that count */
		else if ((now - t0) / PING_BATCH < best)
			best = (now - t0) / PING_BATCH;
	}
	return best;
}

/* The decode thread: answers the merge's round trips when it asks (until it has set the thread's
 * part), then decodes, piped or not. */
static void *decode_main(void *arg)
{
	struct tprof_trace *t = arg;
	struct tprof_reader_priv *p = t->priv;
	if (p->asking) {
		uint32_t want = 1;
		while (!__atomic_load_n(&ping.quit, __ATOMIC_ACQUIRE)) {
			if (__atomic_load_n(&ping.ball, __ATOMIC_ACQUIRE) == want) {
				__atomic_store_n(&ping.ball, want + 1, __ATOMIC_RELEASE);
				want += 2;
			}
			cpu_relax();
		}
	}
	return p->piped ? pipe_main(t) : decoder_main(t);
}

/* The pipeline's queues, before the decode thread takes its part: only then (a trace of thousands
 * of threads holds no queues). */
static void make_queues(struct tprof_reader_priv *p)
{
	for (size_t i = 0; i < p->ncur; i++)
		p->cur[i].q = xcalloc(PIPE_SLOTS, sizeof(*p->cur[i].q));
}

/* The decode thread runs when there are compressed blocks to share and a second CPU this process
 * may run on (TPROF_DECODE_THREAD=0 turns it off, =1 starts it even without a second CPU; the events
 * are the same either way). It runs the pipeline when the trace has at most PIPE_MAX_CURSORS
 * threads and the two CPUs are near each other (round_trip, asked once a process;
 * TPROF_DECODE_PIPE=0 keeps it to decompressing, =1 pipes without asking). */
void rd_start_decoder(struct tprof_trace *t)
{
	struct tprof_reader_priv *p = t->priv;
	static int on = -1, pipe = -1; /* read (and a bad value said) once, however many traces are opened */
	if (on < 0) {
		on = tprof_env_switch("TPROF_DECODE_THREAD", 2); /* 2: when there is a second CPU */
		pipe = tprof_env_switch("TPROF_DECODE_PIPE", 2); /* 2: when the CPUs are near */
	}
	size_t compressed = 0;
	for (size_t j = 0; j < p->njobs && compressed < 2; j++)
		compressed += p->jobs[j].b->raw_len != 0;
	cpu_set_t cpus;
	int known = sched_getaffinity(0, sizeof(cpus), &cpus) == 0;
	if (compressed < 2 || !on || (on == 2 && (!known || CPU_COUNT(&cpus) < 2)))
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
	pthread_cond_init(&p->avail, NULL);
	p->threaded = 1;
	p->asking = pipe == 2 && p->ncur <= PIPE_MAX_CURSORS;
	p->piped = pipe && p->ncur <= PIPE_MAX_CURSORS; /* when asking, set again below */
	p->pipe_slots = PIPE_CHUNKS / (unsigned)p->ncur;
	p->pipe_slots = p->pipe_slots > PIPE_SLOTS ? PIPE_SLOTS : p->pipe_slots < 2 ? 2 : p->pipe_slots;
	for (size_t i = 0; i < p->ncur; i++)
		p->cur[i].dec_done = !p->cur[i].nblocks;
	if (p->asking)
		ping.ball = ping.quit = 0;
	else if (p->piped)
		make_queues(p);
	/* A new thread starts on its creator's CPU, and the scheduler may leave both threads there
	 * for tens of milliseconds (as long as the whole reading; a third of the summaries of the
	 * storm took 60-70 ms instead of 45 so): it starts on another CPU, and may go anywhere once
	 * it runs (start_elsewhere, reset_cpus). */
	p->cpus_known = known;
	if (known)
		p->cpus = cpus;
	pthread_attr_t attr;
	int attr_ok = pthread_attr_init(&attr) == 0;
	if (attr_ok && known)
		start_elsewhere(&attr, &cpus);
	int made = pthread_create(&p->thread, attr_ok ? &attr : NULL, decode_main, t) == 0;
	if (attr_ok)
		pthread_attr_destroy(&attr);
	if (!made) {
		p->threaded = p->piped = 0;
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->want);
		pthread_cond_destroy(&p->ready);
		pthread_cond_destroy(&p->avail);
		return;
	}
	if (p->asking) {
		uint64_t rt = round_trip();
		pipe = rt <= FAR_ROUND_TRIP_NS; /* the answer holds for every trace the process reads */
		p->piped = pipe;
		if (tprof_env_switch("TPROF_DEBUG", 0)) {
			char ns[32] = "no answer in time";
			if (rt != UINT64_MAX)
				snprintf(ns, sizeof(ns), "%llu ns", (unsigned long long)rt);
			tprof_warn("a cache line's round trip to the decode thread's CPU: %s; it %s", ns,
				   pipe ? "decodes the events too" : "only decompresses blocks");
		}
		if (p->piped)
			make_queues(p);
		__atomic_store_n(&ping.quit, 1, __ATOMIC_RELEASE); /* after p->piped and the queues */
	}
}

void rd_stop_decoder(struct tprof_reader_priv *p)
{
	if (!p->threaded)
		return;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&p->stop, 1, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&p->want);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	ZSTD_freeDCtx(p->help_dctx);
	p->help_dctx = NULL;
	zpool_clear(p);
	for (size_t j = 0; j < p->njobs; j++) {
		free(p->jobs[j].zbuf);
		p->jobs[j].zbuf = NULL;
	}
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->want);
	pthread_cond_destroy(&p->ready);
	pthread_cond_destroy(&p->avail);
	p->threaded = 0;
}
