/* A framework-free unit-test helper: TEST_EQ-style checks that print both sides on failure, and TAP
 * output ("ok N name" / "not ok N name") that tests/run.sh counts. Include it once per test program. */
#ifndef TPROF_UNITTEST_H
#define TPROF_UNITTEST_H

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int ut_failed_checks; /* failed checks in the current test case */
static int ut_cases, ut_fail_cases;

#define CHECK(cond)                                                                               \
	do {                                                                                      \
		if (!(cond)) {                                                                    \
			printf("# %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
			ut_failed_checks++;                                                       \
		}                                                                                 \
	} while (0)

#define CHECK_EQ(a, b)                                                                            \
	do {                                                                                      \
		long long ut_a = (long long)(a), ut_b = (long long)(b);                           \
		if (ut_a != ut_b) {                                                               \
			printf("# %s:%d: %s == %s: %lld != %lld\n", __FILE__, __LINE__, #a, #b,  \
			       ut_a, ut_b);                                                       \
			ut_failed_checks++;                                                       \
		}                                                                                 \
	} while (0)

#define CHECK_STR(a, b)                                                                           \
	do {                                                                                      \
		const char *ut_a = (a), *ut_b = (b);                                              \
		if (!ut_a || !ut_b || strcmp(ut_a, ut_b) != 0) {                                  \
			printf("# %s:%d: %s == %s: \"%s\" != \"%s\"\n", __FILE__, __LINE__, #a,  \
			       #b, ut_a ? ut_a : "(null)", ut_b ? ut_b : "(null)");              \
			ut_failed_checks++;                                                       \
		}                                                                                 \
	} while (0)

/* Runs one test case function and prints its TAP line. */
#define RUN(fn)                                                                                   \
	do {                                                                                      \
		ut_failed_checks = 0;                                                             \
		fn();                                                                             \
		ut_cases++;                                                                       \
		if (ut_failed_checks)                                                             \
			ut_fail_cases++;                                                          \
		printf("%sok %d %s\n", ut_failed_checks ? "not " : "", ut_cases, #fn);            \
		fflush(stdout);                                                                   \
	} while (0)

#define SKIP(fn, why)                                                                             \
	do {                                                                                      \
		ut_cases++;                                                                       \
		printf("ok %d %s # skip %s\n", ut_cases, #fn, why);                               \
	} while (0)

/* Ends main(): exit status 1 when any case failed. */
#define UT_DONE() (printf("1..%d\n", ut_cases), ut_fail_cases ? 1 : 0)

#endif
