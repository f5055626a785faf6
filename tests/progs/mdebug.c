/* For the tests of glibc's libc_malloc_debug preloaded after libtprof.so: prints what the debugging
 * allocator answers (malloc_usable_size of a 10-byte block: 10 under it, 24 under the C library's),
 * makes a few calls between mtrace() and muntrace() (MALLOC_TRACE names the file they go to), and
 * with "overflow" writes one byte past a block and frees it, which MALLOC_CHECK_=3 aborts on. */
#include <malloc.h>
#include <mcheck.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	char *volatile p = malloc(10);
	printf("usable %zu\n", malloc_usable_size(p));
	fflush(stdout);
	if (argc > 1 && strcmp(argv[1], "overflow") == 0) {
		/* the byte past the block, flipped: the check's magic byte (a function of the block's
		 * address) is found changed whatever it was, where a fixed 'x' matched it one run in 256 */
		memset(p, 'x', 10);
		p[10] = (char)~p[10];
		free(p);
		puts("survived");
		return 0;
	}
	free(p);
	mtrace();
	void *a = malloc(100), *b = calloc(4, 25);
	a = realloc(a, 300);
	free(b);
	free(a);
	muntrace();
	puts("done");
	return 0;
}
