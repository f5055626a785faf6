/* fork() from a signal handler that interrupts the program's heap calls, for
 * tests/integration/invisible.bats: a 10 ms interval timer's handler forks a child, which makes one
 * malloc/free pair of 5051 bytes and ends with _exit(7), and waits for it; main makes malloc/free
 * pairs until 40 children have ended, then says whether all ended with 7 and writes their number
 * into children.txt. Most handlers interrupt a heap call: under tprof, often inside its stack walk
 * or ring write. The interval is longer than a handler takes under tprof (a fork child that
 * registers costs about 3 ms on a 2-CPU VM): with a shorter one each handler's end found the next
 * expiry pending, and main never ran again. With an argument the handler makes its child with _Fork
 * (which runs no fork handler) and the child ends at once by the function named: exit, _Exit,
 * quick_exit or _exit; it may have interrupted a hook in its critical part, whose state it has. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inv.h"

static volatile sig_atomic_t forks, sevens;
static const char *end; /* NULL: fork, malloc/free, _exit; else _Fork and this end */

static void handler(int sig)
{
	(void)sig;
	pid_t p = end ? _Fork() : fork();
	if (p == 0) {
		if (!end)
			free(malloc(5051));
		else if (strcmp(end, "exit") == 0)
			exit(7);
		else if (strcmp(end, "_Exit") == 0)
			_Exit(7);
		else if (strcmp(end, "quick_exit") == 0)
			quick_exit(7);
		_exit(7);
	}
	int st;
	if (p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 7)
		sevens++;
	forks++;
}

int main(int argc, char **argv)
{
	end = argc > 1 ? argv[1] : NULL;
	struct sigaction sa = {.sa_handler = handler, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 10000}, {0, 10000}};
	setitimer(ITIMER_REAL, &it, NULL);
	while (forks < 40) {
		void *volatile p = malloc(24);
		free(p);
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	say(sevens == forks ? "all children ended with 7\n" : "some children did not end with 7\n");
	int fd = open("children.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd >= 0)
		out(fd, "%d\n", (int)forks);
	return 0;
}
