/* The fork storm of bench/procs.sh: forks N children one after another and waits for each; a child
 * exits at once, or (with "alloc") first makes a malloc/free pair, so that under tprof it registers
 * with the recorder and gets a trace. With "parent" the parent makes a pair before the storm, as
 * most programs have by the time they fork (under tprof it is then traced and its children start
 * from a traced parent). Prints {"children":N,"wall_ns":T,"child_faults":F}, F the page faults of
 * an average child (minor and major; a first touch of a page costs one on a VM, 5 to 20 us). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
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
	int alloc = 0, parent = 0;
	for (int k = 2; k < argc; k++) {
		alloc |= strcmp(argv[k], "alloc") == 0;
		parent |= strcmp(argv[k], "parent") == 0;
	}
	if (parent) {
		void *volatile q = malloc(64);
		free(q);
	}
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
	long long wall = now_ns() - t0;
	struct rusage ru;
	double faults = getrusage(RUSAGE_CHILDREN, &ru) == 0 && n > 0 ? (double)(ru.ru_minflt + ru.ru_majflt) / n : 0;
	printf("{\"children\":%d,\"wall_ns\":%lld,\"child_faults\":%.1f}\n", n, wall, faults);
	return 0;
}
