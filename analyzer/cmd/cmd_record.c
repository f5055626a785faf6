/* tprof record: runs a program with libtprof.so preloaded, and the recorder of it and of every
 * traced process it starts (recorder/server.c, in a child process of its own): the program and its
 * descendants register at the socket named in TPROF_RECORDER. Being the program's parent, it keeps
 * the program's zombie until its trace is written, so that the trace knows how the program ended,
 * and ends the same way (the same exit status, or the same signal; 127 or 126, as env, when it
 * cannot be run at all). SIGINT, SIGTERM, SIGHUP and
 * SIGQUIT sent to tprof record itself are passed on to the program (a terminal's ^C reaches the
 * program directly, as the whole foreground group gets it); when the program stops alone, tprof
 * record stops too (follow_stop). The library is looked up beside the
 * tprof executable (or at TPROF_LIB); it goes first in LD_PRELOAD, ahead of anything already
 * there, so that it also sees programs whose allocator is itself preloaded; behind a program's
 * AddressSanitizer runtime, which must come first. With --error-exitcode N
 * it then checks the program's trace for leaks (cmd_leaks.c, leaks_check) and ends with N when
 * there are, as valgrind's option of that name does. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/leakclass.h"
#include "recorder.h"
#include "shm.h"
#include "sys.h"
#include "base/dwlib.h"
#include "base/util.h"

/* The program file PROG names, looked up as execvp does, open for reading: -1 when it is not a
 * regular file that can be read (a FIFO or a device is not opened). */
static int open_program(const char *prog)
{
	char path[PATH_MAX];
	int fd = -1;
	if (strchr(prog, '/')) {
		fd = open(prog, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	} else {
		const char *dirs = getenv("PATH");
		for (const char *d = dirs && *dirs ? dirs : "/usr/local/bin:/usr/bin:/bin"; fd < 0 && *d;) {
			size_t n = strcspn(d, ":");
			if (snprintf(path, sizeof(path), "%.*s%s%s", (int)n, n ? d : ".", "/", prog) < (int)sizeof(path) &&
			    access(path, X_OK) == 0)
				fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
			d += n + (d[n] == ':');
		}
	}
	struct stat st;
	if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) { /* a FIFO, a device: not read */
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Whether PROG is an ELF program of another class or machine than tprof's own (a 32-bit one), into
 * which the loader cannot load libtprof.so: it would print an error for it and run the program
 * untraced. Its ELF class and machine are copied into out ("ELF32 i386" style). */
extern const unsigned char __ehdr_start[] __attribute__((visibility("hidden")));
static int foreign_program(const char *prog, char *out, size_t cap)
{
	int fd = open_program(prog);
	unsigned char h[20];
	ssize_t n = fd >= 0 ? pread(fd, h, sizeof(h), 0) : -1;
	if (fd >= 0)
		close(fd);
	if (n != (ssize_t)sizeof(h) || memcmp(h, ELFMAG, SELFMAG) != 0 ||
	    (h[EI_CLASS] == __ehdr_start[EI_CLASS] && h[EI_DATA] == __ehdr_start[EI_DATA] && h[18] == __ehdr_start[18] &&
	     h[19] == __ehdr_start[19]))
		return 0;
	unsigned machine = h[EI_DATA] == ELFDATA2MSB ? (unsigned)h[18] << 8 | h[19] : (unsigned)h[19] << 8 | h[18];
	const char *m = machine == EM_386 ? "i386" : machine == EM_X86_64 ? "x86-64" : machine == EM_ARM ? "ARM" :
			machine == EM_AARCH64 ? "AArch64" : NULL;
	const char *c = h[EI_CLASS] == ELFCLASS32 ? "32-bit" : h[EI_CLASS] == ELFCLASS64 ? "64-bit" : "unknown class";
	if (m)
		snprintf(out, cap, "%s %s", c, m);
	else
		snprintf(out, cap, "%s, ELF machine %u", c, machine);
	return 1;
}

/* The AddressSanitizer runtime the program is linked with (a DT_NEEDED libasan.so.N or
 * libclang_rt.asan), copied into out: 1 when there is one, 0 when not (or the program is a script,
 * or cannot be read). ASan ends a program at start unless its runtime is the first library loaded,
 * so it goes ahead of libtprof.so in LD_PRELOAD: the program runs, its heap calls reach ASan's
 * allocator unrecorded, and the trace says whose malloc it called. PROG is looked up as execvp
 * does. */
static int asan_runtime(const char *prog, char *out, size_t cap)
{
	int fd = open_program(prog);
	if (fd < 0)
		return 0;
	if (tprof_dwlib_load(NULL) != 0) { /* without libelf the program is taken as it is */
		close(fd);
		return 0;
	}
	int found = 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	for (Elf_Scn *scn = NULL; e && !found && (scn = elf_nextscn(e, scn)) != NULL;) {
		GElf_Shdr sh;
		Elf_Data *data;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC || !sh.sh_entsize ||
		    !(data = elf_getdata(scn, NULL)))
			continue;
		for (size_t k = 0; k < sh.sh_size / sh.sh_entsize && !found; k++) {
			GElf_Dyn dyn;
			const char *need;
			if (!gelf_getdyn(data, (int)k, &dyn) || dyn.d_tag != DT_NEEDED ||
			    !(need = elf_strptr(e, sh.sh_link, dyn.d_un.d_val)))
				continue;
			if ((strncmp(need, "libasan.so", 10) == 0 || strncmp(need, "libclang_rt.asan", 16) == 0) &&
			    !strchr(need, ':') && !strchr(need, ' ') && strlen(need) < cap) {
				snprintf(out, cap, "%s", need);
				found = 1;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return found;
}

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
	/* an installed tprof: PREFIX/bin/tprof and PREFIX/lib/tprof/libtprof.so (make install) */
	snprintf(out, cap, "%s/../lib/tprof/libtprof.so", self);
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, cap, "%s/libtprof.so", self); /* the build tree: build/tprof, build/libtprof.so */
	return access(out, R_OK);
}

static volatile sig_atomic_t child_pid;

/* The process group the program took itself, led by itself (setpgid(0, 0), as timeout does), in
 * tprof record's session, when tprof record leads the group it left (a job's: bare, the program
 * led it, and that call changed nothing: the terminal's signals and the terminal itself stayed its
 * own); else 0 (in a script's group the call moves the program bare too). */
static pid_t moved_group(void)
{
	pid_t pg = child_pid > 0 ? getpgid(child_pid) : -1;
	return pg == child_pid && getpgrp() == getpid() && getsid(child_pid) == getsid(0) ? pg : 0;
}

/* Passes on a signal someone sent to tprof record (kill, a service manager, timeout; a sigqueue
 * with its value and sender); one that the terminal sent to the whole foreground group (^C, ^Z,
 * ^\) has reached the program already, unless it took a group of its own (moved_group), whose the
 * terminal's signals then are; and a stop the terminal asked for is the program's to take (its
 * SIGTSTP handler may restore the terminal first): tprof record stops when the program has stopped
 * (follow_stop). A signal the program sent to its parent goes on to tprof record's (a readiness
 * notice). The terminal's hangup, which the kernel sends only to its session's leader, goes on when
 * that is tprof record (started by a terminal emulator, ssh -t): bare, it was the program. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int e = errno;
	if (child_pid > 0 && si && (si->si_code == SI_USER || si->si_code == SI_QUEUE)) {
		if (si->si_pid == child_pid) {
			kill(getppid(), sig);
		} else if (sig == SIGCONT) {
			/* a shell's fg continues the program itself (follow_stop) */
		} else if (si->si_code == SI_QUEUE) {
			siginfo_t q = *si;
			if (syscall(SYS_rt_sigqueueinfo, (long)child_pid, (long)sig, &q) != 0)
				kill(child_pid, sig);
		} else {
			kill(child_pid, sig);
		}
	} else if (child_pid > 0 && si && si->si_code == SI_KERNEL) {
		/* the terminal's signals, and the hangup and continue of an orphaned stopped job */
		pid_t pg;
		if (sig == SIGHUP && getsid(0) == getpid())
			kill(child_pid, sig);
		else if ((sig == SIGINT || sig == SIGQUIT || sig == SIGTSTP || sig == SIGHUP || sig == SIGCONT) &&
			 (pg = moved_group()) > 0)
			kill(-pg, sig);
	}
	errno = e;
}

/* The terminal goes to the group the program took (moved_group) while tprof record's group holds
 * it and tprof record is alone in its group (no other process of a pipeline it leads would lose the
 * terminal): bare, that group was the foreground one (the main loop looks every 50 ms while there is
 * such a group, at a shell's fg, and when the program stops on a read from the background). A
 * process of that group that a terminal read or write (stty tostop) stopped meanwhile is
 * continued. At the program's end the terminal comes back to tprof record's group, if that group
 * still holds it. */
static int tty_open(void)
{
	return open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
}

/* The parent of process p and its state (/proc), or -1. */
static pid_t stat_of(pid_t p, char *state, pid_t *pgrp)
{
	char buf[512];
	const char *tail = tprof_stat_read(p, buf, sizeof(buf));
	int ppid, pg;
	if (!tail || sscanf(tail, "%c %d %d", state, &ppid, &pg) != 3)
		return -1;
	*pgrp = pg;
	return ppid;
}

/* Whether group pg has a process but tprof record that is not the program's or one of its
 * descendants (which it would have led bare), when foreign; else whether one of its processes is
 * stopped (only then is a group continued: a program may take a SIGCONT it did not expect, a
 * redraw). /proc. */
static int group_has(pid_t pg, int foreign)
{
	DIR *d = opendir("/proc");
	int found = 0;
	for (struct dirent *e; d && !found && (e = readdir(d));) {
		pid_t p = (pid_t)atoi(e->d_name), pgrp;
		char state;
		if (p <= 0 || p == getpid() || stat_of(p, &state, &pgrp) < 0 || pgrp != pg || state == 'Z')
			continue;
		if (!foreign) {
			found = state == 'T' || state == 't';
			continue;
		}
		pid_t q = p, gp;
		char st;
		for (int hop = 0; hop < 64 && q > 1 && q != child_pid; hop++)
			q = stat_of(q, &st, &gp);
		found = q != child_pid;
	}
	if (d)
		closedir(d);
	return found;
}

/* Gives the terminal to the program's group (above): 1 when that group holds it now. A process of
 * that group that a read from the background stopped is continued, once, as it is handed over. */
static int hand_terminal(void)
{
	pid_t pg = moved_group();
	if (!pg)
		return 0;
	int tty = tty_open(), handed = 0;
	pid_t fg = tty >= 0 ? tcgetpgrp(tty) : -1;
	if (fg == getpgrp() && !group_has(getpgrp(), 1))
		handed = tcsetpgrp(tty, pg) == 0;
	if (tty >= 0)
		close(tty);
	if (handed && group_has(pg, 0))
		kill(-pg, SIGCONT); /* stopped by a read from the background */
	return fg == pg || handed;
}

static void take_terminal_back(pid_t pid)
{
	pid_t pg = getpgid(pid); /* the program's zombie */
	if (pg != pid || pg == getpgrp())
		return;
	int tty = tty_open();
	if (tty >= 0 && tcgetpgrp(tty) == pg) {
		sigset_t ttou, was;
		sigemptyset(&ttou);
		sigaddset(&ttou, SIGTTOU);
		sigprocmask(SIG_BLOCK, &ttou, &was);
		tcsetpgrp(tty, getpgrp());
		sigprocmask(SIG_SETMASK, &was, NULL);
	}
	if (tty >= 0)
		close(tty);
}

/* The signals tprof record passes on: those that would end or stop it, SIGWINCH and SIGURG, which
 * a program may handle (a terminal's resize reaches the program from the terminal), and SIGCONT the
 * program sends its parent; not the ones the kernel
 * sends a process for what it did itself (SIGSEGV, SIGXCPU, ...; SIGTTIN and SIGTTOU, which a
 * background process's own terminal read or write raises: caught, its write would raise it again
 * and again), and the real-time ones the C library leaves to programs. */
static int forwarded(int sig)
{
	switch (sig) {
	case SIGINT: case SIGTERM: case SIGHUP: case SIGQUIT: case SIGUSR1: case SIGUSR2: case SIGALRM:
	case SIGPIPE: case SIGVTALRM: case SIGPROF: case SIGIO: case SIGPWR: case SIGTSTP:
	case SIGWINCH: case SIGURG: /* ignored unless handled: a program may handle them */
	case SIGCONT: /* only the program's own, on to tprof record's parent (forward) */
		return 1;
	default:
		return sig >= SIGRTMIN && sig <= SIGRTMAX;
	}
}

/* In the recorder: tprof record has ended while the program runs. It ends only after the program,
 * unless it was killed (SIGKILL, which it cannot pass on): the program is then killed too, as a bare
 * run sent that signal would be, and its trace says so. After a normal end the program is reaped
 * already and its pidfd reaches nobody. */
static volatile int program_pidfd = -1;

static void record_gone(int sig)
{
	(void)sig;
	int e = errno;
	if (program_pidfd >= 0)
		syscall(SYS_pidfd_send_signal, program_pidfd, SIGKILL, NULL, 0);
	errno = e;
}

/* Once the program has ended, its wait status goes to the recorder on *fd, once: the kernel may hide
 * it in /proc from the recorder, which is not the program's parent (a program that made itself
 * non-dumpable shows a status of 0 there). The program is not reaped. */
static void send_status(pid_t pid, int *fd)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (*fd < 0 || waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT | WNOHANG) != 0 || si.si_pid != pid)
		return;
	int st = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8
					  : (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
	ssize_t w;
	do
		w = write(*fd, &st, sizeof(st));
	while (w < 0 && errno == EINTR);
	close(*fd);
	*fd = -1;
}

/* Wakes the wait for the recorder's note when the program stops (follow_stop). */
static void child_changed(int sig)
{
	(void)sig;
}

/* While tprof record is stopped with its program, a process of its own looks at the program every
 * 20 ms, and continues tprof record when the program runs again or has ended without it (someone
 * continued or killed the program alone), which would otherwise leave it stopped for good. */
static pid_t stop_watcher(pid_t pid)
{
	pid_t w = fork();
	if (w != 0)
		return w;
	child_pid = 0; /* it passes on no signal */
	pid_t rec = getppid();
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (;;) {
		struct timespec ts = {0, 20000000};
		nanosleep(&ts, NULL);
		if (getppid() != rec)
			_exit(0);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = 0;
		const char *paren = strrchr(buf, ')');
		char state = paren && paren[1] == ' ' ? paren[2] : 0;
		if (state != 'T' && state != 't') {
			kill(rec, SIGCONT);
			_exit(0);
		}
	}
}

/* When the program has stopped (it stopped itself, or was sent SIGSTOP or SIGTSTP alone), tprof
 * record stops as it did, so that whoever waits for it (a shell's job control, a parent with
 * WUNTRACED) sees the stop; once continued, it continues the program unless that was continued too
 * (a shell's fg continues the whole group). The program is not reaped here: its recorder reads how
 * it ended from the zombie. */
static void follow_stop(pid_t pid)
{
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG) != 0 || si.si_pid != pid || si.si_code != CLD_STOPPED)
		return;
	for (;;) {
		int sig = si.si_status;
		/* stopped reading (or writing) the terminal from the group it took, which had it bare */
		pid_t moved = moved_group();
		if ((sig == SIGTTIN || sig == SIGTTOU) && moved && hand_terminal()) {
			kill(-moved, SIGCONT);
			return;
		}
		fflush(stdout);
		fflush(stderr);
		pid_t watcher = stop_watcher(pid);
		if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
			/* the same stop, for the shell's words ("Stopped (tty input)"): with the default
			 * action for the moment, not the handler that passes it on */
			struct sigaction dfl, was;
			memset(&dfl, 0, sizeof(dfl));
			dfl.sa_handler = SIG_DFL;
			sigemptyset(&dfl.sa_mask);
			sigaction(sig, &dfl, &was);
			raise(sig);
			sigaction(sig, &was, NULL);
		} else {
			raise(SIGSTOP);
		}
		if (watcher > 0) {
			kill(watcher, SIGKILL);
			while (waitpid(watcher, NULL, 0) < 0 && errno == EINTR)
				;
		}
		/* continued: the program may have been continued too, and even stopped again since (a
		 * second raise(SIGSTOP) of its own): that stop is followed as the first */
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG) == 0 && si.si_pid == pid && si.si_code == CLD_STOPPED)
			continue;
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)pid, &si, WCONTINUED | WNOHANG) == 0 && si.si_pid == 0) {
			/* still stopped: only tprof record was continued; a group the program took is
			 * continued whole, and has the terminal again (fg) */
			pid_t pg = moved_group();
			if (pg)
				hand_terminal();
			kill(pg ? -pg : pid, SIGCONT);
		}
		return;
	}
}

/* tprof record's own descriptors go above 2: started with stdin, stdout or stderr closed, a socket
 * or pipe would take that number, which its recorder then points at /dev/null (and which the
 * program must find closed, as bare). */
static int above_std(int fd)
{
	if (fd < 0 || fd > 2)
		return fd;
	int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	close(fd);
	return high;
}

static int listen_socket(char *name, size_t cap)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	/* tprof.UID.…: the user is read from the name for the directory of its path (preload/region.c) */
	snprintf(name, cap, "tprof.%u.record.%d.%ld", (unsigned)getuid(), (int)getpid(), (long)ts.tv_nsec);
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	size_t len = strlen(name);
	memcpy(a.sun_path + 1, name, len); /* abstract */
	int fd = above_std(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len)) != 0 ||
	    listen(fd, 64) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether traces can be made under -o's name out for program prog, said when not: the name, as
 * libtprof.so makes it (%p a pid, of 7 digits at most: pid_max is at most 4194304; %% a '%'; after
 * a directory's '/' the default name, tprof.PROGRAM.PID.trace), fits the 1022 bytes it allows, and
 * its directory (unless a %p makes it per process) exists and takes files. Checked before the
 * program starts: a program run untraced would look like success. A process of the tree with
 * another name says for itself when its name does not fit. */
static int output_usable(const char *out, const char *prog)
{
	char dir[PATH_MAX];
	size_t n = 0, ol = strlen(out), dn = 0;
	int per_process = 0;
	const char *slash = strrchr(out, '/');
	for (const char *o = out; *o; o++) {
		int in_dir = slash && o <= slash;
		char c = *o;
		if (o[0] == '%' && (o[1] == 'p' || o[1] == '%')) {
			n += o[1] == 'p' ? 7 : 1;
			per_process |= in_dir && o[1] == 'p';
			c = '%';
			o++;
		} else {
			n++;
		}
		if (in_dir && dn + 1 < sizeof(dir))
			dir[dn++] = c; /* the directory as it will be named: %% is one '%' */
	}
	if (out[ol - 1] == '/') {
		const char *base = strrchr(prog, '/') ? strrchr(prog, '/') + 1 : prog;
		size_t bl = strlen(base);
		n += sizeof("tprof..4194304.trace") - 1 + (bl < 200 ? bl : 200); /* names: at most 200 bytes */
	}
	if (n > 1022) {
		tprof_err("record: -o: the traces' names would be longer than 1022 bytes");
		return -1;
	}
	if (!slash) {
		strcpy(dir, ".");
	} else if (dn + 1 >= sizeof(dir)) {
		tprof_err("record: -o: the directory's name is longer than %d bytes", PATH_MAX - 2);
		return -1;
	} else {
		dir[dn] = 0; /* with its '/': "/" stays the root */
	}
	if (per_process)
		return 0; /* a directory per process: each says for itself */
	struct stat st;
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || access(dir, W_OK | X_OK) != 0) {
		int e = errno;
		tprof_err("record: -o: cannot make traces in %s: %s", dir,
			  stat(dir, &st) == 0 && !S_ISDIR(st.st_mode) ? "not a directory" : strerror(e));
		return -1;
	}
	return 0;
}

int cmd_record(int argc, char **argv)
{
	const char *output = NULL;
	int error_exitcode = 0, kinds_given = 0, kinds = 1 << TPROF_LEAK_DEFINITE | 1 << TPROF_LEAK_INDIRECT | 1 << TPROF_LEAK_POSSIBLE;
	int i = 1;
	for (; i < argc; i++) {
		/* an option's value: the next word, or what follows '=' in --name=value */
		char opt[32];
		const char *a = argv[i], *eq = cmd_long_eq(a), *val = NULL;
		if (eq && (size_t)(eq - a) < sizeof(opt)) {
			memcpy(opt, a, (size_t)(eq - a));
			opt[eq - a] = 0;
			a = opt;
			val = eq + 1;
		}
		int takes = strcmp(a, "-o") == 0 || strcmp(a, "--error-exitcode") == 0 || strcmp(a, "--kinds") == 0;
		if (takes && !val && i + 1 < argc)
			val = argv[++i];
		else if (!takes && val && (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)) {
			tprof_err("record: %s takes no value ('%s')", a, argv[i]);
			return 1;
		}
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		} else if (strcmp(a, "-o") == 0) {
			if (!val || !*val) {
				tprof_err("record: -o needs a file name");
				return 1;
			}
			output = val;
			/* an existing directory named without its '/': the traces go into it, not beside
			 * it as "DIR.1" */
			struct stat st;
			size_t ol = strlen(val);
			if (val[ol - 1] != '/' && stat(val, &st) == 0 && S_ISDIR(st.st_mode)) {
				static char dir[4096];
				if (ol + 2 <= sizeof(dir)) {
					memcpy(dir, val, ol);
					memcpy(dir + ol, "/", 2);
					output = dir;
				}
			}
		} else if (strcmp(a, "--error-exitcode") == 0) {
			char *end = NULL;
			long n = val ? strtol(val, &end, 10) : -1;
			if (!val || !end || *end || end == val || n < 1 || n > 255) {
				tprof_err("record: --error-exitcode takes a status from 1 to 255");
				return 1;
			}
			error_exitcode = (int)n;
		} else if (strcmp(a, "--kinds") == 0) {
			kinds_given = 1;
			if (!val || (kinds = leak_kinds_parse(val)) < 0) {
				tprof_err("record: --kinds takes a list of definite, indirect, possible, reachable "
					  "(or all, or lost)");
				return 1;
			}
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("usage: tprof record [-o FILE] [--error-exitcode N [--kinds LIST]] -- PROGRAM ARGS...\n"
			       "  -o FILE   write the trace to FILE (%%p expands to the pid; an existing FILE\n"
			       "            gets a suffix .1, .2, ...); default tprof.<program>.<pid>.trace;\n"
			       "            relative to this working directory, whatever directory a process\n"
			       "            of the tree runs in. Every traced process says where its trace\n"
			       "            went, on stderr, and a program that left none is named\n"
			       "            (TPROF_QUIET=1: nothing).\n"
			       "  --error-exitcode N\n"
			       "            when the program has ended with an exit call, exit with N if its\n"
			       "            trace shows leaks of the kinds --kinds names (default: lost, that is\n"
			       "            definite,indirect,possible), after the default suppressions; a line\n"
			       "            on stderr sums them up (tprof leaks TRACE lists them).\n"
			       "libtprof.so is taken from TPROF_LIB, else ../lib/tprof beside this tprof (installed),\n"
			       "else beside it (the build tree). The program's environment may set TPROF_OUTPUT,\n"
			       "TPROF_DEPTH, TPROF_LOSSY, TPROF_QUIET, TPROF_TIMESTAMPS, TPROF_RING_ENTRIES,\n"
			       "TPROF_COMPRESS, TPROF_CLOCK, TPROF_FREERES, TPROF_LEAKSCAN, TPROF_RSS_INTERVAL_MS\n"
			       "and TPROF_DEBUG (README.md, its table of variables).\n");
			return 0;
		} else if (argv[i][0] == '-') {
			tprof_err("record: unknown option '%s'", argv[i]);
			return 1;
		} else {
			break;
		}
	}
	if (i >= argc) {
		tprof_err("usage: tprof record [-o FILE] [--error-exitcode N [--kinds LIST]] -- PROGRAM ARGS...");
		return 1;
	}
	if (kinds_given && !error_exitcode) {
		tprof_err("record: --kinds is for --error-exitcode (which leaks make the exit status N)");
		return 1;
	}
	if (output && output_usable(output, argv[i]) != 0)
		return 2;
	char lib[PATH_MAX];
	if (find_library(lib, sizeof(lib)) != 0) {
		tprof_err("record: cannot find libtprof.so (looked at %s; set TPROF_LIB)", lib);
		return 3; /* a part of tprof is missing, not a usage error */
	}
	char name[96];
	int lfd = listen_socket(name, sizeof(name));
	if (lfd < 0) {
		tprof_err("record: cannot create the recorder's socket: %s", strerror(errno));
		return 1;
	}
	const char *old = getenv("LD_PRELOAD");
	char asan[128] = "", kind[64];
	if (foreign_program(argv[i], kind, sizeof(kind))) {
		/* the loader would refuse libtprof.so with an error line of its own: not asked to load it */
		tprof_err("record: %s is a program of another kind than this machine's (%s): libtprof.so "
			  "cannot be loaded into it; it runs untraced, and so does what it runs", argv[i], kind);
		lib[0] = 0;
	} else if (asan_runtime(argv[i], asan, sizeof(asan))) {
		tprof_err("record: %s is built with AddressSanitizer, whose runtime (%s) must be loaded first: "
			  "its heap calls go to ASan's allocator and are not recorded", argv[i], asan);
	}
	size_t len = strlen(asan) + strlen(lib) + (old ? strlen(old) : 0) + 3;
	char *preload = xmalloc(len);
	snprintf(preload, len, "%s%s%s%s%s", asan, *asan && *lib ? ":" : "", lib, *lib && old && *old ? ":" : "",
		 old && *old ? old : "");

	/* Signals are set up before the fork so that none is missed; the child puts back the
	 * dispositions and the mask it was started with (SIGCHLD ignored, SIGTERM blocked, ...), which
	 * tprof record does not keep for itself: it must see its child end, and pass signals on. */
	static struct sigaction sa, old_sa[NSIG];
	sigset_t old_mask, unblock;
	sigemptyset(&unblock);
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int k = 1; k < NSIG; k++)
		if (forwarded(k)) {
			sigaction(k, &sa, &old_sa[k]);
			sigaddset(&unblock, k);
		}
	struct sigaction cs;
	memset(&cs, 0, sizeof(cs));
	cs.sa_handler = child_changed; /* SIG_IGN would reap the program before its recorder reads it */
	sigemptyset(&cs.sa_mask);
	sigaction(SIGCHLD, &cs, &old_sa[SIGCHLD]);
	sigaddset(&unblock, SIGCHLD);
	sigprocmask(SIG_UNBLOCK, &unblock, &old_mask);
	fflush(stdout);
	fflush(stderr);
	/* the child's errno when exec fails, through a pipe that a successful exec closes */
	int ex[2];
	if (pipe2(ex, O_CLOEXEC) != 0)
		ex[0] = ex[1] = -1;
	ex[0] = above_std(ex[0]);
	ex[1] = above_std(ex[1]);
	/* the program waits at its exec for the recorder to be there (a byte on go): killed before
	 * that, tprof record could not have it killed (record_gone), so it never runs, as a bare
	 * program killed then */
	int go[2];
	if (pipe2(go, O_CLOEXEC) != 0)
		go[0] = go[1] = -1;
	go[0] = above_std(go[0]);
	go[1] = above_std(go[1]);
	pid_t pid = fork();
	if (pid < 0) {
		tprof_err("record: fork: %s", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		for (int k = 1; k < NSIG; k++)
			if (forwarded(k) || k == SIGCHLD)
				sigaction(k, &old_sa[k], NULL);
		sigprocmask(SIG_SETMASK, &old_mask, NULL);
		if (*preload)
			setenv("LD_PRELOAD", preload, 1);
		else
			unsetenv("LD_PRELOAD");
		setenv(TPROF_RECORDER_ENV, name, 1);
		if (output)
			setenv("TPROF_OUTPUT", output, 1);
		if (go[1] >= 0)
			close(go[1]);
		if (go[0] >= 0) {
			char c;
			ssize_t r;
			do
				r = read(go[0], &c, 1);
			while (r < 0 && errno == EINTR);
			if (r != 1) {
				signal(SIGKILL, SIG_DFL);
				raise(SIGKILL);
			}
			close(go[0]);
		}
		execvp(argv[i], argv + i);
		int e = errno;
		fprintf(stderr, "tprof: record: cannot run %s: %s\n", argv[i], strerror(e));
		ssize_t w = ex[1] >= 0 ? write(ex[1], &e, sizeof(e)) : 0; /* lost: the parent's usual line */
		(void)w;
		_exit(e == ENOENT ? 127 : 126); /* as env and the shells: not found, or not runnable */
	}
	if (ex[1] >= 0)
		close(ex[1]);
	if (go[0] >= 0)
		close(go[0]);
	child_pid = pid;
	free(preload);
	/* The recorder runs in a process of its own, in a session of its own (a terminal's ^C is the
	 * program's business): it may go on writing the traces of processes the program left behind
	 * after tprof record has ended. It closes the notification pipe once the program is gone and
	 * the traces of every traced process that is gone are written; the program stays a zombie till
	 * then, so that its writer reads how it ended. */
	int note[2];
	if (pipe2(note, O_CLOEXEC) != 0) {
		tprof_err("record: pipe: %s", strerror(errno));
		return 1;
	}
	note[0] = above_std(note[0]);
	note[1] = above_std(note[1]);
	/* the program's wait status, to the recorder once it has ended (send_status) */
	int sp[2];
	if (pipe2(sp, O_CLOEXEC) != 0)
		sp[0] = sp[1] = -1;
	sp[0] = above_std(sp[0]);
	sp[1] = above_std(sp[1]);
	pid_t self = getpid();
	pid_t rec = fork();
	if (rec < 0) {
		tprof_err("record: fork: %s", strerror(errno));
		return 1;
	}
	if (rec == 0) {
		close(note[0]);
		if (sp[1] >= 0)
			close(sp[1]);
		if (go[1] >= 0)
			close(go[1]); /* the program goes on when tprof record says so, or dies with it */
		if (ex[0] >= 0)
			close(ex[0]);
		for (int k = 1; k < NSIG; k++)
			if (forwarded(k) || k == SIGCHLD)
				signal(k, SIG_DFL);
		signal(SIGPIPE, SIG_IGN); /* its lines on a stderr whose reader has gone: not its end */
		signal(SIGBUS, SIG_DFL); /* tprof's own handler speaks of reading traces */
		setsid();
		int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			close(nul);
		}
		tprof_recorder_setup();
		struct tprof_server_opts o = {lfd, pid, (int)syscall(SYS_pidfd_open, (long)pid, 0L), 200, 1, note[1], sp[0]};
		if (o.root_pidfd < 0) {
			tprof_err("record: pidfd_open: %s", strerror(errno));
			_exit(1);
		}
		program_pidfd = o.root_pidfd;
		signal(SIGUSR2, record_gone); /* in the recorder, never the program: invisible to it */
		tprof_recorder_pdeathsig = SIGUSR2;
		if (prctl(PR_SET_PDEATHSIG, SIGUSR2) == 0 && getppid() != self)
			record_gone(SIGUSR2); /* killed before that was set */
		_exit(tprof_server_run(&o));
	}
	close(note[1]);
	if (sp[0] >= 0)
		close(sp[0]);
	close(lfd);
	if (go[1] >= 0) { /* the recorder is there: the program may run */
		ssize_t w;
		do
			w = write(go[1], "g", 1);
		while (w < 0 && errno == EINTR);
		close(go[1]);
	}
	int exec_err = 0; /* read once the recorder runs: the program's registration waits for it */
	if (ex[0] >= 0) {
		ssize_t r;
		do
			r = read(ex[0], &exec_err, sizeof(exec_err));
		while (r < 0 && errno == EINTR);
		if (r != (ssize_t)sizeof(exec_err))
			exec_err = 0;
		close(ex[0]);
	}
	/* the server writes the path of the program's trace, then closes the pipe; meanwhile a stop of
	 * the program is followed (SIGCHLD wakes the poll) */
	char trace[4096];
	size_t got = 0;
	for (;;) {
		send_status(pid, &sp[1]);
		follow_stop(pid);
		/* a group the program took gets the terminal within 50 ms (hand_terminal); one is looked
		 * for 5 times a second where the program could take one that should */
		int moved = moved_group() > 0;
		if (moved)
			hand_terminal();
		struct pollfd pf = {note[0], POLLIN, 0};
		int n = poll(&pf, 1, moved ? 50 : getpgrp() == getpid() ? 200 : 1000);
		if (n <= 0)
			continue; /* a signal (SIGCHLD), or a second gone: look at the program again */
		ssize_t r = read(note[0], trace + got, sizeof(trace) - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
		if (got == sizeof(trace) - 1)
			break;
	}
	trace[got] = 0;
	close(note[0]);
	if (sp[1] >= 0)
		close(sp[1]);
	take_terminal_back(pid); /* the program's end: its lines below come from the foreground */
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			tprof_err("record: waitpid: %s", strerror(errno));
			return 1;
		}
	}
	child_pid = 0;
	const char *quiet = getenv("TPROF_QUIET");
	/* TPROF_QUIET as libtprof.so reads it: 1, yes, true or on */
	int is_quiet = quiet && (!strcasecmp(quiet, "1") || !strcasecmp(quiet, "yes") || !strcasecmp(quiet, "y") ||
				 !strcasecmp(quiet, "true") || !strcasecmp(quiet, "on"));
	if (!trace[0] && !exec_err && !is_quiet)
		fprintf(stderr, "tprof: record: no trace of %s: it made no heap call, the preload did not reach it "
				"(a statically linked or set-user-ID program), or it could not be traced (said above)\n",
			argv[i]);
	if (WIFSIGNALED(status)) { /* end the same way */
		int sig = WTERMSIG(status);
		fflush(stdout);
		fflush(stderr);
		/* no core of its own: the program's, if any, is the one to keep (a core file in the same
		 * directory would be overwritten, a crash handler would report tprof) */
		struct rlimit nocore = {0, 0};
		if (getrlimit(RLIMIT_CORE, &nocore) == 0) {
			nocore.rlim_cur = 0;
			setrlimit(RLIMIT_CORE, &nocore);
		}
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		return 128 + sig;
	}
	if (exec_err) /* nothing ran: 127 or 126, said above */
		return WEXITSTATUS(status);
	if (error_exitcode) {
		fflush(stdout);
		if (!trace[0]) /* no leaks known: the program's own status, as without the option */
			tprof_err("record: the program's trace is not known: no leak check");
		int rc = trace[0] ? leaks_check(trace, kinds, error_exitcode) : 0;
		if (rc)
			return rc;
	}
	return WEXITSTATUS(status);
}
