/* A program with exactly known heap behaviour, for checking tprof report against hand-computed
 * numbers and against valgrind memcheck: every wrapped function but pvalloc (valgrind
 * cannot run it: see heap_pvalloc.c), a realloc chain,
 * realloc(p, 0), free(NULL), two leaks, and a peak in the middle of the run. The expected figures
 * are in tests/integration/report.bats. */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *keep[16];

int main(void)
{
	setvbuf(stdout, NULL, _IONBF, 0); /* no stdio buffer allocation */
	void *a = malloc(100);
	void *b = calloc(10, 20);
	a = realloc(a, 300);
	void *c = NULL;
	if (posix_memalign(&c, 64, 128) != 0)
		return 1;
	void *d = aligned_alloc(64, 256);
	void *e = memalign(32, 50);
	void *f = valloc(1000);
	void *h = reallocarray(NULL, 4, 25);
	h = reallocarray(h, 8, 25);
	free(NULL);

	void *big = malloc(1000000); /* the peak: 1,000,000 + everything live above */
	memset(big, 1, 1000000);
	keep[0] = big;
	free(big);

	void *p = NULL;
	for (int i = 1; i <= 10; i++)
		p = realloc(p, (size_t)i * 16);
	free(p);
	void *z = malloc(64);
	z = realloc(z, 0); /* glibc frees the block and returns NULL */
	keep[1] = z;

	free(a);
	free(c);
	free(d);
	free(e);
	free(h);
	/* b (200 bytes) and f (1000 bytes) leak */
	keep[2] = b;
	keep[3] = f;
	printf("done\n");
	return 0;
}
