/* A malloc preloaded after libtprof.so (so the one tprof's hooks call), for the first-call tests of
 * tests/integration/invisible.bats with inv_firstcall: armed, it raises SIGUSR1 at its own thread
 * before it allocates and notes whether the program's handler had run when raise returned (1) or
 * not (2). Bare, a signal raised so is delivered at once; the first heap call of a process with one
 * thread is made under tprof with signals held, so the handler runs once the call has returned.
 * Armed with 2, it writes to address 0 (spy_result is 0 then): the fault's SIGSEGV must reach the
 * program's handler, as bare. Its calloc is malloc and memset, through the global scope (so a hook
 * of tprof's runs inside another's real call), as some allocators' are. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

extern void *__libc_malloc(size_t size);

volatile int spy_arm, spy_handled, spy_result;

void *malloc(size_t size)
{
	if (spy_arm == 2) { /* a fault of its own: the program's SIGSEGV handler must run */
		spy_arm = 0;
		*(volatile int *)(uintptr_t)spy_result = 1;
	}
	if (spy_arm) {
		spy_arm = 0;
		int before = spy_handled;
		raise(SIGUSR1);
		spy_result = spy_handled != before ? 1 : 2;
	}
	return __libc_malloc(size);
}

void *calloc(size_t n, size_t size)
{
	size_t bytes;
	if (__builtin_mul_overflow(n, size, &bytes))
		return NULL;
	void *p = malloc(bytes);
	if (p)
		memset(p, 0, bytes);
	return p;
}
