/* A program that defines malloc, free, calloc and realloc itself as thin wrappers over the C
 * library's __libc_malloc, __libc_free, __libc_calloc and __libc_realloc, as some programs and
 * libraries do, and calls __libc_memalign, __libc_valloc and __libc_pvalloc directly. Every heap
 * call of the process, the C library's own included, reaches those names: its totals must equal
 * valgrind memcheck's, which replaces them too (with the argument "pvalloc", which memcheck does not
 * run, __libc_pvalloc(5000) too, freed). Prints "done". */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);
extern void *__libc_pvalloc(size_t);

void *malloc(size_t n)
{
	return __libc_malloc(n);
}

void free(void *p)
{
	__libc_free(p);
}

void *calloc(size_t a, size_t b)
{
	return __libc_calloc(a, b);
}

void *realloc(void *p, size_t n)
{
	return __libc_realloc(p, n);
}

static void *keep[4];

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	char *a = malloc(100);
	char *b = calloc(4, 50);
	a = realloc(a, 400);
	void *c = __libc_memalign(64, 128);
	void *d = __libc_valloc(1000);
	free(b);
	free(c);
	free(d);
	keep[0] = a; /* 400 bytes in use at exit */
	if (argc > 1 && strcmp(argv[1], "pvalloc") == 0)
		__libc_free(__libc_pvalloc(5000));
	puts("done");
	return 0;
}
