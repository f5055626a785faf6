/* Heap calls from a signal handler: with argument 1 a timer interrupts a malloc/free loop every
 * 200 us (most often inside tprof's hooks), and the handler allocates and frees a block each time;
 * with 0 no timer runs. Prints how many times the handler ran. A trace of the first must hold the
 * second's heap calls plus one allocation and one free per run of the handler.
 * usage: sig_heap 0|1 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static volatile long handled;

static void on_alarm(int sig)
{
	(void)sig;
	void *volatile p = malloc(32); /* not async-signal-safe by POSIX; done by real programs */
	free(p);
	handled++;
}

int main(int argc, char **argv)
{
	int timer = argc > 1 && strcmp(argv[1], "1") == 0;
	if (timer) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = {{0, 200}, {0, 200}};
		setitimer(ITIMER_REAL, &it, NULL);
	}
	for (long i = 0; i < 300000; i++) {
		void *volatile p = malloc(64 + (size_t)(i & 255));
		free(p);
	}
	if (timer) {
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(ITIMER_REAL, &off, NULL);
	}
	printf("handled %ld\n", handled);
	return 0;
}
