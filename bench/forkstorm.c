/* The fork storm of bench/procs.sh: forks N children one after another and waits for each; a child
 * exits at once, or (with "alloc") first makes a malloc/free pair, so that under tprof it registers
 * with the recorder and gets a trace. Prints {"children":N,"wall_ns":T}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 200;
	int alloc = argc > 2 && strcmp(argv[2], "alloc") == 0;
	long long t0 = now_ns();
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			if (alloc) {
				void *volatile q = malloc(64);
				free(q);
			}
			_exit(0);
		}
		int st;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
	}
	printf("{\"children\":%d,\"wall_ns\":%lld}\n", n, now_ns() - t0);
	return 0;
}
