/* A thread's first heap call under tprof, for tests/integration/invisible.bats: run with
 * libfirst_call_spy.so preloaded after libtprof.so, a new thread arms the spy before its first and
 * its second malloc and says whether the SIGUSR1 the spy raised inside each was handled inside the
 * real call or after it. The C library sets up a thread's cache in its first heap call, under its
 * arena's lock; a handler that forked there would leave its child that lock taken. With "segv", the
 * spy's first call faults instead, and the program's SIGSEGV handler says so and ends the process
 * with status 5. */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "inv.h"

static volatile int *arm, *handled, *result;

static void on_usr1(int sig)
{
	(void)sig;
	(*handled)++;
}

static const char *said(int r)
{
	return r == 1 ? "inside" : r == 2 ? "after" : "not raised";
}

static void on_segv(int sig)
{
	(void)sig;
	say("SIGSEGV handled in the first call\n");
	_exit(5);
}

static void *body(void *arg)
{
	if (arg) { /* "segv": the spy faults in the thread's first call */
		*result = 0;
		*arm = 2;
		void *volatile p = malloc(100);
		say("no fault: %p\n", p);
		return NULL;
	}
	*arm = 1;
	void *volatile p = malloc(100);
	int first = *result;
	*arm = 1;
	void *volatile q = malloc(100);
	say("first call: %s, second call: %s, handled %d\n", said(first), said(*result), *handled);
	free(p);
	free(q);
	return NULL;
}

int main(int argc, char **argv)
{
	arm = dlsym(RTLD_DEFAULT, "spy_arm");
	handled = dlsym(RTLD_DEFAULT, "spy_handled");
	result = dlsym(RTLD_DEFAULT, "spy_result");
	if (!arm || !handled || !result) {
		say("no spy: preload libfirst_call_spy.so\n");
		return 1;
	}
	struct sigaction sa = {.sa_handler = on_usr1};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	pthread_t t;
	if (pthread_create(&t, NULL, body, argc > 1 && strcmp(argv[1], "segv") == 0 ? argv : NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	return 0;
}
