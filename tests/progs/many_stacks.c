/* Many distinct call stacks: each allocation comes down a path of DEPTH calls chosen by the bits of
 * its number, through two functions that call each other, so that N allocations have up to N
 * stacks that share their callers (as an interpreter's or a recursive program's do). Every block
 * is freed. For the stack tables' tests (tests/integration/stacks.bats) and the trace-size checks.
 * usage: many_stacks [N [DEPTH]] */
#include <stdio.h>
#include <stdlib.h>

static void a(unsigned i, int d);
static void b(unsigned i, int d);

static __attribute__((noinline)) void leaf(unsigned i)
{
	void *volatile p = malloc(16 + (i & 255));
	free(p);
}

static __attribute__((noinline)) void a(unsigned i, int d)
{
	if (!d)
		leaf(i);
	else if ((i >> d) & 1)
		a(i, d - 1);
	else
		b(i, d - 1);
	__asm__ volatile("" ::: "memory"); /* not a tail call, even if optimized */
}

static __attribute__((noinline)) void b(unsigned i, int d)
{
	if (!d)
		leaf(i);
	else if ((i >> d) & 1)
		a(i, d - 1);
	else
		b(i, d - 1);
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 10000;
	int depth = argc > 2 ? atoi(argv[2]) : 16;
	if (depth < 1 || depth > 31) {
		fprintf(stderr, "usage: many_stacks [N [DEPTH (1..31)]]\n");
		return 2;
	}
	for (unsigned i = 0; i < n; i++)
		a(i, depth);
	return 0;
}
