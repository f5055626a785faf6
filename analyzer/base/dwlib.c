/* Loads libdw, libelf and libstdc++'s demangler on first need (base/dwlib.h says why): by their
 * sonames, the versions the build was made against, each function looked up once. */
#define TPROF_DWLIB_IMPL
#include "base/dwlib.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

struct tprof_dwlib tprof_dwlib;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded; /* 1: every function found */
static char why_buf[256];

static int resolve(void *lib, const char *name, void **out)
{
	*out = lib ? dlsym(lib, name) : NULL;
	if (!*out && !why_buf[0])
		snprintf(why_buf, sizeof(why_buf), "%s not found in elfutils' libdw or libelf (%s)", name,
			 lib ? "the installed version is too old" : "is libdw1 installed?");
	return *out != NULL;
}

static void load(void)
{
	void *dw = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	void *elf = dlopen("libelf.so.1", RTLD_NOW | RTLD_LOCAL);
	int ok = 1;
#define TPROF_DWLIB_RESOLVE(f) ok &= resolve(dw, #f, (void **)&tprof_dwlib.f);
	TPROF_DWLIB_DW(TPROF_DWLIB_RESOLVE)
#undef TPROF_DWLIB_RESOLVE
#define TPROF_DWLIB_RESOLVE(f) ok &= resolve(elf, #f, (void **)&tprof_dwlib.f);
	TPROF_DWLIB_ELF(TPROF_DWLIB_RESOLVE)
#undef TPROF_DWLIB_RESOLVE
	void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	tprof_dwlib.cxa_demangle = cxx ? (__typeof__(__cxa_demangle) *)dlsym(cxx, "__cxa_demangle") : NULL;
	loaded = ok;
}

int tprof_dwlib_load(const char **why)
{
	pthread_once(&once, load);
	if (!loaded && why)
		*why = why_buf;
	return loaded ? 0 : -1;
}
