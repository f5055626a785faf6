/* A heap for the leak-scan benchmark (bench/leakscan.sh): MIB mebibytes (default 1024) of BYTES-byte
 * blocks (default 256), each the node of a singly linked list. Even nodes are on a list a global
 * holds (still reachable); odd nodes are on a list nothing holds (one definitely lost head, the
 * rest indirectly lost). So the scan follows a pointer out of every block. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void **kept;

int main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 1024;
	size_t bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : 256;
	uint64_t n = (mib << 20) / bytes;
	void **lost = NULL;
	for (uint64_t i = 0; i < n; i++) {
		void **b = malloc(bytes);
		if (!b)
			return 1;
		memset(b, 0, bytes);
		if (i & 1) {
			b[0] = lost;
			lost = b;
		} else {
			b[0] = kept;
			kept = b;
		}
	}
	lost = NULL;
	printf("%llu blocks of %zu bytes\n", (unsigned long long)n, bytes);
	return 0;
}
