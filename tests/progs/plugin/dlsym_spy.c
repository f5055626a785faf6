/* A dlsym of its own, preloaded after libtprof.so by the dlsym test of
 * tests/integration/lifecycle.bats (as tools that wrap dlsym are: they are found by their
 * unversioned name): it writes "spy: NAME" on stderr for each look-up it is asked for, then passes
 * it on to the C library's dlsym. Bare and traced, the program's look-ups must all reach it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

void *dlsym(void *handle, const char *name)
{
	static void *(*next)(void *, const char *);
	if (!next)
		next = (void *(*)(void *, const char *))dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
	{
		char line[128] = "spy: ";
		size_t n = strlen(name);
		n = n < sizeof(line) - 7 ? n : sizeof(line) - 7;
		memcpy(line + 5, name, n);
		line[5 + n] = '\n';
		ssize_t w = write(2, line, 6 + n);
		(void)w;
	}
	return next ? next(handle, name) : NULL;
}
