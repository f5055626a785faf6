/* The leak scan at exit stops the other threads; they must not go back to the program while the
 * exiting thread still writes its last output (tests/integration/invisible.bats): a thread sleeps
 * in nanosleep, which a signal handler's return would end with EINTR (then it exits 42); main
 * buffers 200000 lines in a 1 MiB stdout buffer and returns, so that exit flushes them into a
 * pipe that a slow reader empties, for about half a second. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void *sleeper(void *arg)
{
	(void)arg;
	void *volatile p = malloc(100);
	(void)p;
	for (;;) {
		struct timespec ts = {5, 0};
		if (nanosleep(&ts, NULL) < 0) {
			dprintf(2, "thread: nanosleep: %s\n", strerror(errno));
			_exit(42);
		}
	}
	return NULL;
}

int main(void)
{
	static char buf[1 << 20];
	setvbuf(stdout, buf, _IOFBF, sizeof(buf));
	pthread_t t;
	pthread_create(&t, NULL, sleeper, NULL);
	usleep(10000);
	void *volatile q = malloc(1000);
	(void)q;
	for (int i = 0; i < 200000; i++)
		printf("line %d\n", i);
	return 0;
}
