/* Where an allocating fork child's time goes, as the program sees it (bench/procs.sh): forks N
 * children one after another from a parent that made a malloc/free pair first; each child makes
 * one pair and exits. Averages per child, in microseconds, by CLOCK_MONOTONIC on both sides (the
 * child leaves its readings in a shared page): the parent's fork() call, from before it to the
 * child's first instruction, the child's first malloc (under tprof: its registration and first
 * stack walk), and from the child's _exit until the parent's waitpid returns (its teardown).
 * With "quiet" the children make no heap call: they neither register nor get a trace.
 * Prints {"children":N,"fork_us":F,"to_child_us":C,"malloc_us":M,"exit_us":E,"total_us":T}. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 400;
	int quiet = argc > 2 && strcmp(argv[2], "quiet") == 0;
	if (n <= 0)
		return 2;
	/* the child's readings: its first instruction, after its malloc, before its _exit */
	volatile double *seen = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (seen == MAP_FAILED)
		return 1;
	void *volatile q = malloc(64);
	free(q);
	double fork_us = 0, to_child = 0, malloc_us = 0, exit_us = 0, total = 0;
	for (int i = 0; i < n; i++) {
		double t0 = now_us();
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			seen[0] = now_us();
			if (!quiet) {
				void *volatile c = malloc(64);
				free(c);
			}
			seen[1] = now_us();
			_exit(0);
		}
		double forked = now_us();
		int st;
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 1;
		double reaped = now_us();
		fork_us += forked - t0;
		to_child += seen[0] - t0;
		malloc_us += seen[1] - seen[0];
		exit_us += reaped - seen[1];
		total += reaped - t0;
	}
	printf("{\"children\":%d,\"fork_us\":%.0f,\"to_child_us\":%.0f,\"malloc_us\":%.0f,\"exit_us\":%.0f,"
	       "\"total_us\":%.0f}\n",
	       n, fork_us / n, to_child / n, malloc_us / n, exit_us / n, total / n);
	return 0;
}
