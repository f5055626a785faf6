/* A program that stops itself, for tests/integration/lifecycle.bats: a malloc, raise(SIGSTOP), then,
 * once continued, a free, "done" on stdout and exit status 4. With arguments N SIG: raises SIG N
 * times, printing "after K" after each. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int n = argc > 2 ? atoi(argv[1]) : 1, sig = argc > 2 ? atoi(argv[2]) : SIGSTOP;
	void *volatile p = malloc(10);
	for (int k = 1; k <= n; k++) {
		raise(sig);
		if (argc > 2) {
			printf("after %d\n", k);
			fflush(stdout);
		}
	}
	free(p);
	puts("done");
	return 4;
}
