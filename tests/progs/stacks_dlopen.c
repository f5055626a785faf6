/* Loads the plugin named by argv[1] (build/progs/libstacks_plugin.so, from mk/stacks.mk) with
 * dlopen, calls its plugin_leak(3), then closes it again unless argv[2] is "keep". The plugin
 * leaks from its constructor (which the loader runs) and from plugin_leak: tprof leaks must name
 * both at their lines even after the plugin was unloaded, and the built-in suppressions, which hide
 * the loader's own allocations, must hide neither. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: stacks_dlopen PLUGIN.so [keep]\n");
		return 2;
	}
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "stacks_dlopen: %s\n", dlerror());
		return 1;
	}
	void (*leak)(int) = (void (*)(int))dlsym(h, "plugin_leak");
	if (!leak) {
		fprintf(stderr, "stacks_dlopen: %s\n", dlerror());
		return 1;
	}
	leak(3);
	if (argc < 3 || strcmp(argv[2], "keep") != 0)
		dlclose(h);
	return 0;
}
