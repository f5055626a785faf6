/* Programs whose first heap call is the C library's own, made while it holds a lock of its own, or
 * whose last act leaves an error for dlerror() pending, to check that tprof neither waits for that
 * lock nor takes the message away:
 *   atexit   registers 32 exit handlers before any heap call: the 32nd's table is allocated (calloc)
 *            while glibc holds the lock of the exit handlers;
 *   quick    the same with 33 at_quick_exit handlers;
 *   dlerror  a dlopen that fails, and the program ends without asking dlerror(): the message is
 *            freed by __libc_freeres at exit (memcheck's too), and must be freed there under tprof.
 * Exits 0. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

static void handler(void)
{
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "atexit";
	if (strcmp(mode, "atexit") == 0) {
		for (int i = 0; i < 32; i++)
			atexit(handler);
	} else if (strcmp(mode, "quick") == 0) {
		for (int i = 0; i < 33; i++)
			at_quick_exit(handler);
	} else if (strcmp(mode, "dlerror") == 0) {
		if (dlopen("/nonexistent/libnothere.so", RTLD_NOW) != NULL)
			return 1;
	} else {
		return 2;
	}
	return 0;
}
