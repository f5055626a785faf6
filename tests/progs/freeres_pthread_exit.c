/* main calls pthread_exit after starting a thread that prints a line (stdout's buffer, a heap block
 * of the C library's) and allocates, frees and keeps a block; the thread's return, the process's
 * last, calls exit. memcheck runs __libc_freeres then too, which frees stdout's buffer: in use at
 * exit is the kept block only, under tprof as under memcheck. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *kept;

static void *run(void *arg)
{
	(void)arg;
	printf("thread\n");
	char *p = malloc(100);
	strcpy(p, "freed");
	free(p);
	kept = malloc(272);
	return NULL;
}

int main(void)
{
	pthread_t t;
	if (pthread_create(&t, NULL, run, NULL) != 0)
		return 1;
	pthread_exit(NULL);
}
