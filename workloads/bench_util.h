/* Helpers shared by the workload benchmarks: command-line options from a table (with --help), a seeded
 * deterministic RNG, a monotonic clock and checked allocation. Header-only; every function is static. */
#ifndef TNN_BENCH_UTIL_H
#define TNN_BENCH_UTIL_H

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

// ----------------------------------------------------------------------------
// options

enum { OPT_INT, OPT_FLOAT, OPT_STR };

struct opt {
	const char *name; /* without the leading "--" */
	int type;
	void *ptr; /* int *, float * or const char ** */
	const char *help;
};

static inline void opt_usage(const char *prog, const char *what, const struct opt *o, int n)
{
	printf("usage: %s [options]\n%s\n\noptions (default in brackets):\n", prog, what);
	for (int i = 0; i < n; i++) {
		char def[64];
		if (o[i].type == OPT_INT)
			snprintf(def, sizeof def, "%d", *(int *)o[i].ptr);
		else if (o[i].type == OPT_FLOAT)
			snprintf(def, sizeof def, "%g", *(float *)o[i].ptr);
		else
			snprintf(def, sizeof def, "%s", *(const char **)o[i].ptr ? *(const char **)o[i].ptr : "");
		printf("  --%-14s %s [%s]\n", o[i].name, o[i].help, def);
	}
	printf("  --%-14s %s\n", "help", "print this help");
}

/* Parses "--name value" and "--name=value"; exits 0 after --help, 2 on a bad option: an unknown
 * one, a missing value, or a value that is not a whole int (in int's range) or a finite float. */
static inline void opt_parse(int argc, char **argv, const char *what, const struct opt *o, int n)
{
	for (int a = 1; a < argc; a++) {
		const char *arg = argv[a], *val = NULL;
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			opt_usage(argv[0], what, o, n);
			exit(0);
		}
		if (strncmp(arg, "--", 2) != 0)
			goto bad;
		arg += 2;
		size_t len = strcspn(arg, "=");
		int i;
		for (i = 0; i < n; i++)
			if (strlen(o[i].name) == len && strncmp(o[i].name, arg, len) == 0)
				break;
		if (i == n)
			goto bad;
		if (arg[len] == '=')
			val = arg + len + 1;
		else if (a + 1 < argc)
			val = argv[++a];
		else
			goto missing;
		char *end = NULL;
		errno = 0;
		if (o[i].type == OPT_INT) {
			long v = strtol(val, &end, 10);
			if (errno || v < INT_MIN || v > INT_MAX)
				goto bad_value;
			*(int *)o[i].ptr = (int)v;
		} else if (o[i].type == OPT_FLOAT) {
			float v = strtof(val, &end);
			if (errno || !isfinite(v))
				goto bad_value;
			*(float *)o[i].ptr = v;
		} else {
			*(const char **)o[i].ptr = val;
		}
		if (end && (*end || end == val))
			goto bad_value;
		continue;
	bad_value:
		fprintf(stderr, "%s: --%s: bad value '%s' (%s; try --help)\n", argv[0], o[i].name, val,
			o[i].type == OPT_INT ? "a whole number in int's range" : "a finite number");
		exit(2);
	missing:
		fprintf(stderr, "%s: --%s needs a value (try --help)\n", argv[0], o[i].name);
		exit(2);
	bad:
		fprintf(stderr, "%s: bad option '%s' (try --help)\n", argv[0], argv[a]);
		exit(2);
	}
}

/* Parses a comma-separated list of positive ints into out (at most max); returns the count or -1
 * (a value that is not a positive int, an empty item, a trailing comma). */
static inline int parse_int_list(const char *s, int *out, int max)
{
	int n = 0;
	while (*s) {
		char *end;
		errno = 0;
		long v = strtol(s, &end, 10);
		if (end == s || errno || v <= 0 || v > INT_MAX || n == max)
			return -1;
		out[n++] = (int)v;
		if (*end && *end != ',')
			return -1;
		if (*end == ',' && !end[1])
			return -1; /* "8," */
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

// ----------------------------------------------------------------------------
// RNG: xorshift64*, and Box-Muller normals

static inline uint32_t rng_u32(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return (uint32_t)((*s * 0x2545F4914F6CDD1DULL) >> 32);
}

static inline float rng_uniform(uint64_t *s) /* [0, 1) */
{
	return (rng_u32(s) >> 8) / 16777216.0f;
}

static inline float rng_normal(uint64_t *s)
{
	float u1 = rng_uniform(s), u2 = rng_uniform(s);
	return sqrtf(-2.0f * logf(u1 + 1e-12f)) * cosf(6.2831853f * u2);
}

static inline void fill_normal(float *x, size_t n, float std, uint64_t *s)
{
	for (size_t i = 0; i < n; i++)
		x[i] = std * rng_normal(s);
}

// ----------------------------------------------------------------------------
// time, memory

static inline double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static inline void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		fprintf(stderr, "out of memory (%zu x %zu bytes)\n", n, size);
		exit(1);
	}
	return p;
}

static inline void *xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p) {
		fprintf(stderr, "out of memory (%zu bytes)\n", size);
		exit(1);
	}
	return p;
}

static inline void print_mem(const char *kind, size_t bytes)
{
	printf("memory %-12s %10.2f MiB\n", kind, bytes / 1048576.0);
}

// ----------------------------------------------------------------------------
// per-step log of the classifier benches

struct step_log {
	int steps, log_every, batch;
	double total_ms, step_flops;
	float first_loss, loss;
};

/* Records step s (1-based) and prints its line when it is the first, the last or a logged one. */
static inline void step_log_step(struct step_log *l, int s, float loss, int correct, double ms,
				 double step_flops)
{
	l->loss = loss;
	l->step_flops = step_flops;
	if (s == 1) {
		l->first_loss = loss;
		printf("flops_per_step %.0f\n", step_flops); /* exact: tprof ops' figure to compare */
	}
	l->total_ms += ms;
	if (s == 1 || s == l->steps || s % l->log_every == 0)
		printf("step %d loss %.6f acc %.3f ms %.2f samples/s %.0f GFLOP/s %.1f\n", s, loss,
		       (double)correct / l->batch, ms, l->batch / (ms / 1e3), step_flops / (ms * 1e6));
}

/* Prints the loss change and the mean time per step. */
static inline void step_log_summary(const struct step_log *l)
{
	if (l->steps <= 0)
		return;
	double avg = l->total_ms / l->steps;
	printf("summary loss %.6f -> %.6f\n", l->first_loss, l->loss);
	printf("timing ms_per_step %.2f samples_per_s %.0f GFLOP/s %.1f\n", avg, l->batch / (avg / 1e3),
	       l->step_flops / (avg * 1e6));
}

#endif
