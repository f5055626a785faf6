/* The recorder: the process that drains traced processes' shared memory (preload/shm.h) into trace
 * files. server.c takes registrations on a unix socket and starts one writer thread (writer.c) per
 * process image; main.c is tprof-recorder, which libtprof.so starts when no recorder is reachable,
 * and tprof record (analyzer/cmd/cmd_record.c) runs the same server in a process of its own. */
#ifndef TPROF_RECORDER_H
#define TPROF_RECORDER_H

#include <stdint.h>
#include <sys/types.h>

/* What a writer needs to know of the process image it records. */
struct tprof_writer_args {
	pid_t pid;          /* as the recorder sees it */
	pid_t label;        /* as the process sees itself (another in a child pid namespace); 0: pid */
	uint64_t starttime; /* /proc/PID/stat field 22: with the pid, names the process for good */
	int memfd;          /* its shared memory; the writer owns it from now on */
	int tracefd;        /* the trace file it created; the writer owns it from now on */
	int own_mode;       /* the recorder created it (mode 0600): the writer gives it the process's
			     * umask */
	const char *path;   /* where the recorder created it (absolute), NULL: as its descriptor says
			     * (a file made ahead without a name says it has none) */
	int after_exec;     /* the process's previous image registered too (it exec'd) */
	uint64_t memfd_bytes; /* the memory file's size (TPROF_SHM_FILE_BYTES, less under a file size
			       * limit): nothing at or past it is mapped or read */
	int quiet;            /* TPROF_QUIET=1, as the registration said */
	uid_t uid;            /* the process's user and group */
	gid_t gid;
};

struct tprof_writer;

/* Starts a writer thread for one process image; NULL (both descriptors closed, a line on stderr)
 * when it cannot. Call these from the server thread only. */
struct tprof_writer *tprof_writer_start(const struct tprof_writer_args *a);
/* The process is gone (its pidfd fired): read how it ended now, while its zombie is there, unless
 * status (its wait status, from its parent) is given. */
void tprof_writer_gone(struct tprof_writer *w, int pidfd, const int *status);
/* The process registered again under the same pid and start time: it exec'd. The line about the
 * image it was is then held until the next image's own (or tprof_writer_flush_held). */
void tprof_writer_exec(struct tprof_writer *w);
/* Writes the lines held for pid (0: every process) now: its next image will not write them. */
void tprof_writer_flush_held(pid_t pid);
/* The trace is complete and the thread done with w, which tprof_writer_release takes back. */
int tprof_writer_done(const struct tprof_writer *w);
/* The absolute path of the trace file w writes ("" when unknown). */
const char *tprof_writer_trace_path(const struct tprof_writer *w);
void tprof_writer_release(struct tprof_writer *w);
/* Removes the empty trace file fd of a process that ended before it could be traced (writer.c). */
int tprof_remove_empty_trace(int fd, const char *path, int as_owner, uid_t uid, gid_t gid);
/* The parent-death signal tprof record's server set (0: none), set again after each change of the
 * file system ids, which clears it. */
extern int tprof_recorder_pdeathsig;

/* Wakes the server thread (a writer has finished). */
void tprof_recorder_wake(void);

struct tprof_server_opts {
	int listen_fd;   /* a listening SOCK_SEQPACKET unix socket */
	pid_t root;      /* the process the recorder serves first: its stderr is kept while it lives */
	int root_pidfd;  /* pidfd of root, or -1 */
	int linger_ms;   /* once root is gone and no writer is left, wait this long for a new process */
	int drop_stderr; /* let stderr go once root is gone and its trace written (it is the root's) */
	int notify_fd;   /* closed once root is gone and the traces of every process that is gone are
			  * written (tprof record then reaps root and ends), after the path of root's last
			  * trace is written to it; -1: none */
	int status_fd;   /* tprof record's: root's wait status (an int) arrives on it once root has ended,
			  * from root's parent, which sees it where the kernel hides the zombie's from the
			  * recorder (a non-dumpable process); -1: none */
};

/* What a recorder process does first: no directory kept busy, no death by SIGPIPE, SIGXFSZ or
 * SIGHUP, the program's resource limits lifted to their hard values, the normal scheduling policy
 * on every CPU it may use (not a real-time policy or a CPU set it inherited). */
void tprof_recorder_setup(void);

/* The directory the recorder was started in (absolute; "" when unknown), where it creates the
 * traces: relative paths are relative to it. */
const char *tprof_recorder_start_dir(void);

/* Takes registrations until the options say to stop; returns 0 once every writer has finished. */
int tprof_server_run(const struct tprof_server_opts *o);

/* Whether the line about a traced process may still go to stderr: after the recorder's root process
 * is gone (and its own line written), stderr is let go (it may be a pipe someone waits on). */
int tprof_recorder_stderr_ok(pid_t traced);

/* /proc/PID/stat: the start time (field 22); 0 on success. */
int tprof_proc_starttime(pid_t pid, uint64_t *start);
/* The wait status of a zombie (field 52) if pid is still that process (start time) and a zombie;
 * 0 on success, -1 when it cannot be known (reaped already, or another process now). */
int tprof_zombie_status(pid_t pid, uint64_t starttime, int *status);
/* The wait status of the ended process a pidfd names, once reaped (Linux 6.15); 0 on success. */
int tprof_pidfd_status(int pidfd, int *status);
/* Whether the kernel keeps that status for pidfds (tprof_pidfd_status can succeed). */
int tprof_pidfd_exit_kept(void);
/* The wait status of the ended process pidfd names: from the pidfd once reaped, else from its zombie
 * (/proc/PID/stat, field 52), taken only if the pidfd still has no status after the read (not
 * reaped, so the pid was still its own); 0 on success. */
int tprof_zombie_status_pidfd(pid_t pid, int pidfd, int *status);

#endif
