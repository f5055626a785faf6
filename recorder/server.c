/* The recorder's registration server. A traced process image connects, sends its shared memory
 * and its trace file (preload/region.c), and gets one byte back; the server sizes the memory file,
 * forks a writer process for the image (recorder/writer.c) and goes back to waiting. A process
 * that registers again under the same pid and start time has exec'd: its previous writer is told
 * through a pipe and finishes that trace. Writers are the server's children, reaped as they end.
 * Peers are checked: only processes of the recorder's own user (or any, for a root recorder) and
 * only for their own pid. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"
#include "shm.h"
#include "sys.h"

#define MAX_WRITERS 4096

static struct writer {
	pid_t writer;   /* 0: free */
	pid_t pid;
	uint64_t starttime;
	int exec_wfd;
} writers[MAX_WRITERS];
static int nwriters;
static int stderr_dropped;
static pid_t root_pid;
static int root_fd = -1;
static int drop_stderr;

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int tprof_proc_starttime(pid_t pid, uint64_t *start)
{
	char buf[1024];
	const char *t = tprof_stat_read(pid, buf, sizeof(buf));
	return t ? tprof_stat_field(t, 22, start) : -1;
}

int tprof_zombie_status(pid_t pid, uint64_t starttime, int *status)
{
	char buf[1024];
	uint64_t st, code;
	const char *t = tprof_stat_read(pid, buf, sizeof(buf));
	if (!t || (t[0] != 'Z' && t[0] != 'X') || tprof_stat_field(t, 22, &st) != 0 || st != starttime ||
	    tprof_stat_field(t, 52, &code) != 0)
		return -1;
	*status = (int)code;
	return 0;
}

static int live_writers_of(pid_t pid);

/* Lets stderr go once the root process is gone and its trace is written: stderr may be a pipe that
 * someone reads to its end (a shell's command substitution), which must not wait for processes the
 * root left behind. in_writer: a writer process asks (it cannot see the other writers). */
static void check_root(int in_writer)
{
	if (stderr_dropped || root_fd < 0 || !drop_stderr)
		return;
	struct pollfd pf = {root_fd, POLLIN, 0};
	if (poll(&pf, 1, 0) != 1 || (!in_writer && live_writers_of(root_pid) != 0))
		return;
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 2);
		close(devnull);
	}
	stderr_dropped = 1;
}

int tprof_recorder_stderr_ok(pid_t traced)
{
	if (traced == root_pid)
		return 1;
	check_root(1);
	return !stderr_dropped;
}

/* Only the writers: tprof record's program is a child too, and must stay a zombie until its
 * writer has read how it ended. */
static void reap_writers(void)
{
	for (int i = 0; i < MAX_WRITERS && nwriters; i++) {
		int status;
		if (!writers[i].writer || waitpid(writers[i].writer, &status, WNOHANG) <= 0)
			continue;
		if (writers[i].exec_wfd >= 0)
			close(writers[i].exec_wfd);
		writers[i].writer = 0;
		nwriters--;
	}
}

/* Writers still at work on a process that is gone (they finish within milliseconds). */
static int finishing_writers(void)
{
	int n = 0;
	for (int i = 0; i < MAX_WRITERS; i++)
		n += writers[i].writer && kill(writers[i].pid, 0) != 0 && errno == ESRCH;
	return n;
}

static int live_writers_of(pid_t pid)
{
	int n = 0;
	for (int i = 0; i < MAX_WRITERS; i++)
		n += writers[i].writer && writers[i].pid == pid;
	return n;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* One registration: check, answer, fork the writer. */
static void take(int conn, int listen_fd)
{
	struct tprof_hello h;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {&h, sizeof(h)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	int fds[4] = {-1, -1, -1, -1}, nfds = 0;
	ssize_t r;
	do
		r = recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k && nfds < 4; i++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char no = 0, yes = 1;
	if (r != (ssize_t)sizeof(h) || nfds != 2 || h.magic != TPROF_SHM_MAGIC || h.version != TPROF_SHM_VERSION ||
	    getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cred.pid != h.pid ||
	    (cred.uid != getuid() && geteuid() != 0) || ftruncate(fds[0], (off_t)TPROF_SHM_FILE_BYTES) != 0) {
		send(conn, &no, 1, MSG_NOSIGNAL);
		close_fds(fds, nfds);
		return;
	}
	/* with the pid, the start time names the process for good (an exec keeps both) */
	uint64_t starttime;
	if (tprof_proc_starttime(h.pid, &starttime) != 0) {
		send(conn, &no, 1, MSG_NOSIGNAL);
		close_fds(fds, nfds);
		return;
	}
	int slot = -1;
	for (int i = 0; i < MAX_WRITERS && slot < 0; i++)
		if (!writers[i].writer)
			slot = i;
	int p[2];
	if (slot < 0 || pipe2(p, O_CLOEXEC) != 0) {
		send(conn, &no, 1, MSG_NOSIGNAL);
		close_fds(fds, nfds);
		return;
	}
	/* the same process again: an exec; its previous image's writer finishes that trace */
	for (int i = 0; i < MAX_WRITERS; i++) {
		if (writers[i].writer && writers[i].pid == h.pid && writers[i].starttime == starttime &&
		    writers[i].exec_wfd >= 0) {
			char one = 1;
			ssize_t w = write(writers[i].exec_wfd, &one, 1);
			(void)w;
			close(writers[i].exec_wfd);
			writers[i].exec_wfd = -1;
		}
	}
	send(conn, &yes, 1, MSG_NOSIGNAL);
	fflush(stderr);
	pid_t w = fork();
	if (w == 0) {
		close(listen_fd);
		close(conn);
		close(p[1]);
		for (int i = 0; i < MAX_WRITERS; i++)
			if (writers[i].writer && writers[i].exec_wfd >= 0)
				close(writers[i].exec_wfd);
		struct tprof_writer_args a = {
			.pid = h.pid, .starttime = starttime, .memfd = fds[0], .tracefd = fds[1],
			.exec_fd = p[0], .path = "the trace"};
		_exit(tprof_writer_run(&a));
	}
	close(p[0]);
	close_fds(fds, nfds);
	if (w < 0) {
		close(p[1]);
		return;
	}
	writers[slot] = (struct writer){w, h.pid, starttime, p[1]};
	nwriters++;
}

int tprof_server_run(const struct tprof_server_opts *o)
{
	root_pid = o->root;
	root_fd = o->root_pidfd;
	drop_stderr = o->drop_stderr;
	uint64_t idle_since = mono_ms();
	int root_gone = 0;
	for (;;) {
		reap_writers();
		check_root(0);
		if (!root_gone && root_fd >= 0) {
			struct pollfd pf = {root_fd, POLLIN, 0};
			root_gone = poll(&pf, 1, 0) == 1;
		}
		if (o->linger_ms < 0) {
			if (root_gone && live_writers_of(root_pid) == 0 && finishing_writers() == 0)
				return 0;
		} else if (nwriters == 0) {
			if (mono_ms() - idle_since >= (uint64_t)o->linger_ms)
				return 0;
		} else {
			idle_since = mono_ms();
		}
		struct pollfd pf = {o->listen_fd, POLLIN, 0};
		int n = poll(&pf, 1, 20);
		if (n <= 0)
			continue;
		int conn = accept4(o->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (conn < 0)
			continue;
		take(conn, o->listen_fd);
		close(conn);
		idle_since = mono_ms();
	}
}
