/* Four threads each allocate and free, then call exit with their own number (1 to 4) at about the
 * same time, while main allocates on: which call ends the process is a race, and the trace must
 * carry the status the process really ended with. */
#include <pthread.h>
#include <stdlib.h>

static void *worker(void *arg)
{
	for (int i = 0; i < 2000; i++) {
		void *volatile p = malloc(64);
		free(p);
	}
	exit((int)(long)arg);
}

int main(void)
{
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 1)) != 0)
			return 9;
	for (;;) {
		void *volatile p = malloc(64);
		free(p);
	}
}
