/* An executable that defines dlsym itself, ahead of every library, and passes each look-up on to
 * the C library's (found by its version), as a program that wraps dlsym does: libtprof.so's own
 * look-ups must not go through it (its RTLD_NEXT, seen from here, is libtprof.so's own hooks: the
 * process hung at its first heap call). It then allocates through a look-up in the C library's
 * handle and directly, and prints "done" and how many look-ups it passed on. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *(*real_dlsym)(void *, const char *);
static int calls;

void *dlsym(void *handle, const char *name)
{
	if (!real_dlsym)
		real_dlsym = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	calls++;
	return real_dlsym ? real_dlsym(handle, name) : NULL;
}

int main(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *(*m)(size_t) = libc ? (void *(*)(size_t))dlsym(libc, "malloc") : NULL;
	void (*f)(void *) = libc ? (void (*)(void *))dlsym(libc, "free") : NULL;
	if (!m || !f)
		return 1;
	char *p = m(100);
	strcpy(p, "x");
	f(p);
	free(malloc(50));
	printf("done %d\n", calls);
	return 0;
}
