/* OpenMP parallel regions: libtprof.so wraps the libgomp entry points that compiled code calls to
 * open one (GOMP_parallel, the combined parallel-loop and parallel-sections forms; LLVM's libomp
 * exports them too), so that the analyzer can give the work of the pool's threads to the kernel and
 * range that opened the region. The thread that opens a region records a FORK annotation with the
 * region's number; every thread that runs the region's body (the opening one too) records BEGIN and
 * END around it (docs/OPS.md). The runtime is called with a small body that does that and calls the
 * real body; arguments, results and the runtime's own behaviour are untouched. GOMP_task is wrapped
 * too: a task that a pool thread runs after the body, at the region's closing barrier, is still the
 * region's work, so the task records BEGIN and END of its region around itself. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "preload.h"

/* One region, on the opening thread's stack: the runtime returns only when every thread is done. */
struct omp_region {
	void (*fn)(void *);
	void *data;
	int64_t id;
};

static _Atomic int64_t region_ids;

/* The real entry points, looked up once each (and again after a dlclose). */
enum {
	OMP_PARALLEL,
	OMP_LOOP_STATIC,
	OMP_LOOP_DYNAMIC,
	OMP_LOOP_GUIDED,
	OMP_LOOP_RUNTIME,
	OMP_LOOP_NONMONOTONIC_DYNAMIC,
	OMP_LOOP_NONMONOTONIC_GUIDED,
	OMP_LOOP_NONMONOTONIC_RUNTIME,
	OMP_LOOP_MAYBE_NONMONOTONIC_RUNTIME,
	OMP_SECTIONS,
	OMP_TASK,
	OMP_N
};
static void *_Atomic omp_real[OMP_N];

void tprof_omp_forget(void)
{
	for (int i = 0; i < OMP_N; i++)
		atomic_store_explicit(&omp_real[i], NULL, memory_order_relaxed);
}

static void *real_of(int which, const char *name, void *self, const void *caller)
{
	void *p = atomic_load_explicit(&omp_real[which], memory_order_acquire);
	if (unlikely(!p)) {
		p = tprof_resolve_real(name, self, caller);
		atomic_store_explicit(&omp_real[which], p, memory_order_release);
	}
	return p;
}

static void note(int kind, int64_t id)
{
	int saved = errno;
	tprof_annot_record(kind, 0, id); /* no guard: a handler's heap call meanwhile is the program's */
	errno = saved;
}

/* Runs fn(arg), the work of region id, between that region's begin and end on this thread; tasks
 * the work creates belong to the region too. */
static void run_in_region(int64_t id, void (*fn)(void *), void *arg)
{
	int rec = !tprof_tls.guard && atomic_load_explicit(&tprof_recording, memory_order_relaxed);
	if (rec)
		note(TPROF_ANNOT_OMP_BEGIN, id);
	int64_t outer = tprof_tls.omp_region;
	tprof_tls.omp_region = id;
	fn(arg);
	tprof_tls.omp_region = outer;
	if (rec)
		note(TPROF_ANNOT_OMP_END, id);
}

/* What the runtime runs on each thread in place of the region's body. */
static void region_body(void *arg)
{
	const struct omp_region *r = arg;
	run_in_region(r->id, r->fn, r->data);
}

/* Prepares the region and records its fork; 0 when it is not recorded (the caller then passes the
 * real body). */
static int region_open(struct omp_region *r, void (*fn)(void *), void *data)
{
	if (tprof_tls.guard || !(atomic_load_explicit(&tprof_recording, memory_order_relaxed) || tprof_start_recording()))
		return 0;
	r->fn = fn;
	r->data = data;
	r->id = atomic_fetch_add_explicit(&region_ids, 1, memory_order_relaxed) + 1;
	note(TPROF_ANNOT_OMP_FORK, r->id);
	return 1;
}

typedef void (*omp_fn)(void *);

/* The wrappers: each passes region_body and the region, or the real body when not recording. */
#define OMP_WRAP(WHICH, NAME, PARAMS, ARGS)                                                               \
	TPROF_EXPORT void NAME(omp_fn fn, void *data, TP_OMP_UNPAREN PARAMS);                             \
	/* its own address, not the exported name's: see kernels.c */                                     \
	extern __typeof__(NAME) omp_self_##NAME __attribute__((alias(#NAME), visibility("hidden")));     \
	TPROF_EXPORT void NAME(omp_fn fn, void *data, TP_OMP_UNPAREN PARAMS)                              \
	{                                                                                                 \
		void (*real)(omp_fn, void *, TP_OMP_UNPAREN PARAMS) =                                     \
			real_of(WHICH, #NAME, (void *)omp_self_##NAME, __builtin_return_address(0));      \
		struct omp_region r;                                                                      \
		if (region_open(&r, fn, data))                                                            \
			real(region_body, &r, TP_OMP_UNPAREN ARGS);                                       \
		else                                                                                      \
			real(fn, data, TP_OMP_UNPAREN ARGS);                                              \
	}
#define TP_OMP_UNPAREN(...) __VA_ARGS__

/* the combined parallel-loop forms: with a chunk size, or the runtime's schedule (without) */
#define LOOP_CHUNK (unsigned num_threads, long start, long end, long incr, long chunk, unsigned flags)
#define LOOP_CHUNK_ARGS (num_threads, start, end, incr, chunk, flags)
#define LOOP_RUNTIME (unsigned num_threads, long start, long end, long incr, unsigned flags)
#define LOOP_RUNTIME_ARGS (num_threads, start, end, incr, flags)

OMP_WRAP(OMP_PARALLEL, GOMP_parallel, (unsigned num_threads, unsigned flags), (num_threads, flags))
OMP_WRAP(OMP_LOOP_STATIC, GOMP_parallel_loop_static, LOOP_CHUNK, LOOP_CHUNK_ARGS)
OMP_WRAP(OMP_LOOP_DYNAMIC, GOMP_parallel_loop_dynamic, LOOP_CHUNK, LOOP_CHUNK_ARGS)
OMP_WRAP(OMP_LOOP_GUIDED, GOMP_parallel_loop_guided, LOOP_CHUNK, LOOP_CHUNK_ARGS)
OMP_WRAP(OMP_LOOP_RUNTIME, GOMP_parallel_loop_runtime, LOOP_RUNTIME, LOOP_RUNTIME_ARGS)
OMP_WRAP(OMP_LOOP_NONMONOTONIC_DYNAMIC, GOMP_parallel_loop_nonmonotonic_dynamic, LOOP_CHUNK, LOOP_CHUNK_ARGS)
OMP_WRAP(OMP_LOOP_NONMONOTONIC_GUIDED, GOMP_parallel_loop_nonmonotonic_guided, LOOP_CHUNK, LOOP_CHUNK_ARGS)
OMP_WRAP(OMP_LOOP_NONMONOTONIC_RUNTIME, GOMP_parallel_loop_nonmonotonic_runtime, LOOP_RUNTIME, LOOP_RUNTIME_ARGS)
OMP_WRAP(OMP_LOOP_MAYBE_NONMONOTONIC_RUNTIME, GOMP_parallel_loop_maybe_nonmonotonic_runtime, LOOP_RUNTIME,
	 LOOP_RUNTIME_ARGS)
OMP_WRAP(OMP_SECTIONS, GOMP_parallel_sections, (unsigned num_threads, unsigned count, unsigned flags),
	 (num_threads, count, flags))

/* ---- tasks ---- */

/* A task's argument block as the runtime copies it: this header, then the program's own block at
 * off (aligned as the program asked). */
struct omp_task {
	void (*fn)(void *);
	void (*cpyfn)(void *, void *);
	void *data; /* the program's block, for cpyfn; read only while GOMP_task runs */
	int64_t id; /* the region the task belongs to */
	long off;
};

#define TASK_MAX_ARGS 4096 /* larger blocks (and alignments over 64) pass through unrecorded */
#define TASK_FLAG_DETACH (1u << 13) /* libgomp's GOMP_TASK_FLAG_DETACH (gomp-constants.h) */

/* What the runtime runs in place of a task created inside a recorded region. */
static void task_body(void *arg)
{
	const struct omp_task *t = arg;
	run_in_region(t->id, t->fn, (char *)arg + t->off);
}

/* The runtime's copy of a task's block when the program gave a copy function (C++ firstprivate). */
static void task_copy(void *dst, void *src)
{
	const struct omp_task *t = src;
	memcpy(dst, t, sizeof(*t));
	t->cpyfn((char *)dst + t->off, t->data);
}

typedef void (*omp_cpyfn)(void *, void *);
TPROF_EXPORT void GOMP_task(omp_fn fn, void *data, omp_cpyfn cpyfn, long arg_size, long arg_align, bool if_clause,
			    unsigned flags, void **depend, int priority, void *detach);
extern __typeof__(GOMP_task) omp_self_GOMP_task __attribute__((alias("GOMP_task"), visibility("hidden")));

/* libgomp's task entry point (gcc 9 and later; older compilers pass fewer arguments, which the
 * runtime reads only when flags say they are there). A task created inside a recorded region gets
 * task_body and a block with the header in front; any other passes through. */
TPROF_EXPORT void GOMP_task(omp_fn fn, void *data, omp_cpyfn cpyfn, long arg_size, long arg_align, bool if_clause,
			    unsigned flags, void **depend, int priority, void *detach)
{
	void (*real)(omp_fn, void *, omp_cpyfn, long, long, bool, unsigned, void **, int, void *) =
		real_of(OMP_TASK, "GOMP_task", (void *)omp_self_GOMP_task, __builtin_return_address(0));
	int64_t id = tprof_tls.omp_region;
	/* a detached task's event handle is written by the runtime into the first word of data, which
	 * must then be the program's own block: such tasks pass through */
	if (!id || (flags & TASK_FLAG_DETACH) || tprof_tls.guard ||
	    !atomic_load_explicit(&tprof_recording, memory_order_relaxed) || arg_size < 0 || arg_size > TASK_MAX_ARGS ||
	    arg_align < 1 || arg_align > 64 || (arg_align & (arg_align - 1))) {
		real(fn, data, cpyfn, arg_size, arg_align, if_clause, flags, depend, priority, detach);
		return;
	}
	/* on the stack, sized to the block: an undeferred task runs inside this call, and recursive task
	 * code nests such calls */
	long off = ((long)sizeof(struct omp_task) + arg_align - 1) / arg_align * arg_align;
	unsigned char raw[off + arg_size + 64];
	unsigned char *block = (unsigned char *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
	struct omp_task t = {fn, cpyfn, data, id, off};
	memcpy(block, &t, sizeof(t));
	if (!cpyfn && arg_size)
		memcpy(block + off, data, (size_t)arg_size);
	long align = arg_align > (long)_Alignof(struct omp_task) ? arg_align : (long)_Alignof(struct omp_task);
	real(task_body, block, cpyfn ? task_copy : NULL, off + arg_size, align, if_clause, flags, depend, priority,
	     detach);
}
