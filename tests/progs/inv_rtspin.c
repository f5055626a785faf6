/* A real-time program that keeps one CPU for itself, for tests/integration/invisible.bats: run as
 * `chrt -f 10 taskset -c 0 inv_rtspin N`, its first heap call is made on CPU 0 (where a recorder it
 * starts would inherit its policy and CPU set); then a thread on CPU 1 makes N malloc/free pairs while
 * the main thread, back on CPU 0, waits for it by spinning, with no system call. Prints "done N". */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int finished;

static void pin(int a, int b)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(a, &s);
	CPU_SET(b, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void *pairs(void *arg)
{
	pin(1, 1);
	for (long i = 0; i < (long)arg; i++) {
		char *volatile p = malloc(32);
		p[0] = 1;
		free(p);
	}
	finished = 1;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	char *volatile first = malloc(8); /* registers, from CPU 0 */
	first[0] = 0;
	pin(0, 1);
	pthread_t t;
	if (pthread_create(&t, NULL, pairs, (void *)n) != 0)
		return 1;
	pin(0, 0);
	while (!finished)
		;
	pthread_join(t, NULL);
	free(first);
	printf("done %ld\n", n);
	return 0;
}
