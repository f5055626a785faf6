/* The allocator reached through the dynamic loader's look-ups rather than a reference: dlsym in the
 * C library's handle (as Python's ctypes.CDLL("libc.so.6").malloc does), dlsym in the program's
 * own handle (dlopen(NULL)), and dlvsym of the C library's version with RTLD_NEXT (a program's own
 * wrapper finding the next malloc). Each way allocates, frees one block and keeps two (one reachable
 * from a global, one lost), through every heap function it looked up. The totals must equal valgrind
 * memcheck's, which replaces the allocator itself. Then looks up strlen through the C library's
 * handle and through RTLD_DEFAULT. Prints "done". */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *kept[16];
static int nkept;

typedef void *(*malloc_fn)(size_t);
typedef void (*free_fn)(void *);
typedef void *(*calloc_fn)(size_t, size_t);
typedef void *(*realloc_fn)(void *, size_t);
typedef void *(*reallocarray_fn)(void *, size_t, size_t);
typedef int (*posix_memalign_fn)(void **, size_t, size_t);
typedef void *(*aligned_alloc_fn)(size_t, size_t);
typedef void *(*memalign_fn)(size_t, size_t);
typedef void *(*valloc_fn)(size_t);

/* A look-up, through get, of every heap function, then calls through them */
static int exercise(void *(*get)(void *, const char *, const char *), void *h, size_t base)
{
	malloc_fn m = (malloc_fn)get(h, "malloc", "GLIBC_2.2.5");
	free_fn f = (free_fn)get(h, "free", "GLIBC_2.2.5");
	calloc_fn c = (calloc_fn)get(h, "calloc", "GLIBC_2.2.5");
	realloc_fn r = (realloc_fn)get(h, "realloc", "GLIBC_2.2.5");
	reallocarray_fn ra = (reallocarray_fn)get(h, "reallocarray", "GLIBC_2.26");
	posix_memalign_fn pm = (posix_memalign_fn)get(h, "posix_memalign", "GLIBC_2.2.5");
	aligned_alloc_fn aa = (aligned_alloc_fn)get(h, "aligned_alloc", "GLIBC_2.16");
	memalign_fn ma = (memalign_fn)get(h, "memalign", "GLIBC_2.2.5");
	valloc_fn va = (valloc_fn)get(h, "valloc", "GLIBC_2.2.5");
	if (!m || !f || !c || !r || !ra || !pm || !aa || !ma || !va)
		return -1;
	f(m(base + 1));
	void *p = c(3, base + 2);
	p = r(p, base + 300);
	p = ra(p, 2, base + 400);
	f(p);
	void *q = NULL;
	if (pm(&q, 64, base + 5) != 0)
		return -1;
	f(q);
	f(aa(128, 256 + base));
	f(ma(64, base + 7));
	f(va(base + 8));
	kept[nkept++] = m(base + 9); /* still reachable */
	(void)m(base + 10);          /* definitely lost */
	return 0;
}

static void *by_dlsym(void *h, const char *name, const char *ver)
{
	(void)ver;
	return dlsym(h, name);
}

static void *by_dlvsym(void *h, const char *name, const char *ver)
{
	return dlvsym(h, name, ver);
}

int main(void)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	void *self = dlopen(NULL, RTLD_NOW);
	if (!libc || !self || exercise(by_dlsym, libc, 1000) != 0 || exercise(by_dlsym, self, 2000) != 0 ||
	    exercise(by_dlvsym, RTLD_NEXT, 3000) != 0) {
		printf("a look-up failed: %s\n", dlerror());
		return 1;
	}
	/* a name not the allocator's, through the handle and through RTLD_DEFAULT */
	if (!dlsym(libc, "strlen") || !dlsym(RTLD_DEFAULT, "strlen")) {
		printf("a look-up failed: %s\n", dlerror());
		return 1;
	}
	dlclose(self);
	dlclose(libc);
	printf("done\n");
	return 0;
}
