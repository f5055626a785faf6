/* tprof's annotation API: a program marks its iterations, phases and layers, and `tprof ops` (--by
 * range, the step statistics) and `tprof compare` report per step and per range. Header-only: the
 * calls find libtprof.so's entry point once with dlsym(RTLD_DEFAULT) and become no-ops when the
 * program runs without the preload, so an annotated program needs no tprof to build or to run (link
 * with -ldl on C libraries older than glibc 2.34).
 *
 *   tprof_step();                    an iteration boundary: steps are the intervals between them
 *                                    (call it before the first iteration and after each one)
 *   tprof_range_push("forward");     a named range on the calling thread, nested ranges form paths
 *   tprof_range_pop();               ("step/forward/layer0")
 *   tprof_mark("checkpoint");        an instant
 *   tprof_param("params", n);        a named number, e.g. the parameter count (tprof compare)
 *
 * Names are copied (at most 63 bytes kept, cut before a UTF-8 character the limit falls inside); an
 * empty name is no name, as NULL. A process keeps 4,095 distinct names; calls with a name beyond those
 * are recorded without one (shown as "?"). Steps are the process's: the boundaries of every thread
 * form one sequence (mark them on one thread). tprof ops --by range keeps 64 levels of nesting; deeper
 * ranges count in the 64th. A call from a signal handler that interrupted its thread inside a call
 * of tprof's is kept for that call to record after its own (beyond 16 of them waiting, lost and
 * counted). A call costs about one clock read when tracing. */
#ifndef TPROF_H
#define TPROF_H

#include <dlfcn.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef void (*tprof_annotate_fn)(int kind, const char *name, int64_t value);

/* libtprof.so's tprof_annotate, or NULL without the preload; looked up once per translation unit. */
static inline tprof_annotate_fn tprof_annotate_entry(void)
{
	static tprof_annotate_fn fn;
	static int looked;
	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		void *p = dlsym(RTLD_DEFAULT, "tprof_annotate");
		__builtin_memcpy(&fn, &p, sizeof(fn));
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	return fn;
}

/* Kinds: the values of enum tprof_annot_kind in include/tprof_trace.h. */
static inline void tprof_range_push(const char *name)
{
	tprof_annotate_fn f = tprof_annotate_entry();
	if (f)
		f(1, name, 0);
}

static inline void tprof_range_pop(void)
{
	tprof_annotate_fn f = tprof_annotate_entry();
	if (f)
		f(2, 0, 0);
}

static inline void tprof_step(void)
{
	tprof_annotate_fn f = tprof_annotate_entry();
	if (f)
		f(3, 0, 0);
}

static inline void tprof_mark(const char *name)
{
	tprof_annotate_fn f = tprof_annotate_entry();
	if (f)
		f(4, name, 0);
}

static inline void tprof_param(const char *name, int64_t value)
{
	tprof_annotate_fn f = tprof_annotate_entry();
	if (f)
		f(5, name, value);
}

#ifdef __cplusplus
}
#endif
#endif
