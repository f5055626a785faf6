/* Fork children that end at once after one allocation, each in one of three ways: SIGKILL (child
 * 3k), the raw exit system call with status 7 (3k+1), _exit(3) (3k+2); the parent reaps each at
 * once and makes no heap call itself. Under tprof a child's registration may reach the recorder
 * after the child is gone and reaped: its trace must still say how it ended.
 * usage: fork_ends N */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 30, as_expected = 0;
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			void *volatile q = malloc(100 + (size_t)i);
			(void)q;
			if (i % 3 == 0)
				raise(SIGKILL);
			if (i % 3 == 1)
				syscall(SYS_exit_group, 7);
			_exit(3);
		}
		int st;
		if (waitpid(p, &st, 0) != p)
			return 1;
		as_expected += i % 3 == 0 ? WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL
					  : WIFEXITED(st) && WEXITSTATUS(st) == (i % 3 == 1 ? 7 : 3);
	}
	char line[64];
	int len = snprintf(line, sizeof(line), "%d of %d as expected\n", as_expected, n);
	return write(1, line, (size_t)len) == len ? 0 : 1;
}
