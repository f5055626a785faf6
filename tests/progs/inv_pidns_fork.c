/* A program that makes a new pid namespace for its children before its first heap call, then
 * forks (tests/integration/invisible.bats): the child is the namespace's first process (pid 1) and
 * exits 7. A recorder started in between must not become that first process, whose end would end
 * the namespace and make the fork fail with ENOMEM. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	if (unshare(CLONE_NEWPID) != 0) {
		dprintf(2, "unshare: %s\n", strerror(errno));
		return 1;
	}
	pid_t c = fork();
	if (c < 0) {
		dprintf(2, "fork: %s\n", strerror(errno));
		return 2;
	}
	if (c == 0) {
		void *volatile p = malloc(100);
		(void)p;
		dprintf(1, "child pid %d\n", (int)getpid());
		_exit(7);
	}
	int st;
	waitpid(c, &st, 0);
	dprintf(1, "child exit %d\n", WEXITSTATUS(st));
	return 0;
}
