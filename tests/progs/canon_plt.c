/* An executable that is not position-independent and takes the addresses of malloc and realloc
 * (built -fno-pic -no-pie): its PLT entries become those functions' addresses for the whole
 * process, and dlsym returns them. "calls": one block through the pointer, kept; 100 reallocarray
 * calls on another, freed; "none": the addresses taken, no heap call made. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void *(*malloc_fn)(size_t);
typedef void *(*realloc_fn)(void *, size_t);

__attribute__((noinline)) static malloc_fn pick_malloc(int i)
{
	return i ? malloc : NULL;
}

__attribute__((noinline)) static realloc_fn pick_realloc(int i)
{
	return i ? realloc : NULL;
}

int main(int argc, char **argv)
{
	int calls = argc > 1 && strcmp(argv[1], "calls") == 0;
	malloc_fn m = pick_malloc(calls);
	realloc_fn r = pick_realloc(calls);
	if (!calls) {
		static const char msg[] = "no heap call\n";
		return write(1, msg, sizeof(msg) - 1) == sizeof(msg) - 1 ? 0 : 1;
	}
	void *volatile keep = m(100);
	void *p = r(NULL, 16);
	for (int i = 0; i < 100; i++)
		p = reallocarray(p, (size_t)i + 2, 8);
	free(p);
	printf("ok %d\n", keep != NULL);
	return 0;
}
