/* A signal handler that forks in the middle of a stack capture: the child makes a heap call in the
 * handler (recorded with a walk of its own, once the child has forgotten its parent's state), then
 * returns from the handler into the capture it interrupted, and goes on allocating from the same
 * place. stacks.bats raises SIGUSR1 with gdb while the capture of level2's call works out a new
 * rule; every capture of both processes must match libunwind's (TPROF_VERIFY_STACKS=1), the
 * interrupted one at most cut short. Prints "parent done" and "child done". */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

volatile int armed, child;

static void handler(int sig)
{
	(void)sig;
	pid_t p = fork();
	if (p == 0) {
		child = 1;
		void *volatile q = malloc(5);
		free(q);
		return; /* back into the capture the signal interrupted */
	}
	int st;
	waitpid(p, &st, 0);
}

__attribute__((noinline)) void *level2(size_t n)
{
	void *volatile p = malloc(n);
	return p;
}

__attribute__((noinline)) void *level1(size_t n)
{
	void *p = level2(n);
	__asm__ volatile("" ::: "memory");
	return p;
}

int main(void)
{
	signal(SIGUSR1, handler);
	void *volatile w = malloc(8);
	free(w);
	armed = 1; /* gdb stops the next capture's rule computation, and raises SIGUSR1 there */
	free(level1(100));
	for (int i = 0; i < 3; i++)
		free(level1(200 + (size_t)i));
	printf("%s done\n", child ? "child" : "parent");
	fflush(stdout);
	return 0;
}
