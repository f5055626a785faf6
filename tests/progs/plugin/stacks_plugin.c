/* The shared library that tests/progs/stacks_dlopen.c loads (built by mk/stacks.mk into
 * build/progs/libstacks_plugin.so). It leaks 64 bytes from its constructor, which runs inside the
 * loader's dlopen, and 3 x 48 bytes from plugin_leak; the lines are marked LEAK:<function>. */
#include <stdlib.h>

void plugin_leak(int n);

static void *ctor_block;

__attribute__((constructor)) static void plugin_ctor(void)
{
	ctor_block = malloc(64); /* LEAK:plugin_ctor */
}

void plugin_leak(int n)
{
	for (int i = 0; i < n; i++) {
		char *p = malloc(48); /* LEAK:plugin_leak */
		p[0] = (char)i;
	}
}
