/* A program that keeps a block and becomes a daemon (daemon(3)): the C library ends the parent with
 * the exit system call itself, past the _exit hook; tprof's daemon ends it through that hook, so
 * that the parent's trace has its scan. The daemon child keeps the block, and returns from main.
 *   daemon_parent                      daemon(1, 1)
 *   daemon_parent NOCHDIR NOCLOSE FILE daemon(NOCHDIR, NOCLOSE); the child then writes to FILE (an
 *                                      absolute path) what daemon left it: its result, whether it
 *                                      leads a session, its working directory and what descriptors
 *                                      0, 1 and 2 name, so that a run under tprof can be compared
 *                                      with a bare one. */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void *kept;

int main(int argc, char **argv)
{
	kept = malloc(50);
	if (argc < 4)
		return daemon(1, 1) < 0;
	int rc = daemon(atoi(argv[1]), atoi(argv[2]));
	FILE *f = fopen(argv[3], "w");
	if (!f)
		return 1;
	char cwd[PATH_MAX];
	fprintf(f, "daemon %d\nsession leader %d\ncwd %s\n", rc, getsid(0) == getpid(),
		getcwd(cwd, sizeof(cwd)) ? cwd : "?");
	for (int fd = 0; fd < 3; fd++) {
		char link[64], target[PATH_MAX];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t n = readlink(link, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = 0;
		fprintf(f, "fd %d %s\n", fd, n > 0 ? target : "closed");
	}
	return fclose(f) != 0;
}
