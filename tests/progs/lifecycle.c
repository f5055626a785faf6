/* One program, many ways to live and die, for the lifecycle tests. Every mode allocates known
 * blocks first (LEAK_N blocks of LEAK_SIZE bytes that are never freed), then:
 *   exit        returns from main
 *   _exit       calls _exit(7)
 *   abort       calls abort()
 *   kill        sleeps so the writer drains, then SIGKILLs itself
 *   segv        writes through a NULL pointer
 *   fork        forks; the child leaks CHILD_N more blocks and exits; the parent waits
 *   thread      a thread allocates THREAD_N blocks, leaks them and exits early; main goes on
 *   exec        execs `true` (argv[2] names it) through execvp
 *   errno       checks that errno survives every hook; exits 0 when it does
 *   rename      a thread named "first-name" allocates, then renames itself RENAMED (hostile bytes)
 *               and returns; main waits until the writer has seen it end, then allocates and names
 *               itself "main-renamed": the trace must carry both later names
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEAK_N 100
#define LEAK_SIZE 1000
#define CHILD_N 10
#define THREAD_N 50

static void *sink[LEAK_N + CHILD_N + THREAD_N];

static void *early_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < THREAD_N; i++)
		sink[LEAK_N + CHILD_N + i] = malloc(333);
	pthread_exit(NULL);
}

/* quote, newline, a byte that is not UTF-8, backquotes, backslash, and a newline of its own at the
 * end: 9 of the 15 bytes a thread name can have */
#define RENAMED "w\n\"\xff`x`\\\n"

static void *renaming_thread(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "first-name");
	sink[LEAK_N] = malloc(11);
	usleep(100000); /* the writer writes the thread, under its first name */
	pthread_setname_np(pthread_self(), RENAMED);
	sink[LEAK_N + 1] = malloc(22);
	return NULL;
}

static int check_errno(void)
{
	int bad = 0;
	errno = 4242;
	void *p = malloc(10);
	bad |= errno != 4242;
	p = realloc(p, 100);
	bad |= errno != 4242;
	free(p);
	bad |= errno != 4242;
	p = calloc(3, 3);
	bad |= errno != 4242;
	free(p);
	free(NULL);
	bad |= errno != 4242;
	errno = 0;
	p = malloc(SIZE_MAX / 2); /* fails: errno must be the C library's ENOMEM */
	bad |= p != NULL || errno != ENOMEM;
	errno = 0;
	volatile size_t huge = SIZE_MAX / 2;
	p = calloc(huge, 4); /* overflow */
	bad |= p != NULL || errno != ENOMEM;
	void *q;
	bad |= posix_memalign(&q, 3, 10) != EINVAL; /* not a power of two */
	if (bad)
		fprintf(stderr, "errno not preserved\n");
	return bad;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "exit";
	for (int i = 0; i < LEAK_N; i++)
		sink[i] = malloc(LEAK_SIZE);
	if (!strcmp(mode, "exit"))
		return 0;
	if (!strcmp(mode, "_exit"))
		_exit(7);
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "kill")) {
		usleep(300000);
		raise(SIGKILL);
	}
	if (!strcmp(mode, "segv")) {
		volatile int *p = NULL;
		*p = 1;
	}
	if (!strcmp(mode, "fork")) {
		pid_t pid = fork();
		if (pid == 0) {
			for (int i = 0; i < CHILD_N; i++)
				sink[LEAK_N + i] = malloc(77);
			exit(0);
		}
		int st;
		waitpid(pid, &st, 0);
		printf("%d\n", (int)pid);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	if (!strcmp(mode, "thread")) {
		pthread_t t;
		pthread_create(&t, NULL, early_thread, NULL);
		pthread_join(t, NULL);
		usleep(400000); /* the writer sees the thread gone */
		void *p = malloc(5);
		free(p);
		return 0;
	}
	if (!strcmp(mode, "exec")) {
		char *args[] = {argc > 2 ? argv[2] : "true", NULL};
		execvp(args[0], args);
		return 127;
	}
	if (!strcmp(mode, "rename")) {
		pthread_t t;
		pthread_create(&t, NULL, renaming_thread, NULL);
		pthread_join(t, NULL);
		usleep(400000); /* the writer sees the thread gone */
		sink[LEAK_N + 2] = malloc(33);
		pthread_setname_np(pthread_self(), "main-renamed");
		return 0;
	}
	if (!strcmp(mode, "errno"))
		return check_errno();
	fprintf(stderr, "unknown mode %s\n", mode);
	return 2;
}
