/* A program that lowers its stack limit to 20 KiB (soft and hard, as `ulimit -s 20` does) once its
 * own stack has grown to 256 KiB, then makes its first heap call (tests/integration/invisible.bats).
 * Under tprof that call starts the recorder, which inherits the limit: the recorder must not die of
 * it (the program would run untraced and say so). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static void grow(void)
{
	volatile char pad[256 << 10];
	memset((char *)pad, 1, sizeof(pad));
}

int main(void)
{
	grow();
	struct rlimit r = {20 << 10, 20 << 10};
	if (setrlimit(RLIMIT_STACK, &r) != 0) {
		perror("setrlimit");
		return 1;
	}
	void *volatile p = malloc(100);
	free(p);
	puts("done");
	return 0;
}
