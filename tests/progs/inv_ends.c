/* Every way a process ends, for tests/integration/invisible.bats. main first allocates MAIN_BLOCKS
 * blocks of MAIN_SIZE bytes and frees MAIN_FREED of them, writes on stderr what it did
 *   allocations 100 frees 60 bytes 300100
 * (the program allocates nothing else: output goes through write(2) from a stack buffer), then ends
 * as MODE says:
 *   exit              exit(3)
 *   return            returns 4 from main
 *   _exit             _exit(5)
 *   quick_exit        quick_exit(6); an at_quick_exit handler prints "at_quick_exit handler"
 *   abort             abort(): SIGABRT
 *   sigterm           raise(SIGTERM)
 *   segv              writes through a null pointer: SIGSEGV
 *   sigkill           kill(getpid(), SIGKILL) right after the last free
 *   exit_group        the raw exit_group system call, status 7, no C library on the way out
 *   thread_exit       a thread allocates THREAD_BLOCKS blocks of THREAD_SIZE bytes, frees
 *                     THREAD_FREED of them and calls exit(8) while main waits in pthread_join
 *   main_pthread_exit main calls pthread_exit; a worker waits until it has, allocates WORKER_BLOCKS
 *                     blocks of WORKER_SIZE bytes, frees WORKER_FREED and returns: status 0
 *   kill_threads      two threads allocate KT_BLOCKS blocks of KT_SIZE bytes each (kept), then main
 *                     sends SIGKILL to the process
 *   exec              execv("/bin/true")
 *   exit_exec         exit(3), whose atexit handler execs /bin/true (which makes no heap call)
 * A second argument "nodump" first makes the process non-dumpable (prctl): a recorder of the same
 * user, not its parent, may then not see its wait status in /proc.
 * The sizes are used by nothing else, so a trace's events of each size are the program's own. */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "inv.h"

#define MAIN_BLOCKS 100
#define MAIN_FREED 60
#define MAIN_SIZE 3001
#define THREAD_BLOCKS 50
#define THREAD_FREED 20
#define THREAD_SIZE 3002
#define WORKER_BLOCKS 200
#define WORKER_FREED 150
#define WORKER_SIZE 3003
#define KT_BLOCKS 500
#define KT_SIZE 3004

static void *blocks[1000];
static pthread_t main_thread;

static void alloc_free(void **v, int n, int freed, size_t size)
{
	for (int i = 0; i < n; i++)
		v[i] = malloc(size);
	for (int i = 0; i < freed; i++)
		free(v[i]);
}

static void on_quick_exit(void)
{
	out(1, "at_quick_exit handler\n");
}

static void *exiting_thread(void *arg)
{
	(void)arg;
	static void *v[THREAD_BLOCKS];
	alloc_free(v, THREAD_BLOCKS, THREAD_FREED, THREAD_SIZE);
	out(2, "thread: %d blocks of %d bytes, %d freed\n", THREAD_BLOCKS, THREAD_SIZE, THREAD_FREED);
	exit(8);
}

static void *late_worker(void *arg)
{
	(void)arg;
	/* wait until main has called pthread_exit: its task is a zombie then */
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)getpid());
	for (int tries = 0; tries < 2000; tries++) {
		FILE *f = fopen(path, "r");
		int zombie = 0;
		if (f) {
			size_t n = fread(buf, 1, sizeof buf - 1, f);
			buf[n] = 0;
			fclose(f);
			char *p = strrchr(buf, ')');
			zombie = p && p[1] == ' ' && p[2] == 'Z';
		}
		if (zombie || !f)
			break;
		usleep(1000);
	}
	static void *v[WORKER_BLOCKS];
	alloc_free(v, WORKER_BLOCKS, WORKER_FREED, WORKER_SIZE);
	out(2, "worker: %d blocks of %d bytes, %d freed\n", WORKER_BLOCKS, WORKER_SIZE, WORKER_FREED);
	return NULL;
}

static pthread_barrier_t kt_barrier;

static void *kt_thread(void *arg)
{
	void **v = arg;
	alloc_free(v, KT_BLOCKS, 0, KT_SIZE);
	pthread_barrier_wait(&kt_barrier);
	for (;;)
		pause();
	return NULL;
}

static void exec_true(void)
{
	char *args[] = {"true", NULL};
	execv("/bin/true", args);
	_exit(127);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "return";
	if (argc > 2 && !strcmp(argv[2], "nodump"))
		prctl(PR_SET_DUMPABLE, 0);
	main_thread = pthread_self();
	alloc_free(blocks, MAIN_BLOCKS, MAIN_FREED, MAIN_SIZE);
	out(2, "allocations %d frees %d bytes %d\n", MAIN_BLOCKS, MAIN_FREED, MAIN_BLOCKS * MAIN_SIZE);
	if (!strcmp(mode, "exit"))
		exit(3);
	if (!strcmp(mode, "return"))
		return 4;
	if (!strcmp(mode, "_exit"))
		_exit(5);
	if (!strcmp(mode, "quick_exit")) {
		at_quick_exit(on_quick_exit);
		quick_exit(6);
	}
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "sigterm")) {
		raise(SIGTERM);
		return 90;
	}
	if (!strcmp(mode, "segv")) {
		volatile int *p = NULL;
		*p = 1;
		return 90;
	}
	if (!strcmp(mode, "sigkill")) {
		kill(getpid(), SIGKILL);
		return 90;
	}
	if (!strcmp(mode, "exit_group")) {
		syscall(SYS_exit_group, 7);
		return 90;
	}
	if (!strcmp(mode, "thread_exit")) {
		pthread_t t;
		if (pthread_create(&t, NULL, exiting_thread, NULL) != 0)
			return 91;
		pthread_join(t, NULL);
		return 90;
	}
	if (!strcmp(mode, "main_pthread_exit")) {
		pthread_t t;
		if (pthread_create(&t, NULL, late_worker, NULL) != 0)
			return 91;
		pthread_exit(NULL);
	}
	if (!strcmp(mode, "kill_threads")) {
		static void *v[2][KT_BLOCKS];
		pthread_t t[2];
		pthread_barrier_init(&kt_barrier, NULL, 3);
		for (int i = 0; i < 2; i++)
			if (pthread_create(&t[i], NULL, kt_thread, v[i]) != 0)
				return 91;
		pthread_barrier_wait(&kt_barrier);
		out(2, "threads: 2 x %d blocks of %d bytes\n", KT_BLOCKS, KT_SIZE);
		kill(getpid(), SIGKILL);
		return 90;
	}
	if (!strcmp(mode, "exec")) {
		char *args[] = {"true", NULL};
		execv("/bin/true", args);
		return 127;
	}
	if (!strcmp(mode, "exit_exec")) {
		atexit(exec_true);
		exit(3);
	}
	out(2, "unknown mode %s\n", mode);
	return 2;
}
