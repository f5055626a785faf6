/* A process whose first heap call is made by a vfork child, in its parent's memory, before the
 * child ends; the parent then makes 20 malloc/free pairs of 7,001 bytes, prints and exits with 3.
 * Under tprof the parent's trace holds its own 20 pairs and ends with its status: the child's call
 * must not register the process under the child's pid (the trace would end with the child). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	pid_t c = vfork();
	if (c == 0) {
		void *volatile p = malloc(7000);
		free(p);
		_exit(0);
	}
	int st = -1;
	if (c < 0 || waitpid(c, &st, 0) != c)
		return 1;
	for (int i = 0; i < 20; i++) {
		void *volatile p = malloc(7001);
		free(p);
	}
	printf("child status %d\n", st);
	return 3;
}
