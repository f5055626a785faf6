/* The traced process's side of the reachability scan that tells leaked blocks from blocks still in
 * use. At the very end of the process (after the last exit handler and every library destructor,
 * or in the _exit/_Exit hooks, or after the last quick_exit handler) the exiting thread stops every
 * other thread of the process, publishes where each stack's live part begins, and waits while the
 * recorder reads the process's memory (recorder/leakscan.c). Nothing here runs before that moment,
 * and the process exits right after it, so what the program sees is unchanged.
 *
 * Stopping a thread: a signal (glibc's internal SIGSETXID, which no thread can block through the C
 * library) whose handler, installed with raw system calls only now and kept until the process
 * ends, notes the handler's stack pointer (the kernel saved the thread's registers in the signal
 * frame above it, so the scan of its stack from there covers them), sleeps until the scan is done
 * and then waits for the process's end, unless the exiting thread sleeps meanwhile (it may wait for
 * this one): sent back, it would find the system call the signal interrupted failed with EINTR
 * (poll, nanosleep) and run on. The asking thread's roots begin at its program's frame, with the callee-saved registers
 * that frame had. A thread that does not answer within 200 ms is counted; its stack is then
 * scanned whole, as any other writable mapping. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "preload.h"
#include "sys.h"

#if defined(__x86_64__)
#define SCAN_SIG 33 /* SIGSETXID */
#define KSA_RESTORER 0x04000000ul

struct ksigaction {
	void (*handler)(int, siginfo_t *, void *);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* The return from a handler installed without the C library: rt_sigreturn. */
void tprof_scan_restorer(void) __attribute__((visibility("hidden")));
__asm__(".text\n"
	".align 16\n"
	".globl tprof_scan_restorer\n"
	".hidden tprof_scan_restorer\n"
	".type tprof_scan_restorer,@function\n"
	"tprof_scan_restorer:\n"
	"\tmovq $15, %rax\n"
	"\tsyscall\n"
	"\thlt\n"
	".size tprof_scan_restorer, .-tprof_scan_restorer\n");

static struct ksigaction saved_action;

static inline uint64_t stack_pointer(void)
{
	uint64_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	return sp;
}
#endif

TPROF_STARTUP static int scan_wanted(void)
{
	struct tprof_shm *shm = tprof_shm;
	return shm && shm->leakscan && atomic_load(&tprof_recording) && !atomic_load(&tprof_sandboxed) &&
	       shm->pid == (int32_t)tprof_getpid() && !atomic_load(&shm->recorder_gone);
}

/* Adds the calling thread to the stopped ones, with its alternate signal stack: the one the kernel
 * has, else the one it had when it was set through the hook (with SS_AUTODISARM the kernel reports
 * none while a handler runs on it). */
static void note_stopped(struct tprof_shm *shm, uint64_t sp)
{
	stack_t ss;
	uint64_t lo = tprof_tls.alt_lo, hi = tprof_tls.alt_hi;
	if (syscall(SYS_sigaltstack, NULL, &ss) == 0 && !(ss.ss_flags & SS_DISABLE) && ss.ss_size) {
		lo = (uint64_t)(uintptr_t)ss.ss_sp;
		hi = lo + ss.ss_size;
	}
	uint32_t i = atomic_fetch_add(&shm->scan_stopped, 1);
	if (i < TPROF_SCAN_THREADS) {
		shm->scan_threads[i].tid = (int32_t)tprof_gettid();
		shm->scan_threads[i].sp = sp;
		shm->scan_threads[i].alt_lo = lo < hi ? lo : 0;
		shm->scan_threads[i].alt_hi = lo < hi ? hi : 0;
	}
	tprof_futex_wake(&shm->scan_stopped);
}

/* Sleeps until the scan is over (DONE or GAVE_UP). */
static void wait_scan_over(struct tprof_shm *shm)
{
	for (;;) {
		uint32_t s = atomic_load(&shm->scan_state);
		if (s == TPROF_SCAN_DONE || s == TPROF_SCAN_GAVE_UP || s == TPROF_SCAN_IDLE || s == TPROF_SCAN_EMPTY)
			return;
		tprof_futex_wait(&shm->scan_state, s, 100000000);
	}
}

#if defined(__x86_64__)
static int32_t exiting_tid; /* the thread that scans, written before it stops the others */

/* Whether the exiting thread sleeps (waits for a lock, a pipe, ...), as /proc says. */
static int exiting_sleeps(void)
{
	char buf[512];
	const char *t = exiting_tid ? tprof_stat_read(exiting_tid, buf, sizeof(buf)) : NULL;
	if (!t || (t[0] != 'S' && t[0] != 'D'))
		return 0;
	/* asleep waiting for a lock (futex), which a stopped thread may hold; not in another call
	 * (writing its last output into a pipe a slow reader empties), unless that cannot be read */
	struct tprof_sbuf p = {.n = 0};
	tprof_sb_str(&p, "/proc/self/task/");
	tprof_sb_u64(&p, (uint64_t)exiting_tid);
	tprof_sb_str(&p, "/syscall");
	p.b[p.n] = 0;
	ssize_t n = tprof_proc_read(p.b, buf, sizeof(buf) - 1);
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return 1;
	long nr = strtol(buf, NULL, 10);
#ifdef SYS_futex_waitv
	if (nr == SYS_futex_waitv)
		return 1;
#endif
	return nr == SYS_futex;
}

/* A stopped thread after the scan: the process ends in a moment, and the thread waits for that here.
 * Gone back to the program, it would find the system call the signal interrupted failed (poll and
 * nanosleep end with EINTR, whatever SA_RESTART says) and run on while the process exits: print,
 * or end it with a status of its own. It goes back all the same when the exiting thread is found
 * asleep on a lock at two looks 5 ms apart (it may wait for this one: a lock this thread holds), or
 * after a second (a pipe this thread would read). */
static void linger(struct tprof_shm *shm)
{
	struct timespec t0, t;
	tprof_sys_clock(CLOCK_MONOTONIC, &t0);
	int asleep = 0;
	for (;;) {
		tprof_sys_clock(CLOCK_MONOTONIC, &t);
		long ns = (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec);
		if (ns >= 1000000000L)
			return;
		asleep = exiting_sleeps() ? asleep + 1 : 0;
		if (asleep >= 2)
			return;
		uint32_t s = atomic_load(&shm->scan_state); /* over: it changes no more */
		tprof_futex_wait(&shm->scan_state, s, 5000000L);
	}
}

static void stop_handler(int sig, siginfo_t *si, void *uc)
{
	struct tprof_shm *shm = tprof_shm;
	int saved = errno;
	if (shm && si->si_code == SI_TKILL && si->si_pid == shm->pid) {
		uint32_t st = atomic_load(&shm->scan_state);
		if (st == TPROF_SCAN_STOPPING || st == TPROF_SCAN_ASKED || st == TPROF_SCAN_SCANNING) {
			note_stopped(shm, stack_pointer());
			wait_scan_over(shm);
		} /* else the scan is over: a thread that answers late waits for the end as well */
		linger(shm);
	} else if (saved_action.flags & SA_SIGINFO && saved_action.handler) {
		saved_action.handler(sig, si, uc); /* not ours: another process's, or the C library's */
	}
	errno = saved;
}

/* The task ids of this process but the caller's, live ones only (a zombie thread never answers). */
struct tid_list {
	int32_t *tids;
	uint32_t n, cap;
};

static int task_live(int32_t tid, void *arg)
{
	struct tid_list *l = arg;
	static TPROF_LARGE char st[1024]; /* static: one thread scans (scan_state), on any stack */
	if (l->n >= l->cap)
		return 0;
	const char *t = tprof_stat_read(tid, st, sizeof(st)); /* /proc/TID/stat names the task */
	if (!(t && (t[0] == 'Z' || t[0] == 'X')))
		l->tids[l->n++] = tid;
	return 0;
}

static uint32_t other_tasks(int32_t *tids, uint32_t cap)
{
	static TPROF_LARGE char buf[4096];
	struct tid_list l = {tids, 0, cap};
	tprof_each_task(buf, sizeof(buf), task_live, &l);
	return l.n;
}
#endif

/* Called once on the way out; returns when the process may end. Not when the way out interrupted
 * tprof's own code on this thread (a signal handler calling _exit during a heap hook): the unwinder
 * and the tables it uses are not to be entered again; the trace then says it was not scanned. */
TPROF_STARTUP void tprof_scan_at_end(int reason)
{
	tprof_alive_check(); /* a fork child's first call of tprof's (quick_exit) */
	if (tprof_tls.guard || !scan_wanted()) {
		if (tprof_shm && tprof_shm->pid == (int32_t)tprof_getpid())
			tprof_stacks_verify_report();
		return;
	}
	struct tprof_shm *shm = tprof_shm;
	int saved = errno;
	tprof_tls.guard++;
	uint32_t idle = TPROF_SCAN_IDLE;
#if defined(__x86_64__)
	/* Nothing of this image's is live, and no other thread can allocate: the recorder needs no
	 * memory of the process's (it reads the empty result off the state), and the process no
	 * round trip. */
	int tasks = tprof_end_threads;
	if (tasks <= 0) {
		int lone = tprof_lone_task();
		tasks = lone < 0 ? tprof_proc_threads(NULL) : lone ? 1 : 2;
	}
	if (tasks == 2 && tprof_tasks_settled(NULL) == 1) /* threads joined just before the end */
		tasks = 1;
	if (tprof_few_none() && tasks == 1 &&
	    atomic_compare_exchange_strong(&shm->scan_state, &idle, TPROF_SCAN_EMPTY)) {
		shm->scan_reason = (uint32_t)reason;
		tprof_stacks_verify_report();
		goto out;
	}
	idle = TPROF_SCAN_IDLE;
#endif
	if (!atomic_compare_exchange_strong(&shm->scan_state, &idle, TPROF_SCAN_STOPPING)) {
		/* another thread is on its way out and scans: be one of the stopped */
#if defined(__x86_64__)
		note_stopped(shm, stack_pointer());
#endif
		wait_scan_over(shm);
		goto out;
	}
	shm->scan_reason = (uint32_t)reason;
	tprof_boot_range(&shm->boot_used[0], &shm->boot_used[1]);
#if defined(__x86_64__)
	/* The exiting thread's roots begin at the frame that called the way out: the C library's and
	 * tprof's frames below it hold stale words of earlier calls in their unwritten slots, which
	 * memcheck knows are undefined. (Walked before the others stop: the unwinder takes the
	 * loader's lock.) */
	uint64_t sp = stack_pointer(), psp = tprof_stacks_program_sp(shm->scan_regs);
	tprof_stacks_verify_report(); /* the exit walk just made included */
	note_stopped(shm, psp > sp && psp - sp < (64u << 20) ? psp : sp);
	exiting_tid = (int32_t)tprof_gettid();
	static TPROF_LARGE int32_t tids[TPROF_SCAN_THREADS]; /* this thread alone gets here */
	uint32_t n = other_tasks(tids, TPROF_SCAN_THREADS - 1);
	int installed = 0;
	if (n) {
		struct ksigaction sa = {.handler = stop_handler,
					.flags = SA_SIGINFO | SA_RESTART | KSA_RESTORER,
					.restorer = tprof_scan_restorer,
					.mask = ~0ull};
		installed = syscall(SYS_rt_sigaction, SCAN_SIG, &sa, &saved_action, 8) == 0;
	}
	uint32_t asked = 0;
	if (installed)
		for (uint32_t i = 0; i < n; i++)
			if (syscall(SYS_tgkill, shm->pid, tids[i], SCAN_SIG) == 0)
				asked++;
	shm->scan_asked = asked;
	struct timespec t0;
	tprof_sys_clock(CLOCK_MONOTONIC, &t0);
	for (;;) {
		uint32_t got = atomic_load(&shm->scan_stopped);
		if (got >= asked + 1)
			break;
		struct timespec t;
		tprof_sys_clock(CLOCK_MONOTONIC, &t);
		long ms = (t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000;
		if (ms >= 200)
			break;
		tprof_futex_wait(&shm->scan_stopped, got, 10000000);
	}
#endif
	/* under Yama's ptrace_scope 1 only an ancestor may read a process's memory: allow the recorder */
	if (shm->scan_reader > 0)
		prctl(PR_SET_PTRACER, (unsigned long)shm->scan_reader, 0, 0, 0);
	atomic_store(&shm->scan_state, TPROF_SCAN_ASKED);
	tprof_writer_kick();
	/* wait for the recorder, which beats while it scans (every few MiB it reads); without a beat
	 * for 2 s before it started, or 20 s after, it is taken for gone (10 s when it never beat: a
	 * fork child's registration may still wait in its queue) */
	uint32_t beat = atomic_load(&shm->heartbeat);
	int still = 0;
	for (;;) {
		uint32_t s = atomic_load(&shm->scan_state);
		if (s == TPROF_SCAN_DONE)
			break;
		tprof_futex_wait(&shm->scan_state, s, 100000000);
		uint32_t b = atomic_load(&shm->heartbeat);
		if (b != beat) {
			beat = b;
			still = 0;
		} else if (++still >= (s == TPROF_SCAN_SCANNING ? 200 : b ? 20 : 100)) {
			uint32_t expect = TPROF_SCAN_ASKED;
			if (atomic_compare_exchange_strong(&shm->scan_state, &expect, TPROF_SCAN_GAVE_UP) ||
			    expect == TPROF_SCAN_SCANNING) {
				atomic_store(&shm->scan_state, TPROF_SCAN_GAVE_UP);
				atomic_store(&shm->recorder_gone, 1);
			}
			tprof_futex_wake(&shm->scan_state);
			break;
		}
	}
	/* The handler stays until the process ends: a thread that did not answer in time may take the
	 * signal any moment from now on, and the C library's handler would then act on a set-id call
	 * that is not under way (or, where it has none, the signal would end the process). */
out:
	tprof_tls.guard--;
	errno = saved;
}
