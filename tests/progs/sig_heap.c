/* Heap calls from a signal handler: with argument 1 a timer interrupts a malloc/free loop every
 * 200 us (most often inside tprof's hooks), and the handler allocates and frees a block each time;
 * with 0 no timer runs. With alt, the loop runs in a thread whose handler runs on an alternate
 * signal stack (SS_AUTODISARM) mapped before the thread's stack, so above it. Prints how many times
 * the handler ran. A trace of 1 must hold 0's heap calls (with alt or without, as it) plus one allocation and one
 * free per run of the handler.
 * usage: sig_heap 0|1 [alt] */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>

#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31) /* linux/signal.h, which clashes with signal.h */
#endif

static volatile long handled;

static void on_alarm(int sig)
{
	(void)sig;
	void *volatile p = malloc(32); /* not async-signal-safe by POSIX; done by real programs */
	free(p);
	handled++;
}

static void *loop(void *alt)
{
	if (alt) { /* the handler on the alternate stack, this thread alone taking the signal */
		/* SS_AUTODISARM: while the handler runs on it, the kernel says no alternate stack is set */
		stack_t ss = {.ss_sp = alt, .ss_size = 1 << 20, .ss_flags = SS_AUTODISARM};
		sigaltstack(&ss, NULL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	}
	for (long i = 0; i < 300000; i++) {
		void *volatile p = malloc(64 + (size_t)(i & 255));
		free(p);
	}
	if (alt) { /* the C library frees the thread's cache as it ends, holding its arena's lock: a
		    * handler's malloc there would wait for it forever, traced or not */
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int timer = argc > 1 && strcmp(argv[1], "1") == 0, use_alt = argc > 2 && strcmp(argv[2], "alt") == 0;
	void *alt = NULL;
	if (use_alt) {
		alt = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (alt == MAP_FAILED)
			return 1;
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &set, NULL);
	}
	if (timer) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm;
		sa.sa_flags = SA_RESTART | (use_alt ? SA_ONSTACK : 0);
		sigaction(SIGALRM, &sa, NULL);
		struct itimerval it = {{0, 200}, {0, 200}};
		setitimer(ITIMER_REAL, &it, NULL);
	}
	if (use_alt) {
		pthread_t t;
		if (pthread_create(&t, NULL, loop, alt) != 0)
			return 1;
		pthread_join(t, NULL);
	} else {
		loop(NULL);
	}
	if (timer) {
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(ITIMER_REAL, &off, NULL);
	}
	printf("handled %ld\n", handled);
	return 0;
}
