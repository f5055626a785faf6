/* Fork children whose first heap call comes at different points of the parent's loading of shared
 * libraries, for the module list each child's trace must hold (lifecycle.bats): the modules the
 * child has at its first heap call, whether it copied them from what its parent saw at the fork or
 * scanned them itself. Each child prints "child NAME" and then its modules as the loader lists them
 * (address and path), which the test compares with its trace:
 *   a  forked before the parent loads argv[1]; allocates at once
 *   b  forked after the parent loaded argv[1]; allocates at once, then through the plugin
 *   c  forked after; loads libm first, then allocates
 *   d  forked after the parent unloaded argv[1] again; allocates at once */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int list_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (info->dlpi_phnum)
		printf("module %#lx %s\n", (unsigned long)info->dlpi_addr, info->dlpi_name ? info->dlpi_name : "");
	return 0;
}

static void child(const char *name, void *plugin, const char *first_load)
{
	if (first_load && !dlopen(first_load, RTLD_NOW))
		_exit(3);
	void *volatile p = malloc(64);
	free(p);
	if (plugin) {
		void (*leak)(int) = (void (*)(int))dlsym(plugin, "plugin_leak");
		if (!leak)
			_exit(4);
		leak(1);
	}
	printf("child %s %d\n", name, (int)getpid());
	dl_iterate_phdr(list_cb, NULL);
	fflush(stdout);
	_exit(0);
}

static int run(const char *name, void *plugin, const char *first_load)
{
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		child(name, plugin, first_load);
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: fork_modules PLUGIN.so\n");
		return 2;
	}
	void *volatile q = malloc(32); /* the parent registers first */
	free(q);
	int bad = run("a", NULL, NULL);
	void *h = dlopen(argv[1], RTLD_NOW);
	if (!h)
		return 1;
	bad |= run("b", h, NULL);
	bad |= run("c", NULL, "libm.so.6");
	dlclose(h);
	bad |= run("d", NULL, NULL);
	return bad;
}
