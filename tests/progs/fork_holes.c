/* A traced parent's fork child is not given tprof's shared memory or stack table: their addresses
 * are free in the child, and the program may map its own memory there before its first heap call.
 * The child fills 128 MiB of new mappings with a pattern, then makes 1000 malloc/free pairs (it
 * registers, with memory and a table of its own), then checks the pattern: tprof must never unmap
 * or write what now lies at its parent's addresses. Exits 0 and prints "intact" when all is. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAPS 8
#define MAP_BYTES (16u << 20)

int main(void)
{
	void *volatile q = malloc(100); /* the parent registers: its memory and table are mapped */
	free(q);
	pid_t pid = fork();
	if (pid == 0) {
		unsigned char *m[MAPS];
		for (int i = 0; i < MAPS; i++) {
			m[i] = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (m[i] == MAP_FAILED)
				_exit(2);
			memset(m[i], 0x5a + i, MAP_BYTES);
		}
		for (int k = 0; k < 1000; k++) {
			void *volatile r = malloc(64 + (size_t)k);
			free(r);
		}
		int ok = 1;
		for (int i = 0; i < MAPS; i++)
			for (size_t j = 0; j < MAP_BYTES; j += 4096)
				ok &= m[i][j] == (unsigned char)(0x5a + i);
		printf("%s\n", ok ? "intact" : "corrupt");
		fflush(stdout);
		_exit(ok ? 0 : 1);
	}
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}
