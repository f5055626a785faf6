/* The first heap call of a process under tprof, for tests/integration/invisible.bats: run with
 * libfirst_call_spy.so preloaded after libtprof.so, the main thread of a process that has no other
 * arms the spy before its first and its second malloc, then a new thread before its first, and
 * says whether the SIGUSR1 the spy raised inside each was handled inside the real call or after it.
 * The C library sets up a thread's cache in its first heap call, under the arena's lock; a handler
 * that forked there would leave its child that lock taken (with one thread only: with more, the
 * C library's fork takes the lock itself). With "segv", the spy's first call faults instead, and
 * the program's SIGSEGV handler says so and ends the process with status 5. With "vfork", a vfork
 * child (whose heap calls tprof does not record) makes a calloc, the spy's, which calls malloc
 * inside it, and says whether its signal mask is still what it was. */
#include <dlfcn.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "inv.h"

static volatile int *arm, *handled, *result;

static void on_usr1(int sig)
{
	(void)sig;
	(*handled)++;
}

static void on_segv(int sig)
{
	(void)sig;
	say("SIGSEGV handled in the first call\n");
	_exit(5);
}

static const char *said(int r)
{
	return r == 1 ? "inside" : r == 2 ? "after" : "not raised";
}

/* one armed malloc: how its SIGUSR1 was handled */
static int armed(void **p)
{
	*result = 0;
	*arm = 1;
	*p = malloc(100);
	return *result;
}

static void *thread_body(void *arg)
{
	void *p;
	*(int *)arg = armed(&p);
	free(p);
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
	if (argc > 1 && strcmp(argv[1], "segv") == 0) {
		*result = 0;
		*arm = 2;
		void *volatile p = malloc(100);
		say("no fault: %p\n", p);
		return 1;
	}
	if (argc > 1 && strcmp(argv[1], "vfork") == 0) {
		uint64_t before = 0, after = 0;
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &before, 8L);
		pid_t pid = vfork();
		if (pid == 0) {
			void *volatile c = calloc(1, 100);
			(void)c;
			syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &after, 8L);
			say("vfork child: the mask after calloc is %s\n", after == before ? "the same" : "another");
			_exit(0);
		}
		int st;
		return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? 0 : 1;
	}
	void *p, *q;
	int first = armed(&p), second = armed(&q), other = 0;
	pthread_t t;
	if (pthread_create(&t, NULL, thread_body, &other) != 0)
		return 1;
	pthread_join(t, NULL);
	say("first call: %s, second call: %s, a new thread's first call: %s, handled %d\n", said(first), said(second),
	    said(other), *handled);
	free(p);
	free(q);
	return 0;
}
