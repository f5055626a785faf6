/* A program that sandboxes itself with a seccomp filter, as sshd's pre-authentication child, Chrome's
 * renderers or file(1) do, for tests/integration/invisible.bats. The filter kills the process (it
 * does not fail the call) at any system call outside a short list, so that a tracer making a call
 * the program does not make would end it. Bare and under the preload, the output, the exit status
 * and the heap figures must be the same.
 *
 *   inv_seccomp strict     allow-list filter (read, write, brk, mmap, futex, fork, wait, exit...),
 *                          then allocations, a fork child that allocates, and exit from main
 *   inv_seccomp deny PROG [ARG...]
 *                          kill on memfd_create, socket, connect, prctl, process_vm_readv and
 *                          madvise(MADV_POPULATE_WRITE), then fork a child that allocates and
 *                          exec PROG in another child
 *   inv_seccomp legacy PROG [ARG...]
 *                          kill on the system calls this C library no longer makes (fstat, stat,
 *                          open, getrlimit, ...: it makes newfstatat, openat, prlimit64), as an
 *                          allow-list written from what a program was seen to call would; then
 *                          fork a child that allocates and exec PROG in another child: a tracer
 *                          that makes one of those calls itself, at start-up, at a fork or an exec,
 *                          ends them
 *   inv_seccomp permit PROG [ARG...]
 *                          as root, without no-new-privileges, as a container runtime does: a filter
 *                          that fails acct(2) with EPERM and allows the rest; then exec PROG */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "inv.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* another architecture's system call numbers mean other calls: kill */
#define X86_64_ONLY                                                                                \
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),                   \
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),                          \
	    BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)
#define LOAD_NR BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr))
#define ALLOW_NR(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
#define KILL_NR(n) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (n), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

static void install_as(struct sock_filter *f, unsigned short n, int nnp)
{
	struct sock_fprog prog = {.len = n, .filter = f};
	if ((nnp && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
		out(2, "seccomp: %s\n", strerror(errno));
		_exit(98);
	}
}

static void install(struct sock_filter *f, unsigned short n)
{
	install_as(f, n, 1);
}

/* how a child ended: "exit N" or "signal N" */
static void ended(const char *what, int st)
{
	say("%s %s %d\n", what, WIFEXITED(st) ? "exit" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

static void strict(void)
{
	struct sock_filter f[] = {
		X86_64_ONLY,
		LOAD_NR,
		ALLOW_NR(SYS_read), ALLOW_NR(SYS_write), ALLOW_NR(SYS_close), ALLOW_NR(SYS_brk),
		ALLOW_NR(SYS_mmap), ALLOW_NR(SYS_munmap), ALLOW_NR(SYS_mremap), ALLOW_NR(SYS_mprotect),
		ALLOW_NR(SYS_futex), ALLOW_NR(SYS_clone), ALLOW_NR(SYS_wait4), ALLOW_NR(SYS_getpid),
		ALLOW_NR(SYS_rt_sigprocmask), ALLOW_NR(SYS_set_robust_list), ALLOW_NR(SYS_exit),
		ALLOW_NR(SYS_exit_group), ALLOW_NR(SYS_clock_gettime),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	churn(100);
	install(f, sizeof(f) / sizeof(f[0]));
	churn(1000);
	void *keep = malloc(4000);
	pid_t p = fork();
	if (p == 0) {
		churn(300);
		void *kept = malloc(123);
		say("child allocated %s\n", kept ? "yes" : "no");
		_exit(4);
	}
	int st = 0;
	waitpid(p, &st, 0);
	ended("strict: child", st);
	sink = keep;
	churn(100);
}

/* Under the filter: a fork child that allocates and exits with code, then PROG exec'd in another
 * child; how each ended. */
static void child_and_exec(const char *what, int code, char **argv)
{
	pid_t p = fork();
	if (p == 0) {
		churn(300);
		_exit(code);
	}
	int st = 0;
	char w[64];
	waitpid(p, &st, 0);
	snprintf(w, sizeof(w), "%s: child", what);
	ended(w, st);
	p = fork();
	if (p == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	waitpid(p, &st, 0);
	snprintf(w, sizeof(w), "%s: exec'd", what);
	ended(w, st);
}

static void deny(char **argv)
{
	struct sock_filter f[] = {
		X86_64_ONLY,
		LOAD_NR,
		KILL_NR(SYS_memfd_create), KILL_NR(SYS_socket), KILL_NR(SYS_connect), KILL_NR(SYS_prctl),
		KILL_NR(SYS_process_vm_readv),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_madvise, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, MADV_POPULATE_WRITE, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	churn(100);
	install(f, sizeof(f) / sizeof(f[0]));
	child_and_exec("deny", 5, argv);
}

static void legacy(char **argv)
{
	struct sock_filter f[] = {
		X86_64_ONLY,
		LOAD_NR,
		KILL_NR(SYS_fstat), KILL_NR(SYS_stat), KILL_NR(SYS_lstat), KILL_NR(SYS_open),
		KILL_NR(SYS_getrlimit), KILL_NR(SYS_setrlimit), KILL_NR(SYS_getdents), KILL_NR(SYS_time),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	churn(100);
	install(f, sizeof(f) / sizeof(f[0]));
	child_and_exec("legacy", 6, argv);
}

static void permit(char **argv)
{
	struct sock_filter f[] = {
		LOAD_NR,
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_acct, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	churn(100);
	install_as(f, sizeof(f) / sizeof(f[0]), 0);
	execvp(argv[0], argv);
	_exit(127);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "strict") == 0)
		strict();
	else if (argc > 2 && strcmp(argv[1], "deny") == 0)
		deny(argv + 2);
	else if (argc > 2 && strcmp(argv[1], "legacy") == 0)
		legacy(argv + 2);
	else if (argc > 2 && strcmp(argv[1], "permit") == 0)
		permit(argv + 2);
	else {
		out(2, "usage: inv_seccomp strict | deny PROG [ARG...] | legacy PROG [ARG...] | permit PROG [ARG...]\n");
		return 2;
	}
	return 0;
}
