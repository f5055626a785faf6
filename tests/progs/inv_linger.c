/* Threads blocked in a system call that a signal interrupts for good while the process exits, for
 * tests/integration/invisible.bats: two threads each keep a block (so that the leak scan at the
 * end stops them) and wait, one in poll with no timeout, one in a 10 s nanosleep; main returns 0
 * after 100 ms. Bare, the process ends with status 0 and prints nothing: the threads never wake. A
 * thread that woke would say so ("poll woke: -1 errno 4") and end the process with status 9. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "inv.h"

static void *keep[2];

static void *in_poll(void *arg)
{
	(void)arg;
	keep[0] = malloc(1000);
	memset(keep[0], 1, 1000);
	int r = poll(NULL, 0, -1);
	say("poll woke: %d errno %d\n", r, errno);
	_exit(9);
}

static void *in_nanosleep(void *arg)
{
	(void)arg;
	keep[1] = malloc(2000);
	memset(keep[1], 2, 2000);
	struct timespec ts = {10, 0};
	int r = nanosleep(&ts, NULL);
	say("nanosleep woke: %d errno %d\n", r, errno);
	_exit(9);
}

int main(void)
{
	pthread_t a, b;
	if (pthread_create(&a, NULL, in_poll, NULL) != 0 || pthread_create(&b, NULL, in_nanosleep, NULL) != 0)
		return 1;
	usleep(100000);
	return 0;
}
