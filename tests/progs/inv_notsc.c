/* A program that turns the TSC off for itself, for tests/integration/invisible.bats: rdtsc then
 * faults (SIGSEGV) in its thread, in the threads it starts and in its fork children, and so does the
 * C library's clock_gettime where the TSC is the kernel's clock source. Bare and under the preload,
 * the output and the exit status must be the same.
 *
 *   inv_notsc tsc      prctl(PR_SET_TSC, PR_TSC_SIGSEGV) after a malloc(77777); then three more
 *                      malloc(77777) 20 ms apart, each followed by 100 malloc/free pairs, a thread
 *                      that makes 1000 pairs and a fork child that makes 100 and exits 3
 *   inv_notsc early    the same prctl before any heap call (the recorder this process starts
 *                      inherits the TSC off through its exec), then malloc(77777) twice, 20 ms apart
 *   inv_notsc strict   100 malloc(64), 50 of them freed; no-new-privileges and seccomp's strict mode
 *                      (by the seccomp system call; strict-prctl: by prctl), which allows read, write,
 *                      exit and sigreturn only; then 50 malloc(64), 100 frees and a malloc(20) (151
 *                      heap calls, none of which may make a system call), and the exit system call */
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pairs(int n)
{
	for (int k = 0; k < n; k++)
		free(malloc(16 + (size_t)(k % 100)));
}

static void *worker(void *arg)
{
	(void)arg;
	pairs(1000);
	return NULL;
}

static int tsc_off(void)
{
	void *keep[4];
	keep[0] = malloc(77777);
	pairs(100);
	if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
		perror("PR_SET_TSC");
		return 1;
	}
	for (int i = 1; i < 4; i++) {
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
		keep[i] = malloc(77777);
		pairs(100);
	}
	pthread_t t;
	if (pthread_create(&t, NULL, worker, NULL) != 0 || pthread_join(t, NULL) != 0)
		return 1;
	pid_t c = fork();
	if (c == 0) {
		pairs(100);
		exit(3);
	}
	int st = 0;
	waitpid(c, &st, 0);
	for (int i = 0; i < 4; i++)
		free(keep[i]);
	printf("tsc off: child %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

static int early(void)
{
	if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
		perror("PR_SET_TSC");
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
		void *volatile p = malloc(77777);
		free(p);
	}
	printf("early: ok\n");
	return 0;
}

static int strict(int by_prctl)
{
	void *v[100];
	for (int i = 0; i < 100; i++)
		v[i] = malloc(64);
	for (int i = 0; i < 100; i += 2)
		free(v[i]);
	fflush(stdout);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    (by_prctl ? prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0)
		      : syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 0, NULL)) != 0) {
		perror("strict mode");
		return 1;
	}
	static const char on[] = "strict\n", done[] = "done\n";
	if (write(1, on, sizeof(on) - 1) < 0)
		syscall(SYS_exit, 2);
	for (int i = 0; i < 100; i += 2)
		v[i] = malloc(64);
	for (int i = 0; i < 100; i++)
		free(v[i]);
	void *volatile last = malloc(20);
	(void)last;
	if (write(1, done, sizeof(done) - 1) < 0)
		syscall(SYS_exit, 2);
	syscall(SYS_exit, 0); /* exit_group is not allowed */
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "tsc") == 0)
		return tsc_off();
	if (argc > 1 && strcmp(argv[1], "early") == 0)
		return early();
	if (argc > 1 && strncmp(argv[1], "strict", 6) == 0)
		return strict(strcmp(argv[1], "strict-prctl") == 0);
	fprintf(stderr, "usage: inv_notsc tsc|early|strict|strict-prctl\n");
	return 1;
}
