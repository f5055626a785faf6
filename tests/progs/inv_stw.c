/* A stop-the-world by signals, as a garbage collector's (Boehm GC's), for
 * tests/integration/invisible.bats: each mutator thread answers SIGUSR1 from its handler and waits
 * there for SIGUSR2. Thread A allocates in a loop (often holding the arena's lock when it stops);
 * each round, a new thread B makes its first heap call while the world is being stopped. Run with
 * MALLOC_ARENA_MAX=1, B's first call waits for A's arena: B must still answer the stop signal
 * (tprof holds signals through a first heap call only while the process has one thread). Prints
 * "ok N rounds", or which round never stopped (after 3 s) and ends with status 1. */
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "inv.h"

static sem_t ack;
static __thread volatile sig_atomic_t resumed;
static _Atomic int go, done, quit;

static void on_stop(int sig)
{
	(void)sig;
	sigset_t m;
	pthread_sigmask(SIG_BLOCK, NULL, &m);
	sigdelset(&m, SIGUSR2);
	resumed = 0;
	sem_post(&ack);
	while (!resumed)
		sigsuspend(&m);
}

static void on_resume(int sig)
{
	(void)sig;
	resumed = 1;
}

static void *a_body(void *arg)
{
	(void)arg;
	void *v[64] = {0};
	for (unsigned i = 0; !quit; i++) {
		free(v[i % 64]);
		v[i % 64] = malloc(2000 + (i % 7) * 100);
	}
	for (int k = 0; k < 64; k++)
		free(v[k]);
	return NULL;
}

static void *b_body(void *arg)
{
	(void)arg;
	while (!go)
		;
	void *volatile p = malloc(100);
	free(p);
	while (!done)
		;
	return NULL;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	sem_init(&ack, 0, 0);
	struct sigaction sa = {.sa_handler = on_stop, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR2);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_resume;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR2, &sa, NULL);
	pthread_t a;
	pthread_create(&a, NULL, a_body, NULL);
	for (int r = 0; r < rounds; r++) {
		pthread_t b;
		go = 0;
		done = 0;
		pthread_create(&b, NULL, b_body, NULL);
		go = 1;
		pthread_kill(a, SIGUSR1);
		pthread_kill(b, SIGUSR1);
		for (int k = 0; k < 2; k++) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += 3;
			while (sem_timedwait(&ack, &ts) != 0)
				if (errno == ETIMEDOUT) {
					say("round %d: the world never stopped\n", r);
					_exit(1);
				}
		}
		pthread_kill(a, SIGUSR2);
		pthread_kill(b, SIGUSR2);
		done = 1;
		pthread_join(b, NULL);
	}
	quit = 1;
	pthread_join(a, NULL);
	say("ok %d rounds\n", rounds);
	return 0;
}
