/* pvalloc, which valgrind memcheck refuses to run, checked on its own: one pvalloc(10) that is
 * freed and one pvalloc(5000) that leaks. tprof counts the requested size (the argument). */
#include <malloc.h>
#include <stdlib.h>

int main(void)
{
	void *a = pvalloc(10);
	void *b = pvalloc(5000);
	free(a);
	return b == NULL;
}
