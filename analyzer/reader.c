/* Implementation of analyzer/reader.h. Pass one maps the file and walks its blocks, checking
 * framing, CRC-32C and the small fixed blocks (INFO, CLOCK, THREAD, LOST, END), and indexes each
 * thread's EVENTS blocks. Pass two decodes the EVENTS lazily, one cursor per thread, and merges the
 * threads by sequence number with a binary heap, so memory stays proportional to the threads. */
#include "reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

struct block_ref {
	uint64_t off; /* of the payload */
	uint32_t len;
};

struct cursor {
	uint32_t tid;
	size_t thread; /* index into t->threads */
	struct block_ref *blocks;
	size_t nblocks, cap, next_block;
	struct tprof_cursor c;
	uint64_t left; /* records left in the current block */
	struct tprof_rec_state st;
	int have; /* ev holds the cursor's next event */
	struct tprof_event ev;
	int have_tail; /* the second half of a realloc is pending */
	struct tprof_event tail;
};

struct clock_pair {
	uint64_t tick, mono;
};

struct tprof_reader_priv {
	const uint8_t *map;
	size_t size;
	struct cursor *cur;
	size_t ncur;
	size_t *heap; /* indexes into cur, ordered by cur[i].ev.seq */
	size_t nheap;
	int started;
	uint64_t last_seq;
	struct clock_pair *clocks;
	size_t nclocks;
	double ns_per_tick;
	uint64_t tick0;
};

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

static size_t thread_index(struct tprof_trace *t, uint32_t tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return i;
	t->threads = xrealloc(t->threads, (t->nthreads + 1) * sizeof(*t->threads));
	memset(&t->threads[t->nthreads], 0, sizeof(*t->threads));
	t->threads[t->nthreads].tid = tid;
	t->threads[t->nthreads].name = xstrndup("", 0);
	return t->nthreads++;
}

static struct cursor *cursor_for(struct tprof_trace *t, uint32_t tid)
{
	struct tprof_reader_priv *p = t->priv;
	for (size_t i = 0; i < p->ncur; i++)
		if (p->cur[i].tid == tid)
			return &p->cur[i];
	p->cur = xrealloc(p->cur, (p->ncur + 1) * sizeof(*p->cur));
	struct cursor *c = &p->cur[p->ncur++];
	memset(c, 0, sizeof(*c));
	c->tid = tid;
	c->thread = thread_index(t, tid);
	return c;
}

static int parse_info(struct tprof_trace *t, struct tprof_cursor *c)
{
	struct tprof_trace_info *in = &t->info;
	const char *s;
	size_t n;
	if (tprof_get_varint(c, &in->pid) || tprof_get_varint(c, &in->ppid) ||
	    tprof_get_varint(c, &in->clock) || tprof_get_varint(c, &in->flags) ||
	    tprof_get_varint(c, &in->page_size) || tprof_get_varint(c, &in->ptr_size) ||
	    tprof_get_varint(c, &in->start_realtime_ns) || tprof_get_varint(c, &in->ring_entries) ||
	    tprof_get_string(c, &s, &n))
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
	if (in->clock != TPROF_CLOCK_TSC && in->clock != TPROF_CLOCK_MONOTONIC)
		return -1;
	const char *base = in->argc && in->argv[0][0] ? in->argv[0] : in->exe;
	const char *slash = strrchr(base, '/');
	in->program = xstrndup(slash ? slash + 1 : base, strlen(slash ? slash + 1 : base));
	return 0;
}

int tprof_trace_open(const char *path, struct tprof_trace **out, char *err, size_t errlen)
{
	*out = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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

	uint64_t off = hlen, events_seen = 0;
	int last_was_end = 0;
	while (off < size) {
		if (size - off < TPROF_BLOCK_HEADER_LEN) {
			set_err(err, errlen, path, off,
				"truncated: block header cut after %zu of %d bytes (read %llu complete "
				"blocks, %llu events before it)",
				(size_t)(size - off), TPROF_BLOCK_HEADER_LEN, (unsigned long long)t->blocks,
				(unsigned long long)events_seen);
			goto fail;
		}
		uint8_t type = map[off];
		uint32_t len = tprof_load_u32(map + off + 1), crc = tprof_load_u32(map + off + 5);
		if (type < TPROF_BLK_INFO || type > TPROF_BLK_END) {
			set_err(err, errlen, path, off, "corrupt: unknown block type %u", type);
			goto fail;
		}
		if (len > TPROF_BLOCK_MAX_PAYLOAD) {
			set_err(err, errlen, path, off, "corrupt: block length %u exceeds the %u limit", len,
				TPROF_BLOCK_MAX_PAYLOAD);
			goto fail;
		}
		if (len > size - off - TPROF_BLOCK_HEADER_LEN) {
			set_err(err, errlen, path, off,
				"truncated: block of %u bytes has only %llu (read %llu complete blocks, "
				"%llu events before it)",
				len, (unsigned long long)(size - off - TPROF_BLOCK_HEADER_LEN),
				(unsigned long long)t->blocks, (unsigned long long)events_seen);
			goto fail;
		}
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
		switch (type) {
		case TPROF_BLK_INFO:
			bad = t->blocks != 0 || parse_info(t, &c);
			break;
		case TPROF_BLK_CLOCK: {
			uint64_t tick, mono, real;
			bad = tprof_get_varint(&c, &tick) || tprof_get_varint(&c, &mono) ||
			      tprof_get_varint(&c, &real);
			if (!bad) {
				p->clocks = xrealloc(p->clocks, (p->nclocks + 1) * sizeof(*p->clocks));
				p->clocks[p->nclocks++] = (struct clock_pair){tick, mono};
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
		case TPROF_BLK_EVENTS: {
			uint64_t tid, count;
			bad = tprof_get_varint(&c, &tid) || tid > UINT32_MAX || tprof_get_varint(&c, &count) ||
			      count == 0 || count > len;
			if (!bad) {
				struct cursor *cu = cursor_for(t, (uint32_t)tid);
				if (cu->nblocks == cu->cap) {
					cu->cap = cu->cap ? cu->cap * 2 : 16;
					cu->blocks = xrealloc(cu->blocks, cu->cap * sizeof(*cu->blocks));
				}
				cu->blocks[cu->nblocks++] = (struct block_ref){off + TPROF_BLOCK_HEADER_LEN, len};
				events_seen += count;
			}
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
			bad = tprof_get_varint(&c, &t->end_reason) || tprof_get_varint(&c, &t->end_value) ||
			      tprof_get_varint(&c, &t->end_seq) || tprof_get_varint(&c, &t->end_events) ||
			      tprof_get_varint(&c, &t->end_lost);
			break;
		}
		if (bad) {
			set_err(err, errlen, path, off, "corrupt: malformed block of type %u", type);
			goto fail;
		}
		last_was_end = type == TPROF_BLK_END;
		t->blocks++;
		off += TPROF_BLOCK_HEADER_LEN + len;
	}
	if (t->blocks == 0) {
		set_err(err, errlen, path, off, "truncated: no INFO block after the file header");
		goto fail;
	}
	t->complete = last_was_end;

	/* Time base: a straight line through the first and last calibration pairs. */
	p->ns_per_tick = 1.0;
	if (t->info.clock == TPROF_CLOCK_TSC && p->nclocks >= 2 &&
	    p->clocks[p->nclocks - 1].tick > p->clocks[0].tick)
		p->ns_per_tick = (double)(p->clocks[p->nclocks - 1].mono - p->clocks[0].mono) /
				 (double)(p->clocks[p->nclocks - 1].tick - p->clocks[0].tick);
	if (p->nclocks) {
		p->tick0 = p->clocks[0].tick;
		t->t0_ns = p->clocks[0].mono;
		t->end_ns = p->clocks[p->nclocks - 1].mono;
	}
	t->first_tick_seen = UINT64_MAX;
	p->heap = xcalloc(p->ncur + 1, sizeof(size_t));
	return 0;
fail:
	tprof_trace_close(t);
	*out = NULL;
	return -1;
}

void tprof_trace_close(struct tprof_trace *t)
{
	if (!t)
		return;
	struct tprof_reader_priv *p = t->priv;
	if (p) {
		munmap((void *)p->map, p->size);
		for (size_t i = 0; i < p->ncur; i++)
			free(p->cur[i].blocks);
		free(p->cur);
		free(p->heap);
		free(p->clocks);
		free(p);
	}
	for (size_t i = 0; i < t->nthreads; i++)
		free(t->threads[i].name);
	free(t->threads);
	free(t->info.exe);
	free(t->info.program);
	if (t->info.argv)
		for (uint64_t i = 0; i < t->info.argc; i++)
			free(t->info.argv[i]);
	free(t->info.argv);
	free(t);
}

uint64_t tprof_trace_ns(const struct tprof_trace *t, uint64_t tick)
{
	const struct tprof_reader_priv *p = t->priv;
	double mono;
	if (t->info.clock == TPROF_CLOCK_MONOTONIC)
		mono = (double)tick;
	else
		mono = (double)t->t0_ns + ((double)tick - (double)p->tick0) * p->ns_per_tick;
	return mono <= (double)t->t0_ns ? 0 : (uint64_t)(mono - (double)t->t0_ns + 0.5);
}

const char *tprof_trace_thread_name(const struct tprof_trace *t, uint32_t tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return t->threads[i].name;
	return "";
}

/* Decodes the cursor's next event into c->ev; 1 when there is one, 0 at the end of its stream,
 * -1 on a malformed record (message in t->err). */
static int cursor_advance(struct tprof_trace *t, struct cursor *c)
{
	struct tprof_reader_priv *p = t->priv;
	const uint8_t *rec = c->c.p;
	if (c->have_tail) {
		c->ev = c->tail;
		c->have_tail = 0;
		return 1;
	}
	while (c->left == 0) {
		if (c->c.p != c->c.end && c->next_block > 0) {
			uint64_t off = (uint64_t)(c->c.p - p->map);
			set_err(t->err, sizeof(t->err), t->path, off,
				"corrupt: %zu bytes left over after the last record of an EVENTS block",
				(size_t)(c->c.end - c->c.p));
			return -1;
		}
		if (c->next_block == c->nblocks)
			return 0;
		struct block_ref *b = &c->blocks[c->next_block++];
		c->c.p = p->map + b->off;
		c->c.end = c->c.p + b->len;
		uint64_t tid;
		if (tprof_get_varint(&c->c, &tid) || tprof_get_varint(&c->c, &c->left) ||
		    tprof_get_varint(&c->c, &c->st.seq) || tprof_get_varint(&c->c, &c->st.tick))
			goto bad;
		c->st.ptr = 0;
	}
	rec = c->c.p;
	struct tprof_rec r;
	if (tprof_rec_decode(&c->c, &c->st, &r))
		goto bad;
	struct tprof_event *e = &c->ev;
	memset(e, 0, sizeof(*e));
	e->tid = c->tid;
	e->kind = (uint8_t)r.kind;
	e->seq = r.seq;
	e->tick = r.tick;
	e->size = r.size;
	e->ptr = r.ptr;
	if (tprof_kind_is_realloc(r.kind)) {
		e->old_ptr = r.old_ptr;
		c->tail = *e;
		c->tail.phase = 1;
		c->tail.seq = r.seq2;
		c->tail.tick = r.tick2;
		c->have_tail = 1;
	}
	c->left--;
	t->threads[c->thread].events++;
	return 1;
bad:
	set_err(t->err, sizeof(t->err), t->path, (uint64_t)(rec - p->map),
		"corrupt: malformed event record in an EVENTS block of thread %u", c->tid);
	return -1;
}

static int heap_less(struct tprof_reader_priv *p, size_t a, size_t b)
{
	return p->cur[p->heap[a]].ev.seq < p->cur[p->heap[b]].ev.seq;
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

int tprof_trace_next(struct tprof_trace *t, struct tprof_event *ev)
{
	struct tprof_reader_priv *p = t->priv;
	if (!p->started) {
		p->started = 1;
		for (size_t i = 0; i < p->ncur; i++) {
			int r = cursor_advance(t, &p->cur[i]);
			if (r < 0)
				return -1;
			if (r) {
				p->heap[p->nheap++] = i;
				heap_up(p, p->nheap - 1);
			}
		}
	}
	if (p->nheap == 0)
		return 0;
	struct cursor *c = &p->cur[p->heap[0]];
	*ev = c->ev;
	if (ev->seq <= p->last_seq && p->last_seq) {
		snprintf(t->err, sizeof(t->err),
			 "%s: corrupt: event sequence number %llu of thread %u repeats or goes back "
			 "(last %llu)",
			 t->path, (unsigned long long)ev->seq, ev->tid, (unsigned long long)p->last_seq);
		return -1;
	}
	p->last_seq = ev->seq;
	int r = cursor_advance(t, c);
	if (r < 0)
		return -1;
	if (r)
		heap_down(p, 0);
	else {
		p->heap[0] = p->heap[--p->nheap];
		heap_down(p, 0);
	}
	if (ev->tick < t->first_tick_seen)
		t->first_tick_seen = ev->tick;
	if (ev->tick > t->last_tick_seen)
		t->last_tick_seen = ev->tick;
	return 1;
}
