/* Resident memory that rises and falls at known moments, for the RSS sampling tests: one malloc of
 * MIB MiB (default 64; glibc serves it with mmap), every page touched, held HOLD_MS (default 60),
 * freed (munmap), then WAIT_MS (default 60) of quiet.
 *   rss_wave [MIB [HOLD_MS [WAIT_MS]]]
 *   rss_wave fork   the same, but the block is not inherited (MADV_DONTFORK) and the program forks
 *                   three times while it holds it, 35 ms apart (the recorder stages samples for up
 *                   to 100 ms, so some of the block's samples are staged at one fork at least); each
 *                   child sleeps WAIT_MS and exits; the parent waits for them and prints their pids. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define FORKS 3
#define FORK_GAP_MS 35

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

int main(int argc, char **argv)
{
	int fork_mode = argc > 1 && strcmp(argv[1], "fork") == 0;
	long mib = argc > 1 && !fork_mode ? atol(argv[1]) : 64;
	long hold_ms = argc > 2 ? atol(argv[2]) : 60, wait_ms = argc > 3 ? atol(argv[3]) : 60;
	size_t n = (size_t)mib << 20;
	char *p = malloc(n);
	if (!p)
		return 1;
	memset(p, 1, n);
	pid_t kids[FORKS];
	if (fork_mode) {
		uintptr_t a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095, b = ((uintptr_t)p + n) & ~(uintptr_t)4095;
		if (madvise((void *)a, b - a, MADV_DONTFORK) != 0)
			return 1;
		for (int i = 0; i < FORKS; i++) {
			sleep_ms(FORK_GAP_MS);
			if ((kids[i] = fork()) < 0)
				return 1;
			if (kids[i] == 0) {
				free(malloc(16)); /* a heap call: a traced child registers at its first */
				sleep_ms(wait_ms);
				return 0;
			}
		}
	} else {
		sleep_ms(hold_ms);
	}
	free(p);
	sleep_ms(wait_ms);
	int bad = 0;
	for (int i = 0; fork_mode && i < FORKS; i++) {
		int st;
		waitpid(kids[i], &st, 0);
		bad |= !WIFEXITED(st) || WEXITSTATUS(st) != 0;
		printf("%d\n", (int)kids[i]);
	}
	return bad;
}
