/* Two threads hand blocks to each other: the main thread allocates a request and passes it over a
 * pipe; the worker frees it and allocates a reply of the same size (which glibc's per-thread cache
 * serves from the address just freed); the main thread frees the reply, but keeps one (a leak).
 * So one thread's consecutive events at an address (its malloc, then its free of the reply) are not
 * the same block: the other thread freed and took that address in between. The reader's pairing of
 * frees with allocations within one thread must not be fooled (tests/integration/report.bats). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 20000

static int to_worker[2], to_main[2];
static void *volatile kept;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		void *p;
		if (read(to_worker[0], &p, sizeof(p)) != sizeof(p))
			break;
		free(p);
		void *r = malloc(48);
		if (write(to_main[1], &r, sizeof(r)) != sizeof(r))
			break;
	}
	return NULL;
}

int main(void)
{
	if (pipe(to_worker) != 0 || pipe(to_main) != 0)
		return 1;
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	for (int i = 0; i < ROUNDS; i++) {
		void *p = malloc(48), *r;
		if (write(to_worker[1], &p, sizeof(p)) != sizeof(p) || read(to_main[0], &r, sizeof(r)) != sizeof(r))
			return 1;
		if (i == 7)
			kept = r;
		else
			free(r);
	}
	pthread_join(t, NULL);
	return 0;
}
