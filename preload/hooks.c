/* The functions libtprof.so exports and the traced program calls instead of the C library's: the
 * malloc family, _exit/_Exit and the exec family. Each hook is thin: forward to the real function,
 * record one event through preload.h, keep errno as the real function left it. A per-thread guard
 * passes nested calls (from the C library, from tprof itself) straight through. */
#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload.h"

extern char **environ;

/* Until tprof_init has resolved the real functions, allocations come from the bootstrap pool. */
static inline int ready(void)
{
	if (likely(atomic_load_explicit(&tprof_ready, memory_order_acquire)))
		return 1;
	tprof_init();
	return atomic_load_explicit(&tprof_ready, memory_order_acquire);
}

/* errno: recording makes no system call on its fast path, and every slow path (thread attach, a
 * full ring, waking the writer) saves and restores errno itself, so what the caller sees is what
 * the real function left. */
#define ENTER() tprof_tls.guard = 1
#define LEAVE() tprof_tls.guard = 0

TPROF_EXPORT void *malloc(size_t size)
{
	if (unlikely(!ready()))
		return tprof_boot_alloc(size, 16);
	if (tprof_tls.guard)
		return tprof_real.malloc(size);
	ENTER();
	void *p = tprof_real.malloc(size);
	tprof_record(TPROF_EV_MALLOC, size, p, 1);
	LEAVE();
	return p;
}

TPROF_EXPORT void free(void *ptr)
{
	if (unlikely(tprof_boot_owns(ptr)))
		return;
	if (unlikely(!ready()))
		return; /* cannot happen for a block we handed out: leak rather than guess */
	if (tprof_tls.guard) {
		tprof_real.free(ptr);
		return;
	}
	ENTER();
	tprof_record(TPROF_EV_FREE, 0, ptr, 0); /* before the real free: the address may be reused at once */
	tprof_real.free(ptr);
	LEAVE();
}

TPROF_EXPORT void *calloc(size_t nmemb, size_t size)
{
	size_t bytes;
	int overflow = __builtin_mul_overflow(nmemb, size, &bytes);
	if (unlikely(!ready()))
		return overflow ? NULL : tprof_boot_alloc(bytes, 16);
	if (tprof_tls.guard)
		return tprof_real.calloc(nmemb, size);
	ENTER();
	void *p = tprof_real.calloc(nmemb, size);
	tprof_record(TPROF_EV_CALLOC, overflow ? 0 : bytes, p, 1);
	LEAVE();
	return p;
}

static inline void *call_realloc(unsigned kind, void *ptr, size_t size, size_t nmemb, size_t elem)
{
	if (kind == TPROF_EV_REALLOC || !tprof_real.reallocarray) {
		if (kind != TPROF_EV_REALLOC && size == 0 && nmemb && elem) {
			errno = ENOMEM; /* nmemb * elem overflowed */
			return NULL;
		}
		return tprof_real.realloc(ptr, size);
	}
	return tprof_real.reallocarray(ptr, nmemb, elem);
}

/* Shared by realloc and reallocarray: the old block's release is ordered before the call, the new
 * block after it, so no other thread's reuse of either address can be misordered. */
static void *realloc_common(unsigned kind, void *ptr, size_t size, size_t nmemb, size_t elem)
{
	if (unlikely(tprof_boot_owns(ptr))) {
		size_t old = tprof_boot_size(ptr);
		void *p = malloc(size);
		if (p)
			memcpy(p, ptr, old < size ? old : size);
		return p;
	}
	if (unlikely(!ready()))
		return ptr ? NULL : tprof_boot_alloc(size, 16);
	if (tprof_tls.guard)
		return call_realloc(kind, ptr, size, nmemb, elem);
	ENTER();
	int rec = atomic_load_explicit(&tprof_recording, memory_order_relaxed);
	uint64_t seq = 0, tick = 0;
	uint32_t stack = 0;
	if (rec) {
		stack = tprof_cfg.depth ? tprof_stack_capture() : 0;
		seq = atomic_fetch_add_explicit(&tprof_seq, 1, memory_order_seq_cst);
		tick = tprof_now();
	}
	void *p = call_realloc(kind, ptr, size, nmemb, elem);
	if (rec)
		tprof_record_realloc(kind, seq, tick, size, p, ptr, stack);
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
	if (__builtin_mul_overflow(nmemb, size, &bytes))
		bytes = 0; /* the real call fails with ENOMEM; the record shows a failed call */
	return realloc_common(TPROF_EV_REALLOCARRAY, ptr, bytes, nmemb, size);
}

TPROF_EXPORT int posix_memalign(void **memptr, size_t alignment, size_t size)
{
	if (unlikely(!ready())) {
		void *p = tprof_boot_alloc(size, alignment);
		if (!p)
			return ENOMEM;
		*memptr = p;
		return 0;
	}
	if (tprof_tls.guard)
		return tprof_real.posix_memalign(memptr, alignment, size);
	ENTER();
	int rc = tprof_real.posix_memalign(memptr, alignment, size);
	tprof_record(TPROF_EV_POSIX_MEMALIGN, size, rc == 0 ? *memptr : NULL, 1);
	LEAVE();
	return rc;
}

#define ALIGNED_HOOK(name, kind, align_expr, ...)                                                 \
	TPROF_EXPORT void *name(__VA_ARGS__)                                                      \
	{                                                                                         \
		if (unlikely(!ready()))                                                           \
			return tprof_boot_alloc(size, align_expr);                                \
		if (tprof_tls.guard)                                                              \
			return CALL_##name;                                                       \
		ENTER();                                                                          \
		void *p = CALL_##name;                                                            \
		tprof_record(kind, size, p, 1);                                                   \
		LEAVE();                                                                          \
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

/* ---- dlclose: code may be unmapped, and its addresses reused by the next dlopen ---- */

TPROF_EXPORT int dlclose(void *handle)
{
	if (!ready() || !tprof_real.dlclose)
		return -1;
	tprof_modules_before_close(); /* the writer records the module while it is still mapped */
	int rc = tprof_real.dlclose(handle);
	int saved = errno;
	tprof_kernels_forget(); /* a kernel's library may be gone: look the real functions up again */
	tprof_modules_closed(atomic_fetch_add(&tprof_seq, 1));
	errno = saved;
	return rc;
}

/* ---- ways out of the process that skip library destructors ---- */

TPROF_EXPORT void _exit(int status)
{
	tprof_finish(TPROF_END__EXIT, status);
	if (tprof_real.exit_)
		tprof_real.exit_(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

TPROF_EXPORT void _Exit(int status)
{
	tprof_finish(TPROF_END__EXIT, status);
	if (tprof_real.Exit_)
		tprof_real.Exit_(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

/* ---- exec: the image is replaced without destructors, so flush first; on failure go on ---- */

#define EXEC_HOOK(name, call, ...)                                                                \
	TPROF_EXPORT int name(__VA_ARGS__)                                                        \
	{                                                                                         \
		if (!ready() || !tprof_real.name) {                                               \
			errno = ENOSYS;                                                           \
			return -1;                                                                \
		}                                                                                 \
		tprof_flush_for_exec();                                                           \
		return call;                                                                      \
	}

EXEC_HOOK(execve, tprof_real.execve(path, argv, envp), const char *path, char *const argv[],
	  char *const envp[])
EXEC_HOOK(execv, tprof_real.execv(path, argv), const char *path, char *const argv[])
EXEC_HOOK(execvp, tprof_real.execvp(file, argv), const char *file, char *const argv[])
EXEC_HOOK(execvpe, tprof_real.execvpe(file, argv, envp), const char *file, char *const argv[],
	  char *const envp[])
EXEC_HOOK(fexecve, tprof_real.fexecve(fd, argv, envp), int fd, char *const argv[], char *const envp[])

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
