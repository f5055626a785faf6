/* An allocation 100 calls deep, deeper than the recorder's default stack depth (TPROF_DEPTH=64),
 * for tprof leaks (tests/integration/stacks.bats): the block leaks from the line marked with
 * LEAK:<function>, and its stack must be cut at the depth limit and marked truncated. */
#include <stdlib.h>

static void *leaked;

static void recurse(int n)
{
	if (n == 0) {
		leaked = malloc(42); /* LEAK:recurse */
		return;
	}
	recurse(n - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call, even if optimized */
}

int main(int argc, char **argv)
{
	recurse(argc > 1 ? atoi(argv[1]) : 100);
	return 0;
}
