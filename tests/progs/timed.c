/* Heap calls at known moments, to check the timestamps of a trace: five malloc(77777) calls 20 ms
 * apart, each followed by a burst of 1000 small malloc/free pairs. */
#include <stdlib.h>
#include <time.h>

int main(void)
{
	void *keep[5];
	for (int i = 0; i < 5; i++) {
		if (i) {
			struct timespec ts = {0, 20000000};
			nanosleep(&ts, NULL);
		}
		keep[i] = malloc(77777);
		for (int k = 0; k < 1000; k++)
			free(malloc(16 + k % 100));
	}
	for (int i = 0; i < 5; i++)
		free(keep[i]);
	return 0;
}
