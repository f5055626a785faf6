/* A child subreaper, as a container's init or a supervisor is: it starts a shell that leaves a
 * grandchild behind (or runs the shell command given), then reaps every descendant until wait says
 * there is none, and prints how many it reaped and whether it is still a subreaper. Under tprof its
 * first malloc starts the recorder, which must not become one of its children. Usage: subreaper
 * [COMMAND]. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (prctl(PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L) != 0)
		return 2;
	void *volatile p = malloc(100);
	free(p);
	fflush(stdout);
	pid_t c = fork();
	if (c < 0)
		return 3;
	if (c == 0) {
		execlp("sh", "sh", "-c", argc > 1 ? argv[1] : "echo child; (sleep 0.1; echo grandchild) &", (char *)NULL);
		_exit(127);
	}
	int n = 0, st, flag = 0;
	while (wait(&st) > 0)
		n++;
	prctl(PR_GET_CHILD_SUBREAPER, &flag, 0L, 0L, 0L);
	printf("reaped %d, subreaper %d\n", n, flag);
	return 0;
}
