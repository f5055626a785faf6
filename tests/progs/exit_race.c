/* Four threads each allocate and free, then call exit with their own number (1 to 4) at about the
 * same time, while main allocates on: which call ends the process is a race, and the trace must
 * carry the status the process really ended with. With "fork", main first makes a child that
 * allocates (under tprof it registers, and its parent's exit handlers then wait for the recorder to
 * have taken it): the thread in those handlers is held up while another's exit may end the process.
 * usage: exit_race [fork] */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *worker(void *arg)
{
	for (int i = 0; i < 2000; i++) {
		void *volatile p = malloc(64);
		free(p);
	}
	exit((int)(long)arg);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "fork") == 0) {
		pid_t c = fork();
		if (c < 0)
			return 8;
		if (c == 0) {
			void *volatile p = malloc(64);
			free(p);
			_exit(0);
		}
		if (waitpid(c, NULL, 0) != c)
			return 8;
	}
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(i + 1)) != 0)
			return 9;
	for (;;) {
		void *volatile p = malloc(64);
		free(p);
	}
}
