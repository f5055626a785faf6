/* A program that makes a heap call (under tprof it registers and starts the recorder), enters the
 * pid namespace of the process named in argv[1] for its children with setns, and runs a command
 * there with system() (tests/integration/lifecycle.bats). The shell is that namespace's process
 * with its parent outside, and sees the /proc of the namespace outside: it finds the recorder
 * through that /proc, never starts one inside the namespace, whose init may never reap it. */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	void *volatile p = malloc(64);
	free(p);
	if (argc < 3)
		return 2;
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWPID) != 0) {
		dprintf(2, "setns %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	close(fd);
	int st = system(argv[2]);
	return st == -1 ? 3 : WEXITSTATUS(st);
}
