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

/* The definition of name in one module's own dynamic symbols (GNU hash), or NULL: read from the
 * loaded image, with no call into the loader. dlopen(RTLD_NOLOAD) of a library that was loaded as
 * another's dependency, the way to ask the loader for the scope that library sees, makes the loader
 * build that library's dependency list: memory the program never asked for (88 bytes for LAPACK
 * under numpy), and frees of blocks whose allocation tprof hid. A function the library defines
 * (not an indirect one, not a hidden version) counts. */
static void *module_def(const struct dl_phdr_info *info, const char *name)
{
	const ElfW(Dyn) *dyn = NULL;
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
	if (!dyn)
		return NULL;
	const ElfW(Sym) *symtab = NULL;
	const char *strtab = NULL;
	const uint32_t *gnu = NULL;
	const uint16_t *versym = NULL;
	for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
		/* the loader relocates these in place where it can; a value below the load address
		 * is still the file's */
		uintptr_t a = (uintptr_t)d->d_un.d_ptr;
		if (a < info->dlpi_addr)
			a += info->dlpi_addr;
		switch (d->d_tag) {
		case DT_SYMTAB:
			symtab = (const ElfW(Sym) *)a;
			break;
		case DT_STRTAB:
			strtab = (const char *)a;
			break;
		case DT_GNU_HASH:
			gnu = (const uint32_t *)a;
			break;
		case DT_VERSYM:
			versym = (const uint16_t *)a;
			break;
		}
	}
	if (!symtab || !strtab || !gnu || !gnu[0])
		return NULL;
	uint32_t nbuckets = gnu[0], symoffset = gnu[1], bloom_size = gnu[2];
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(gnu + 4) + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t h = 5381;
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		h = h * 33 + *c;
	uint32_t i = buckets[h % nbuckets];
	if (i < symoffset)
		return NULL;
	for (;; i++) {
		uint32_t ch = chain[i - symoffset];
		const ElfW(Sym) *sym = &symtab[i];
		if ((ch | 1) == (h | 1) && sym->st_shndx != SHN_UNDEF && sym->st_value &&
		    ELF64_ST_TYPE(sym->st_info) == STT_FUNC && !(versym && (versym[i] & 0x8000)) &&
		    strcmp(strtab + sym->st_name, name) == 0)
			return (void *)(info->dlpi_addr + sym->st_value);
		if (ch & 1)
			return NULL;
	}
}

struct def_search {
	const char *name;
	const char *first; /* the module looked at before the others (the caller's), or NULL */
	uintptr_t skip_base; /* our own library */
	int pass;
	void *found;
};

static int search_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct def_search *q = arg;
	if (!info->dlpi_name || !info->dlpi_name[0] || info->dlpi_addr == q->skip_base)
		return 0;
	if (q->pass == 0 && strcmp(info->dlpi_name, q->first) != 0)
		return 0;
	q->found = module_def(info, q->name);
	return q->found != NULL;
}

/* The real definition of name: the caller's module's own first (where known), then the first module
 * in load order that defines it, ours left out. */
static void *find_def(const char *name, const char *caller_path, uintptr_t self_base)
{
	struct def_search q = {name, caller_path, self_base, caller_path ? 0 : 1, NULL};
	for (; q.pass < 2 && !q.found; q.pass++)
		dl_iterate_phdr(search_module, &q);
	return q.found;
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
	if (!p && dladdr(self, &self_info)) {
		const char *cp = caller && dladdr(caller, &caller_info) && caller_info.dli_fname &&
					 caller_info.dli_fname[0] && caller_info.dli_fbase != self_info.dli_fbase
				 ? caller_info.dli_fname
				 : NULL;
		p = find_def(name, cp, (uintptr_t)self_info.dli_fbase);
		if (p == self)
			p = NULL;
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
