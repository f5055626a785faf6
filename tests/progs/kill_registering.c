/* Fork children killed while they register: the parent makes a heap call (it is traced, its
 * recorder started), forks N children that each make one and then wait, and kills them all with
 * SIGKILL after D microseconds, at once: most are still registering then. Used by
 * tests/integration/lifecycle.bats, which runs it under a recorder of its own user and of another
 * (root's, the program run as nobody) and looks for lines said despite TPROF_QUIET and for empty
 * trace files left behind. usage: kill_registering N D */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 9, d = argc > 2 ? atoi(argv[2]) : 0;
	pid_t kids[64];
	if (n < 1 || n > 64)
		return 2;
	free(malloc(10));
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			free(malloc(10));
			pause();
			_exit(0);
		}
		kids[i] = p;
	}
	usleep((useconds_t)d);
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0) {
	}
	puts("done");
	return 0;
}
