/* Starts N threads (default 1100) that are all alive at once, more than the preload has slots
 * (1024), and has each make P malloc/free pairs (default 20) once all have started; none ends
 * before all are done, so no slot is freed meanwhile. A thread that
 * gets no slot cannot record: its events are counted lost, each once, and its heap calls must not
 * wait for the recorder at every call (lifecycle.bats).
 * usage: threads_at_once [N [P]] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t started, done;
static int pairs = 20;

static void *work(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&started);
	for (int i = 0; i < pairs; i++) {
		void *volatile p = malloc(32);
		free(p);
	}
	pthread_barrier_wait(&done);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1100;
	if (argc > 2)
		pairs = atoi(argv[2]);
	if (n < 1 || pairs < 0) {
		fprintf(stderr, "usage: threads_at_once [N [P]]\n");
		return 2;
	}
	pthread_t *t = malloc(sizeof(*t) * (size_t)n);
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 1 << 16);
	pthread_barrier_init(&started, NULL, (unsigned)n);
	pthread_barrier_init(&done, NULL, (unsigned)n);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], &a, work, NULL) != 0) {
			perror("pthread_create");
			return 1;
		}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
	return 0;
}
