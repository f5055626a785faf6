/* The signal mask across heap calls, for tests/integration/invisible.bats: main, then a new thread,
 * block every signal with the raw system call (the C library's own two, SIGCANCEL and SIGSETXID,
 * included, as its timer helper thread has them), make their first heap call (under tprof: the
 * registration and the thread's attach hold signals) and print their mask; then a SIGEV_THREAD
 * timer expires 5 times every 10 ms (its helper thread allocates: a SIGCANCEL unblocked there
 * would kill the process at the second expiry) and main prints "timer ok". */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "inv.h"

static uint64_t block_all_then_allocate(void)
{
	uint64_t all = ~0ull, cur = 0;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, 8);
	sink = malloc(100);
	free(sink);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, NULL, &cur, 8);
	uint64_t none = 0;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, NULL, 8);
	return cur;
}

static void *thread_body(void *arg)
{
	*(uint64_t *)arg = block_all_then_allocate();
	return NULL;
}

static volatile int fired;

static void tick(union sigval v)
{
	(void)v;
	fired++;
}

int main(void)
{
	say("main's mask %llx\n", (unsigned long long)block_all_then_allocate());
	uint64_t m = 0;
	pthread_t t;
	if (pthread_create(&t, NULL, thread_body, &m) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	say("thread's mask %llx\n", (unsigned long long)m);
	timer_t tm;
	struct sigevent se;
	memset(&se, 0, sizeof(se));
	se.sigev_notify = SIGEV_THREAD;
	se.sigev_notify_function = tick;
	if (timer_create(CLOCK_MONOTONIC, &se, &tm) != 0)
		return 2;
	struct itimerspec its = {{0, 10000000}, {0, 10000000}};
	timer_settime(tm, 0, &its, NULL);
	while (fired < 5)
		usleep(1000);
	timer_delete(tm);
	say("timer ok\n");
	return 0;
}
