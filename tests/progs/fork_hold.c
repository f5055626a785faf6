/* N fork children alive at once, each making K malloc/free pairs and then sleeping 300 ms, so that a
 * recorder with few descriptors cannot take them all; the parent allocates first, then reaps them
 * and prints how many ended well. usage: fork_hold N K */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 12, k = argc > 2 ? atoi(argv[2]) : 100000;
	void *volatile first = malloc(10);
	for (int i = 0; i < n; i++) {
		pid_t p = fork();
		if (p < 0)
			return 1;
		if (p == 0) {
			for (int j = 0; j < k; j++) {
				void *volatile q = malloc(100);
				free(q);
			}
			usleep(300000);
			_exit(0);
		}
	}
	int ok = 0, st;
	while (wait(&st) > 0)
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	free(first);
	printf("%d of %d ended well\n", ok, n);
	return 0;
}
