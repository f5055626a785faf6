/* The recorder's registration server. A traced process image connects, sends its shared memory
 * and its trace file (preload/region.c), and gets one byte back; the server sizes the memory file,
 * starts a writer thread for the image (recorder/writer.c) and goes back to waiting. It also waits
 * on every traced process's pidfd, so that a writer learns of its process's end (and its zombie is
 * read) at once. A process that registers again under the same pid and start time has exec'd: its
 * previous writer finishes that trace. Peers are checked: only processes of the recorder's own user
 * (or any, for a root recorder) and only for their own pid. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "recorder.h"
#include "shm.h"
#include "sys.h"

#define MAX_WRITERS 4096

static struct entry {
	struct tprof_writer *w; /* NULL: free */
	pid_t pid;
	uint64_t starttime;
	int pidfd; /* -1 once the process is gone */
	int root;  /* tprof record's program, registered before it ended (root_status_read) */
} entries[MAX_WRITERS];
static int nentries, high; /* in use; every used entry is below high */
static _Atomic int stderr_dropped;
int tprof_recorder_pdeathsig;
static pid_t root_pid;
static char root_trace[4096]; /* the trace of root's last image */
static int root_fd = -1, root_gone;
static int drop_stderr;
static int record_mode; /* tprof record's server: it holds the same stderr itself until root ends */
static int wake_fd = -1;

static uint64_t mono_ms(void)
{
	struct timespec ts;
	tprof_sys_clock(CLOCK_MONOTONIC, &ts); /* not a faked clock (writer.c, now_tick) */
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int tprof_proc_starttime(pid_t pid, uint64_t *start)
{
	char buf[1024];
	const char *t = tprof_stat_read(pid, buf, sizeof(buf));
	return t ? tprof_stat_field(t, 22, start) : -1;
}

/* The kernel shows a zombie's wait status in /proc only to a reader that may ptrace it (a process
 * made non-dumpable, by prctl or a change of its user ids, is not one for a recorder of the same
 * user), and 0 to any other; such a reader also sees 0 for its wait channel (field 35), which one
 * that may see it gets as 1 for a task that is not running, from Linux 5.16 on (before, the field
 * is 0 for a zombie either way, and a 0 status is taken as it reads). Set in tprof_server_run. */
static int wchan_tells;

/* /proc/PID/stat of a zombie (or a task being reaped): its start time (field 22) and wait status
 * (field 52); 0 on success, -1 when pid is no zombie, or when its status is hidden from this
 * process (above: a status of 0 is then not taken for an exit(0)). Whose zombie it is, the caller
 * checks. */
static int zombie_read(pid_t pid, uint64_t *start, int *status)
{
	char buf[1024];
	uint64_t code, wchan;
	const char *t = tprof_stat_read(pid, buf, sizeof(buf));
	if (!t || (t[0] != 'Z' && t[0] != 'X') || tprof_stat_field(t, 22, start) != 0 ||
	    tprof_stat_field(t, 52, &code) != 0 || tprof_stat_field(t, 35, &wchan) != 0 ||
	    (code == 0 && wchan == 0 && wchan_tells))
		return -1;
	*status = (int)code;
	return 0;
}

/* The kernel keeps a process's exit status for its pidfds once it is reaped (PIDFD_INFO_EXIT, Linux
 * 6.15): then the recorder reads no start time from /proc (about 10 us on a VM): the pidfd names
 * the process, and a zombie read is checked against it (tprof_zombie_status_pidfd). */
static int pidfd_exit_ok;

/* The wait status of the process a pidfd names once it has ended, even after it was reaped
 * (PIDFD_GET_INFO with PIDFD_INFO_EXIT, Linux 6.15); 0 on success. */
struct pidfd_info_v0 {
	uint64_t mask, cgroupid;
	uint32_t pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	int32_t exit_code;
	uint32_t coredump_mask, spare;
};
#define PIDFD_GET_INFO_V0 _IOWR(0xFF, 11, struct pidfd_info_v0)
#define PIDFD_INFO_EXIT_BIT 8u

int tprof_pidfd_status(int pidfd, int *status)
{
	struct pidfd_info_v0 in;
	memset(&in, 0, sizeof(in));
	in.mask = PIDFD_INFO_EXIT_BIT;
	if (pidfd < 0 || ioctl(pidfd, PIDFD_GET_INFO_V0, &in) != 0 || !(in.mask & PIDFD_INFO_EXIT_BIT))
		return -1;
	*status = in.exit_code;
	return 0;
}

int tprof_pidfd_exit_kept(void)
{
	return pidfd_exit_ok;
}

int tprof_zombie_status_pidfd(pid_t pid, int pidfd, int *status)
{
	if (pidfd < 0)
		return -1;
	if (tprof_pidfd_status(pidfd, status) == 0)
		return 0; /* reaped already */
	if (!pidfd_exit_ok)
		return -1; /* the pidfd would not tell a reap: a /proc read could be another process's */
	uint64_t start;
	int code;
	if (zombie_read(pid, &start, &code) != 0)
		return tprof_pidfd_status(pidfd, status); /* reaped meanwhile (or not a zombie yet) */
	/* still not reaped after the read (its pidfd has no exit status yet): the zombie read was its */
	if (tprof_pidfd_status(pidfd, status) == 0)
		return 0;
	*status = code;
	return 0;
}

int tprof_zombie_status(pid_t pid, uint64_t starttime, int *status)
{
	if (!starttime) /* not read (the pidfd tells), or the process was gone before it could be */
		return -1;
	uint64_t st;
	int code;
	if (zombie_read(pid, &st, &code) != 0 || st != starttime)
		return -1;
	*status = code;
	return 0;
}

/* Sizes a process's memory file: TPROF_SHM_FILE_BYTES (sparse), or under a file size limit that the
 * recorder could not lift (lift_limit: not privileged, a low hard limit) as large as the limit
 * allows, if that is TPROF_SHM_FILE_MIN at least. 0 with its size, or the errno (EFBIG: the limit). */
static int size_memfd(int fd, uint64_t *bytes)
{
	*bytes = TPROF_SHM_FILE_BYTES;
	struct stat st;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size == TPROF_SHM_FILE_BYTES)
		return 0; /* the process sized it (its limit allowed): never cut it to a lower limit of ours */
	if (ftruncate(fd, (off_t)TPROF_SHM_FILE_BYTES) == 0)
		return 0;
	int e = errno;
	struct rlimit r;
	if (e != EFBIG || getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
		return e;
	*bytes = (uint64_t)r.rlim_cur & ~((1ull << 20) - 1);
	if (*bytes < TPROF_SHM_FILE_MIN)
		return EFBIG;
	return ftruncate(fd, (off_t)*bytes) == 0 ? 0 : errno;
}

/* Seals the memory file against shrinking (and against other seals): a process that cut it short
 * under the recorder's mapping would kill the recorder with SIGBUS, and with it the traces of every
 * process it serves (root's recorder serves other users' processes). 0, or -1 when the file is not
 * a memfd made sealable, or was sealed otherwise (a seal against writing or growing). */
static int seal_memfd(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE | F_SEAL_GROW)))
		return -1;
	if ((seals & (F_SEAL_SHRINK | F_SEAL_SEAL)) == (F_SEAL_SHRINK | F_SEAL_SEAL))
		return 0; /* sealed by a recorder before (a registration tried again) */
	return fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_SEAL);
}

/* Limits inherited from the program must not stop the recorder: the memory file is large (sparse)
 * and so is its mapping, a trace may be larger than what the program may write, and the recorder
 * holds three descriptors per traced process. */
static void lift_limit(int what)
{
	struct rlimit r, none = {RLIM_INFINITY, RLIM_INFINITY};
	if (what != RLIMIT_NOFILE && setrlimit(what, &none) == 0)
		return; /* a privileged recorder: past the program's hard limit too */
	if (getrlimit(what, &r) == 0 && r.rlim_cur != r.rlim_max) {
		r.rlim_cur = r.rlim_max;
		setrlimit(what, &r);
	}
}

/* The directory the recorder was started in (absolute; "" when unknown): where it creates the traces
 * (TPROF_HELLO_NO_FILE). Kept as a path: an open directory would keep it busy. */
static char start_dir[4096];

/* The kernel names the process at the other end of a unix socket with a pidfd (SO_PEERPIDFD, Linux
 * 6.5): then a fork child need not wait for its answer (TPROF_ANSWER_YES_ASYNC), as the process
 * that sent a registration is known for sure however late it is read. */
static int async_ok;

static int kernel_at_least(int major, int minor)
{
	struct utsname u;
	int ma = 0, mi = 0;
	return uname(&u) == 0 && sscanf(u.release, "%d.%d", &ma, &mi) == 2 && (ma > major || (ma == major && mi >= minor));
}

static void check_async(void)
{
	int sv[2], pidfd = -1;
	socklen_t len = sizeof(pidfd);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return;
	async_ok = getsockopt(sv[0], SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0;
	pidfd_exit_ok = async_ok && kernel_at_least(6, 15);
	if (pidfd >= 0)
		close(pidfd);
	close(sv[0]);
	close(sv[1]);
}

/* The recorder's stderr is the first traced process's, the same open file, whose offset it shares:
 * a line written after that process has ended (its trace is finished after it) would land where
 * the program's output stopped, over what another writer has added since (a shell's `echo done >>
 * log` after the program). In a regular file a line is appended in one step instead, the offset
 * left where it is when it was not at the end. */
static ssize_t stderr_write(void *cookie, const char *buf, size_t n)
{
	(void)cookie;
	struct stat st;
	off_t at;
	ssize_t w;
	if (fstat(2, &st) == 0 && S_ISREG(st.st_mode) && (at = lseek(2, 0, SEEK_CUR)) >= 0) {
		/* appended in one step (RWF_APPEND): a writer that adds to the file between a look at its
		 * size and the write is not written over; the offset follows only where it was at the end */
		struct iovec v = {(void *)buf, n};
		do
			w = pwritev2(2, &v, 1, at < st.st_size ? 0 : -1, RWF_APPEND);
		while (w < 0 && errno == EINTR);
		if (w >= 0 || (errno != EOPNOTSUPP && errno != EINVAL && errno != ENOSYS))
			return w;
		if (at < st.st_size) { /* a kernel before 4.16 */
			do
				w = pwrite(2, buf, n, st.st_size);
			while (w < 0 && errno == EINTR);
			return w;
		}
	}
	do
		w = write(2, buf, n);
	while (w < 0 && errno == EINTR);
	return w;
}

static void stderr_at_end(void)
{
	static FILE *f;
	if (f)
		return;
	f = fopencookie(NULL, "w", (cookie_io_functions_t){.write = stderr_write});
	if (f) {
		setvbuf(f, NULL, _IONBF, 0);
		stderr = f;
	}
}

/* The recorder serves the program and must not be kept from it by the terms the program was given:
 * a real-time policy or a CPU set of the process that started it (passed on through fork and exec:
 * under `chrt -f 10 taskset -c 0`, a program thread spinning on that CPU kept the recorder off it
 * for good while another thread, on another CPU, waited for ring room) are not the recorder's. It
 * takes the normal policy from a real-time one, and every CPU its cpuset allows; a nice value, a
 * batch or idle policy and an I/O class stay as the user set them (they slow it, never stop it). */
static void normal_scheduling(void)
{
	int policy = sched_getscheduler(0);
	if (policy == SCHED_FIFO || policy == SCHED_RR || policy == 6 /* SCHED_DEADLINE */) {
		struct sched_param sp = {0};
		sched_setscheduler(0, SCHED_OTHER, &sp);
	}
	cpu_set_t all;
	CPU_ZERO(&all);
	for (int c = 0; c < CPU_SETSIZE; c++)
		CPU_SET(c, &all); /* the kernel keeps those of the cpuset */
	sched_setaffinity(0, sizeof(all), &all);
}

void tprof_recorder_setup(void)
{
	stderr_at_end();
	normal_scheduling();
	if (!getcwd(start_dir, sizeof(start_dir)))
		start_dir[0] = 0;
	if (chdir("/") != 0) { /* never keep a directory of the program's busy */
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	lift_limit(RLIMIT_FSIZE);
	lift_limit(RLIMIT_AS);
	lift_limit(RLIMIT_NOFILE);
	/* One malloc arena: each writer thread that allocates would otherwise get its own, 64 MiB of
	 * address space apiece, which under the program's RLIMIT_AS left no room to take processes.
	 * The writers allocate little (their buffers are mapped), so they hardly contend for it. */
	mallopt(M_ARENA_MAX, 1);
	check_async();
	struct rlimit r; /* a privileged recorder may go past the program's hard limit */
	if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_max != RLIM_INFINITY && r.rlim_max < 65536) {
		struct rlimit more = {65536, 65536};
		setrlimit(RLIMIT_NOFILE, &more);
	}
}

void tprof_recorder_wake(void)
{
	uint64_t one = 1;
	if (wake_fd >= 0 && write(wake_fd, &one, sizeof(one)) < 0) {
	} /* a full counter wakes the server just as well */
}

static int writers_of(pid_t pid)
{
	int n = 0;
	for (int i = 0; i < high; i++)
		n += entries[i].w && entries[i].pid == pid;
	return n;
}

/* Writers still at work on a process that is gone (they finish within milliseconds). */
static int finishing_writers(void)
{
	int n = 0;
	for (int i = 0; i < high; i++)
		n += entries[i].w && entries[i].pidfd < 0;
	return n;
}

/* The second listening socket, at a path (tprof_sock_path): processes in another network namespace
 * register there. -1 until it is made (before the first answer), or when it could not be. */
static int path_fd = -1;
static char path_name[108];

/* A registration waits to be taken: that of a fork child which did not wait for its answer
 * (TPROF_HELLO_ASYNC) may be there after its process, even the root, has ended. */
static int pending(int listen_fd)
{
	struct pollfd p[2] = {{listen_fd, POLLIN, 0}, {path_fd, POLLIN, 0}};
	return poll(p, path_fd >= 0 ? 2 : 1, 0) > 0;
}

/* Listens at the path of the abstract name listen_fd is bound to, in the user's own directory (made
 * if need be; not used unless it is a directory of ours that nobody else may enter). A socket file
 * left by a recorder that was killed is replaced; one that answers is another recorder's (the same
 * name in another pid namespace): left alone. */
static void path_listen(int listen_fd)
{
	struct sockaddr_un a;
	socklen_t al = sizeof(a);
	if (getsockname(listen_fd, (struct sockaddr *)&a, &al) != 0 || al <= offsetof(struct sockaddr_un, sun_path) + 1 ||
	    a.sun_path[0] != 0)
		return; /* not an abstract name */
	size_t nl = al - offsetof(struct sockaddr_un, sun_path) - 1;
	char dir[108];
	uint32_t uid = (uint32_t)getuid();
	if (!tprof_sock_path(dir, sizeof(dir), a.sun_path + 1, nl, uid, 1) ||
	    !tprof_sock_path(path_name, sizeof(path_name), a.sun_path + 1, nl, uid, 0))
		return;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	struct sockaddr_un p = {.sun_family = AF_UNIX};
	size_t pl = strlen(path_name);
	memcpy(p.sun_path, path_name, pl + 1);
	socklen_t plen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + pl + 1);
	for (int tries = 0; tries < 3; tries++) {
		struct stat st;
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			break;
		if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != uid || (st.st_mode & 077))
			break;
		if (bind(fd, (struct sockaddr *)&p, plen) == 0) {
			if (listen(fd, 64) != 0) {
				unlink(path_name);
				break;
			}
			path_fd = fd;
			return;
		}
		if (errno == EADDRINUSE) {
			int c = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
			int live = c >= 0 && connect(c, (struct sockaddr *)&p, plen) == 0;
			if (c >= 0)
				close(c);
			if (live || unlink(path_name) != 0)
				break;
		} else if (errno != ENOENT) { /* ENOENT: another recorder removed the directory meanwhile */
			break;
		}
	}
	close(fd);
	path_name[0] = 0;
}

static int listen_abstract = -1;

/* The path socket, made once: before the first answer, or when the recorder first waits. */
static void path_ensure(void)
{
	static int tried;
	if (!tried && listen_abstract >= 0) {
		tried = 1;
		errno = 0;
		path_listen(listen_abstract);
		if (path_fd < 0 && errno == EMFILE)
			tried = 0; /* at the descriptor limit: again once one is free */
	}
}

static void path_unlisten(void)
{
	if (path_fd < 0)
		return;
	close(path_fd);
	path_fd = -1;
	unlink(path_name);
	char *slash = strrchr(path_name, '/');
	if (slash) {
		*slash = 0;
		rmdir(path_name); /* when no other recorder of the user's listens there */
	}
}

/* Whether the root process, still alive, no longer holds the recorder's stderr (it closed it, or
 * put another file on its fd 2 for good: a daemon's exec >/dev/null 2>&1). Only a pipe, a socket or
 * a terminal matters (someone may wait for its end; a regular file is no such thing). Looked at
 * through /proc/ROOT/fd/2, and when that is another file, through every descriptor of root's (a
 * shell that runs a builtin with 2>/dev/null keeps its stderr above fd 9 meanwhile), comparing
 * the links' text (pipe:[N], socket:[N], /dev/pts/N), which never touches the file itself (a hung
 * network file system). Every 20 ms, less often (up to 1 s) while root holds the file on another
 * descriptor. 0 when it still holds it, or when that cannot be known (no /proc of this pid
 * namespace, a process that may not be inspected, more than 1024 descriptors, none listed: a main
 * thread that has called pthread_exit), or has not been seen let go three times in a row. */
static int root_let_go(void)
{
	static int seen; /* looks in a row that found it let go */
	static int known = -1; /* mine is this recorder's stderr, which may matter: 1; no: 0 */
	static char mine[128];
	static uint64_t last, every = 20;
	uint64_t now = mono_ms();
	if (known == 0 || now - last < every)
		return 0;
	last = now;
	if (known < 0) { /* once: the recorder's stderr does not change until it is let go */
		struct stat st;
		ssize_t n = tprof_proc_is_own() && fstat(2, &st) == 0 && !S_ISREG(st.st_mode)
				    ? readlink("/proc/self/fd/2", mine, sizeof(mine) - 1)
				    : -1;
		known = n > 0;
		if (!known)
			return 0;
		mine[n] = 0;
	}
	char its[128], path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/2", (int)root_pid);
	ssize_t k = readlink(path, its, sizeof(its) - 1);
	if (k > 0 && (its[k] = 0, strcmp(its, mine) == 0)) {
		seen = 0;
		every = 20;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)root_pid);
	int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	int held = 0, listed = 0;
	for (struct dirent *e; !held && (e = readdir(d));) {
		if (e->d_name[0] == '.')
			continue;
		if (++listed > 1024) {
			held = 1;
			break;
		}
		/* one that cannot be read, or closed since the listing (a shell putting its stderr
		 * back after a builtin: fd 2 may have been read before), is no answer */
		k = readlinkat(dirfd(d), e->d_name, its, sizeof(its) - 1);
		held = k <= 0 || (its[k] = 0, strcmp(its, mine) == 0);
	}
	closedir(d);
	if (held || !listed) {
		seen = 0;
		if (held)
			every = every * 2 < 1000 ? every * 2 : 1000;
		return 0;
	}
	/* the answer is root's only while root lives (its pid could be another's once it is reaped);
	 * and it must be the same three times in a row, 40 ms at least */
	seen = poll(&(struct pollfd){root_fd, POLLIN, 0}, 1, 0) == 0 ? seen + 1 : 0;
	return seen >= 3;
}

/* Lets stderr go once the root process is gone and its trace is written, and so are the traces of
 * every process that ended before it (each says where its trace went: a child's writer may finish
 * after its parent's): stderr may be a pipe that someone reads to its end (a shell's command
 * substitution), which must not wait for processes the root left behind. Also as soon as the root,
 * still running, lets that file go itself (a daemon that sends its output to /dev/null): the lines
 * of processes that end after that are not written. */
static void check_root(int listen_fd)
{
	if (atomic_load(&stderr_dropped) || !drop_stderr)
		return;
	if (!root_gone ? record_mode || !root_let_go()
		       : writers_of(root_pid) != 0 || finishing_writers() != 0 || pending(listen_fd))
		return;
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull >= 0) {
		dup2(devnull, 2);
		close(devnull);
	}
	atomic_store(&stderr_dropped, 1);
}

int tprof_recorder_stderr_ok(pid_t traced)
{
	return traced == root_pid || !atomic_load(&stderr_dropped);
}

/* Gives back the contexts of writers that have finished. */
static void reap_writers(void)
{
	for (int i = 0; i < high; i++) {
		struct entry *e = &entries[i];
		if (!e->w || !tprof_writer_done(e->w))
			continue;
		if (e->pid == root_pid)
			snprintf(root_trace, sizeof(root_trace), "%s", tprof_writer_trace_path(e->w));
		tprof_writer_release(e->w);
		if (e->pidfd >= 0)
			close(e->pidfd);
		*e = (struct entry){NULL, 0, 0, -1};
		nentries--;
	}
	while (high > 0 && !entries[high - 1].w)
		high--;
}

/* tprof record's program: its wait status, which tprof record, its parent, sends once it has ended
 * (the zombie may hide it from the recorder, a sibling); read at the program's end. */
static int status_fd = -1, root_status_known, root_status;

static void root_status_read(void)
{
	if (status_fd < 0)
		return;
	/* tprof record sees the end as the recorder does (SIGCHLD); a stopped tprof record, not at once */
	if (poll(&(struct pollfd){status_fd, POLLIN, 0}, 1, 2000) == 1 &&
	    read(status_fd, &root_status, sizeof(root_status)) == (ssize_t)sizeof(root_status))
		root_status_known = 1;
	close(status_fd);
	status_fd = -1;
}

static void process_gone(struct entry *e)
{
	if (e->root)
		root_status_read();
	tprof_writer_gone(e->w, e->pidfd, e->root && root_status_known ? &root_status : NULL);
	close(e->pidfd);
	e->pidfd = -1;
}

/* Barriers that wait, besides, for the traces of the processes that are gone (TPROF_HELLO_DRAIN):
 * answered once every such process's end has been seen and its writer is done. */
#define MAX_DRAINS 8
static int drains[MAX_DRAINS], ndrains;

static void answer_drains(void)
{
	if (!ndrains)
		return;
	for (int i = 0; i < high; i++) /* ends that came since the last look */
		if (entries[i].w && entries[i].pidfd >= 0 && poll(&(struct pollfd){entries[i].pidfd, POLLIN, 0}, 1, 0) == 1)
			process_gone(&entries[i]);
	if (finishing_writers())
		return;
	char done = async_ok ? TPROF_ANSWER_YES_ASYNC : TPROF_ANSWER_YES; /* as to any barrier */
	for (int k = 0; k < ndrains; k++) {
		send(drains[k], &done, 1, MSG_NOSIGNAL);
		close(drains[k]);
	}
	ndrains = 0;
}

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* A pidfd of the process at the other end of conn and its start time, which with the pid names it
 * for good (an exec keeps both); 0 on success. The socket's own pidfd is the connecting process's
 * for sure; else the pidfd is taken between two readings of the start time. A process that did
 * not wait for the answer (async) may have ended: then *gone is set, the start time is 0 and the
 * pidfd, if the kernel still gives one (Linux 6.16 does after the process was reaped), tells its
 * end. */
static int peer_process(int conn, pid_t pid, int async, int *pidfd, uint64_t *starttime, int *gone)
{
	socklen_t len = sizeof(*pidfd);
	*gone = 0;
	int got = getsockopt(conn, SOL_SOCKET, SO_PEERPIDFD, pidfd, &len) == 0 && *pidfd >= 0;
	if (!got && async && errno == ESRCH) { /* reaped, on a kernel that gives no pidfd then */
		*pidfd = -1;
		*starttime = 0;
		*gone = 1;
		return 0;
	}
	if (got) {
		/* on 6.15 the pidfd names it and will tell its end: no start time; else the start time,
		 * read while the process still lived (its pidfd had not fired): its own */
		struct pollfd pf = {*pidfd, POLLIN, 0};
		*starttime = 0;
		if ((pidfd_exit_ok || tprof_proc_starttime(pid, starttime) == 0) && poll(&pf, 1, 0) == 0)
			return 0;
		if (async && poll(&pf, 1, 0) == 1) {
			*starttime = 0;
			*gone = 1;
			return 0;
		}
		close(*pidfd); /* a process that waits for the answer is alive */
		*pidfd = -1;
		return -1;
	}
	if (async)
		return -1; /* only sent to a recorder that answered TPROF_ANSWER_YES_ASYNC */
	uint64_t again;
	if (tprof_proc_starttime(pid, starttime) != 0)
		return -1;
	*pidfd = (int)syscall(SYS_pidfd_open, (long)pid, 0L);
	if (*pidfd < 0)
		return -1;
	if (tprof_proc_starttime(pid, &again) != 0 || again != *starttime) {
		close(*pidfd);
		*pidfd = -1;
		return -1;
	}
	return 0;
}

/* Whether the process the recorder knows as pid knows itself as own: the same number, or, in a
 * child pid namespace, the last of the pids its NSpid line lists (one per namespace, the
 * recorder's first). */
static int same_process(pid_t pid, pid_t own)
{
	if (pid == own)
		return 1;
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ssize_t n = tprof_proc_read(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	const char *l = strstr(buf, "\nNSpid:");
	if (!l)
		return 0;
	l += 7;
	long first = -1, last = -1;
	int count = 0;
	for (char *e;; l = e) {
		long v = strtol(l, &e, 10);
		if (e == l)
			break;
		if (!count++)
			first = v;
		last = v;
	}
	return count >= 2 && first == pid && last == own;
}

/* A file made ahead (O_TMPFILE: an inode without a name) in the directory where the last trace was
 * created, locked, for the next registration to name with one link: a new inode costs a file
 * system like ext4 a search of its inode bitmap, 0.1 to 0.3 ms on a VM, which is then spent while
 * no process waits for its answer. -1: none. */
static int ahead_fd = -1;
static char ahead_dir[sizeof(start_dir) + TPROF_HELLO_NAME_MAX + 16];
static char last_dir[sizeof(ahead_dir)]; /* where the last trace was created, "" for none */
static char last_path[sizeof(ahead_dir)]; /* the last trace create_for created */

static void ahead_drop(void)
{
	if (ahead_fd >= 0)
		close(ahead_fd);
	ahead_fd = -1;
}

/* Makes the next file ahead in dir, when descriptors are plenty (one is kept). */
static void ahead_make(const char *dir)
{
	static int unsupported;
	struct rlimit r;
	if (ahead_fd >= 0 || !dir[0] || unsupported || getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur < 256)
		return;
	int fd = open(dir, O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
	if (fd < 0) {
		/* a file system without O_TMPFILE: files are created as they are needed */
		unsupported = errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL;
		return;
	}
	flock(fd, LOCK_EX | LOCK_NB);
	snprintf(ahead_dir, sizeof(ahead_dir), "%s", dir);
	ahead_fd = fd;
}

/* The length of an absolute path's directory part ("/" for a file in the root). */
static size_t dir_len(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash && slash != path ? (size_t)(slash - path) : 1;
}

/* Names the file made ahead path (which must not exist: a link never replaces, nor follows a
 * symbolic link there); its descriptor, or -1 with errno. */
static int ahead_take(const char *path)
{
	size_t dlen = dir_len(path);
	if (ahead_fd < 0 || strlen(ahead_dir) != dlen || memcmp(ahead_dir, path, dlen) != 0) {
		errno = ENOENT;
		return -1;
	}
	/* by the descriptor itself where the kernel allows it (CAP_DAC_READ_SEARCH, which root has):
	 * no walk through /proc; else through /proc/self/fd */
	static int empty_path_refused;
	int linked = -1;
	if (!empty_path_refused) {
		linked = linkat(ahead_fd, "", AT_FDCWD, path, AT_EMPTY_PATH);
		if (linked != 0 && (errno == ENOENT || errno == EPERM || errno == EINVAL))
			empty_path_refused = 1; /* said once: the same for every later file */
	}
	if (linked != 0 && empty_path_refused) {
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", ahead_fd);
		linked = linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW);
	}
	if (linked != 0) {
		if (errno != EEXIST)
			ahead_drop(); /* no /proc, a directory gone: files are created as they are needed */
		return -1;
	}
	int fd = ahead_fd;
	ahead_fd = -1;
	return fd;
}

/* The name create_for last gave a suffix, and that suffix: a name taken again tries its plain
 * form, then the suffixes after that one, so that the processes of a tree that all name one file
 * (TPROF_OUTPUT without %p, a fork storm) cost a link or two each, not one per process before. */
static char suffix_name[TPROF_HELLO_NAME_MAX];
static size_t suffix_len;
static unsigned suffix_last;

/* Creates a process's trace file (TPROF_HELLO_NO_FILE) as the process would have: exclusively,
 * never through a symlink, a suffix for an existing name, locked until the trace is complete (its
 * mode, 0600 for now, gets the process's umask from the writer, off the registration's path); a
 * relative path in start_dir. Only for a process of the recorder's own user: a root
 * recorder makes no file that another user names. The descriptor, or -1. */
static int create_for(const char *name, size_t len, const struct ucred *cred)
{
	if (cred->uid != geteuid() || len == 0 || len > TPROF_HELLO_NAME_MAX || memchr(name, 0, len) ||
	    (name[0] != '/' && !start_dir[0]))
		return -1;
	const char *dir = name[0] == '/' ? "" : strcmp(start_dir, "/") ? start_dir : "";
	const char *sep = name[0] == '/' ? "" : "/";
	char path[sizeof(start_dir) + TPROF_HELLO_NAME_MAX + 16];
	unsigned after = len == suffix_len && memcmp(name, suffix_name, len) == 0 ? suffix_last : 0;
	for (unsigned i = 0, k = 0; i < 1000; i++, k = k ? k + 1 : after + 1) {
		if (k)
			snprintf(path, sizeof(path), "%s%s%.*s.%u", dir, sep, (int)len, name, k);
		else
			snprintf(path, sizeof(path), "%s%s%.*s", dir, sep, (int)len, name);
		int fd = ahead_take(path);
		if (fd < 0 && errno == EEXIST)
			continue;
		if (fd < 0 && (fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) >= 0)
			flock(fd, LOCK_EX | LOCK_NB);
		if (fd >= 0) {
			memcpy(last_path, path, sizeof(last_path));
			snprintf(last_dir, sizeof(last_dir), "%.*s", (int)dir_len(path), path);
			if (k) {
				memcpy(suffix_name, name, len);
				suffix_len = len;
				suffix_last = k;
			}
			return fd;
		}
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

const char *tprof_recorder_start_dir(void)
{
	return start_dir;
}

/* Whether the recorder is at its descriptor limit (a limit inherited from the program that it
 * could not lift): why a registration failed, which the process says. */
static int out_of_fds(void)
{
	int fd[3], n = 0; /* a registration takes three at once: a pidfd, a /proc file, the trace */
	while (n < 3 && (fd[n] = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0)
		n++;
	int full = n < 3 && errno == EMFILE;
	while (n)
		close(fd[--n]);
	return full;
}

/* Says no to a registration: the byte it waits for, or, to a process that does not wait (async),
 * in its memory, so that it drops its events rather than wait for a recorder that never comes;
 * and then on stderr, as nobody else can. */
static void refuse(int conn, int async, int memfd, char why, pid_t label)
{
	if (!async) {
		send(conn, &why, 1, MSG_NOSIGNAL);
		return;
	}
	/* written, not mapped: the file may be one that could not be sealed, which the process could
	 * cut short under a mapping (SIGBUS); the process sees the word through its own mapping */
	uint32_t gone = 1;
	if (memfd >= 0) {
		ssize_t w = pwrite(memfd, &gone, sizeof(gone), (off_t)offsetof(struct tprof_shm, recorder_gone));
		(void)w; /* not written: the process learns it when no heartbeat comes */
	}
	if (tprof_recorder_stderr_ok(label))
		fprintf(stderr, "tprof: the recorder could not take pid %d%s; its events are dropped\n", (int)label,
			why == TPROF_ANSWER_FDS ? " (too few descriptors left: the limit, ulimit -n, is inherited)"
			: why == TPROF_ANSWER_NO_FILE ? " (its trace file could not be created)"
						      : "");
}

/* One registration: check, start the writer, answer. */
static int spare_fd[2] = {-1, -1}; /* kept to take a registration when out of descriptors */
static void accept_one(int lfd);

/* Whether pid has ended: gone, or a zombie. */
static int process_ended(pid_t pid)
{
	char buf[512];
	if (kill(pid, 0) != 0 && errno == ESRCH)
		return 1;
	const char *st = tprof_stat_read(pid, buf, sizeof(buf));
	return st && (st[0] == 'Z' || st[0] == 'X');
}

static void take(int conn)
{
	struct {
		struct tprof_hello h;
		char name[TPROF_HELLO_NAME_MAX + 1];
	} msg;
	struct tprof_hello h;
	union {
		char buf[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {&msg, sizeof(msg)};
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof(u.buf)};
	int fds[4] = {-1, -1, -1, -1}, nfds = 0;
	ssize_t r;
	do
		r = recvmsg(conn, &m, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	int fds_short = r >= 0 && (m.msg_flags & MSG_CTRUNC); /* descriptors it sent were dropped */
	h = msg.h;
	size_t name_len = r > (ssize_t)sizeof(h) ? (size_t)r - sizeof(h) : 0;
	int no_file = r >= (ssize_t)sizeof(h) && (h.flags & TPROF_HELLO_NO_FILE);
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k && nfds < 4; i++)
			memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	}
	if (r >= (ssize_t)sizeof(h) && (h.flags & ~TPROF_HELLO_DRAIN) == TPROF_HELLO_BARRIER && nfds == 0 &&
	    h.magic == TPROF_SHM_MAGIC && h.version == TPROF_SHM_VERSION) {
		/* every registration queued before it has been taken: connections of one socket are
		 * taken in order; those queued at the other (a process in another network namespace,
		 * its fork children) are taken now */
		static int draining;
		if (!draining && path_fd >= 0) {
			draining = 1;
			for (int k = 0; k < 2; k++) {
				int lfd = k ? path_fd : listen_abstract;
				for (int q = 0; q < 4096 && lfd >= 0 && poll(&(struct pollfd){lfd, POLLIN, 0}, 1, 0) == 1; q++)
					accept_one(lfd);
			}
			draining = 0;
		}
		if ((h.flags & TPROF_HELLO_DRAIN) && ndrains < MAX_DRAINS) {
			int keep = fcntl(conn, F_DUPFD_CLOEXEC, 3); /* answered by answer_drains */
			if (keep >= 0) {
				drains[ndrains++] = keep;
				return;
			}
		}
		char done = async_ok ? TPROF_ANSWER_YES_ASYNC : TPROF_ANSWER_YES; /* as to a registration */
		send(conn, &done, 1, MSG_NOSIGNAL);
		return;
	}
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (r >= (ssize_t)sizeof(h) && h.flags == TPROF_HELLO_SAY && nfds == 0 && h.magic == TPROF_SHM_MAGIC &&
	    h.version == TPROF_SHM_VERSION) {
		/* a process's line on why it is not traced, for the stderr the recorder's lines go to:
		 * one line, from a process it would take (of this user's, or any, for root's), without
		 * control characters (C0, DEL, and C1 as UTF-8 encodes them); refused, the process
		 * writes it itself. Said once its lines are let go (as an exit line would be): not
		 * written. */
		char said = TPROF_ANSWER_YES;
		if (name_len && name_len <= 1024 && getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 &&
		    (cred.uid == getuid() || geteuid() == 0)) {
			for (size_t k = 0; k < name_len; k++) {
				unsigned char c = (unsigned char)msg.name[k];
				if (c < 0x20 || c == 0x7f)
					msg.name[k] = '?';
				else if (c == 0xc2 && k + 1 < name_len && (unsigned char)msg.name[k + 1] >= 0x80 &&
					 (unsigned char)msg.name[k + 1] <= 0x9f)
					msg.name[k] = msg.name[k + 1] = '?';
			}
			if (tprof_recorder_stderr_ok(cred.pid)) {
				/* another user's line (root's recorder takes them, for programs that drop
				 * their privileges) says whose it is: no process of another user's can
				 * write a line that reads as one of root's own */
				if (cred.uid != getuid()) {
					const char *line = msg.name;
					size_t ml = name_len;
					if (ml >= 7 && memcmp(line, "tprof: ", 7) == 0)
						line += 7, ml -= 7;
					fprintf(stderr, "tprof: [uid %u] %.*s\n", (unsigned)cred.uid, (int)ml, line);
				} else {
					fprintf(stderr, "%.*s\n", (int)name_len, msg.name);
				}
				fflush(stderr);
			}
		} else {
			said = 0;
		}
		send(conn, &said, 1, MSG_NOSIGNAL);
		return;
	}
	char no = 0, yes = async_ok ? TPROF_ANSWER_YES_ASYNC : TPROF_ANSWER_YES;
	uint64_t starttime = 0;
	int slot = -1, pidfd = -1, size_err = 0;
	uint64_t memfd_bytes = 0;
	for (int i = 0; i < MAX_WRITERS && slot < 0; i++)
		if (!entries[i].w)
			slot = i;
	int async = r >= (ssize_t)sizeof(h) && (h.flags & TPROF_HELLO_ASYNC), gone = 0, peer_known = 0;
	if (r < (ssize_t)sizeof(h) || nfds != (no_file ? 1 : 2) || (!no_file && name_len) ||
	    (h.flags & ~(TPROF_HELLO_NO_FILE | TPROF_HELLO_ASYNC | TPROF_HELLO_QUIET)) || (async && !no_file) ||
	    h.magic != TPROF_SHM_MAGIC || h.version != TPROF_SHM_VERSION ||
	    !(peer_known = getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0) ||
	    (cred.uid != getuid() && geteuid() != 0) || slot < 0 ||
	    seal_memfd(fds[0]) != 0 || (size_err = size_memfd(fds[0], &memfd_bytes)) != 0 ||
	    peer_process(conn, cred.pid, async, &pidfd, &starttime, &gone) != 0 ||
	    (!gone && !same_process(cred.pid, h.pid))) {
		/* RLIMIT_FSIZE, or the descriptor limit: reasons the process says */
		char why = size_err == EFBIG ? TPROF_ANSWER_FSIZE : fds_short || out_of_fds() ? TPROF_ANSWER_FDS : no;
		refuse(conn, async, nfds ? fds[0] : -1, why, r >= (ssize_t)sizeof(h) ? h.pid : 0);
		/* the file of a process that made it itself and is gone already (one that waits removes
		 * its own): nobody else would */
		if (nfds == 2 && !no_file && peer_known && process_ended(cred.pid)) {
			char fdpath[64], path[4096];
			snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fds[1]);
			ssize_t n = readlink(fdpath, path, sizeof(path) - 1);
			if (n > 0) {
				path[n] = 0;
				tprof_remove_empty_trace(fds[1], path, 1, cred.uid, cred.gid);
			}
		}
		close_fds(fds, nfds);
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	if (no_file && (fds[1] = create_for(msg.name, name_len, &cred)) < 0) {
		char why = errno == EMFILE || out_of_fds() ? TPROF_ANSWER_FDS : TPROF_ANSWER_NO_FILE;
		refuse(conn, async, fds[0], why, h.pid);
		close_fds(fds, nfds);
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	/* the same process again: an exec; its previous image's writer finishes that trace. Named by
	 * the pid and start time, or, without a start time, by the pid of an entry whose process still
	 * lives (its pidfd has not fired): no other process can have its pid meanwhile. */
	int after_exec = 0;
	for (int i = 0; i < high && (starttime || (pidfd_exit_ok && !gone)); i++) {
		struct entry *e = &entries[i];
		if (e->w && e->pid == cred.pid && e->pidfd >= 0 &&
		    (starttime ? e->starttime == starttime : poll(&(struct pollfd){e->pidfd, POLLIN, 0}, 1, 0) == 0)) {
			after_exec = 1;
			tprof_writer_exec(e->w);
			close(e->pidfd);
			e->pidfd = -1;
		}
	}
	struct tprof_writer_args a = {
		.pid = cred.pid, .label = h.pid, .starttime = starttime, .memfd = fds[0], .tracefd = fds[1],
		.own_mode = no_file, .path = no_file ? last_path : NULL, .after_exec = after_exec,
		.memfd_bytes = memfd_bytes, .quiet = (h.flags & TPROF_HELLO_QUIET) != 0, .uid = cred.uid,
		.gid = cred.gid};
	struct tprof_writer *w = tprof_writer_start(&a);
	if (!w) {
		if (no_file)
			unlink(last_path); /* the file made for it: the process says it is not traced */
		if (after_exec)
			tprof_writer_flush_held(cred.pid);
		refuse(conn, async, fds[0], no, h.pid);
		if (pidfd >= 0)
			close(pidfd);
		return;
	}
	entries[slot] = (struct entry){w, cred.pid, starttime, pidfd, status_fd >= 0 && cred.pid == root_pid && !root_gone};
	nentries++;
	if (slot >= high)
		high = slot + 1;
	if (gone && pidfd < 0) /* ended and reaped: nothing to wait for */
		tprof_writer_gone(w, -1, NULL);
	if (!async)
		send(conn, &yes, 1, MSG_NOSIGNAL);
}

/* Takes one connection waiting on the listening socket lfd. Out of descriptors, the two spare ones
 * make room for the connection and the memory file it brings: the registration is then refused as
 * any other that runs short (take), so that a process that waits gets its answer, and one that does
 * not (a fork child, TPROF_HELLO_ASYNC) is marked in its memory and named on stderr. */
static void accept_one(int lfd)
{
	int conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC), spared = 0;
	if (conn < 0 && errno == EMFILE && spare_fd[0] >= 0) {
		for (int k = 0; k < 2; k++)
			if (spare_fd[k] >= 0)
				close(spare_fd[k]);
		spare_fd[0] = spare_fd[1] = -1;
		spared = 1;
		conn = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	}
	if (conn >= 0) {
		/* before the answer: the process may enter a network namespace at once and fork a child
		 * that looks for the path (nsenter -a) */
		path_ensure();
		take(conn);
		close(conn);
		if (!spared)
			ahead_make(last_dir); /* answered: the next one's file, meanwhile */
	}
	if (spared)
		for (int k = 0; k < 2; k++)
			spare_fd[k] = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

int tprof_server_run(const struct tprof_server_opts *o)
{
	int acc = 0;
	socklen_t acc_len = sizeof(acc);
	if (getsockopt(o->listen_fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &acc_len) != 0 || !acc) {
		/* not what it was started with: waiting for connections would never end */
		fprintf(stderr, "tprof-recorder: descriptor %d is not a listening socket\n", o->listen_fd);
		return 2;
	}
	root_pid = o->root;
	root_fd = o->root_pidfd;
	root_gone = root_fd < 0;
	drop_stderr = o->drop_stderr;
	listen_abstract = o->listen_fd;
	int notify_fd = o->notify_fd;
	record_mode = notify_fd >= 0;
	status_fd = o->status_fd;
	wchan_tells = kernel_at_least(5, 16);
	for (int k = 0; k < 2; k++) /* first: under the tightest limit too */
		spare_fd[k] = open("/dev/null", O_RDONLY | O_CLOEXEC);
	wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	static struct pollfd pf[MAX_WRITERS + 4];
	static int at[MAX_WRITERS + 4]; /* the entry of each pidfd in pf */
	uint64_t idle_since = mono_ms();
	for (;;) {
		reap_writers();
		answer_drains();
		check_root(o->listen_fd);
		/* nothing traced now: no file kept open on the trace's file system, which the user may
		 * unmount as soon as tprof record is done (before it is told) or a moment after the
		 * program (not between the processes of a storm, whose next one would then wait) */
		if (!nentries && root_gone && (notify_fd >= 0 || mono_ms() - idle_since >= 100))
			ahead_drop();
		if (notify_fd >= 0 && root_gone && writers_of(root_pid) == 0 && finishing_writers() == 0 &&
		    !pending(o->listen_fd)) {
			if (root_trace[0] && write(notify_fd, root_trace, strlen(root_trace)) < 0)
				root_trace[0] = 0; /* tprof record does without it */
			close(notify_fd);
			notify_fd = -1;
		}
		if (nentries || !root_gone || pending(o->listen_fd))
			idle_since = mono_ms();
		else if (mono_ms() - idle_since >= (uint64_t)(o->linger_ms > 0 ? o->linger_ms : 0))
			break;
		path_ensure();
		int n = 0;
		pf[n++] = (struct pollfd){o->listen_fd, POLLIN, 0};
		pf[n++] = (struct pollfd){wake_fd, POLLIN, 0};
		pf[n++] = (struct pollfd){path_fd, POLLIN, 0}; /* -1: ignored */
		if (!root_gone)
			pf[n++] = (struct pollfd){root_fd, POLLIN, 0};
		int first_entry = n;
		for (int i = 0; i < high; i++) {
			if (entries[i].w && entries[i].pidfd >= 0) {
				at[n] = i;
				pf[n++] = (struct pollfd){entries[i].pidfd, POLLIN, 0};
			}
		}
		int ready = poll(pf, (nfds_t)n, 20);
		if (ready <= 0)
			continue;
		/* first: the zombie may be reaped any moment; tprof record's program last, whose status
		 * may take a moment to come (root_status_read) */
		for (int last = 0; last < 2; last++)
			for (int k = first_entry; k < n; k++)
				if (pf[k].revents && entries[at[k]].root == last && entries[at[k]].pidfd >= 0)
					process_gone(&entries[at[k]]);
		if (!root_gone && first_entry == 4 && pf[3].revents)
			root_gone = 1;
		if (pf[1].revents) {
			uint64_t v;
			if (read(wake_fd, &v, sizeof(v)) < 0) {
			}
		}
		for (int l = 0; l < 3; l += 2)
			if (pf[l].revents)
				accept_one(pf[l].fd);
	}
	path_unlisten();
	tprof_writer_flush_held(0); /* an image whose next one never ended while we waited */
	if (notify_fd >= 0)
		close(notify_fd);
	for (int k = 0; k < 2; k++) /* what runs at exit (a sanitizer's leak check) may need one */
		if (spare_fd[k] >= 0)
			close(spare_fd[k]);
	ahead_drop();
	return 0;
}
