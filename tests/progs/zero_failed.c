/* Blocks of 0 bytes and calls that fail, for tprof summary's sites (tests/integration/summary.bats):
 * keeps a malloc(0) block and a 64-byte block to the end, frees another malloc(0) block, and makes
 * four calls that fail (malloc and realloc of SIZE_MAX, an overflowing calloc, posix_memalign with
 * an alignment that is no power of two), each from a site of its own. */
#include <stdint.h>
#include <stdlib.h>

static void *volatile keep[3];
static volatile size_t huge = SIZE_MAX; /* not known to the compiler, which would warn */

int main(void)
{
	keep[0] = malloc(0);
	keep[1] = malloc(64);
	keep[2] = malloc(0);
	free(keep[2]);
	void *p = malloc(16);
	keep[2] = malloc(huge);
	keep[2] = realloc(p, huge);
	keep[2] = calloc(huge / 2, 4);
	void *q = NULL;
	if (posix_memalign(&q, 3, 16) == 0)
		free(q);
	free(p);
	return keep[2] != NULL;
}
