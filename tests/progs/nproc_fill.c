/* How many processes a program may still fork under its user's process limit, after children that
 * allocated have come and gone (tests/integration/invisible.bats): 8 children allocate and exit at
 * once, then children that wait are forked until fork fails; prints how many and the errno, then
 * kills and reaps them. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	void *volatile p = malloc(10);
	(void)p;
	pid_t k[256];
	for (int i = 0; i < 8; i++)
		if ((k[i] = fork()) == 0) {
			void *volatile q = malloc(100);
			(void)q;
			usleep(100000);
			_exit(0);
		}
	for (int i = 0; i < 8; i++)
		if (k[i] > 0)
			waitpid(k[i], NULL, 0);
	usleep(300000);
	int n = 0, e = 0;
	for (; n < 256; n++) {
		k[n] = fork();
		if (k[n] == 0) {
			pause();
			_exit(0);
		}
		if (k[n] < 0) {
			e = errno;
			break;
		}
	}
	printf("%d %d\n", n, e);
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		kill(k[i], SIGKILL);
		waitpid(k[i], NULL, 0);
	}
	return 0;
}
