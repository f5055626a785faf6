/* Resident memory that rises and falls at known moments, for the RSS sampling tests: one malloc of
 * MIB MiB (default 64; glibc serves it with mmap), every page touched, held HOLD_MS (default 60),
 * freed (munmap), then WAIT_MS (default 60) of quiet.
 *   rss_wave [MIB [HOLD_MS [WAIT_MS]]]
 *   rss_wave fork   the same, then a fork: the child, which never held the block, sleeps WAIT_MS
 *                   and exits; the parent waits for it and prints its pid. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

static long mib = 64, hold_ms = 60, wait_ms = 60;

static int wave(void)
{
	size_t n = (size_t)mib << 20;
	char *p = malloc(n);
	if (!p)
		return 1;
	memset(p, 1, n);
	sleep_ms(hold_ms);
	free(p);
	sleep_ms(wait_ms);
	return 0;
}

int main(int argc, char **argv)
{
	int fork_mode = argc > 1 && strcmp(argv[1], "fork") == 0;
	if (argc > 1 && !fork_mode)
		mib = atol(argv[1]);
	if (argc > 2)
		hold_ms = atol(argv[2]);
	if (argc > 3)
		wait_ms = atol(argv[3]);
	if (wave() != 0)
		return 1;
	if (!fork_mode)
		return 0;
	pid_t pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		sleep_ms(wait_ms);
		return 0;
	}
	int st;
	waitpid(pid, &st, 0);
	printf("%d\n", (int)pid);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
