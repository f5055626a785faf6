/* Processes that make processes, for tests/integration/invisible.bats. Heap work of sizes nothing
 * else uses, counted by the program itself; output through write(2) from a stack buffer, so that the
 * C library allocates nothing of its own.
 *
 *   inv_fork fork3   allocates PARENT_BLOCKS blocks of PARENT_SIZE bytes and frees half; forks 3
 *                    children: child i (0, 1, 2) allocates 10 * (i + 1) blocks of CHILD_SIZE + i
 *                    bytes, frees half of them and exits with status 10 + i. The parent waits for
 *                    each in turn and prints its status on stdout, the children's pids in pids.txt
 *                    (one a line, child 0 first) and, on stderr, its own totals.
 *   inv_fork vfork   allocates, vforks; the child's execve of a file that does not exist fails and
 *                    it calls _exit(9); the parent prints the status, allocates again, prints its
 *                    totals on stderr.
 *   inv_fork spawn   allocates, runs /bin/true three times with posix_spawn, waiting for each,
 *                    allocates again, prints the statuses and its totals.
 *   inv_fork daemon DIR
 *                    becomes a daemon as daemon(3) does: forks, the child calls setsid and forks
 *                    again and exits; the grandchild changes to /, closes every descriptor, opens
 *                    /dev/null as 0, 1 and 2, allocates DAEMON_BLOCKS blocks of DAEMON_SIZE bytes
 *                    and frees half, then writes DIR/daemon.pid (its pid) and, last, DIR/daemon.txt
 *                    (its totals). The parent prints the first child's status.
 * Every mode writes its own pid to pid.txt. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inv.h"

#define PARENT_BLOCKS 20
#define PARENT_SIZE 2001
#define CHILD_SIZE 2100
#define DAEMON_BLOCKS 30
#define DAEMON_SIZE 2300

extern char **environ;

static long allocs, frees;
static unsigned long long bytes;
static void *v[200];

/* n blocks of size bytes, then frees the first half */
static void work(int n, size_t size)
{
	for (int i = 0; i < n; i++)
		v[i] = malloc(size);
	for (int i = 0; i < n / 2; i++)
		free(v[i]);
	allocs += n;
	frees += n / 2;
	bytes += (unsigned long long)n * size;
}

static void status(const char *who, int st)
{
	if (WIFEXITED(st))
		out(1, "%s exited with %d\n", who, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		out(1, "%s killed by signal %d\n", who, WTERMSIG(st));
	else
		out(1, "%s: status %#x\n", who, st);
}

static void totals(void)
{
	out(2, "allocations %ld frees %ld bytes %llu\n", allocs, frees, bytes);
}

static void write_file(const char *dir, const char *name, const char *fmt, ...)
{
	char path[4096], buf[256];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, buf, (size_t)n) != n)
		_exit(98);
	close(fd);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "fork3";
	char cwd[4096];
	if (!getcwd(cwd, sizeof cwd))
		return 93;
	write_file(cwd, "pid.txt", "%d\n", (int)getpid());
	if (!strcmp(mode, "fork3")) {
		work(PARENT_BLOCKS, PARENT_SIZE);
		int pf = open("pids.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		pid_t kids[3];
		for (int i = 0; i < 3; i++) {
			kids[i] = fork();
			if (kids[i] < 0)
				return 91;
			if (kids[i] == 0) {
				allocs = frees = 0;
				bytes = 0;
				work(10 * (i + 1), CHILD_SIZE + (size_t)i);
				exit(10 + i);
			}
			out(pf, "%d\n", (int)kids[i]);
		}
		close(pf);
		for (int i = 0; i < 3; i++) {
			int st;
			char who[32];
			if (waitpid(kids[i], &st, 0) != kids[i])
				return 92;
			snprintf(who, sizeof who, "child %d", i);
			status(who, st);
		}
		work(PARENT_BLOCKS, PARENT_SIZE);
		totals();
		return 0;
	}
	if (!strcmp(mode, "vfork")) {
		work(PARENT_BLOCKS, PARENT_SIZE);
		pid_t pid = vfork();
		if (pid < 0)
			return 91;
		if (pid == 0) {
			char *args[] = {"inv-missing", NULL};
			execve("/nonexistent/inv-missing", args, environ);
			_exit(9);
		}
		int st;
		if (waitpid(pid, &st, 0) != pid)
			return 92;
		status("vfork child", st);
		work(PARENT_BLOCKS, PARENT_SIZE);
		totals();
		return 0;
	}
	if (!strcmp(mode, "spawn")) {
		work(PARENT_BLOCKS, PARENT_SIZE);
		for (int i = 0; i < 3; i++) {
			pid_t pid;
			char *args[] = {"true", NULL};
			int rc = posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ);
			if (rc != 0) {
				out(1, "posix_spawn: %s\n", strerror(rc));
				return 91;
			}
			int st;
			if (waitpid(pid, &st, 0) != pid)
				return 92;
			status("true", st);
			work(PARENT_BLOCKS, PARENT_SIZE);
		}
		totals();
		return 0;
	}
	if (!strcmp(mode, "daemon") && argc > 2) {
		char dir[4096]; /* absolute: the daemon changes to / */
		snprintf(dir, sizeof dir, "%s%s%s", argv[2][0] == '/' ? "" : cwd, argv[2][0] == '/' ? "" : "/",
			 argv[2]);
		pid_t pid = fork();
		if (pid < 0)
			return 91;
		if (pid == 0) {
			setsid();
			pid_t g = fork();
			if (g != 0)
				_exit(g < 0 ? 91 : 0);
			if (chdir("/") != 0)
				_exit(94);
			closefrom(0);
			open("/dev/null", O_RDWR);
			open("/dev/null", O_RDWR);
			open("/dev/null", O_RDWR);
			allocs = frees = 0;
			bytes = 0;
			work(DAEMON_BLOCKS, DAEMON_SIZE);
			usleep(50000);
			write_file(dir, "daemon.pid", "%d\n", (int)getpid());
			write_file(dir, "daemon.txt", "allocations %ld frees %ld bytes %llu\n", allocs, frees,
				   bytes);
			return 0;
		}
		int st;
		if (waitpid(pid, &st, 0) != pid)
			return 92;
		status("first child", st);
		return 0;
	}
	out(2, "unknown mode %s\n", mode);
	return 2;
}
