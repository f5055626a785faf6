/* Internal interface of libtprof.so: the state shared by the hooks (hooks.c), the recording core
 * (core.c), the shared memory and its registration (region.c). Data flows hook -> tprof_record_*()
 * -> the calling thread's ring in shared memory -> the recorder process -> trace file. Nothing here
 * is exported from the library. */
#ifndef TPROF_PRELOAD_H
#define TPROF_PRELOAD_H

#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "ring.h"
#include "shm.h"
#include "stacks.h"
#include "tprof_trace.h"

#define TPROF_EXPORT __attribute__((visibility("default")))
/* A large zero-initialized array: placed after every other variable (the x86-64 large-data
 * section, which the linker puts after .bss), so that the small variables a fork child writes share
 * a few pages: each page the child writes first is copied, a fault of a few microseconds. */
#define TPROF_LARGE __attribute__((section(".lbss.tprof")))
/* Code that every process runs, recording or not (the constructor's, the configuration, the exit
 * of a process that never registered), and that a fork child runs on its way to exec (the fork
 * handler, the exec hooks): kept beside the constructor, which the compiler places first in the
 * code, so that it is one run of pages. A process's first touch of each run of pages costs it a
 * fault, 5 to 20 us on a VM (a fork child's too: the kernel does not copy the parent's entries for
 * a library's code). */
#define TPROF_STARTUP __attribute__((section(".text.startup")))
#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/* Reading the clock is the dearest part of recording an event (about 10 ns for rdtsc here). Every
 * event of a thread reads it until the thread has read it TPROF_STAMP_FIRST times in the recorder's
 * current epoch (a pass of the recorder, at most ~10 ms apart), then one event in TPROF_STAMP_EVERY:
 * a thread with few events has exact times, a busy one pays one clock read per 16 events; the
 * reader interpolates the others by sequence number (docs/FORMAT.md, Timestamps). */
#define TPROF_STAMP_FIRST 64
#define TPROF_STAMP_EVERY 16

/* dlsym for this library's own look-ups: the C library's, called from here (hooks.c). */
void *tprof_dlsym(void *handle, const char *name);

/* The functions the hooks forward to, found with dlsym(RTLD_NEXT). */
struct tprof_real {
	void *(*malloc)(size_t);
	void (*free)(void *);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	/* the realloc the program's calls reach when it is not ours (an allocator preloaded ahead of
	 * libtprof.so, the executable's own): what the C library's reallocarray would call */
	void *(*realloc_foreign)(void *, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*memalign)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	void *(*reallocarray)(void *, size_t, size_t); /* only for dlsym (hooks.c): the hook calls realloc */
	/* the C library's own __libc_ names: what those names of ours pass on to while an allocator
	 * after this library calls them (core.c, note_foreign) */
	void *(*libc_malloc)(size_t);
	void (*libc_free)(void *);
	void *(*libc_calloc)(size_t, size_t);
	void *(*libc_realloc)(void *, size_t);
	void *(*libc_memalign)(size_t, size_t);
	void *(*libc_valloc)(size_t);
	void *(*libc_pvalloc)(size_t);
	void (*exit_)(int) __attribute__((noreturn));  /* _exit */
	void (*Exit_)(int) __attribute__((noreturn));  /* _Exit */
	void (*quick_exit)(int) __attribute__((noreturn));
	void (*exit)(int) __attribute__((noreturn));
	int (*execve)(const char *, char *const[], char *const[]);
	int (*execv)(const char *, char *const[]);
	int (*execvp)(const char *, char *const[]);
	int (*execvpe)(const char *, char *const[], char *const[]);
	int (*fexecve)(int, char *const[], char *const[]);
	void *(*dlopen)(const char *, int);
	void *(*dlmopen)(long, const char *, int);
	int (*dlclose)(void *);
	int (*dl_iterate_phdr)(int (*)(struct dl_phdr_info *, size_t, void *), void *);
	int (*pipe2)(int[2], int);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	long (*syscall)(long, ...);
	int (*prctl)(int, ...);
};

/* The blocks of this image a thread allocated and still holds, while they are few: at the end, a
 * process in which no thread holds any has nothing a reachability scan could classify, and skips
 * the scan's round trip to its recorder (scan.c). A free from another thread than the one that
 * allocated leaves the block listed (the scan then runs); more blocks than fit, a realloc that
 * failed or a heap call a signal handler made during a hook's critical part end the listing for
 * the image (tprof_few_over): the scan always runs. */
#define TPROF_FEW 8

/* A thread's process-private view of its slot in the shared memory. */
struct tprof_thread {
	struct tprof_shm_thread *slot;
	struct tprof_ring *ring; /* mapped on first use, kept for the slot's next thread */
	void *ucache_spare;      /* the stack walk cache of the slot's last thread, for its next */
	uint32_t nfew;           /* blocks in few[] (kept for the slot's next thread) */
	/* their addresses complemented: no leak checker that reads this library's memory as roots
	 * (LeakSanitizer, in an ASan-built program) takes them for pointers that keep the blocks */
	uintptr_t few[TPROF_FEW];
};

/* The heap calls that signal handlers made while the thread they interrupted was inside tprof's
 * stack capture or ring write (tprof_tls.crit) are kept as their ring entries (two for a realloc,
 * whose first entry's kind says so), numbered and stamped when made, until the interrupted call has
 * published its own: room for this many entries. In the thread's TLS, which the C library carves
 * out of the stack of a thread the program sized: 512 bytes. */
#define TPROF_DEFER_MAX 16u

/* Per-thread state in initial-exec TLS: a glibc TLS access of another model can call malloc. */
struct tprof_tls {
	int guard;                   /* nonzero: tprof's own code runs (it may allocate): pass calls through */
	/* nonzero: a real call into an allocator after this library that is not the C library's
	 * (core.c, note_foreign) runs; the C library's __libc_ names it forwards to pass straight on */
	int in_foreign;
	/* volatile: a signal handler on this thread reads and writes them between any two instructions */
	volatile int crit;           /* in a stack capture or a ring write: a nested heap call is deferred */
	volatile int deferring;      /* a nested heap call fills defer[] */
	volatile int flushing;       /* defer[] is being published */
	/* defer[] as a ring of entries: filled by nested calls, drained by the outer */
	volatile uint32_t defer_head, defer_tail;
	uint32_t defer_mark;         /* the slot's inflight mark before defer[] held calls (it is 3 then) */
	/* the word in the frame of the hook that runs (hooks.c, FRAME), and the value it wrote there:
	 * while that hook holds crit, the word holds the value, unless a signal handler left the hook by
	 * siglongjmp (tprof_crit_left); NULL once a hook returns, and while crit is held outside a hook */
	const volatile uint32_t *volatile frame;
	volatile uint32_t nonce;
	uint32_t stamp_left;         /* events to go before the next one that reads the clock */
	uint32_t epoch;              /* the recorder's epoch when this thread last read the clock */
	uint32_t epoch_stamps;       /* clock reads in that epoch: the first TPROF_STAMP_FIRST all read it */
	struct tprof_thread *thread; /* this thread's slot, NULL until its first event */
	int unwound;                 /* tprof_stacks_warm has set up this thread's stack walk cache */
	int64_t omp_region;          /* the OpenMP region whose body or task this thread runs (omp.c); 0: none */
	void *ucache;                /* the fast stack walk's rules and stack pages (unwind.c) */
	/* this thread could get no slot or ring: tprof_thread_attach gives up at once this many
	 * times more, and after attach_fails failures in a row waits twice as long (core.c) */
	uint32_t attach_skip, attach_fails;
	/* the alternate signal stack this thread set through sigaltstack (hooks.c), [alt_lo, alt_hi) */
	uintptr_t alt_lo, alt_hi;
	/* a hook's first real call holds signals (core.c, attach): the thread's own mask, put back
	 * after the call, and whether one such window is open */
	uint64_t kept_mask;
	int kept_open;
	/* this thread entered seccomp's strict mode (hooks.c): it may make no system call but read,
	 * write, exit and sigreturn, nor read the TSC; guard is held for it from then on */
	int strict;
	/* last: the hot fields above share the first cache lines */
	struct tprof_ev defer[TPROF_DEFER_MAX];
};
extern __thread struct tprof_tls tprof_tls __attribute__((tls_model("initial-exec")));

/* Configuration, read once from TPROF_* variables (core.c: the table). */
struct tprof_config {
	int lossy;        /* TPROF_LOSSY=1 */
	int quiet;        /* TPROF_QUIET=1 */
	int debug;        /* TPROF_DEBUG=1: diagnostics on stderr */
	uint32_t stamp_every; /* TPROF_TIMESTAMPS=all: 1; default TPROF_STAMP_EVERY */
	int freeres;      /* TPROF_FREERES (default 1): run __libc_freeres at exit like valgrind */
	int leakscan;     /* TPROF_LEAKSCAN (default 1): the reachability scan at the end (scan.c) */
	int clock;        /* enum tprof_clock_id; TPROF_CLOCK=tsc|monotonic */
	uint32_t ring_entries; /* TPROF_RING_ENTRIES, power of two */
	const char *output;    /* TPROF_OUTPUT, may contain %p */
	unsigned depth;        /* TPROF_DEPTH: frames per stack, 0 = no stacks */
	int compress;          /* TPROF_COMPRESS (default 1): zstd-compress event blocks */
	uint32_t rss_interval_ms; /* TPROF_RSS_INTERVAL_MS (default 10): RSS sampling period, 0 = off */
	int verify_stacks;     /* TPROF_VERIFY_STACKS=1: check every capture against a full libunwind unwind */
	int trust_seccomp;     /* TPROF_SECCOMP=1: trace under any seccomp filter (tprof_sandboxed) */
};

/* Reads 1 in the process that registered, 0 in a fork child until its first hook has made it
 * forget its parent's registration (tprof_alive_lost): a child the C library did not make (_Fork,
 * a raw fork or clone system call) runs no fork handler of ours. */
extern const volatile uint32_t *tprof_alive;
void tprof_alive_lost(void);
/* At each way into tprof's state (a hook, an annotation, a kernel call, a way out): one load. */
static inline void tprof_alive_check(void)
{
	if (__builtin_expect(!*tprof_alive, 0))
		tprof_alive_lost();
}

extern struct tprof_real tprof_real;
extern struct tprof_config tprof_cfg;
extern _Atomic int tprof_ready;     /* real functions resolved */
extern _Atomic int tprof_constructed; /* tprof's constructor has begun */
/* A sanitizer runtime that intercepts the C library is in the process (AddressSanitizer,
 * ThreadSanitizer, MemorySanitizer, HWASan: their entry points resolved, weak references) */
extern void __asan_init(void) __attribute__((weak));
extern void __tsan_init(void) __attribute__((weak));
extern void __msan_init(void) __attribute__((weak));
extern void __hwasan_init(void) __attribute__((weak));
/* This library's ELF header, at its load address (the linker's symbol). */
extern const unsigned char __ehdr_start[] __attribute__((visibility("hidden")));

/* Whether t occurs in s: tprof's own loop, for where the C library's string functions may be a
 * sanitizer's interceptors not ready yet, or pages a fork child would fault in. */
static inline int tprof_has_text(const char *s, const char *t)
{
	for (; *s; s++) {
		const char *a = s, *b = t;
		while (*b && *a == *b)
			a++, b++;
		if (!*b)
			return 1;
	}
	return 0;
}

static inline int tprof_sanitizer_present(void)
{
	return __asan_init || __tsan_init || __msan_init || __hwasan_init;
}
extern _Atomic int tprof_recording; /* hooks record events (a recorder took this process) */
extern struct tprof_shm *tprof_shm; /* the shared memory; NULL while not recording */
/* A seccomp filter that may kill the process at a system call the program does not make itself is in
 * force (the program installed one, or an image inherited one with no-new-privileges set): from then
 * on tprof makes none but the calls any program that allocates must be allowed (mmap, mremap,
 * munmap, futex, getpid, gettid, write to stderr): no registration, no scan at the end, no /proc
 * read, and the stack walk reads no page it has not checked before. */
extern _Atomic int tprof_sandboxed;
#define TPROF_SYS_SANDBOXED atomic_load_explicit(&tprof_sandboxed, memory_order_relaxed)
/* mlockall(MCL_FUTURE) may be in force: set by the mlockall hooks (and the syscall hook) before the
 * call, cleared after a call that ends it; a fork child starts without (the kernel does not pass it
 * on, nor does exec). A program that makes the system call by its own instruction is not seen. */
extern _Atomic int tprof_lock_future;
#define TPROF_SYS_LOCK_FUTURE atomic_load_explicit(&tprof_lock_future, memory_order_relaxed)

/* core.c */
void tprof_init(void);                 /* resolves the real functions; idempotent, thread-safe */
/* The definition of a malloc-family function that the program's own references reach (they ask
 * for the GLIBC_2.2.5 version: the first object of the global scope that defines it unversioned,
 * or with that version) when it is another allocator's, else NULL. own: ours; next: the one after
 * libtprof.so (dlsym RTLD_NEXT). */
void *tprof_foreign_symbol(const char *name, void *own, void *next);
void *tprof_own_malloc(size_t);          /* hooks.c: our own, whatever the global scope says */
void *tprof_own_realloc(void *, size_t);
void *tprof_boot_alloc(size_t size, size_t align); /* static pool used while tprof_init runs */
int tprof_boot_owns(const void *p);
size_t tprof_boot_size(const void *p);
void tprof_boot_range(uint64_t *start, uint64_t *end); /* the bootstrap pool's blocks */
struct tprof_thread *tprof_thread_attach(void);
/* As tprof_thread_attach, for a hook before its real call: *kept set when it returns with signals
 * held (all but those a fault raises), which tprof_signals_release ends after the real call
 * (core.c, attach) */
struct tprof_thread *tprof_thread_attach_kept(int *kept);
void tprof_signals_release(void);
/* An event dropped because its thread has no slot or ring (tprof_thread_attach failed): counted
 * once, by the code that would have recorded it, when a trace is being recorded. */
static inline void tprof_lost_no_ring(void)
{
	struct tprof_shm *s = tprof_shm;
	if (s && atomic_load_explicit(&tprof_recording, memory_order_relaxed))
		atomic_fetch_add_explicit(&s->lost_global, 1, memory_order_relaxed);
}
void tprof_ring_full(struct tprof_thread *t, uint32_t n); /* waits (lossless) or counts */
/* Room for n entries on t's ring: at once, or after tprof_ring_full; 0 when none came (lost). */
static inline int tprof_ring_room(struct tprof_thread *t, uint32_t n)
{
	if (likely(tprof_ring_reserve(t->ring, n)))
		return 1;
	tprof_ring_full(t, n);
	return tprof_ring_reserve(t->ring, n);
}
/* Exit and exec hooks: say how this process ends, unless the caller is a vfork child (which shares
 * the parent's memory and must never speak for it). */
void tprof_sandbox_inherited(void); /* sets tprof_sandboxed for an image exec'd under a filter */
void tprof_note_end(int reason, int value);
void tprof_note_exit_begun(void);
void tprof_note_exec(int pending);
uint64_t tprof_rss_now(int *tasks);
int tprof_lone_task(void);
/* Whether the exiting thread was alone, as tprof_note_end saw right before an _exit's scan (1 alone,
 * 2 not, -1: unknown, or not seen right before). */
extern int tprof_end_threads;
/* This image began as a fork child (its parent registered or not): it may register without
 * waiting for its recorder's answer (region.c) */
extern int tprof_fork_child;
/* scan.c: the reachability scan at the process's end (reason: enum tprof_end_reason); returns when
 * the process may end. */
void tprof_scan_at_end(int reason);
/* Tasks of this process, zombies included (-1: unknown); *leader_state: the main thread's state. */
int tprof_proc_threads(char *leader_state);
/* The same, once threads that have begun to exit while no other runs are gone (0.1 s at most): a
 * thread joined just before the exit still counts for a moment, and would keep __libc_freeres
 * and the scan from taking the exiting thread for the only one. */
int tprof_tasks_settled(char *leader_state);

/* Registers this process image with a recorder, once (core.c); 1 when it records. */
int tprof_start_recording(void);

/* region.c: the shared memory and the recorder */
/* Creates this process's shared memory, registers with a recorder (starting one when none is
 * reachable) and maps it; 0 on success. child: after fork, forget the parent's. */
int tprof_region_start(int child);
/* Before a fork: notes that the child may register without waiting for its recorder's answer. */
void tprof_region_before_fork(void);
/* At the end of a process whose children may have registered without waiting: waits until the
 * recorder has taken every registration sent before (their trace files exist then). */
void tprof_region_barrier(void);
/* The path of the module whose malloc the program's calls reach when it is not libtprof.so (the
 * executable defines malloc, or another allocator was preloaded ahead); "" when it is ours. */
void tprof_malloc_owner(char *out, size_t cap);
/* A process that has not registered (it made no heap call yet) and forks: finds or starts the
 * recorder its children will register with, so that they share one instead of each starting its
 * own. Once per process. */
void tprof_recorder_ensure(void);
/* Forgets the shared memory's pieces: unmapped (a registration the recorder refused), or, inherited
 * (a fork child's record of its parent's, MADV_DONTFORK, which it was never given), only forgotten:
 * their addresses may hold the child's own memory by now. */
void tprof_region_forget(int inherited);
/* core.c: sets up what a registration needs beside the memory (stacks, modules) for s. */
void tprof_region_prepare(struct tprof_shm *s);
/* The address space limit (RLIMIT_AS) or the data limit (RLIMIT_DATA), the smaller, in bytes; 0
 * when there is none (region.c): under one, tprof reserves a small share of it only. */
uint64_t tprof_as_limit(void);
/* Notes which file descriptor 2 is as the image starts (region.c): the recorder's lines go there. */
void tprof_region_note_stderr(void);
/* Reads this process's executable and arguments once, for the headers of its fork children. */
void tprof_region_learn_self(void);
/* The recorder is known and the executable and arguments read: a fork has nothing to prepare. */
int tprof_region_fork_ready(void);
/* The recorder's name for the environment of an exec that leaves the pid namespace's parent
 * chain (region.c); the count of envp's entries, or 0 when none is to be added. */
size_t tprof_region_exec_env(char *const envp[], char *out, size_t cap, size_t max);
/* LD_PRELOAD less this library for an exec in which the loader only lists libraries (ldd, ld.so
 * --list; path and argv: the exec's, path NULL for fexecve; search: looked up in PATH, as execvp
 * does) or could not open it (chroot, no descriptor free, a 32-bit program): the count of envp's
 * entries and the one replaced (*at), or 0 (region.c). */
/* One line naming the process, where its recorder's lines go (region.c say): a warning. */
void tprof_region_warn(const char *a, const char *b, const char *c);
/* Says, once per image as it registers, when C++'s operator new is an allocator's that does not
 * call malloc, and puts what no hook sees into the shared memory (region.c; child: a fork child). */
void tprof_region_note_cxx(int child);
/* The malloc behind the hooks: the next definition after this library's (core.c). */
void *tprof_next_malloc(void);
/* Heap calls no hook sees (TPROF_UNHOOKED_*), from now on. */
void tprof_region_unhooked(uint32_t bits);
size_t tprof_region_exec_unpreload(const char *path, int search, char *const argv[], char *const envp[], char *out,
				   size_t cap, size_t max, size_t *at);
/* Allocates len bytes (a multiple of 64) of the shared file, zeroed, mapped in this process;
 * returns the pointer and its file offset, or NULL when the file or the address space is full, or
 * when other threads held the allocator for long (then *busy is set when busy is not NULL: a
 * later try may succeed). */
void *tprof_shm_alloc(uint64_t len, uint64_t *off, int *busy);

/* The TSC turned off for a thread of the process (PR_SET_TSC, seccomp's strict mode): from then on
 * every clock read asks the kernel, as the C library's clock_gettime would fault too (it reads the
 * TSC when that is the kernel's clock source), and converts to ticks (core.c). */
extern _Atomic int tprof_tsc_off;
uint64_t tprof_now_without_tsc(void);
/* Before a call that turns the TSC off for the calling thread: the clock conversion is measured
 * (up to 1 ms) while the TSC can still be read, then every thread reads the kernel's clock. */
void tprof_clock_leave_tsc(void);

static inline uint64_t tprof_now(void)
{
	extern int tprof_clock_is_tsc;
	if (likely(__atomic_load_n(&tprof_clock_is_tsc, __ATOMIC_ACQUIRE)))
		return __builtin_ia32_rdtsc();
	if (unlikely(atomic_load_explicit(&tprof_tsc_off, memory_order_acquire)))
		return tprof_now_without_tsc();
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wakes the recorder if it sleeps (a futex in the shared memory: no descriptor). */
void tprof_writer_kick(void);

/* After publishing n events: wakes a sleeping writer each time the head crosses a quarter of the
 * ring, so a busy thread's ring is drained long before it fills; and a writer that naps long
 * because the process was idle (writer_sleeping 2) at the first event after the quiet spell, so
 * that it samples the resident size at its interval again at once. writer_sleeping shares its
 * line with the epoch, which the event has just read. */
__attribute__((always_inline)) static inline void tprof_ring_kick(struct tprof_ring *r, uint32_t n)
{
	uint32_t h = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint32_t sleeping = atomic_load_explicit(&tprof_shm->writer_sleeping, memory_order_relaxed);
	if (unlikely(sleeping == 2)) {
		if (atomic_compare_exchange_strong(&tprof_shm->writer_sleeping, &sleeping, 1))
			tprof_writer_kick(); /* one kick, whichever thread comes first */
	} else if (unlikely((h & (r->mask >> 2)) < n) && sleeping) {
		tprof_writer_kick();
	}
}


/* core.c: a heap call a signal handler made during a stack capture or ring write (tprof_tls.crit),
 * numbered now and kept for the interrupted call to publish; lost (and counted) when defer[] is
 * full. kind TPROF_EV_REALLOC/REALLOCARRAY: seq and tick of the release before the call are given. */
void tprof_defer(unsigned kind, uint64_t size, const void *ptr, const void *old, uint64_t seq_before,
		 uint64_t tick_before);
/* The same for an annotation (a handler's tprof_step, range or mark): kept, numbered, published by
 * the interrupted call; lost (counted) as tprof_defer's. */
void tprof_defer_annot(uint32_t name_id, int kind, int64_t value);
/* Publishes what tprof_defer kept, in order, on the calling thread's ring. */
void tprof_defer_flush(struct tprof_thread *t);
/* What tprof_defer kept for a thread that got no slot: counted lost, dropped; called with crit held,
 * returns with it 0. */
void tprof_defer_drop(void);
/* A way out of the process taken inside a signal handler that interrupted a stack walk or ring
 * write of this thread's (crit): the interrupted hook never goes on, so what handlers deferred for it
 * is published and crit ends (core.c). */
void tprof_end_interrupted(void);
/* A heap call made while crit is held (not guard): 0 when it is a signal handler's inside the hook
 * that holds it (to be deferred); 1 when that hook is gone, left by a handler's siglongjmp (the word
 * in its frame was written over, or this call's frame, mine, lies above it on the same stack): then
 * what was deferred for it is published and crit ends, and the call is recorded as any other. */
int tprof_crit_left(const volatile uint32_t *mine);

/* The global sequence number for an event about to be written: any heap call that a signal handler
 * made before it, and that was deferred, goes to the ring first (its number is smaller). */
static inline uint64_t tprof_next_seq(struct tprof_thread *t)
{
	for (;;) {
		uint64_t seq = atomic_fetch_add_explicit(&tprof_shm->seq, 1, memory_order_seq_cst);
		if (likely(tprof_tls.defer_head == tprof_tls.defer_tail))
			return seq; /* what a handler defers from now on is numbered after it */
		tprof_defer_flush(t); /* numbered before seq, perhaps: publish them, take another */
	}
}

/* The first number of a realloc's pair: as tprof_next_seq, and crit is 2 from the moment the number
 * is taken: a handler's heap call from then to the pair's second half would be numbered inside the
 * pair, so it is counted lost; one deferred before that is published first, and another number
 * taken (the one taken is left unused). */
static inline uint64_t tprof_next_seq_pair(struct tprof_thread *t)
{
	for (;;) {
		uint64_t seq = atomic_fetch_add_explicit(&tprof_shm->seq, 1, memory_order_seq_cst);
		tprof_tls.crit = 2;
		if (likely(tprof_tls.defer_head == tprof_tls.defer_tail))
			return seq;
		tprof_tls.crit = 1;
		tprof_defer_flush(t);
	}
}

/* After an event is published: what handlers deferred meanwhile (numbered after it). A handler
 * that runs between the last look and the end of crit still defers: look once more after it. */
static inline void tprof_crit_end(struct tprof_thread *t)
{
	for (;;) {
		while (unlikely(tprof_tls.defer_head != tprof_tls.defer_tail))
			tprof_defer_flush(t);
		tprof_tls.crit = 0;
		if (likely(tprof_tls.defer_head == tprof_tls.defer_tail))
			return;
		tprof_tls.crit = 1;
	}
}

extern _Atomic int tprof_few_over;
/* No thread of this image holds a block it allocated, as far as the listing knows (0: unknown). */
int tprof_few_none(void);

/* After an allocation's event (ptr: the block, NULL when it failed) or a free's is published. */
__attribute__((always_inline)) static inline void tprof_few_alloc(struct tprof_thread *t, const void *ptr)
{
	if (likely(atomic_load_explicit(&tprof_few_over, memory_order_relaxed)) || !ptr)
		return;
	uint32_t n = t->nfew;
	if (unlikely(n == TPROF_FEW)) {
		atomic_store_explicit(&tprof_few_over, 1, memory_order_relaxed);
		return;
	}
	t->few[n] = ~(uintptr_t)ptr;
	t->nfew = n + 1;
}

__attribute__((always_inline)) static inline void tprof_few_free(struct tprof_thread *t, const void *ptr)
{
	if (likely(atomic_load_explicit(&tprof_few_over, memory_order_relaxed)))
		return;
	for (uint32_t i = t->nfew; i-- > 0;) {
		if (t->few[i] == ~(uintptr_t)ptr) {
			t->few[i] = t->few[--t->nfew];
			return;
		}
	}
}

/* With crit held: the slot for one entry on t's ring and, in *seq, its number; NULL (crit ended,
 * the entry lost) when no room came. Room first, then the number: a thread that waits for room must
 * not hold a number taken before the wait, or its event's time would come after other threads'
 * later ones. */
__attribute__((always_inline)) static inline struct tprof_ev *tprof_ring_take(struct tprof_thread *t,
									   uint64_t *seq)
{
	if (unlikely(!tprof_ring_room(t, 1))) {
		tprof_crit_end(t);
		return NULL;
	}
	*seq = tprof_next_seq(t);
	if (unlikely(!tprof_ring_reserve(t->ring, 1)) && !tprof_ring_room(t, 1)) { /* deferred calls took it */
		tprof_crit_end(t);
		return NULL;
	}
	return tprof_ring_slot(t->ring, 0);
}

/* Records one event on the calling thread; with_stack: capture and intern the caller's stack
 * (allocations), else none (free). The stack capture and the ring write are not reentrant: a heap
 * call from a signal handler that interrupts them is deferred (tprof_defer), and published here. */
__attribute__((always_inline)) static inline void tprof_record(unsigned kind, uint64_t size, const void *ptr,
							       int with_stack)
{
	if (unlikely(!atomic_load_explicit(&tprof_recording, memory_order_relaxed)))
		return;
	tprof_tls.crit = 1;
	uint32_t stack = with_stack && tprof_cfg.depth ? tprof_stack_capture() : 0; /* no call when off */
	struct tprof_thread *t = tprof_tls.thread;
	if (unlikely(!t) && !(t = tprof_thread_attach())) {
		tprof_lost_no_ring();
		tprof_defer_drop(); /* and crit 0 */
		return;
	}
	struct tprof_ring *r = t->ring;
	uint64_t seq;
	struct tprof_ev *e = tprof_ring_take(t, &seq);
	if (unlikely(!e))
		return;
	tprof_prefetch_write(tprof_ring_slot(r, TPROF_RING_AHEAD));
	e->seq_kind = tprof_ev_pack(seq, stack, kind);
	uint32_t ep = atomic_load_explicit(&tprof_shm->epoch, memory_order_relaxed);
	if (tprof_tls.stamp_left == 0 || tprof_tls.epoch != ep) {
		e->tick = tprof_now();
		tprof_tls.epoch_stamps = tprof_tls.epoch != ep ? 1 : tprof_tls.epoch_stamps + 1;
		/* the unstamped path stays one test: the first reads of an epoch just leave 0 to go */
		tprof_tls.stamp_left = tprof_tls.epoch_stamps < TPROF_STAMP_FIRST ? 0 : tprof_cfg.stamp_every - 1;
		tprof_tls.epoch = ep;
	} else {
		e->tick = 0; /* interpolated by the writer */
		tprof_tls.stamp_left--;
	}
	e->size = size;
	e->ptr = (uint64_t)(uintptr_t)ptr;
	tprof_ring_publish(r, 1);
	tprof_ring_kick(r, 1);
	if (kind == TPROF_EV_FREE)
		tprof_few_free(t, ptr);
	else
		tprof_few_alloc(t, ptr);
	tprof_crit_end(t);
}

/* A realloc: seq_before/tick_before were taken before the real call (the old block's release),
 * the rest after it. Two ring entries, published together. The caller (hooks.c) took the first
 * half with the thread t attached and has kept tprof_tls.crit at 2 since: a handler's heap call
 * between the two halves cannot be placed in the ring (its number would fall inside the pair) and
 * is counted lost. */
__attribute__((always_inline)) static inline void tprof_record_realloc(struct tprof_thread *t, unsigned kind,
								       uint64_t seq_before, uint64_t tick_before,
								       uint64_t size, const void *newp,
								       const void *oldp, uint32_t stack)
{
	uint64_t seq2 = atomic_fetch_add_explicit(&tprof_shm->seq, 1, memory_order_seq_cst);
	uint64_t tick2 = tprof_now();
	__asm__ volatile("" ::: "memory");
	tprof_tls.crit = 1; /* deferred from here on: numbered after seq2 */
	struct tprof_ring *r = t->ring;
	if (unlikely(!tprof_ring_room(t, 2))) {
		tprof_crit_end(t);
		return;
	}
	struct tprof_ev *e = tprof_ring_slot(r, 0), *e2 = tprof_ring_slot(r, 1);
	e->seq_kind = tprof_ev_pack(seq_before, stack, kind);
	e->tick = tick_before;
	e->size = size;
	e->ptr = (uint64_t)(uintptr_t)newp;
	e2->seq_kind = tprof_ev_pack(seq2, 0, TPROF_RING_REALLOC_TAIL);
	e2->tick = tick2;
	e2->size = 0;
	e2->ptr = (uint64_t)(uintptr_t)oldp;
	tprof_ring_publish(r, 2);
	tprof_ring_kick(r, 2);
	if (!newp) /* failed, or realloc(p, 0): which, the listing does not tell */
		atomic_store_explicit(&tprof_few_over, 1, memory_order_relaxed);
	tprof_few_free(t, oldp);
	tprof_few_alloc(t, newp);
	tprof_crit_end(t);
}

/* kernels.c: a kernel wrapper's real function (op ids: include/tprof_ops.h). */
extern void *_Atomic tprof_kernel_real[];
/* Finds the real function of op, which the wrapper at self stands for: in the caller's own dependency
 * scope (a library loaded RTLD_LOCAL that a Python extension opened), else in every loaded module,
 * read from their symbol tables, else dlsym(RTLD_NEXT). Caches the result; never returns NULL (no
 * definition anywhere: aborts with a message, since the call cannot be carried out). */
void *tprof_kernel_resolve(unsigned op, const char *name, void *self, const void *caller);
/* The same search for any wrapped function (omp.c): never NULL. */
void *tprof_resolve_real(const char *name, void *self, const void *caller);
/* The first definition of name in load order, the executable's included, without the loader (core.c's
 * exit): NULL when none. */
void *tprof_find_symbol(const char *name);
/* addr, name's address from dlsym, or the definition the executable's calls reach when addr is the
 * executable's own PLT entry for a function it does not define (kernels.c). */
void *tprof_past_plt_entry(void *addr, const char *name);
/* The bounds [lo, hi) of function name's definition in the module that holds address in, read from
 * its own dynamic symbols: no call into the loader, no lock. 0 when found. */
int tprof_function_bounds(const void *in, const char *name, uintptr_t *lo, uintptr_t *hi);
/* Forgets the cached real functions (after dlclose: their library may be gone). */
void tprof_kernels_forget(void);
/* annot.c: interned annotation names (in the shared memory); id 0 is "no name". */
uint32_t tprof_name_intern(const char *name);
/* Records one annotation of any kind (the OpenMP region kinds included) on the calling thread,
 * as tprof_record does a heap event (crit: a handler's heap call meanwhile is deferred). */
void tprof_annot_record(int kind, uint32_t name_id, int64_t value);
/* omp.c: forgets the OpenMP runtime's functions (after dlclose). */
void tprof_omp_forget(void);

/* Records one kernel call: enter and exit ticks, op and its shape, in 1 + ceil((nshape - 4) / 7) ring
 * entries (the first 2 and then 3 values per entry when a shape value does not fit 32 bits). The
 * writer derives FLOPs and bytes from the shape with the op table: the caller's thread only stores. */
static inline __attribute__((always_inline)) void tprof_record_kernel(unsigned op, uint64_t t0, uint64_t t1,
								     const int64_t *s, unsigned ns)
{
	tprof_alive_check(); /* a fork child's first call */
	if (unlikely(tprof_tls.crit)) { /* a handler's call, inside a ring write it interrupted: no room */
		tprof_lost_no_ring();
		return;
	}
	struct tprof_thread *t = tprof_tls.thread;
	if (unlikely(!t) && !(t = tprof_thread_attach())) {
		tprof_lost_no_ring();
		return;
	}
	const volatile uint32_t *frame = tprof_tls.frame;
	tprof_tls.frame = NULL; /* held outside a hook: tprof_crit_left leaves it alone */
	tprof_tls.crit = 1; /* a handler's heap call waits for this call's entries */
	int wide = 0;
	for (unsigned i = 0; i < ns; i++)
		wide |= s[i] != (int64_t)(int32_t)s[i];
	unsigned first = wide ? 2 : 4, per = wide ? 3 : 7;
	unsigned extra = ns > first ? (ns - first + per - 1) / per : 0, n = 1 + extra;
	struct tprof_ring *r = t->ring;
	if (unlikely(!tprof_ring_room(t, n))) {
		tprof_crit_end(t);
		tprof_tls.frame = frame;
		return;
	}
	uint64_t dur = t1 > t0 ? t1 - t0 : 0;
	if (dur > TPROF_RING_KDUR_MAX)
		dur = TPROF_RING_KDUR_MAX;
	/* scalars, not a staging array: a wide load of narrow stores would stall store forwarding */
	uint64_t s0 = ns > 0 ? (uint64_t)s[0] : 0, s1 = ns > 1 ? (uint64_t)s[1] : 0;
	uint64_t s2 = ns > 2 ? (uint64_t)s[2] : 0, s3 = ns > 3 ? (uint64_t)s[3] : 0;
	struct tprof_ev *e = tprof_ring_slot(r, 0);
	e->tick = t0;
	e->seq_kind = dur << TPROF_RING_KDUR_SHIFT | (uint64_t)wide << 18 | (uint64_t)ns << 14 | (uint64_t)op << 4 |
		      TPROF_RING_KCALL;
	e->size = wide ? s0 : (uint32_t)s0 | s1 << 32;
	e->ptr = wide ? s1 : (uint32_t)s2 | s3 << 32;
	for (unsigned k = 0; k < extra; k++) {
		struct tprof_ev *x = tprof_ring_slot(r, 1 + k);
		uint64_t v[7] = {0, 0, 0, 0, 0, 0, 0};
		for (unsigned i = 0; i < per && first + k * per + i < ns; i++) {
			int64_t sv = s[first + k * per + i];
			v[i] = wide ? (uint64_t)sv : (uint32_t)sv;
		}
		if (wide) {
			x->seq_kind = TPROF_RING_KSHAPE;
			x->tick = v[0];
			x->size = v[1];
			x->ptr = v[2];
		} else {
			x->seq_kind = v[0] << 32 | TPROF_RING_KSHAPE;
			x->tick = v[1] | v[2] << 32;
			x->size = v[3] | v[4] << 32;
			x->ptr = v[5] | v[6] << 32;
		}
	}
	tprof_ring_publish(r, n);
	tprof_ring_kick(r, n);
	tprof_crit_end(t);
	tprof_tls.frame = frame;
}

#endif
