/* A thread that blocks every signal with the raw system call (so even the C library's own ones),
 * holding a block on its stack, while main ends with exit status 3: for
 * tests/integration/leakscan.bats, which checks that the scan goes on without it (after 200 ms, its
 * whole stack scanned) and the program ends as it would bare. */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int ready;

static void *hold(void *arg)
{
	(void)arg;
	void *volatile held = malloc(300);
	memset(held, 1, 300);
	uint64_t all = ~0ull; /* after the last heap call: nothing of tprof's runs on this thread again */
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, NULL, 8);
	ready = 1;
	for (;;)
		pause();
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_create(&t, NULL, hold, NULL);
	while (!ready)
		usleep(1000);
	write(1, "done\n", 5);
	exit(3);
}
