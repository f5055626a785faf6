/* Children that start threads, join them and exit at once, N of them one after another: each
 * child's heap is empty at its end once the C library's own blocks are freed (the threads' TLS
 * vectors, stdout's buffer), which __libc_freeres does when the exiting thread is alone. A joined
 * thread still counts in the process for a moment after pthread_join has returned; with "slow",
 * for milliseconds: one thread takes a descriptor table of its own holding the last reference to
 * 32 MiB of shared memory, which the kernel frees in that thread's exit, after pthread_join has
 * returned. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int slow;

static void *work(void *arg)
{
	void *volatile p = malloc(64 + (size_t)(long)arg);
	free(p);
	if (slow && arg == 0 && unshare(CLONE_FILES) == 0) {
		int fd = memfd_create("join_exit", 0);
		static char page[1 << 16];
		memset(page, 1, sizeof(page));
		for (int k = 0; fd >= 0 && k < (32 << 20) / (int)sizeof(page); k++)
			if (write(fd, page, sizeof(page)) < 0)
				break;
	} /* the descriptor stays open: the thread's exit closes it */
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20;
	slow = argc > 2 && strcmp(argv[2], "slow") == 0;
	for (int i = 0; i < n; i++) {
		pid_t c = fork();
		if (c < 0)
			return 1;
		if (c == 0) {
			pthread_t t[4];
			for (long k = 0; k < 4; k++)
				pthread_create(&t[k], NULL, work, (void *)k);
			for (int k = 0; k < 4; k++)
				pthread_join(t[k], NULL);
			printf("child %d\n", i);
			exit(0);
		}
		int st;
		waitpid(c, &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			return 2;
	}
	return 0;
}
