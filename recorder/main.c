/* tprof-recorder: the recorder libtprof.so starts (detached, in a session of its own) when a
 * traced process finds none to register with. It inherits the listening socket as a descriptor,
 * serves the process that started it and every traced descendant that finds it (recorder/server.c),
 * and exits a little after the last of them is gone. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "recorder.h"

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
	struct tprof_server_opts o = {listen_fd, root, -1, 200, 1, -1};
	if (root > 0)
		o.root_pidfd = (int)syscall(SYS_pidfd_open, (long)root, 0L);
	return tprof_server_run(&o);
}
