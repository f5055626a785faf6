/* The command line shared by the analyzer's commands: --json, --csv[=TABLE], --top N, -h/--help,
 * unknown options and the FILE arguments parsed one way, each command's own options handed to a
 * callback, and the trace opened with the reader's message on failure (a warning when it was cut).
 * Messages start with the command's name; statuses are those of cmds.h: 0 after --help, 1 for a
 * usage error, 2 for a trace that cannot be opened. */
#ifndef TPROF_CMDLINE_H
#define TPROF_CMDLINE_H

#include <stddef.h>
#include <stdint.h>

struct tprof_trace;
struct out;
struct heap_stats;
struct stack_table;

#define CMD_JSON 1u /* accept --json */
#define CMD_TOP 2u  /* accept --top N (digits, 0: all) */
#define CMD_CSV 4u  /* accept --csv and --csv=TABLE (csv_tables); not together with --json */
#define CMD_SKIP_STEPS 8u /* accept --skip-steps N (digits, < 2^32) */
#define CMD_STEPS 16u     /* accept --steps A-B | A | A- */

#define CMD_RUN (-1)   /* cmd_parse: go on and run the command */
#define CMD_OTHER (-2) /* from an extra callback: argv[*i] is not one of the command's options */

/* How many FILE arguments a command takes. */
enum cmd_files {
	CMD_FILES_ONE = 0, /* exactly one (the default) */
	CMD_FILES_NONE,    /* none */
	CMD_FILES_TWO,     /* exactly two */
	CMD_FILES_SOME,    /* one or more, at most CMD_MAX_FILES */
};

#define CMD_MAX_FILES 64

struct cmd_opts {
	/* Set by the caller. */
	const char *name;  /* "peak": what messages start with */
	const char *usage; /* printed by --help on stdout, and on stderr when FILE is missing */
	unsigned accept;   /* CMD_JSON | CMD_TOP | CMD_CSV; the others are unknown options */
	size_t top;        /* the default of --top */
	enum cmd_files takes; /* how many FILE arguments */
	/* With CMD_CSV: the tables --csv=NAME may name, NULL-terminated; --csv alone means the first.
	 * NULL: the command has one table, and --csv=NAME is an error. */
	const char *const *csv_tables;
	/* Optional: the command's own options. Called with argv[*i] an argument none of the above;
	 * advances *i past any value it takes. Returns CMD_RUN when it took argv[*i], CMD_OTHER when
	 * that is not its option, else the exit status to return now (its message already printed). */
	int (*extra)(void *ctx, int argc, char **argv, int *i);
	void *ctx;

	/* Set by cmd_parse. */
	int json;
	int csv;          /* 0: no --csv; else 1 + the index of the table chosen in csv_tables */
	unsigned skip_steps; /* --skip-steps N; 0 when not given */
	int steps;           /* --steps given: step_first..step_last (UINT64_MAX: to the end) */
	uint64_t step_first, step_last;
	const char *file; /* = files[0] */
	const char *files[CMD_MAX_FILES];
	size_t nfiles;
};

/* A count on the command line: digits only (at most 12), into *n. 0, or -1 when arg is not one. */
int cmd_parse_count(const char *arg, size_t *n);

/* A --steps value: "A-B" (steps A to B, both included, numbered from 0 as the intervals between
 * tprof_step() boundaries), "A" (that step) or "A-" (from step A to the end: *last UINT64_MAX).
 * Returns 0, or -1 when text is none of these. */
int cmd_parse_steps(const char *text, uint64_t *first, uint64_t *last);

/* For "--name=value" (GNU style; not --csv=TABLE, an option of its own): its '='; else NULL. */
const char *cmd_long_eq(const char *arg);

/* Parses argv[1..argc-1] into o. Returns CMD_RUN when the command should go on (o->files then
 * holds as many as o->takes asks), or the exit status to return at once: 0 after --help, 1 after a
 * usage error (reported). */
int cmd_parse(struct cmd_opts *o, int argc, char **argv);

/* Opens the trace at path. NULL after reporting why it cannot be read (the command exits with 2);
 * the caller closes a returned trace with tprof_trace_close. A trace cut inside a block (t->cut)
 * opens, with a warning on stderr that says where, once per path however often it is opened. */
struct tprof_trace *cmd_open_trace(const char *path);

/* The same without the warning, for a command whose own output says where the trace was cut. */
struct tprof_trace *cmd_open_trace_unwarned(const char *path);

/* cmd_open_trace and cmd_open_trace_unwarned with tprof_trace_open_flags' flags: the commands that
 * read heap events only open with TPROF_OPEN_HEAP_ONLY. */
struct tprof_trace *cmd_open_trace_flags(const char *path, unsigned flags);
struct tprof_trace *cmd_open_trace_unwarned_flags(const char *path, unsigned flags);

/* The run's wall time as tprof report gives it: from time zero to the last clock reading or the
 * latest event read so far, whichever is later (so read the events first). */
uint64_t cmd_trace_duration_ns(const struct tprof_trace *t);

/* Prints one warning line on stderr per module whose frames could only be shown as module+offset
 * (file missing, build-id mismatch, no symbols), for the modules looked up so far. */
struct stack_sym;
void stack_sym_warn(struct stack_sym *ss);

/* Both passes of the peak commands (peak, export --metric peak): the trace at path read once for its
 * peak (*peak), then opened again and replayed to it, what was live there in tab and s. Returns that
 * trace (the caller frees s, tab and it), or NULL after saying why (exit status 2). */
struct tprof_trace *cmd_open_at_peak(const char *path, struct heap_stats *peak, struct heap_stats *s,
				     struct stack_table *tab);

/* The progress line of long reads (cmd/progress.c): on from the start of main, off for output
 * that must stay clean. */
void cmd_progress_on(void);
void cmd_progress_off(void);

/* Begins o's --json document or --csv table (out/table.h) on stdout. */
void cmd_out_begin(struct out *w, const struct cmd_opts *o);

#endif
