/* The functions libtprof.so exports and the traced program calls instead of the C library's: the
 * malloc family, the ways out (_exit, _Exit, quick_exit; exit, whose status is seen through
 * on_exit, for a signal handler's exit inside a hook and an exit before tprof's constructor;
 * daemon, whose parent leaves through the _exit hook),
 * sigaltstack (where a handler's stack is: tprof_crit_left), dl_iterate_phdr (which hides this
 * library from AddressSanitizer's start-up check), the exec family, dlopen/dlclose (the
 * module table), pipe2, read, write and syscall, which answer libunwind's memory validation without a pipe and pass every other call through, prctl and syscall again,
 * which notice a seccomp filter the program installs and a call that turns the TSC off (PR_SET_TSC,
 * strict mode), and mlockall/munlockall, which tell how tprof
 * must map its memory. Each heap hook is thin:
 * forward to the real function, record one event through preload.h, leave errno as the real
 * function left it. Nested calls: tprof's own pass straight through (the guard), a signal
 * handler's are recorded, or deferred while the stack capture or ring write runs (see enter()). */
#include <dlfcn.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <malloc.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"
#include "sys.h"
#include "unwind.h"

extern char **environ;

/* A sanitizer's runtime (AddressSanitizer's libasan, ThreadSanitizer's libtsan, ...: loaded after
 * libtprof.so) initializes itself from the executable's preinit array, before any library's
 * constructor; ASan checks there that it comes first among the libraries, which tprof's answer to
 * its options (below) turns off. While it initializes, its interceptors of C library functions
 * (pthread_sigmask, dl_iterate_phdr, ...) have no real function behind them yet, and tprof's code,
 * which calls them, would crash: until tprof's constructor runs, the heap calls of a process with
 * such a runtime in it are served from the bootstrap pool, unrecorded (docs/LEAKS.md says so). */
static inline int sanitizer_starting(void)
{
	return tprof_sanitizer_present() && !atomic_load_explicit(&tprof_constructed, memory_order_acquire);
}

/* Read by ASan at start-up when the executable does not define it: its check that libasan is the
 * first library loaded would end a program run with LD_PRELOAD=libtprof.so (ASan's allocator is
 * then the one tprof's hooks call). The only symbol exported that wraps nothing. */
TPROF_EXPORT const char *__asan_default_options(void);
TPROF_EXPORT const char *__asan_default_options(void)
{
	return "verify_asan_link_order=0";
}

/* GCC's AddressSanitizer runtime (libasan.so, a shared library) also ends a program at start unless
 * it is the first library dl_iterate_phdr lists; the option above turns that check off, but an
 * executable that defines __asan_default_options itself hides tprof's. So the runtime's own calls
 * made before tprof's constructor has run (its check is one: it runs from the executable's
 * preinit array) get a list without this library; every other call goes straight to the C
 * library's (the constructors of the program's libraries, which also run before tprof's, see it). */
typedef int (*phdr_callback)(struct dl_phdr_info *, size_t, void *);
struct phdr_skip {
	phdr_callback cb;
	void *data;
};

static int phdr_skip_self(struct dl_phdr_info *info, size_t size, void *data)
{
	const struct phdr_skip *s = data;
	if (info->dlpi_addr == (uintptr_t)__ehdr_start)
		return 0;
	return s->cb(info, size, s->data);
}

/* Whether code lies in AddressSanitizer's runtime (GCC's libasan, or clang's as a shared library):
 * its module's name, through the loader (the C library's string functions are the sanitizer's
 * interceptors, not ready at start). */
static int asan_runtime_code(const void *pc)
{
	struct dl_find_object fo;
	const char *f = _dl_find_object((void *)pc, &fo) == 0 && fo.dlfo_link_map ? fo.dlfo_link_map->l_name : NULL;
	return f && (tprof_has_text(f, "libasan") || tprof_has_text(f, "clang_rt.asan"));
}

TPROF_EXPORT int dl_iterate_phdr(phdr_callback cb, void *data)
{
	/* resolved with the others (tprof_init); a call before that, at start-up, looks it up itself
	 * (later, dlsym could wait for a dlopen running constructors on another thread) */
	int (*fn)(phdr_callback, void *) = tprof_real.dl_iterate_phdr;
	if (unlikely(!fn) && !(fn = (int (*)(phdr_callback, void *))tprof_dlsym(RTLD_NEXT, "dl_iterate_phdr")))
		return 0;
	if (unlikely(sanitizer_starting()) && asan_runtime_code(__builtin_return_address(0))) {
		struct phdr_skip s = {cb, data};
		return fn(phdr_skip_self, &s);
	}
	return fn(cb, data);
}

/* Until tprof_init has resolved the real functions, allocations come from the bootstrap pool. A fork
 * child's first hook makes it forget its parent's registration (tprof_alive). */
static inline int ready(void)
{
	if (likely(atomic_load_explicit(&tprof_ready, memory_order_acquire))) {
		tprof_alive_check();
		return 1;
	}
	if (sanitizer_starting())
		return 0;
	tprof_init();
	return atomic_load_explicit(&tprof_ready, memory_order_acquire);
}

/* A heap hook marks its thread as inside a heap call for its whole length (the recorder reads the
 * mark when the process is gone: a call the end interrupted never returned to the program; a call
 * a signal handler made meanwhile, deferred, had returned, and is lost: core.c). The thread
 * gets its slot before the real call, so the mark covers it. errno: stack capture may set it
 * (libunwind reads memory through system calls), so each hook puts back what the real call left.
 * A hook holds no guard around the real call: a signal handler that interrupts it and calls the
 * heap is a call of the program, recorded like any other (tprof's own code, which may allocate,
 * holds tprof_tls.guard; its stack capture and ring write, which are not reentrant, hold
 * tprof_tls.crit, and a heap call made meanwhile is deferred: see nested()). */
struct hook_state {
	struct tprof_thread *t;
	uint32_t inflight; /* the mark as it was: a hook interrupted by a handler's heap call */
	int kept;          /* a first hook of a lone thread: its real call runs with signals held */
};

static inline struct hook_state enter(void)
{
	struct hook_state h = {tprof_tls.thread, 0, 0};
	if (unlikely(!h.t))
		h.t = tprof_thread_attach_kept(&h.kept);
	if (likely(h.t != NULL)) {
		h.inflight = atomic_load_explicit(&h.t->slot->inflight, memory_order_relaxed);
		atomic_store_explicit(&h.t->slot->inflight, 1, memory_order_relaxed);
	}
	return h;
}

static inline void leave(struct hook_state h)
{
	if (likely(h.t != NULL))
		atomic_store_explicit(&h.t->slot->inflight, h.inflight, memory_order_release);
	tprof_tls.frame = NULL; /* none: a hook a handler's hook interrupted is not checked again */
	if (unlikely(h.kept))
		tprof_signals_release();
}

/* A free's event is in the ring before the real free runs: a process that ends from then on (a
 * thread still in the real free as another calls exit) has the call in its trace, and the mark
 * says so (2), unless this hook interrupted one whose event is not in the ring yet (1 stays). */
static inline void recorded(struct hook_state h)
{
	if (likely(h.t != NULL))
		atomic_store_explicit(&h.t->slot->inflight, h.inflight == 1 ? 1u : 2u, memory_order_release);
}

/* Each hook's frame holds a word with the number of the hook's call on this thread, written first
 * thing; ENTER makes it the thread's mark (tprof_tls.frame) until LEAVE clears it, by which a heap
 * call made while crit is held tells a handler's call inside the hook from the program's after a
 * handler left the hook by siglongjmp (tprof_crit_left). A handler's own hook clears it too: the
 * hook it interrupted is not checked from then on (never taken for gone while it runs). */
#define FRAME() volatile uint32_t canary_ = tprof_tls.nonce + 1
#define ENTER()                                                                                    \
	struct hook_state self_ = enter();                                                         \
	tprof_tls.nonce = canary_;                                                                 \
	tprof_tls.frame = &canary_
#define LEAVE() leave(self_)

/* A call to pass on without the usual recording: tprof's own (guard), or a signal handler's made
 * during a stack capture or ring write (crit), which is deferred, unless the hook that holds crit
 * is gone. */
static inline int nested_call(const volatile uint32_t *mine)
{
	if (likely(!(tprof_tls.guard | tprof_tls.crit)))
		return 0;
	if (tprof_tls.guard) {
		if (unlikely(tprof_tls.strict))
			tprof_lost_no_ring(); /* a heap call of a thread in strict mode: not recorded */
		return 1;
	}
	return !tprof_crit_left(mine);
}
#define nested() unlikely(nested_call(&canary_))

/* The deferred record of a nested allocation (not tprof's own), errno kept. */
static inline void defer_alloc(unsigned kind, uint64_t size, const void *p)
{
	if (!tprof_tls.guard) {
		int e = errno;
		tprof_defer(kind, size, p, NULL, 0, 0);
		errno = e;
	}
}

TPROF_EXPORT void *malloc(size_t size)
{
	FRAME();
	if (unlikely(!ready()))
		return tprof_boot_alloc(size, 16);
	if (nested()) {
		void *p = tprof_real.malloc(size);
		defer_alloc(TPROF_EV_MALLOC, size, p);
		return p;
	}
	ENTER();
	void *p = tprof_real.malloc(size);
	int e = errno;
	tprof_record(TPROF_EV_MALLOC, size, p, 1);
	LEAVE();
	errno = e;
	return p;
}

TPROF_EXPORT void free(void *ptr)
{
	FRAME();
	if (unlikely(tprof_boot_owns(ptr)))
		return;
	if (unlikely(!ready()))
		return; /* cannot happen for a block we handed out: leak rather than guess */
	if (nested()) {
		if (!tprof_tls.guard)
			tprof_defer(TPROF_EV_FREE, 0, ptr, NULL, 0, 0); /* numbered before the real free */
		tprof_real.free(ptr);
		return;
	}
	ENTER();
	tprof_record(TPROF_EV_FREE, 0, ptr, 0); /* before the real free: the address may be reused at once */
	recorded(self_);
	tprof_real.free(ptr);
	LEAVE();
}

TPROF_EXPORT void *calloc(size_t nmemb, size_t size)
{
	FRAME();
	size_t bytes;
	int overflow = __builtin_mul_overflow(nmemb, size, &bytes);
	if (unlikely(!ready()))
		return overflow ? NULL : tprof_boot_alloc(bytes, 16);
	if (nested()) {
		void *p = tprof_real.calloc(nmemb, size);
		defer_alloc(TPROF_EV_CALLOC, overflow ? 0 : bytes, p);
		return p;
	}
	ENTER();
	void *p = tprof_real.calloc(nmemb, size);
	int e = errno;
	tprof_record(TPROF_EV_CALLOC, overflow ? 0 : bytes, p, 1);
	LEAVE();
	errno = e;
	return p;
}

/* reallocarray is realloc after an overflow check, done here: the C library's own reallocarray
 * calls realloc through its public symbol, which would come back into a hook as a second call. */
static inline void *call_realloc(unsigned kind, void *ptr, size_t size, size_t nmemb, size_t elem)
{
	size_t bytes;
	if (kind != TPROF_EV_REALLOC && __builtin_mul_overflow(nmemb, elem, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return tprof_real.realloc(ptr, size);
}

/* Shared by realloc and reallocarray: the old block's release is ordered before the call, the new
 * block after it, so no other thread's reuse of either address can be misordered. */
static void *realloc_common(unsigned kind, void *ptr, size_t size, size_t nmemb, size_t elem)
{
	FRAME();
	if (unlikely(tprof_boot_owns(ptr))) {
		size_t old = tprof_boot_size(ptr);
		void *p = malloc(size);
		if (p)
			memcpy(p, ptr, old < size ? old : size);
		return p;
	}
	if (unlikely(!ready()))
		return ptr ? NULL : tprof_boot_alloc(size, 16);
	if (nested()) {
		if (tprof_tls.guard || !tprof_shm)
			return call_realloc(kind, ptr, size, nmemb, elem);
		/* a handler's realloc inside a critical part: a handler interrupting it from its number on
		 * would be numbered inside the pair and listed before it, so crit is 2 meanwhile (its
		 * calls counted lost), and a number taken as one was listed is taken again */
		int crit = tprof_tls.crit;
		uint64_t seq;
		for (;;) {
			uint32_t listed = tprof_tls.defer_head;
			seq = atomic_fetch_add_explicit(&tprof_shm->seq, 1, memory_order_seq_cst);
			tprof_tls.crit = 2;
			if (likely(tprof_tls.defer_head == listed))
				break;
			tprof_tls.crit = crit;
		}
		uint64_t tick = tprof_now();
		void *p = call_realloc(kind, ptr, size, nmemb, elem);
		int e = errno;
		tprof_tls.crit = crit;
		tprof_defer(kind, size, p, ptr, seq, tick);
		errno = e;
		return p;
	}
	ENTER();
	struct tprof_thread *t = NULL;
	uint64_t seq = 0, tick = 0;
	uint32_t stack = 0;
	if (atomic_load_explicit(&tprof_recording, memory_order_relaxed)) {
		int e = errno;
		tprof_tls.crit = 1;
		stack = tprof_cfg.depth ? tprof_stack_capture() : 0;
		t = tprof_tls.thread ? tprof_tls.thread : tprof_thread_attach();
		if (t) {
			seq = tprof_next_seq_pair(t); /* crit 2: a handler's heap call till the second half is lost */
			tick = tprof_now();
		} else {
			tprof_lost_no_ring();
			tprof_defer_drop(); /* and crit 0 */
		}
		errno = e;
	}
	void *p = call_realloc(kind, ptr, size, nmemb, elem);
	if (t) {
		int e = errno;
		tprof_record_realloc(t, kind, seq, tick, size, p, ptr, stack);
		errno = e;
	}
	LEAVE();
	return p;
}

TPROF_EXPORT void *realloc(void *ptr, size_t size)
{
	return realloc_common(TPROF_EV_REALLOC, ptr, size, 0, 0);
}

TPROF_EXPORT void *reallocarray(void *ptr, size_t nmemb, size_t size)
{
	size_t bytes;
	int overflow = __builtin_mul_overflow(nmemb, size, &bytes);
	if (likely(ready()) && unlikely(tprof_real.realloc_foreign != NULL)) {
		/* The program's realloc is another allocator's (libc_malloc_debug's, jemalloc's, its own):
		 * the C library's reallocarray would call it, and so does this one, recording nothing (a
		 * block from the C library's realloc would reach that allocator's free). What it records
		 * of its own, through the __libc_ names, is recorded there. */
		if (overflow) {
			errno = ENOMEM;
			return NULL;
		}
		return tprof_real.realloc_foreign(ptr, bytes);
	}
	if (overflow)
		bytes = SIZE_MAX; /* the real call fails with ENOMEM: a failed call, never a free */
	return realloc_common(TPROF_EV_REALLOCARRAY, ptr, bytes, nmemb, size);
}

TPROF_EXPORT int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	FRAME();
	if (unlikely(!ready())) {
		void *p = tprof_boot_alloc(size, alignment);
		if (!p)
			return ENOMEM;
		*memptr = p;
		return 0;
	}
	if (nested()) {
		int rc = tprof_real.posix_memalign(memptr, alignment, size);
		defer_alloc(TPROF_EV_POSIX_MEMALIGN, size, rc == 0 ? *memptr : NULL);
		return rc;
	}
	ENTER();
	int rc = tprof_real.posix_memalign(memptr, alignment, size);
	int e = errno;
	tprof_record(TPROF_EV_POSIX_MEMALIGN, size, rc == 0 ? *memptr : NULL, 1);
	LEAVE();
	errno = e;
	return rc;
}

#define ALIGNED_HOOK(name, kind, align_expr, ...)                                                 \
	TPROF_EXPORT void *name(__VA_ARGS__)                                                      \
	{                                                                                         \
		FRAME();                                                                          \
		if (unlikely(!ready()))                                                           \
			return tprof_boot_alloc(size, align_expr);                                \
		if (nested()) {                                                                   \
			void *q_ = CALL_##name;                                                   \
			defer_alloc(kind, size, q_);                                              \
			return q_;                                                                \
		}                                                                                 \
		ENTER();                                                                          \
		void *p = CALL_##name;                                                            \
		int e_ = errno;                                                                   \
		tprof_record(kind, size, p, 1);                                                   \
		LEAVE();                                                                          \
		errno = e_;                                                                       \
		return p;                                                                         \
	}

#define CALL_aligned_alloc tprof_real.aligned_alloc(alignment, size)
#define CALL_memalign tprof_real.memalign(alignment, size)
#define CALL_valloc tprof_real.valloc(size)
#define CALL_pvalloc tprof_real.pvalloc(size)
ALIGNED_HOOK(aligned_alloc, TPROF_EV_ALIGNED_ALLOC, alignment, size_t alignment, size_t size)
ALIGNED_HOOK(memalign, TPROF_EV_MEMALIGN, alignment, size_t alignment, size_t size)
ALIGNED_HOOK(valloc, TPROF_EV_VALLOC, 4096, size_t size)
ALIGNED_HOOK(pvalloc, TPROF_EV_PVALLOC, 4096, size_t size)

/* The C library also exports its allocator under __libc_ names (a program that defines malloc
 * often forwards to __libc_malloc; valgrind counts those calls too): the same hooks answer them. */
#if defined(__has_attribute) && __has_attribute(copy)
#define COPY_ATTRS(target) __attribute__((copy(target)))
#else
#define COPY_ATTRS(target)
#endif
/* The hooks under names of their own, called directly (a reference to malloc itself goes through the
 * global scope) */
#define OWN_ALIAS(name, target) \
	extern __typeof(target) name COPY_ATTRS(target) __attribute__((alias(#target), visibility("hidden")))
OWN_ALIAS(hook_malloc, malloc);
OWN_ALIAS(hook_free, free);
OWN_ALIAS(hook_calloc, calloc);
OWN_ALIAS(hook_realloc, realloc);
OWN_ALIAS(hook_memalign, memalign);
OWN_ALIAS(hook_valloc, valloc);
OWN_ALIAS(hook_pvalloc, pvalloc);
OWN_ALIAS(hook_posix_memalign, posix_memalign);
OWN_ALIAS(hook_aligned_alloc, aligned_alloc);
OWN_ALIAS(hook_reallocarray, reallocarray);

/* While an allocator after this library (core.c, note_foreign) runs a real call, its calls of the
 * __libc_ names are part of the call already recorded: they go straight to the C library's. */
#define LIBC_NAME(ret, name, params, args)                                  \
	TPROF_EXPORT ret __libc_##name params;                              \
	TPROF_EXPORT ret __libc_##name params                               \
	{                                                                   \
		if (unlikely(tprof_tls.in_foreign))                         \
			return tprof_real.libc_##name args;                 \
		return hook_##name args;                                    \
	}
LIBC_NAME(void *, malloc, (size_t size), (size))
LIBC_NAME(void, free, (void *ptr), (ptr))
LIBC_NAME(void *, calloc, (size_t nmemb, size_t size), (nmemb, size))
LIBC_NAME(void *, realloc, (void *ptr, size_t size), (ptr, size))
LIBC_NAME(void *, memalign, (size_t alignment, size_t size), (alignment, size))
LIBC_NAME(void *, valloc, (size_t size), (size))
LIBC_NAME(void *, pvalloc, (size_t size), (size))

/* This library's own malloc and realloc, by an address no other definition can take the place of
 * (a reference to malloc itself goes through the global scope) */
extern __typeof(malloc) tprof_own_malloc COPY_ATTRS(malloc) __attribute__((alias("malloc"), visibility("hidden")));
extern __typeof(realloc) tprof_own_realloc COPY_ATTRS(realloc) __attribute__((alias("realloc"), visibility("hidden")));

/* ---- dlopen, dlclose: the module table follows what is loaded ---- */

/* dlopen and dlmopen find the caller's library by their return address (its RUNPATH, $ORIGIN and
 * namespace decide what is loaded), so the wrappers must not be a frame of their own: they record
 * what was loaded before this call, then jump to the real function, which returns straight to the
 * caller. What this call loads is recorded at the next scan: another dlopen or dlclose, or exit. */
void tprof_dlopen_before(const char *file, long flags);
void *tprof_dlopen_real, *tprof_dlmopen_real; /* hidden: the trampolines jump through them */
void tprof_dlopen_before(const char *file, long flags)
{
	if (!ready() || tprof_tls.guard)
		return;
	if (atomic_load_explicit(&tprof_recording, memory_order_acquire))
		tprof_modules_scan(0);
	/* a library whose own dependencies come first in its lookups calls the C library's malloc,
	 * not this library's: its heap calls are not recorded, which is said, once per process, for
	 * a library not loaded yet (a library already in keeps its bindings; a failed lookup's error
	 * goes, as the call about to be made sets its own) */
	static int deepbind_said;
	if ((flags & RTLD_DEEPBIND) && !(flags & RTLD_NOLOAD) && file && !deepbind_said && tprof_real.dlopen &&
	    tprof_real.dlclose) {
		int e = errno;
		tprof_tls.guard++;
		void *h = tprof_real.dlopen(file, RTLD_NOLOAD | RTLD_LAZY);
		if (h)
			tprof_real.dlclose(h);
		else
			dlerror();
		tprof_tls.guard--;
		if (!h) {
			deepbind_said = 1;
			tprof_region_unhooked(TPROF_UNHOOKED_DEEPBIND);
			if (!tprof_cfg.quiet) /* the trace says it: its report warns */
				tprof_region_warn("", file,
						  " is loaded with RTLD_DEEPBIND: its heap calls go straight to the "
						  "C library's and are not in the trace");
		}
		errno = e;
	}
}

__asm__(".text\n"
	".globl dlopen\n"
	".type dlopen, @function\n"
	"dlopen:\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	sub $8, %rsp\n" /* the stack aligned to 16 at the call */
	"	call tprof_dlopen_before\n"
	"	add $8, %rsp\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	jmp *tprof_dlopen_real(%rip)\n"
	".size dlopen, .-dlopen\n"
	".globl dlmopen\n"
	".type dlmopen, @function\n"
	"dlmopen:\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	push %rdx\n"
	"	mov %rsi, %rdi\n" /* the file and flags, as dlopen's */
	"	mov %rdx, %rsi\n"
	"	call tprof_dlopen_before\n"
	"	pop %rdx\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	jmp *tprof_dlmopen_real(%rip)\n"
	".size dlmopen, .-dlmopen\n");

/* ---- dlsym: the allocator looked up through a handle ---- */

/* dlsym with RTLD_NEXT or RTLD_DEFAULT, like dlopen, looks from the caller's library, which it finds
 * by its return address: those calls jump straight to the next dlsym. A lookup in a handle's scope
 * (Python's ctypes.CDLL("libc.so.6").malloc, a program that dlopens the C library) would give the C
 * library's allocator itself, past every hook, where memcheck, which replaces the allocator, still
 * sees the calls: a lookup of one of the allocator's names gets the hook of that name instead (the
 * same function, recorded), when what it found is the function that hook passes on to (another
 * allocator's stays its own). Every other name jumps on too: an audit module (LD_AUDIT) sees its
 * caller as bare. dlvsym is not looked at. */
void *tprof_dlsym_real; /* hidden: the trampoline jumps through it */
void tprof_dlsym_resolve(void);
int tprof_dlsym_heap_name(const char *name);
void *tprof_dlsym_handle(void *handle, const char *name, int k);

extern char dlsym_own[] __attribute__((visibility("hidden")));

/* The C library's dlsym, found by its version (GLIBC_2.34 since it moved there, libdl's before),
 * which a wrapper of dlsym, unversioned as they are written, does not take. */
static void *(*libc_dlsym)(void *, const char *);

static void *(*find_libc_dlsym(void))(void *, const char *)
{
	static const char *const vers[] = {"GLIBC_2.34", "GLIBC_2.2.5"};
	void *(*f)(void *, const char *) = __atomic_load_n(&libc_dlsym, __ATOMIC_ACQUIRE);
	if (f)
		return f;
	int e = errno;
	void *d = NULL;
	for (int k = 0; k < 4 && (!d || d == (void *)dlsym_own); k++)
		d = dlvsym(k < 2 ? RTLD_NEXT : RTLD_DEFAULT, "dlsym", vers[k % 2]);
	errno = e;
	if (!d || d == (void *)dlsym_own)
		return NULL;
	f = (void *(*)(void *, const char *))d;
	__atomic_store_n(&libc_dlsym, f, __ATOMIC_RELEASE);
	return f;
}

/* This library's own look-ups: the C library's dlsym, called from here, so that RTLD_NEXT is the
 * definition after this library whatever defines dlsym ahead of it (the executable, a library
 * preloaded first), through whose dlsym it would be the one after that definer: this library's
 * own hooks. */
void *tprof_dlsym(void *handle, const char *name)
{
	void *(*f)(void *, const char *) = find_libc_dlsym();
	return f ? f(handle, name) : NULL;
}

/* The next dlsym after this library: the C library's, or a wrapper another preloaded library
 * defines. */
void tprof_dlsym_resolve(void)
{
	void *(*libc)(void *, const char *) = find_libc_dlsym();
	int e = errno;
	/* called from here: the definition after this library's */
	void *next = libc ? libc(RTLD_NEXT, "dlsym") : NULL;
	void *d = next && next != (void *)dlsym_own ? next : (void *)libc;
	if (d)
		__atomic_store_n(&tprof_dlsym_real, d, __ATOMIC_RELEASE);
	errno = e;
}

/* The allocator's names a handle's lookup may be given the hook of: each with the function of the
 * C library the hook passes on to, and the hook. */
static const struct {
	const char *name;
	size_t real; /* offset in struct tprof_real */
	void *hook;
} heap_names[] = {
	{"malloc", offsetof(struct tprof_real, malloc), (void *)hook_malloc},
	{"free", offsetof(struct tprof_real, free), (void *)hook_free},
	{"calloc", offsetof(struct tprof_real, calloc), (void *)hook_calloc},
	{"realloc", offsetof(struct tprof_real, realloc), (void *)hook_realloc},
	{"reallocarray", offsetof(struct tprof_real, reallocarray), (void *)hook_reallocarray},
	{"posix_memalign", offsetof(struct tprof_real, posix_memalign), (void *)hook_posix_memalign},
	{"aligned_alloc", offsetof(struct tprof_real, aligned_alloc), (void *)hook_aligned_alloc},
	{"memalign", offsetof(struct tprof_real, memalign), (void *)hook_memalign},
	{"valloc", offsetof(struct tprof_real, valloc), (void *)hook_valloc},
	{"pvalloc", offsetof(struct tprof_real, pvalloc), (void *)hook_pvalloc},
};

/* 1 + the index in heap_names of name, with or without the __libc_ prefix, else 0. */
int tprof_dlsym_heap_name(const char *name)
{
	if (!name)
		return 0;
	if (name[0] == '_' && strncmp(name, "__libc_", 7) == 0)
		name += 7;
	for (size_t i = 0; i < sizeof(heap_names) / sizeof(heap_names[0]); i++)
		if (strcmp(name, heap_names[i].name) == 0)
			return (int)i + 1;
	return 0;
}

/* A handle's look-up of the allocator's name number k (tprof_dlsym_heap_name). */
void *tprof_dlsym_handle(void *handle, const char *name, int k)
{
	void *(*real)(void *, const char *) =
		(void *(*)(void *, const char *))__atomic_load_n(&tprof_dlsym_real, __ATOMIC_ACQUIRE);
	void *r = real(handle, name);
	if (!r || !ready())
		return r;
	void *passed_on;
	memcpy(&passed_on, (const char *)&tprof_real + heap_names[k - 1].real, sizeof(passed_on));
	return r == passed_on ? heap_names[k - 1].hook : r;
}

/* dlsym(handle, name): the next one's for RTLD_DEFAULT (0), RTLD_NEXT (-1) and every name but the
 * allocator's, looked up on first use (another library's constructor may call it before this
 * library's runs); a failed look-up of it answers NULL. */
__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	".hidden dlsym_own\n"
	"dlsym:\n"
	"dlsym_own:\n"
	"	mov tprof_dlsym_real(%rip), %rax\n"
	"	test %rax, %rax\n"
	"	jz 2f\n"
	"1:	test %rdi, %rdi\n"
	"	je 3f\n"
	"	cmp $-1, %rdi\n"
	"	je 3f\n"
	"	push %rdi\n"
	"	push %rsi\n"
	"	sub $8, %rsp\n" /* the stack aligned to 16 at the call */
	"	mov %rsi, %rdi\n"
	"	call tprof_dlsym_heap_name\n"
	"	add $8, %rsp\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	mov %eax, %edx\n" /* the name's number, tprof_dlsym_handle's third argument */
	"	test %eax, %eax\n"
	"	jnz tprof_dlsym_handle\n"
	"	mov tprof_dlsym_real(%rip), %rax\n"
	"3:	jmp *%rax\n"
	"2:	push %rdi\n"
	"	push %rsi\n"
	"	sub $8, %rsp\n"
	"	call tprof_dlsym_resolve\n"
	"	add $8, %rsp\n"
	"	pop %rsi\n"
	"	pop %rdi\n"
	"	mov tprof_dlsym_real(%rip), %rax\n"
	"	test %rax, %rax\n"
	"	jnz 1b\n"
	"	ret\n"
	".size dlsym, .-dlsym\n");

/* Code may be unmapped, and its addresses reused by the next dlopen: what was loaded is recorded
 * while it is still mapped, and its end after. */
TPROF_EXPORT int dlclose(void *handle)
{
	if (!ready() || !tprof_real.dlclose)
		return -1;
	int rec = atomic_load_explicit(&tprof_recording, memory_order_acquire);
	if (rec)
		tprof_modules_scan(0);
	int rc = tprof_real.dlclose(handle);
	int saved = errno;
	tprof_kernels_forget(); /* a kernel's library may be gone: look the real functions up again */
	tprof_omp_forget();
	tprof_unwind_forget_code(); /* and its stack walk rules with it, recording or not */
	if (rec)
		tprof_modules_scan(1);
	errno = saved;
	return rc;
}

/* ---- ways out: say how the process ends (exit after its handlers, through on_exit: core.c); the
 * recorder does the rest ---- */

/* sigaltstack: the alternate stack a signal handler of this thread may run on, kept for
 * tprof_crit_left (with SS_AUTODISARM, the kernel reports none while a handler runs on it). The call
 * is the system call, as the C library's. */
static long pass_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6);

TPROF_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	long rc = pass_syscall(SYS_sigaltstack, (long)ss, (long)old, 0, 0, 0, 0);
	if (rc == 0 && ss) {
		int off = (ss->ss_flags & SS_DISABLE) != 0;
		tprof_tls.alt_lo = off ? 0 : (uintptr_t)ss->ss_sp;
		tprof_tls.alt_hi = off ? 0 : (uintptr_t)ss->ss_sp + ss->ss_size;
	}
	return (int)rc;
}

/* exit only for a signal handler's exit inside a hook it interrupted (tprof_end_interrupted); the
 * rest of exit's way is the C library's, whose handlers tprof's are among. */
TPROF_EXPORT void exit(int status)
{
	tprof_end_interrupted();
	tprof_note_exit_begun();
	/* a library constructor's exit, before tprof's constructor: tprof's destructor, which would
	 * note it after the exit handlers (on_exit_status), never runs; noted now, or the recorder
	 * takes the bare exit for an _exit */
	if (unlikely(!atomic_load_explicit(&tprof_constructed, memory_order_acquire)) && !tprof_sanitizer_present())
		tprof_note_end(TPROF_END_EXIT, status);
	if (unlikely(!tprof_real.exit)) /* before tprof_init resolved it (a constructor's exit) */
		tprof_real.exit = (__typeof__(tprof_real.exit))tprof_dlsym(RTLD_NEXT, "exit");
	if (tprof_real.exit)
		tprof_real.exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

TPROF_EXPORT TPROF_STARTUP void _exit(int status)
{
	tprof_end_interrupted();
	tprof_note_end(TPROF_END__EXIT, status);
	tprof_scan_at_end(TPROF_END__EXIT);
	if (tprof_real.exit_)
		tprof_real.exit_(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

TPROF_EXPORT TPROF_STARTUP void _Exit(int status)
{
	tprof_end_interrupted();
	tprof_note_end(TPROF_END__EXIT, status);
	tprof_scan_at_end(TPROF_END__EXIT);
	if (tprof_real.Exit_)
		tprof_real.Exit_(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

TPROF_EXPORT void quick_exit(int status)
{
	tprof_end_interrupted();
	tprof_note_end(TPROF_END_QUICK_EXIT, status);
	tprof_end_threads = -1; /* its handlers run before the scan */
	if (tprof_real.quick_exit)
		tprof_real.quick_exit(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

/* daemon(3), as the C library does it, but for its parent's end: the C library's ends the parent
 * with an internal _exit that no hook sees, so that the parent would go without its leak scan. Here
 * the parent leaves through the _exit hook above. The fork is the C library's (its fork handlers,
 * tprof's among them, run as in its daemon); the child makes itself a session leader, goes to /
 * unless nochdir, and unless noclose puts /dev/null on descriptors 0, 1 and 2, refusing a /dev/null
 * that is not the null device (ENODEV). Those steps are system calls, as the C library's internal
 * calls are: neither the program's own open or close nor another preloaded library sees them. */
TPROF_EXPORT int daemon(int nochdir, int noclose)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0)
		_exit(0);
	if (pass_syscall(SYS_setsid, 0, 0, 0, 0, 0, 0) < 0)
		return -1;
	if (!nochdir)
		pass_syscall(SYS_chdir, (long)"/", 0, 0, 0, 0, 0); /* its failure is not daemon's */
	if (noclose)
		return 0;
	long fd = pass_syscall(SYS_openat, AT_FDCWD, (long)"/dev/null", O_RDWR, 0, 0, 0);
	if (fd < 0)
		return -1;
	struct stat st;
	int bad = pass_syscall(SYS_newfstatat, fd, (long)"", (long)&st, AT_EMPTY_PATH, 0, 0) != 0 ? errno
		  : !S_ISCHR(st.st_mode) || st.st_rdev != makedev(1, 3)                     ? ENODEV
											      : 0;
	if (bad) {
		pass_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
		errno = bad;
		return -1;
	}
	for (long to = 0; to < 3; to++)
		if (fd != to)
			pass_syscall(SYS_dup2, fd, to, 0, 0, 0, 0);
	if (fd > 2)
		pass_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	return 0;
}

/* ---- exec: the recorder drains the old image after it; a failed exec goes on ---- */

/* env_ is the environment the new image gets: the caller's, or a copy on the stack with the
 * recorder's name added (tprof_region_exec_env) or LD_PRELOAD without this library
 * (tprof_region_exec_unpreload); the forms without one then call the form with. */
#define EXEC_HOOK(name, path_in, search, envp_in, call, ...)                                      \
	TPROF_EXPORT TPROF_STARTUP int name(__VA_ARGS__)                                          \
	{                                                                                         \
		if (!ready() || !tprof_real.name) {                                               \
			errno = ENOSYS;                                                           \
			return -1;                                                                \
		}                                                                                 \
		char *const *env_ = (envp_in);                                                    \
		char rec_[160], pre_[512]; /* a longer LD_PRELOAD is left as it is */            \
		size_t at_ = 0, k_ = 0;                                                           \
		size_t n1_ = tprof_region_exec_env(env_, rec_, sizeof(rec_), 1024);               \
		size_t n2_ = tprof_region_exec_unpreload(path_in, search, argv, env_, pre_, sizeof(pre_), 1024, &at_); \
		size_t n_ = n1_ > n2_ ? n1_ : n2_;                                                \
		char *more_[n_ ? n_ + 2 : 1];                                                     \
		if (n_) {                                                                         \
			for (size_t i_ = 0; i_ < n_; i_++)                                        \
				if (!n2_ || i_ != at_)                                            \
					more_[k_++] = env_[i_];                                   \
				else if (pre_[0])                                                 \
					more_[k_++] = pre_;                                       \
			if (n1_)                                                                  \
				more_[k_++] = rec_;                                               \
			more_[k_] = NULL;                                                         \
			env_ = more_;                                                             \
		}                                                                                 \
		tprof_note_exec(1);                                                               \
		int rc_ = call;                                                                   \
		int e_ = errno;                                                                   \
		tprof_note_exec(0);                                                               \
		errno = e_;                                                                       \
		return rc_;                                                                       \
	}

EXEC_HOOK(execve, path, 0, envp, tprof_real.execve(path, argv, env_), const char *path, char *const argv[],
	  char *const envp[])
EXEC_HOOK(execv, path, 0, environ,
	  n_ && tprof_real.execve ? tprof_real.execve(path, argv, env_) : tprof_real.execv(path, argv),
	  const char *path, char *const argv[])
EXEC_HOOK(execvp, file, 1, environ,
	  n_ && tprof_real.execvpe ? tprof_real.execvpe(file, argv, env_) : tprof_real.execvp(file, argv),
	  const char *file, char *const argv[])
EXEC_HOOK(execvpe, file, 1, envp, tprof_real.execvpe(file, argv, env_), const char *file, char *const argv[],
	  char *const envp[])
EXEC_HOOK(fexecve, NULL, 0, envp, tprof_real.fexecve(fd, argv, env_), int fd, char *const argv[], char *const envp[])

/* ---- libunwind's memory validation, without a descriptor ----
 * libunwind checks an address by writing one byte from it into a pipe it opens at its first
 * unwind. Its pipe2 gets two numbers no file has; its read of the first gets "nothing to read";
 * its write of the second (through write(), or syscall() in newer versions) is answered by reading the byte with
 * process_vm_readv, which fails the same way (EFAULT) for an address that cannot be read. Only
 * libunwind's own calls are so answered: a program's read of descriptor -1000 fails as bare. */

TPROF_EXPORT int pipe2(int fds[2], int flags)
{
	if (tprof_unwinder_owns(__builtin_return_address(0))) {
		fds[0] = TPROF_FAKE_PIPE_R;
		fds[1] = TPROF_FAKE_PIPE_W;
		return 0;
	}
	if (tprof_real.pipe2)
		return tprof_real.pipe2(fds, flags);
	return (int)syscall(SYS_pipe2, fds, (long)flags);
}

TPROF_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	if (unlikely(fd == TPROF_FAKE_PIPE_R) && tprof_unwinder_owns(__builtin_return_address(0))) {
		errno = EAGAIN;
		return -1;
	}
	if (likely(tprof_real.read != NULL))
		return tprof_real.read(fd, buf, n);
	return (ssize_t)syscall(SYS_read, (long)fd, buf, n);
}

TPROF_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	if (unlikely(fd == TPROF_FAKE_PIPE_W) && tprof_unwinder_owns(__builtin_return_address(0))) {
		if (tprof_readable(buf))
			return 1;
		errno = EFAULT;
		return -1;
	}
	if (likely(tprof_real.write != NULL))
		return tprof_real.write(fd, buf, n);
	return (ssize_t)syscall(SYS_write, (long)fd, buf, n);
}

/* ---- seccomp ----
 * A filter the program installs may end it at any call it does not make itself: tprof takes it for
 * one (tprof_sandboxed) before the call, since with TSYNC it holds in every thread as the call
 * returns, and forgets it again when the call failed. */
static int sandbox_enter(void)
{
	tprof_alive_check(); /* a fork child's first call of tprof's */
	int was = atomic_load(&tprof_sandboxed);
	struct tprof_shm *shm = tprof_shm;
	if (tprof_cfg.trust_seccomp || (shm && shm->pid != (int32_t)tprof_getpid()))
		return was; /* trusted; or a vfork child, in its parent's memory: its exec looks again */
	atomic_store(&tprof_sandboxed, 1);
	if (shm)
		atomic_store(&shm->sandboxed, 1); /* said in the trace's END */
	return was;
}

static long sandbox_leave(long rc, int was)
{
	if (rc != 0) {
		int e = errno;
		struct tprof_shm *shm = tprof_shm;
		atomic_store(&tprof_sandboxed, was);
		if (shm)
			atomic_store(&shm->sandboxed, (uint32_t)was);
		errno = e;
	}
	return rc;
}

static int installs_filter(long nr, long a1)
{
	return (nr == SYS_seccomp && (a1 == SECCOMP_SET_MODE_STRICT || a1 == SECCOMP_SET_MODE_FILTER)) ||
	       (nr == SYS_prctl && a1 == PR_SET_SECCOMP);
}

/* ---- the TSC off, seccomp's strict mode ----
 * PR_SET_TSC with PR_TSC_SIGSEGV makes rdtsc fault in the calling thread, and in the threads and
 * processes it makes; strict mode does the same, and leaves the thread no system call but read,
 * write, exit and sigreturn. Before either call tprof's clock leaves the TSC (core.c); a thread
 * entering strict mode records nothing from then on (guard, for good): each heap call it makes is
 * counted lost, so its trace says what it lacks. A call that fails gives the thread back; the
 * clock stays the kernel's (dearer, as exact). */
static int strict_call(long nr, long a1, long a2)
{
	return (nr == SYS_seccomp && a1 == SECCOMP_SET_MODE_STRICT) ||
	       (nr == SYS_prctl && a1 == PR_SET_SECCOMP && a2 == SECCOMP_MODE_STRICT);
}

/* Before a call (nr, a1, a2) that may turn the TSC off: 1 when the thread was made strict. */
static int tsc_leave(long nr, long a1, long a2)
{
	int strict = strict_call(nr, a1, a2);
	if (!strict && !(nr == SYS_prctl && a1 == PR_SET_TSC && a2 == PR_TSC_SIGSEGV))
		return 0;
	tprof_clock_leave_tsc();
	if (strict && !tprof_tls.strict) {
		tprof_tls.guard++;
		tprof_tls.strict = 1;
		return 1;
	}
	return 0;
}

static long tsc_left(long rc, int made_strict)
{
	if (rc != 0 && made_strict) {
		tprof_tls.strict = 0;
		tprof_tls.guard--;
	}
	return rc;
}

TPROF_EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	int was = option == PR_SET_SECCOMP ? sandbox_enter() : -1;
	int strict = option == PR_SET_SECCOMP || option == PR_SET_TSC ? tsc_leave(SYS_prctl, option, (long)a2) : 0;
	int rc = likely(tprof_real.prctl != NULL) ? tprof_real.prctl(option, a2, a3, a4, a5)
						    : (int)syscall(SYS_prctl, (long)option, a2, a3, a4, a5);
	tsc_left(rc, strict);
	return was >= 0 ? (int)sandbox_leave(rc, was) : rc;
}

static long pass_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	if (unlikely(!tprof_real.syscall)) {
		long r = tprof_raw_syscall6(nr, a1, a2, a3, a4, a5, a6);
		if (r < 0 && r > -4096) {
			errno = (int)-r;
			return -1;
		}
		return r;
	}
	return tprof_real.syscall(nr, a1, a2, a3, a4, a5, a6);
}

/* mlockall and munlockall: whether MCL_FUTURE may be in force decides how tprof maps its memory
 * (tprof_map_unlocked). Set before the call (a thread mapping meanwhile takes the careful way),
 * cleared only by a call that succeeded without it. */
static long lock_call(long nr, long flags)
{
	tprof_alive_check(); /* a child of _Fork: forgetting its parent's registration later would
			      * forget this call's MCL_FUTURE too */
	if (nr == SYS_mlockall && (flags & MCL_FUTURE))
		atomic_store(&tprof_lock_future, 1);
	long r = pass_syscall(nr, flags, 0, 0, 0, 0, 0);
	if (r == 0 && (nr == SYS_munlockall || !(flags & MCL_FUTURE)))
		atomic_store(&tprof_lock_future, 0);
	return r;
}

TPROF_EXPORT int mlockall(int flags)
{
	return (int)lock_call(SYS_mlockall, flags);
}

TPROF_EXPORT int munlockall(void)
{
	return (int)lock_call(SYS_munlockall, 0);
}

TPROF_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a1 = va_arg(ap, long), a2 = va_arg(ap, long), a3 = va_arg(ap, long);
	long a4 = va_arg(ap, long), a5 = va_arg(ap, long), a6 = va_arg(ap, long);
	va_end(ap);
	if (unlikely(nr == SYS_sigaltstack))
		return sigaltstack((const stack_t *)a1, (stack_t *)a2);
	if (unlikely(nr == SYS_write && (int)a1 == TPROF_FAKE_PIPE_W) && /* an int, passed in a long */
	    tprof_unwinder_owns(__builtin_return_address(0))) {
		if (tprof_readable((const void *)a2))
			return 1;
		errno = EFAULT;
		return -1;
	}
	if (unlikely(installs_filter(nr, a1))) {
		int was = sandbox_enter();
		int strict = tsc_leave(nr, a1, a2);
		long rc = tsc_left(pass_syscall(nr, a1, a2, a3, a4, a5, a6), strict);
		return sandbox_leave(rc, was);
	}
	if (unlikely(nr == SYS_prctl && a1 == PR_SET_TSC)) {
		tsc_leave(nr, a1, a2);
		return pass_syscall(nr, a1, a2, a3, a4, a5, a6);
	}
	if (unlikely(nr == SYS_mlockall || nr == SYS_munlockall))
		return lock_call(nr, a1);
	return pass_syscall(nr, a1, a2, a3, a4, a5, a6);
}

/* The variadic forms gather their arguments on the stack (no allocation), as the C library does. */
#define GATHER_ARGS(first, extra_after)                                                           \
	size_t argc_ = 1;                                                                         \
	va_list ap_;                                                                              \
	va_start(ap_, first);                                                                     \
	while (va_arg(ap_, const char *))                                                         \
		argc_++;                                                                          \
	va_end(ap_);                                                                              \
	char *argv_[argc_ + 1];                                                                   \
	argv_[0] = (char *)first;                                                                 \
	va_start(ap_, first);                                                                     \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                                    \
		argv_[i_] = va_arg(ap_, char *);                                                  \
	extra_after;                                                                              \
	va_end(ap_)

TPROF_EXPORT int execl(const char *path, const char *arg, ...)
{
	GATHER_ARGS(arg, (void)0);
	return execve(path, argv_, environ);
}

TPROF_EXPORT int execlp(const char *file, const char *arg, ...)
{
	GATHER_ARGS(arg, (void)0);
	return execvp(file, argv_);
}

TPROF_EXPORT int execle(const char *path, const char *arg, ...)
{
	char **envp_;
	GATHER_ARGS(arg, envp_ = va_arg(ap_, char **));
	return execve(path, argv_, envp_);
}
