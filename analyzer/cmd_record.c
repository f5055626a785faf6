/* tprof record: runs a program with libtprof.so preloaded and says where its trace went. The
 * library is looked up beside the tprof executable (or at TPROF_LIB). It goes first in LD_PRELOAD,
 * ahead of anything already there, so that it also sees programs whose allocator is itself
 * preloaded (jemalloc, tcmalloc): the real functions it forwards to are then theirs. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmds.h"
#include "util.h"

static int find_library(char *out, size_t cap)
{
	const char *env = getenv("TPROF_LIB");
	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return access(out, R_OK);
	}
	char self[PATH_MAX - 32];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	snprintf(out, cap, "%s/libtprof.so", self);
	return access(out, R_OK);
}

int cmd_record(int argc, char **argv)
{
	const char *output = NULL;
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			output = argv[++i];
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: tprof record [-o FILE] -- PROGRAM ARGS...\n"
			       "  -o FILE   write the trace to FILE (%%p expands to the pid); default\n"
			       "            tprof.<program>.<pid>.trace in the working directory\n");
			return 0;
		} else if (argv[i][0] == '-') {
			tprof_err("record: unknown option '%s'", argv[i]);
			return 1;
		} else {
			break;
		}
	}
	if (i >= argc) {
		tprof_err("usage: tprof record [-o FILE] -- PROGRAM ARGS...");
		return 1;
	}
	char lib[PATH_MAX];
	if (find_library(lib, sizeof(lib)) != 0) {
		tprof_err("record: cannot find libtprof.so (looked at %s; set TPROF_LIB)", lib);
		return 1;
	}
	if (output && !strstr(output, "%p")) {
		struct stat st;
		if (lstat(output, &st) == 0) {
			tprof_err("record: %s exists; not overwriting it", output);
			return 1;
		}
	}
	const char *old = getenv("LD_PRELOAD");
	size_t len = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *preload = xmalloc(len);
	snprintf(preload, len, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");

	pid_t pid = fork();
	if (pid < 0) {
		tprof_err("record: fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		setenv("LD_PRELOAD", preload, 1);
		if (output)
			setenv("TPROF_OUTPUT", output, 1);
		execvp(argv[i], argv + i);
		fprintf(stderr, "tprof: record: cannot run %s: %s\n", argv[i], strerror(errno));
		_exit(127);
	}
	free(preload);
	/* Like a shell: a terminal's ^C or ^\ goes to the program, the recorder waits for it. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			tprof_err("record: waitpid: %s", strerror(errno));
			return 1;
		}
	}
	char path[PATH_MAX];
	if (output) {
		char pidbuf[32];
		snprintf(pidbuf, sizeof(pidbuf), "%d", (int)pid);
		size_t o = 0;
		for (const char *c = output; *c && o < sizeof(path) - 24; c++) {
			if (c[0] == '%' && c[1] == 'p') {
				o += (size_t)snprintf(path + o, sizeof(path) - o, "%s", pidbuf);
				c++;
			} else if (c[0] == '%' && c[1] == '%') {
				path[o++] = '%';
				c++;
			} else {
				path[o++] = *c;
			}
		}
		path[o] = 0;
	} else {
		const char *base = strrchr(argv[i], '/');
		base = base ? base + 1 : argv[i];
		snprintf(path, sizeof(path), "tprof.%s.%d.trace", base, (int)pid);
	}
	int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (access(path, R_OK) == 0)
		fprintf(stderr, "tprof: record: %s exited with status %d; trace: %s\n", argv[i], code, path);
	else
		fprintf(stderr, "tprof: record: %s exited with status %d; no trace at %s (see above)\n",
			argv[i], code, path);
	return code;
}
