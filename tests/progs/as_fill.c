/* How much of its address space limit a program has for itself (tests/integration/lifecycle.bats):
 * allocates 1 MiB blocks until one fails, prints how many it got, frees them and exits 0. */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	static void *keep[1 << 16];
	int n = 0;
	while (n < (1 << 16) && (keep[n] = malloc(1 << 20)) != NULL)
		n++;
	printf("%d\n", n);
	for (int i = 0; i < n; i++)
		free(keep[i]);
	return 0;
}
