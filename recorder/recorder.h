/* The recorder: the process that drains traced processes' shared memory (preload/shm.h) into trace
 * files. server.c takes registrations on a unix socket and forks one writer (writer.c) per process
 * image; main.c is tprof-recorder, which libtprof.so starts when no recorder is reachable, and
 * tprof record (analyzer/cmd_record.c) runs the same server itself. */
#ifndef TPROF_RECORDER_H
#define TPROF_RECORDER_H

#include <stdint.h>
#include <sys/types.h>

/* What a writer needs to know of the process image it records. */
struct tprof_writer_args {
	pid_t pid;
	uint64_t starttime; /* /proc/PID/stat field 22: with the pid, names the process for good */
	int memfd;          /* its shared memory; closed by the writer once mapped */
	int tracefd;        /* the trace file it created */
	int exec_fd;        /* readable once the same process registered again (it exec'd) */
	const char *path;   /* for messages */
};

/* Writes the trace of one process image until it ends; returns the exit status for the writer
 * process (0: a trace was written). */
int tprof_writer_run(const struct tprof_writer_args *a);

struct tprof_server_opts {
	int listen_fd;   /* a listening SOCK_SEQPACKET unix socket */
	pid_t root;      /* the process the recorder serves first: its stderr is kept while it lives */
	int root_pidfd;  /* pidfd of root, or -1 */
	int linger_ms;   /* with no process left, wait this long for a new one, then return; -1: return
			  * once root is gone and every writer of a process that is gone has finished */
	int drop_stderr; /* let stderr go once root is gone (tprof-recorder: it is the root's) */
};

/* Takes registrations until the options say to stop; returns 0. Writers it forked may still run. */
int tprof_server_run(const struct tprof_server_opts *o);

/* Whether the line about a traced process may still go to stderr: after the recorder's root process
 * is gone (and its own line written), stderr is let go (it may be a pipe someone waits on). */
int tprof_recorder_stderr_ok(pid_t traced);

/* /proc/PID/stat: the start time (field 22); 0 on success. */
int tprof_proc_starttime(pid_t pid, uint64_t *start);
/* The wait status of a zombie (field 52) if pid is still that process (start time) and a zombie;
 * 0 on success, -1 when it cannot be known (reaped already, or another process now). */
int tprof_zombie_status(pid_t pid, uint64_t starttime, int *status);

#endif
