/* Annotations from a signal handler: a timer fires every 200 us while the program makes heap calls
 * in a loop, and its handler marks an instant, opens and closes a range and marks a step boundary
 * every other time, often while the interrupted heap call is writing its own event. Stops after N
 * handler runs (argument, default 1000) and prints N (a slow heap call, such as one waiting for a
 * full ring under a sanitizer, may see the timer fire again before it is stopped: a few more). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#include "../../include/tprof.h"

static volatile sig_atomic_t hits;

static void on_alarm(int sig)
{
	(void)sig;
	hits++;
	tprof_mark("tick");
	tprof_range_push("handler");
	tprof_range_pop();
	if (hits % 2)
		tprof_step();
}

int main(int argc, char **argv)
{
	int want = argc > 1 ? atoi(argv[1]) : 1000;
	struct sigaction sa = {0};
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &it, NULL);
	while (hits < want) {
		void *volatile p = malloc(64);
		free(p);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("%d\n", hits >= want ? want : (int)hits);
	return 0;
}
