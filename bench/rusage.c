/* Runs a command and prints the CPU time (user + system) it and the children it waited for used,
 * as "cpu_us N" on stderr: the traced program's own share, without the recorder's (a process that
 * libtprof.so starts is not the program's child). usage: rusage COMMAND ARGS... */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rusage COMMAND ARGS...\n");
		return 2;
	}
	pid_t p = fork();
	if (p < 0)
		return 1;
	if (p == 0) {
		execvp(argv[1], argv + 1);
		_exit(127);
	}
	int st;
	struct rusage ru;
	if (wait4(p, &st, 0, &ru) != p)
		return 1;
	long us = (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000L + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
	fprintf(stderr, "cpu_us %ld\n", us);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
