/* The trace reader's pass one (see reader.h): maps the file and walks its blocks, checking framing,
 * CRC-32C and the small fixed blocks (INFO, CLOCK, THREAD, LOST, END), has blocks.c read the rare
 * ones whole (STACKS, MODULE, NAMES, KERNELS, RSS), and indexes each thread's EVENTS blocks for
 * pass two (decode.c, prefetch.c, merge.c), which decodes them lazily and merges the threads by
 * sequence number, so that memory stays proportional to the threads. A file that ends inside a
 * block is read up to that block, and says where it was cut. Also the trace's accessors. */
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

void rd_set_err(char *err, size_t errlen, const char *path, uint64_t off, const char *fmt, ...)
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

size_t rd_thread_index(struct tprof_trace *t, uint32_t tid)
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
	c->tid = c->d.tid = c->md.tid = tid;
	c->deleg_off = UINT64_MAX;
	c->thread = rd_thread_index(t, tid);
	return c;
}

/* LEAKS: entries by increasing address (across blocks), then one summary that counts them. */
void rd_drop_pages(const uint8_t *map, const uint8_t *from, const uint8_t *to)
{
	uintptr_t a = ((uintptr_t)from + 4095) & ~(uintptr_t)4095, b = (uintptr_t)to & ~(uintptr_t)4095;
	if (b > a && (const uint8_t *)a >= map)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

/* A ZSTACKS or ZKERNELS block: decompressed (no more than its varint says, which may claim at most
 * TPROF_ZBLOCK_MAX_RAW and TPROF_ZBLOCK_MAX_RATIO times the block's len bytes), then read by parse as
 * the plain payload (of the block named what) it must be exactly. 0, or -1 with why. */
static int zblock(struct tprof_trace *t, struct tprof_cursor *c, uint32_t len, const char *what,
		  int (*parse)(struct tprof_trace *, struct tprof_cursor *, const char **), const char **why,
		  char *buf, size_t cap)
{
	uint64_t raw;
	snprintf(buf, cap, "malformed compressed %s block", what);
	*why = buf;
	if (tprof_get_varint(c, &raw) || raw == 0 || raw > TPROF_ZBLOCK_MAX_RAW ||
	    raw > (uint64_t)TPROF_ZBLOCK_MAX_RATIO * len)
		return -1;
	struct tprof_reader_priv *p = t->priv;
	if (!p->dctx) /* the merge's, not in use while the file is opened */
		p->dctx = ZSTD_createDCtx();
	uint8_t *out = xmalloc(raw);
	size_t got = p->dctx ? ZSTD_decompressDCtx(p->dctx, out, raw, c->p, (size_t)(c->end - c->p)) : (size_t)-1;
	int rc = -1;
	if (ZSTD_isError(got) || got != raw) {
		snprintf(buf, cap, "compressed %s block does not decompress to its %llu bytes", what,
			 (unsigned long long)raw);
	} else {
		struct tprof_cursor d = {out, out + raw};
		rc = parse(t, &d, why);
	}
	free(out);
	return rc;
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

/* For a block at off whose length runs past the end of the file (size): where a complete block ends
 * exactly at the end of the file instead, the one at off itself (its checksum right over the bytes
 * up to there) or one after it (a header whose length reaches exactly there, its checksum right),
 * or 0 when none does. A recorder writes whole blocks and nothing after a write that failed, so a
 * file it left cut ends inside its last block: one that ends at a block's end was not cut, and the
 * length at off was corrupted. Only the last TPROF_BLOCK_MAX_WRITTEN bytes are looked at. */
static uint64_t complete_block_at_end(const uint8_t *map, uint64_t off, uint64_t size, unsigned version)
{
	uint64_t h = TPROF_BLOCK_HEADER_LEN;
	if (size - off >= h) {
		uint8_t type = map[off];
		uint32_t crc = tprof_crc32c_update(tprof_crc32c_update(0, &type, 1), map + off + h, size - off - h);
		if (crc == tprof_load_u32(map + off + 5))
			return off + 1; /* 0 means none */
	}
	/* from the end back: a recorder's last block (END, a few bytes) is met first, and a file made
	 * to hold a header that fits every few bytes costs at most 64 checksums */
	uint64_t from = off + 1, span = (uint64_t)TPROF_BLOCK_MAX_WRITTEN + h;
	if (size > span && size - span > from)
		from = size - span;
	int tries = 0;
	for (uint64_t y = size - h; y >= from && y + h <= size && tries < 64; y--) {
		uint8_t type = map[y];
		if (type < TPROF_BLK_INFO || type > tprof_block_type_max(version) ||
		    tprof_load_u32(map + y + 1) != size - y - h)
			continue;
		tries++;
		uint32_t crc = tprof_crc32c_update(tprof_crc32c_update(0, &type, 1), map + y + h, size - y - h);
		if (crc == tprof_load_u32(map + y + 5))
			return y + 1;
	}
	return 0;
}

/* The events of one EVENTS payload (what report counts: a realloc is two), from its header and its
 * first stream, the records' heads; the records' count alone when the payload is shorter. */
static uint64_t payload_events(const uint8_t *p, size_t n)
{
	struct tprof_cursor c = {p, p + n};
	uint64_t tid, count, v, head_len = 0;
	if (tprof_get_varint(&c, &tid) || tprof_get_varint(&c, &count))
		return 0;
	for (int k = 0; k < 2 + TPROF_NSTREAMS; k++) /* base seq, base tick, the streams' lengths */
		if (tprof_get_varint(&c, k == 2 ? &head_len : &v))
			return count;
	uint64_t events = count;
	for (uint64_t i = 0; i < head_len && i < count && c.p + i < c.end; i++)
		events += tprof_kind_is_realloc(c.p[i] & TPROF_REC_KIND_MASK);
	return events;
}

/* Adds to *n the events of every EVENTS block indexed so far (a realloc is two, as report counts
 * them), for a cut trace, which says how many came before the cut. A compressed block's are
 * inside its payload: it is decompressed up to the end of its records' heads. 0, or -1 with a
 * message when a block does not decompress to an EVENTS header of its thread. */
static int count_events(struct tprof_trace *t, uint64_t *n, char *err, size_t errlen)
{
	struct tprof_reader_priv *p = t->priv;
	ZSTD_DCtx *d = NULL;
	uint8_t *buf = NULL;
	int rc = 0;
	for (size_t i = 0; i < p->ncur && rc == 0; i++) {
		const struct cursor *cu = &p->cur[i];
		for (size_t k = 0; k < cu->nblocks && rc == 0; k++) {
			const struct block_ref *b = &cu->blocks[k];
			if (!b->raw_len) {
				*n += payload_events(p->map + b->off, b->len);
				continue;
			}
			if ((!d && !(d = ZSTD_createDCtx())) || (!buf && !(buf = malloc(TPROF_ZEVENTS_MAX_RAW)))) {
				snprintf(err, errlen, "%s: cannot create a zstd context", t->path);
				rc = -1;
				break;
			}
			/* the header first (at most 128 bytes), then as far as the heads reach */
			ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
			ZSTD_inBuffer in = {p->map + b->off, b->len, 0};
			ZSTD_outBuffer o = {buf, b->raw_len < 128 ? b->raw_len : 128, 0};
			int grown = 0;
			for (;;) {
				while (o.pos < o.size && in.pos < in.size) {
					size_t was_in = in.pos, was_out = o.pos;
					size_t r = ZSTD_decompressStream(d, &o, &in);
					if (ZSTD_isError(r) || (in.pos == was_in && o.pos == was_out))
						break;
				}
				struct tprof_cursor c = {buf, buf + o.pos};
				uint64_t tid, count;
				if (tprof_get_varint(&c, &tid) || tid != cu->tid || tprof_get_varint(&c, &count) ||
				    count == 0 || count > b->raw_len) {
					rd_set_err(err, errlen, t->path, b->off,
						   "corrupt: compressed EVENTS block of thread %u does not decompress to "
						   "its header",
						   cu->tid);
					rc = -1;
					break;
				}
				if (grown || o.size == b->raw_len) {
					*n += payload_events(buf, o.pos);
					break;
				}
				o.size = 128 + count < b->raw_len ? 128 + count : b->raw_len;
				grown = 1;
			}
		}
	}
	free(buf);
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
	long limit = 10000;
	if (env && *env) {
		char *end = NULL;
		errno = 0;
		long n = strtol(env, &end, 10);
		if (errno || *end || end == env || n < 0 || n > 86400000)
			tprof_warn("TPROF_WAIT_MS=%s: not a number of milliseconds from 0 to 86400000; the default "
				   "(10000) is kept",
				   env);
		else
			limit = n;
	}
	for (long waited = 0; waited < limit; waited += 10) {
		if (waited == 1000)
			tprof_warn("waiting for the recorder to finish %s", path);
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
		if (flock(fd, LOCK_SH | LOCK_NB) == 0)
			return 1;
	}
	tprof_warn("%s is still being recorded; reading what it holds so far", path);
	return 1;
}

int tprof_trace_open(const char *path, struct tprof_trace **out, char *err, size_t errlen)
{
	return tprof_trace_open_flags(path, 0, out, err, errlen);
}

int tprof_trace_open_flags(const char *path, unsigned flags, struct tprof_trace **out, char *err, size_t errlen)
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
	p->heap_only = (flags & TPROF_OPEN_HEAP_ONLY) != 0;
	p->progress = rd_progress_wanted(size);
	*out = t;

	if (size < TPROF_MAGIC_LEN || memcmp(map, TPROF_MAGIC, TPROF_MAGIC_LEN) != 0) {
		rd_set_err(err, errlen, path, 0, "not a tprof trace (bad magic)");
		goto fail;
	}
	if (size < TPROF_FILE_HEADER_LEN) {
		rd_set_err(err, errlen, path, size, "truncated file header (%zu of %d bytes)", size,
			TPROF_FILE_HEADER_LEN);
		goto fail;
	}
	uint16_t version = tprof_load_u16(map + 8), hlen = tprof_load_u16(map + 10);
	if (version < TPROF_VERSION_OLDEST && version > 0) {
		rd_set_err(err, errlen, path, 8,
			"trace format version %u is older than this tprof reads (%d to %d); record it again",
			version, TPROF_VERSION_OLDEST, TPROF_VERSION);
		goto fail;
	}
	if (version > TPROF_VERSION) {
		rd_set_err(err, errlen, path, 8,
			"trace format version %u is newer than this tprof reads (%d); upgrade tprof",
			version, TPROF_VERSION);
		goto fail;
	}
	if (version == 0) {
		rd_set_err(err, errlen, path, 8, "invalid trace format version 0");
		goto fail;
	}
	t->version = version;
	if (hlen < TPROF_FILE_HEADER_LEN || hlen > size) {
		rd_set_err(err, errlen, path, 10, "invalid header length %u", hlen);
		goto fail;
	}

	uint64_t off = hlen, dropped_to = 0, last_clock_off = 0;
	size_t cap_clocks = 0;
	char clock_why[128];
	int last_was_end = 0;
	while (off < size) {
		if (off - dropped_to >= (4u << 20)) {
			rd_drop_pages(map, map + dropped_to, map + off);
			dropped_to = off;
		}
		/* The header fields that are there are checked first: a block whose type or length is
		 * wrong is corrupt, even where the file ends; one that is right but runs past the end of
		 * the file was cut there. */
		uint64_t have = size - off;
		uint8_t type = map[off];
		uint32_t len = have >= 5 ? tprof_load_u32(map + off + 1) : 0;
		if (type < TPROF_BLK_INFO || type > tprof_block_type_max(version)) {
			if (type <= TPROF_BLK_ZKERNELS) /* the last type this reader knows */
				rd_set_err(err, errlen, path, off,
					"corrupt: block type %u does not exist in format version %u", type, version);
			else
				rd_set_err(err, errlen, path, off, "corrupt: unknown block type %u", type);
			goto fail;
		}
		if (len > TPROF_BLOCK_MAX_PAYLOAD) {
			rd_set_err(err, errlen, path, off, "corrupt: block length %u exceeds the %u limit", len,
				TPROF_BLOCK_MAX_PAYLOAD);
			goto fail;
		}
		if (have < TPROF_BLOCK_HEADER_LEN || len > have - TPROF_BLOCK_HEADER_LEN) {
			if (have >= 5 && len > TPROF_BLOCK_MAX_WRITTEN) {
				/* a flipped length byte, not a cut: the bytes after it would be lost unsaid */
				rd_set_err(err, errlen, path, off,
					   "corrupt: block length %u runs past the end of the file and is longer than any "
					   "block a recorder writes (%u)",
					   len, TPROF_BLOCK_MAX_WRITTEN);
				goto fail;
			}
			uint64_t whole = have >= 5 ? complete_block_at_end(map, off, size, version) : 0;
			if (whole) {
				rd_set_err(err, errlen, path, off,
					   "corrupt: block length %u runs past the end of the file, but a complete block "
					   "ends there (the one at byte %llu): a corrupted length, not a cut",
					   len, (unsigned long long)(whole - 1));
				goto fail;
			}
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
			rd_set_err(err, errlen, path, off, "corrupt: block checksum mismatch (type %u, %u bytes)",
				type, len);
			goto fail;
		}
		struct tprof_cursor c = {pl, pl + len};
		if (t->blocks == 0 && type != TPROF_BLK_INFO) {
			rd_set_err(err, errlen, path, off, "corrupt: first block is type %u, not INFO", type);
			goto fail;
		}
		int bad = 0;
		const char *why = NULL;
		char whybuf[96];
		switch (type) {
		case TPROF_BLK_INFO:
			bad = t->blocks != 0 || rd_parse_info(t, &c, version, &why);
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
				size_t ix = rd_thread_index(t, (uint32_t)tid);
				struct tprof_thread_info *ti = &t->threads[ix];
				free(ti->name);
				ti->name = xstrndup(s, n);
				ti->reused += ti->ended; /* another thread of that id, once the first had ended */
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
			}
			break;
		}
		case TPROF_BLK_STACKS:
			bad = rd_parse_stacks(t, &c, &why);
			break;
		case TPROF_BLK_ZSTACKS:
			bad = zblock(t, &c, len, "STACKS", rd_parse_stacks, &why, whybuf, sizeof(whybuf));
			break;
		case TPROF_BLK_ZKERNELS:
			bad = zblock(t, &c, len, "KERNELS", rd_parse_kernels, &why, whybuf, sizeof(whybuf));
			break;
		case TPROF_BLK_NAMES:
			bad = rd_parse_names(t, &c, &why);
			break;
		case TPROF_BLK_KERNELS:
			bad = rd_parse_kernels(t, &c, &why);
			break;
		case TPROF_BLK_RSS:
			bad = rd_parse_rss(t, &c, &why);
			break;
		case TPROF_BLK_LEAKS:
			bad = rd_parse_leaks(t, &c, &why);
			break;
		case TPROF_BLK_MODULE:
			bad = rd_parse_module(t, &c);
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
					size_t ix = rd_thread_index(t, (uint32_t)tid);
					t->threads[ix].lost += n;
				}
			}
			break;
		}
		case TPROF_BLK_THREAD_END: {
			uint64_t tid;
			bad = tprof_get_varint(&c, &tid) || tid > UINT32_MAX;
			if (!bad) {
				size_t ix = rd_thread_index(t, (uint32_t)tid);
				t->threads[ix].ended = 1;
			}
			break;
		}
		case TPROF_BLK_END:
			bad = rd_parse_end(t, &c, version, &why, whybuf, sizeof(whybuf));
			break;
		}
		if (bad) {
			if (why)
				rd_set_err(err, errlen, path, off, "corrupt: %s", why);
			else
				rd_set_err(err, errlen, path, off, "corrupt: malformed block of type %u", type);
			goto fail;
		}
		last_was_end = type == TPROF_BLK_END;
		t->blocks++;
		off += TPROF_BLOCK_HEADER_LEN + len;
	}
	if (t->blocks == 0 && t->cut) {
		if (t->cut_want)
			rd_set_err(err, errlen, path, off,
				"truncated: no complete INFO block: the first block has %llu of its %llu bytes",
				(unsigned long long)t->cut_have, (unsigned long long)t->cut_want);
		else
			rd_set_err(err, errlen, path, off,
				"truncated: no complete INFO block: the file ends %llu bytes into the first "
				"block's %d-byte header",
				(unsigned long long)t->cut_have, TPROF_BLOCK_HEADER_LEN);
		goto fail;
	}
	if (t->blocks == 0) {
		rd_set_err(err, errlen, path, off, "truncated: no INFO block after the file header");
		goto fail;
	}
	if (t->cut) {
		t->cut_events = 0;
		if (count_events(t, &t->cut_events, err, errlen) != 0)
			goto fail;
		dropped_to = 0;
	}
	t->ended = last_was_end && !t->cut;
	t->complete = t->ended && !(t->end_flags & TPROF_ENDF_INFLIGHT);
	if (t->nannots)
		tprof_sort(t->annots, t->nannots, sizeof(*t->annots), rd_annot_by_seq);
	rd_drop_pages(map, map + dropped_to, map + size);
	rd_merge_duplicate_stacks(t);

	/* Time base: a straight line through the first and last calibration pairs. */
	p->ns_per_tick = 1.0;
	if (t->info.clock == TPROF_CLOCK_TSC && p->nclocks >= 2 &&
	    p->clocks[p->nclocks - 1].tick > p->clocks[0].tick)
		p->ns_per_tick = (double)(p->clocks[p->nclocks - 1].mono - p->clocks[0].mono) /
				 (double)(p->clocks[p->nclocks - 1].tick - p->clocks[0].tick);
	/* a TSC runs at 10 MHz to 100 GHz: other rates over a millisecond or more are no clock's */
	if (p->ns_per_tick != 1.0 && p->clocks[p->nclocks - 1].mono - p->clocks[0].mono >= 1000000 &&
	    (p->ns_per_tick < 0.01 || p->ns_per_tick > 100)) {
		rd_set_err(err, errlen, path, last_clock_off, "corrupt: impossible clock calibration (%.3g ns per tick)",
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


void tprof_trace_close(struct tprof_trace *t)
{
	if (!t)
		return;
	struct tprof_reader_priv *p = t->priv;
	if (p) {
		rd_progress_end(p);
		rd_stop_decoder(p); /* before the unmapping: it reads the map */
		munmap((void *)p->map, p->size);
		free(p->jobs);
		for (size_t i = 0; i < p->ncur; i++) {
			free(p->cur[i].blocks);
			free(p->cur[i].d.zbuf);
			free(p->cur[i].d.st);
			free(p->cur[i].md.zbuf);
			free(p->cur[i].md.st);
			free(p->cur[i].own.ev);
			for (int k = 0; p->cur[i].q && k < PIPE_SLOTS; k++)
				free(p->cur[i].q[k].ev);
			free(p->cur[i].q);
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

const char *tprof_trace_inflight_note(const struct tprof_trace *t)
{
	return t->version >= 10 ? "a signal handler's heap calls were held for the call they interrupted when the "
				  "process ended: they may be missing"
				: "a thread was inside a heap call when the process ended: that call may be missing";
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

uint32_t tprof_trace_stack(const struct tprof_trace *t, uint32_t id, uint64_t frames[TPROF_STACK_MAX_DEPTH],
			   int *truncated)
{
	const struct tprof_reader_priv *p = t->priv;
	if (id == 0 || id >= p->nstacks || !p->stacks[id].depth)
		return 0;
	const struct stack_def *s = &p->stacks[id];
	struct tprof_cursor c = {p->frames + s->first, p->frames + s->first + s->bytes};
	uint64_t f = 0;
	for (uint32_t i = 0; i < s->depth; i++) { /* checked as the block was read */
		int64_t d = 0;
		if (i == 0)
			tprof_get_varint(&c, &f);
		else
			tprof_get_svarint(&c, &d);
		frames[i] = f += (uint64_t)d;
	}
	if (truncated)
		*truncated = s->truncated;
	return s->depth;
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
