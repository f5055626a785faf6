/* What a program sees of itself besides descriptors and signals, for tests/integration/invisible.bats:
 * its threads (/proc/self/task), its children (wait), its timers, its seccomp and no-new-privileges
 * state, its prctl flags, umask, resource limits, CPU affinity and environment (but for LD_PRELOAD and
 * TPROF_*, which the two runs set differently, and PWD and OLDPWD: the two runs work in two
 * directories). Once at the start of main and once after many
 * mallocs and frees (with a pause, so that anything periodic has had time to happen). Bare and under
 * the preload, the output must be the same.
 *
 *   inv_self               the report above
 *   inv_self tasks         only the number of threads, at the start of main and after the mallocs */
#include <errno.h>
#include <dirent.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inv.h"

extern char **environ;

static int tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* a line of /proc/self/status, e.g. "Seccomp:\t0" */
static void status_line(const char *key)
{
	char buf[8192];
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return;
	size_t len = strlen(key);
	while (fgets(buf, sizeof buf, f))
		if (!strncmp(buf, key, len) && buf[len] == ':')
			say("%s", buf);
	fclose(f);
}

static void show(const char *when)
{
	say("-- %s\n", when);
	say("tasks: %d\n", tasks());
	errno = 0;
	pid_t w = waitpid(-1, NULL, WNOHANG);
	say("waitpid(-1, WNOHANG): %d %s\n", (int)w, w < 0 ? strerror(errno) : "");
	char path[64], buf[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
	FILE *f = fopen(path, "r");
	if (f) {
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		buf[n] = 0;
		fclose(f);
		say("children: [%s]\n", buf);
	}
	static const int timers[] = {ITIMER_REAL, ITIMER_VIRTUAL, ITIMER_PROF};
	for (int i = 0; i < 3; i++) {
		struct itimerval it;
		getitimer(timers[i], &it);
		say("itimer %d: %ld.%06ld every %ld.%06ld\n", timers[i], (long)it.it_value.tv_sec,
		    (long)it.it_value.tv_usec, (long)it.it_interval.tv_sec, (long)it.it_interval.tv_usec);
	}
	status_line("Seccomp");
	status_line("NoNewPrivs");
	status_line("SigIgn");
	status_line("SigCgt");
	status_line("SigBlk");
	say("dumpable %d pdeathsig ", prctl(PR_GET_DUMPABLE));
	int sig = -1;
	prctl(PR_GET_PDEATHSIG, &sig);
	say("%d subreaper ", sig);
	int reaper = -1;
	prctl(PR_GET_CHILD_SUBREAPER, &reaper);
	say("%d\n", reaper);
	mode_t m = umask(0);
	umask(m);
	say("umask %04o\n", (unsigned)m);
	static const int limits[] = {RLIMIT_NOFILE, RLIMIT_CORE, RLIMIT_STACK, RLIMIT_AS, RLIMIT_NPROC};
	for (int i = 0; i < 5; i++) {
		struct rlimit rl;
		getrlimit(limits[i], &rl);
		say("rlimit %d: %lld %lld\n", limits[i], (long long)rl.rlim_cur, (long long)rl.rlim_max);
	}
	cpu_set_t cpus;
	sched_getaffinity(0, sizeof cpus, &cpus);
	say("cpus %d, nice %d, policy %d\n", CPU_COUNT(&cpus), getpriority(PRIO_PROCESS, 0),
	    sched_getscheduler(0));
	say("environment:\n");
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "LD_PRELOAD=", 11) && strncmp(*e, "TPROF_", 6) && strncmp(*e, "PWD=", 4) &&
		    strncmp(*e, "OLDPWD=", 7))
			say("  %s\n", *e);
}

int main(int argc, char **argv)
{
	int only_tasks = argc > 1 && !strcmp(argv[1], "tasks");
	if (only_tasks)
		say("tasks at start of main: %d\n", tasks());
	else
		show("at start of main");
	churn(20000);
	usleep(100000);
	churn(20000);
	if (only_tasks)
		say("tasks after mallocs: %d\n", tasks());
	else
		show("after mallocs");
	return 0;
}
