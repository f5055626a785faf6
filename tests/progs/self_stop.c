/* A program that stops itself, for tests/integration/lifecycle.bats: a malloc, raise(SIGSTOP), then,
 * once continued, a free, "done" on stdout and exit status 4. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	void *volatile p = malloc(10);
	raise(SIGSTOP);
	free(p);
	puts("done");
	return 4;
}
