/* A signal handler that ends the process while the program is busy allocating, for
 * tests/integration/lifecycle.bats. main keeps KEPT blocks of KEPT_SIZE bytes in a list that an exit
 * handler frees, then makes malloc/free pairs of PAIR_SIZE bytes until SIGALRM comes (after MS
 * milliseconds, 20 by default): most of the time inside one of tprof's hooks. The handler ends the
 * process as MODE says: exit (status 3; an atexit handler frees the list), quick_exit (status 6; an
 * at_quick_exit handler frees it) or _exit (status 5; the list stays); or with longjmp it jumps back
 * into main (siglongjmp), which frees the list but for its last 10 blocks and returns 0 (no exit
 * handler frees the list then). Prints nothing.
 * Usage: sig_exit MODE [MS] */
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define KEPT 100
#define KEPT_SIZE 1111
#define PAIR_SIZE 64

struct node {
	struct node *next;
	char pad[KEPT_SIZE - sizeof(struct node *)];
};

static struct node *kept;
static const char *mode;
static sigjmp_buf back;
static int jumped;

static void free_kept(void)
{
	if (jumped)
		return;
	while (kept) {
		struct node *n = kept->next;
		free(kept);
		kept = n;
	}
}

static void on_alarm(int sig)
{
	(void)sig;
	if (strcmp(mode, "quick_exit") == 0)
		quick_exit(6);
	if (strcmp(mode, "_exit") == 0)
		_exit(5);
	if (strcmp(mode, "longjmp") == 0)
		siglongjmp(back, 1);
	exit(3);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	mode = argv[1];
	long ms = argc > 2 ? atol(argv[2]) : 20;
	for (int i = 0; i < KEPT; i++) {
		struct node *n = malloc(sizeof(*n));
		if (!n)
			return 1;
		n->next = kept;
		kept = n;
	}
	atexit(free_kept);
	at_quick_exit(free_kept);
	if (sigsetjmp(back, 1)) { /* back from the handler */
		jumped = 1;
		for (int i = 0; i < KEPT - 10; i++) {
			struct node *n = kept->next;
			free(kept);
			kept = n;
		}
		return 0;
	}
	signal(SIGALRM, on_alarm);
	struct itimerval it = {{0, 0}, {ms / 1000, (ms % 1000) * 1000}};
	setitimer(ITIMER_REAL, &it, NULL);
	for (;;) {
		void *volatile p = malloc(PAIR_SIZE);
		free(p);
	}
}
