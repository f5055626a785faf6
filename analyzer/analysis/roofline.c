/* Implementation of analysis/roofline.h: FMA-loop and STREAM-triad benchmarks run on one thread and on
 * one pinned thread per CPU, and tprof_roofline_get (the cache of roofline_cache.c, a measurement,
 * the TPROF_PEAK_GFLOPS override). */
#include "analysis/roofline.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ROOF_X86
#endif

#include "base/util.h"

// --- benchmark kernels -----------------------------------------------------------------------------

/* Independent accumulators per FMA loop: more than FMA latency x FMA pipes on current x86 and Arm
 * cores (4-5 cycles x 2), so the loop is bound by FMA throughput, not by latency. */
#define FMA_ACC 12

/* Runs iters iterations of FMA_ACC vector FMAs; returns a value that depends on every lane. */
typedef double fma_fn(long iters, double seed);

/* The kernels are kept out of line (one timed call each), optimized under DEBUG=1 too and, under SAN=1,
 * uninstrumented: the figures must be the machine's, not the build's, since they are cached. */
#ifdef __clang__
#define KERNEL __attribute__((noinline, no_sanitize("address", "undefined")))
#else
#define KERNEL __attribute__((noinline, optimize("O2"), no_sanitize("address", "undefined")))
#endif

/* acc = acc * a + b on FMA_ACC accumulators; a is just below 1, so every value settles near
 * b / (1 - a) and stays a normal number. The lanes are summed and returned so that the compiler cannot
 * drop any of the work. */
#define FMA_KERNEL(name, attrs, V, T, SET1, FMADD)                                   \
	attrs KERNEL static double name(long iters, double seed)                     \
	{                                                                            \
		V acc[FMA_ACC];                                                      \
		V a = SET1((T)0.999999), b = SET1((T)(seed * 1e-7));                 \
		for (int i = 0; i < FMA_ACC; i++)                                    \
			acc[i] = SET1((T)(seed + i));                                \
		for (long it = 0; it < iters; it++) {                                \
			_Pragma("GCC unroll 12") for (int i = 0; i < FMA_ACC; i++)   \
				acc[i] = FMADD(acc[i], a, b);                        \
		}                                                                    \
		V s = acc[0];                                                        \
		for (int i = 1; i < FMA_ACC; i++)                                    \
			s += acc[i];                                                 \
		double sum = 0;                                                      \
		for (size_t l = 0; l < sizeof(V) / sizeof(T); l++)                   \
			sum += s[l];                                                 \
		return sum;                                                          \
	}

#ifdef ROOF_X86
FMA_KERNEL(fma_avx512_f32, __attribute__((target("avx512f"))), __m512, float, _mm512_set1_ps, _mm512_fmadd_ps)
FMA_KERNEL(fma_avx512_f64, __attribute__((target("avx512f"))), __m512d, double, _mm512_set1_pd, _mm512_fmadd_pd)
FMA_KERNEL(fma_avx2_f32, __attribute__((target("avx2,fma"))), __m256, float, _mm256_set1_ps, _mm256_fmadd_ps)
FMA_KERNEL(fma_avx2_f64, __attribute__((target("avx2,fma"))), __m256d, double, _mm256_set1_pd, _mm256_fmadd_pd)

static int have_avx512f(void)
{
	return __builtin_cpu_supports("avx512f");
}

static int have_avx2_fma(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif

/* The fallback: 16-byte vectors of the compiler's default target (SSE2 on x86-64), mul + add unless the
 * target has an FMA. */
typedef float base_f32 __attribute__((vector_size(16)));
typedef double base_f64 __attribute__((vector_size(16)));
#define BASE_SET1_F32(x) ((base_f32){0} + (x))
#define BASE_SET1_F64(x) ((base_f64){0} + (x))
#define BASE_FMADD(x, y, z) ((x) * (y) + (z))
FMA_KERNEL(fma_base_f32, , base_f32, float, BASE_SET1_F32, BASE_FMADD)
FMA_KERNEL(fma_base_f64, , base_f64, double, BASE_SET1_F64, BASE_FMADD)

static int have_base(void)
{
	return 1;
}

/* Every ISA the FMA peak can be measured with, widest first. "baseline" is measured only when no other
 * one is available. */
static const struct isa_impl {
	const char *name;
	int (*supported)(void);
	fma_fn *f32, *f64;
	int lanes32, lanes64;
} isas[] = {
#ifdef ROOF_X86
	{"avx512f", have_avx512f, fma_avx512_f32, fma_avx512_f64, 16, 8},
	{"avx2+fma", have_avx2_fma, fma_avx2_f32, fma_avx2_f64, 8, 4},
#endif
	{"baseline", have_base, fma_base_f32, fma_base_f64, 4, 2},
};
#define NISAS (sizeof(isas) / sizeof(isas[0]))

int tprof_roofline_isa_supported(const char *name)
{
	for (size_t i = 0; i < NISAS; i++)
		if (strcmp(isas[i].name, name) == 0)
			return isas[i].supported();
	return 0;
}

/* STREAM triad over [lo, hi): a = b + s * c. The stores are ordinary ones (no non-temporal hints), like
 * the stores of the kernels the roofline is compared with. */
KERNEL static void triad_plain(double *restrict a, const double *restrict b, const double *restrict c, double s,
			       size_t lo, size_t hi)
{
	for (size_t i = lo; i < hi; i++)
		a[i] = b[i] + s * c[i];
}

#ifdef ROOF_X86
/* The same with 256-bit vectors, so that one core's figure is bound by memory and not by the issue of
 * scalar loads. lo and hi are multiples of 4. */
__attribute__((target("avx2"))) KERNEL static void triad_avx2(double *restrict a, const double *restrict b,
								const double *restrict c, double s, size_t lo,
								size_t hi)
{
	__m256d vs = _mm256_set1_pd(s);
	for (size_t i = lo; i < hi; i += 4) {
		__m256d sc = _mm256_mul_pd(vs, _mm256_loadu_pd(c + i));
		_mm256_storeu_pd(a + i, _mm256_add_pd(_mm256_loadu_pd(b + i), sc));
	}
}
#endif

static void triad(double *restrict a, const double *restrict b, const double *restrict c, double s, size_t lo,
		  size_t hi)
{
#ifdef ROOF_X86
	if (__builtin_cpu_supports("avx2")) {
		triad_avx2(a, b, c, s, lo, hi);
		return;
	}
#endif
	triad_plain(a, b, c, s, lo, hi);
}

// --- running a kernel on N threads -----------------------------------------------------------------

/* Every kernel result ends up here, so no computation is dead. */
static volatile double roof_sink;

static double clock_s(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* The CPUs this process may run on. */
struct cpus {
	int n;
	int pinned; /* 0 when the affinity mask was unreadable: threads are then not pinned */
	int id[CPU_SETSIZE];
};

static void get_cpus(struct cpus *c)
{
	cpu_set_t set;
	c->n = 0;
	c->pinned = 0;
	if (sched_getaffinity(0, sizeof(set), &set) == 0) {
		for (int i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set))
				c->id[c->n++] = i;
		c->pinned = c->n > 0;
	}
	if (c->n == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		c->n = n > 0 ? (int)(n < CPU_SETSIZE ? n : CPU_SETSIZE) : 1;
	}
}

enum job_kind { JOB_FMA, JOB_TRIAD, JOB_FILL };

/* One timed run: nthreads threads wait until all exist, then run the kernel on their share. */
struct job {
	enum job_kind kind;
	int nthreads;
	const struct cpus *pin; /* thread i runs on pin->id[i]; NULL: not pinned */
	fma_fn *fma;
	long iters;
	double *a, *b, *c; /* triad arrays of n doubles, split between the threads in multiples of 8 */
	size_t n;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int go; /* 1: start, -1: give up (a thread could not be created) */
};

struct worker {
	struct job *job;
	int idx;
	pthread_t th;
	double t0, t1, cpu0, cpu1, result;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct job *j = w->job;
	size_t blocks = j->n / 8, lo = blocks * w->idx / j->nthreads * 8,
	       hi = w->idx == j->nthreads - 1 ? j->n : blocks * (w->idx + 1) / j->nthreads * 8;
	pthread_mutex_lock(&j->mu);
	while (!j->go)
		pthread_cond_wait(&j->cv, &j->mu);
	int go = j->go;
	pthread_mutex_unlock(&j->mu);
	if (go < 0)
		return NULL;
	w->cpu0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	w->t0 = now_s();
	switch (j->kind) {
	case JOB_FMA:
		w->result = j->fma(j->iters, 1.0 + w->idx);
		break;
	case JOB_TRIAD:
		triad(j->a, j->b, j->c, 3.0, lo, hi);
		w->result = j->a[lo];
		break;
	case JOB_FILL: /* first touch by the thread that will use the pages */
		for (size_t i = lo; i < hi; i++) {
			j->a[i] = 0.0;
			j->b[i] = 1.0;
			j->c[i] = 2.0;
		}
		break;
	}
	w->t1 = now_s();
	w->cpu1 = clock_s(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

/* A thread that ran for less than this share of its wall time lost the CPU to another process: the
 * repetition is then "disturbed" and measures the machine's load rather than its speed. */
#define CLEAN_CPU_SHARE 0.9

/* What one run of a job took. */
struct run {
	double wall;    /* from the first thread's start to the last one's end, seconds */
	double per_cpu; /* the sum over the threads of 1 / (the thread's CPU seconds) */
	int clean;      /* every thread had its CPU for nearly all its wall time */
};

/* Runs the job and fills *out. Returns 0, or -1 when a thread could not be created. */
static int run_job(struct job *j, struct run *out)
{
	struct worker *w = xcalloc((size_t)j->nthreads, sizeof(*w));
	pthread_mutex_init(&j->mu, NULL);
	pthread_cond_init(&j->cv, NULL);
	j->go = 0;
	int created = 0, err = 0;
	for (; created < j->nthreads; created++) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		if (j->pin) {
			cpu_set_t set;
			CPU_ZERO(&set);
			CPU_SET(j->pin->id[created], &set);
			pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
		}
		w[created].job = j;
		w[created].idx = created;
		err = pthread_create(&w[created].th, &attr, worker_main, &w[created]);
		pthread_attr_destroy(&attr);
		if (err)
			break;
	}
	pthread_mutex_lock(&j->mu);
	j->go = err ? -1 : 1;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	double t0 = INFINITY, t1 = 0, sum = 0;
	out->per_cpu = 0;
	out->clean = 1;
	for (int i = 0; i < created; i++) {
		pthread_join(w[i].th, NULL);
		double cpu = w[i].cpu1 - w[i].cpu0;
		out->clean &= cpu >= CLEAN_CPU_SHARE * (w[i].t1 - w[i].t0);
		out->per_cpu += 1 / (cpu > 1e-9 ? cpu : 1e-9);
		t0 = w[i].t0 < t0 ? w[i].t0 : t0;
		t1 = w[i].t1 > t1 ? w[i].t1 : t1;
		sum += w[i].result;
	}
	roof_sink = roof_sink + sum;
	pthread_cond_destroy(&j->cv);
	pthread_mutex_destroy(&j->mu);
	free(w);
	out->wall = t1 > t0 ? t1 - t0 : 1e-9;
	if (err) {
		tprof_warn("roofline: cannot start thread %d of %d: %s", created + 1, j->nthreads, strerror(err));
		return -1;
	}
	return 0;
}

// --- the measurements ------------------------------------------------------------------------------

#define FMA_REPS 5        /* undisturbed repetitions of an FMA figure; the best is kept */
#define TRIAD_REPS 10     /* the same for the triad, which varies more (other VMs share the memory) */
#define MAX_TRIES(reps) (3 * (reps)) /* repetitions of a figure at most, when others keep disturbing them */
#define REP_SECONDS 0.010 /* length of one FMA repetition on one thread */

/* The best rate of one figure over its repetitions: work / wall time over the undisturbed ones; else,
 * when each thread's work is known, the sum of the threads' work / CPU time (what they did while they
 * had their CPU); else work / wall time over all of them. */
struct best {
	double clean, cpu, any;
	int nclean;
};

static void best_add(struct best *b, const struct run *run, double work, double thread_work)
{
	double rate = work / run->wall / 1e9;
	b->any = fmax(b->any, rate);
	b->cpu = fmax(b->cpu, thread_work * run->per_cpu / 1e9);
	if (run->clean) {
		b->clean = fmax(b->clean, rate);
		b->nclean++;
	}
}

static double best_rate(const struct best *b)
{
	return b->nclean ? b->clean : b->cpu > 0 ? b->cpu : b->any;
}

/* Runs the job on one (unpinned) thread and on one pinned thread per CPU, alternating, so that a burst
 * of load from other processes does not spoil every repetition of one of them, until each has `reps`
 * undisturbed repetitions or MAX_TRIES(reps) in all. work1 and work_all are the units of work (FLOPs, bytes)
 * of one run each way, thread_work that of each thread when every thread does the same (FLOPs), else 0
 * (bytes: a thread that loses its CPU leaves bandwidth to the others). The rates are in 1e9 units per
 * second. Sets *busy when a figure had no undisturbed repetition. Returns 0, or -1 when a thread could
 * not be started. */
static int repeat_job(struct job *j, const struct cpus *cpus, int reps, double work1, double work_all,
		      double thread_work, double *rate1, double *rate_all, int *busy)
{
	struct best b1 = {0}, ball = {0};
	struct run run;
	for (int tries = 0; tries < MAX_TRIES(reps) && (b1.nclean < reps || ball.nclean < reps); tries++) {
		if (b1.nclean < reps) {
			j->nthreads = 1;
			j->pin = NULL;
			if (run_job(j, &run) < 0)
				return -1;
			best_add(&b1, &run, work1, thread_work);
		}
		if (ball.nclean < reps) {
			j->nthreads = cpus->n;
			j->pin = cpus->pinned ? cpus : NULL;
			if (run_job(j, &run) < 0)
				return -1;
			best_add(&ball, &run, work_all, thread_work);
		}
	}
	*rate1 = best_rate(&b1);
	*rate_all = best_rate(&ball);
	*busy |= !b1.nclean || !ball.nclean;
	return 0;
}

/* Best GFLOP/s of f (lanes elements per vector) on one thread and on every CPU. */
static int measure_fma(fma_fn *f, int lanes, const struct cpus *cpus, double *g1, double *gall, int *busy)
{
	struct job j = {.kind = JOB_FMA, .nthreads = 1, .fma = f, .iters = 1024};
	struct run run;
	/* Calibration, which also wakes the core up: the iterations that take REP_SECONDS on one thread. */
	for (;;) {
		if (run_job(&j, &run) < 0)
			return -1;
		if (run.wall >= 0.002 || j.iters > LONG_MAX / 8)
			break;
		j.iters *= 4;
	}
	j.iters = (long)(j.iters * (REP_SECONDS / run.wall)) + 1;
	double flops = (double)j.iters * FMA_ACC * lanes * 2; /* per thread; an FMA is 2 FLOPs */
	return repeat_job(&j, cpus, FMA_REPS, flops, flops * cpus->n, flops, g1, gall, busy);
}

/* Bytes of each triad array: twice the largest cache of CPU 0, within [64 MiB, 256 MiB]; 64 MiB when
 * sysfs does not say. The three arrays together are then at least 6 times that cache, so a pass finds
 * next to nothing of its data in it. (STREAM asks for 4 times per array; but the kernel zeroes fresh
 * pages, which in a VM can take longer than the whole measurement, and the figure is the same within
 * noise.) */
static size_t triad_array_bytes(void)
{
	size_t largest = 0;
	for (int i = 0; i < 8; i++) {
		char path[96];
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		unsigned long v = 0;
		char unit = 0;
		if (fscanf(f, "%lu%c", &v, &unit) >= 1) {
			size_t bytes = unit == 'K' ? v << 10 : unit == 'M' ? v << 20 : unit == 'G' ? v << 30 : v;
			largest = bytes > largest ? bytes : largest;
		}
		fclose(f);
	}
	size_t want = 2 * largest;
	want = want < ((size_t)64 << 20) ? (size_t)64 << 20 : want;
	want = want > ((size_t)256 << 20) ? (size_t)256 << 20 : want;
	return want;
}

/* Best triad GB/s on one thread and on one pinned thread per CPU; both stay 0 when not even 3 x 16 MiB
 * could be mapped. Returns -1 when a thread could not be started. */
static int measure_triad(const struct cpus *cpus, struct tprof_roofline *r)
{
	const size_t huge = (size_t)2 << 20;
	size_t bytes = triad_array_bytes(), len = 0;
	char *map = MAP_FAILED;
	for (; bytes >= ((size_t)16 << 20); bytes /= 2) {
		/* The arrays start at different offsets within a page, so that a[i], b[i] and c[i] do not
		 * share cache sets; the mapping is aligned to 2 MiB for transparent huge pages. */
		len = 3 * (bytes + 4096) + huge;
		map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (map != MAP_FAILED)
			break;
	}
	if (map == MAP_FAILED)
		return 0;
	char *base = (char *)(((uintptr_t)map + huge - 1) & ~(uintptr_t)(huge - 1));
	madvise(base, len - (size_t)(base - map), MADV_HUGEPAGE);
	size_t n = bytes / sizeof(double);
	struct job j = {.kind = JOB_FILL, .nthreads = cpus->n, .pin = cpus->pinned ? cpus : NULL, .n = n};
	j.a = (double *)(base + 1088);
	j.b = (double *)(base + (bytes + 4096) + 2176);
	j.c = (double *)(base + 2 * (bytes + 4096) + 3264);
	struct run run;
	int rc = run_job(&j, &run);
	double moved = 3.0 * sizeof(double) * n; /* STREAM's count: no write-allocate */
	j.kind = JOB_TRIAD;
	if (rc == 0)
		rc = repeat_job(&j, cpus, TRIAD_REPS, moved, moved, 0, &r->stream_gbs_1core, &r->stream_gbs_all,
				&r->busy);
	roof_sink = roof_sink + j.a[n / 2] + j.a[n - 1];
	r->stream_array_mib = (double)bytes / (1 << 20);
	munmap(map, len);
	return rc;
}

/* The CPU model: "model name" in /proc/cpuinfo (x86), else the implementer and part numbers (Arm). */
static void cpu_model(char *buf, size_t size)
{
	char line[512], impl[64] = "", part[64] = "";
	snprintf(buf, size, "unknown");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');
		if (!colon)
			continue;
		char *v = colon + 1;
		v += strspn(v, " \t");
		v[strcspn(v, "\n")] = 0;
		for (char *e = v + strlen(v); e > v && (e[-1] == ' ' || e[-1] == '\t');)
			*--e = 0;
		if (strncmp(line, "model name", 10) == 0 && *v) {
			snprintf(buf, size, "%s", v);
			impl[0] = 0;
			break;
		}
		if (strncmp(line, "CPU implementer", 15) == 0 && !impl[0])
			snprintf(impl, sizeof(impl), "%s", v);
		if (strncmp(line, "CPU part", 8) == 0 && !part[0])
			snprintf(part, sizeof(part), "%s", v);
	}
	fclose(f);
	if (impl[0])
		snprintf(buf, size, "implementer %s part %s", impl, part);
}

int tprof_roofline_measure(struct tprof_roofline *r)
{
	double start = now_s();
	struct cpus *cpus = xmalloc(sizeof(*cpus));
	int rc = 0;
	memset(r, 0, sizeof(*r));
	get_cpus(cpus);
	r->cores = cpus->n;
	cpu_model(r->cpu, sizeof(r->cpu));
	for (size_t i = 0; i < NISAS && rc == 0; i++) {
		const struct isa_impl *isa = &isas[i];
		if (!isa->supported() || (strcmp(isa->name, "baseline") == 0 && r->nisa > 0))
			continue;
		struct tprof_roofline_isa *o = &r->by_isa[r->nisa++];
		snprintf(o->name, sizeof(o->name), "%s", isa->name);
		rc = measure_fma(isa->f32, isa->lanes32, cpus, &o->fp32_gflops_1core, &o->fp32_gflops_all, &r->busy);
		if (rc == 0)
			rc = measure_fma(isa->f64, isa->lanes64, cpus, &o->fp64_gflops_1core, &o->fp64_gflops_all,
					 &r->busy);
	}
	if (rc == 0)
		rc = measure_triad(cpus, r);
	free(cpus);
	if (rc)
		return -1;
	int best = 0;
	for (int i = 1; i < r->nisa; i++)
		if (r->by_isa[i].fp32_gflops_all > 1.02 * r->by_isa[best].fp32_gflops_all)
			best = i;
	const struct tprof_roofline_isa *b = &r->by_isa[best];
	snprintf(r->isa, sizeof(r->isa), "%s", b->name);
	r->fp32_gflops_1core = b->fp32_gflops_1core;
	r->fp32_gflops_all = b->fp32_gflops_all;
	r->fp64_gflops_1core = b->fp64_gflops_1core;
	r->fp64_gflops_all = b->fp64_gflops_all;
	snprintf(r->source, sizeof(r->source), "measured");
	snprintf(r->others_from, sizeof(r->others_from), "measured");
	r->seconds = now_s() - start;
	r->measured_at = (int64_t)time(NULL);
	return 0;
}

// --- derived figures -------------------------------------------------------------------------------

double tprof_roofline_ridge(const struct tprof_roofline *r, int fp_bits)
{
	double peak = fp_bits == 64 ? r->fp64_gflops_all : r->fp32_gflops_all;
	return peak > 0 && r->stream_gbs_all > 0 ? peak / r->stream_gbs_all : 0;
}

double tprof_roofline_attainable(const struct tprof_roofline *r, int fp_bits, double flop_per_byte)
{
	double peak = fp_bits == 64 ? r->fp64_gflops_all : r->fp32_gflops_all;
	double mem = flop_per_byte * r->stream_gbs_all;
	return r->stream_gbs_all > 0 && mem < peak ? mem : peak;
}

int tprof_roofline_get(struct tprof_roofline *r, int flags)
{
	struct tprof_roofline here = {0};
	char path[sizeof(r->cache_path)];
	struct cpus *cpus = xmalloc(sizeof(*cpus));
	get_cpus(cpus);
	here.cores = cpus->n;
	free(cpus);
	cpu_model(here.cpu, sizeof(here.cpu));
	tprof_roofline_cache_path(path, sizeof(path));

	double peak = 0;
	const char *env = getenv("TPROF_PEAK_GFLOPS");
	if (env && *env) {
		char *end;
		peak = strtod(env, &end);
		if (*end || !isfinite(peak) || peak <= 0) {
			tprof_warn("ignoring TPROF_PEAK_GFLOPS='%s': not a positive number of GFLOP/s", env);
			peak = 0;
		}
	}

	int have = 0, saved = 0;
	if (!(flags & TPROF_ROOFLINE_REMEASURE) && path[0]) {
		int c = tprof_roofline_cache_read(path, &here, r);
		if (c < 0)
			tprof_warn("ignoring the roofline cache %s: %s", path,
				  c == -2 ? "not the JSON object tprof writes" : strerror(errno));
		have = c == 0;
	}
	if (!have && ((flags & TPROF_ROOFLINE_REMEASURE) || ((flags & TPROF_ROOFLINE_MEASURE) && peak == 0))) {
		tprof_note("measuring this machine's roofline (a few seconds)...");
		have = tprof_roofline_measure(r) == 0;
		if (have && path[0]) {
			saved = tprof_roofline_cache_write(r, path) == 0;
			if (!saved)
				tprof_warn("cannot write the roofline cache %s: %s", path, strerror(errno));
		}
	}
	if (!have) {
		*r = here;
		snprintf(r->source, sizeof(r->source), "none");
		snprintf(r->others_from, sizeof(r->others_from), "none");
	}
	snprintf(r->cache_path, sizeof(r->cache_path), "%s", path);
	r->cache_saved = saved;
	if (peak > 0) {
		r->fp32_gflops_all = peak;
		snprintf(r->source, sizeof(r->source), "TPROF_PEAK_GFLOPS");
	}
	return r->fp32_gflops_all > 0 ? 0 : -1;
}
