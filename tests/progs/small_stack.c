/* A thread on the smallest stack the C library allows (PTHREAD_STACK_MIN, 16 KiB, part of it taken
 * by thread-local storage) takes BYTES of it, then calls malloc, realloc and free from a frame the
 * stack capture has not seen before: the hooks must fit in what is left wherever the bare program
 * fits. Prints "ok"; a stack overflow kills it with SIGSEGV. usage: small_stack BYTES */
#include <alloca.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t use;

static __attribute__((noinline)) void *heap_calls(void)
{
	void *volatile m = malloc(50);
	m = realloc(m, 5000);
	free(m);
	return NULL;
}

static void *body(void *arg)
{
	(void)arg;
	volatile char *p = alloca(use);
	memset((char *)p, 1, use);
	heap_calls();
	return p[use - 1] == 1 ? (void *)p : NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	use = strtoul(argv[1], NULL, 0);
	free(malloc(1)); /* the process registers on the main thread, as nearly every program does */
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, PTHREAD_STACK_MIN);
	pthread_t t;
	void *r = NULL;
	if (pthread_create(&t, &at, body, NULL) != 0 || pthread_join(t, &r) != 0)
		return 3;
	puts(r ? "ok" : "bad");
	return 0;
}
