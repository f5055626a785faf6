/* A preloaded clock_gettime that fakes time, as faketime does, for the tprof record test of
 * tests/integration/lifecycle.bats: CLOCK_REALTIME a year back, CLOCK_MONOTONIC 1000 s ahead. Put
 * in tprof record's own environment, it reaches the recorder too, whose clock pairs must still be
 * the real clocks the program's first pair was read from. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <time.h>

int clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*next)(clockid_t, struct timespec *);
	if (!next)
		next = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	int rc = next(id, ts);
	if (rc == 0 && id == CLOCK_REALTIME)
		ts->tv_sec -= 365 * 86400;
	else if (rc == 0 && id == CLOCK_MONOTONIC)
		ts->tv_sec += 1000;
	return rc;
}
