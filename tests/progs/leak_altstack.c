/* Pointers on an alternate signal stack, for tests/integration/leakscan.bats, which compares the
 * leak kinds with valgrind --leak-check=full on this program. A handler that ran there and returned
 * left its locals in memory that is otherwise the program's (a static array, a heap block, a
 * mapping): a dead frame, as one below a stack pointer, which holds no block.
 *   dead   a static alternate stack; the handler's 401-byte block is definitely lost
 *   heap   the alternate stack is a heap block a global points at (still reachable); the handler's
 *          403-byte block is definitely lost
 *   mmap   an anonymous mapping; the handler's 407-byte block is definitely lost
 *   exit   the handler calls exit on the static alternate stack: its frame is live, its 405-byte
 *          block still reachable
 * Built -O0 -g. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char static_alt[65536];
static void *heap_alt;
static size_t want;
static int leave;

static void handler(int sig)
{
	(void)sig;
	void *volatile p = malloc(want);
	*(volatile char *)p = 1;
	if (leave)
		exit(0);
}

static void on_stack(void *lo, size_t size)
{
	stack_t ss = {.ss_sp = lo, .ss_size = size};
	sigaltstack(&ss, NULL);
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "dead";
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	if (strcmp(how, "heap") == 0) {
		heap_alt = malloc(sizeof(static_alt));
		on_stack(heap_alt, sizeof(static_alt));
		want = 403;
	} else if (strcmp(how, "mmap") == 0) {
		void *m = mmap(NULL, sizeof(static_alt), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 1;
		on_stack(m, sizeof(static_alt));
		want = 407;
	} else {
		on_stack(static_alt, sizeof(static_alt));
		want = strcmp(how, "exit") == 0 ? 405 : 401;
		leave = strcmp(how, "exit") == 0;
	}
	raise(SIGUSR1);
	return 0;
}
