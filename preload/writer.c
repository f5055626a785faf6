/* The writer thread of libtprof.so: drains every thread's ring, encodes the events as compact
 * records (docs/FORMAT.md), and appends checksummed blocks to the trace file. It also owns the file
 * (exclusive creation), clock calibration, thread appearance and death, and the final END block.
 * It is the only consumer of the rings; it never records its own allocations. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* static contexts: exported by libzstd 1.5, declared here */
#include <zstd.h>

#include "preload.h"
#include "sys.h"
#include "tprof_ops.h"

_Atomic uint32_t tprof_writer_sleeping;
_Alignas(64) _Atomic uint32_t tprof_epoch;
static int flushing; /* final or exec flush, or a dead thread: write everything, hold nothing back */
_Atomic int tprof_writer_running;
char tprof_trace_path[4096];

static _Atomic uint32_t kick_word;
static _Atomic uint32_t flush_req, flush_done;
static int req_reason, req_value, req_final;
static int trace_fd = -1;
static pthread_t writer_tid;
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
static uint8_t *stack_written; /* per stack id: already defined in this trace */
static ZSTD_CCtx *zctx;        /* static context in mmap'd memory: compressing never allocates */
static _Atomic uint32_t modules_req, modules_done;
static size_t out_len;
static int out_failed; /* a write failed: stop writing, keep draining so producers never block */
static dev_t trace_dev; /* identity of the trace file, to notice a program that closed our */
static ino_t trace_ino; /* descriptor and reused its number for a file of its own */

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
	struct stat st;
	if (out_len && !out_failed &&
	    (fstat(trace_fd, &st) != 0 || st.st_dev != trace_dev || st.st_ino != trace_ino)) {
		out_failed = 1;
		errno = EBADF; /* never write into a descriptor that is no longer ours */
		struct tprof_sbuf s = {.n = 0};
		tprof_sb_str(&s, "tprof: the program closed the descriptor of ");
		tprof_sb_str(&s, tprof_trace_path);
		tprof_sb_str(&s, "; the trace ends here\n");
		tprof_sb_emit(&s);
	}
	if (out_len && !out_failed && tprof_write_all(trace_fd, out_buf, out_len) != 0) {
		out_failed = 1;
		struct tprof_sbuf s = {.n = 0};
		tprof_sb_str(&s, "tprof: writing ");
		tprof_sb_str(&s, tprof_trace_path);
		tprof_sb_str(&s, " failed: ");
		tprof_sb_str(&s, strerror(errno));
		tprof_sb_str(&s, "; the trace ends here\n");
		tprof_sb_emit(&s);
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

static ssize_t read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	while (n < cap) {
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	return (ssize_t)n;
}

/* Reads a /proc file into buf (NUL-terminated, at most cap - 1 bytes); returns its length or -1.
 * The program may close descriptors at any moment (daemons close them all, then open their own
 * files), so the number we opened may stop being ours: the file is read with pread, which never
 * takes a pipe's or socket's data nor moves a file's offset, and closed only if it is still the
 * file we opened. errno is kept: this also runs on the program's threads (the constructor, a fork
 * child, the final flush). */
ssize_t tprof_proc_read(const char *path, char *buf, size_t cap)
{
	int saved = errno;
	ssize_t n = -1;
	struct stat a, b;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &a) != 0) /* a failed fstat: the number is closed already */
		goto out;
	do
		n = pread(fd, buf, cap - 1, 0);
	while (n < 0 && errno == EINTR);
	if (fstat(fd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		n = -1;
		goto out;
	}
	close(fd);
	if (n >= 0)
		buf[n] = 0;
out:
	errno = saved;
	return n;
}

/* The number of tasks of this process (/proc/self/stat), zombies included, and the state letter of
 * its leader (the main thread: 'Z' once it has called pthread_exit while other threads run); -1
 * when unknown. */
int tprof_proc_threads(char *leader_state)
{
	char buf[1024];
	if (tprof_proc_read("/proc/self/stat", buf, sizeof(buf)) <= 0)
		return -1;
	char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	if (leader_state)
		*leader_state = p[2];
	/* after ")": state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime
	 * stime cutime cstime priority nice num_threads */
	int field = 0;
	for (p++; *p; p++) {
		if (*p == ' ' && ++field == 18)
			return atoi(p + 1);
	}
	return -1;
}

static void write_clock(void)
{
	uint8_t *p = block_begin(), *s = p;
	p = tprof_put_varint(p, tprof_now());
	p = tprof_put_varint(p, mono_ns());
	p = tprof_put_varint(p, real_ns());
	block_end(TPROF_BLK_CLOCK, p);
	(void)s;
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
static uint64_t read_rss(void)
{
	char buf[128];
	/* the thread's own view: /proc/self reads zeros once the main thread has exited */
	ssize_t n = tprof_proc_read("/proc/thread-self/statm", buf, sizeof(buf));
	if (n < 0)
		n = tprof_proc_read("/proc/self/statm", buf, sizeof(buf));
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

/* Takes one sample; a failed read (or a resident size of 0, which no running process has) takes
 * none rather than a wrong one. */
static void rss_sample(void)
{
	uint64_t bytes = read_rss();
	if (!bytes)
		return;
	uint64_t tick = tprof_now();
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

static void write_header_and_info(void)
{
	uint8_t *h = out_buf + out_len;
	memcpy(h, TPROF_MAGIC, TPROF_MAGIC_LEN);
	tprof_put_u16(h + 8, TPROF_VERSION);
	tprof_put_u16(h + 10, TPROF_FILE_HEADER_LEN);
	tprof_put_u32(h + 12, 0);
	out_len += TPROF_FILE_HEADER_LEN;

	static char exe[4096], cmdline[32768];
	ssize_t en = readlink("/proc/self/exe", exe, sizeof(exe));
	if (en < 0)
		en = 0;
	ssize_t cn = read_file("/proc/self/cmdline", cmdline, sizeof(cmdline));
	if (cn < 0)
		cn = 0;
	uint64_t argc = 0;
	for (ssize_t i = 0; i < cn; i++)
		argc += cmdline[i] == 0;
	if (cn && cmdline[cn - 1] != 0)
		argc++; /* cut short: the last argument has no terminator */

	out_flush();
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, (uint64_t)getpid());
	p = tprof_put_varint(p, (uint64_t)getppid());
	p = tprof_put_varint(p, (uint64_t)tprof_cfg.clock);
	p = tprof_put_varint(p, tprof_cfg.lossy ? TPROF_INFO_LOSSY : 0);
	p = tprof_put_varint(p, (uint64_t)sysconf(_SC_PAGESIZE));
	p = tprof_put_varint(p, sizeof(void *));
	p = tprof_put_varint(p, real_ns());
	p = tprof_put_varint(p, tprof_cfg.ring_entries);
	p = tprof_put_varint(p, tprof_cfg.depth);
	p = put_string(p, exe, (size_t)en);
	p = tprof_put_varint(p, argc);
	for (ssize_t i = 0; i < cn;) {
		size_t len = strnlen(cmdline + i, (size_t)(cn - i));
		p = put_string(p, cmdline + i, len);
		i += (ssize_t)len + 1;
	}
	block_end(TPROF_BLK_INFO, p);
	write_clock();
}

/* MODULE and MODULE_END blocks for what the module table gained since the last call. */
static void write_modules(void)
{
	uint32_t n;
	struct tprof_module_rec *m = tprof_modules(&n);
	for (uint32_t i = 0; i < n; i++) {
		if (!m[i].written) {
			uint8_t *p = block_begin();
			size_t plen = strnlen(m[i].path, 4096);
			p = tprof_put_varint(p, m[i].id);
			p = tprof_put_varint(p, m[i].load_seq);
			p = tprof_put_varint(p, m[i].base);
			p = tprof_put_varint(p, m[i].start);
			p = tprof_put_varint(p, m[i].end);
			p = tprof_put_varint(p, m[i].build_id_len);
			memcpy(p, m[i].build_id, m[i].build_id_len);
			p += m[i].build_id_len;
			p = put_string(p, m[i].path, plen);
			block_end(TPROF_BLK_MODULE, p);
			m[i].written = 1;
		}
		if (m[i].unload_seq && !m[i].unload_written) {
			uint8_t *p = block_begin();
			p = tprof_put_varint(p, m[i].id);
			p = tprof_put_varint(p, m[i].unload_seq);
			block_end(TPROF_BLK_MODULE_END, p);
			m[i].unload_written = 1;
		}
	}
}

static void modules_update(int force)
{
	if (tprof_modules_scan(force) || force)
		write_modules();
}

static void stacks_flush(void)
{
	counted_flush(TPROF_BLK_STACKS, stk_buf, &stk_len, &stk_count);
}

/* Stages the definition of stack id unless this trace has it already. */
static void define_stack(uint32_t id)
{
	if (id == 0 || stack_written[id])
		return;
	struct tprof_stack_ref s;
	if (!tprof_stack_get(id, &s))
		return;
	if (stk_len + 32 + (size_t)s.depth * 10 > STK_CAP)
		stacks_flush();
	uint8_t *p = stk_buf + stk_len;
	p = tprof_put_varint(p, id);
	p = tprof_put_varint(p, s.truncated ? TPROF_STACK_TRUNCATED : 0);
	p = tprof_put_varint(p, s.depth);
	uint64_t prev = 0;
	for (uint32_t i = 0; i < s.depth; i++) {
		p = i ? tprof_put_svarint(p, (int64_t)(s.frames[i] - prev)) : tprof_put_varint(p, s.frames[i]);
		prev = s.frames[i];
	}
	stk_len = (size_t)(p - stk_buf);
	stk_count++;
	stack_written[id] = 1;
}

/* A THREAD block: the thread's tid and name, as raw bytes (any byte but NUL). */
static void write_thread(struct tprof_thread *t, const char *name, size_t n)
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
	tprof_sb_str(&s, "/proc/self/task/");
	tprof_sb_u64(&s, (uint64_t)tid);
	tprof_sb_str(&s, "/comm");
	memcpy(path, s.b, s.n);
	path[s.n] = 0;
	ssize_t n = tprof_proc_read(path, name, cap);
	if (n > 0 && name[n - 1] == '\n')
		n--; /* the one the kernel adds: a name may end with a newline of its own */
	return n;
}

static void announce_thread(struct tprof_thread *t)
{
	char name[32];
	ssize_t n = read_thread_name(t->tid, name, sizeof(name));
	write_thread(t, name, n < 0 ? 0 : (size_t)n);
}

/* A thread renamed since its THREAD block gets another one, with the new name: the latest names
 * it (docs/FORMAT.md). */
static void thread_renamed(struct tprof_thread *t, const char *name, size_t n)
{
	if (t->announced && (n != t->name_len || memcmp(name, t->name, n) != 0))
		write_thread(t, name, n);
}

/* The name a thread had as it exited, when it could tell (core.c). */
static void exit_name_check(struct tprof_thread *t)
{
	if (atomic_load_explicit(&t->exit_named, memory_order_acquire))
		thread_renamed(t, t->exit_name, strnlen(t->exit_name, sizeof(t->exit_name)));
}

/* At the end of the trace: every thread still known gets the name it has now. */
static void live_names_check(void)
{
	uint32_t hwm = atomic_load(&tprof_threads_hwm);
	for (uint32_t i = 0; i < hwm; i++) {
		struct tprof_thread *t = &tprof_threads[i];
		if (atomic_load_explicit(&t->state, memory_order_acquire) != TPROF_SLOT_ACTIVE || !t->announced)
			continue;
		if (atomic_load_explicit(&t->exit_named, memory_order_acquire)) {
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
	char name[TPROF_NAME_MAX + 1];
	int n;
	if (id == 0 || id >= TPROF_NAME_IDS || name_written[id] || (n = tprof_name_get(id, name)) < 0)
		return;
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, 1);
	p = tprof_put_varint(p, TPROF_NAMES_ANNOT);
	p = tprof_put_varint(p, id);
	p = put_string(p, name, (size_t)n);
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

static uint32_t encode_run(struct tprof_thread *t, uint32_t first, uint32_t n, int hold, uint64_t ref)
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
static uint64_t drain_thread(struct tprof_thread *t)
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
		uint64_t ref = atomic_load(&tprof_seq); /* after the head: above every published seq */
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

/* A thread that the kernel no longer knows has published its last event: drain, record its end,
 * free the slot for reuse. */
static void reap_dead_threads(void)
{
	uint32_t hwm = atomic_load(&tprof_threads_hwm);
	pid_t pid = getpid();
	for (uint32_t i = 0; i < hwm; i++) {
		struct tprof_thread *t = &tprof_threads[i];
		if (atomic_load_explicit(&t->state, memory_order_acquire) != TPROF_SLOT_ACTIVE)
			continue;
		if (syscall(SYS_tgkill, pid, t->tid, 0) == 0 || errno != ESRCH)
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
		atomic_store_explicit(&t->state, TPROF_SLOT_FREE, memory_order_release);
	}
}

static uint64_t drain_all(void)
{
	uint64_t total = 0;
	busiest = 0;
	uint32_t hwm = atomic_load(&tprof_threads_hwm);
	for (uint32_t i = 0; i < hwm; i++) {
		struct tprof_thread *t = &tprof_threads[i];
		if (atomic_load_explicit(&t->state, memory_order_acquire) == TPROF_SLOT_ACTIVE && t->ring)
			total += drain_thread(t);
	}
	static uint64_t global_reported;
	uint64_t g = atomic_load(&tprof_lost_global);
	if (g != global_reported) {
		write_lost(0, g - global_reported);
		global_reported = g;
	}
	return total;
}

static void write_end(int reason, int value)
{
	uint8_t *p = block_begin();
	p = tprof_put_varint(p, (uint64_t)reason);
	p = tprof_put_varint(p, (uint64_t)value);
	p = tprof_put_varint(p, atomic_load(&tprof_seq));
	p = tprof_put_varint(p, events_written);
	p = tprof_put_varint(p, lost_written);
	p = tprof_put_varint(p, tprof_stacks_count());
	p = tprof_put_varint(p, tprof_stacks_dropped());
	block_end(TPROF_BLK_END, p);
}

static void report_path(void)
{
	if (tprof_cfg.quiet)
		return;
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "tprof: ");
	tprof_sb_str(&s, program_invocation_short_name);
	tprof_sb_str(&s, " (pid ");
	tprof_sb_u64(&s, (uint64_t)getpid());
	tprof_sb_str(&s, "): ");
	tprof_sb_u64(&s, events_written);
	tprof_sb_str(&s, " events");
	if (lost_written) {
		tprof_sb_str(&s, ", ");
		tprof_sb_u64(&s, lost_written);
		tprof_sb_str(&s, " LOST");
	}
	tprof_sb_str(&s, out_failed ? ", trace incomplete: " : ", trace written to ");
	tprof_sb_str(&s, tprof_trace_path);
	if (tprof_cfg.debug) {
		struct timespec cpu;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
		tprof_sb_str(&s, " (writer thread CPU ");
		tprof_sb_u64(&s, ((uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec) / 1000);
		tprof_sb_str(&s, " us)");
	}
	tprof_sb_str(&s, "\n");
	tprof_sb_emit(&s);
}

/* Set once the writer has left its loop to run the program's exit (leave_to_exit); from then on,
 * the writer's work is done on that thread, on demand, by whatever runs there (draining when its
 * ring fills, the final flush from tprof's destructor). here_busy keeps a signal handler from
 * entering that work while it runs. */
static _Atomic int writer_exiting;
static volatile sig_atomic_t here_busy;
static sigset_t program_mask; /* of the thread that started the writer */

/* The end of a trace (final: of the process; else before exec): everything in the rings, the
 * modules, a last RSS sample and clock pair, then END; final also closes the file. */
static void finish_trace(int reason, int value, int final)
{
	if (final)
		atomic_store(&tprof_recording, 0);
	/* events already stamped but not yet published land within microseconds */
	flushing = 1;
	for (int k = 0; k < 3; k++) {
		drain_all();
		sched_yield();
	}
	drain_all();
	live_names_check();
	modules_update(0);
	if (tprof_cfg.rss_interval_ms)
		rss_sample(); /* the last sample of the trace (or of the image, before exec) */
	rss_flush();
	write_clock();
	write_end(reason, value);
	out_flush();
	if (final) {
		report_path();
		close(trace_fd);
		trace_fd = -1;
		atomic_store(&tprof_writer_running, 0);
		atomic_store(&writer_exiting, 0); /* nothing is left to do on any thread */
	}
	flushing = 0;
}

static int exiting_here(void)
{
	return atomic_load(&writer_exiting) && pthread_equal(pthread_self(), writer_tid) && !here_busy;
}

/* Every thread of the program is gone; the main thread called pthread_exit (the kernel keeps it as
 * a zombie until the process ends) and only the writer lives. Without tprof, glibc would have ended
 * the process when the last of them exited, as if it called exit(0): atexit handlers and
 * destructors run, on that thread. The writer is now that last thread: it writes out what it has
 * and returns, glibc's thread exit finds no thread left and calls exit(0) here, and tprof's
 * destructor does the final flush on this thread (tprof_writer_flush), after the program's
 * handlers, whose allocations are recorded like any thread's. The program's signal mask comes
 * back, so its signals behave as on the thread that would have run its exit. If the main thread
 * left by a raw exit system call, glibc still counts it and ends only the thread: the trace then
 * has every event but no END. */
static void leave_to_exit(void)
{
	flushing = 1;
	drain_all();
	flushing = 0;
	modules_update(0);
	out_flush();
	atomic_store(&tprof_writer_running, 0); /* a thread that appears now must not wait for us */
	atomic_store(&writer_exiting, 1);
	tprof_tls.guard = 0;
	pthread_sigmask(SIG_SETMASK, &program_mask, NULL);
}

int tprof_writer_drain_here(void)
{
	if (!exiting_here())
		return -1;
	here_busy = 1;
	flushing = 1;
	drain_all();
	flushing = 0;
	here_busy = 0;
	return 0;
}

static void *writer_main(void *arg)
{
	(void)arg;
	tprof_tls.guard = 1; /* for good: the writer's own allocations are not the program's */
	uint64_t last_clock = mono_ns(), last_reap = last_clock;
	uint64_t rss_every = (uint64_t)tprof_cfg.rss_interval_ms * 1000000u;
	uint64_t rss_due = last_clock + rss_every; /* the sample at start was taken in tprof_writer_start */
	char leader;
	for (;;) {
		uint32_t req = atomic_load(&flush_req);
		atomic_fetch_add_explicit(&tprof_epoch, 1, memory_order_relaxed);
		uint32_t mreq = atomic_load(&modules_req);
		modules_update(0);
		if (mreq != atomic_load(&modules_done)) {
			atomic_store(&modules_done, mreq);
			tprof_futex_wake(&modules_done);
		}
		uint64_t n = drain_all();
		uint64_t now = mono_ns();
		int reaped = now - last_reap >= 200000000u;
		if (reaped) {
			reap_dead_threads();
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
		if (req != atomic_load(&flush_done)) {
			int final = req_final;
			finish_trace(req_reason, req_value, final);
			atomic_store(&flush_done, req);
			tprof_futex_wake(&flush_done);
			if (final)
				return NULL;
			continue;
		}
		/* two tasks, a zombie main thread and us: we alone keep the process alive */
		if (reaped && tprof_proc_threads(&leader) == 2 && leader == 'Z') {
			leave_to_exit();
			return NULL; /* glibc: the last thread is gone, exit(0) */
		}
		/* Poll adaptively: soon again while rings fill fast, rarely otherwise. A ring holding a
		 * few events is held anyway (see drain_thread) and its producer wakes us each time its
		 * head passes a quarter mark, so waking every millisecond for it would only take the
		 * CPU from the program (a thousand wake-ups a second in a kernel-heavy run). */
		uint32_t cap = tprof_cfg.ring_entries;
		if (busiest < (cap >> 1)) {
			long nap = busiest >= (cap >> 4) ? 100000 : 10000000;
			if (rss_every) { /* wake for the next sample; the batching of busy threads is unchanged */
				uint64_t t = mono_ns();
				if (rss_due <= t)
					nap = 0;
				else if (rss_due - t < (uint64_t)nap)
					nap = (long)(rss_due - t);
			}
			if (n == 0)
				out_flush();
			uint32_t k = atomic_load(&kick_word);
			atomic_store(&tprof_writer_sleeping, 1);
			if (atomic_load(&flush_req) == atomic_load(&flush_done) &&
			    atomic_load(&modules_req) == atomic_load(&modules_done))
				tprof_futex_wait(&kick_word, k, nap);
			atomic_store(&tprof_writer_sleeping, 0);
		}
	}
}

void tprof_modules_before_close(void)
{
	if (exiting_here()) {
		here_busy = 1;
		modules_update(0);
		here_busy = 0;
		return;
	}
	if (!atomic_load(&tprof_writer_running) || !atomic_load(&tprof_recording) ||
	    pthread_equal(pthread_self(), writer_tid))
		return;
	int saved = errno;
	uint32_t gen = atomic_fetch_add(&modules_req, 1) + 1;
	tprof_writer_kick();
	uint64_t deadline = mono_ns() + 100000000u;
	for (;;) {
		uint32_t done = atomic_load(&modules_done);
		if ((int32_t)(done - gen) >= 0 || mono_ns() > deadline || !atomic_load(&tprof_writer_running))
			break;
		tprof_futex_wait(&modules_done, done, 10000000);
	}
	errno = saved;
}

void tprof_writer_kick(void)
{
	int saved = errno;
	atomic_fetch_add(&kick_word, 1);
	tprof_futex_wake(&kick_word);
	errno = saved;
}

int tprof_writer_flush(int reason, int value, int final, long timeout_ns)
{
	if (exiting_here()) { /* no writer loop to ask: the work is done here */
		here_busy = 1;
		finish_trace(reason, value, final);
		here_busy = 0;
		return 0;
	}
	if (!atomic_load(&tprof_writer_running))
		return -1;
	if (pthread_equal(pthread_self(), writer_tid))
		return -1;
	req_reason = reason;
	req_value = value;
	req_final = final;
	uint32_t gen = atomic_fetch_add(&flush_req, 1) + 1;
	tprof_writer_kick();
	uint64_t deadline = mono_ns() + (uint64_t)timeout_ns;
	for (;;) {
		uint32_t done = atomic_load(&flush_done);
		if ((int32_t)(done - gen) >= 0)
			break;
		if (mono_ns() > deadline)
			return -1;
		tprof_futex_wait(&flush_done, done, 10000000);
	}
	if (final)
		pthread_join(writer_tid, NULL);
	return 0;
}

/* Builds the trace path from TPROF_OUTPUT (%p: pid, %%: %) or tprof.<program>.<pid>.trace. */
static void make_path(char *buf, size_t cap)
{
	struct tprof_sbuf s = {.n = 0};
	const char *o = tprof_cfg.output;
	if (o && *o) {
		for (; *o; o++) {
			if (o[0] == '%' && o[1] == 'p') {
				tprof_sb_u64(&s, (uint64_t)getpid());
				o++;
			} else if (o[0] == '%' && o[1] == '%') {
				tprof_sb_str(&s, "%");
				o++;
			} else {
				char c[2] = {*o, 0};
				tprof_sb_str(&s, c);
			}
		}
	} else {
		tprof_sb_str(&s, "tprof.");
		for (const char *c = program_invocation_short_name; c && *c; c++) {
			char ch[2] = {(*c == '/' || *c < 32) ? '_' : *c, 0};
			tprof_sb_str(&s, ch);
		}
		tprof_sb_str(&s, ".");
		tprof_sb_u64(&s, (uint64_t)getpid());
		tprof_sb_str(&s, ".trace");
	}
	size_t n = s.n < cap - 1 ? s.n : cap - 1;
	memcpy(buf, s.b, n);
	buf[n] = 0;
}

/* Creates the trace file exclusively: never through a symlink, never over an existing file. An
 * existing name gets a numeric suffix (.1, .2, ...). */
static int open_trace(void)
{
	char base[sizeof(tprof_trace_path) - 16];
	make_path(base, sizeof(base));
	for (int k = 0; k < 1000; k++) {
		struct tprof_sbuf s = {.n = 0};
		tprof_sb_str(&s, base);
		if (k) {
			tprof_sb_str(&s, ".");
			tprof_sb_u64(&s, (uint64_t)k);
		}
		memcpy(tprof_trace_path, s.b, s.n);
		tprof_trace_path[s.n] = 0;
		int fd = open(tprof_trace_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0) {
			trace_dev = st.st_dev;
			trace_ino = st.st_ino;
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "tprof: cannot create ");
	tprof_sb_str(&s, tprof_trace_path);
	tprof_sb_str(&s, ": ");
	tprof_sb_str(&s, strerror(errno));
	tprof_sb_str(&s, "; not tracing\n");
	tprof_sb_emit(&s);
	return -1;
}

int tprof_writer_start(void)
{
	trace_fd = open_trace();
	if (trace_fd < 0)
		return -1;
	out_len = 0;
	out_failed = 0;
	events_written = lost_written = 0;
	stk_len = stk_count = 0;
	if (!stack_written) {
		void *m = mmap(NULL, TPROF_STACK_IDS, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		stack_written = m == MAP_FAILED ? NULL : m;
	} else {
		madvise(stack_written, TPROF_STACK_IDS, MADV_DONTNEED); /* a new trace defines all again */
	}
	if (!stack_written) {
		close(trace_fd);
		unlink(tprof_trace_path);
		trace_fd = -1;
		return -1;
	}
	if (tprof_cfg.compress && !zctx) {
		size_t ws = ZSTD_estimateCCtxSize(1);
		void *m = mmap(NULL, ws, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED)
			zctx = ZSTD_initStaticCCtx(m, ws);
	}
	uint32_t nm;
	struct tprof_module_rec *mods = tprof_modules(&nm);
	for (uint32_t i = 0; i < nm; i++)
		mods[i].written = mods[i].unload_written = 0;
	write_header_and_info();
	write_op_names();
	memset(name_written, 0, sizeof(name_written)); /* a new trace defines all again */
	klen = kcount = 0;
	kprev_tick = 0;
	rss_len = rss_count = 0; /* after fork: the parent's staged samples are not the child's */
	rss_last_tick = rss_last_bytes = 0;
	rss_page = (uint64_t)sysconf(_SC_PAGESIZE);
	if (tprof_cfg.rss_interval_ms)
		rss_sample(); /* at start, before the program runs on: the writer thread may start late */
	modules_update(1);
	out_flush();
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &program_mask);
	atomic_store(&tprof_writer_running, 1);
	atomic_store(&writer_exiting, 0);
	int rc = pthread_create(&writer_tid, NULL, writer_main, NULL);
	pthread_sigmask(SIG_SETMASK, &program_mask, NULL);
	if (rc != 0) {
		atomic_store(&tprof_writer_running, 0);
		close(trace_fd);
		unlink(tprof_trace_path);
		trace_fd = -1;
		return -1;
	}
	return 0;
}

void tprof_writer_after_fork_child(void)
{
	/* The parent's writer does not exist here; its buffers and descriptor are the parent's. */
	if (trace_fd >= 0)
		close(trace_fd);
	trace_fd = -1;
	atomic_store(&tprof_writer_running, 0);
	atomic_store(&tprof_writer_sleeping, 0);
	atomic_store(&flush_req, 0);
	atomic_store(&flush_done, 0);
	atomic_store(&modules_req, 0);
	atomic_store(&modules_done, 0);
	here_busy = 0;
	if (tprof_writer_start() != 0)
		atomic_store(&tprof_recording, 0);
}
