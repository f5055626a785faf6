/* What the inv_* test programs share: output through write(2) from a stack buffer (so that the C
 * library allocates nothing for it), and a churn of malloc/free pairs of varied sizes. */
#ifndef INV_H
#define INV_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((format(printf, 2, 3), unused)) static void out(int fd, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof buf - 1)
		n = sizeof buf - 1;
	if (write(fd, buf, (size_t)n) != n)
		_exit(99);
}

#define say(...) out(1, __VA_ARGS__)

static void *volatile sink;

__attribute__((unused)) static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		void *p = malloc(16 + (size_t)(i % 512));
		sink = p;
		free(p);
	}
}

#endif
