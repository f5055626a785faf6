/* Children the C library's fork() did not make, for tests/integration/invisible.bats: after a heap
 * call of its own (the process registers), the parent makes one child each by _Fork(), by the fork
 * and clone system calls and by clone3, none of which runs fork handlers. Each child makes 10
 * malloc/free pairs of 4001..4010 bytes, keeps one block of 4777 bytes, says "child MODE ok" and
 * ends with _exit(3); the parent prints each child's status. */
#include <linux/sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
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
	free(sink);
	return 0;
}
