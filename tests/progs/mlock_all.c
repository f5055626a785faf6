/* A program that locks all its memory, present and future (mlockall(MCL_CURRENT | MCL_FUTURE)), as
 * real-time and security-minded programs do, then makes 1,000 malloc/free pairs from one site and
 * one from another. Prints its peak resident set size in MiB: tprof's own mappings must not be
 * faulted in and locked whole (with an 8 MiB locked memory limit, a non-root process could not
 * even map them). Exits 1 when mlockall fails. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/resource.h>

int main(void)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
		perror("mlockall");
		return 1;
	}
	for (int i = 0; i < 1000; i++) {
		void *volatile p = malloc(1000);
		free(p);
	}
	void *volatile q = malloc(24);
	free(q);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	printf("%ld\n", ru.ru_maxrss / 1024);
	return 0;
}
