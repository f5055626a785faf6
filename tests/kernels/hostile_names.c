/* A program whose annotation and thread names are hostile to every output format tprof writes: quotes,
 * backslashes, newlines, control bytes, JSON and CSV delimiters, invalid UTF-8 and gnuplot commands
 * (system(...), backquotes). It calls a few libtnn kernels inside those ranges and allocates, so each
 * name reaches the op table, the timeline, the Chrome export and the plots. If any name were pasted
 * into a gnuplot script unquoted, the command would create the file named by $HOSTILE_CANARY (default
 * /tmp/tprof_hostile_canary); the tests check that it never appears. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tnn.h"
#include "tprof.h"

static const char *const names[] = {
	"quote\" back\\slash",
	"line\nbreak\r\ttab",
	"'; system('touch /tmp/tprof_hostile_canary'); print '",
	"\"; system(\"touch /tmp/tprof_hostile_canary\"); print \"",
	"`touch /tmp/tprof_hostile_canary`",
	"\x01\x1f ctl \x7f",
	"bad utf8 \xff\xfe \xc3",
	"comma,semi;\"csv\"",
	"</script><b>html</b>",
	"@x{1} $y %z ^w _v",
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Each range lasts at least 3 ms, so that on a loaded machine too it is wider than a pixel of the
 * timeline and its name is drawn (narrower ones are merged into one unnamed box). */
static void work(float *a, float *b, float *c, long n)
{
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		double t0 = now_ms();
		tprof_range_push(names[i]);
		tprof_mark(names[(i + 1) % (sizeof(names) / sizeof(names[0]))]);
		float *tmp = malloc((size_t)n * sizeof(float));
		tnn_add(tmp, a, b, n);
		tnn_relu_fwd(c, tmp, n);
		free(tmp);
		while (now_ms() - t0 < 3)
			;
		tprof_range_pop();
	}
}

static void *thread_main(void *arg)
{
	long n = 4096;
	float *a = calloc((size_t)n, sizeof(float)), *b = calloc((size_t)n, sizeof(float));
	float *c = calloc((size_t)n, sizeof(float));
	(void)arg;
	pthread_setname_np(pthread_self(), "\"th\n`x`\\");
	work(a, b, c, n);
	free(a), free(b), free(c);
	return NULL;
}

int main(void)
{
	long n = 4096;
	float *a = calloc((size_t)n, sizeof(float)), *b = calloc((size_t)n, sizeof(float));
	float *c = calloc((size_t)n, sizeof(float));
	pthread_t th;
	tprof_param("para\"ms\n", 42);
	tprof_param("x\xff", 1); /* three names that JSON reads alike (U+FFFD): one key, the last value */
	tprof_param("x\xfe", 2);
	tprof_param("x\xef\xbf\xbd", 3);
	for (int s = 0; s < 3; s++) {
		tprof_step();
		work(a, b, c, n);
	}
	tprof_step();
	if (pthread_create(&th, NULL, thread_main, NULL) == 0)
		pthread_join(th, NULL);
	free(a), free(b), free(c);
	puts("done");
	return 0;
}
