/* Kernel wrappers: libtprof.so exports every kernel of the op table (include/tprof_ops.h): the tnn_*
 * kernels, the BLAS (CBLAS and Fortran entry points) and a few LAPACK routines. A wrapper reads the
 * clock, calls the real function with the arguments it was given, reads the clock again and records
 * one call with its shape, FLOPs and bytes. The real function's result is returned as is; recording
 * uses integer arithmetic only and touches neither errno nor the floating-point environment. Nested
 * calls (a composite kernel calling an elementary one through its exported symbol) are recorded too:
 * the analyzer derives self time from the nesting of the intervals. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "preload.h"
#include "sys.h"
#include "tprof_ops.h"

void *_Atomic tprof_kernel_real[TPROF_NOPS];

/* ---- finding the real function ---- */

struct module_list {
	const char *name[512];
	unsigned n;
	uintptr_t skip_base; /* our own library */
};

static int collect_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct module_list *l = arg;
	if (info->dlpi_name && info->dlpi_name[0] && info->dlpi_addr != l->skip_base &&
	    l->n < sizeof(l->name) / sizeof(l->name[0]))
		l->name[l->n++] = info->dlpi_name;
	return 0;
}

/* The definition of name that object path sees in its own scope, unless it is our wrapper. */
static void *lookup_in(const char *path, const char *name, void *self)
{
	void *h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
	if (!h)
		return NULL;
	void *p = dlsym(h, name);
	if (tprof_real.dlclose)
		tprof_real.dlclose(h); /* the real one: ours would wait for the writer */
	return p == self ? NULL : p;
}

static void die_unresolved(const char *name)
{
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "tprof: no library loaded in this process defines ");
	tprof_sb_str(&s, name);
	tprof_sb_str(&s, "; cannot carry out the call\n");
	tprof_sb_emit(&s);
	abort();
}

void *tprof_resolve_real(const char *name, void *self, const void *caller)
{
	int saved = errno;
	tprof_tls.guard++;
	void *p = dlsym(RTLD_NEXT, name);
	if (p == self)
		p = NULL;
	Dl_info self_info, caller_info;
	if (!p && caller && dladdr(caller, &caller_info) && caller_info.dli_fname && caller_info.dli_fname[0] &&
	    dladdr(self, &self_info) && caller_info.dli_fbase != self_info.dli_fbase)
		p = lookup_in(caller_info.dli_fname, name, self);
	if (!p) {
		static TPROF_LARGE struct module_list l; /* no allocation; serialized by the loader lock below */
		memset(&l, 0, sizeof(l));
		if (dladdr(self, &self_info))
			l.skip_base = (uintptr_t)self_info.dli_fbase;
		dl_iterate_phdr(collect_module, &l);
		for (unsigned i = 0; i < l.n && !p; i++)
			p = lookup_in(l.name[i], name, self);
	}
	tprof_tls.guard--;
	if (!p)
		die_unresolved(name);
	errno = saved;
	return p;
}

void *tprof_kernel_resolve(unsigned op, const char *name, void *self, const void *caller)
{
	void *p = tprof_resolve_real(name, self, caller);
	atomic_store_explicit(&tprof_kernel_real[op], p, memory_order_release);
	return p;
}

void tprof_kernels_forget(void)
{
	for (unsigned i = 0; i < TPROF_NOPS; i++)
		atomic_store_explicit(&tprof_kernel_real[i], NULL, memory_order_relaxed);
}

/* ---- the wrappers, one per op table entry ---- */

/* The shape and cost of the call, then one record. Outside recording (before init, after the final
 * flush, on the writer thread) the call is only forwarded. */
#define TP_GET_REAL(NAME, PARAMS)                                                                        \
	__typeof__(NAME) *real = atomic_load_explicit(&tprof_kernel_real[TPROF_OP_##NAME], memory_order_acquire); \
	if (unlikely(!real))                                                                             \
		real = (__typeof__(NAME) *)tprof_kernel_resolve(TPROF_OP_##NAME, #NAME, (void *)NAME,     \
								__builtin_return_address(0));            \
	int rec = !tprof_tls.guard && (atomic_load_explicit(&tprof_recording, memory_order_relaxed) ||  \
				       tprof_start_recording())

#define TP_RECORD(NAME, SVALS)                                                                           \
	if (rec) {                                                                                       \
		const int64_t shape_[] = {TP_UNPAREN SVALS};                                              \
		tprof_record_kernel(TPROF_OP_##NAME, t0, t1, shape_, sizeof(shape_) / sizeof(shape_[0])); \
	}

#define TP_WRAP_V(RET, NAME, PARAMS, ARGS, SVALS)                                                        \
	TPROF_EXPORT void NAME PARAMS                                                                     \
	{                                                                                                \
		TP_GET_REAL(NAME, PARAMS);                                                               \
		uint64_t t0 = rec ? tprof_now() : 0;                                                     \
		real ARGS;                                                                               \
		uint64_t t1 = rec ? tprof_now() : 0;                                                     \
		TP_RECORD(NAME, SVALS)                                                                   \
	}

#define TP_WRAP_R(RET, NAME, PARAMS, ARGS, SVALS)                                                        \
	TPROF_EXPORT RET NAME PARAMS                                                                      \
	{                                                                                                \
		TP_GET_REAL(NAME, PARAMS);                                                               \
		uint64_t t0 = rec ? tprof_now() : 0;                                                     \
		RET ret = real ARGS;                                                                     \
		uint64_t t1 = rec ? tprof_now() : 0;                                                     \
		TP_RECORD(NAME, SVALS)                                                                   \
		return ret;                                                                              \
	}

#define TP_WRAP(RK, RET, NAME, PARAMS, ARGS, SNAMES, SVALS, ...) TP_WRAP_##RK(RET, NAME, PARAMS, ARGS, SVALS)

/* Prototypes, for -Wmissing-prototypes (the kernels' own headers are not ours to include). */
#define TP_PROTO(RK, RET, NAME, PARAMS, ...) TPROF_EXPORT RET NAME PARAMS;
TPROF_OPS(TP_PROTO)
#undef TP_PROTO

TPROF_OPS(TP_WRAP)
