/* An audit module (LD_AUDIT) that binds every symbol as it is, for tests/integration/lifecycle.bats.
 * With it the dynamic loader allocates with its own minimal allocator for longer, which changes what
 * the C library's __libc_freeres may free at exit; and, for its PLT bindings (la_symbind64), it
 * relocates libraries late, making its first heap call through libtprof.so's hooks before the C
 * library has set environ. */
#define _GNU_SOURCE
#include <link.h>
#include <stdint.h>

unsigned la_version(unsigned v);
uintptr_t la_symbind64(Elf64_Sym *sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook, unsigned *flags,
		       const char *name);

unsigned la_version(unsigned v)
{
	(void)v;
	return LAV_CURRENT;
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned ndx, uintptr_t *refcook, uintptr_t *defcook, unsigned *flags,
		       const char *name)
{
	(void)ndx, (void)refcook, (void)defcook, (void)flags, (void)name;
	return sym->st_value;
}
