/* What a program sees of its own file descriptors, for tests/integration/invisible.bats: run bare and
 * under the preload, everything it prints must be the same.
 *
 *   inv_fds list           the descriptors open at the start of main, and again after many mallocs
 *   inv_fds closefrom      closes every descriptor from 3 up; the next two files it opens must be 3, 4
 *   inv_fds dup2           dup2s two files of its own onto 3 and 4, writes through them, reads back
 *   inv_fds nofile         opens /dev/null until that fails: how many it got, and why it stopped
 *   inv_fds stderr FILE    closes 2, opens FILE (it gets 2), writes "mine\n" there and returns
 *   inv_fds stderr_first FILE  the same before its first heap call (the recorder starts after)
 *
 * Every mode allocates and frees between its steps, so that a recorder has had every reason to act.
 * Output goes through write(2) from a stack buffer. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inv.h"

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void list_fds(const char *when)
{
	int fds[1024], n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d) {
		say("%s: opendir: %s\n", when, strerror(errno));
		return;
	}
	struct dirent *e;
	while ((e = readdir(d)) && n < 1024) {
		if (e->d_name[0] == '.')
			continue;
		int fd = atoi(e->d_name);
		if (fd != dirfd(d))
			fds[n++] = fd;
	}
	closedir(d);
	qsort(fds, (size_t)n, sizeof fds[0], cmp_int);
	say("%s:", when);
	for (int i = 0; i < n; i++)
		say(" %d", fds[i]);
	say("\n");
}

static int open_new(const char *name)
{
	return open(name, O_RDWR | O_CREAT | O_TRUNC, 0644);
}

static void show_file(int fd, const char *name)
{
	char buf[256];
	if (lseek(fd, 0, SEEK_SET) != 0) {
		say("%s: lseek: %s\n", name, strerror(errno));
		return;
	}
	ssize_t n = read(fd, buf, sizeof buf - 1);
	if (n < 0) {
		say("%s: read: %s\n", name, strerror(errno));
		return;
	}
	buf[n] = 0;
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\n')
			buf[i] = '|';
	say("%s holds %zd bytes: %s\n", name, n, buf);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "list";
	if (!strcmp(mode, "list")) {
		list_fds("at start");
		churn(20000);
		usleep(50000);
		churn(20000);
		list_fds("after mallocs");
		return 0;
	}
	if (!strcmp(mode, "closefrom")) {
		churn(1000);
		closefrom(3);
		churn(20000);
		int a = open_new("a.txt");
		int b = open_new("b.txt");
		say("opened a.txt as %d, b.txt as %d\n", a, b);
		churn(20000);
		usleep(50000);
		if (write(a, "aaa\n", 4) != 4 || write(b, "bbb\n", 4) != 4)
			say("write failed: %s\n", strerror(errno));
		churn(20000);
		show_file(a, "a.txt");
		show_file(b, "b.txt");
		return a == 3 && b == 4 ? 0 : 1;
	}
	if (!strcmp(mode, "dup2")) {
		churn(1000);
		int x = open_new("three.txt");
		int y = open_new("four.txt");
		if (x < 0 || y < 0 || dup2(x, 100) != 100 || dup2(y, 101) != 101)
			return 2;
		close(x);
		close(y);
		int r3 = dup2(100, 3), r4 = dup2(101, 4);
		close(100);
		close(101);
		say("dup2 onto 3 and 4: %d %d\n", r3, r4);
		churn(20000);
		usleep(50000);
		if (write(3, "three\n", 6) != 6 || write(4, "four\n", 5) != 5)
			say("write failed: %s\n", strerror(errno));
		churn(20000);
		usleep(50000);
		show_file(3, "fd 3");
		show_file(4, "fd 4");
		return 0;
	}
	if (!strcmp(mode, "nofile")) {
		churn(20000);
		usleep(20000);
		int n = 0;
		while (open("/dev/null", O_RDONLY) >= 0)
			n++;
		int err = errno;
		say("opened /dev/null %d times, then: %s\n", n, strerror(err));
		churn(20000);
		return 0;
	}
	if (!strcmp(mode, "stderr") || !strcmp(mode, "stderr_first")) {
		const char *name = argc > 2 ? argv[2] : "mine.txt";
		if (!strcmp(mode, "stderr"))
			churn(1000);
		close(2);
		int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		say("%s opened as %d\n", name, fd);
		if (write(fd, "mine\n", 5) != 5)
			return 3;
		churn(20000);
		usleep(20000);
		return fd == 2 ? 0 : 1;
	}
	say("unknown mode %s\n", mode);
	return 2;
}
