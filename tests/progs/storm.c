/* A malloc/free storm: T threads each run N malloc/free pairs over a window of 64 live blocks of
 * 16..1040 bytes (deterministic sizes), then free what is left. Used by the tests (exact totals
 * under many threads) and by the overhead benchmark. Prints, as one JSON line, what it did and how
 * long the storm took (wall ns, measured inside the program so start-up is excluded).
 * usage: storm [THREADS [PAIRS_PER_THREAD]] */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define WINDOW 64

static long pairs = 1000000;
static pthread_barrier_t start;

struct result {
	uint64_t bytes;
	uint32_t seed;
};

static void *run(void *arg)
{
	struct result *r = arg;
	void *live[WINDOW] = {0};
	uint32_t x = r->seed;
	pthread_barrier_wait(&start);
	for (long i = 0; i < pairs; i++) {
		x = x * 1664525u + 1013904223u;
		size_t size = 16 + (x >> 22); /* 16 .. 1039 */
		int k = (int)(i % WINDOW);
		free(live[k]);
		live[k] = malloc(size);
		*(volatile char *)live[k] = 1;
		r->bytes += size;
	}
	for (int k = 0; k < WINDOW; k++)
		free(live[k]);
	return NULL;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 1;
	if (argc > 2)
		pairs = atol(argv[2]);
	if (threads < 1 || threads > 256 || pairs < 1) {
		fprintf(stderr, "usage: storm [THREADS [PAIRS_PER_THREAD]]\n");
		return 2;
	}
	pthread_t tid[256];
	struct result res[256] = {{0}};
	pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
	for (int i = 0; i < threads; i++) {
		res[i].seed = 12345u + 977u * (uint32_t)i;
		pthread_create(&tid[i], NULL, run, &res[i]);
	}
	pthread_barrier_wait(&start);
	double t0 = now();
	uint64_t bytes = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		bytes += res[i].bytes;
	}
	double t1 = now();
	printf("{\"threads\":%d,\"pairs\":%ld,\"storm_mallocs\":%ld,\"storm_bytes\":%llu,\"wall_ns\":%.0f}\n",
	       threads, pairs * threads, pairs * threads, (unsigned long long)bytes, t1 - t0);
	return 0;
}
