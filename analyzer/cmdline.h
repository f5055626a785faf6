/* The command line shared by the analyzer's trace commands (report, leaks, peak, allocs, export):
 * --json, --top N, -h/--help, unknown options and the one trace FILE parsed one way, each command's
 * own options handed to a callback, and the trace opened with the reader's message on failure.
 * Messages start with the command's name; statuses are those of cmds.h: 0 after --help, 1 for a
 * usage error, 2 for a trace that cannot be opened. */
#ifndef TPROF_CMDLINE_H
#define TPROF_CMDLINE_H

#include <stddef.h>

struct tprof_trace;

#define CMD_JSON 1u /* accept --json */
#define CMD_TOP 2u  /* accept --top N (digits, 0: all) */

#define CMD_RUN (-1)   /* cmd_parse: go on and run the command */
#define CMD_OTHER (-2) /* from an extra callback: argv[*i] is not one of the command's options */

struct cmd_opts {
	/* Set by the caller. */
	const char *name;  /* "peak": what messages start with */
	const char *usage; /* printed by --help on stdout, and on stderr when FILE is missing */
	unsigned accept;   /* CMD_JSON | CMD_TOP; the others are unknown options */
	size_t top;        /* the default of --top */
	/* Optional: the command's own options. Called with argv[*i] an argument none of the above;
	 * advances *i past any value it takes. Returns CMD_RUN when it took argv[*i], CMD_OTHER when
	 * that is not its option, else the exit status to return now (its message already printed). */
	int (*extra)(void *ctx, int argc, char **argv, int *i);
	void *ctx;

	/* Set by cmd_parse. */
	int json;
	const char *file;
};

/* Parses argv[1..argc-1] into o. Returns CMD_RUN when the command should go on (o->file is then
 * set), or the exit status to return at once: 0 after --help, 1 after a usage error (reported). */
int cmd_parse(struct cmd_opts *o, int argc, char **argv);

/* Opens the trace at path. NULL after reporting why it cannot be read (the command exits with 2);
 * the caller closes a returned trace with tprof_trace_close. */
struct tprof_trace *cmd_open_trace(const char *path);

#endif
