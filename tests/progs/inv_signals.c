/* What a program sees of its signal state, for tests/integration/invisible.bats: for every signal,
 * the disposition sigaction reports (SIG_DFL, SIG_IGN or a handler, with the handler's flags), then
 * the blocked and the pending sets of the main thread. Once at the start of main and once more after
 * many mallocs and frees. Bare and under the preload, the output must be the same. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inv.h"

static void show(const char *when)
{
	say("-- %s\n", when);
	for (int s = 1; s < NSIG; s++) {
		struct sigaction sa;
		if (sigaction(s, NULL, &sa) != 0) {
			if (errno != EINVAL)
				say("%d: sigaction: %s\n", s, strerror(errno));
			continue; /* the C library's own signals (32, 33) */
		}
		if (sa.sa_handler == SIG_DFL)
			say("%d SIG_DFL\n", s);
		else if (sa.sa_handler == SIG_IGN)
			say("%d SIG_IGN\n", s);
		else
			say("%d handler flags %#x\n", s, (unsigned)sa.sa_flags);
	}
	sigset_t set;
	sigprocmask(SIG_BLOCK, NULL, &set);
	say("blocked:");
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&set, s) == 1)
			say(" %d", s);
	say("\n");
	sigpending(&set);
	say("pending:");
	for (int s = 1; s < NSIG; s++)
		if (sigismember(&set, s) == 1)
			say(" %d", s);
	say("\n");
}

int main(void)
{
	show("at start of main");
	churn(20000);
	usleep(50000);
	churn(20000);
	show("after mallocs");
	return 0;
}
