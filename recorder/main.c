/* tprof-recorder: the recorder libtprof.so starts (detached, in a session of its own) when a
 * traced process finds none to register with. It inherits the listening socket as a descriptor,
 * serves the process that started it and every traced descendant that finds it (recorder/server.c),
 * and exits a little after the last of them is gone. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recorder.h"

/* The stack the server runs on when the stack limit the recorder inherited is smaller: the
 * program's limit (ulimit -s 20) is not the recorder's, which died of it on its first connection,
 * and the program ran untraced. A thread's stack is mapped whatever the limit. */
#define SERVER_STACK (4u << 20)

static int serve_rc;

static void *serve(void *arg)
{
	serve_rc = tprof_server_run(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	int listen_fd = -1;
	pid_t root = 0;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--listen-fd") == 0)
			listen_fd = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--root") == 0)
			root = (pid_t)atoi(argv[i + 1]);
	}
	if (listen_fd < 0) {
		fprintf(stderr, "usage: tprof-recorder --listen-fd FD [--root PID]\n"
				"(started by libtprof.so; not meant to be run by hand)\n");
		return 2;
	}
	tprof_recorder_setup();
	struct tprof_server_opts o = {listen_fd, root, -1, 200, 1, -1, -1};
	if (root > 0)
		o.root_pidfd = (int)syscall(SYS_pidfd_open, (long)root, 0L);
	struct rlimit sl;
	pthread_attr_t at;
	pthread_t th;
	if (getrlimit(RLIMIT_STACK, &sl) == 0 && sl.rlim_cur != RLIM_INFINITY && sl.rlim_cur < SERVER_STACK &&
	    pthread_attr_init(&at) == 0) {
		int ok = pthread_attr_setstacksize(&at, SERVER_STACK) == 0 && pthread_create(&th, &at, serve, &o) == 0;
		pthread_attr_destroy(&at);
		if (ok) {
			pthread_join(th, NULL);
			return serve_rc;
		}
	}
	return tprof_server_run(&o);
}
