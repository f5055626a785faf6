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

/* The definition of name in one module's own dynamic symbols (GNU hash, else the sysv hash's symbol
 * count), or NULL: read from the loaded image, with no call into the loader. dlopen(RTLD_NOLOAD)
 * of a library that was loaded as another's dependency, the way to ask the loader for the scope
 * that library sees, makes the loader build that library's dependency list: memory the program
 * never asked for (88 bytes for LAPACK under numpy), and frees of blocks whose allocation tprof
 * hid. A function, or an untyped symbol, the library defines counts (not a hidden version); an
 * indirect function's resolver is run, as the loader would, on x86-64 only (elsewhere it takes
 * arguments: such a symbol is left to the loader, below). */
struct elf_view {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gnu, *sysv;
	const uint16_t *versym;
	const ElfW(Dyn) *dyn;
};

/* v from a module's dynamic section, its mappings' span [lo, hi) and its load bias. */
TPROF_STARTUP static int elf_view_dyn(const ElfW(Dyn) *dyn, uintptr_t lo, uintptr_t hi, uintptr_t bias, struct elf_view *v)
{
	memset(v, 0, sizeof(*v));
	v->dyn = dyn;
	if (!v->dyn)
		return -1;
	for (const ElfW(Dyn) *d = v->dyn; d->d_tag != DT_NULL; d++) {
		/* the loader relocates these in place where it can (not the vdso's): a value outside
		 * the module's mappings is still the file's */
		uintptr_t a = (uintptr_t)d->d_un.d_ptr;
		if (a < lo || a >= hi)
			a += bias;
		switch (d->d_tag) {
		case DT_SYMTAB:
			v->symtab = (const ElfW(Sym) *)a;
			break;
		case DT_STRTAB:
			v->strtab = (const char *)a;
			break;
		case DT_GNU_HASH:
			v->gnu = (const uint32_t *)a;
			break;
		case DT_HASH:
			v->sysv = (const uint32_t *)a;
			break;
		case DT_VERSYM:
			v->versym = (const uint16_t *)a;
			break;
		}
	}
	return v->symtab && v->strtab && ((v->gnu && v->gnu[0]) || v->sysv) ? 0 : -1;
}

static int elf_view(const struct dl_phdr_info *info, struct elf_view *v)
{
	const ElfW(Dyn) *dyn = NULL;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_DYNAMIC)
			dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
		else if (ph->p_type == PT_LOAD) {
			uintptr_t a = info->dlpi_addr + ph->p_vaddr;
			lo = a < lo ? a : lo;
			hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
		}
	}
	return elf_view_dyn(dyn, lo, hi, info->dlpi_addr, v);
}

/* symbol i of v if it is name's definition, else NULL; *ifunc set when it is an indirect function
 * this platform's resolver convention is not known for */
static void *elf_match(const struct dl_phdr_info *info, const struct elf_view *v, uint32_t i, const char *name,
		       int *ifunc)
{
	const ElfW(Sym) *sym = &v->symtab[i];
	unsigned type = ELF64_ST_TYPE(sym->st_info);
	if (sym->st_shndx == SHN_UNDEF || !sym->st_value || (v->versym && (v->versym[i] & 0x8000)) ||
	    (type != STT_FUNC && type != STT_NOTYPE && type != STT_GNU_IFUNC) || strcmp(v->strtab + sym->st_name, name))
		return NULL;
	uintptr_t a = sym->st_shndx == SHN_ABS ? (uintptr_t)sym->st_value : info->dlpi_addr + sym->st_value;
	if (type == STT_GNU_IFUNC) {
#if defined(__x86_64__)
		(void)ifunc;
		return ((void *(*)(void))a)();
#else
		*ifunc = 1;
		return NULL;
#endif
	}
	return (void *)a;
}

/* A lookup of name in one module's view (info: its load bias, for elf_match). */
struct sym_probe {
	const struct dl_phdr_info *info;
	const struct elf_view *v;
	const char *name;
	int *ifunc;
};

static void *probe_def(const struct sym_probe *q, uint32_t i)
{
	return elf_match(q->info, q->v, i, q->name, q->ifunc);
}

/* The first symbol i of the module, among those name hashes to (GNU hash; else every symbol, the
 * sysv hash's chain count being the symbol count), for which found(i) is not NULL: that answer, or
 * NULL. */
TPROF_STARTUP static void *sym_walk(const struct sym_probe *q, void *(*found)(const struct sym_probe *, uint32_t))
{
	const struct elf_view *v = q->v;
	if (!v->gnu || !v->gnu[0]) {
		for (uint32_t i = 1; i < v->sysv[1]; i++) {
			void *p = found(q, i);
			if (p)
				return p;
		}
		return NULL;
	}
	uint32_t nbuckets = v->gnu[0], symoffset = v->gnu[1], bloom_size = v->gnu[2];
	const uint32_t *buckets = (const uint32_t *)((const ElfW(Addr) *)(v->gnu + 4) + bloom_size);
	const uint32_t *chain = buckets + nbuckets;
	uint32_t h = 5381;
	for (const unsigned char *c = (const unsigned char *)q->name; *c; c++)
		h = h * 33 + *c;
	uint32_t i = buckets[h % nbuckets];
	if (i < symoffset)
		return NULL;
	for (;; i++) {
		uint32_t ch = chain[i - symoffset];
		if ((ch | 1) == (h | 1)) {
			void *p = found(q, i);
			if (p)
				return p;
		}
		if (ch & 1)
			return NULL;
	}
}

/* name's definition in the module (see struct elf_view), or NULL */
static void *module_def(const struct dl_phdr_info *info, const char *name, int *ifunc)
{
	struct elf_view v;
	if (elf_view(info, &v) != 0)
		return NULL;
	struct sym_probe q = {info, &v, name, ifunc};
	return sym_walk(&q, probe_def);
}

/* name's own definition (a function of the default version), its symbol */
TPROF_STARTUP static void *probe_sym(const struct sym_probe *q, uint32_t i)
{
	const ElfW(Sym) *sym = &q->v->symtab[i];
	return sym->st_shndx != SHN_UNDEF && sym->st_value && !(q->v->versym && (q->v->versym[i] & 0x8000)) &&
		       ELF64_ST_TYPE(sym->st_info) == STT_FUNC && strcmp(q->v->strtab + sym->st_name, q->name) == 0
		       ? (void *)sym
		       : NULL;
}

TPROF_STARTUP int tprof_function_bounds(const void *in, const char *name, uintptr_t *lo, uintptr_t *hi)
{
	struct dl_find_object fo;
	struct elf_view v;
	if (_dl_find_object((void *)in, &fo) != 0 || !fo.dlfo_link_map ||
	    elf_view_dyn(fo.dlfo_link_map->l_ld, (uintptr_t)fo.dlfo_map_start, (uintptr_t)fo.dlfo_map_end,
			 fo.dlfo_link_map->l_addr, &v) != 0)
		return -1;
	struct dl_phdr_info info = {.dlpi_addr = fo.dlfo_link_map->l_addr};
	struct sym_probe q = {&info, &v, name, NULL};
	const ElfW(Sym) *sym = sym_walk(&q, probe_sym);
	if (!sym || !sym->st_size)
		return -1;
	*lo = fo.dlfo_link_map->l_addr + sym->st_value;
	*hi = *lo + sym->st_size;
	return 0;
}

/* The sonames a module needs (DT_NEEDED), at most TPROF_NEEDED of them. */
#define TPROF_NEEDED 32
struct def_search {
	const char *name;
	const void *caller; /* an address in the caller's module, or NULL */
	const void *self;   /* our wrapper: never the answer */
	const char *needed[TPROF_NEEDED];
	unsigned nneeded;
	int pass; /* 0: find the caller's needed list; 1: those modules; 2: every module */
	int main_too; /* the executable counts too (else its entry, the one without a name, is passed) */
	int ifunc;
	void *found;
};

static int contains(const struct dl_phdr_info *info, const void *addr)
{
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (uintptr_t)addr >= a && (uintptr_t)addr < a + ph->p_memsz)
			return 1;
	}
	return 0;
}

static int search_module(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct def_search *q = arg;
	if (q->pass == 0) { /* the caller's module: the sonames it needs, in its order */
		struct elf_view v;
		if (!contains(info, q->caller) || elf_view(info, &v) != 0)
			return 0;
		for (const ElfW(Dyn) *d = v.dyn; d->d_tag != DT_NULL && q->nneeded < TPROF_NEEDED; d++)
			if (d->d_tag == DT_NEEDED)
				q->needed[q->nneeded++] = v.strtab + d->d_un.d_val;
		return 1;
	}
	if (!info->dlpi_name || (!info->dlpi_name[0] && !q->main_too) || contains(info, q->self))
		return 0;
	if (q->pass == 1) { /* a module the caller needs, by its file name */
		const char *base = strrchr(info->dlpi_name, '/');
		base = base ? base + 1 : info->dlpi_name;
		unsigned k = 0;
		while (k < q->nneeded && strcmp(q->needed[k], base) != 0)
			k++;
		if (k == q->nneeded)
			return 0;
	}
	q->found = module_def(info, q->name, &q->ifunc);
	return q->found != NULL && q->found != q->self;
}

/* The real definition of name: in the modules the caller needs (where the caller is known), then in
 * the first module in load order that defines it, ours left out; NULL when there is none, or when
 * only an indirect function could be (*ifunc). */
static void *find_def(const char *name, const void *caller, const void *self, int main_too, int *ifunc)
{
	struct def_search q = {.name = name, .caller = caller, .self = self, .pass = caller ? 0 : 2, .main_too = main_too};
	for (; q.pass < 3 && (!q.found || q.found == self); q.pass++) {
		q.found = NULL;
		dl_iterate_phdr(search_module, &q); /* pass 0 only fills needed */
	}
	*ifunc = q.ifunc;
	return q.found == self ? NULL : q.found;
}

/* The first definition of name in load order, the executable's included, read from the loaded
 * images: no call into the loader, whose dlsym takes (and frees) the calling thread's pending
 * dlerror() message; NULL when none. */
void *tprof_find_symbol(const char *name)
{
	int ifunc = 0;
	return find_def(name, NULL, NULL, 1, &ifunc);
}

/* The executable's entry, and whether addr lies in it (the first module dl_iterate_phdr reports). */
struct exe_probe {
	const void *addr;
	const char *name;
	int in_exe, defines;
};

static int probe_exe(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	struct exe_probe *q = arg;
	q->in_exe = contains(info, q->addr);
	if (q->in_exe)
		q->defines = module_def(info, q->name, &(int){0}) != NULL;
	return 1; /* the first is the executable: no other */
}

/* addr is name's address as dlsym found it. An executable that takes the address of a function it
 * does not define (one not position-independent does, with a non-zero value for the undefined
 * symbol) has its PLT entry made the function's address for the whole process, and that is what
 * dlsym returns; the calls reach the first definition of the other modules, which is returned
 * instead. Else addr. */
void *tprof_past_plt_entry(void *addr, const char *name)
{
	struct exe_probe q = {addr, name, 0, 0};
	if (!addr)
		return addr;
	dl_iterate_phdr(probe_exe, &q);
	if (!q.in_exe || q.defines)
		return addr;
	int ifunc = 0;
	return find_def(name, NULL, NULL, 0, &ifunc);
}

/* A lookup of the loader's that failed leaves its error for dlerror(), in blocks allocated under the
 * guard, which the program's next dl call or __libc_freeres would free where the trace sees it:
 * taken back at once, under the guard too (dlerror() twice: the message, then nothing left). Only
 * when the modules' own tables had no answer (find_def first): the lookup has already taken any
 * message the thread had pending. */
static void forget_dl_error(void)
{
	dlerror();
	dlerror();
}

/* The definition of name that object path sees in its own scope, unless it is our wrapper: asked of
 * the loader, for what find_def cannot read (an indirect function elsewhere than on x86-64). */
static void *lookup_in(const char *path, const char *name, void *self)
{
	void *h = dlopen(path, RTLD_NOLOAD | RTLD_LAZY);
	if (!h) {
		forget_dl_error();
		return NULL;
	}
	void *p = tprof_dlsym(h, name);
	if (!p)
		forget_dl_error();
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
	/* the modules' own symbol tables first: asking the loader (dlsym) would take the calling
	 * thread's pending dlerror() message, and leave one of its own when it fails */
	int ifunc = 0;
	void *p = find_def(name, caller, self, 0, &ifunc);
	if (!p) {
		p = tprof_dlsym(RTLD_NEXT, name);
		if (!p)
			forget_dl_error();
		if (p == self)
			p = NULL;
	}
	Dl_info caller_info;
	if (!p && ifunc && caller && dladdr(caller, &caller_info) && caller_info.dli_fname &&
	    caller_info.dli_fname[0])
		p = lookup_in(caller_info.dli_fname, name, self);
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
		real = (__typeof__(NAME) *)tprof_kernel_resolve(TPROF_OP_##NAME, #NAME, (void *)tp_self_##NAME, \
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

/* Prototypes, for -Wmissing-prototypes (the kernels' own headers are not ours to include), and each
 * wrapper's own address under a hidden name: the exported name's address would be read from a
 * table the loader fills by looking each name up, 140 lookups at the start of every process (and
 * another module's definition of the name would stand in for ours). */
#define TP_PROTO(RK, RET, NAME, PARAMS, ...)  \
	TPROF_EXPORT RET NAME PARAMS;        \
	extern __typeof__(NAME) tp_self_##NAME __attribute__((alias(#NAME), visibility("hidden")));
TPROF_OPS(TP_PROTO)
#undef TP_PROTO

TPROF_OPS(TP_WRAP)
