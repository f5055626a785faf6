/* A large private anonymous mapping, reserved without backing and almost never touched, that holds
 * the only pointer to one block in a page far into it; a second block is lost. The leak scan must
 * find the first (still reachable) without reading the untouched gigabytes (they read as zeros).
 * usage: sparse_map [GiB] (default 4) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int main(int argc, char **argv)
{
	size_t gib = argc > 1 ? strtoul(argv[1], NULL, 10) : 4;
	size_t len = gib << 30;
	char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED || gib < 2) {
		perror("mmap");
		return 2;
	}
	void *kept = malloc(48), *lost = malloc(80);
	memcpy(m + len - (1u << 30) + 40, &kept, sizeof(kept)); /* a page 1 GiB before the end */
	m[(1u << 30) + 5] = 1;                                /* and one more page touched */
	printf("%d\n", kept != NULL && lost != NULL);
	lost = NULL;
	return 0;
}
