/* The recording core of libtprof.so: bootstrap (resolving the real allocator while dlsym itself
 * allocates), configuration, the clock, per-thread slots and rings in the shared memory, and the
 * process lifecycle: registration with a recorder at start and in every fork child, how the process
 * ends (noted in the shared memory; the recorder drains the rings after the process is gone, so
 * nothing is flushed here), and valgrind's __libc_freeres after every other destructor. No thread,
 * signal handler or descriptor of tprof stays in the process. The hooks in hooks.c call in here. */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/kcmp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/auxv.h>
#include <sys/single_threaded.h>
#include <unistd.h>

#include "preload.h"
#include "unwind.h"
#include "sys.h"

__thread struct tprof_tls tprof_tls __attribute__((tls_model("initial-exec")));

struct tprof_real tprof_real;
struct tprof_config tprof_cfg = {
	.freeres = 1,
	.leakscan = 1,
	.clock = TPROF_CLOCK_TSC,
	.ring_entries = 1u << 16,
	.stamp_every = TPROF_STAMP_EVERY,
	.depth = TPROF_DEPTH_DEFAULT,
	.compress = 1,
	.rss_interval_ms = 10,
};
_Atomic int tprof_ready;
/* 1 while this process is the one that registered (preload.h: tprof_alive); before the first
 * registration, and where the kernel cannot wipe a page at fork, it points at this constant */
static const volatile uint32_t alive_always = 1;
const volatile uint32_t *tprof_alive = &alive_always;
static volatile uint32_t *alive_page; /* MADV_WIPEONFORK: a fork child reads 0 there */
_Atomic int tprof_constructed;
_Atomic int tprof_recording;
_Atomic int tprof_sandboxed;
_Atomic int tprof_lock_future;
_Atomic int tprof_few_over;
int tprof_ucache_cold; /* beside what a fork child writes anyway: no page more to copy */
int tprof_clock_is_tsc;
/* The process-private side of each shared slot: its ring's address here. */
static TPROF_LARGE struct tprof_thread threads[TPROF_SHM_THREADS];
static _Atomic uint32_t threads_used; /* entries of threads[] ever taken: a fork child clears those */

static _Atomic int init_state; /* 0 not started, 1 resolving, 2 done */

/* ---- bootstrap pool: serves allocations made while the real functions are being resolved ---- */

/* dlsym may call calloc (for its error buffer). Blocks carry a 16-byte header with their size so
 * realloc can move them; free ignores them. Other threads allocating during init land here too. */
static TPROF_LARGE _Alignas(64) unsigned char boot_pool[256 * 1024];
static _Atomic size_t boot_used;

/* When the pool is used up (in a process with a sanitizer runtime, every heap call before tprof's
 * constructor comes here: the constructors of the libraries that run before it may allocate
 * megabytes), blocks come from one region reserved then (a few GiB without access, less when the
 * address space is limited) and opened as they are used: never reused either, and zeroed. */
static _Atomic int more_state; /* 0: none, 1: being reserved, 2: ready, 3: could not be */
static _Atomic uintptr_t more_base;
static _Atomic size_t more_len, more_used, more_open;

/* Takes [start, end) of size bytes aligned to align (a power of two, at least 16) from the bump
 * area of cap bytes whose use is *used: its offset, or SIZE_MAX when it does not fit. */
static size_t bump(_Atomic size_t *used, size_t cap, size_t size, size_t align)
{
	size_t cur = atomic_load(used), start, end;
	do {
		if (size > cap || cur + 16 + align > cap)
			return SIZE_MAX;
		start = (cur + 16 + align - 1) & ~(align - 1);
		end = start + ((size + 15) & ~(size_t)15);
		if (end > cap || end < start)
			return SIZE_MAX;
	} while (!atomic_compare_exchange_weak(used, &cur, end));
	return start;
}

static uintptr_t more_region(void)
{
	int st = 0;
	static __thread int reserving; /* a handler interrupting this thread's reservation */
	if (reserving)
		return 0;
	if (atomic_compare_exchange_strong(&more_state, &st, 1)) {
		reserving = 1;
		static const size_t sizes[] = {(size_t)4 << 30, (size_t)256 << 20, (size_t)16 << 20};
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			long m = syscall(SYS_mmap, NULL, sizes[i], PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
					 -1, 0);
			if (m != -1) {
				atomic_store(&more_len, sizes[i]);
				atomic_store(&more_base, (uintptr_t)m);
				break;
			}
		}
		atomic_store(&more_state, atomic_load(&more_base) ? 2 : 3);
		reserving = 0;
	}
	/* another thread reserves (a fork child copied the state from a parent whose thread was: it
	 * waits a while, then does without) */
	for (int k = 0; k < 10000 && (st = atomic_load(&more_state)) == 1; k++)
		syscall(SYS_sched_yield);
	return st == 2 ? atomic_load(&more_base) : 0;
}

void *tprof_boot_alloc(size_t size, size_t align)
{
	if (align < 16)
		align = 16;
	if (align & (align - 1))
		return NULL;
	size_t start = bump(&boot_used, sizeof(boot_pool), size, align);
	unsigned char *p;
	if (start != SIZE_MAX) {
		p = boot_pool + start;
	} else {
		int e = errno;
		uintptr_t base = more_region();
		size_t len = atomic_load(&more_len);
		start = base ? bump(&more_used, len, size, align) : SIZE_MAX;
		if (start == SIZE_MAX) {
			errno = ENOMEM;
			return NULL;
		}
		/* opened from its start to a MiB past the block: a thread whose block lies lower may not
		 * have opened it yet when another moves the mark past it; racing threads open the same
		 * pages again, which is harmless, and use theirs only once it is done */
		size_t end = start + ((size + 15) & ~(size_t)15), open = atomic_load(&more_open);
		if (end > open) {
			size_t to = (end + (1u << 20) - 1) & ~(size_t)((1u << 20) - 1);
			to = to < len ? to : len;
			if (syscall(SYS_mprotect, base, to, PROT_READ | PROT_WRITE) != 0) {
				errno = ENOMEM;
				return NULL;
			}
			while (open < to && !atomic_compare_exchange_weak(&more_open, &open, to))
				;
		}
		errno = e;
		p = (unsigned char *)base + start;
	}
	memcpy(p - sizeof(size_t), &size, sizeof(size_t));
	return p; /* fresh zeroed memory, never reused: calloc-safe */
}

int tprof_boot_owns(const void *p)
{
	if ((const unsigned char *)p >= boot_pool && (const unsigned char *)p < boot_pool + sizeof(boot_pool))
		return 1;
	uintptr_t base = atomic_load_explicit(&more_base, memory_order_acquire);
	return base && (uintptr_t)p - base < atomic_load_explicit(&more_len, memory_order_relaxed);
}

void tprof_boot_range(uint64_t *start, uint64_t *end)
{
	*start = (uintptr_t)boot_pool;
	*end = (uintptr_t)boot_pool + atomic_load(&boot_used);
}

size_t tprof_boot_size(const void *p)
{
	size_t s;
	memcpy(&s, (const unsigned char *)p - sizeof(size_t), sizeof(size_t));
	return s;
}

/* ---- configuration: every TPROF_* variable, read once ---- */

/* A value the README's table does not allow: said on stderr (each process image that reads it),
 * and the default kept, never something else taken silently. */
static void bad_value(const char *name, const char *v, const char *allowed)
{
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "tprof: ");
	tprof_sb_str(&s, name);
	tprof_sb_str(&s, "=");
	tprof_sb_str(&s, v);
	tprof_sb_str(&s, ": not ");
	tprof_sb_str(&s, allowed);
	tprof_sb_str(&s, "; the default is kept\n");
	tprof_sb_emit(&s);
}

/* The configuration is read by tprof's own loops, not getenv and strcasecmp: every process pays for
 * it in its constructor, where each page of the C library's code or tables touched first costs a
 * fault (5 to 20 us on a VM), more than the work. */
extern char **environ;

/* The environment the process started with, read from /proc/self/environ: for a configuration read
 * before the C library has set environ (the dynamic loader's own first heap call, which an audit
 * module with PLT bindings makes while it relocates libraries); 128 KiB of it at most. */
static TPROF_LARGE char start_env[128 * 1024];

static const char *start_env_get(const char *name)
{
	static ssize_t len = -2;
	if (len == -2)
		len = tprof_proc_read("/proc/self/environ", start_env, sizeof(start_env));
	size_t nl = strlen(name);
	for (ssize_t i = 0; i < len; i += (ssize_t)strlen(start_env + i) + 1)
		if (strncmp(start_env + i, name, nl) == 0 && start_env[i + (ssize_t)nl] == '=')
			return start_env + i + nl + 1;
	return NULL;
}

/* The value of the first NAME=value in the environment, as getenv gives it. */
static const char *env_get(const char *name)
{
	if (!environ)
		return start_env_get(name);
	for (char **e = environ; e && *e; e++) {
		const char *a = *e, *b = name;
		while (*b && *a == *b)
			a++, b++;
		if (!*b && *a == '=')
			return a + 1;
	}
	return NULL;
}

/* v equals w, ASCII letters in any case (w is lower case) */
static int word_is(const char *v, const char *w)
{
	for (; *w; v++, w++)
		if ((*v >= 'A' && *v <= 'Z' ? *v + ('a' - 'A') : *v) != *w)
			return 0;
	return !*v;
}

/* 1, yes, true, on; 0, no, false, off (any case); unset or empty: the default. */
static int env_flag(const char *name, int dflt)
{
	const char *v = env_get(name);
	if (!v || !*v)
		return dflt;
	if (word_is(v, "1") || word_is(v, "yes") || word_is(v, "y") || word_is(v, "true") || word_is(v, "on"))
		return 1;
	if (word_is(v, "0") || word_is(v, "no") || word_is(v, "n") || word_is(v, "false") || word_is(v, "off"))
		return 0;
	bad_value(name, v, "1 or 0 (yes or no, true or false, on or off)");
	return dflt;
}

/* A decimal number from lo to hi into *out: 1; unset or empty: 0; anything else is said, 0. */
static int env_number(const char *name, unsigned long lo, unsigned long hi, const char *allowed, unsigned long *out)
{
	const char *v = env_get(name);
	if (!v || !*v)
		return 0;
	unsigned long n = 0;
	const char *p = v;
	for (; *p >= '0' && *p <= '9' && n <= hi; p++)
		n = n * 10 + (unsigned long)(*p - '0');
	if (*p || n < lo || n > hi) {
		bad_value(name, v, allowed);
		return 0;
	}
	*out = n;
	return 1;
}

static void read_config(void)
{
	tprof_cfg.lossy = env_flag("TPROF_LOSSY", 0);
	tprof_cfg.quiet = env_flag("TPROF_QUIET", 0);
	tprof_cfg.debug = env_flag("TPROF_DEBUG", 0);
	tprof_cfg.freeres = env_flag("TPROF_FREERES", 1);
	tprof_cfg.leakscan = env_flag("TPROF_LEAKSCAN", 1);
	tprof_cfg.verify_stacks = env_flag("TPROF_VERIFY_STACKS", 0);
	tprof_cfg.trust_seccomp = env_flag("TPROF_SECCOMP", 0);
	tprof_cfg.output = env_get("TPROF_OUTPUT");
	const char *ts = env_get("TPROF_TIMESTAMPS");
	if (ts && strcmp(ts, "all") == 0)
		tprof_cfg.stamp_every = 1;
	else if (ts && *ts)
		bad_value("TPROF_TIMESTAMPS", ts, "all");
	const char *c = env_get("TPROF_CLOCK");
	if (c && strcmp(c, "monotonic") == 0)
		tprof_cfg.clock = TPROF_CLOCK_MONOTONIC;
	else if (c && *c && strcmp(c, "tsc") != 0)
		bad_value("TPROF_CLOCK", c, "tsc or monotonic");
	tprof_cfg.compress = env_flag("TPROF_COMPRESS", 1);
	unsigned long n;
	if (env_number("TPROF_DEPTH", 0, TPROF_DEPTH_MAX, "a number of frames from 0 to 256", &n))
		tprof_cfg.depth = (unsigned)n;
	if (env_number("TPROF_RSS_INTERVAL_MS", 0, 3600000, "a number of milliseconds from 0 to 3600000", &n))
		tprof_cfg.rss_interval_ms = (uint32_t)n; /* at most an hour */
	if (env_number("TPROF_RING_ENTRIES", 64, 1ul << 24, "a power of two from 64 to 16777216", &n)) {
		if (n & (n - 1))
			bad_value("TPROF_RING_ENTRIES", env_get("TPROF_RING_ENTRIES"), "a power of two from 64 to 16777216");
		else
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

/* The clock, chosen at the first registration (a fork child keeps its parent's): nothing reads it
 * before (every tprof_now() is a recording's), and the CPUID instructions cost about 15 us on a VM,
 * where each one traps to the hypervisor: a process that never records pays nothing. */
static void choose_clock(void)
{
	static _Atomic int chosen; /* set last: a child forked meanwhile by another thread chooses again */
	if (atomic_load(&chosen))
		return;
	if (tprof_cfg.clock == TPROF_CLOCK_TSC && !tsc_is_invariant())
		tprof_cfg.clock = TPROF_CLOCK_MONOTONIC;
	__atomic_store_n(&tprof_clock_is_tsc, tprof_cfg.clock == TPROF_CLOCK_TSC && !atomic_load(&tprof_tsc_off),
			 __ATOMIC_RELEASE);
	atomic_store(&chosen, 1);
}

/* ---- a clock without the TSC ----
 * A thread that turned the TSC off (PR_SET_TSC with PR_TSC_SIGSEGV, seccomp's strict mode) faults
 * at rdtsc, and so do the threads and processes it makes. The trace keeps its clock: ticks of the
 * TSC, from CLOCK_MONOTONIC read by system call (the C library's clock_gettime reads the TSC itself
 * when it is the kernel's clock source) and converted at the rate measured before the call: over
 * the time since the process registered, or over 1 ms spent measuring. */
_Atomic int tprof_tsc_off;
static uint64_t off_tick, off_ns; /* a pair of the TSC and CLOCK_MONOTONIC, read together */
static double off_ticks_per_ns;
static _Atomic uint64_t off_last; /* the last tick given: a strict thread gets it again */

static uint64_t mono_ns_now(int by_syscall)
{
	struct timespec ts;
	if (by_syscall)
		tprof_sys_clock(CLOCK_MONOTONIC, &ts);
	else
		clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The TSC and CLOCK_MONOTONIC at one moment: the TSC read on either side of the clock, the
 * tightest of four tries (one the scheduler or the hypervisor cut in two is off by the pause). */
static void tsc_pair(uint64_t *tick, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 4; i++) {
		uint64_t a = __builtin_ia32_rdtsc();
		uint64_t n = mono_ns_now(0);
		uint64_t b = __builtin_ia32_rdtsc();
		if (b - a < best) {
			best = b - a;
			*tick = a + (b - a) / 2;
			*ns = n;
		}
	}
}

void tprof_clock_leave_tsc(void)
{
	if (atomic_load(&tprof_tsc_off))
		return; /* measured before: its rate holds */
	int saved = errno;
	if (tprof_cfg.clock == TPROF_CLOCK_TSC) {
		uint64_t t0 = 0, n0 = 0, t1, n1;
		struct tprof_shm *s = tprof_shm;
		if (s && s->clock == TPROF_CLOCK_TSC) {
			t0 = s->start_tick;
			n0 = s->start_mono_ns;
		}
		tsc_pair(&t1, &n1);
		if (!t0 || n1 < n0 + 1000000u || t1 <= t0) { /* too short a span to measure the rate over */
			tsc_pair(&t0, &n0);
			do
				tsc_pair(&t1, &n1);
			while (n1 < n0 + 1000000u);
		}
		off_ticks_per_ns = t1 > t0 && n1 > n0 ? (double)(t1 - t0) / (double)(n1 - n0) : 1.0;
		off_tick = t1;
		off_ns = n1;
		atomic_store(&off_last, t1);
	}
	atomic_store_explicit(&tprof_tsc_off, 1, memory_order_release);
	__atomic_store_n(&tprof_clock_is_tsc, 0, __ATOMIC_RELEASE);
	errno = saved;
}

uint64_t tprof_now_without_tsc(void)
{
	if (tprof_tls.strict) /* no system call: the last tick given (it records nothing anyway) */
		return atomic_load_explicit(&off_last, memory_order_relaxed);
	int saved = errno;
	uint64_t ns = mono_ns_now(1);
	errno = saved;
	if (tprof_cfg.clock != TPROF_CLOCK_TSC)
		return ns;
	uint64_t t = off_tick + (uint64_t)((double)(ns > off_ns ? ns - off_ns : 0) * off_ticks_per_ns);
	uint64_t last = atomic_load_explicit(&off_last, memory_order_relaxed);
	while (t > last && !atomic_compare_exchange_weak_explicit(&off_last, &last, t, memory_order_relaxed,
								   memory_order_relaxed))
		;
	return t;
}

/* ---- init ---- */

struct scope_pos {
	uintptr_t base[2];
	int at[2];
	int i;
};

static int scope_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct scope_pos *p = arg;
	for (int k = 0; k < 2; k++)
		if (p->at[k] < 0 && info->dlpi_addr == p->base[k])
			p->at[k] = p->i;
	p->i++;
	return 0;
}

/* The version a program's references to the C library's allocator carry: its first on this
 * architecture (aligned_alloc's is later). NULL: not known here, dlsym alone. */
#if defined(__x86_64__)
#define GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__) || defined(__powerpc64__)
#define GLIBC_BASE "GLIBC_2.17"
#elif defined(__i386__)
#define GLIBC_BASE "GLIBC_2.0"
#else
#define GLIBC_BASE NULL
#endif

static const char *heap_version(const char *name)
{
#if defined(__x86_64__)
	if (strcmp(name, "aligned_alloc") == 0)
		return "GLIBC_2.16";
#endif
	return GLIBC_BASE;
}

/* Of two definitions of one name, the one the program's reference reaches: the first in the order
 * of the loaded objects. */
static void *earlier(void *u, void *v)
{
	Dl_info a, b;
	if (!dladdr(u, &a) || !dladdr(v, &b))
		return u;
	struct scope_pos p = {{(uintptr_t)a.dli_fbase, (uintptr_t)b.dli_fbase}, {-1, -1}, 0};
	dl_iterate_phdr(scope_cb, &p);
	/* dli_fbase is an object's load address, dlpi_addr its bias: the same but for an executable
	 * that is not position-independent (bias 0), which is unmatched and first anyway */
	return (p.at[1] < 0 ? 0 : p.at[1]) < (p.at[0] < 0 ? 0 : p.at[0]) ? v : u;
}

/* dlsym finds the first unversioned (or default-version) definition, dlvsym the first of that exact
 * version, which is all libc_malloc_debug defines; the program's reference takes whichever comes
 * first, in the order of the loaded objects. */
static void *program_symbol(const char *name, void *next)
{
	const char *ver = heap_version(name);
	void *u = tprof_dlsym(RTLD_DEFAULT, name), *v = ver ? dlvsym(RTLD_DEFAULT, name, ver) : NULL;
	void *past = tprof_past_plt_entry(u, name); /* an executable's PLT entry is no definition */
	if (past != u) {
		v = v == u ? NULL : v;
		u = past;
	}
	if (!u || !v || u == v || v == next) /* the usual: v is the C library's, after us */
		return u ? u : v;
	return earlier(u, v);
}

void *tprof_foreign_symbol(const char *name, void *own, void *next)
{
	void *d = program_symbol(name, next);
	return d && d != own && d != next ? d : NULL;
}

int tprof_real_ahead; /* malloc was found ahead of this library: its hooks are never called */

/* The definition of name that this library's stands in front of: the next one in the search order;
 * when there is none, the C library itself was preloaded ahead of this one (LD_PRELOAD=
 * libc.so.6:libtprof.so), and the first definition is the real one, unless it is this library's
 * (the C library has no such function): NULL then. */
static void *resolve(const char *name)
{
	void *d = tprof_dlsym(RTLD_NEXT, name);
	if (d)
		return d;
	d = tprof_dlsym(RTLD_DEFAULT, name);
	if (strcmp(name, "malloc") == 0)
		tprof_real_ahead = 1;
	Dl_info a, b;
	if (d && (!dladdr(d, &a) || !dladdr((void *)resolve, &b) || a.dli_fbase == b.dli_fbase))
		return NULL;
	return d;
}

#define RESOLVE(field, name) tprof_real.field = (__typeof__(tprof_real.field))resolve(name)

/* A heap function: the definition after this one that the program's reference would reach, the
 * default version's or the versioned one's (libc_malloc_debug defines only malloc@GLIBC_2.2.5 and
 * the like, which dlsym does not see), whichever comes first. */
static void *resolve_heap(const char *name)
{
	void *d = resolve(name);
	const char *ver = heap_version(name);
	void *v = d && ver && !tprof_real_ahead ? dlvsym(RTLD_NEXT, name, ver) : NULL;
	return v && v != d ? earlier(d, v) : d;
}

#define RESOLVE_HEAP(field, name) tprof_real.field = (__typeof__(tprof_real.field))resolve_heap(name)

/* An allocator after this library that is not the C library's (libc_malloc_debug preloaded after
 * libtprof.so, as tprof record puts it first) forwards to the C library's __libc_ names, which are
 * this library's hooks too: its functions are called through these, which mark the thread
 * (in_foreign) so that those names pass straight on. The usual case pays nothing for it. */
static struct tprof_real foreign; /* its heap functions only */

#define FOREIGN(ret, name, params, args)                  \
	static ret foreign_##name params                  \
	{                                                 \
		int f = tprof_tls.in_foreign;             \
		tprof_tls.in_foreign = 1;                 \
		ret r = foreign.name args;                \
		tprof_tls.in_foreign = f;                 \
		return r;                                 \
	}
FOREIGN(void *, malloc, (size_t n), (n))
FOREIGN(void *, calloc, (size_t k, size_t n), (k, n))
FOREIGN(void *, realloc, (void *p, size_t n), (p, n))
FOREIGN(int, posix_memalign, (void **p, size_t a, size_t n), (p, a, n))
FOREIGN(void *, aligned_alloc, (size_t a, size_t n), (a, n))
FOREIGN(void *, memalign, (size_t a, size_t n), (a, n))
FOREIGN(void *, valloc, (size_t n), (n))
FOREIGN(void *, pvalloc, (size_t n), (n))

/* The malloc the hooks call, behind the foreign wrappers when there are: whose allocator it is. */
void *tprof_next_malloc(void)
{
	return foreign.malloc ? (void *)foreign.malloc : (void *)tprof_real.malloc;
}

static void foreign_free(void *p)
{
	int f = tprof_tls.in_foreign;
	tprof_tls.in_foreign = 1;
	foreign.free(p);
	tprof_tls.in_foreign = f;
}

/* Whether the heap functions found are another allocator's than the C library's, which its
 * __libc_ names belong to: then those are resolved, and the allocator is called through the above. */
static void note_foreign(void)
{
	Dl_info a, b;
	void *lm = tprof_dlsym(RTLD_NEXT, "__libc_malloc");
	/* the usual case: the C library's malloc is its __libc_malloc, one address; dladdr, which looks
	 * through a whole symbol table for the nearest name, would cost every process about 40 us */
	if (!lm || lm == (void *)tprof_real.malloc || !dladdr(lm, &a) || !dladdr((void *)tprof_real.malloc, &b) ||
	    a.dli_fbase == b.dli_fbase)
		return;
	RESOLVE(libc_malloc, "__libc_malloc");
	RESOLVE(libc_free, "__libc_free");
	RESOLVE(libc_calloc, "__libc_calloc");
	RESOLVE(libc_realloc, "__libc_realloc");
	RESOLVE(libc_memalign, "__libc_memalign");
	RESOLVE(libc_valloc, "__libc_valloc");
	RESOLVE(libc_pvalloc, "__libc_pvalloc");
	if (!tprof_real.libc_malloc || !tprof_real.libc_free || !tprof_real.libc_calloc || !tprof_real.libc_realloc ||
	    !tprof_real.libc_memalign || !tprof_real.libc_valloc || !tprof_real.libc_pvalloc)
		return;
#define THROUGH(name)                                   \
	if (tprof_real.name) {                          \
		foreign.name = tprof_real.name;         \
		tprof_real.name = foreign_##name;       \
	}
	THROUGH(malloc)
	THROUGH(free)
	THROUGH(calloc)
	THROUGH(realloc)
	THROUGH(posix_memalign)
	THROUGH(aligned_alloc)
	THROUGH(memalign)
	THROUGH(valloc)
	THROUGH(pvalloc)
#undef THROUGH
}

void tprof_init(void)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&init_state, &expected, 1))
		return; /* done, or another thread is resolving: callers use the pool meanwhile */
	int saved = errno;
	RESOLVE_HEAP(malloc, "malloc");
	RESOLVE_HEAP(free, "free");
	RESOLVE_HEAP(calloc, "calloc");
	RESOLVE_HEAP(realloc, "realloc");
	RESOLVE_HEAP(posix_memalign, "posix_memalign");
	RESOLVE_HEAP(aligned_alloc, "aligned_alloc");
	RESOLVE_HEAP(memalign, "memalign");
	RESOLVE_HEAP(valloc, "valloc");
	RESOLVE_HEAP(pvalloc, "pvalloc");
	RESOLVE(reallocarray, "reallocarray");
	RESOLVE(exit_, "_exit");
	RESOLVE(Exit_, "_Exit");
	RESOLVE(quick_exit, "quick_exit");
	RESOLVE(exit, "exit");
	RESOLVE(dlopen, "dlopen");
	RESOLVE(dlmopen, "dlmopen");
	extern void *tprof_dlopen_real, *tprof_dlmopen_real;
	tprof_dlopen_real = (void *)tprof_real.dlopen;
	tprof_dlmopen_real = (void *)tprof_real.dlmopen;
	RESOLVE(pipe2, "pipe2");
	RESOLVE(read, "read");
	RESOLVE(write, "write");
	RESOLVE(syscall, "syscall");
	RESOLVE(prctl, "prctl");
	RESOLVE(execve, "execve");
	RESOLVE(execv, "execv");
	RESOLVE(execvp, "execvp");
	RESOLVE(execvpe, "execvpe");
	RESOLVE(fexecve, "fexecve");
	RESOLVE(dlclose, "dlclose");
	RESOLVE(dl_iterate_phdr, "dl_iterate_phdr");
	tprof_real.realloc_foreign = (__typeof__(tprof_real.realloc_foreign))tprof_foreign_symbol(
		"realloc", (void *)tprof_own_realloc, (void *)tprof_real.realloc);
	note_foreign();
	if (!tprof_real.malloc || !tprof_real.free || !tprof_real.calloc || !tprof_real.realloc) {
		static const char msg[] = "tprof: cannot find the C library's allocator; aborting\n";
		ssize_t w = write(2, msg, sizeof(msg) - 1);
		(void)w;
		abort();
	}
	read_config();
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
	tprof_alive_check(); /* a fork child's first call of tprof's (pthread_exit) */
	if (t != tprof_tls.thread || !t->slot)
		return;
	int saved = errno;
	char name[16] = {0}; /* PR_GET_NAME: at most 16 bytes, the terminating NUL included */
	if (!atomic_load(&tprof_sandboxed) && prctl(PR_GET_NAME, name) == 0) {
		memcpy(t->slot->exit_name, name, sizeof(name));
		atomic_store_explicit(&t->slot->exit_named, 1, memory_order_release);
	}
	/* the recorder frees the slot soon after the thread is gone (not at its next 200 ms round): a
	 * program that starts threads one after another keeps reusing a few slots and their rings */
	if (tprof_shm)
		atomic_fetch_add_explicit(&tprof_shm->thread_exits, 1, memory_order_relaxed);
	/* the slot's next thread takes the stack walk's cache (the recorder frees the slot only once
	 * this thread is gone) */
	t->ucache_spare = tprof_tls.ucache;
	tprof_tls.ucache = NULL;
	errno = saved;
}

/* With fewer than 32 keys in the process (tprof's is created in its constructor, before the
 * program's) pthread_setspecific only stores; past that, glibc may allocate, with the guard held. */
static void watch_thread_exit(struct tprof_thread *t)
{
	if (atomic_load_explicit(&exit_key_ok, memory_order_acquire))
		pthread_setspecific(exit_key, t);
}

/* Registration (tprof_start_recording): 0 not yet, 1 under way, 2 recording, 3 gave up. */
static _Atomic int reg_state;

/* tprof's own set-up runs with every signal blocked on its thread (two system calls, once per
 * thread): a handler that interrupted it would call the heap while tprof's guard passes calls
 * through unrecorded, and a heap call of the program would be missing from the trace. */
struct signals_held {
	sigset_t old;
	int held;
};

/* Every signal blocked but the C library's own two (SIGCANCEL and SIGSETXID, the first two real-time
 * signals), which it never lets a program block, as pthread_sigmask does; by the system call, as a
 * fork child on its way to exec runs it, where each page of the C library's code touched first is
 * a fault. */
#define SIGRTMIN_LIBC __SIGRTMIN /* SIGCANCEL; SIGSETXID is the next */
static struct signals_held hold_signals(void)
{
	struct signals_held h = {.held = 0};
	uint64_t all = ~(uint64_t)0 & ~((uint64_t)1 << (SIGRTMIN_LIBC - 1)) & ~((uint64_t)1 << SIGRTMIN_LIBC);
	h.held = tprof_raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, (long)&all, (long)&h.old, 8) == 0;
	return h;
}

/* The mask put back exactly, by the system call: the C library's would leave out its own two signals
 * (SIGCANCEL, the timer's, and SIGSETXID), unblocking them in a thread that had them blocked (the
 * helper thread of a SIGEV_THREAD timer, which a second expiry would then kill). */
static void release_signals(struct signals_held h)
{
	if (h.held)
		tprof_raw_syscall4(SYS_rt_sigprocmask, SIG_SETMASK, (long)&h.old, 0, 8);
}

static struct tprof_thread *attach_held(int *no_room);

/* A thread that could get no slot (more threads alive at once than TPROF_SHM_THREADS) or no ring
 * (an address space limit) skips its next 64 tries (a heap call tries once, at its entry, or
 * twice, at its record too), then 128, ... at most 65536, until one succeeds: each try may wait for the recorder to reap the slots of dead threads, and costs system
 * calls that a program of a few thousand threads would otherwise pay at every heap call. The
 * events meanwhile are counted lost by their callers (tprof_lost_no_ring). */
#define ATTACH_BACKOFF_FIRST 64u
#define ATTACH_BACKOFF_MAX 65536u
/* The smallest ring a thread takes when the shared memory cannot grow (attach_held): 16 KiB. */
#define RING_ENTRIES_LEAST 1024u

/* keep: the caller is a hook about to make its real call, which it makes with signals still held
 * (*kept set; tprof_signals_release after it) when this call gave the thread its slot and the
 * process has never started a thread (__libc_single_threaded, the test the C library's fork makes
 * before it takes the malloc locks). The first heap call sets up the C library's per-thread cache,
 * under the arena's lock; it comes late under tprof (after the registration), so a timer that a
 * bare run never saw expire there would land inside it, and a handler that forks would leave the
 * child a locked arena. Not once a thread was started: the fork then takes the locks itself, and
 * the real call may wait for a lock that another thread holds, stopped in a handler until this one
 * answers a signal (a collector's stop-the-world). Never two windows at once: a fork child made by
 * a fault handler inside one inherits it open. */
static struct tprof_thread *attach(int keep, int *kept)
{
	/* nothing to attach to, for good: every heap call of a process that is not traced (its
	 * registration failed, and said why) comes here, and must cost what a bare call costs */
	if (unlikely(atomic_load_explicit(&reg_state, memory_order_relaxed) == 3))
		return NULL;
	if (unlikely(tprof_tls.attach_skip)) {
		tprof_tls.attach_skip--;
		return NULL;
	}
	int no_room = 0;
	struct signals_held h = hold_signals();
	struct tprof_thread *t = attach_held(&no_room);
	if (keep && t && h.held && __libc_single_threaded && !tprof_tls.kept_open) {
		tprof_tls.kept_open = 1;
		memcpy(&tprof_tls.kept_mask, &h.old, sizeof(tprof_tls.kept_mask));
		*kept = 1;
		/* the signals the real call may raise itself stay as the program had them: blocked, such a
		 * fault (a corrupt heap's SIGSEGV, a seccomp filter's SIGSYS at its brk) would end the
		 * process at once instead of running the program's handler */
		static const int own[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS};
		uint64_t open = 0, was; /* the kernel's mask: its first word (hold_signals) */
		memcpy(&was, &h.old, sizeof(was));
		for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++)
			if (!(was & (1ull << (own[k] - 1))))
				open |= 1ull << (own[k] - 1);
		if (open)
			tprof_raw_syscall4(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&open, 0, 8);
	} else {
		release_signals(h);
	}
	if (t) {
		tprof_tls.attach_fails = 0;
	} else if (no_room) {
		uint32_t f = tprof_tls.attach_fails < 10 ? tprof_tls.attach_fails : 10;
		tprof_tls.attach_skip = ATTACH_BACKOFF_FIRST << f; /* 64 << 10 = ATTACH_BACKOFF_MAX */
		tprof_tls.attach_fails++;
	}
	return t;
}

struct tprof_thread *tprof_thread_attach(void)
{
	return attach(0, NULL);
}

struct tprof_thread *tprof_thread_attach_kept(int *kept)
{
	return attach(1, kept);
}

void tprof_signals_release(void)
{
	int saved = errno;
	tprof_tls.kept_open = 0;
	syscall(SYS_rt_sigprocmask, (long)SIG_SETMASK, &tprof_tls.kept_mask, NULL, 8L);
	errno = saved;
}

/* A slot and a ring for the calling thread, or NULL; *no_room set when there was no free slot or
 * no memory for a ring (rather than no trace to record into, or an allocator busy a moment). */
static struct tprof_thread *attach_held(int *no_room)
{
	/* a signal handler that interrupted the caller between its look and the signals' hold made
	 * a heap call, which attached this thread: a second slot would be the first one's leak */
	if (unlikely(tprof_tls.thread != NULL))
		return tprof_tls.thread;
	if (!tprof_shm && !tprof_start_recording())
		return NULL;
	struct tprof_shm *shm = tprof_shm;
	if (!shm || !atomic_load_explicit(&tprof_recording, memory_order_acquire))
		return NULL;
	int saved = errno;
	tprof_tls.guard++;
	struct tprof_thread *t = NULL;
	uint32_t i = 0;
	int asked = 0;
again:
	for (i = 0; i < TPROF_SHM_THREADS; i++) {
		int expected = TPROF_SLOT_FREE;
		if (atomic_load_explicit(&shm->threads[i].state, memory_order_relaxed) != TPROF_SLOT_FREE)
			continue;
		if (!atomic_compare_exchange_strong(&shm->threads[i].state, &expected, TPROF_SLOT_SETUP))
			continue; /* the recorder skips a slot being set up */
		t = &threads[i];
		uint32_t used = atomic_load(&threads_used);
		while (used < i + 1 && !atomic_compare_exchange_weak(&threads_used, &used, i + 1))
			;
		uint32_t hwm = atomic_load(&shm->threads_hwm);
		while (hwm < i + 1 && !atomic_compare_exchange_weak(&shm->threads_hwm, &hwm, i + 1))
			;
		break;
	}
	if (!t && !asked && !tprof_cfg.lossy && !atomic_load(&shm->recorder_gone)) {
		/* Every slot is taken, most likely by threads that are gone (the recorder frees their
		 * slots every 200 ms; a program that starts threads faster fills them): lossless, so ask
		 * for a reap now and wait for it, at most 100 ms. */
		asked = 1;
		uint32_t r = atomic_load(&shm->slots_reaped);
		atomic_store(&shm->slots_wanted, 1);
		tprof_writer_kick();
		for (int k = 0; k < 10 && atomic_load(&shm->slots_reaped) == r; k++)
			tprof_futex_wait(&shm->slots_reaped, r, 10000000);
		goto again;
	}
	if (!t) {
		*no_room = 1;
		tprof_tls.guard--;
		errno = saved;
		return NULL;
	}
	struct tprof_shm_thread *slot = &shm->threads[i];
	t->slot = slot;
	if (!t->ring || slot->ring_entries != tprof_cfg.ring_entries) {
		uint64_t off;
		/* signals are held: the allocator's holder is another thread, which is about to give it
		 * back, however many threads take their rings at once (a thousand start together) */
		int busy = 1;
		struct tprof_ring *r = NULL;
		uint32_t cap = tprof_cfg.ring_entries;
		for (int k = 0; k < 100 && !r && busy; k++) {
			busy = 0;
			r = tprof_shm_alloc(tprof_ring_bytes(cap), &off, &busy);
		}
		/* The shared memory could not grow (a mapping refused: an address space limit, or a
		 * tool that manages the address space itself, as valgrind does): the smaller ring the
		 * slot had, else a smaller one from what is left, rather than no ring and every event
		 * lost. The recorder reads each slot's own size. */
		if (!r && !busy && t->ring && slot->ring_entries) /* (0: a new memory's slot) */
			goto ring_kept;
		while (!r && !busy && cap > RING_ENTRIES_LEAST) {
			cap >>= 1;
			r = tprof_shm_alloc(tprof_ring_bytes(cap), &off, &busy);
		}
		if (!r) {
			atomic_store(&slot->state, TPROF_SLOT_FREE);
			*no_room = !busy; /* (busy: other threads took their rings meanwhile; the next call tries) */
			tprof_tls.guard--;
			errno = saved;
			return NULL;
		}
		tprof_ring_init(r, cap);
		t->ring = r;
		slot->ring_off = off;
		slot->ring_entries = cap;
	}
ring_kept:
	slot->tid = tprof_gettid();
	if (!tprof_tls.ucache && t->ucache_spare) {
		tprof_tls.ucache = t->ucache_spare;
		t->ucache_spare = NULL;
		tprof_unwind_new_thread();
	}
	/* its name now, for the recorder, which may first look when the thread is gone */
	if (atomic_load(&tprof_sandboxed) || prctl(PR_GET_NAME, slot->start_name) != 0)
		slot->start_name[0] = 0; /* the recorder reads the name, while the thread lives */
	/* calls a signal handler made during the stack capture that came first (crit), before the
	 * thread had a slot, are marked from the moment the recorder can see the slot */
	tprof_tls.defer_mark = 0;
	atomic_store_explicit(&slot->inflight, tprof_tls.defer_head != tprof_tls.defer_tail ? 3 : 0,
			      memory_order_relaxed);
	atomic_store_explicit(&slot->exit_named, 0, memory_order_relaxed);
	atomic_store_explicit(&slot->state, TPROF_SLOT_ACTIVE, memory_order_release);
	tprof_tls.thread = t;
	watch_thread_exit(t);
	tprof_tls.guard--;
	errno = saved;
	return t;
}

int tprof_few_none(void)
{
	if (atomic_load(&tprof_few_over))
		return 0;
	uint32_t used = atomic_load(&threads_used);
	for (uint32_t i = 0; i < used; i++)
		if (threads[i].nfew)
			return 0;
	return 1;
}

/* The ring is full. Lossless: wake the recorder and sleep on the ring's tail until there is room.
 * A recorder that stopped beating for 2 s is taken for gone (killed): from then on events are
 * dropped and counted, so that the program never hangs on it. One that has not beaten yet may
 * still have the registration of a fork child that did not wait for it (TPROF_HELLO_ASYNC) in its
 * queue: 10 s, as long as a registration that waits would wait for the answer. */
void tprof_ring_full(struct tprof_thread *t, uint32_t n)
{
	struct tprof_ring *r = t->ring;
	struct tprof_shm *shm = tprof_shm;
	int saved = errno;
	uint32_t beat = atomic_load(&shm->heartbeat);
	uint64_t since = 0; /* when the heartbeat was last seen to move (0: not looked yet) */
	while (!tprof_ring_reserve(r, n)) {
		if (tprof_cfg.lossy || atomic_load_explicit(&shm->recorder_gone, memory_order_relaxed)) {
			atomic_fetch_add_explicit(&r->lost, n, memory_order_relaxed);
			break;
		}
		uint32_t tail = atomic_load(&r->tail);
		atomic_store(&r->waiting, 1);
		tprof_writer_kick();
		if (!tprof_ring_reserve(r, n))
			tprof_futex_wait(&r->tail, tail, 10000000);
		/* the recorder is gone when its heartbeat has not moved for 2 s (10 s before its first
		 * beat), by the clock: a signal ends a wait early, so waits are no measure of time */
		uint32_t b = atomic_load(&shm->heartbeat);
		uint64_t now = mono_ns_now(1);
		if (b != beat || !since) {
			beat = b;
			since = now;
		} else if (now - since >= (b ? 2000000000u : 10000000000u)) {
			atomic_store(&shm->recorder_gone, 1);
		}
	}
	errno = saved;
}

/* ---- heap calls of signal handlers that interrupt a stack capture or a ring write ---- */

static void defer_lost(uint32_t n)
{
	struct tprof_thread *t = tprof_tls.thread;
	if (t && t->ring)
		atomic_fetch_add_explicit(&t->ring->lost, n, memory_order_relaxed);
	else if (tprof_shm)
		atomic_fetch_add_explicit(&tprof_shm->lost_global, n, memory_order_relaxed);
}

/* The start of a deferral of n entries: their place in defer[] (deferring set), or -1 when they are
 * lost (counted): between a realloc's two halves, in a handler interrupting a deferral, or no room. */
static int defer_open(uint32_t n, uint32_t *head)
{
	if (tprof_tls.crit == 2 || tprof_tls.deferring) {
		defer_lost(n);
		return -1;
	}
	tprof_tls.deferring = 1;
	__asm__ volatile("" ::: "memory");
	/* read once deferring is set: a handler's call before that has listed itself whole */
	*head = tprof_tls.defer_head;
	if (*head + n - tprof_tls.defer_tail > TPROF_DEFER_MAX) { /* no room: lost */
		tprof_tls.deferring = 0;
		defer_lost(n);
		return -1;
	}
	return 0;
}

/* The end of a deferral: the n entries at head listed, the slot marked. */
static void defer_close(uint32_t head, uint32_t n)
{
	__asm__ volatile("" ::: "memory");
	tprof_tls.defer_head = head + n;
	/* a call that returned (to the handler) with its event out of the ring: lost if the process
	 * ends now, which the slot's mark says (3) until the interrupted call publishes it */
	struct tprof_thread *t = tprof_tls.thread;
	if (t) { /* else marked when the thread takes its slot (tprof_thread_attach) */
		uint32_t m = atomic_load_explicit(&t->slot->inflight, memory_order_relaxed);
		if (m == 3 || m == 4) { /* marked already: flip, so that a flush putting it back sees a
					  * call came (tprof_defer_flush) */
			atomic_store_explicit(&t->slot->inflight, 7 - m, memory_order_release);
		} else {
			tprof_tls.defer_mark = m;
			atomic_store_explicit(&t->slot->inflight, 3, memory_order_release);
		}
	}
	tprof_tls.deferring = 0;
}

void tprof_defer(unsigned kind, uint64_t size, const void *ptr, const void *old, uint64_t seq_before,
		 uint64_t tick_before)
{
	if (!atomic_load_explicit(&tprof_recording, memory_order_relaxed) || !tprof_shm)
		return;
	int saved = errno;
	int re = tprof_kind_is_realloc(kind);
	uint32_t n = re ? 2 : 1, head;
	if (defer_open(n, &head) != 0) {
		errno = saved;
		return;
	}
	atomic_store_explicit(&tprof_few_over, 1, memory_order_relaxed); /* not listed: scan */
	struct tprof_ev *d = &tprof_tls.defer[head % TPROF_DEFER_MAX];
	uint64_t seq = atomic_fetch_add_explicit(&tprof_shm->seq, 1, memory_order_seq_cst);
	/* no stack: the interrupted capture owns the stack walk's caches */
	if (re) {
		*d = (struct tprof_ev){tick_before, tprof_ev_pack(seq_before, 0, kind), size,
				       (uint64_t)(uintptr_t)ptr};
		tprof_tls.defer[(head + 1) % TPROF_DEFER_MAX] = (struct tprof_ev){
			tprof_now(), tprof_ev_pack(seq, 0, TPROF_RING_REALLOC_TAIL), 0, (uint64_t)(uintptr_t)old};
	} else {
		*d = (struct tprof_ev){tprof_now(), tprof_ev_pack(seq, 0, kind), size, (uint64_t)(uintptr_t)ptr};
	}
	defer_close(head, n);
	errno = saved;
}

void tprof_defer_annot(uint32_t name_id, int kind, int64_t value)
{
	if (!atomic_load_explicit(&tprof_recording, memory_order_relaxed) || !tprof_shm)
		return;
	int saved = errno;
	uint32_t head;
	if (defer_open(1, &head) == 0) {
		uint64_t seq = atomic_fetch_add_explicit(&tprof_shm->seq, 1, memory_order_seq_cst);
		tprof_tls.defer[head % TPROF_DEFER_MAX] =
			(struct tprof_ev){tprof_now(), tprof_ev_pack(seq, name_id, TPROF_RING_ANNOT), (uint64_t)kind,
					  (uint64_t)value};
		defer_close(head, 1);
	}
	errno = saved;
}

/* Publishes the deferred calls in the list, in order. */
static void publish_deferred(struct tprof_thread *t, struct tprof_ring *r)
{
	while (tprof_tls.defer_tail != tprof_tls.defer_head) {
		__asm__ volatile("" ::: "memory"); /* the entries are read after their head was seen */
		uint32_t tail = tprof_tls.defer_tail;
		unsigned kind = (unsigned)(tprof_tls.defer[tail % TPROF_DEFER_MAX].seq_kind & 0xf);
		uint32_t n = tprof_kind_is_realloc(kind) ? 2 : 1; /* a realloc's pair: its two entries */
		if (!tprof_ring_room(t, n)) {
			tprof_tls.defer_tail = tail + n; /* counted lost by tprof_ring_full */
			continue;
		}
		for (uint32_t i = 0; i < n; i++)
			*tprof_ring_slot(r, i) = tprof_tls.defer[(tail + i) % TPROF_DEFER_MAX];
		tprof_ring_publish(r, n);
		tprof_ring_kick(r, n);
		__asm__ volatile("" ::: "memory");
		tprof_tls.defer_tail = tail + n;
	}
}

void tprof_defer_flush(struct tprof_thread *t)
{
	struct tprof_ring *r = t->ring;
	for (;;) {
		tprof_tls.flushing = 1;
		publish_deferred(t, r);
		tprof_tls.flushing = 0;
		/* put the mark back unless a handler deferred a call since the list was seen empty: it
		 * flipped the mark (3, 4) or the list is not empty; once put back, a handler's call marks
		 * the slot anew */
		uint32_t m = atomic_load_explicit(&t->slot->inflight, memory_order_acquire);
		if (m != 3 && m != 4)
			return;
		if (tprof_tls.defer_tail != tprof_tls.defer_head)
			continue;
		if (atomic_compare_exchange_strong(&t->slot->inflight, &m, tprof_tls.defer_mark))
			return;
	}
}

/* Ends the crit of a hook that never goes on (its handler ended the process, or left it by
 * siglongjmp): its own event is never published (a ring write it began is written over); what
 * handlers deferred behind it is published, unless the handler interrupted tprof's own deferral or
 * publishing, whose list may be half-written (then dropped, counted lost). The walk may have been
 * writing this thread's rules and memo: no walk trusts what it learnt before (as after a fork from
 * a handler); the few-blocks list may be half-updated: the scan at the end looks. */
static void crit_abandon(void)
{
	struct tprof_thread *t = tprof_tls.thread;
	atomic_store(&tprof_few_over, 1);
	tprof_unwind_forget_code();
	if (t && t->ring && !tprof_tls.flushing && !tprof_tls.deferring) {
		tprof_tls.crit = 1; /* 2: a realloc's pair, whose first number stays unused */
		tprof_defer_flush(t); /* and the slot's mark back to the interrupted call's */
		tprof_tls.crit = 0;
	} else { /* a publishing or deferral cut short: what is listed may be half-done */
		tprof_tls.flushing = tprof_tls.deferring = 0;
		tprof_defer_drop();
	}
}

/* A handler that ends the process inside a hook's crit: the heap calls on the way out (exit
 * handlers, destructors, __libc_freeres) were deferred behind the hook, 16 entries at most (a
 * realloc takes two), the rest counted lost, and none published: the trace ended incomplete. Not
 * inside tprof's own code (guard), nor inside its deferral or publishing (left to be counted lost,
 * as before). */
TPROF_STARTUP void tprof_end_interrupted(void)
{
	/* first: a child that _Fork or a raw fork made from a handler inside a hook's critical part has
	 * that hook's crit, and its parent's thread record, whose memory it does not have */
	tprof_alive_check();
	if (likely(!tprof_tls.crit) || tprof_tls.guard || tprof_tls.deferring || tprof_tls.flushing)
		return;
	int saved = errno;
	crit_abandon();
	errno = saved;
}

/* A hook that a handler left by siglongjmp never ends its crit: every heap call of the thread after
 * it was deferred behind it, 16 entries kept and none published, the rest counted lost, for the
 * rest of the process. The hook's frame word tells (tprof_tls.frame): a handler's call inside the
 * hook runs below the hook's frame, on the same stack, which leaves the word as it was, or on the
 * alternate signal stack; after the jump, the program's calls reuse the stack where the hook's
 * frame was (a hook at the same depth writes its own word there first thing), or run above it. */
int tprof_crit_left(const volatile uint32_t *mine)
{
	const volatile uint32_t *f = tprof_tls.frame;
	if (!f || tprof_tls.crit == 0)
		return 0;
	int saved = errno;
	int left = 0;
	uintptr_t at = (uintptr_t)mine;
	if (tprof_readable((const void *)f) && *f != tprof_tls.nonce) {
		left = 1;
	} else if (at > (uintptr_t)f && !(at >= tprof_tls.alt_lo && at < tprof_tls.alt_hi)) {
		/* above the hook's frame, on the stack the hook ran on, unless this runs on the alternate
		 * signal stack: the one set through sigaltstack (hooks.c keeps it: with SS_AUTODISARM the
		 * kernel says none is set while a handler runs on it), or one set by a system call of the
		 * program's own, which the kernel reports */
		stack_t ss;
		left = !atomic_load(&tprof_sandboxed) && syscall(SYS_sigaltstack, NULL, &ss) == 0 &&
		       !(ss.ss_flags & SS_ONSTACK);
	}
	if (left) {
		crit_abandon();
		struct tprof_thread *t = tprof_tls.thread;
		if (t) /* the hook left is no call in flight */
			atomic_store_explicit(&t->slot->inflight, 0, memory_order_release);
		tprof_tls.frame = NULL;
	}
	errno = saved;
	return left;
}

void tprof_defer_drop(void)
{
	for (;;) { /* with crit held, a handler only adds to the list: then end it, as tprof_crit_end */
		uint32_t n = 0;
		while (tprof_tls.defer_tail != tprof_tls.defer_head) { /* entries: a realloc counts two */
			uint32_t head = tprof_tls.defer_head;
			n += head - tprof_tls.defer_tail;
			tprof_tls.defer_tail = head;
		}
		if (n)
			defer_lost(n);
		tprof_tls.crit = 0;
		if (likely(tprof_tls.defer_head == tprof_tls.defer_tail))
			return;
		tprof_tls.crit = 1;
	}
}

void tprof_writer_kick(void)
{
	int saved = errno;
	atomic_fetch_add(&tprof_shm->kick, 1);
	tprof_futex_wake(&tprof_shm->kick);
	errno = saved;
}

/* ---- lifecycle ---- */

/* Whether the calling thread is its process's only task: 1 yes, 0 no (another task, or it is not
 * the main thread, whose zombie /proc counts too), -1 unknown. unshare(CLONE_THREAD) asks for
 * nothing new: the kernel grants it, changing nothing, to a lone thread only, in 0.2 us where a
 * /proc file costs a new process 20 us and more. */
int tprof_lone_task(void)
{
	if (atomic_load(&tprof_sandboxed)) /* a filter may end the process at an unexpected call */
		return -1;
	int saved = errno;
	long r = syscall(SYS_unshare, (long)CLONE_THREAD);
	int e = errno;
	errno = saved;
	return r == 0 ? 1 : e == EINVAL ? 0 : -1;
}

/* The resident set size from /proc/self/statm (field 2: what stat's field 24 says, for less work
 * of the kernel's), in bytes (0: unknown); *tasks (when asked): 1 when the calling thread is the
 * process's only task, 2 when it is not, -1 when unknown (tprof_lone_task). */
uint64_t tprof_rss_now(int *tasks)
{
	char buf[128];
	if (tasks) {
		int lone = tprof_lone_task();
		*tasks = lone < 0 ? -1 : lone ? 1 : 2;
	}
	if (atomic_load(&tprof_sandboxed))
		return 0;
	ssize_t n = tprof_proc_read("/proc/self/statm", buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *p = buf;
	while (*p >= '0' && *p <= '9') /* the size */
		p++;
	if (*p++ != ' ' || *p < '0' || *p > '9')
		return 0;
	uint64_t pages = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		pages = pages * 10 + (uint64_t)(*p - '0');
	return pages * (uint64_t)sysconf(_SC_PAGESIZE);
}

int tprof_end_threads = -1;

/* This process's shared memory, or NULL in a vfork child (the memory is its parent's). */
static struct tprof_shm *own_shm(void)
{
	struct tprof_shm *shm = tprof_shm;
	return shm && shm->pid == (int32_t)tprof_getpid() ? shm : NULL;
}

/* The way out is noted before anything else that takes time: another thread's exit may end the
 * process at any moment from the start of this one's. */
TPROF_STARTUP void tprof_note_end(int reason, int value)
{
	tprof_alive_check(); /* a fork child's first call of tprof's (_exit) */
	tprof_end_threads = -1;
	struct tprof_shm *shm = own_shm();
	if (shm) {
		atomic_store(&shm->end_value, value);
		atomic_store(&shm->end_reason, reason);
	}
	tprof_region_barrier(); /* the trace files of the children it made exist once it has ended */
	if (!shm)
		return;
	if (!tprof_tls.guard && atomic_load(&tprof_recording))
		tprof_modules_scan_if_changed(); /* a module loaded since is named in the trace */
	if (shm->rss_interval_ms) {
		uint64_t b = tprof_rss_now(&tprof_end_threads);
		if (b) {
			atomic_store(&shm->exit_rss_tick, tprof_now());
			atomic_store(&shm->exit_rss_bytes, b);
		}
	}
}

/* An exit call has begun. Its handlers note the end, with all else (on_exit_status); but threads
 * that call exit at once share the handlers out, and the one that ends the process may find them
 * all taken (or that note claimed) while another thread is still in one, preempted before it noted:
 * its end was then an _exit. Provisional: for the recorder a process that ends with an exit status
 * after this ended by exit, but one that execs meanwhile (an exit handler's exec of an image that
 * never registers) by exec, and one whose status is not known did not say how it ended. */
void tprof_note_exit_begun(void)
{
	tprof_alive_check();
	struct tprof_shm *shm = own_shm();
	int32_t none = 0;
	if (shm)
		atomic_compare_exchange_strong(&shm->end_reason, &none, TPROF_END_EXIT_BEGUN);
}

TPROF_STARTUP void tprof_note_exec(int pending)
{
	tprof_alive_check(); /* a fork child's first call of tprof's */
	struct tprof_shm *shm = own_shm();
	if (!shm)
		return;
	if (pending && !tprof_tls.guard && atomic_load(&tprof_recording))
		tprof_modules_scan_if_changed();
	if (pending && shm->rss_interval_ms) { /* the image's last sample */
		uint64_t b = tprof_rss_now(NULL);
		if (b) {
			atomic_store(&shm->exit_rss_tick, tprof_now());
			atomic_store(&shm->exit_rss_bytes, b);
		}
	}
	atomic_store(&shm->exec_pending, (uint32_t)pending);
}

/* exit() and a return from main: the status, after the program's own exit handlers and every
 * library's destructor (tprof's destructor registers it, see there), before __libc_freeres and the
 * scan (last_exit_handler). Registered in the constructor too, where it comes after the C library's
 * handler that runs the destructors: for threads that call exit at once, one of which may run the
 * last handlers and end the process while another is still in the destructors, before tprof's has
 * registered it again. Once per process, by whichever copy runs first. */
static _Atomic pid_t status_noted;

static void on_exit_status(int status, void *arg)
{
	(void)arg;
	pid_t me = (pid_t)tprof_getpid(), was = atomic_load(&status_noted);
	if (was == me || !atomic_compare_exchange_strong(&status_noted, &was, me))
		return;
	tprof_note_end(TPROF_END_EXIT, status);
	tprof_end_threads = -1; /* threads may have ended in the exit handlers and destructors */
	if (tprof_tls.thread) /* the exiting thread's last name: the process is gone when it is read */
		on_thread_exit(tprof_tls.thread);
	tprof_tls.guard++;
	tprof_modules_scan(0); /* what dlopen loaded since the last scan */
	tprof_tls.guard--;
}

/* An audit module (LD_AUDIT, or the executable's DT_AUDIT or DT_DEPAUDIT) makes the dynamic loader
 * allocate with its own minimal allocator for longer: __libc_freeres then hands some of those blocks
 * to the C library's free, which aborts the program ("free(): invalid pointer"; memcheck reports the
 * invalid frees and goes on). Such a process gets no __libc_freeres. Noted by the constructor. */
static int audited;

static void note_audit(void)
{
	const char *a = env_get("LD_AUDIT");
	if (a && *a) {
		audited = 1;
		return;
	}
	const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
	size_t n = getauxval(AT_PHNUM);
	uintptr_t bias = 0;
	const ElfW(Phdr) *dyn = NULL;
	for (size_t i = 0; ph && i < n; i++) {
		if (ph[i].p_type == PT_PHDR)
			bias = (uintptr_t)ph - ph[i].p_vaddr;
		else if (ph[i].p_type == PT_DYNAMIC)
			dyn = &ph[i];
	}
	for (const ElfW(Dyn) *d = dyn ? (const ElfW(Dyn) *)(bias + dyn->p_vaddr) : NULL; d && d->d_tag != DT_NULL; d++)
		if (d->d_tag == DT_AUDIT || d->d_tag == DT_DEPAUDIT)
			audited = 1;
}

/* valgrind runs __libc_freeres at exit; doing the same makes "in use at exit" comparable. It must
 * run after every destructor (they may still use what it frees), so tprof's destructor, which runs
 * among them, registers it as an exit handler (without a library handle, see tprof_destructor):
 * glibc runs handlers registered while it runs the destructors right after them. Only safe while
 * no other thread can use the C library. */
static void run_freeres(void)
{
	char leader = 0;
	if (!tprof_cfg.freeres || !tprof_shm || atomic_load(&tprof_sandboxed) || audited)
		return;
	/* this thread alone, or with a main thread that called pthread_exit (a zombie until the
	 * process ends: the last thread's return calls exit), as memcheck runs it then too */
	int n = tprof_tasks_settled(&leader);
	if (n < 0 && __libc_single_threaded)
		n = 1; /* no /proc (a chroot without it): the C library knows no thread was ever started */
	if (n != 1 && !(n == 2 && leader == 'Z' && tprof_gettid() != tprof_getpid()))
		return;
	/* not dlsym: it would free the message of a dlopen that failed and that the program never
	 * asked dlerror() about, which memcheck sees freed by __libc_freeres */
	tprof_tls.guard++;
	void (*cxx_freeres)(void) = (void (*)(void))tprof_find_symbol("_ZN9__gnu_cxx9__freeresEv");
	void (*libc_freeres)(void) = (void (*)(void))tprof_find_symbol("__libc_freeres");
	tprof_tls.guard--;
	if (cxx_freeres)
		cxx_freeres();
	if (libc_freeres)
		libc_freeres();
}

/* The last exit handler: valgrind's freeres, then the reachability scan, after which nothing of the
 * program runs but the C library's stdio flush. */
static void last_exit_handler(void *arg)
{
	(void)arg;
	run_freeres();
	tprof_scan_at_end(TPROF_END_EXIT);
}

/* quick_exit runs no destructor: the scan comes after its handlers (this one was registered first,
 * so it runs last). */
static void last_quick_exit_handler(void)
{
	tprof_scan_at_end(TPROF_END_QUICK_EXIT);
}

/* An image exec'd under a seccomp filter it inherited: /proc/self/status says so (Seccomp: 1 for
 * strict mode, 2 for a filter). A filter that an unprivileged process installed (with
 * no-new-privileges set, as it must be) sandboxes a program that knows every call it makes, and may
 * kill it at any other; one installed with privilege and without that flag is a container
 * runtime's, made to run any program, and fails the calls it forbids instead. */
void tprof_sandbox_inherited(void)
{
	/* once per image: a fork child has its parent's answer (before_fork asks), and a filter the
	 * image installs itself is seen by the prctl and syscall hooks */
	static int asked;
	if (tprof_cfg.trust_seccomp || asked)
		return;
	asked = 1;
	static TPROF_LARGE char buf[4096]; /* registration is one thread's at a time */
	ssize_t n = tprof_proc_read("/proc/self/status", buf, sizeof(buf) - 1);
	if (n <= 0)
		return;
	buf[n] = 0;
	const char *m = strstr(buf, "\nSeccomp:\t"), *p = strstr(buf, "\nNoNewPrivs:\t");
	int mode = m ? m[10] - '0' : 0, nnp = p ? p[13] - '0' : 0;
	if (mode == 1 || (mode == 2 && nnp == 1))
		atomic_store(&tprof_sandboxed, 1);
}

static int forked; /* this image is a fork child of a registered parent (whose memory it was not given) */
int tprof_fork_child;
static int stacks_ready; /* the stack table and modules are set up for the memory now registering */

/* While the recorder takes the process (region.c, between the message and the answer): the stack
 * table and the module table, for shared memory s (tprof_shm from now on). Again for another
 * memory (the process creates its trace file itself and registers again): the table is reset. */
void tprof_region_prepare(struct tprof_shm *s)
{
	static int table_made;
	tprof_shm = s;
	if (forked || table_made) {
		tprof_stacks_reset();
	} else {
		table_made = 1;
		if (tprof_stacks_init(tprof_cfg.depth) != 0)
			tprof_cfg.depth = 0; /* the refused memory is noted there, said in the trace's END */
	}
	stacks_ready = 1;
}
/* The thread key, the quick_exit handler and a first copy of the exit handler, registered in the
 * constructor of every image (inherited by fork children), never at a registration: the first heap
 * call of a process can be glibc's own, made while it holds the lock of the handlers' table (the
 * 32nd atexit handler's calloc), and registering then would wait for that lock forever. Registered
 * before the program's own at_quick_exit handlers, ours runs after them. Until the process
 * registers they find nothing to do. The exit handler that normally runs is tprof's destructor's to
 * register (see there). */
static void set_handlers(void)
{
	if (pthread_key_create(&exit_key, on_thread_exit) == 0)
		atomic_store_explicit(&exit_key_ok, 1, memory_order_release);
	at_quick_exit(last_quick_exit_handler);
	on_exit(on_exit_status, NULL); /* the copy for exits at once (see on_exit_status) */
}

static void before_fork(void)
{
	/* done once: nothing written (a page the last child shares would be copied for each fork) */
	if (!((tprof_cfg.depth == 0 || tprof_tls.unwound) && tprof_region_fork_ready()) &&
	    atomic_load(&reg_state) != 2 && atomic_load(&tprof_ready) && !tprof_tls.guard &&
	    !atomic_load(&tprof_sandboxed)) {
		tprof_tls.guard++;
		tprof_sandbox_inherited();
		if (!atomic_load(&tprof_sandboxed)) {
			tprof_recorder_ensure();
			tprof_region_learn_self();
			tprof_stacks_warm();
		}
		tprof_tls.guard--;
	}
	tprof_region_before_fork();
	if (!tprof_tls.guard && atomic_load(&tprof_ready)) {
		tprof_tls.guard++;
		tprof_modules_before_fork();
		tprof_tls.guard--;
	}
}

static int parent_left; /* a fork child still has its parent's shared memory and thread records */

/* A process that registered arms a page the kernel gives a fork child zeroed (MADV_WIPEONFORK):
 * whatever made the child (fork, which runs after_fork_child, or _Fork, a raw fork or clone system
 * call, which run nothing of ours), its first hook reads 0 (tprof_alive_lost). */
static void alive_arm(void)
{
	int saved = errno;
	if (!alive_page && !atomic_load(&tprof_sandboxed)) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED && madvise(p, 4096, MADV_WIPEONFORK) != 0) {
			munmap(p, 4096);
			p = MAP_FAILED; /* before Linux 4.14: only fork, through after_fork_child */
		}
		if (p != MAP_FAILED)
			alive_page = p;
	}
	if (alive_page) {
		*alive_page = 1;
		tprof_alive = alive_page;
	}
	errno = saved;
}

/* What a fork child that registers clears of its parent's first: not at the fork, for a child that
 * makes no recorded call (exits, or execs, at once) would pay for it too, about 20 us on a VM (the
 * unmapping, the copy of the page of thread records, the code of both faulted in). */
static void forget_parent(void)
{
	if (!parent_left)
		return;
	parent_left = 0;
	tprof_region_forget(1);
	uint32_t used = atomic_load(&threads_used);
	if (used) {
		memset(threads, 0, used * sizeof(threads[0])); /* others stay untouched */
		atomic_store(&threads_used, 0);
	}
}

static void forget_registration(void);

TPROF_STARTUP static void after_fork_child(void)
{
	/* signals held: a handler's heap call meanwhile would find the state half forgotten (the
	 * alive page, which the kernel zeroed, makes it come here too) */
	struct signals_held h = hold_signals();
	forget_registration();
	tprof_alive = &alive_always; /* forgotten: nothing for the first hook to do (alive_lost) */
	release_signals(h);
}

TPROF_STARTUP static void forget_registration(void)
{
	/* Only this thread survives, in memory that is still the parent's: the child forgets it and
	 * registers on its first recorded call, with memory, slots and stacks of its own. Every page
	 * written here is copied for the child (about 10 us on a VM): only what differs is written;
	 * the parent's memory and thread records are let go at registration (forget_parent). */
	if (atomic_load(&tprof_recording))
		atomic_store(&tprof_recording, 0);
	if (atomic_load(&tprof_lock_future))
		atomic_store(&tprof_lock_future, 0);
	if (tprof_tls.thread)
		tprof_tls.thread = NULL;
	if (tprof_tls.attach_skip | tprof_tls.attach_fails) /* the parent's slots were all taken */
		tprof_tls.attach_skip = tprof_tls.attach_fails = 0;
	if (atomic_load(&threads_used) && !parent_left)
		parent_left = 1;
	if (atomic_load(&tprof_few_over))
		atomic_store(&tprof_few_over, 0);
	if (!tprof_fork_child)
		tprof_fork_child = 1;
	if (atomic_load(&reg_state) == 2) {
		tprof_shm = NULL; /* the parent's: never written from here on */
		parent_left = 1;
		forked = 1;
		atomic_store(&reg_state, 0);
	} else if (unlikely(atomic_load(&reg_state) == 1)) {
		/* another thread of the parent was registering: it is not in the child, which starts
		 * as a process of its own (else each of its heap calls would wait for it) */
		tprof_shm = NULL;
		atomic_store(&reg_state, 0);
	}
	if (unlikely(tprof_tls.crit) && !tprof_tls.guard) {
		/* A signal handler forked while its thread was inside a hook's stack walk or ring write:
		 * the child's heap calls are its own, recorded from a registration of its own (not
		 * deferred for a hook that will not go on), and its first walk trusts no rule the
		 * interrupted one may have been writing. (Should the handler return in the child, the
		 * interrupted hook finds its parent's memory gone, as before.) */
		tprof_tls.crit = 0;
		tprof_tls.deferring = 0;
		tprof_tls.defer_tail = tprof_tls.defer_head;
		tprof_tls.defer_mark = 0;
		tprof_unwind_forget_code();
	}
}

TPROF_STARTUP void tprof_alive_lost(void)
{
	/* A fork child: after_fork_child ran in it, unless the C library did not make the fork; its
	 * parent's registration, shared memory and thread records are then still taken for its own.
	 * Signals held, and looked at again: a handler's heap call may have done it meanwhile (and
	 * registered the child, which must then stay). */
	struct signals_held h = hold_signals();
	if (!*tprof_alive) {
		int st = atomic_load(&reg_state);
		if (st == 1 || st == 2 || tprof_tls.thread)
			forget_registration();
		/* this process is the one that registers next, and arms the page again then: written now,
		 * the page would cost a fault, and a fork child on its way to exec comes here */
		tprof_alive = &alive_always;
	}
	release_signals(h);
}

/* A process image registers with a recorder at its first recorded call (a heap call, a kernel
 * call), which may come from another library's constructor before ours runs: valgrind counts those
 * calls too. An image that makes none (a shell's fork child that only execs, /bin/true) costs no
 * registration and leaves no trace. 0: not yet, 1: under way, 2: recording, 3: gave up. */

/* Whether this process shares its memory with its parent: a vfork child (or one cloned with
 * CLONE_VM), running in its parent's memory until it execs or ends. One system call (kcmp), and
 * only before the registration; no when it cannot be known. */
static int in_parents_memory(void)
{
	if (atomic_load(&tprof_sandboxed))
		return 0;
	long pp = tprof_getppid();
	return pp > 0 && tprof_raw_syscall6(SYS_kcmp, tprof_getpid(), pp, KCMP_VM, 0, 0, 0) == 0;
}

int tprof_start_recording(void)
{
	if (!atomic_load_explicit(&tprof_ready, memory_order_acquire)) {
		tprof_init();
		if (!atomic_load_explicit(&tprof_ready, memory_order_acquire))
			return 0;
	}
	int st = atomic_load_explicit(&reg_state, memory_order_acquire);
	if (st >= 2)
		return st == 2;
	/* a vfork child whose call is its process's first: a registration would be made in the
	 * parent's memory, under the child's pid, and the parent's trace would end with the child.
	 * Its calls are not recorded (as a vfork child's never are in its own trace); the parent
	 * registers at its own next call. */
	if (st == 0 && in_parents_memory())
		return 0;
	/* signals held from before the registration is claimed: a handler that ran between the claim
	 * and the hold would wait below for its own thread's registration, which cannot go on until
	 * the handler returns (a program whose timer fires again before then never did) */
	struct signals_held held = hold_signals();
	int expected = 0;
	if (atomic_compare_exchange_strong(&reg_state, &expected, 1)) {
		tprof_tls.guard++;
		forget_parent();
		choose_clock();
		tprof_stacks_learn_exit(); /* a registration before the constructor's */
		stacks_ready = 0;
		int ok = tprof_region_start(forked) == 0;
		if (ok && !stacks_ready)
			tprof_region_prepare(tprof_shm);
		if (ok && tprof_tls.ucache) /* made before the registration: perhaps its parent's pages */
			tprof_ucache_cold = 1;
		if (ok) /* before the registration shows: a child another thread makes from then on sees it */
			alive_arm();
		if (ok)
			tprof_region_note_cxx(forked);
		atomic_store_explicit(&tprof_recording, ok, memory_order_release);
		atomic_store_explicit(&reg_state, ok ? 2 : 3, memory_order_release);
		tprof_tls.guard--;
		release_signals(held);
		return ok;
	}
	release_signals(held);
	/* another thread registers: a one-time wait of about a millisecond */
	for (int k = 0; k < 100000 && atomic_load_explicit(&reg_state, memory_order_acquire) == 1; k++)
		sched_yield();
	return atomic_load_explicit(&reg_state, memory_order_acquire) == 2;
}

__attribute__((constructor)) static void tprof_constructor(void)
{
	atomic_store_explicit(&tprof_constructed, 1, memory_order_release);
	note_audit();
	tprof_init();
	tprof_region_note_stderr();
	pthread_atfork(before_fork, NULL, after_fork_child);
	tprof_tls.guard++;
	set_handlers();
	tprof_stacks_learn_exit();
	tprof_tls.guard--;
	if (tprof_cfg.verify_stacks) {
		tprof_tls.guard++;
		tprof_stacks_load_reference();
		tprof_tls.guard--;
	}
	/* A program whose malloc is not ours (the executable defines it, or an allocator was preloaded
	 * ahead of us) never calls a hook: register now, so that its trace can say why it is empty. */
	char owner[8];
	tprof_tls.guard++;
	tprof_malloc_owner(owner, sizeof(owner));
	tprof_tls.guard--;
	if (owner[0])
		tprof_start_recording();
}

__attribute__((destructor)) static void tprof_destructor(void)
{
	/* Not atexit(): from a library that registers with the library's handle, and __cxa_finalize
	 * runs such handlers as soon as the library itself is finalized, before the libraries that
	 * come after it. A handler without a handle runs once every destructor has. */
	extern int __cxa_atexit(void (*fn)(void *), void *arg, void *dso);
	if (atomic_load(&reg_state) == 2) {
		if (tprof_sanitizer_present()) {
			/* AddressSanitizer's LeakSanitizer checks as its library is finalized, right after
			 * this one, and ends the process there (a raw exit) when it finds a leak, as
			 * ThreadSanitizer does when it found a race: the scan runs now, before it, and without
			 * __libc_freeres (the libraries finalized after this one may still use what it frees) */
			if (tprof_cfg.leakscan)
				tprof_scan_at_end(TPROF_END_EXIT);
		} else if (tprof_cfg.freeres || tprof_cfg.leakscan) {
			__cxa_atexit(last_exit_handler, NULL, NULL);
		}
		/* registered after it, so run before it: the status once every destructor has run. Not
		 * from the constructor, which runs before the C library registers the loader's handler
		 * that runs the destructors (ours would run after it, and after the scan), nor at the
		 * registration (set_handlers). on_exit's handler gets exit's status even now. */
		on_exit(on_exit_status, NULL);
	} else {
		tprof_region_barrier(); /* a process that never registered: no exit handler of ours */
	}
}

/* The other tasks of this process, as /proc lists them: -1 when one of them still runs the
 * program (or when that cannot be told); else how many of them stay until the process ends (a
 * main thread that called pthread_exit: a zombie). A thread joined just before the end is neither:
 * once pthread_join has returned it still counts in the process (and in /proc) until the kernel has
 * finished its exit, microseconds later, milliseconds when that exit frees much (the last reference
 * to a file): it has PF_EXITING in the flags of its stat (field 9), and is a zombie or dead
 * ('Z', 'X') at the very end. */
#define TPROF_PF_EXITING 0x4u
struct staying {
	int32_t leader;
	int stay; /* -1: one runs */
};

static int task_staying(int32_t tid, void *arg)
{
	struct staying *st = arg;
	char buf[512];
	uint64_t flags;
	const char *t = tprof_stat_read(tid, buf, sizeof(buf));
	if (!t)
		return 0; /* gone meanwhile */
	if (t[0] == 'Z' || t[0] == 'X')
		st->stay += tid == st->leader; /* the main thread stays a zombie; another is going */
	else if (tprof_stat_field(t, 9, &flags) != 0 || !(flags & TPROF_PF_EXITING))
		st->stay = -1;
	return st->stay < 0;
}

static int others_staying(void)
{
	if (atomic_load(&tprof_sandboxed))
		return -1; /* a filter may end the process at an unexpected call */
	char buf[1024];
	struct staying st = {(int32_t)tprof_getpid(), 0};
	return tprof_each_task(buf, sizeof(buf), task_staying, &st) < 0 ? -1 : st.stay;
}

int tprof_tasks_settled(char *leader_state)
{
	int n = tprof_proc_threads(leader_state);
	for (int k = 0; k < 2000 && n > 1; k++) {
		int stay = others_staying();
		if (stay < 0 || n <= 1 + stay)
			break;
		struct timespec ts = {0, 50000};
		syscall(SYS_nanosleep, &ts, NULL); /* an interrupted sleep only looks again sooner */
		n = tprof_proc_threads(leader_state);
	}
	return n;
}

/* Tasks of this process, zombies included (-1: unknown); *leader_state: the main thread's state. */
int tprof_proc_threads(char *leader_state)
{
	char buf[1024];
	uint64_t n;
	const char *t = tprof_stat_read(0, buf, sizeof(buf));
	if (!t || tprof_stat_field(t, 20, &n) != 0)
		return -1;
	if (leader_state)
		*leader_state = t[0];
	return (int)n;
}
