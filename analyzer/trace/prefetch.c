/* The trace reader's decode thread: decodes whole EVENTS blocks a few ahead of the merge (which
 * decodes some too rather than wait for it), and gives back the pages of the mapping that every
 * thread has read past. */
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

/* Keeps an event buffer for the next job (fresh memory costs page faults), or frees it when the
 * pool is full. Under lock. */
static void pool_put(struct tprof_reader_priv *p, struct decoded d)
{
	if (p->npool < POOL && d.ev)
		p->pool[p->npool++] = d;
	else
		free(d.ev);
}

/* Whether job z is one the decode thread (or the merge, helping) may take: free, not the next block
 * of its thread (which the merge decodes itself when it comes to it), not too large. */
static int job_open(const struct job *z)
{
	return z->state == JOB_FREE && !z->next && z->b->raw_len <= DECODE_MAX_RAW && z->b->len <= DECODE_MAX_RAW;
}

/* Decodes job z whole, with d and *dctx, as the decode thread does: called and returns with the lock
 * held, which it drops while it decodes. */
static void decode_job(struct tprof_trace *t, struct job *z, struct blockdec *d, ZSTD_DCtx **dctx)
{
	struct tprof_reader_priv *p = t->priv;
	z->state = JOB_BUSY;
	p->ahead++;
	struct decoded out = {0};
	if (p->npool)
		out = p->pool[--p->npool];
	pthread_mutex_unlock(&p->lock);
	d->tid = z->tid;
	out.n = 0;
	if (rd_begin_block(t, dctx, d, z->b, &out) < 0)
		out.status = -1;
	else
		rd_decode_chunk(t, d, &out, UINT64_MAX);
	d->blk = NULL;
	pthread_mutex_lock(&p->lock);
	if (z->state == JOB_TAKEN) { /* the merge stopped waiting and decoded it itself */
		pool_put(p, out);
		return;
	}
	z->out = out;
	__atomic_store_n(&z->state, JOB_READY, __ATOMIC_RELEASE); /* take_job spins on it */
	p->ahead_bytes += out.n * sizeof(*out.ev);
	pthread_cond_broadcast(&p->ready);
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
		 * (which only taking ends), or too large, or the merge decodes it */
		while (j < p->njobs && !job_open(&p->jobs[j]))
			j++;
		if (j >= p->njobs)
			break;
		if (p->ahead >= DECODE_AHEAD || p->ahead_bytes >= DECODE_AHEAD_BYTES) {
			pthread_cond_wait(&p->want, &p->lock);
			continue;
		}
		decode_job(t, &p->jobs[j], d, &dctx);
	}
	pthread_mutex_unlock(&p->lock);
	if (d) {
		free(d->zbuf);
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
 * job with the events when the decode thread decoded it (the merge decoding blocks after it
 * meanwhile when the decode thread is on it, then waiting a moment for it to finish), or NULL when
 * the merge is to decode it itself. */
struct job *rd_take_job(struct tprof_trace *t, const struct block_ref *b, const struct block_ref *next)
{
	struct tprof_reader_priv *p = t->priv;
	if (!p->threaded)
		return NULL;
	struct job *z = &p->jobs[b->job];
	pthread_mutex_lock(&p->lock);
	z->next = 0;
	if (next)
		p->jobs[next->job].next = 1;
	/* The decode thread is on it: rather than wait, the merge decodes the next block the decode
	 * thread would take after it, whole, as the decode thread would (the two then share the
	 * decoding evenly however much the merge does besides); once there is none to take, it waits. */
	while (z->state == JOB_BUSY && p->help && p->ahead < DECODE_AHEAD && p->ahead_bytes < DECODE_AHEAD_BYTES) {
		size_t j = b->job + 1;
		while (j < p->njobs && j < b->job + 2 * DECODE_AHEAD && !job_open(&p->jobs[j]))
			j++;
		if (j >= p->njobs || j >= b->job + 2 * DECODE_AHEAD)
			break;
		decode_job(t, &p->jobs[j], p->help, &p->help_dctx);
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
			p->ahead_bytes -= z->out.n * sizeof(*z->out.ev);
		pthread_cond_signal(&p->want);
	}
	z->state = JOB_TAKEN;
	pthread_mutex_unlock(&p->lock);
	return ready ? z : NULL;
}

/* The merge has read job z's events: its buffer goes back to the pool. */
void rd_release_job(struct tprof_reader_priv *p, struct job *z)
{
	pthread_mutex_lock(&p->lock);
	pool_put(p, z->out);
	z->out.ev = NULL;
	pthread_mutex_unlock(&p->lock);
}

/* The decode thread runs when there are blocks to share and a second CPU to decode them on
 * (TPROF_DECODE_THREAD=0 turns it off; the events are the same either way). */
void rd_start_decoder(struct tprof_trace *t)
{
	struct tprof_reader_priv *p = t->priv;
	static int on = -1; /* read (and a bad value said) once, however many traces are opened */
	if (on < 0)
		on = tprof_env_switch("TPROF_DECODE_THREAD", 1);
	if (p->njobs < 2 || !on || sysconf(_SC_NPROCESSORS_ONLN) < 2)
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
	p->help = calloc(1, sizeof(*p->help)); /* none: the merge only waits */
	if (pthread_create(&p->thread, NULL, decoder_main, t) != 0) {
		p->threaded = 0;
		free(p->help);
		p->help = NULL;
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->want);
		pthread_cond_destroy(&p->ready);
	}
}

void rd_stop_decoder(struct tprof_reader_priv *p)
{
	if (!p->threaded)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->want);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	if (p->help) {
		free(p->help->zbuf);
		free(p->help->st);
		free(p->help);
		p->help = NULL;
	}
	ZSTD_freeDCtx(p->help_dctx);
	p->help_dctx = NULL;
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->want);
	pthread_cond_destroy(&p->ready);
	p->threaded = 0;
}

