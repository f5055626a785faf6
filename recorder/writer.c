/* The trace writer of the recorder: one process per traced process image (recorder/server.c forks
 * it), mapping the image's shared memory (preload/shm.h). It drains every thread's ring, encodes the
 * events as compact records (docs/FORMAT.md), and appends checksummed blocks to the trace file the
 * process created. It also writes clock calibration, thread appearance, renaming and death, the
 * modules, stacks and annotation names the events use, resident set size samples, and, once the
 * process is gone (its pidfd says so) or has exec'd, everything left in the rings and the END block
 * with how the process ended. It is the only consumer of the rings. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* static contexts: exported by libzstd 1.5, declared here */
#include <zstd.h>

#include "recorder.h"
#include "shm.h"
#include "stacks.h"
#include "sys.h"
#include "tprof_ops.h"

/* The writer's own view of one thread slot (SLOT: the shared slot it follows). */
struct wthread {
	struct tprof_ring *ring; /* in our mapping; follows the slot's ring_off */
	uint64_t ring_off;
	pid_t tid;
	uint64_t last_seq, last_tick; /* last event written, for delta encoding across blocks */
	uint64_t lost_reported;
	uint32_t seen_head; /* ring head at the previous pass */
	uint64_t moved_ns;  /* when a pass last found the head moved */
	uint64_t last_write_ns; /* when its events were last written */
	char name[16]; /* the name its last THREAD block gave (a thread's name has at most 15 bytes) */
	uint32_t name_len;
	int announced;
};

static struct tprof_shm *shm;  /* the traced image's shared memory, mapped whole */
static int shm_fd = -1;       /* the memory file: mapped further as the process uses more of it */
static pid_t tpid;              /* the traced process */
static struct wthread wthreads[TPROF_SHM_THREADS];
#define SLOT(w) (&shm->threads[(w) - wthreads])
static char prog_name[256]; /* for the line at the end */
static char proc_dir[32];   /* "/proc/PID/" */

static const char *proc_file(const char *name)
{
	static char path[64];
	snprintf(path, sizeof(path), "%s%s", proc_dir, name);
	return path;
}

/* The part [off, off + len) of the memory file, in our address space. The file is mapped from its
 * start, larger each time the process has used more of it (at least doubling); older mappings
 * stay, so pointers into them stay good, and address space follows what the process used (a
 * recorder may run under the program's RLIMIT_AS). NULL outside the file or when it cannot map. */
static const void *view_(uint64_t off, uint64_t len)
{
	static uint8_t *views[48];
	static uint64_t view_len[48];
	static int nviews;
	if (off > TPROF_SHM_FILE_BYTES || len > TPROF_SHM_FILE_BYTES - off)
		return NULL;
	if (nviews && off + len <= view_len[nviews - 1])
		return views[nviews - 1] + off;
	uint64_t want = nviews ? view_len[nviews - 1] * 2 : 8u << 20;
	while (want < off + len)
		want *= 2;
	if (want > TPROF_SHM_FILE_BYTES)
		want = TPROF_SHM_FILE_BYTES;
	if (nviews == 48)
		return NULL;
	void *m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, shm_fd, 0);
	if (m == MAP_FAILED)
		return NULL;
	views[nviews] = m;
	view_len[nviews++] = want;
	return (uint8_t *)m + off;
}
#define view(off, len) ((void *)view_((off), (len)))

static uint32_t threads_hwm(void)
{
	uint32_t h = atomic_load_explicit(&shm->threads_hwm, memory_order_acquire);
	return h > TPROF_SHM_THREADS ? TPROF_SHM_THREADS : h;
}
static int clock_is_tsc;
static int flushing; /* final or exec flush, or a dead thread: write everything, hold nothing back */
static int trace_fd = -1;
static uint64_t events_written, lost_written;

#define OUT_CAP (1u << 20)
#define OUT_FLUSH_AT (OUT_CAP - (128u << 10))
#define BLOCK_TARGET (60u << 10) /* EVENTS payloads stay below this plus one record */
#define REC_MAX TPROF_REC_MAX_BYTES
static uint8_t out_buf[OUT_CAP];
/* An EVENTS payload is built here, then compressed into out_buf (or copied when compression does
 * not pay); stack definitions met on the way go out first, in a STACKS block of their own. */
#define EV_CAP (BLOCK_TARGET + TPROF_NSTREAMS * 4096 + 64)
static uint8_t ev_buf[EV_CAP];
#define STK_CAP (256u << 10)
static uint8_t stk_buf[STK_CAP];
static size_t stk_len;
static uint32_t stk_count;
static uint8_t *stack_written; /* a bit per stack id: already defined in this trace */
static ZSTD_CCtx *zctx;        /* static context in mmap'd memory: compressing never allocates */
static size_t out_len;
static int out_failed; /* a write failed: stop writing, keep draining so producers never block */

static uint64_t now_tick(void)
{
	if (clock_is_tsc)
		return __builtin_ia32_rdtsc();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void out_flush(void)
{
	if (out_len && !out_failed && tprof_write_all(trace_fd, out_buf, out_len) != 0) {
		out_failed = 1;
		fprintf(stderr, "tprof: writing %s failed: %s; the trace ends here\n", shm->trace_path,
			strerror(errno));
	}
	out_len = 0;
}

/* Opens a block of the given type; returns the payload start. Payloads larger than what is left in
 * the buffer must not be started: callers flush first when needed. */
static uint8_t *block_begin(void)
{
	if (out_len + TPROF_BLOCK_HEADER_LEN + EV_CAP > OUT_CAP)
		out_flush();
	return out_buf + out_len + TPROF_BLOCK_HEADER_LEN;
}

static void block_end(unsigned type, uint8_t *end)
{
	uint8_t *h = out_buf + out_len;
	uint8_t *payload = h + TPROF_BLOCK_HEADER_LEN;
	uint32_t len = (uint32_t)(end - payload);
	h[0] = (uint8_t)type;
	tprof_put_u32(h + 1, len);
	uint32_t crc = tprof_crc32c_update(0, h, 1);
	crc = tprof_crc32c_update(crc, payload, len);
	tprof_put_u32(h + 5, crc);
	out_len += TPROF_BLOCK_HEADER_LEN + len;
	if (out_len >= OUT_FLUSH_AT)
		out_flush();
}

/* Writes a staged run of entries as one block (their count, then their bytes) and empties it. */
static void counted_flush(unsigned type, const uint8_t *buf, size_t *len, uint32_t *count)
{
	if (!*count)
		return;
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, *count);
	memcpy(p, buf, *len);
	block_end(type, p + *len);
	*len = 0;
	*count = 0;
}

static uint8_t *put_string(uint8_t *p, const char *s, size_t n)
{
	p = tprof_put_varint(p, n);
	memcpy(p, s, n);
	return p + n;
}

static void write_clock_at(uint64_t tick, uint64_t mono, uint64_t real)
{
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, tick);
	p = tprof_put_varint(p, mono);
	p = tprof_put_varint(p, real);
	block_end(TPROF_BLK_CLOCK, p);
}

static void write_clock(void)
{
	write_clock_at(now_tick(), mono_ns(), real_ns());
}

/* Resident set size samples: every TPROF_RSS_INTERVAL_MS the writer reads the process's resident
 * set size and stages the sample here, delta-coded; the staged samples go out as one RSS block when
 * there are TPROF_RSS_BLOCK_MAX of them, when the oldest has waited RSS_STAGE_NS, and at every
 * flush. A process killed by SIGKILL (the OOM killer's signal, when memory matters most) thus loses
 * little more than the blocks the writer had not yet written, at a few bytes per sample. */
#define RSS_STAGE_NS 100000000u
static uint8_t rss_buf[TPROF_RSS_BLOCK_MAX * 20];
static size_t rss_len;
static uint32_t rss_count;
static uint64_t rss_staged_ns; /* when the oldest staged sample was taken */
static uint64_t rss_last_tick, rss_last_bytes; /* the tick spans blocks: samples never go back */
static uint64_t rss_page;

static void rss_flush(void)
{
	counted_flush(TPROF_BLK_RSS, rss_buf, &rss_len, &rss_count);
}

/* The resident set size in bytes (statm's second field, in pages), or 0 when it cannot be read. */
static uint64_t statm_rss(const char *path)
{
	char buf[128];
	ssize_t n = tprof_proc_read(path, buf, sizeof(buf));
	if (n <= 0)
		return 0;
	const char *p = buf;
	while (*p >= '0' && *p <= '9') /* size */
		p++;
	if (*p++ != ' ')
		return 0;
	uint64_t pages = 0;
	for (int k = 0; *p >= '0' && *p <= '9' && k < 16; p++, k++)
		pages = pages * 10 + (uint64_t)(*p - '0');
	return pages * rss_page;
}

/* The process's statm reads zeros once its main thread has called pthread_exit (a zombie without
 * memory): then a live thread's view is read. */
static uint64_t read_rss(void)
{
	uint64_t b = statm_rss(proc_file("statm"));
	uint32_t hwm = threads_hwm();
	for (uint32_t i = 0; !b && i < hwm; i++) {
		if (atomic_load_explicit(&shm->threads[i].state, memory_order_acquire) != TPROF_SLOT_ACTIVE ||
		    shm->threads[i].tid == tpid)
			continue;
		char path[96];
		snprintf(path, sizeof(path), "%stask/%d/statm", proc_dir, (int)shm->threads[i].tid);
		b = statm_rss(path);
	}
	return b;
}

/* Takes one sample; a failed read (or a resident size of 0, which no running process has) takes
 * none rather than a wrong one. */
static void rss_add(uint64_t tick, uint64_t bytes)
{
	if (tick < rss_last_tick)
		tick = rss_last_tick; /* the TSC of another core may be a few ticks behind */
	if (rss_count == TPROF_RSS_BLOCK_MAX)
		rss_flush();
	uint8_t *p = rss_buf + rss_len;
	if (rss_count == 0) { /* a block decodes on its own */
		rss_staged_ns = mono_ns();
		p = tprof_put_varint(p, tick);
		p = tprof_put_varint(p, bytes);
	} else {
		p = tprof_put_varint(p, tick - rss_last_tick);
		p = tprof_put_svarint(p, (int64_t)(bytes - rss_last_bytes));
	}
	rss_len = (size_t)(p - rss_buf);
	rss_count++;
	rss_last_tick = tick;
	rss_last_bytes = bytes;
}

static void rss_sample(void)
{
	uint64_t bytes = read_rss();
	if (bytes)
		rss_add(now_tick(), bytes);
}

static void write_header_and_info(void)
{
	uint8_t *h = out_buf + out_len;
	memcpy(h, TPROF_MAGIC, TPROF_MAGIC_LEN);
	tprof_put_u16(h + 8, TPROF_VERSION);
	tprof_put_u16(h + 10, TPROF_FILE_HEADER_LEN);
	tprof_put_u32(h + 12, 0);
	out_len += TPROF_FILE_HEADER_LEN;

	const char *exe = shm->exe, *cmdline = shm->cmdline;
	ssize_t en = shm->exe_len < sizeof(shm->exe) ? shm->exe_len : 0;
	ssize_t cn = shm->cmdline_len < sizeof(shm->cmdline) ? shm->cmdline_len : 0;
	uint64_t argc = 0;
	for (ssize_t i = 0; i < cn; i++)
		argc += cmdline[i] == 0;
	if (cn && cmdline[cn - 1] != 0)
		argc++; /* cut short: the last argument has no terminator */

	out_flush();
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, (uint64_t)tpid);
	p = tprof_put_varint(p, (uint64_t)shm->ppid);
	p = tprof_put_varint(p, (uint64_t)shm->clock);
	p = tprof_put_varint(p, shm->lossy ? TPROF_INFO_LOSSY : 0);
	p = tprof_put_varint(p, (uint64_t)sysconf(_SC_PAGESIZE));
	p = tprof_put_varint(p, sizeof(void *));
	p = tprof_put_varint(p, shm->start_realtime_ns);
	p = tprof_put_varint(p, shm->ring_entries);
	p = tprof_put_varint(p, shm->depth);
	p = put_string(p, exe, (size_t)en);
	p = tprof_put_varint(p, argc);
	for (ssize_t i = 0; i < cn;) {
		size_t len = strnlen(cmdline + i, (size_t)(cn - i));
		p = put_string(p, cmdline + i, len);
		i += (ssize_t)len + 1;
	}
	p = put_string(p, shm->malloc_owner, strnlen(shm->malloc_owner, sizeof(shm->malloc_owner)));
	block_end(TPROF_BLK_INFO, p);
	const char *a0 = cn ? cmdline : exe;
	const char *slash = strrchr(a0, '/');
	const char *base = slash ? slash + 1 : a0;
	size_t bl = strnlen(base, sizeof(prog_name) - 1);
	memcpy(prog_name, base, bl);
	prog_name[bl] = 0;
	/* the pair the process took as it registered: its events all come after (time zero) */
	write_clock_at(shm->start_tick, shm->start_mono_ns, shm->start_realtime_ns);
	write_clock();
}

/* MODULE and MODULE_END blocks for what the shared module table gained since the last call. */
static uint32_t modules_written;
static uint8_t module_end_written[TPROF_SHM_MODULES];

static void modules_update(void)
{
	uint32_t n = atomic_load_explicit(&shm->nmodules, memory_order_acquire);
	if (n > TPROF_SHM_MODULES)
		n = TPROF_SHM_MODULES;
	for (uint32_t i = 0; i < n; i++) {
		struct tprof_shm_module *m = &shm->modules[i];
		if (i >= modules_written) {
			uint8_t *p = block_begin();
			uint32_t plen = m->path_off + m->path_len <= TPROF_SHM_PATHS ? m->path_len : 0;
			uint8_t bl = m->build_id_len <= sizeof(m->build_id) ? m->build_id_len : 0;
			p = tprof_put_varint(p, i);
			p = tprof_put_varint(p, m->load_seq);
			p = tprof_put_varint(p, m->base);
			p = tprof_put_varint(p, m->start);
			p = tprof_put_varint(p, m->end);
			p = tprof_put_varint(p, bl);
			memcpy(p, m->build_id, bl);
			p += bl;
			p = put_string(p, shm->paths + (plen ? m->path_off : 0), plen);
			block_end(TPROF_BLK_MODULE, p);
			modules_written = i + 1;
		}
		uint64_t u = atomic_load_explicit(&m->unload_seq, memory_order_relaxed);
		if (u && !module_end_written[i]) {
			uint8_t *p = block_begin();
			p = tprof_put_varint(p, i);
			p = tprof_put_varint(p, u < m->load_seq ? m->load_seq : u);
			block_end(TPROF_BLK_MODULE_END, p);
			module_end_written[i] = 1;
		}
	}
}

/* A stack of the shared table, or 0 while it is not (yet) published. */
static int stack_get(uint32_t id, const uint64_t **frames, uint32_t *depth, int *truncated)
{
	if (id == 0 || id >= TPROF_STACK_IDS)
		return 0;
	uint64_t coff = atomic_load_explicit(&shm->stack_chunk_off[id / TPROF_STACK_CHUNK_IDS], memory_order_acquire);
	if (!coff || coff > TPROF_SHM_FILE_BYTES - (uint64_t)TPROF_STACK_CHUNK_IDS * sizeof(struct tprof_shm_stack))
		return 0;
	const struct tprof_shm_stack *e = view(coff + (uint64_t)(id % TPROF_STACK_CHUNK_IDS) * sizeof(*e), sizeof(*e));
	if (!e)
		return 0;
	uint16_t d = __atomic_load_n(&e->depth, __ATOMIC_ACQUIRE);
	if (d == 0 || d > TPROF_DEPTH_MAX || e->off > TPROF_SHM_FILE_BYTES - (uint64_t)d * 8)
		return 0;
	*frames = view(e->off, (uint64_t)d * 8);
	if (!*frames)
		return 0;
	*depth = d;
	*truncated = e->truncated;
	return 1;
}

static void stacks_flush(void)
{
	counted_flush(TPROF_BLK_STACKS, stk_buf, &stk_len, &stk_count);
}

/* Stages the definition of stack id unless this trace has it already. */
static void define_stack(uint32_t id)
{
	const uint64_t *frames;
	uint32_t depth;
	int truncated;
	if (id == 0 || stack_written[id >> 3] >> (id & 7) & 1 || !stack_get(id, &frames, &depth, &truncated))
		return;
	if (stk_len + 32 + (size_t)depth * 10 > STK_CAP)
		stacks_flush();
	uint8_t *p = stk_buf + stk_len;
	p = tprof_put_varint(p, id);
	p = tprof_put_varint(p, truncated ? TPROF_STACK_TRUNCATED : 0);
	p = tprof_put_varint(p, depth);
	uint64_t prev = 0;
	for (uint32_t i = 0; i < depth; i++) {
		uint64_t f = frames[i];
		p = i ? tprof_put_svarint(p, (int64_t)(f - prev)) : tprof_put_varint(p, f);
		prev = f;
	}
	stk_len = (size_t)(p - stk_buf);
	stk_count++;
	stack_written[id >> 3] |= (uint8_t)(1u << (id & 7));
}

/* A THREAD block: the thread's tid and name, as raw bytes (any byte but NUL). */
static void write_thread(struct wthread *t, const char *name, size_t n)
{
	if (n > sizeof(t->name))
		n = sizeof(t->name);
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, (uint64_t)t->tid);
	p = put_string(p, name, n);
	block_end(TPROF_BLK_THREAD, p);
	memcpy(t->name, name, n);
	t->name_len = (uint32_t)n;
	t->announced = 1;
}

/* The thread's name as the kernel has it now (comm, 15 bytes at most); -1 once the thread is gone. */
static ssize_t read_thread_name(pid_t tid, char *name, size_t cap)
{
	char path[64];
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "/proc/");
	tprof_sb_u64(&s, (uint64_t)tpid);
	tprof_sb_str(&s, "/task/");
	tprof_sb_u64(&s, (uint64_t)tid);
	tprof_sb_str(&s, "/comm");
	memcpy(path, s.b, s.n);
	path[s.n] = 0;
	ssize_t n = tprof_proc_read(path, name, cap);
	if (n > 0 && name[n - 1] == '\n')
		n--; /* the one the kernel adds: a name may end with a newline of its own */
	return n;
}

static void announce_thread(struct wthread *t)
{
	char name[32];
	ssize_t n = read_thread_name(t->tid, name, sizeof(name));
	write_thread(t, name, n < 0 ? 0 : (size_t)n);
}

/* A thread renamed since its THREAD block gets another one, with the new name: the latest names
 * it (docs/FORMAT.md). */
static void thread_renamed(struct wthread *t, const char *name, size_t n)
{
	if (t->announced && (n != t->name_len || memcmp(name, t->name, n) != 0))
		write_thread(t, name, n);
}

/* The name a thread had as it exited, when it could tell (core.c). */
static void exit_name_check(struct wthread *t)
{
	struct tprof_shm_thread *sl = SLOT(t);
	if (atomic_load_explicit(&sl->exit_named, memory_order_acquire))
		thread_renamed(t, sl->exit_name, strnlen(sl->exit_name, sizeof(sl->exit_name)));
}

/* Every live thread gets the name it has now (the writer looks every 200 ms, and at an exec; once
 * the process is gone only the names threads left as they exited remain). */
static void live_names_check(void)
{
	uint32_t hwm = threads_hwm();
	for (uint32_t i = 0; i < hwm; i++) {
		struct wthread *t = &wthreads[i];
		if (atomic_load_explicit(&shm->threads[i].state, memory_order_acquire) != TPROF_SLOT_ACTIVE ||
		    !t->announced)
			continue;
		if (atomic_load_explicit(&shm->threads[i].exit_named, memory_order_acquire)) {
			exit_name_check(t); /* exited, not yet reaped: its task and name may be gone */
			continue;
		}
		char name[32];
		ssize_t n = read_thread_name(t->tid, name, sizeof(name));
		if (n >= 0)
			thread_renamed(t, name, (size_t)n);
	}
}

static void write_lost(pid_t tid, uint64_t n)
{
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, (uint64_t)tid);
	p = tprof_put_varint(p, n);
	block_end(TPROF_BLK_LOST, p);
	lost_written += n;
}


/* Encodes up to n events of t's ring starting at counter `first` into one EVENTS block; returns how
 * many were consumed (a realloc pair is never split). Events without a tick at the end of the run
 * are left in the ring while their thread is active, until a measured event follows them. */
/* The full sequence number of a ring entry: ref is a value of the global counter read after the
 * entry was published, and entries never wait 2^35 events in a ring. */
static inline uint64_t ev_seq(uint64_t seq_kind, uint64_t ref)
{
	const uint64_t mask = (1ull << TPROF_EV_SEQ_BITS) - 1;
	return ref - ((ref - (seq_kind >> TPROF_EV_SEQ_SHIFT)) & mask);
}

/* Writes the EVENTS payload in ev_buf[0, len) as one block: compressed when that is smaller. The
 * payload is cut at the given offsets (its streams) and each part compressed as a zstd frame of
 * its own, so every stream gets entropy tables fitted to it; concatenated frames decompress as one. */
static void emit_events(uint32_t tid, size_t len, const size_t *cuts, int ncuts)
{
	uint8_t *p = block_begin();
	if (zctx) {
		uint8_t *z = tprof_put_varint(tprof_put_varint(p, tid), len), *zp = z;
		size_t cap = EV_CAP - (size_t)(z - p), from = 0;
		int ok = 1;
		for (int k = 0; k <= ncuts && ok; k++) {
			size_t to = k < ncuts ? cuts[k] : len;
			if (to - from < 256 && k < ncuts)
				continue; /* too small to stand alone: goes with the next part */
			size_t zn = ZSTD_compressCCtx(zctx, zp, cap - (size_t)(zp - z), ev_buf + from, to - from, 1);
			ok = !ZSTD_isError(zn);
			zp += ok ? zn : 0;
			from = to;
		}
		if (ok && (size_t)(zp - p) < len) {
			block_end(TPROF_BLK_ZEVENTS, zp);
			return;
		}
	}
	memcpy(p, ev_buf, len);
	block_end(TPROF_BLK_EVENTS, p + len);
}

/* Kernel calls and annotations met in a run go to a KERNELS block of their own (the heap records'
 * codec never sees them); names met on the way are defined first, in a NAMES block. */
#define KBUF_CAP (64u << 10)
#define KREC_MAX (8 + 5 * 10 + 10 + TPROF_KSHAPE_MAX * 10)
static uint8_t kbuf[KBUF_CAP];
static size_t klen;
static uint32_t kcount;
static uint64_t kprev_tick;
static uint8_t name_written[TPROF_NAME_IDS];

static void define_name(uint32_t id)
{
	if (id == 0 || id >= TPROF_NAME_IDS || name_written[id] ||
	    atomic_load_explicit(&shm->names[id].state, memory_order_acquire) != 2)
		return;
	const char *name = shm->names[id].name;
	size_t n = shm->names[id].len <= TPROF_NAME_MAX ? shm->names[id].len : TPROF_NAME_MAX;
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, 1);
	p = tprof_put_varint(p, TPROF_NAMES_ANNOT);
	p = tprof_put_varint(p, id);
	p = put_string(p, name, n);
	p = put_string(p, "", 0);
	block_end(TPROF_BLK_NAMES, p);
	name_written[id] = 1;
}

/* The op table as a NAMES block: the ids KERNELS call records use. */
static void write_op_names(void)
{
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, TPROF_NOPS - 1);
	for (unsigned op = 1; op < TPROF_NOPS; op++) {
		const struct tprof_op_info *in = tprof_op_info(op);
		size_t dl = strlen(in->shape_names);
		p = tprof_put_varint(p, TPROF_NAMES_OP);
		p = tprof_put_varint(p, op);
		p = put_string(p, in->name, strlen(in->name));
		p = put_string(p, in->shape_names + 1, dl >= 2 ? dl - 2 : 0); /* without the parentheses */
	}
	block_end(TPROF_BLK_NAMES, p);
}

/* Appends the kernel call or annotation at ring counter `at` to kbuf; returns the entries it took. */
static uint32_t encode_kernel(struct tprof_ring *r, uint32_t at, uint32_t avail, uint64_t ref)
{
	const struct tprof_ev *e = tprof_ring_at(r, at);
	unsigned kind = (unsigned)(e->seq_kind & 0xf);
	uint8_t *p = kbuf + klen;
	if (kind == TPROF_RING_ANNOT) {
		uint32_t id = (uint32_t)(e->seq_kind >> 4) & (TPROF_STACK_IDS - 1);
		define_name(id);
		*p++ = TPROF_KREC_ANNOT;
		p = tprof_put_varint(p, e->size);
		p = tprof_put_varint(p, ev_seq(e->seq_kind, ref));
		p = tprof_put_svarint(p, (int64_t)(e->tick - kprev_tick));
		kprev_tick = e->tick;
		p = tprof_put_varint(p, id);
		p = tprof_put_svarint(p, (int64_t)e->ptr);
		klen = (size_t)(p - kbuf);
		kcount++;
		return 1;
	}
	if (kind != TPROF_RING_KCALL)
		return 1; /* a stray shape entry: never produced */
	unsigned op = (unsigned)(e->seq_kind >> 4) & 0x3ff, ns = (unsigned)(e->seq_kind >> 14) & 0xf;
	int wide = (e->seq_kind >> 18) & 1;
	unsigned first = wide ? 2 : 4, per = wide ? 3 : 7;
	unsigned extra = ns > first ? (ns - first + per - 1) / per : 0;
	if (1 + extra > avail)
		return avail; /* cannot happen: entries are published together */
	int64_t s[16 + 7];
	if (wide) {
		s[0] = (int64_t)e->size;
		s[1] = (int64_t)e->ptr;
	} else {
		s[0] = (int32_t)(uint32_t)e->size;
		s[1] = (int32_t)(uint32_t)(e->size >> 32);
		s[2] = (int32_t)(uint32_t)e->ptr;
		s[3] = (int32_t)(uint32_t)(e->ptr >> 32);
	}
	for (unsigned k = 0; k < extra; k++) {
		const struct tprof_ev *x = tprof_ring_at(r, at + 1 + k);
		uint64_t w[7] = {x->seq_kind >> 32, x->tick, x->size, x->ptr, 0, 0, 0};
		if (!wide) {
			w[1] = x->tick & 0xffffffffu;
			w[2] = x->tick >> 32;
			w[3] = x->size & 0xffffffffu;
			w[4] = x->size >> 32;
			w[5] = x->ptr & 0xffffffffu;
			w[6] = x->ptr >> 32;
		} else {
			w[0] = x->tick;
			w[1] = x->size;
			w[2] = x->ptr;
		}
		for (unsigned i = 0; i < per && first + k * per + i < ns; i++)
			s[first + k * per + i] = wide ? (int64_t)w[i] : (int64_t)(int32_t)(uint32_t)w[i];
	}
	struct tprof_op_cost cost = tprof_op_cost(op, s, ns);
	*p++ = TPROF_KREC_CALL;
	p = tprof_put_varint(p, op);
	p = tprof_put_svarint(p, (int64_t)(e->tick - kprev_tick));
	kprev_tick = e->tick;
	p = tprof_put_varint(p, e->seq_kind >> TPROF_RING_KDUR_SHIFT);
	p = tprof_put_varint(p, cost.flops);
	p = tprof_put_varint(p, cost.bytes);
	p = tprof_put_varint(p, ns);
	for (unsigned i = 0; i < ns; i++)
		p = tprof_put_svarint(p, s[i]);
	klen = (size_t)(p - kbuf);
	kcount++;
	return 1 + extra;
}

static void kernels_flush(uint32_t tid)
{
	if (!kcount)
		return;
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, tid);
	p = tprof_put_varint(p, kcount);
	memcpy(p, kbuf, klen);
	block_end(TPROF_BLK_KERNELS, p + klen);
	klen = 0;
	kcount = 0;
	kprev_tick = 0;
}

/* A heap entry whose tick was measured: the end of a run of unmeasured ones. */
static inline int measured_heap(const struct tprof_ev *e)
{
	unsigned k = (unsigned)(e->seq_kind & 0xf);
	return e->tick != 0 && (k <= TPROF_EV_KIND_MAX || k == TPROF_RING_REALLOC_TAIL);
}

static uint32_t encode_run(struct wthread *t, uint32_t first, uint32_t n, int hold, uint64_t ref)
{
	static uint8_t streams[TPROF_NSTREAMS][BLOCK_TARGET + 4096];
	static struct tprof_rec_encoder enc;
	struct tprof_ring *r = t->ring;
	uint8_t *out[TPROF_NSTREAMS];
	for (int s = 0; s < TPROF_NSTREAMS; s++)
		out[s] = streams[s];
	tprof_rec_encoder_init(&enc, t->last_seq, t->last_tick);
	uint32_t i = 0, recs = 0;
	uint32_t next = 0; /* index of the next measured event, when next > i */
	size_t bytes = 0;
	int in_run = 0; /* the last record had no tick: its run must end, measured, in this block */
	while (i < n && (in_run || (bytes < BLOCK_TARGET && recs < (1u << 21) - 64 && klen < KBUF_CAP - KREC_MAX))) {
		const struct tprof_ev *e = tprof_ring_at(r, first + i);
		__builtin_prefetch(tprof_ring_at(r, first + i + 8)); /* lines come from another core */
		unsigned kk = (unsigned)(e->seq_kind & 0xf);
		if (kk >= TPROF_RING_KCALL && kk <= TPROF_RING_ANNOT) {
			if (klen >= KBUF_CAP - KREC_MAX)
				kernels_flush((uint32_t)t->tid); /* only inside a run of unmeasured heap events */
			i += encode_kernel(r, first + i, n - i, ref);
			continue;
		}
		struct tprof_rec rec = {
			.kind = (unsigned)(e->seq_kind & 0xf),
			.stack = (uint32_t)(e->seq_kind >> 4) & (TPROF_STACK_IDS - 1),
			.seq = ev_seq(e->seq_kind, ref),
			.tick = e->tick,
			.size = e->size,
			.ptr = e->ptr,
		};
		if (rec.kind == 0 || rec.kind > TPROF_EV_KIND_MAX) {
			i++; /* never produced; skip defensively */
			continue;
		}
		if (rec.tick == 0) {
			if (next <= i) {
				next = i + 1;
				while (next < n && !measured_heap(tprof_ring_at(r, first + next)))
					next++;
			}
			if (next < n)
				rec.no_tick = 1; /* the reader interpolates up to the measured one at next */
			else if (hold)
				break;
			else
				rec.tick = enc.st.tick; /* idle since: no later measurement will come */
		}
		if (tprof_kind_is_realloc(rec.kind)) {
			if (i + 1 >= n)
				break; /* not possible: pairs are published together */
			const struct tprof_ev *e2 = tprof_ring_at(r, first + i + 1);
			rec.old_ptr = e2->ptr;
			rec.seq2 = ev_seq(e2->seq_kind, ref);
			rec.tick2 = e2->tick;
			i++;
		}
		if (rec.stack)
			define_stack(rec.stack);
		tprof_rec_encode(out, &enc, &rec);
		in_run = rec.no_tick;
		i++;
		recs++;
		if ((recs & 63) == 0 || in_run == 0) {
			bytes = 0;
			for (int s = 0; s < TPROF_NSTREAMS; s++)
				bytes += (size_t)(out[s] - streams[s]);
		}
	}
	if (recs) {
		uint8_t *p = ev_buf;
		p = tprof_put_varint(p, (uint64_t)t->tid);
		p = tprof_put_varint(p, recs);
		p = tprof_put_varint(p, t->last_seq);
		p = tprof_put_varint(p, t->last_tick);
		for (int s = 0; s < TPROF_NSTREAMS; s++)
			p = tprof_put_varint(p, (uint64_t)(out[s] - streams[s]));
		size_t cuts[TPROF_NSTREAMS];
		for (int s = 0; s < TPROF_NSTREAMS; s++) {
			size_t len = (size_t)(out[s] - streams[s]);
			memcpy(p, streams[s], len);
			p += len;
			cuts[s] = (size_t)(p - ev_buf);
		}
		stacks_flush();
		emit_events((uint32_t)t->tid, (size_t)(p - ev_buf), cuts, TPROF_NSTREAMS - 1);
	}
	kernels_flush((uint32_t)t->tid);
	t->last_seq = enc.st.seq;
	t->last_tick = enc.st.tick;
	events_written += recs;
	return i;
}

static uint32_t busiest; /* most events found waiting in one ring during the last drain_all */

/* Drains t's ring completely; returns the number of ring entries consumed. */
static uint64_t drain_thread(struct wthread *t)
{
	struct tprof_ring *r = t->ring;
	uint64_t total = 0;
	uint32_t first, n;
	n = tprof_ring_available(r, &first);
	if (n > busiest)
		busiest = n;
	/* A thread whose ring has not moved for a few milliseconds is idle: write all it has. (Not
	 * moved since the last pass is not enough: passes come every 100 us while rings fill fast,
	 * and a busy thread the scheduler held off for that long would be written in small blocks,
	 * which compress badly and cost the reader per block.) */
	uint64_t now = mono_ns();
	if (first + n != t->seen_head)
		t->moved_ns = now;
	t->seen_head = first + n;
	int hold = !flushing && n != 0 && now - t->moved_ns < 5000000u;
	/* A busy thread's events wait until they fill a good block (a quarter of the ring, where the
	 * producer wakes us) or have waited 100 ms: small blocks compress badly. */
	if (hold && n < (r->mask + 1) / 4 && now - t->last_write_ns < 100000000u)
		return 0;
	t->last_write_ns = now;
	while ((n = tprof_ring_available(r, &first)) != 0) {
		if (total && hold && n < (r->mask + 1) / 4)
			break; /* the rest arrived while we wrote: it waits for a full block too */
		if (!t->announced)
			announce_thread(t);
		uint64_t ref = atomic_load(&shm->seq); /* after the head: above every published seq */
		uint32_t done = encode_run(t, first, n, hold, ref);
		tprof_ring_consume(r, done);
		total += done;
		if (atomic_exchange(&r->waiting, 0))
			tprof_futex_wake(&r->tail);
		if (done == 0)
			break;
	}
	uint64_t lost = atomic_load_explicit(&r->lost, memory_order_relaxed);
	if (lost != t->lost_reported) {
		write_lost(t->tid, lost - t->lost_reported);
		t->lost_reported = lost;
	}
	return total;
}

/* The slot's ring in our mapping; NULL when its offset is not a ring of the file. */
static struct tprof_ring *ring_of(struct wthread *t)
{
	struct tprof_shm_thread *sl = SLOT(t);
	uint64_t off = sl->ring_off;
	if (off == t->ring_off && t->ring)
		return t->ring;
	uint32_t entries = sl->ring_entries;
	if (!off || entries < 64 || entries & (entries - 1) ||
	    off > TPROF_SHM_FILE_BYTES - tprof_ring_bytes(entries))
		return NULL;
	struct tprof_ring *r = view(off, tprof_ring_bytes(entries));
	if (!r)
		return NULL;
	if (r->mask != entries - 1)
		return NULL;
	t->ring = r;
	t->ring_off = off;
	return r;
}

/* A slot newly taken by a thread: forget what the writer knew of the slot's previous thread. */
static void slot_taken(struct wthread *t, pid_t tid)
{
	t->tid = tid;
	t->announced = 0;
	t->last_seq = t->last_tick = 0;
	t->lost_reported = 0;
	t->moved_ns = t->last_write_ns = 0;
}

/* A thread that the kernel no longer knows has published its last event: drain, record its end,
 * free the slot for reuse. */
static void reap_dead_threads(void)
{
	uint32_t hwm = threads_hwm();
	for (uint32_t i = 0; i < hwm; i++) {
		struct wthread *t = &wthreads[i];
		struct tprof_shm_thread *sl = &shm->threads[i];
		if (atomic_load_explicit(&sl->state, memory_order_acquire) != TPROF_SLOT_ACTIVE || !t->ring)
			continue;
		if (syscall(SYS_tgkill, tpid, t->tid, 0) == 0 || errno != ESRCH)
			continue;
		int was = flushing;
		flushing = 1;
		drain_thread(t);
		flushing = was;
		exit_name_check(t);
		if (t->announced) {
			uint8_t *p = block_begin();
			p = tprof_put_varint(p, (uint64_t)t->tid);
			block_end(TPROF_BLK_THREAD_END, p);
		}
		t->announced = 0;
		t->lost_reported = 0;
		atomic_store(&t->ring->lost, 0);
		atomic_store_explicit(&sl->state, TPROF_SLOT_FREE, memory_order_release);
	}
}

static uint64_t drain_all(void)
{
	uint64_t total = 0;
	busiest = 0;
	uint32_t hwm = threads_hwm();
	for (uint32_t i = 0; i < hwm; i++) {
		struct wthread *t = &wthreads[i];
		struct tprof_shm_thread *sl = &shm->threads[i];
		if (atomic_load_explicit(&sl->state, memory_order_acquire) != TPROF_SLOT_ACTIVE)
			continue;
		if (sl->tid != t->tid) {
			slot_taken(t, sl->tid);
			announce_thread(t); /* now: the thread may be gone by its first write */
		}
		if (ring_of(t))
			total += drain_thread(t);
	}
	static uint64_t global_reported;
	uint64_t g = atomic_load(&shm->lost_global);
	if (g != global_reported) {
		write_lost(0, g - global_reported);
		global_reported = g;
	}
	return total;
}

static uint64_t stacks_count(void)
{
	uint32_t n = atomic_load(&shm->stack_next_id);
	return n == 0 ? 0 : n > TPROF_STACK_IDS ? TPROF_STACK_IDS - 1 : n - 1;
}

static void write_end(int reason, int value, unsigned flags)
{
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, (uint64_t)reason);
	p = tprof_put_varint(p, (uint64_t)(uint32_t)value);
	p = tprof_put_varint(p, atomic_load(&shm->seq));
	p = tprof_put_varint(p, events_written);
	p = tprof_put_varint(p, lost_written);
	p = tprof_put_varint(p, stacks_count());
	p = tprof_put_varint(p, atomic_load(&shm->stack_dropped));
	p = tprof_put_varint(p, flags);
	block_end(TPROF_BLK_END, p);
}

static const char *end_words(int reason, int value, char *buf, size_t cap)
{
	switch (reason) {
	case TPROF_END_EXIT:
		snprintf(buf, cap, "exited with status %d", value);
		break;
	case TPROF_END__EXIT:
		snprintf(buf, cap, "exited with status %d (_exit)", value);
		break;
	case TPROF_END_QUICK_EXIT:
		snprintf(buf, cap, "exited with status %d (quick_exit)", value);
		break;
	case TPROF_END_SIGNAL:
		snprintf(buf, cap, "killed by signal %d (%s)", value, strsignal(value));
		break;
	case TPROF_END_EXEC:
		snprintf(buf, cap, "exec'd");
		break;
	default:
		snprintf(buf, cap, "ended without an exit call");
		break;
	}
	return buf;
}

static void report_path(int reason, int value)
{
	if (shm->quiet || !tprof_recorder_stderr_ok(tpid))
		return;
	char how[96];
	fprintf(stderr, "tprof: %s (pid %d) %s: %llu events%s%s, %s %s\n", prog_name, (int)tpid,
		end_words(reason, value, how, sizeof(how)), (unsigned long long)events_written,
		lost_written ? ", LOST " : "", lost_written ? "some" : "",
		out_failed ? "trace incomplete:" : "trace written to", shm->trace_path);
	if (shm->debug) {
		struct timespec cpu;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
		fprintf(stderr, "tprof: recorder CPU for pid %d: %llu us\n", (int)tpid,
			(unsigned long long)(((uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec) / 1000));
	}
}

/* A process that did not say how it ended was killed, or made the raw exit system call: only its
 * zombie tells which, and its parent may reap it at once. So a thread of the writer waits on the
 * pidfd alone and reads the zombie the moment it appears; it wins that race most of the time, and
 * always under tprof record, which reaps its child only after the child's trace is written. */
static _Atomic int zombie_known, zombie_status;
static _Atomic uint32_t process_gone;
static uint64_t gone_clock[3]; /* tick, monotonic and real-time ns when the end was seen */
static int watch_pidfd;
static uint64_t watch_starttime;

static void *watch_exit(void *arg)
{
	(void)arg;
	struct pollfd pf = {watch_pidfd, POLLIN, 0};
	while (poll(&pf, 1, -1) < 0 && errno == EINTR)
		;
	/* the trace's last clock pair: the end of the process, not the writer's last write */
	gone_clock[0] = now_tick();
	gone_clock[1] = mono_ns();
	gone_clock[2] = real_ns();
	int st;
	if (tprof_zombie_status(tpid, watch_starttime, &st) == 0) {
		atomic_store(&zombie_status, st);
		atomic_store(&zombie_known, 1);
	}
	atomic_store(&process_gone, 1);
	atomic_fetch_add(&shm->kick, 1);
	tprof_futex_wake(&shm->kick);
	return NULL;
}

/* How the process ended: what it said itself (exit status, _exit, quick_exit), an exec, or what its
 * zombie tells (/proc/PID/stat, field 52, while its parent has not reaped it): a signal, or an exit
 * status without an exit call (the raw system call). Else it vanished. */
static void end_of(int exec_seen, uint64_t starttime, int *reason, int *value)
{
	*value = 0;
	if (exec_seen) {
		*reason = TPROF_END_EXEC;
		return;
	}
	int r = atomic_load(&shm->end_reason);
	if (r == TPROF_END_EXIT || r == TPROF_END__EXIT || r == TPROF_END_QUICK_EXIT) {
		*reason = r;
		*value = atomic_load(&shm->end_value);
		return;
	}
	if (atomic_load(&shm->exec_pending)) {
		*reason = TPROF_END_EXEC;
		return;
	}
	int status = zombie_status;
	if (zombie_known || tprof_zombie_status(tpid, starttime, &status) == 0) {
		if (WIFSIGNALED(status)) {
			*reason = TPROF_END_SIGNAL;
			*value = WTERMSIG(status);
			return;
		}
		if (WIFEXITED(status)) {
			*reason = TPROF_END__EXIT;
			*value = WEXITSTATUS(status);
			return;
		}
	}
	*reason = TPROF_END_VANISHED;
}

/* The end of a trace: everything in the rings, the modules, a last clock pair, then END. */
static void finish_trace(int exec_seen, uint64_t starttime, int alive)
{
	flushing = 1;
	drain_all();
	if (alive)
		live_names_check();
	uint32_t hwm = threads_hwm();
	unsigned flags = 0;
	for (uint32_t i = 0; i < hwm; i++) {
		if (atomic_load(&shm->threads[i].state) != TPROF_SLOT_ACTIVE)
			continue;
		exit_name_check(&wthreads[i]);
		if (atomic_load(&shm->threads[i].inflight))
			flags |= TPROF_ENDF_INFLIGHT;
	}
	modules_update();
	stacks_flush();
	uint64_t xb = atomic_load(&shm->exit_rss_bytes);
	if (xb && shm->rss_interval_ms) /* taken by the process on its way out */
		rss_add(atomic_load(&shm->exit_rss_tick), xb);
	rss_flush();
	if (atomic_load(&process_gone) && gone_clock[1])
		write_clock_at(gone_clock[0], gone_clock[1], gone_clock[2]);
	else
		write_clock();
	int reason, value;
	end_of(exec_seen, starttime, &reason, &value);
	write_end(reason, value, flags);
	out_flush();
	report_path(reason, value);
	close(trace_fd);
	trace_fd = -1;
}

static int map_shm(int memfd)
{
	shm_fd = memfd;
	shm = view(0, sizeof(*shm));
	return shm ? 0 : -1;
}

/* Waits for the process to fill in the header (it does right after the recorder's answer). */
static int wait_header(int pidfd)
{
	for (int k = 0; k < 100000; k++) {
		if (__atomic_load_n(&shm->magic, __ATOMIC_ACQUIRE) == TPROF_SHM_MAGIC)
			return shm->version == TPROF_SHM_VERSION && shm->bytes == sizeof(*shm) ? 0 : -1;
		struct pollfd pf = {pidfd, POLLIN, 0};
		if (pidfd >= 0 && poll(&pf, 1, 0) == 1)
			return -1;
		usleep(100);
	}
	return -1;
}

int tprof_writer_run(const struct tprof_writer_args *a)
{
	tpid = a->pid;
	trace_fd = a->tracefd;
	snprintf(proc_dir, sizeof(proc_dir), "/proc/%d/", (int)tpid);
	int pidfd = (int)syscall(SYS_pidfd_open, (long)tpid, 0L);
	uint64_t st;
	if (pidfd >= 0 && (tprof_proc_starttime(tpid, &st) != 0 || st != a->starttime)) {
		close(pidfd); /* gone already, and its pid taken by another process */
		pidfd = -1;
	}
	if (map_shm(a->memfd) != 0) {
		fprintf(stderr, "tprof: cannot map the shared memory of pid %d: %s; its trace is empty\n",
			(int)tpid, strerror(errno));
		return 1;
	}
	if (wait_header(pidfd) != 0) {
		fprintf(stderr, "tprof: pid %d ended before it could be traced; its trace is empty\n", (int)tpid);
		return 1;
	}
	clock_is_tsc = shm->clock == TPROF_CLOCK_TSC;
	stack_written = mmap(NULL, TPROF_STACK_IDS / 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			     -1, 0);
	if (stack_written == MAP_FAILED)
		return 1;
	if (shm->compress) {
		size_t ws = ZSTD_estimateCCtxSize(1);
		void *m = mmap(NULL, ws, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED)
			zctx = ZSTD_initStaticCCtx(m, ws);
	}
	rss_page = (uint64_t)sysconf(_SC_PAGESIZE);
	write_header_and_info();
	write_op_names();
	if (shm->rss_interval_ms && shm->start_rss_bytes) /* taken by the process at start-up */
		rss_add(shm->start_rss_tick, shm->start_rss_bytes);
	modules_update();
	out_flush();

	uint64_t last_clock = mono_ns(), last_reap = last_clock;
	uint64_t rss_every = (uint64_t)shm->rss_interval_ms * 1000000u;
	uint64_t rss_due = last_clock + rss_every;
	int exec_seen = 0, gone = pidfd < 0;
	pthread_t watcher;
	watch_pidfd = pidfd;
	watch_starttime = a->starttime;
	if (pidfd >= 0 && pthread_create(&watcher, NULL, watch_exit, NULL) != 0)
		gone = 1; /* cannot watch: write what there is */
	for (;;) {
		atomic_fetch_add_explicit(&shm->epoch, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&shm->heartbeat, 1, memory_order_relaxed);
		modules_update();
		uint64_t n = drain_all();
		uint64_t now = mono_ns();
		int reaped = now - last_reap >= 200000000u;
		if (reaped) {
			reap_dead_threads();
			live_names_check();
			last_reap = now;
		}
		if (rss_every && now >= rss_due) {
			rss_sample();
			rss_due += rss_every;
			if (rss_due <= now)
				rss_due = now + rss_every; /* late (a long drain): keep the spacing, skip the missed */
		}
		if (rss_count && now - rss_staged_ns >= RSS_STAGE_NS)
			rss_flush();
		if (now - last_clock >= 1000000000u) {
			write_clock();
			last_clock = now;
		}
		struct pollfd pf = {a->exec_fd, POLLIN, 0};
		if (poll(&pf, 1, 0) > 0) /* the same process registered again: it exec'd */
			exec_seen = 1;
		if (atomic_load(&process_gone))
			gone = 1;
		if (gone || exec_seen)
			break;
		/* Poll adaptively: soon again while rings fill fast, rarely otherwise. A ring holding a
		 * few events is held anyway (see drain_thread) and its producer wakes us each time its
		 * head passes a quarter mark. At most 10 ms: the process takes a recorder that has not
		 * beaten for 2 s for gone. */
		uint32_t cap = shm->ring_entries;
		if (busiest < (cap >> 1)) {
			long nap = busiest >= (cap >> 4) ? 100000 : 10000000;
			if (rss_every) {
				uint64_t t = mono_ns();
				if (rss_due <= t)
					nap = 0;
				else if (rss_due - t < (uint64_t)nap)
					nap = (long)(rss_due - t);
			}
			if (n == 0)
				out_flush();
			uint32_t k = atomic_load(&shm->kick);
			atomic_store(&shm->writer_sleeping, 1);
			if (nap)
				tprof_futex_wait(&shm->kick, k, nap);
			atomic_store(&shm->writer_sleeping, 0);
		}
	}
	/* An exec: the old image's threads are gone once the new image runs its first code. */
	finish_trace(exec_seen, a->starttime, !gone && !exec_seen);
	return 0;
}
