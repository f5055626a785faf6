/* A thread made with a small stack (STACK bytes) that uses USE bytes of it in one frame, then makes
 * heap calls from there: for how much of a thread's stack tprof takes (its TLS, which the C library
 * carves out of the stack the program sized, and its hooks' frames). main calls the heap functions
 * and memset first, so that no lazy binding, whose resolver saves the vector registers on the
 * stack, happens in the deep frame; the thread makes a heap call near its top first, unless "cold":
 * then its first is the deep one. Prints "ok" when the thread ended; a stack overflow kills the
 * process.
 * usage: inv_smallstack STACK USE [cold] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t use;
static int cold;

static __attribute__((noinline)) int deep(void)
{
	volatile char pad[use];
	memset((char *)pad, 1, use);
	void *p = malloc(100);
	void *q = calloc(10, 10);
	q = realloc(q, 1000);
	free(q);
	free(p);
	return pad[use - 1];
}

static void *run(void *arg)
{
	(void)arg;
	char small[16];
	memset(small, 0, sizeof(small));
	if (!cold)
		free(realloc(calloc(1, 8), 16));
	return (void *)(long)deep();
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	size_t stack = (size_t)atol(argv[1]);
	use = (size_t)atol(argv[2]);
	cold = argc > 3 && strcmp(argv[3], "cold") == 0;
	if (use == 0)
		return 2;
	char small[16]; /* main's calls: the recorder is there before the thread starts */
	memset(small, 0, sizeof(small));
	free(malloc(8));
	free(realloc(calloc(1, 8), 16));
	pthread_attr_t at;
	pthread_attr_init(&at);
	if (pthread_attr_setstacksize(&at, stack) != 0)
		return 3;
	pthread_t t;
	void *r;
	if (pthread_create(&t, &at, run, NULL) != 0 || pthread_join(t, &r) != 0)
		return 4;
	puts(r == (void *)1L ? "ok" : "wrong");
	return 0;
}
