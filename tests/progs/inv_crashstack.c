/* A crash handler on an alternate signal stack of SIZE bytes (SIGSTKSZ's 8,192 by default) that
 * takes a backtrace, the first of the process: backtrace() loads libgcc_s then, whose loading calls
 * the heap on that stack. Prints "caught 11" and ends with status 7; a stack too small for the
 * handler kills the process with SIGSEGV. usage: inv_crashstack [SIZE] */
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void handler(int sig)
{
	void *frames[32];
	int n = backtrace(frames, 32);
	char msg[64];
	int len = snprintf(msg, sizeof(msg), "caught %d%s\n", sig, n > 1 ? "" : " (no frames)");
	if (write(1, msg, (size_t)len) < 0)
		_exit(8);
	_exit(7);
}

int main(int argc, char **argv)
{
	size_t size = argc > 1 ? (size_t)atol(argv[1]) : 8192;
	stack_t st = {.ss_sp = malloc(size), .ss_size = size};
	if (!st.ss_sp || sigaltstack(&st, NULL) != 0)
		return 2;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	volatile int *volatile z = NULL;
	*z = 1;
	return 0;
}
