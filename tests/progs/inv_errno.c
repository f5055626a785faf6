/* What a program sees of errno and of failed allocations, for tests/integration/invisible.bats:
 * malloc(SIZE_MAX), a failed realloc, calloc and reallocarray overflows (NULL, ENOMEM, the original
 * block untouched), errno kept across successful calls, and reads and writes of descriptors no file
 * has (-1000 and -1001: EBADF, as bare, whatever numbers tprof uses internally). Prints what it saw on stdout (the same
 * bare and under the preload) and, on stderr, the heap totals it made itself, counted as
 * docs/FORMAT.md counts them:
 *   allocations A frees F bytes B failed X
 * Output goes through write(2) from a stack buffer, so that the C library allocates nothing. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inv.h"

static long allocs, frees, failed;
static unsigned long long bytes;

static void counted(size_t n)
{
	allocs++;
	bytes += n;
}

static const char *name(int e)
{
	const char *s = strerrorname_np(e);
	return s ? s : "?";
}

static const char *intact(const unsigned char *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return "CHANGED";
	return "intact";
}

int main(void)
{
	volatile size_t huge = SIZE_MAX, half = SIZE_MAX / 2;

	errno = 0;
	void *p = malloc(huge);
	failed++;
	out(1, "malloc(SIZE_MAX): %s errno=%s\n", p ? "non-NULL" : "NULL", name(errno));

	/* b is read back after the calls that failed to move it: through a volatile copy, which the
	 * compiler's use-after-free analysis does not follow */
	unsigned char *volatile b = malloc(64);
	counted(64);
	memset(b, 0x5a, 64);
	errno = 0;
	p = realloc(b, huge);
	failed++;
	out(1, "realloc(b, SIZE_MAX): %s errno=%s, b %s\n", p ? "non-NULL" : "NULL", name(errno),
	    intact(b, 64, 0x5a));

	errno = 0;
	p = calloc(half, 4);
	failed++;
	out(1, "calloc(SIZE_MAX/2, 4): %s errno=%s\n", p ? "non-NULL" : "NULL", name(errno));

	errno = 0;
	p = reallocarray(b, half, 4);
	failed++;
	out(1, "reallocarray(b, SIZE_MAX/2, 4): %s errno=%s, b %s\n", p ? "non-NULL" : "NULL",
	    name(errno), intact(b, 64, 0x5a));

	errno = 1234;
	p = malloc(100);
	counted(100);
	free(p);
	frees++;
	out(1, "errno after malloc+free: %d\n", errno);

	errno = 1234;
	p = calloc(10, 10);
	counted(100);
	p = realloc(p, 1000);
	counted(1000);
	frees++;
	free(p);
	frees++;
	out(1, "errno after calloc+realloc+free: %d\n", errno);

	errno = 1234;
	int rc = posix_memalign(&p, 64, 200);
	counted(200);
	free(p);
	frees++;
	out(1, "errno after posix_memalign+free: %d (returned %d)\n", errno, rc);

	errno = 1234;
	free(NULL);
	out(1, "errno after free(NULL): %d\n", errno);

	errno = 1234;
	p = malloc(16 << 20); /* served by mmap, given back by munmap */
	counted(16 << 20);
	free(p);
	frees++;
	out(1, "errno after a 16 MiB malloc+free: %d\n", errno);

	char c = 'x';
	errno = 0;
	ssize_t r = read(-1000, &c, 1);
	out(1, "read(-1000): %zd errno=%s\n", r, name(errno));
	errno = 0;
	r = write(-1001, &c, 1);
	out(1, "write(-1001): %zd errno=%s\n", r, name(errno));
	errno = 0;
	r = syscall(SYS_write, -1001, &c, 1);
	out(1, "syscall(SYS_write, -1001): %zd errno=%s\n", r, name(errno));

	free(b);
	frees++;
	out(2, "allocations %ld frees %ld bytes %llu failed %ld\n", allocs, frees, bytes, failed);
	return 0;
}
