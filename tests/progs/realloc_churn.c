/* Four threads share 1024 slots under a lock and allocate, reallocate and free in them at random
 * (200,000 steps each, about 900,000 heap events in 1 to 2 s on two CPUs): more work for the
 * recorder's writer than it can keep up with while the program runs, so it drains for a while
 * after the program has ended. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define SLOTS 1024

static void *slots[SLOTS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static void *work(void *arg)
{
	unsigned s = (unsigned)(long)arg * 2654435761u;
	for (int i = 0; i < 200000; i++) {
		s = s * 1103515245 + 12345;
		unsigned k = (s >> 8) % SLOTS, sz = (s >> 4) % 3000;
		pthread_mutex_lock(&mu);
		void *p = slots[k];
		if (p && (s & 3) == 0)
			slots[k] = realloc(p, sz + 1);
		else if (p) {
			free(p);
			slots[k] = NULL;
		} else
			slots[k] = (s & 1) ? malloc(sz) : calloc(1, sz);
		pthread_mutex_unlock(&mu);
		if ((s & 15) == 0) {
			void *t = malloc(sz);
			memset(t, 1, sz);
			free(t);
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, work, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < SLOTS; i++)
		free(slots[i]);
	return 0;
}
