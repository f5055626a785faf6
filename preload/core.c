/* The recording core of libtprof.so: bootstrap (resolving the real allocator while dlsym itself
 * allocates), configuration, the clock, per-thread slots and rings, and the process lifecycle (start
 * of the writer, fork, exit, fatal signals). The hooks in hooks.c stay thin and call in here. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "preload.h"
#include "sys.h"

__thread struct tprof_tls tprof_tls __attribute__((tls_model("initial-exec")));

struct tprof_real tprof_real;
struct tprof_config tprof_cfg = {
	.freeres = 1,
	.clock = TPROF_CLOCK_TSC,
	.ring_entries = 1u << 16,
	.stamp_every = TPROF_STAMP_EVERY,
	.depth = TPROF_DEPTH_DEFAULT,
	.compress = 1,
	.rss_interval_ms = 10,
};
_Atomic int tprof_ready;
_Atomic int tprof_recording;
_Alignas(64) _Atomic uint64_t tprof_seq = 1;
_Alignas(64) _Atomic uint64_t tprof_lost_global;
struct tprof_thread tprof_threads[TPROF_MAX_THREADS];
_Atomic uint32_t tprof_threads_hwm;
int tprof_clock_is_tsc;

static _Atomic int init_state; /* 0 not started, 1 resolving, 2 done */

/* ---- bootstrap pool: serves allocations made while the real functions are being resolved ---- */

/* dlsym may call calloc (for its error buffer). Blocks carry a 16-byte header with their size so
 * realloc can move them; free ignores them. Other threads allocating during init land here too. */
static _Alignas(64) unsigned char boot_pool[256 * 1024];
static _Atomic size_t boot_used;

void *tprof_boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	if (align & (align - 1) || size > sizeof(boot_pool))
		return NULL;
	size_t cur = atomic_load(&boot_used), start, end;
	do {
		start = (cur + 16 + align - 1) & ~(align - 1);
		end = start + ((size + 15) & ~(size_t)15);
		if (end > sizeof(boot_pool))
			return NULL;
	} while (!atomic_compare_exchange_weak(&boot_used, &cur, end));
	memcpy(boot_pool + start - sizeof(size_t), &size, sizeof(size_t));
	return boot_pool + start; /* static storage is zeroed and never reused: calloc-safe */
}

int tprof_boot_owns(const void *p)
{
	return (const unsigned char *)p >= boot_pool && (const unsigned char *)p < boot_pool + sizeof(boot_pool);
}

size_t tprof_boot_size(const void *p)
{
	size_t s;
	memcpy(&s, (const unsigned char *)p - sizeof(size_t), sizeof(size_t));
	return s;
}

/* ---- configuration: every TPROF_* variable, read once ---- */

static int env_flag(const char *name, int dflt)
{
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	return !(v[0] == '0' || v[0] == 'n' || v[0] == 'N' || v[0] == 'f' || v[0] == 'F');
}

static void read_config(void)
{
	tprof_cfg.lossy = env_flag("TPROF_LOSSY", 0);
	tprof_cfg.quiet = env_flag("TPROF_QUIET", 0);
	tprof_cfg.debug = env_flag("TPROF_DEBUG", 0);
	tprof_cfg.freeres = env_flag("TPROF_FREERES", 1);
	tprof_cfg.output = getenv("TPROF_OUTPUT");
	const char *ts = getenv("TPROF_TIMESTAMPS");
	if (ts && strcmp(ts, "all") == 0)
		tprof_cfg.stamp_every = 1;
	const char *c = getenv("TPROF_CLOCK");
	if (c && strcmp(c, "monotonic") == 0)
		tprof_cfg.clock = TPROF_CLOCK_MONOTONIC;
	tprof_cfg.compress = env_flag("TPROF_COMPRESS", 1);
	const char *d = getenv("TPROF_DEPTH");
	if (d && *d) {
		unsigned long n = strtoul(d, NULL, 10);
		tprof_cfg.depth = n > TPROF_DEPTH_MAX ? TPROF_DEPTH_MAX : (unsigned)n;
	}
	const char *ri = getenv("TPROF_RSS_INTERVAL_MS");
	if (ri && *ri >= '0' && *ri <= '9') {
		unsigned long n = strtoul(ri, NULL, 10);
		tprof_cfg.rss_interval_ms = n > 3600000 ? 3600000 : (uint32_t)n; /* at most an hour */
	}
	const char *r = getenv("TPROF_RING_ENTRIES");
	if (r) {
		unsigned long n = strtoul(r, NULL, 10);
		if (n >= 64 && n <= (1ul << 24) && !(n & (n - 1)))
			tprof_cfg.ring_entries = (uint32_t)n;
	}
}

/* The TSC is usable as a clock only when it is invariant (constant rate, running in deep C-states);
 * the kernel then keeps it synchronized across cores. Otherwise CLOCK_MONOTONIC. */
static int tsc_is_invariant(void)
{
#if defined(__x86_64__)
	unsigned a, b, c, d;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
	if (a < 0x80000007u)
		return 0;
	__asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
	return (d >> 8) & 1;
#else
	return 0;
#endif
}

/* ---- init ---- */

#define RESOLVE(field, name) tprof_real.field = (__typeof__(tprof_real.field))dlsym(RTLD_NEXT, name)

void tprof_init(void)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&init_state, &expected, 1))
		return; /* done, or another thread is resolving: callers use the pool meanwhile */
	int saved = errno;
	RESOLVE(malloc, "malloc");
	RESOLVE(free, "free");
	RESOLVE(calloc, "calloc");
	RESOLVE(realloc, "realloc");
	RESOLVE(reallocarray, "reallocarray");
	RESOLVE(posix_memalign, "posix_memalign");
	RESOLVE(aligned_alloc, "aligned_alloc");
	RESOLVE(memalign, "memalign");
	RESOLVE(valloc, "valloc");
	RESOLVE(pvalloc, "pvalloc");
	RESOLVE(exit_, "_exit");
	RESOLVE(Exit_, "_Exit");
	RESOLVE(execve, "execve");
	RESOLVE(execv, "execv");
	RESOLVE(execvp, "execvp");
	RESOLVE(execvpe, "execvpe");
	RESOLVE(fexecve, "fexecve");
	RESOLVE(dlclose, "dlclose");
	if (!tprof_real.malloc || !tprof_real.free || !tprof_real.calloc || !tprof_real.realloc) {
		static const char msg[] = "tprof: cannot find the C library's allocator; aborting\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		abort();
	}
	read_config();
	if (tprof_cfg.clock == TPROF_CLOCK_TSC && !tsc_is_invariant())
		tprof_cfg.clock = TPROF_CLOCK_MONOTONIC;
	tprof_clock_is_tsc = tprof_cfg.clock == TPROF_CLOCK_TSC;
	tprof_tls.guard++;
	if (tprof_stacks_init(tprof_cfg.depth) != 0)
		tprof_cfg.depth = 0;
	tprof_tls.guard--;
	atomic_store(&tprof_recording, 1);
	atomic_store(&init_state, 2);
	atomic_store_explicit(&tprof_ready, 1, memory_order_release);
	errno = saved;
}

/* ---- thread slots ---- */

/* Programs often name a thread after it has started working (pthread_setname_np from the thread
 * itself), after the writer wrote the name it had at its first events; and once the thread is gone,
 * so is its name. So the thread keeps its name as it exits: a thread-specific value (the slot) whose
 * destructor glibc runs when the thread returns from its start routine or calls pthread_exit (the
 * main thread too); the writer compares. Threads still running at the end are read by the writer. */
static pthread_key_t exit_key;
static _Atomic int exit_key_ok;

static void on_thread_exit(void *arg)
{
	struct tprof_thread *t = arg;
	if (t != tprof_tls.thread)
		return;
	int saved = errno;
	char name[16] = {0}; /* PR_GET_NAME: at most 16 bytes, the terminating NUL included */
	if (prctl(PR_GET_NAME, name) == 0) {
		memcpy(t->exit_name, name, sizeof(name));
		atomic_store_explicit(&t->exit_named, 1, memory_order_release);
	}
	errno = saved;
}

/* With fewer than 32 keys in the process (tprof's is created in its constructor, before the
 * program's) pthread_setspecific only stores; past that, glibc may allocate, with the guard held. */
static void watch_thread_exit(struct tprof_thread *t)
{
	if (atomic_load_explicit(&exit_key_ok, memory_order_acquire))
		pthread_setspecific(exit_key, t);
}

struct tprof_thread *tprof_thread_attach(void)
{
	int saved = errno;
	tprof_tls.guard++;
	struct tprof_thread *t = NULL;
	for (uint32_t i = 0; i < TPROF_MAX_THREADS; i++) {
		int expected = TPROF_SLOT_FREE;
		if (atomic_load_explicit(&tprof_threads[i].state, memory_order_relaxed) != TPROF_SLOT_FREE)
			continue;
		if (!atomic_compare_exchange_strong(&tprof_threads[i].state, &expected, -1))
			continue; /* -1: being set up, the writer skips it */
		t = &tprof_threads[i];
		uint32_t hwm = atomic_load(&tprof_threads_hwm);
		while (hwm < i + 1 && !atomic_compare_exchange_weak(&tprof_threads_hwm, &hwm, i + 1))
			;
		break;
	}
	if (!t) {
		atomic_fetch_add(&tprof_lost_global, 1);
		tprof_tls.guard--;
		errno = saved;
		return NULL;
	}
	if (!t->ring || t->ring->mask + 1 != tprof_cfg.ring_entries) {
		if (t->ring)
			munmap(t->ring, tprof_ring_bytes(t->ring->mask + 1));
		void *m = mmap(NULL, tprof_ring_bytes(tprof_cfg.ring_entries), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED) {
			t->ring = NULL;
			atomic_store(&t->state, TPROF_SLOT_FREE);
			atomic_fetch_add(&tprof_lost_global, 1);
			tprof_tls.guard--;
			errno = saved;
			return NULL;
		}
		t->ring = m;
		tprof_ring_init(t->ring, tprof_cfg.ring_entries);
	}
	t->tid = tprof_gettid();
	t->announced = 0;
	t->next_check_ns = 0;
	atomic_store_explicit(&t->exit_named, 0, memory_order_relaxed);
	atomic_store_explicit(&t->state, TPROF_SLOT_ACTIVE, memory_order_release);
	tprof_tls.thread = t;
	watch_thread_exit(t);
	tprof_tls.guard--;
	errno = saved;
	return t;
}

/* The ring is full. Lossless: wake the writer and sleep on the ring's tail until there is room,
 * unless no writer runs (before start, after the final flush), when waiting would never end. On
 * the writer's own thread, once it runs the program's exit, the rings are drained right here. */
void tprof_ring_full(struct tprof_thread *t, uint32_t n)
{
	struct tprof_ring *r = t->ring;
	int saved = errno;
	while (!tprof_ring_reserve(r, n)) {
		if (tprof_writer_drain_here() == 0 && tprof_ring_reserve(r, n))
			break;
		if (tprof_cfg.lossy || !atomic_load(&tprof_writer_running) ||
		    !atomic_load(&tprof_recording)) {
			atomic_fetch_add_explicit(&r->lost, n, memory_order_relaxed);
			break;
		}
		uint32_t tail = atomic_load(&r->tail);
		atomic_store(&r->waiting, 1);
		tprof_writer_kick();
		if (!tprof_ring_reserve(r, n))
			tprof_futex_wait(&r->tail, tail, 1000000);
	}
	errno = saved;
}

/* ---- lifecycle ---- */

static const int fatal_signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGILL,  SIGTRAP, SIGABRT,
				    SIGBUS,  SIGFPE,  SIGUSR1, SIGSEGV, SIGUSR2, SIGPIPE,
				    SIGALRM, SIGTERM, SIGXCPU, SIGXFSZ, SIGSYS};

/* Installed only where the disposition was the default (death): flush, then die the same way. */
static void on_fatal_signal(int sig)
{
	int saved = errno;
	tprof_finish(TPROF_END_SIGNAL, sig);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(sig, &sa, NULL);
	errno = saved;
	raise(sig); /* delivered when the handler returns (the signal is blocked inside it) */
}

static void install_signal_handlers(void)
{
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		struct sigaction old, sa;
		if (sigaction(fatal_signals[i], NULL, &old) != 0 || old.sa_handler != SIG_DFL ||
		    (old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_fatal_signal;
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(fatal_signals[i], &sa, NULL);
	}
}

static void after_fork_child(void)
{
	/* Only this thread survives. Events still in rings belong to the parent's trace, which the
	 * parent's writer writes; the child starts a trace of its own. */
	struct tprof_thread *self = tprof_tls.thread;
	uint32_t hwm = atomic_load(&tprof_threads_hwm);
	for (uint32_t i = 0; i < hwm; i++) {
		struct tprof_thread *t = &tprof_threads[i];
		if (t->ring) {
			uint32_t h = atomic_load(&t->ring->head);
			atomic_store(&t->ring->tail, h);
			t->ring->cached_tail = h;
			atomic_store(&t->ring->lost, 0);
			atomic_store(&t->ring->waiting, 0);
		}
		t->lost_reported = 0;
		t->announced = 0;
		t->last_seq = t->last_tick = 0;
		if (t != self)
			atomic_store(&t->state, TPROF_SLOT_FREE);
	}
	if (self)
		self->tid = tprof_tls.thread->tid = tprof_gettid();
	atomic_store(&tprof_lost_global, 0);
	if (!atomic_load(&tprof_recording))
		return; /* the parent had already finished */
	tprof_tls.guard++;
	tprof_writer_after_fork_child();
	tprof_tls.guard--;
}

/* Constructors of other libraries may have allocated already (and triggered tprof_init); the
 * writer thread is started here, where creating a thread is safe. */
__attribute__((constructor)) static void tprof_constructor(void)
{
	tprof_init();
	if (!atomic_load(&tprof_recording))
		return;
	tprof_tls.guard++;
	if (pthread_key_create(&exit_key, on_thread_exit) == 0) {
		atomic_store_explicit(&exit_key_ok, 1, memory_order_release);
		if (tprof_tls.thread) /* this thread recorded before the constructor ran */
			watch_thread_exit(tprof_tls.thread);
	}
	pthread_atfork(NULL, NULL, after_fork_child);
	if (tprof_writer_start() != 0)
		atomic_store(&tprof_recording, 0);
	else
		install_signal_handlers();
	tprof_tls.guard--;
}

/* Runs after every other library's destructor (we were initialized before them). valgrind runs
 * __libc_freeres at exit; doing the same makes "in use at exit" comparable. It is only safe while
 * no other application thread can still use the C library, so it is skipped otherwise. */
__attribute__((destructor)) static void tprof_destructor(void)
{
	if (!atomic_load(&tprof_recording))
		return;
	if (tprof_cfg.freeres && tprof_proc_threads(NULL) == 2) { /* this thread and the writer */
		tprof_tls.guard++;
		void (*cxx_freeres)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "_ZN9__gnu_cxx9__freeresEv");
		void (*libc_freeres)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "__libc_freeres");
		tprof_tls.guard--;
		if (cxx_freeres)
			cxx_freeres();
		if (libc_freeres)
			libc_freeres();
	}
	tprof_finish(TPROF_END_EXIT, 0);
}

/* Final flush from exit, _exit or a fatal signal: whichever comes first wins. */
void tprof_finish(int reason, int value)
{
	static _Atomic int finishing;
	int expected = 0;
	if (!atomic_compare_exchange_strong(&finishing, &expected, 1))
		return;
	tprof_tls.guard++;
	tprof_writer_flush(reason, value, 1, 5L * 1000000000L);
	tprof_tls.guard--;
}

void tprof_flush_for_exec(void)
{
	if (!atomic_load(&tprof_recording))
		return;
	tprof_tls.guard++;
	tprof_writer_flush(TPROF_END_EXEC, 0, 0, 5L * 1000000000L);
	tprof_tls.guard--;
}
