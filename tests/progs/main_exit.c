/* A program whose main thread calls pthread_exit while a worker goes on, for the lifecycle tests.
 * glibc ends such a process when its last thread exits, as if that thread called exit(0): atexit
 * handlers and destructors run. Under tprof the process must still end on its own, with a complete
 * trace.
 *
 *   main_exit HOW MS [WORKERS [EXIT_PAIRS]]
 *
 * main allocates MAIN_LEAK bytes it never frees and KEPT bytes that an atexit handler frees (the
 * handler also allocates and frees EXIT_PAIRS blocks, default 0, and prints "atexit"), starts
 * WORKERS workers (default 1; 0: main is the only thread) and calls pthread_exit(NULL). Each
 * worker allocates and frees blocks of PAIR_SIZE bytes for MS milliseconds (ROUNDS_PER_MS rounds per
 * millisecond), leaks one block of WORKER_LEAK bytes and ends as HOW says: "return" returns from its
 * start routine, "pthread_exit" calls pthread_exit, "detached" returns from a detached thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAIN_LEAK 777
#define KEPT 555
#define WORKER_LEAK 4321
#define PAIR_SIZE 48
#define ROUNDS_PER_MS 10

static const char *how;
static long run_ms, exit_pairs;
static void *kept, *leaks[64];
static volatile void *sink;

static void free_kept(void)
{
	free(kept);
	for (long i = 0; i < exit_pairs; i++) {
		void *p = malloc(PAIR_SIZE);
		sink = p;
		free(p);
	}
	fputs("atexit\n", stdout);
}

static void *worker(void *arg)
{
	long me = (long)arg;
	struct timespec nap = {0, 1000000 / ROUNDS_PER_MS};
	for (long i = 0; i < run_ms * ROUNDS_PER_MS; i++) {
		void *p = malloc(PAIR_SIZE);
		sink = p;
		free(p);
		nanosleep(&nap, NULL);
	}
	leaks[me] = malloc(WORKER_LEAK);
	if (!strcmp(how, "pthread_exit"))
		pthread_exit(NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: main_exit return|pthread_exit|detached MS [WORKERS [EXIT_PAIRS]]\n");
		return 2;
	}
	how = argv[1];
	run_ms = atol(argv[2]);
	long workers = argc > 3 ? atol(argv[3]) : 1;
	exit_pairs = argc > 4 ? atol(argv[4]) : 0;
	if (workers < 0 || workers > 64)
		return 2;
	sink = malloc(MAIN_LEAK);
	kept = malloc(KEPT);
	atexit(free_kept);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	if (!strcmp(how, "detached"))
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	for (long i = 0; i < workers; i++) {
		pthread_t t;
		if (pthread_create(&t, &attr, worker, (void *)i) != 0)
			return 1;
	}
	pthread_exit(NULL);
}
