/* The trace writer of the recorder: one thread per traced process image (recorder/server.c starts
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
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* static contexts: exported by libzstd 1.5, declared here */
#include <zstd.h>

#include "leakscan.h"
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
	int discard; /* only the ring's header is mapped (no room for more): its events are counted lost */
};

#define OUT_CAP (1u << 20)
#define OUT_FLUSH_AT (OUT_CAP - (128u << 10))
_Static_assert(OUT_CAP - TPROF_BLOCK_HEADER_LEN <= TPROF_BLOCK_MAX_WRITTEN, "a block readers would take for corrupt");
/* EVENTS payloads stay below this plus 31 records (2.5 KB; each stream has 4 KiB more): the size is
 * looked at every 16 records, and a run of unmeasured ones (15 at most) ends in its block */
#define BLOCK_TARGET (60u << 10)
#define REC_MAX TPROF_REC_MAX_BYTES
#define EV_CAP (BLOCK_TARGET + TPROF_NSTREAMS * 4096 + 64)
#define STK_CAP (256u << 10)
#define STK_HDR 10 /* stk_buf's first bytes: room for the count before the entries */
#define KBUF_CAP (64u << 10)
#define KHDR 20 /* kbuf's first bytes: room for the tid and count before the records */
#define KREC_MAX (8 + 5 * 10 + 10 + TPROF_KSHAPE_MAX * 10)
#define MAX_VIEWS 48
#define MAX_PART_VIEWS 64

/* Everything a writer knows of the image it records. Contexts are kept for reuse: what lies before
 * `out_buf` is cleared for each image, the buffers after it are written before they are read. */
struct tprof_writer {
	struct tprof_shm *shm; /* the traced image's shared memory, mapped whole */
	int shm_fd;            /* the memory file: mapped further as the process uses more of it */
	uint64_t shm_bytes;    /* its size */
	uint64_t first_view;   /* the size of the first view (view_) */
	int ring_unmapped;     /* a ring was read through its header alone (ring_of): END says RESERVE */
	uint32_t exits_seen;   /* shm->thread_exits at the last reap of exited threads */
	int exits_left;        /* that reap found an exiting thread not gone yet: look again */
	pid_t tpid;            /* the traced process */
	pid_t label;           /* the pid it knows itself by: another one in a child pid namespace */
	int own_ns;            /* its pid namespace is the recorder's: its thread ids are ours too */
	int after_exec;        /* an image of a process whose previous image registered too */
	uint64_t starttime;    /* its start time: with the pid, names it for good */
	char prog_name[256];   /* for the line at the end */
	char proc_dir[32];     /* "/proc/PID/" */
	char proc_path[64];
	uint8_t *views[MAX_VIEWS]; /* the memory file's mappings, each twice the one before */
	uint64_t view_len[MAX_VIEWS];
	int nviews;
	/* where no larger view could be mapped (a low address space limit): mappings of one part each */
	uint8_t *part_views[MAX_PART_VIEWS];
	uint64_t part_off[MAX_PART_VIEWS], part_len[MAX_PART_VIEWS];
	int nparts;
	int clock_is_tsc;
	int flushing; /* final or exec flush, or a dead thread: write everything, hold nothing back */
	int trace_fd;
	uint64_t events_written, lost_written;
	uint64_t reallocs_written; /* of the records: a realloc's is two events, as the reader counts */
	size_t out_len;
	int out_failed; /* a write failed: stop writing, keep draining so producers never block */
	int trace_removed; /* nothing of it could be written: the empty file was removed */
	size_t stk_len;
	uint32_t stk_count;
	size_t rss_len;
	uint32_t rss_count;
	uint64_t rss_staged_ns; /* when the oldest staged sample was taken */
	uint64_t rss_last_tick, rss_last_bytes; /* the tick spans blocks: samples never go back */
	uint64_t rss_page;
	uint32_t modules_written;
	size_t klen;
	uint32_t kcount;
	uint64_t kprev_tick;
	uint32_t busiest; /* most events found waiting in one ring during the last drain_all */
	uint64_t active_ns; /* when a ring's head last moved or the resident size last changed */
	uint64_t global_reported;
	uint64_t last_pair_tick, last_pair_mono; /* the last clock pair written */
	/* set by the server thread (tprof_writer_gone, tprof_writer_exec), read by the writer */
	_Atomic int zombie_known, zombie_status;
	int late_pidfd; /* + 1: the pidfd of a process whose zombie hid its status (end_of), else 0 */
	_Atomic uint32_t process_gone, exec_seen;
	uint64_t gone_clock[3]; /* tick, monotonic and real-time ns when the end was seen */
	_Atomic int done;       /* the writer thread has finished with this context */
	/* The server wakes the writer through the shared memory, which the writer unmaps when it is
	 * done: it says so first (closing) and waits while the server pokes (see poke()). */
	_Atomic int closing, poking;
	uint64_t cpu_start;     /* the writer thread's CPU time when this trace began (TPROF_DEBUG) */
	uint64_t scan_cpu;      /* ... and of it, the leak scan's and its LEAKS blocks' (TPROF_DEBUG) */
	struct leak_live *live; /* the blocks live now, for the scan at the end (NULL: not asked) */
	char trace_abs[4096];   /* the trace file's absolute path, for tprof record --error-exitcode */
	int own_mode;           /* the recorder created the file: give it the process's umask */
	int hello_quiet;        /* TPROF_QUIET=1 said at registration (before the shared memory can) */
	uid_t owner_uid;        /* the process's user and group: its rights on its own file */
	gid_t owner_gid;
	struct leak_result *scan; /* the scan's result, written at the end of the trace */
	uint32_t scan_reason;
	uint8_t module_end_written[TPROF_SHM_MODULES];
	uint8_t name_written[TPROF_NAME_IDS];
	uint8_t op_written[TPROF_NOPS];
	struct wthread wthreads[TPROF_SHM_THREADS];
	/* kept across images */
	uint8_t *stack_written; /* a bit per stack id: already defined in this trace */
	uint32_t stack_written_top; /* bytes of it that may be nonzero */
	uint32_t wthreads_top;      /* entries of wthreads that may be nonzero */
	ZSTD_CCtx *zctx;        /* static context in mmap'd memory: compressing never allocates */
	struct tprof_writer *next_free;
	_Atomic uint32_t thread_state; /* THREAD_NONE, THREAD_BUSY or THREAD_IDLE */
	_Atomic uint32_t go;           /* set (and woken) when an idle thread has a new image */
	uint8_t out_buf[OUT_CAP];
	/* An EVENTS payload is built here, then compressed into out_buf (or copied when compression
	 * does not pay); stack definitions met on the way go out first, in a STACKS block of their own. */
	uint8_t ev_buf[EV_CAP];
	uint8_t stk_buf[STK_CAP];
	uint8_t rss_buf[TPROF_RSS_BLOCK_MAX * 20];
	uint8_t kbuf[KHDR + KBUF_CAP]; /* KHDR bytes for the block's header, then the records */
	uint8_t streams[TPROF_NSTREAMS][BLOCK_TARGET + 4096];
	struct tprof_rec_encoder enc;
};

#define SLOT(t) (&w->shm->threads[(t) - w->wthreads])

static const char *proc_file(struct tprof_writer *w, const char *name)
{
	snprintf(w->proc_path, sizeof(w->proc_path), "%s%s", w->proc_dir, name);
	return w->proc_path;
}

/* The part [off, off + len) of the memory file, in our address space. The file is mapped from its
 * start, larger each time the process has used more of it (at least doubling); older mappings
 * stay, so pointers into them stay good. The first mapping is large enough for most processes
 * (64 MiB of address space, which costs nothing until touched): each mapping is unmapped when the
 * trace ends, and an unmapping in the recorder, whose other threads run on other CPUs, costs a TLB
 * shootdown of a few hundred microseconds on a VM, more than anything else a short process costs
 * it. Under an RLIMIT_AS (the recorder may run under the program's) the first view is only what
 * the process used, as is any view when a larger one fails; below that it falls back to mapping
 * the part asked for alone (a ring, or only its header: see ring_of). NULL outside the file or
 * when it cannot map. */
#define FIRST_VIEW (64u << 20)
static const void *view_(struct tprof_writer *w, uint64_t off, uint64_t len)
{
	if (off > w->shm_bytes || len > w->shm_bytes - off)
		return NULL;
	if (w->nviews && off + len <= w->view_len[w->nviews - 1])
		return w->views[w->nviews - 1] + off;
	uint64_t least = w->nviews ? w->view_len[w->nviews - 1] * 2 : 8u << 20;
	while (least < off + len)
		least *= 2;
	if (least > w->shm_bytes)
		least = w->shm_bytes;
	for (int i = w->nparts; i-- > 0;)
		if (off >= w->part_off[i] && off + len <= w->part_off[i] + w->part_len[i])
			return w->part_views[i] + (off - w->part_off[i]);
	uint64_t want = w->nviews || least > w->first_view ? least : w->first_view;
	void *m = w->nviews == MAX_VIEWS ? MAP_FAILED
					 : mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, w->shm_fd, 0);
	if (m == MAP_FAILED && want > least && w->nviews < MAX_VIEWS) {
		want = least;
		m = mmap(NULL, want, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, w->shm_fd, 0);
	}
	if (m == MAP_FAILED) {
		/* the part asked for alone, under a limit too low for a view of everything before it
		 * too: the 2 MiB around it (pieces and chunks of stacks come in 2 MiB steps), or its pages */
		static const uint64_t grain[2] = {2u << 20, 4096};
		for (int k = 0; k < 2 && w->nparts < MAX_PART_VIEWS; k++) {
			uint64_t g = grain[k], a = off & ~(g - 1), e = (off + len + g - 1) & ~(g - 1);
			if (e > w->shm_bytes)
				e = w->shm_bytes;
			m = mmap(NULL, e - a, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, w->shm_fd, (off_t)a);
			if (m != MAP_FAILED) {
				w->part_views[w->nparts] = m;
				w->part_off[w->nparts] = a;
				w->part_len[w->nparts++] = e - a;
				return (uint8_t *)m + (off - a);
			}
		}
		return NULL;
	}
	w->views[w->nviews] = m;
	w->view_len[w->nviews++] = want;
	return (uint8_t *)m + off;
}
#define view(off, len) ((void *)view_(w, (off), (len)))

static uint32_t threads_hwm(struct tprof_writer *w)
{
	uint32_t h = atomic_load_explicit(&w->shm->threads_hwm, memory_order_acquire);
	h = h > TPROF_SHM_THREADS ? TPROF_SHM_THREADS : h;
	if (h > w->wthreads_top)
		w->wthreads_top = h;
	return h;
}


/* The recorder's clocks are read with the system call, as libtprof.so reads the process's first
 * clock pair: under tprof record the recorder is a process of the program's environment, and a
 * preloaded library there that fakes time (faketime) would otherwise put faked times beside the
 * program's real ones (the trace read as an impossible clock calibration). */
static uint64_t now_tick(struct tprof_writer *w)
{
	if (w->clock_is_tsc)
		return __builtin_ia32_rdtsc();
	struct timespec ts;
	tprof_sys_clock(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	tprof_sys_clock(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec cpu;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
	return (uint64_t)cpu.tv_sec * 1000000000u + (uint64_t)cpu.tv_nsec;
}

static uint64_t real_ns(void)
{
	struct timespec ts;
	tprof_sys_clock(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The trace's name for messages: as the process created it, or the file the recorder created for
 * it, relative to the directory the recorder started in when it is there (where the user who
 * started the program is), else absolute. */
static const char *trace_name(const struct tprof_writer *w)
{
	/* a file the process created itself, by a name relative to its working directory: the name
	 * the descriptor has here says where it is (unless it is not known) */
	if ((w->shm->written & TPROF_SHM_HAS_TRACE_PATH) && w->shm->trace_path[0] &&
	    (w->shm->trace_path[0] == '/' || w->trace_abs[0] != '/'))
		return w->shm->trace_path;
	const char *d = tprof_recorder_start_dir();
	size_t n = strlen(d);
	if (n > 1 && strncmp(w->trace_abs, d, n) == 0 && w->trace_abs[n] == '/')
		return w->trace_abs + n + 1;
	return w->trace_abs;
}

static void out_flush(struct tprof_writer *w)
{
	if (w->out_len && !w->out_failed && tprof_write_all(w->trace_fd, w->out_buf, w->out_len) != 0) {
		w->out_failed = 1;
		int e = errno;
		char name[4096];
		fprintf(stderr, "tprof: writing %s failed: %s; the trace ends here\n",
			tprof_text_copy(name, sizeof(name), trace_name(w)), strerror(e));
	}
	w->out_len = 0;
}

/* Opens a block whose payload takes at most room bytes (at most OUT_CAP - TPROF_BLOCK_HEADER_LEN);
 * returns the payload start. */
static uint8_t *block_begin_for(struct tprof_writer *w, size_t room)
{
	if (w->out_len + TPROF_BLOCK_HEADER_LEN + room > OUT_CAP)
		out_flush(w);
	return w->out_buf + w->out_len + TPROF_BLOCK_HEADER_LEN;
}

/* Opens a block of at most EV_CAP bytes: an events block and every small one (staged tables and
 * runs ask block_begin_for for their size). */
static uint8_t *block_begin(struct tprof_writer *w)
{
	return block_begin_for(w, EV_CAP);
}

static void block_end(struct tprof_writer *w, unsigned type, uint8_t *end)
{
	uint8_t *h = w->out_buf + w->out_len;
	uint8_t *payload = h + TPROF_BLOCK_HEADER_LEN;
	uint32_t len = (uint32_t)(end - payload);
	h[0] = (uint8_t)type;
	tprof_put_u32(h + 1, len);
	uint32_t crc = tprof_crc32c_update(0, h, 1);
	crc = tprof_crc32c_update(crc, payload, len);
	tprof_put_u32(h + 5, crc);
	w->out_len += TPROF_BLOCK_HEADER_LEN + len;
	if (w->out_len >= OUT_FLUSH_AT)
		out_flush(w);
}

/* Writes a staged run of entries as one block (their count, then their bytes) and empties it. */
static void counted_flush(struct tprof_writer *w, unsigned type, const uint8_t *buf, size_t *len, uint32_t *count)
{
	if (!*count)
		return;
	uint8_t *p = block_begin_for(w, 10 + *len);
	p = tprof_put_varint(p, *count);
	memcpy(p, buf, *len);
	block_end(w, type, p + *len);
	*len = 0;
	*count = 0;
}

static uint8_t *put_string(uint8_t *p, const char *s, size_t n)
{
	p = tprof_put_varint(p, n);
	memcpy(p, s, n);
	return p + n;
}

/* Pairs go out in time order (readers reject one that goes back): the end of the process, seen by
 * the server thread, may come before a pair this thread took since. */
static void write_clock_at(struct tprof_writer *w, uint64_t tick, uint64_t mono, uint64_t real)
{
	if (tick < w->last_pair_tick || mono < w->last_pair_mono)
		return;
	w->last_pair_tick = tick;
	w->last_pair_mono = mono;
	uint8_t *p = block_begin(w);
	p = tprof_put_varint(p, tick);
	p = tprof_put_varint(p, mono);
	p = tprof_put_varint(p, real);
	block_end(w, TPROF_BLK_CLOCK, p);
}

static void write_clock(struct tprof_writer *w)
{
	write_clock_at(w, now_tick(w), mono_ns(), real_ns());
}

/* Resident set size samples: every TPROF_RSS_INTERVAL_MS the writer reads the process's resident
 * set size and stages the sample here, delta-coded; the staged samples go out as one RSS block when
 * there are TPROF_RSS_BLOCK_MAX of them, when the oldest has waited RSS_STAGE_NS, and at every
 * flush. A process killed by SIGKILL (the OOM killer's signal, when memory matters most) thus loses
 * little more than the blocks the writer had not yet written, at a few bytes per sample. */
#define RSS_STAGE_NS 100000000u

static void rss_flush(struct tprof_writer *w)
{
	counted_flush(w, TPROF_BLK_RSS, w->rss_buf, &w->rss_len, &w->rss_count);
}

/* The resident set size in bytes (statm's second field, in pages), or 0 when it cannot be read. */
static uint64_t statm_rss(struct tprof_writer *w, const char *path)
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
	return pages * w->rss_page;
}

/* The process's statm reads zeros once its main thread has called pthread_exit (a zombie without
 * memory): then a live thread's view is read. */
static uint64_t read_rss(struct tprof_writer *w)
{
	uint64_t b = statm_rss(w, proc_file(w, "statm"));
	uint32_t hwm = threads_hwm(w);
	for (uint32_t i = 0; !b && w->own_ns && i < hwm; i++) {
		if (atomic_load_explicit(&w->shm->threads[i].state, memory_order_acquire) != TPROF_SLOT_ACTIVE ||
		    w->shm->threads[i].tid == w->tpid)
			continue;
		char path[96];
		snprintf(path, sizeof(path), "%stask/%d/statm", w->proc_dir, (int)w->shm->threads[i].tid);
		b = statm_rss(w, path);
	}
	return b;
}

/* A resident size the process's statm gave, less the pages of tprof's shared memory (its rings and
 * the tables of stacks and modules: 2 MiB for each thread's ring once it has gone round), which
 * the process maps and the kernel counts as its own: the program's resident size, as a bare run
 * would have it but for tprof's private memory (a few hundred KiB). The memory file's allocated
 * blocks are its resident pages (tmpfs; swapped pages aside, hence no less than 0). */
static uint64_t program_rss(struct tprof_writer *w, uint64_t bytes)
{
	struct stat st;
	if (fstat(w->shm_fd, &st) != 0)
		return bytes;
	uint64_t own = (uint64_t)st.st_blocks * 512u;
	return own < bytes ? bytes - own : 0;
}

/* Stages one sample, less tprof's shared memory; none when that leaves nothing (no running program
 * is that small: the memory file's blocks were swapped, or counted before the process mapped them). */
static void rss_add(struct tprof_writer *w, uint64_t tick, uint64_t bytes)
{
	bytes = program_rss(w, bytes);
	if (!bytes)
		return;
	if (tick < w->rss_last_tick)
		tick = w->rss_last_tick; /* the TSC of another core may be a few ticks behind */
	if (w->rss_count == TPROF_RSS_BLOCK_MAX)
		rss_flush(w);
	uint8_t *p = w->rss_buf + w->rss_len;
	if (w->rss_count == 0) { /* a block decodes on its own */
		w->rss_staged_ns = mono_ns();
		p = tprof_put_varint(p, tick);
		p = tprof_put_varint(p, bytes);
	} else {
		p = tprof_put_varint(p, tick - w->rss_last_tick);
		p = tprof_put_svarint(p, (int64_t)(bytes - w->rss_last_bytes));
	}
	w->rss_len = (size_t)(p - w->rss_buf);
	w->rss_count++;
	w->rss_last_tick = tick;
	w->rss_last_bytes = bytes;
}

/* A process idle for a second (no ring's head moved, the resident size the same at every sample)
 * costs its writer few wake-ups: the writer naps IDLE_NAP_NS (a producer whose ring fills, a scan
 * request and the process's end wake it at once), and the resident size is sampled every quarter
 * of the time it has been idle, at least every TPROF_RSS_INTERVAL_MS, at most every second
 * (docs/FORMAT.md). Hundreds of idle processes (a pool of workers, a parallel build) would
 * otherwise keep a recorder's CPU busy. */
#define IDLE_NS 1000000000u
#define IDLE_NAP_NS 200000000L
#define IDLE_RSS_MAX_NS 1000000000u

static uint64_t rss_step(const struct tprof_writer *w, uint64_t every, uint64_t now)
{
	uint64_t idle = now - w->active_ns;
	if (idle < IDLE_NS)
		return every;
	uint64_t step = idle / 4, most = every > IDLE_RSS_MAX_NS ? every : IDLE_RSS_MAX_NS;
	return step < every ? every : step > most ? most : step;
}

/* Takes one sample; a failed read (or a resident size of 0, which no running process has) takes
 * none rather than a wrong one. */
static void rss_sample(struct tprof_writer *w)
{
	uint64_t bytes = read_rss(w);
	if (bytes)
		rss_add(w, now_tick(w), bytes);
}

static void write_header_and_info(struct tprof_writer *w)
{
	uint8_t *h = w->out_buf + w->out_len;
	memcpy(h, TPROF_MAGIC, TPROF_MAGIC_LEN);
	tprof_put_u16(h + 8, TPROF_VERSION);
	tprof_put_u16(h + 10, TPROF_FILE_HEADER_LEN);
	tprof_put_u32(h + 12, 0);
	w->out_len += TPROF_FILE_HEADER_LEN;

	uint32_t el = w->shm->exe_len, cl = w->shm->cmdline_len;
	ssize_t en = el < TPROF_SHM_EXE ? el : 0;
	ssize_t cn = el < TPROF_SHM_EXE && cl <= TPROF_SHM_CMDLINE ? cl : 0;
	const char *exe = w->shm->self, *cmdline = w->shm->self + en;
	uint64_t argc = 0;
	for (ssize_t i = 0; i < cn; i++)
		argc += cmdline[i] == 0;
	if (cn && cmdline[cn - 1] != 0)
		argc++; /* cut short: the last argument has no terminator */

	out_flush(w);
	uint8_t *p = block_begin(w);
	p = tprof_put_varint(p, (uint64_t)w->label);
	p = tprof_put_varint(p, (uint64_t)w->shm->ppid);
	p = tprof_put_varint(p, (uint64_t)w->shm->clock);
	p = tprof_put_varint(p, w->shm->lossy ? TPROF_INFO_LOSSY : 0);
	p = tprof_put_varint(p, (uint64_t)sysconf(_SC_PAGESIZE));
	p = tprof_put_varint(p, sizeof(void *));
	p = tprof_put_varint(p, w->shm->start_realtime_ns);
	p = tprof_put_varint(p, w->shm->ring_entries);
	p = tprof_put_varint(p, w->shm->depth);
	p = put_string(p, exe, (size_t)en);
	p = tprof_put_varint(p, argc);
	for (ssize_t i = 0; i < cn;) {
		size_t len = strnlen(cmdline + i, (size_t)(cn - i));
		p = put_string(p, cmdline + i, len);
		i += (ssize_t)len + 1;
	}
	const char *owner = w->shm->written & TPROF_SHM_HAS_MALLOC_OWNER ? w->shm->malloc_owner : "";
	p = put_string(p, owner, strnlen(owner, sizeof(w->shm->malloc_owner)));
	block_end(w, TPROF_BLK_INFO, p);
	const char *a0 = cn ? cmdline : exe;
	const char *slash = strrchr(a0, '/');
	const char *base = slash ? slash + 1 : a0;
	size_t bl = strnlen(base, sizeof(w->prog_name) - 1);
	memcpy(w->prog_name, base, bl);
	w->prog_name[bl] = 0;
	/* the pair the process took as it registered: its events all come after (time zero) */
	write_clock_at(w, w->shm->start_tick, w->shm->start_mono_ns, w->shm->start_realtime_ns);
	write_clock(w);
}

/* MODULE and MODULE_END blocks for what the shared module table gained since the last call. */

static void modules_update(struct tprof_writer *w)
{
	uint32_t n = atomic_load_explicit(&w->shm->nmodules, memory_order_acquire);
	if (n > TPROF_SHM_MODULES)
		n = TPROF_SHM_MODULES;
	for (uint32_t i = 0; i < n; i++) {
		struct tprof_shm_module *m = &w->shm->modules[i];
		if (i >= w->modules_written) {
			uint8_t *p = block_begin(w);
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
			p = put_string(p, w->shm->paths + (plen ? m->path_off : 0), plen);
			block_end(w, TPROF_BLK_MODULE, p);
			w->modules_written = i + 1;
		}
		uint64_t u = atomic_load_explicit(&m->unload_seq, memory_order_relaxed);
		if (u && !w->module_end_written[i]) {
			uint8_t *p = block_begin(w);
			p = tprof_put_varint(p, i);
			p = tprof_put_varint(p, u < m->load_seq ? m->load_seq : u);
			block_end(w, TPROF_BLK_MODULE_END, p);
			w->module_end_written[i] = 1;
		}
	}
}

/* A stack of the shared table, or 0 while it is not (yet) published. */
static int stack_get(struct tprof_writer *w, uint32_t id, const uint64_t **frames, uint32_t *depth, int *truncated)
{
	if (id == 0 || id >= TPROF_STACK_IDS)
		return 0;
	uint64_t coff = atomic_load_explicit(&w->shm->stack_chunk_off[id / TPROF_STACK_CHUNK_IDS], memory_order_acquire);
	if (!coff || coff > w->shm_bytes - (uint64_t)TPROF_STACK_CHUNK_IDS * sizeof(struct tprof_shm_stack))
		return 0;
	const struct tprof_shm_stack *e = view(coff + (uint64_t)(id % TPROF_STACK_CHUNK_IDS) * sizeof(*e), sizeof(*e));
	if (!e)
		return 0;
	uint16_t d = __atomic_load_n(&e->depth, __ATOMIC_ACQUIRE);
	if (d == 0 || d > TPROF_DEPTH_MAX || e->off > w->shm_bytes - (uint64_t)d * 8)
		return 0;
	*frames = view(e->off, (uint64_t)d * 8);
	if (!*frames)
		return 0;
	*depth = d;
	*truncated = e->truncated;
	return 1;
}

/* Writes the payload raw[0, rlen) as a block of ztype (a varint rlen, then its zstd frame) when
 * compression is on and pays and stays within the ratio readers accept, else as one of type. */
static void emit_maybe_compressed(struct tprof_writer *w, unsigned type, unsigned ztype, const uint8_t *raw,
				  size_t rlen)
{
	size_t bound = ZSTD_COMPRESSBOUND(rlen);
	uint8_t *p = block_begin_for(w, 10 + (bound > rlen ? bound : rlen));
	if (w->zctx) {
		uint8_t *z = tprof_put_varint(p, rlen);
		size_t zn = ZSTD_compressCCtx(w->zctx, z, bound, raw, rlen, 1);
		size_t plen = ZSTD_isError(zn) ? SIZE_MAX : (size_t)(z - p) + zn;
		if (plen < rlen && rlen <= (size_t)TPROF_ZBLOCK_MAX_RATIO * plen) {
			block_end(w, ztype, p + plen);
			return;
		}
	}
	memcpy(p, raw, rlen);
	block_end(w, type, p + rlen);
}

/* The staged stack definitions as one block: ZSTACKS when compressing pays (stacks that share
 * callers repeat their frames' deltas: a deep program's compress 5 to 9 times), else STACKS. The
 * count goes in the STK_HDR bytes before the entries. */
static void stacks_flush(struct tprof_writer *w)
{
	if (!w->stk_count)
		return;
	uint8_t cnt[10];
	size_t n = (size_t)(tprof_put_varint(cnt, w->stk_count) - cnt);
	uint8_t *raw = w->stk_buf + STK_HDR - n;
	memcpy(raw, cnt, n);
	emit_maybe_compressed(w, TPROF_BLK_STACKS, TPROF_BLK_ZSTACKS, raw, n + w->stk_len);
	w->stk_len = 0;
	w->stk_count = 0;
}

/* Stages the definition of stack id unless this trace has it already. */
static void define_stack(struct tprof_writer *w, uint32_t id)
{
	const uint64_t *frames;
	uint32_t depth;
	int truncated;
	if (id == 0 || w->stack_written[id >> 3] >> (id & 7) & 1 || !stack_get(w, id, &frames, &depth, &truncated))
		return;
	if (STK_HDR + w->stk_len + 32 + (size_t)depth * 10 > STK_CAP)
		stacks_flush(w);
	uint8_t *p = w->stk_buf + STK_HDR + w->stk_len;
	p = tprof_put_varint(p, id);
	p = tprof_put_varint(p, truncated ? TPROF_STACK_TRUNCATED : 0);
	p = tprof_put_varint(p, depth);
	uint64_t prev = 0;
	for (uint32_t i = 0; i < depth; i++) {
		uint64_t f = frames[i];
		p = i ? tprof_put_svarint(p, (int64_t)(f - prev)) : tprof_put_varint(p, f);
		prev = f;
	}
	w->stk_len = (size_t)(p - w->stk_buf) - STK_HDR;
	w->stk_count++;
	w->stack_written[id >> 3] |= (uint8_t)(1u << (id & 7));
	if ((id >> 3) >= w->stack_written_top)
		w->stack_written_top = (id >> 3) + 1;
}

/* A THREAD block: the thread's tid and name, as raw bytes (any byte but NUL). */
static void write_thread(struct tprof_writer *w, struct wthread *t, const char *name, size_t n)
{
	if (n > sizeof(t->name))
		n = sizeof(t->name);
	uint8_t *p = block_begin(w);
	p = tprof_put_varint(p, (uint64_t)t->tid);
	p = put_string(p, name, n);
	block_end(w, TPROF_BLK_THREAD, p);
	memcpy(t->name, name, n);
	t->name_len = (uint32_t)n;
	t->announced = 1;
}

/* The thread's name as the kernel has it now (comm, 15 bytes at most); -1 once the thread is gone. */
static ssize_t read_thread_name(struct tprof_writer *w, pid_t tid, char *name, size_t cap)
{
	char path[64];
	if (!w->own_ns)
		return -1; /* its thread ids name other threads here */
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "/proc/");
	tprof_sb_u64(&s, (uint64_t)w->tpid);
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

/* The first THREAD block: the name the thread had as it took its slot (later names follow it). */
static void announce_thread(struct tprof_writer *w, struct wthread *t)
{
	const char *name = SLOT(t)->start_name;
	write_thread(w, t, name, strnlen(name, sizeof(SLOT(t)->start_name)));
}

/* A thread renamed since its THREAD block gets another one, with the new name: the latest names
 * it (docs/FORMAT.md). */
static void thread_renamed(struct tprof_writer *w, struct wthread *t, const char *name, size_t n)
{
	if (t->announced && (n != t->name_len || memcmp(name, t->name, n) != 0))
		write_thread(w, t, name, n);
}

/* The name a thread had as it exited, when it could tell (core.c). */
static void exit_name_check(struct tprof_writer *w, struct wthread *t)
{
	struct tprof_shm_thread *sl = SLOT(t);
	if (atomic_load_explicit(&sl->exit_named, memory_order_acquire))
		thread_renamed(w, t, sl->exit_name, strnlen(sl->exit_name, sizeof(sl->exit_name)));
}

/* Every live thread gets the name it has now (the writer looks every 200 ms, and at an exec; once
 * the process is gone only the names threads left as they exited remain). */
static void live_names_check(struct tprof_writer *w)
{
	uint32_t hwm = threads_hwm(w);
	for (uint32_t i = 0; i < hwm; i++) {
		struct wthread *t = &w->wthreads[i];
		if (atomic_load_explicit(&w->shm->threads[i].state, memory_order_acquire) != TPROF_SLOT_ACTIVE ||
		    !t->announced)
			continue;
		if (atomic_load_explicit(&w->shm->threads[i].exit_named, memory_order_acquire)) {
			exit_name_check(w, t); /* exited, not yet reaped: its task and name may be gone */
			continue;
		}
		char name[32];
		ssize_t n = read_thread_name(w, t->tid, name, sizeof(name));
		if (n >= 0)
			thread_renamed(w, t, name, (size_t)n);
	}
}

static void write_lost(struct tprof_writer *w, pid_t tid, uint64_t n)
{
	uint8_t *p = block_begin(w);
	p = tprof_put_varint(p, (uint64_t)tid);
	p = tprof_put_varint(p, n);
	block_end(w, TPROF_BLK_LOST, p);
	w->lost_written += n;
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
static void emit_events(struct tprof_writer *w, uint32_t tid, size_t len, const size_t *cuts, int ncuts)
{
	uint8_t *p = block_begin(w);
	if (w->zctx) {
		uint8_t *z = tprof_put_varint(tprof_put_varint(p, tid), len), *zp = z;
		size_t cap = EV_CAP - (size_t)(z - p), from = 0;
		int ok = 1;
		for (int k = 0; k <= ncuts && ok; k++) {
			size_t to = k < ncuts ? cuts[k] : len;
			if (to - from < 256 && k < ncuts)
				continue; /* too small to stand alone: goes with the next part */
			/* literals coded but in a frame made mostly of the sizes' stream (see where zctx
			 * is made; a small stream goes with the next one's frame) */
			size_t in_sizes = 0;
			if (ncuts > TPROF_S_SIZE) {
				size_t a = from > cuts[TPROF_S_SIZE - 1] ? from : cuts[TPROF_S_SIZE - 1];
				size_t b = to < cuts[TPROF_S_SIZE] ? to : cuts[TPROF_S_SIZE];
				in_sizes = b > a ? b - a : 0;
			}
			ZSTD_CCtx_setParameter(w->zctx, ZSTD_c_literalCompressionMode,
					       2 * in_sizes > to - from ? ZSTD_ps_disable : ZSTD_ps_enable);
			size_t zn = ZSTD_compress2(w->zctx, zp, cap - (size_t)(zp - z), w->ev_buf + from, to - from);
			ok = !ZSTD_isError(zn);
			zp += ok ? zn : 0;
			from = to;
		}
		if (ok && (size_t)(zp - p) < len) {
			block_end(w, TPROF_BLK_ZEVENTS, zp);
			return;
		}
	}
	memcpy(p, w->ev_buf, len);
	block_end(w, TPROF_BLK_EVENTS, p + len);
}

/* Kernel calls and annotations met in a run go to a KERNELS block of their own (the heap records'
 * codec never sees them); names met on the way are defined first, in a NAMES block. */

/* Returns the id the record is to carry: id once defined, or 0 (no name) for a name that cannot
 * be (not in the table, or empty: the program's memory is not ours to trust). */
static uint32_t define_name(struct tprof_writer *w, uint32_t id)
{
	if (id == 0 || id >= TPROF_NAME_IDS)
		return 0;
	if (w->name_written[id])
		return id;
	if (atomic_load_explicit(&w->shm->names[id].state, memory_order_acquire) != 2)
		return 0;
	const char *name = w->shm->names[id].name;
	size_t n = w->shm->names[id].len <= TPROF_NAME_MAX ? w->shm->names[id].len : TPROF_NAME_MAX;
	if (n == 0)
		return 0;
	uint8_t *p = block_begin(w);
	p = tprof_put_varint(p, 1);
	p = tprof_put_varint(p, TPROF_NAMES_ANNOT);
	p = tprof_put_varint(p, id);
	p = put_string(p, name, n);
	p = put_string(p, "", 0);
	block_end(w, TPROF_BLK_NAMES, p);
	w->name_written[id] = 1;
	return id;
}

/* Op op's entry of the op table, in a NAMES block of its own, unless this trace has it already:
 * written before the first KERNELS block that calls it (a trace without kernel calls holds none). */
static void define_op(struct tprof_writer *w, unsigned op)
{
	if (op == 0 || op >= TPROF_NOPS || w->op_written[op])
		return;
	const struct tprof_op_info *in = tprof_op_info(op);
	size_t dl = strlen(in->shape_names);
	uint8_t *p = block_begin(w);
	p = tprof_put_varint(p, 1);
	p = tprof_put_varint(p, TPROF_NAMES_OP);
	p = tprof_put_varint(p, op);
	p = put_string(p, in->name, strlen(in->name));
	p = put_string(p, in->shape_names + 1, dl >= 2 ? dl - 2 : 0); /* without the parentheses */
	block_end(w, TPROF_BLK_NAMES, p);
	w->op_written[op] = 1;
}

/* Appends the kernel call or annotation at ring counter `at` to kbuf; returns the entries it took. */
static uint32_t encode_kernel(struct tprof_writer *w, struct tprof_ring *r, uint32_t at, uint32_t avail, uint64_t ref)
{
	const struct tprof_ev *e = tprof_ring_at(r, at);
	unsigned kind = (unsigned)(e->seq_kind & 0xf);
	uint8_t *p = w->kbuf + KHDR + w->klen;
	if (kind == TPROF_RING_ANNOT) {
		uint32_t id = define_name(w, (uint32_t)(e->seq_kind >> 4) & (TPROF_STACK_IDS - 1));
		*p++ = TPROF_KREC_ANNOT;
		p = tprof_put_varint(p, e->size);
		p = tprof_put_varint(p, ev_seq(e->seq_kind, ref));
		p = tprof_put_svarint(p, (int64_t)(e->tick - w->kprev_tick));
		w->kprev_tick = e->tick;
		p = tprof_put_varint(p, id);
		p = tprof_put_svarint(p, (int64_t)e->ptr);
		w->klen = (size_t)(p - w->kbuf) - KHDR;
		w->kcount++;
		return 1;
	}
	if (kind != TPROF_RING_KCALL)
		return 1; /* a stray shape entry: never produced */
	unsigned op = (unsigned)(e->seq_kind >> 4) & 0x3ff, ns = (unsigned)(e->seq_kind >> 14) & 0xf;
	define_op(w, op);
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
		uint64_t wd[7] = {x->seq_kind >> 32, x->tick, x->size, x->ptr, 0, 0, 0};
		if (!wide) {
			wd[1] = x->tick & 0xffffffffu;
			wd[2] = x->tick >> 32;
			wd[3] = x->size & 0xffffffffu;
			wd[4] = x->size >> 32;
			wd[5] = x->ptr & 0xffffffffu;
			wd[6] = x->ptr >> 32;
		} else {
			wd[0] = x->tick;
			wd[1] = x->size;
			wd[2] = x->ptr;
		}
		for (unsigned i = 0; i < per && first + k * per + i < ns; i++)
			s[first + k * per + i] = wide ? (int64_t)wd[i] : (int64_t)(int32_t)(uint32_t)wd[i];
	}
	struct tprof_op_cost cost = tprof_op_cost(op, s, ns);
	*p++ = TPROF_KREC_CALL;
	p = tprof_put_varint(p, op);
	p = tprof_put_svarint(p, (int64_t)(e->tick - w->kprev_tick));
	w->kprev_tick = e->tick;
	p = tprof_put_varint(p, e->seq_kind >> TPROF_RING_KDUR_SHIFT);
	p = tprof_put_varint(p, cost.flops);
	p = tprof_put_varint(p, cost.bytes);
	p = tprof_put_varint(p, ns);
	for (unsigned i = 0; i < ns; i++)
		p = tprof_put_svarint(p, s[i]);
	w->klen = (size_t)(p - w->kbuf) - KHDR;
	w->kcount++;
	return 1 + extra;
}

/* The staged kernel calls and annotations as one block: ZKERNELS when compressing pays (a training
 * loop calls the same ops with the same shapes: 7 times smaller), else KERNELS. The tid and count go
 * in the KHDR bytes before the records. */
static void kernels_flush(struct tprof_writer *w, uint32_t tid)
{
	if (!w->kcount)
		return;
	uint8_t hdr[20];
	size_t n = (size_t)(tprof_put_varint(tprof_put_varint(hdr, tid), w->kcount) - hdr);
	uint8_t *raw = w->kbuf + KHDR - n;
	memcpy(raw, hdr, n);
	emit_maybe_compressed(w, TPROF_BLK_KERNELS, TPROF_BLK_ZKERNELS, raw, n + w->klen);
	w->klen = 0;
	w->kcount = 0;
	w->kprev_tick = 0;
}

/* A heap entry whose tick was measured: the end of a run of unmeasured ones. */
static inline int measured_heap(const struct tprof_ev *e)
{
	unsigned k = (unsigned)(e->seq_kind & 0xf);
	return e->tick != 0 && (k <= TPROF_EV_KIND_MAX || k == TPROF_RING_REALLOC_TAIL);
}

static uint32_t encode_run(struct tprof_writer *w, struct wthread *t, uint32_t first, uint32_t n, int hold, uint64_t ref)
{
	struct tprof_ring *r = t->ring;
	uint8_t *out[TPROF_NSTREAMS];
	for (int s = 0; s < TPROF_NSTREAMS; s++)
		out[s] = w->streams[s];
	tprof_rec_encoder_init(&w->enc, t->last_seq, t->last_tick);
	uint32_t i = 0, recs = 0;
	uint32_t next = 0; /* index of the next measured event, when next > i */
	size_t bytes = 0;
	int in_run = 0; /* the last record had no tick: its run must end, measured, in this block */
	while (i < n && (in_run || (bytes < BLOCK_TARGET && recs < (1u << 21) - 64 && w->klen < KBUF_CAP - KREC_MAX))) {
		const struct tprof_ev *e = tprof_ring_at(r, first + i);
		__builtin_prefetch(tprof_ring_at(r, first + i + 8)); /* lines come from another core */
		unsigned kk = (unsigned)(e->seq_kind & 0xf);
		if (kk >= TPROF_RING_KCALL && kk <= TPROF_RING_ANNOT) {
			if (w->klen >= KBUF_CAP - KREC_MAX)
				kernels_flush(w, (uint32_t)t->tid); /* only inside a run of unmeasured heap events */
			i += encode_kernel(w, r, first + i, n - i, ref);
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
				rec.tick = w->enc.st.tick; /* idle since: no later measurement will come */
		}
		if (tprof_kind_is_realloc(rec.kind)) {
			if (i + 1 >= n)
				break; /* not possible: pairs are published together */
			const struct tprof_ev *e2 = tprof_ring_at(r, first + i + 1);
			rec.old_ptr = e2->ptr;
			rec.seq2 = ev_seq(e2->seq_kind, ref);
			rec.tick2 = e2->tick;
			i++;
			w->reallocs_written++;
		}
		if (rec.stack)
			define_stack(w, rec.stack);
		uint32_t dist = tprof_rec_encode(out, &w->enc, &rec);
		if (w->live)
			leak_live_block_rec(w->live, &rec, dist, w->enc.st.nalloc);
		in_run = rec.no_tick;
		i++;
		recs++;
		if ((recs & 15) == 0) { /* bytes only grows: stale by 15 records (1.2 KB) at most */
			bytes = 0;
			for (int s = 0; s < TPROF_NSTREAMS; s++)
				bytes += (size_t)(out[s] - w->streams[s]);
		}
	}
	if (w->live)
		leak_live_block_end(w->live);
	if (recs) {
		uint8_t *p = w->ev_buf;
		p = tprof_put_varint(p, (uint64_t)t->tid);
		p = tprof_put_varint(p, recs);
		p = tprof_put_varint(p, t->last_seq);
		p = tprof_put_varint(p, t->last_tick);
		for (int s = 0; s < TPROF_NSTREAMS; s++)
			p = tprof_put_varint(p, (uint64_t)(out[s] - w->streams[s]));
		size_t cuts[TPROF_NSTREAMS];
		for (int s = 0; s < TPROF_NSTREAMS; s++) {
			size_t len = (size_t)(out[s] - w->streams[s]);
			memcpy(p, w->streams[s], len);
			p += len;
			cuts[s] = (size_t)(p - w->ev_buf);
		}
		stacks_flush(w);
		emit_events(w, (uint32_t)t->tid, (size_t)(p - w->ev_buf), cuts, TPROF_NSTREAMS - 1);
	}
	kernels_flush(w, (uint32_t)t->tid);
	t->last_seq = w->enc.st.seq;
	t->last_tick = w->enc.st.tick;
	w->events_written += recs;
	return i;
}


/* Drains t's ring completely; returns the number of ring entries consumed. */
static uint64_t drain_thread(struct tprof_writer *w, struct wthread *t)
{
	struct tprof_ring *r = t->ring;
	uint64_t total = 0;
	uint32_t first, n;
	n = tprof_ring_available(r, &first);
	if (t->discard) {
		if (!t->announced)
			announce_thread(w, t);
		tprof_ring_consume(r, n);
		if (atomic_exchange(&r->waiting, 0))
			tprof_futex_wake(&r->tail);
		uint64_t lost = atomic_load_explicit(&r->lost, memory_order_relaxed);
		if (n || lost != t->lost_reported)
			write_lost(w, t->tid, n + lost - t->lost_reported);
		t->lost_reported = lost;
		return n;
	}
	if (n > w->busiest)
		w->busiest = n;
	/* A thread whose ring has not moved for a few milliseconds is idle: write all it has. (Not
	 * moved since the last pass is not enough: passes come every 100 us while rings fill fast,
	 * and a busy thread the scheduler held off for that long would be written in small blocks,
	 * which compress badly and cost the reader per block.) */
	uint64_t now = mono_ns();
	if (first + n != t->seen_head)
		t->moved_ns = w->active_ns = now;
	t->seen_head = first + n;
	int hold = !w->flushing && n != 0 && now - t->moved_ns < 5000000u;
	/* A busy thread's events wait until they fill a good block (a quarter of the ring, where the
	 * producer wakes us) or have waited 100 ms: small blocks compress badly. */
	if (hold && n < (r->mask + 1) / 4 && now - t->last_write_ns < 100000000u)
		return 0;
	t->last_write_ns = now;
	while ((n = tprof_ring_available(r, &first)) != 0) {
		if (total && hold && n < (r->mask + 1) / 4)
			break; /* the rest arrived while we wrote: it waits for a full block too */
		if (!t->announced)
			announce_thread(w, t);
		uint64_t ref = atomic_load(&w->shm->seq); /* after the head: above every published seq */
		uint32_t done = encode_run(w, t, first, n, hold, ref);
		tprof_ring_consume(r, done);
		total += done;
		if (atomic_exchange(&r->waiting, 0))
			tprof_futex_wake(&r->tail);
		if (done == 0)
			break;
	}
	uint64_t lost = atomic_load_explicit(&r->lost, memory_order_relaxed);
	if (lost != t->lost_reported) {
		write_lost(w, t->tid, lost - t->lost_reported);
		t->lost_reported = lost;
	}
	return total;
}

/* The slot's ring in our mapping; NULL when its offset is not a ring of the file. */
static struct tprof_ring *ring_of(struct tprof_writer *w, struct wthread *t)
{
	struct tprof_shm_thread *sl = SLOT(t);
	uint64_t off = sl->ring_off;
	if (off == t->ring_off && t->ring)
		return t->ring;
	uint32_t entries = sl->ring_entries;
	if (!off || entries < 64 || entries & (entries - 1) ||
	    tprof_ring_bytes(entries) > w->shm_bytes || off > w->shm_bytes - tprof_ring_bytes(entries))
		return NULL;
	struct tprof_ring *r = view(off, tprof_ring_bytes(entries));
	/* no room for the ring (a low address space limit): its header alone, so that its events
	 * can be counted lost and the thread never waits for room that would not come */
	int discard = !r && (r = view(off, sizeof(*r))) != NULL;
	if (!r || r->mask != entries - 1)
		return NULL;
	t->ring = r;
	t->ring_off = off;
	t->discard = discard;
	w->ring_unmapped |= discard;
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

/* An active slot whose thread is not the one the writer knew: forget the old one and announce the
 * new one now (it may be gone by its first write). */
static void slot_check(struct tprof_writer *w, struct wthread *t, const struct tprof_shm_thread *sl)
{
	if (sl->tid != t->tid) {
		slot_taken(t, sl->tid);
		announce_thread(w, t);
	}
}

/* Gives back the memory of a freed slot's ring but its first page (the header and the first events,
 * which the slot's next thread writes first): the traced process's memory follows its live threads,
 * not every thread it ever had (each slot's ring would fill up to its 2 MiB over the slot's threads).
 * The slot is not free yet, so no thread writes the ring meanwhile. */
static void ring_give_back(struct tprof_writer *w, const struct wthread *t)
{
	/* not once the process took its exit sample: it counted the ring's pages, which the file's
	 * size, read as the sample is written, must still hold to be taken out of it */
	if (t->discard || !t->ring || atomic_load(&w->shm->exit_rss_bytes))
		return;
	uint64_t from = (t->ring_off + 4096) & ~4095ull;
	uint64_t to = (t->ring_off + tprof_ring_bytes(t->ring->mask + 1)) & ~4095ull;
	if (to > from)
		(void)fallocate(w->shm_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)from, (off_t)(to - from));
}

/* A thread that the kernel no longer knows has published its last event: drain, record its end,
 * free the slot for reuse. exited_only: only the threads that began to exit (exit_named), without
 * a system call for the others; returns how many of those were not gone yet. */
static int reap_dead_threads(struct tprof_writer *w, int exited_only)
{
	uint32_t hwm = threads_hwm(w);
	int left = 0;
	for (uint32_t i = 0; i < hwm; i++) {
		struct wthread *t = &w->wthreads[i];
		struct tprof_shm_thread *sl = &w->shm->threads[i];
		if (atomic_load_explicit(&sl->state, memory_order_acquire) != TPROF_SLOT_ACTIVE || !t->ring)
			continue;
		if (exited_only && !atomic_load_explicit(&sl->exit_named, memory_order_acquire))
			continue;
		slot_check(w, t, sl); /* a thread took the slot since the last drain (and may be gone) */
		if (!w->own_ns || syscall(SYS_tgkill, w->tpid, t->tid, 0) == 0 || errno != ESRCH) {
			left += exited_only && w->own_ns;
			continue; /* (in another pid namespace its slots are not reused) */
		}
		int was = w->flushing;
		w->flushing = 1;
		drain_thread(w, t);
		w->flushing = was;
		exit_name_check(w, t);
		if (t->announced) {
			uint8_t *p = block_begin(w);
			p = tprof_put_varint(p, (uint64_t)t->tid);
			block_end(w, TPROF_BLK_THREAD_END, p);
		}
		t->announced = 0;
		t->lost_reported = 0;
		atomic_store(&t->ring->lost, 0);
		ring_give_back(w, t);
		atomic_store_explicit(&sl->state, TPROF_SLOT_FREE, memory_order_release);
	}
	return left;
}

static uint64_t drain_all(struct tprof_writer *w)
{
	uint64_t total = 0;
	w->busiest = 0;
	uint32_t hwm = threads_hwm(w);
	for (uint32_t i = 0; i < hwm; i++) {
		struct wthread *t = &w->wthreads[i];
		struct tprof_shm_thread *sl = &w->shm->threads[i];
		if (atomic_load_explicit(&sl->state, memory_order_acquire) != TPROF_SLOT_ACTIVE)
			continue;
		slot_check(w, t, sl);
		if (ring_of(w, t))
			total += drain_thread(w, t);
	}
	uint64_t g = atomic_load(&w->shm->lost_global);
	if (g != w->global_reported) {
		write_lost(w, 0, g - w->global_reported);
		w->global_reported = g;
	}
	return total;
}

/* The live-block table remembers each freed address until no event before its free can still come
 * (recorder/leakscan.h). Once many are remembered, and at a moment when no thread is inside a hook
 * and every ring is drained, every event numbered below the counter read first has been applied:
 * the addresses freed before it are forgotten. */
static void live_prune(struct tprof_writer *w)
{
	uint64_t freed = leak_live_freed(w->live);
	if (freed < 65536 || freed < leak_live_count(w->live) / 2)
		return;
	uint64_t below = atomic_load(&w->shm->seq);
	uint32_t hwm = threads_hwm(w);
	for (uint32_t i = 0; i < hwm; i++)
		if (atomic_load(&w->shm->threads[i].inflight))
			return;
	for (uint32_t i = 0; i < hwm; i++) {
		struct wthread *t = &w->wthreads[i];
		uint32_t first;
		if (atomic_load(&w->shm->threads[i].state) == TPROF_SLOT_ACTIVE && t->ring &&
		    tprof_ring_available(t->ring, &first))
			return;
	}
	leak_live_prune(w->live, below);
}

static uint64_t stacks_count(struct tprof_writer *w)
{
	uint32_t n = atomic_load(&w->shm->stack_next_id);
	return n == 0 ? 0 : n > TPROF_STACK_IDS ? TPROF_STACK_IDS - 1 : n - 1;
}

static void write_end(struct tprof_writer *w, int reason, int value, unsigned flags)
{
	uint8_t *p = block_begin(w);
	p = tprof_put_varint(p, (uint64_t)reason);
	p = tprof_put_varint(p, (uint64_t)(uint32_t)value);
	p = tprof_put_varint(p, atomic_load(&w->shm->seq));
	p = tprof_put_varint(p, w->events_written);
	p = tprof_put_varint(p, w->lost_written);
	p = tprof_put_varint(p, stacks_count(w));
	p = tprof_put_varint(p, atomic_load(&w->shm->stack_dropped));
	p = tprof_put_varint(p, flags);
	block_end(w, TPROF_BLK_END, p);
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

/* The line of an image that exec'd into one that registered too is held, and written with that
 * image's own line when it ends: written at once, it would come while the new program runs, and
 * could land between two writes of one line of its (err(3) writes "name: " and the message
 * apart). Per process: the lines held (oldest first), or, once its last image's line is out
 * before an older one's came, a mark that the older writes at once. */
struct held_line {
	pid_t pid;
	int printed; /* the newest image's line is out: any older one is written at once */
	char *text;  /* NULL: none held */
	struct held_line *next;
};
static pthread_mutex_t held_lock = PTHREAD_MUTEX_INITIALIZER;
static struct held_line *held;

static struct held_line **held_find(pid_t pid)
{
	struct held_line **h = &held;
	while (*h && (*h)->pid != pid)
		h = &(*h)->next;
	return h;
}

static void held_drop(struct held_line **h)
{
	struct held_line *e = *h;
	*h = e->next;
	free(e->text);
	free(e);
}

static char *concat(const char *a, const char *b)
{
	size_t na = a ? strlen(a) : 0, nb = strlen(b);
	char *s = malloc(na + nb + 1);
	if (s) {
		if (na)
			memcpy(s, a, na);
		memcpy(s + na, b, nb + 1);
	}
	return s;
}

void tprof_writer_flush_held(pid_t pid)
{
	pthread_mutex_lock(&held_lock);
	for (struct held_line **h = &held; *h;) {
		if (pid && (*h)->pid != pid) {
			h = &(*h)->next;
			continue;
		}
		if ((*h)->text && tprof_recorder_stderr_ok((*h)->pid))
			fputs((*h)->text, stderr);
		held_drop(h);
	}
	pthread_mutex_unlock(&held_lock);
}

static void report_path(struct tprof_writer *w, int reason, int value)
{
	char line[4096 + 1024 + 512], how[96];
	line[0] = 0;
	if (!w->shm->quiet) {
		/* the program's name and the file's as a terminal may show them (sys.h) */
		char name[1024], file[4096];
		tprof_text_copy(name, sizeof(name), w->prog_name);
		tprof_text_copy(file, sizeof(file), trace_name(w));
		int n = snprintf(line, sizeof(line), "tprof: %s (pid %d) %s: %llu events%s%s, %s %s\n", name,
				 (int)w->label, end_words(reason, value, how, sizeof(how)),
				 (unsigned long long)(w->events_written + w->reallocs_written),
				 w->lost_written ? ", LOST " : "",
				 w->lost_written ? "some" : "",
				 w->trace_removed ? "no trace: nothing of it could be written to"
				 : w->out_failed  ? "trace incomplete:"
						  : "trace written to",
				 file);
		if (w->shm->debug && n > 0 && (size_t)n < sizeof(line))
			snprintf(line + n, sizeof(line) - (size_t)n,
				 "tprof: recorder CPU for pid %d: %llu us, of which the leak scan %llu us\n", (int)w->label,
				 (unsigned long long)((thread_cpu_ns() - w->cpu_start) / 1000),
				 (unsigned long long)(w->scan_cpu / 1000));
	}
	int hold = reason == TPROF_END_EXEC && atomic_load(&w->exec_seen); /* its next image registered */
	pthread_mutex_lock(&held_lock);
	struct held_line **h = held_find(w->tpid), *e = *h;
	if (hold && !(e && e->printed)) {
		char *t = concat(e ? e->text : NULL, line);
		if (!e && t && (e = calloc(1, sizeof(*e))) != NULL) {
			e->pid = w->tpid;
			e->next = held;
			held = e;
		}
		if (e && t) {
			free(e->text);
			e->text = t;
			pthread_mutex_unlock(&held_lock);
			return;
		}
		free(t); /* no memory: written now */
	}
	const char *before = e && e->text ? e->text : "";
	if ((before[0] || line[0]) && tprof_recorder_stderr_ok(w->tpid))
		fprintf(stderr, "%s%s", before, line); /* one write */
	if (e)
		held_drop(h);
	else if (w->after_exec && !hold) /* an older image's line is still to come: at once, then */
		if ((e = calloc(1, sizeof(*e))) != NULL) {
			e->pid = w->tpid;
			e->printed = 1;
			e->next = held;
			held = e;
		}
	pthread_mutex_unlock(&held_lock);
}

/* A process that did not say how it ended was killed, or made the raw exit system call: only its
 * zombie tells which, and its parent may reap it at once. So the server thread, which waits on
 * every traced process's pidfd, reads the zombie the moment it appears (tprof_writer_gone); it wins
 * that race most of the time, and always under tprof record, which reaps its child only after the
 * child's trace is written. */
/* Wakes the writer (server thread) through the word it sleeps on, in the shared memory, unless the
 * writer is letting that memory go: once it has seen the flag just set it may finish and unmap at
 * any moment, and a server thread preempted between the flag and the wake-up would then write
 * into memory no longer mapped. Both sides' flags are sequentially consistent: either the server
 * sees closing, or the writer sees poking and waits for it to end. */
static void poke(struct tprof_writer *w)
{
	atomic_store(&w->poking, 1);
	if (!atomic_load(&w->closing)) {
		atomic_fetch_add(&w->shm->kick, 1);
		tprof_futex_wake(&w->shm->kick);
	}
	atomic_store(&w->poking, 0);
}

void tprof_writer_gone(struct tprof_writer *w, int pidfd, const int *status)
{
	if (atomic_load(&w->process_gone))
		return;
	/* the trace's last clock pair: the end of the process, not the writer's last write */
	w->gone_clock[0] = now_tick(w);
	w->gone_clock[1] = mono_ns();
	w->gone_clock[2] = real_ns();
	/* read even when the process said how it ends: what it said can be wrong (two threads call
	 * exit at once and the other one's status wins; a destructor crashes after it said exit) */
	int st;
	/* with a start time (before Linux 6.15) the zombie read is checked against it; without, against
	 * the pidfd (a read of /proc for a pid that is no longer the process's must never count) */
	int known = status ? (st = *status, 1)
		    : w->starttime ? tprof_zombie_status(w->tpid, w->starttime, &st) == 0
				   : tprof_zombie_status_pidfd(w->tpid, pidfd, &st) == 0;
	if (known) {
		atomic_store(&w->zombie_status, st);
		atomic_store(&w->zombie_known, 1);
	} else if (pidfd >= 0 && tprof_pidfd_exit_kept()) {
		int d = fcntl(pidfd, F_DUPFD_CLOEXEC, 3); /* for end_of: the status once it is reaped */
		w->late_pidfd = d >= 0 ? d + 1 : 0;
	}
	atomic_store(&w->process_gone, 1);
	poke(w);
}

void tprof_writer_exec(struct tprof_writer *w)
{
	atomic_store(&w->exec_seen, 1);
	poke(w);
}

const char *tprof_writer_trace_path(const struct tprof_writer *w)
{
	return w->trace_abs;
}

int tprof_writer_done(const struct tprof_writer *w)
{
	return atomic_load(&w->done);
}

/* How the process ended: what it said itself (exit status, _exit, quick_exit), an exec, or what its
 * zombie tells (/proc/PID/stat, field 52, while its parent has not reaped it): a signal, or an exit
 * status without an exit call (the raw system call). Else it vanished. The zombie, when read, has
 * the last word on the status: another thread's exit call may have ended the process first, or a
 * signal after the process said it was exiting. */
static void end_of(struct tprof_writer *w, int exec_seen, int *reason, int *value)
{
	*value = 0;
	int late = w->late_pidfd - 1; /* -1: none; closed on every way out */
	w->late_pidfd = 0;
	if (exec_seen) {
		if (late >= 0)
			close(late);
		*reason = TPROF_END_EXEC;
		return;
	}
	int status = atomic_load(&w->zombie_status);
	int known = atomic_load(&w->zombie_known) || tprof_zombie_status(w->tpid, w->starttime, &status) == 0;
	if (late >= 0) {
		/* its zombie hid the status (a non-dumpable process): the kernel gives it to the pidfd
		 * once the parent has reaped it, which a parent mostly does at once (100 ms at most) */
		for (int k = 0; k < 20 && !known; k++) {
			known = tprof_pidfd_status(late, &status) == 0;
			if (!known)
				nanosleep(&(struct timespec){0, 5000000}, NULL);
		}
		close(late);
	}
	int r = atomic_load(&w->shm->end_reason);
	int noted = r == TPROF_END_EXIT || r == TPROF_END__EXIT || r == TPROF_END_QUICK_EXIT;
	if (!noted && atomic_load(&w->shm->exec_pending)) {
		*reason = TPROF_END_EXEC;
		return;
	}
	if (known && WIFSIGNALED(status)) {
		*reason = TPROF_END_SIGNAL;
		*value = WTERMSIG(status);
	} else if (noted) {
		*reason = r;
		*value = known && WIFEXITED(status) ? WEXITSTATUS(status) : atomic_load(&w->shm->end_value);
	} else if (known && WIFEXITED(status)) { /* an exit call began, or none was seen */
		*reason = r == TPROF_END_EXIT_BEGUN ? TPROF_END_EXIT : TPROF_END__EXIT;
		*value = WEXITSTATUS(status);
	} else {
		*reason = TPROF_END_VANISHED;
	}
}

/* The reachability scan the process asked for on its way out (preload/scan.c): every event up to
 * now, then the process's memory, then the LEAKS blocks; the process goes on when it sees DONE. */
static void leak_scan_now(struct tprof_writer *w)
{
	uint32_t asked = TPROF_SCAN_ASKED;
	if (!atomic_compare_exchange_strong(&w->shm->scan_state, &asked, TPROF_SCAN_SCANNING))
		return;
	int was = w->flushing;
	w->flushing = 1;
	drain_all(w);
	w->flushing = was;
	uint64_t cpu = thread_cpu_ns();
	if (!w->scan)
		w->scan = calloc(1, sizeof(*w->scan));
	if (w->scan) {
		w->scan->status = TPROF_LEAKS_NOMEM;
		if (w->live)
			leak_scan(w->tpid, w->shm, w->live, &w->shm->heartbeat, w->scan);
		w->scan_reason = w->shm->scan_reason;
		if (w->shm->debug)
			fprintf(stderr,
				"tprof: leak scan of pid %d: %llu live blocks, %.1f MiB of roots and %.1f MiB of blocks "
				"read in %.1f ms (status %d)\n",
				(int)w->label, (unsigned long long)w->scan->live_blocks,
				(double)w->scan->root_bytes / (1 << 20), (double)w->scan->block_bytes / (1 << 20),
				(double)w->scan->ns / 1e6, w->scan->status);
	}
	w->scan_cpu += thread_cpu_ns() - cpu;
	atomic_store(&w->shm->scan_state, TPROF_SCAN_DONE);
	tprof_futex_wake(&w->shm->scan_state);
}

/* The scan's result as LEAKS blocks, once every event is in: threads that went on after the scan
 * until the process ended may have freed scanned blocks (left out) or allocated others (listed
 * without a kind). */
static void leak_write(struct tprof_writer *w)
{
	struct leak_result *r = w->scan;
	if (!r)
		return;
	if (w->live && leak_result_final(r, w->live) != 0)
		r->status = TPROF_LEAKS_NOMEM;
	uint64_t prev = 0, listed = 0;
	uint8_t *p = NULL, *start = NULL;
	uint32_t n = 0;
	for (uint64_t i = 0; r->status == TPROF_LEAKS_OK && i <= r->nblocks; i++) {
		if (p && (i == r->nblocks || p - start > (60 << 10))) {
			uint8_t *q = block_begin(w);
			*q++ = TPROF_LEAKS_PART_BLOCKS;
			q = tprof_put_varint(q, n);
			memcpy(q, w->ev_buf, (size_t)(p - start));
			block_end(w, TPROF_BLK_LEAKS, q + (p - start));
			p = NULL;
			n = 0;
		}
		if (i == r->nblocks)
			break;
		const struct leak_block *b = &r->blocks[i];
		if (b->kind == TPROF_LEAK_REACHABLE && !b->heuristic && !b->late)
			continue;
		if (!p)
			p = start = w->ev_buf;
		p = tprof_put_varint(p, b->addr - prev);
		p = tprof_put_varint(p, b->size);
		*p++ = (uint8_t)(b->late ? TPROF_LEAKS_LATE : (unsigned)(b->kind | b->heuristic << 2));
		if (!b->late && b->kind == TPROF_LEAK_DEFINITE)
			p = tprof_put_varint(p, b->indirect);
		prev = b->addr;
		n++;
		listed++;
	}
	uint8_t *q = block_begin(w);
	*q++ = TPROF_LEAKS_PART_SUMMARY;
	q = tprof_put_varint(q, (uint64_t)r->status);
	q = tprof_put_varint(q, (uint64_t)r->err);
	q = tprof_put_varint(q, w->scan_reason);
	q = tprof_put_varint(q, r->live_blocks);
	q = tprof_put_varint(q, r->live_bytes);
	q = tprof_put_varint(q, listed);
	q = tprof_put_varint(q, r->threads_stopped);
	q = tprof_put_varint(q, r->threads_missed);
	q = tprof_put_varint(q, r->ns);
	q = tprof_put_varint(q, r->root_bytes);
	q = tprof_put_varint(q, r->block_bytes);
	block_end(w, TPROF_BLK_LEAKS, q);
	leak_result_free(r);
	free(r);
	w->scan = NULL;
}

/* The end of a trace: everything in the rings, the modules, a last clock pair, then END. */
static void finish_trace(struct tprof_writer *w, int exec_seen, int alive)
{
	w->flushing = 1;
	drain_all(w);
	if (alive)
		live_names_check(w);
	uint32_t hwm = threads_hwm(w);
	unsigned flags = 0;
	for (uint32_t i = 0; i < hwm; i++) {
		if (atomic_load(&w->shm->threads[i].state) != TPROF_SLOT_ACTIVE)
			continue;
		exit_name_check(w, &w->wthreads[i]);
		uint32_t mark = atomic_load(&w->shm->threads[i].inflight); /* shm.h */
		if (mark == 3 || mark == 4)
			flags |= TPROF_ENDF_INFLIGHT;
		else if (mark == 1)
			flags |= TPROF_ENDF_INCALL;
	}
	if (atomic_load(&w->shm->reserve_failed) || w->ring_unmapped)
		flags |= TPROF_ENDF_RESERVE;
	if (atomic_load(&w->shm->sandboxed))
		flags |= TPROF_ENDF_SECCOMP;
	uint32_t unhooked = atomic_load(&w->shm->unhooked);
	if (unhooked & TPROF_UNHOOKED_NEW)
		flags |= TPROF_ENDF_NEW_UNHOOKED;
	if (unhooked & TPROF_UNHOOKED_DEEPBIND)
		flags |= TPROF_ENDF_DEEPBIND;
	modules_update(w);
	stacks_flush(w);
	uint64_t xb = atomic_load(&w->shm->exit_rss_bytes);
	if (xb && w->shm->rss_interval_ms) /* taken by the process on its way out */
		rss_add(w, atomic_load(&w->shm->exit_rss_tick), xb);
	rss_flush(w);
	/* the last pair, when the process's end was seen: a backlog the writer drains after it is not
	 * the process's time (a pair taken meanwhile, before the writer saw the end, stays the last) */
	if (atomic_load(&w->process_gone) && w->gone_clock[1])
		write_clock_at(w, w->gone_clock[0], w->gone_clock[1], w->gone_clock[2]);
	else
		write_clock(w);
	if (!w->scan && w->shm->leakscan && atomic_load(&w->shm->scan_state) == TPROF_SCAN_EMPTY &&
	    (w->scan = calloc(1, sizeof(*w->scan))) != NULL) {
		/* the process held no block of its own at its end: the result of a scan that finds
		 * nothing to classify, without the scan (what it allocated later, in a signal
		 * handler, is listed late) */
		w->scan->status = TPROF_LEAKS_OK;
		w->scan_reason = w->shm->scan_reason;
	}
	uint64_t cpu = thread_cpu_ns();
	leak_write(w);
	w->scan_cpu += thread_cpu_ns() - cpu;
	int reason, value;
	end_of(w, exec_seen, &reason, &value);
	write_end(w, reason, value, flags);
	out_flush(w);
	/* nothing could be written (a full file system from the start): no empty file is left */
	struct stat st;
	if (w->out_failed && fstat(w->trace_fd, &st) == 0 && st.st_size == 0)
		w->trace_removed = tprof_remove_empty_trace(w->trace_fd, w->trace_abs, !w->own_mode, w->owner_uid,
							    w->owner_gid);
	report_path(w, reason, value);
}

/* Waits for the process to fill in the header (it does right after the recorder's answer). */
static int header_ok(const struct tprof_writer *w)
{
	return __atomic_load_n(&w->shm->magic, __ATOMIC_ACQUIRE) == TPROF_SHM_MAGIC &&
	       w->shm->version == TPROF_SHM_VERSION && w->shm->bytes == sizeof(*w->shm);
}

/* The process wakes us when it has written it; at most 10 s. */
static int wait_header(struct tprof_writer *w)
{
	uint64_t until = mono_ns() + 10000000000ull;
	for (;;) {
		uint32_t k = atomic_load(&w->shm->kick);
		if (header_ok(w))
			return 0;
		if (atomic_load(&w->process_gone) || mono_ns() >= until)
			return header_ok(w) ? 0 : -1;
		tprof_futex_wait(&w->shm->kick, k, 10000000);
	}
}

/* A context keeps its thread between images: no thread to start and no stack to fault in again
 * for each process of a fork storm. An idle thread waits 5 s for another image, then ends. */
enum { THREAD_NONE, THREAD_BUSY, THREAD_IDLE };

/* Closes the image's files and unmaps its memory: the context keeps only its buffers. */
static void let_go(struct tprof_writer *w)
{
	close(w->trace_fd);
	close(w->shm_fd);
	w->trace_fd = w->shm_fd = -1;
	for (int i = 0; i < w->nviews; i++)
		munmap(w->views[i], w->view_len[i]);
	w->nviews = 0;
	for (int i = 0; i < w->nparts; i++)
		munmap(w->part_views[i], w->part_len[i]);
	w->nparts = 0;
	leak_live_free(w->live);
	w->live = NULL;
	if (w->scan) {
		leak_result_free(w->scan);
		free(w->scan);
		w->scan = NULL;
	}
}

/* A trace file the recorder created for the process: the mode the process would have given it,
 * with its umask (/proc/PID/status; 022 when it cannot be read). */
static void give_mode(struct tprof_writer *w)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)w->tpid);
	ssize_t n = tprof_proc_read(path, buf, sizeof(buf) - 1);
	mode_t mask = 022;
	if (n > 0) {
		buf[n] = 0;
		const char *l = strstr(buf, "\nUmask:");
		if (l)
			mask = (mode_t)strtol(l + 7, NULL, 8) & 0777;
	}
	if (fchmod(w->trace_fd, 0644 & ~mask) != 0) {
	} /* 0600 is the safe side */
}

/* Removes the trace file fd, at path, of a process that ended before it could be traced, when it
 * is still empty and still the file the path names; 1 when removed. With the file system rights of
 * the process's user when the recorder is root's and the process made the file itself (as_owner:
 * the path is the process's to choose), through its directory held open: a path component swapped
 * meanwhile cannot make it name another file. */
int tprof_remove_empty_trace(int fd, const char *path, int as_owner, uid_t uid, gid_t gid)
{
	struct stat ours, there;
	const char *base = strrchr(path, '/');
	if (path[0] != '/' || !base[1] || fstat(fd, &ours) != 0 || ours.st_size != 0 || strlen(path) >= 4096)
		return 0;
	char dir[4096];
	size_t dl = base == path ? 1 : (size_t)(base - path);
	memcpy(dir, path, dl);
	dir[dl] = 0;
	/* per thread: the recorder's other threads keep the recorder's */
	as_owner = as_owner && geteuid() == 0 && (uid != 0 || gid != 0);
	if (as_owner) {
		setfsgid(gid);
		setfsuid(uid);
	}
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int gone = dfd >= 0 && fstatat(dfd, base + 1, &there, AT_SYMLINK_NOFOLLOW) == 0 &&
		   there.st_ino == ours.st_ino && there.st_dev == ours.st_dev && unlinkat(dfd, base + 1, 0) == 0;
	if (dfd >= 0)
		close(dfd);
	if (as_owner) {
		setfsuid(0);
		setfsgid(0);
		/* a change of the file system ids clears the thread's parent-death signal */
		if (tprof_recorder_pdeathsig)
			prctl(PR_SET_PDEATHSIG, tprof_recorder_pdeathsig);
	}
	return gone;
}

/* The whole life of one trace. */
static void write_trace(struct tprof_writer *w)
{
	w->cpu_start = thread_cpu_ns();
	if (w->own_mode)
		give_mode(w);
	if (wait_header(w) != 0) {
		/* it gave up registering (and said why), or was killed meanwhile: no event can be known.
		 * The empty file goes, as a process removes its own. */
		int gone = tprof_remove_empty_trace(w->trace_fd, w->trace_abs, !w->own_mode, w->owner_uid,
						    w->owner_gid);
		if (!w->hello_quiet)
			fprintf(stderr, "tprof: pid %d ended before it could be traced: %s\n", (int)w->label,
				gone ? "no trace" : "its trace is empty");
		goto out;
	}
	w->clock_is_tsc = w->shm->clock == TPROF_CLOCK_TSC;
	if (w->shm->leakscan) {
		w->live = leak_live_new(&w->shm->heartbeat);
		w->shm->scan_reader = (int32_t)getpid();
	}
	if (w->shm->compress && !w->zctx) {
		size_t ws = ZSTD_estimateCCtxSize(1);
		void *m = mmap(NULL, ws, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED)
			w->zctx = ZSTD_initStaticCCtx(m, ws);
		/* Event streams (ZSTD_compress2): level -5, entropy-coded literals. Most of a stream
		 * is literals, and zstd's negative levels leave them raw by default; with them coded, the
		 * storm's trace is 3 % larger than at level 1 (a small program's 5 to 7 %) and its
		 * streams compress in 0.89 of the time (15.1 -> 13.3 ns per malloc/free pair, best of
		 * 9; the recorder's time bounds the storm's). But for the sizes' stream: sizes that
		 * repeat are matches, and those that do not (the storm's) gain a fifth from coding at a
		 * cost of 3 ns a pair here and 0.7 ns an event in the reader's decompression. Raw there,
		 * the storm without stacks took 83.5 ms against 89.5 (best of 6; 19.4 bare), tprof
		 * summary 39.1 ms against 40.5 (best of 30), for a trace 20 % larger (0.58 of
		 * heaptrack's); the bundled workloads', python3's and perl's traces differ by -1 to
		 * +3.5 %. Other blocks (ZSTD_compressCCtx) stay at level 1: they are rare. */
		if (w->zctx) {
			ZSTD_CCtx_setParameter(w->zctx, ZSTD_c_compressionLevel, -5);
			ZSTD_CCtx_setParameter(w->zctx, ZSTD_c_literalCompressionMode, ZSTD_ps_enable);
		}
	}
	write_header_and_info(w);
	if (w->shm->rss_interval_ms && w->shm->start_rss_bytes) /* taken by the process at start-up */
		rss_add(w, w->shm->start_rss_tick, w->shm->start_rss_bytes);
	else if (w->shm->rss_interval_ms) /* a fork child that did not wait leaves the first to us */
		rss_sample(w);
	modules_update(w);
	out_flush(w);

	uint64_t last_clock = mono_ns(), last_reap = last_clock;
	w->active_ns = last_clock;
	uint64_t rss_every = (uint64_t)w->shm->rss_interval_ms * 1000000u;
	uint64_t rss_due = last_clock + rss_every;
	int exec_seen = 0, gone = 0;
	for (;;) {
		atomic_fetch_add_explicit(&w->shm->epoch, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&w->shm->heartbeat, 1, memory_order_relaxed);
		modules_update(w);
		uint64_t was_active = w->active_ns;
		uint64_t n = drain_all(w);
		if (w->live)
			live_prune(w);
		uint64_t now = mono_ns();
		if (rss_every && w->active_ns != was_active && rss_due > now + rss_every)
			rss_due = now + rss_every; /* busy again after a quiet spell: at the interval again */
		int reaped = now - last_reap >= 200000000u;
		uint32_t exits = atomic_load_explicit(&w->shm->thread_exits, memory_order_relaxed);
		if (exits != w->exits_seen || w->exits_left) { /* threads began to exit: free their slots */
			w->exits_seen = exits;
			w->exits_left = reap_dead_threads(w, 1);
		}
		if (atomic_exchange(&w->shm->slots_wanted, 0)) { /* a new thread waits for a slot */
			reap_dead_threads(w, 0);
			atomic_fetch_add(&w->shm->slots_reaped, 1);
			tprof_futex_wake(&w->shm->slots_reaped);
		}
		if (reaped) {
			reap_dead_threads(w, 0);
			live_names_check(w);
			last_reap = now;
		}
		if (rss_every && now >= rss_due) {
			uint64_t before = w->rss_last_bytes;
			rss_sample(w);
			if (w->rss_last_bytes != before)
				w->active_ns = now;
			uint64_t step = rss_step(w, rss_every, now);
			rss_due += step;
			if (rss_due <= now)
				rss_due = now + step; /* late (a long drain): keep the spacing, skip the missed */
		}
		if (w->rss_count && now - w->rss_staged_ns >= RSS_STAGE_NS)
			rss_flush(w);
		if (now - last_clock >= 1000000000u && !atomic_load(&w->process_gone)) {
			write_clock(w);
			last_clock = now;
		}
		if (w->shm->leakscan && atomic_load(&w->shm->scan_state) == TPROF_SCAN_ASKED)
			leak_scan_now(w);
		if (atomic_load(&w->exec_seen)) /* the same process registered again: it exec'd */
			exec_seen = 1;
		if (atomic_load(&w->process_gone))
			gone = 1;
		if (gone || exec_seen)
			break;
		/* Poll adaptively: soon again while rings fill fast, rarely otherwise. A ring holding a
		 * few events is held anyway (see drain_thread) and its producer wakes us each time its
		 * head passes a quarter mark. 10 ms, or IDLE_NAP_NS once the process has been idle for a
		 * second: a producer waiting for room and a scan request wake us at once, and only then
		 * does the process look at the heartbeat (it takes a recorder that has not beaten for 2 s
		 * since for gone); the server wakes us when the process is gone. */
		uint32_t cap = w->shm->ring_entries;
		if (w->busiest < (cap >> 1)) {
			uint64_t t = mono_ns();
			long nap = w->busiest >= (cap >> 4) ? 100000L : 10000000L;
			int idle = nap > 100000L && t - w->active_ns >= IDLE_NS;
			if (idle)
				nap = IDLE_NAP_NS;
			if (rss_every) {
				if (rss_due <= t)
					nap = 0;
				else if (rss_due - t < (uint64_t)nap)
					nap = (long)(rss_due - t);
			}
			if (w->rss_count) { /* staged samples are written within RSS_STAGE_NS */
				uint64_t due = w->rss_staged_ns + RSS_STAGE_NS;
				nap = due <= t ? 0 : due - t < (uint64_t)nap ? (long)(due - t) : nap;
			}
			if (n == 0)
				out_flush(w);
			uint32_t k = atomic_load(&w->shm->kick);
			atomic_store(&w->shm->writer_sleeping, idle ? 2 : 1);
			if (nap && !atomic_load(&w->process_gone) && !atomic_load(&w->exec_seen))
				tprof_futex_wait(&w->shm->kick, k, nap);
			atomic_store(&w->shm->writer_sleeping, 0);
		}
	}
	/* An exec: the old image's threads are gone once the new image runs its first code. */
	finish_trace(w, exec_seen, !gone && !exec_seen);
out:
	atomic_store(&w->closing, 1);
	while (atomic_load(&w->poking))
		sched_yield();
	let_go(w);
	atomic_store(&w->thread_state, THREAD_IDLE);
	atomic_store(&w->done, 1); /* the server may hand the context on at once */
	tprof_recorder_wake();
}

/* How long a writer thread whose image has ended waits for the next (a fork storm's children come
 * one after another): 5 s, but not at all under an unprivileged user's process limit, which the
 * recorder's threads count against like the program's own processes. */
static uint64_t linger_ns(void)
{
	static _Atomic int limited = -1;
	int l = atomic_load(&limited);
	if (l < 0) {
		struct rlimit r;
		l = getuid() != 0 && getrlimit(RLIMIT_NPROC, &r) == 0 && r.rlim_cur != RLIM_INFINITY;
		atomic_store(&limited, l);
	}
	return l ? 0 : 5000000000ull;
}

static void *writer_thread(void *arg)
{
	struct tprof_writer *w = arg;
	for (;;) {
		write_trace(w);
		uint64_t until = mono_ns() + linger_ns();
		while (!atomic_load(&w->go)) {
			if (mono_ns() >= until) {
				uint32_t idle = THREAD_IDLE;
				if (atomic_compare_exchange_strong(&w->thread_state, &idle, THREAD_NONE))
					return NULL; /* else the server has just given it an image */
			}
			tprof_futex_wait(&w->go, 0, 1000000000);
		}
		atomic_store(&w->go, 0);
	}
}

/* Contexts of writers that have finished, for the next images (only the server thread takes and
 * gives them back). */
static struct tprof_writer *free_list;

struct tprof_writer *tprof_writer_start(const struct tprof_writer_args *a)
{
	struct tprof_writer *w = free_list;
	if (w) {
		free_list = w->next_free;
		uint8_t *sw = w->stack_written;
		uint32_t top = w->stack_written_top;
		ZSTD_CCtx *z = w->zctx;
		/* the per-image part, but only the thread entries an image used (100 KiB for all) */
		memset(w, 0, offsetof(struct tprof_writer, wthreads));
		memset(w->wthreads, 0, w->wthreads_top * sizeof(w->wthreads[0]));
		w->wthreads_top = 0;
		w->stack_written = sw;
		w->zctx = z;
		if (top > (256u << 10))
			madvise(sw, TPROF_STACK_IDS / 8, MADV_DONTNEED); /* zero again */
		else
			memset(sw, 0, top);
		w->stack_written_top = 0;
	} else {
		w = mmap(NULL, sizeof(*w), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (w == MAP_FAILED)
			return NULL;
		w->stack_written = mmap(NULL, TPROF_STACK_IDS / 8, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (w->stack_written == MAP_FAILED) {
			munmap(w, sizeof(*w));
			return NULL;
		}
	}
	w->tpid = a->pid;
	w->label = a->label ? a->label : a->pid;
	w->own_ns = w->label == w->tpid;
	w->after_exec = a->after_exec;
	w->starttime = a->starttime;
	w->trace_fd = a->tracefd;
	w->own_mode = a->own_mode;
	w->hello_quiet = a->quiet;
	w->owner_uid = a->uid;
	w->owner_gid = a->gid;
	if (a->path) {
		snprintf(w->trace_abs, sizeof(w->trace_abs), "%s", a->path);
	} else {
		char fdpath[64];
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", w->trace_fd);
		ssize_t n = readlink(fdpath, w->trace_abs, sizeof(w->trace_abs) - 1);
		w->trace_abs[n > 0 ? n : 0] = 0;
	}
	w->shm_fd = a->memfd;
	w->shm_bytes = a->memfd_bytes ? a->memfd_bytes : TPROF_SHM_FILE_BYTES;
	/* under an address space limit (the program's, which the recorder could not lift) 64 MiB a
	 * process would leave room for only a few at once: what the process uses, then */
	struct rlimit as;
	w->first_view = getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY ? 0 : FIRST_VIEW;
	w->rss_page = (uint64_t)sysconf(_SC_PAGESIZE);
	snprintf(w->proc_dir, sizeof(w->proc_dir), "/proc/%d/", (int)w->tpid);
	w->shm = view(0, sizeof(*w->shm));
	int ok = w->shm != NULL;
	uint32_t idle = THREAD_IDLE;
	if (ok && atomic_compare_exchange_strong(&w->thread_state, &idle, THREAD_BUSY)) {
		atomic_store(&w->go, 1);
		tprof_futex_wake(&w->go);
	} else if (ok) { /* a new context, or one whose thread has ended */
		pthread_attr_t at;
		pthread_t th;
		atomic_store(&w->thread_state, THREAD_BUSY);
		ok = pthread_attr_init(&at) == 0;
		if (ok) {
			pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
			pthread_attr_setstacksize(&at, 256u << 10);
			ok = pthread_create(&th, &at, writer_thread, w) == 0;
			pthread_attr_destroy(&at);
		}
		if (!ok)
			atomic_store(&w->thread_state, THREAD_NONE);
	}
	if (!ok) {
		fprintf(stderr, "tprof: cannot start a writer for pid %d: %s; its trace is empty\n", (int)w->label,
			strerror(errno));
		let_go(w);
		w->next_free = free_list;
		free_list = w;
		return NULL;
	}
	return w;
}

void tprof_writer_release(struct tprof_writer *w)
{
	w->next_free = free_list;
	free_list = w;
}
