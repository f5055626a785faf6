/* A malloc preloaded after libtprof.so (so the one tprof's hooks call), for the first-call test of
 * tests/integration/invisible.bats with inv_firstcall: armed, it raises SIGUSR1 at its own thread
 * before it allocates and notes whether the program's handler had run when raise returned (1) or
 * not (2). Bare, a signal raised so is delivered at once; a thread's first heap call under tprof is
 * made with signals held, so the handler runs once the call has returned. Armed with 2, it writes
 * to address 0 (spy_result is 0 then): the fault's SIGSEGV must reach the program's handler, as
 * bare. */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

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
