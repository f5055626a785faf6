/* A program whose destructor dies of SIGSEGV after main has returned 0: exit has begun (the exit
 * handlers have run, tprof's included, which notes status 0), then the destructors run and one
 * crashes. The process ends by the signal, and its trace must say so. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((destructor)) static void crash(void)
{
	signal(SIGSEGV, SIG_DFL);
	raise(SIGSEGV);
}

int main(void)
{
	void *volatile p = malloc(10);
	free(p);
	puts("main returns 0");
	return 0;
}
