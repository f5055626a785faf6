/* Children the C library's fork() did not make, for tests/integration/invisible.bats: after a heap
 * call of its own (the process registers), the parent makes one child each by _Fork(), by the fork
 * and clone system calls and by clone3, none of which runs fork handlers. Each child makes 10
 * malloc/free pairs of 4001..4010 bytes, keeps one block of 4777 bytes, says "child MODE ok" and
 * ends with _exit(3); the parent prints each child's status. Then children of _Fork() that make no
 * heap call and end at once, by exit(4), _exit(5), quick_exit(6), pthread_exit (0), or after
 * installing a seccomp filter that allows everything, _exit(7): tprof's first call in them is
 * that way out. The parent writes its pid to pid.txt. */
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inv.h"

static pid_t make(const char *mode)
{
	if (strcmp(mode, "_Fork") == 0)
		return _Fork();
	if (strcmp(mode, "fork") == 0)
		return (pid_t)syscall(SYS_fork);
	if (strcmp(mode, "clone") == 0)
		return (pid_t)syscall(SYS_clone, (long)SIGCHLD, 0L, 0L, 0L, 0L);
	struct clone_args ca;
	memset(&ca, 0, sizeof(ca));
	ca.exit_signal = SIGCHLD;
	return (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
}

int main(void)
{
	static const char *modes[] = {"_Fork", "fork", "clone", "clone3"};
	int fd = open("pid.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0) {
		out(fd, "%d\n", (int)getpid());
		close(fd);
	}
	sink = malloc(100);
	for (int m = 0; m < 4; m++) {
		pid_t pid = make(modes[m]);
		if (pid < 0)
			return 1;
		if (pid == 0) {
			for (int i = 1; i <= 10; i++)
				free(malloc(4000 + (size_t)i));
			sink = malloc(4777);
			say("child %s ok\n", modes[m]);
			_exit(3);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid)
			return 2;
		say("%s status %d\n", modes[m], WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	static const char *ends[] = {"exit", "_exit", "quick_exit", "pthread_exit", "seccomp"};
	for (int m = 0; m < 5; m++) {
		pid_t pid = _Fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			if (m == 0)
				exit(4);
			if (m == 1)
				_exit(5);
			if (m == 2)
				quick_exit(6);
			if (m == 3)
				pthread_exit(NULL);
			struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
			struct sock_fprog prog = {1, &allow};
			prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
			prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
			_exit(7);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid)
			return 2;
		say("%s status %d\n", ends[m], WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	free(sink);
	return 0;
}
