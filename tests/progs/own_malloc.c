/* A program that defines malloc, free, calloc and realloc itself (a bump allocator over a static
 * arena), as some programs do: the preloaded hooks never see its heap calls. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

static unsigned char arena[1 << 20];
static size_t used;

void *malloc(size_t n)
{
	n = (n + 15) & ~(size_t)15;
	if (used + n > sizeof(arena))
		return NULL;
	void *p = arena + used;
	used += n;
	return p;
}

void free(void *p)
{
	(void)p;
}

void *calloc(size_t a, size_t b)
{
	void *p = malloc(a * b);
	if (p)
		memset(p, 0, a * b);
	return p;
}

void *realloc(void *p, size_t n)
{
	void *q = malloc(n);
	if (q && p)
		memcpy(q, p, n); /* the arena is large enough to read past a smaller block */
	return q;
}

int main(void)
{
	char *s = malloc(100);
	strcpy(s, "own allocator");
	puts(s);
	return 0;
}
