/* Planted leaks at known lines, for tprof leaks (tests/integration/stacks.bats): each plant_*
 * function leaks from the line marked LEAK:<its name>, which the test finds with grep, so the
 * expected function, line, bytes and blocks below are all the test needs to know:
 *   plant_malloc    3 blocks,  300 bytes     plant_calloc   1 block,  77 bytes
 *   plant_realloc   1 block,   500 bytes     plant_strdup   2 blocks, 24 bytes (through libc)
 *   plant_memalign  1 block,   256 bytes     plant_chain    4 blocks, 4 x 1000 bytes, reachable
 * Everything else is freed. Built -O0 -g, so no call is inlined or turned into a jump. */
#include <stdlib.h>
#include <string.h>

static void *reachable[4];

static void plant_malloc(void)
{
	for (int i = 0; i < 3; i++) {
		char *p = malloc(100); /* LEAK:plant_malloc */
		p[0] = 1;
	}
}

static void plant_calloc(void)
{
	void *p = calloc(7, 11); /* LEAK:plant_calloc */
	(void)p;
}

static void plant_realloc(void)
{
	char *p = malloc(10);
	p = realloc(p, 500); /* LEAK:plant_realloc */
	p[0] = 1;
}

static void plant_strdup(void)
{
	for (int i = 0; i < 2; i++) {
		char *s = strdup("eleven char"); /* LEAK:plant_strdup */
		(void)s;
	}
}

static void plant_memalign(void)
{
	void *p;
	if (posix_memalign(&p, 64, 256) == 0) /* LEAK:plant_memalign */
		((char *)p)[0] = 1;
}

static void plant_chain(int n)
{
	if (n == 0)
		return;
	reachable[n - 1] = malloc(1000); /* LEAK:plant_chain */
	plant_chain(n - 1);
}

static void not_leaking(void)
{
	for (int i = 0; i < 10; i++) {
		void *p = malloc(64 + i);
		free(p);
	}
}

int main(void)
{
	plant_malloc();
	plant_calloc();
	not_leaking();
	plant_realloc();
	plant_strdup();
	plant_memalign();
	plant_chain(4);
	return 0;
}
