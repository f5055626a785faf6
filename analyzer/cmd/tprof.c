/* The tprof command: dispatches "tprof <verb> ..." to the cmd_<verb>() functions. */
#define UNW_LOCAL_ONLY
#include <libunwind.h> /* its version macros only: libtprof.so's stack check loads it, not tprof */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "base/dwlib.h"
#include "base/util.h"
#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "tprof_trace.h"

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} commands[] = {
	{"record", cmd_record, "record [-o FILE] -- PROGRAM ARGS...          run PROGRAM under libtprof.so"},
	{"report", cmd_report, "report [--json|--csv] FILE                   heap totals, peak, leaks"},
	{"summary", cmd_summary, "summary [--json|--csv] [--top N] FILE        report, allocs, peak and leaks' sites in one pass"},
	{"dump", cmd_dump, "dump FILE                                    every event and call, one per line"},
	{"roofline", cmd_roofline, "roofline [--json|--csv] [--remeasure]        this machine's FLOP/s and bandwidth roofs"},
	{"leaks", cmd_leaks, "leaks [--json|--csv] [--top N] FILE          blocks in use at exit, by stack"},
	{"ops", cmd_ops, "ops [--json|--csv] [--by range] [...] FILE   per-op time shares, FLOPs, % of peak, steps"},
	{"compare", cmd_compare, "compare [--json|--csv] A B ...               params, time and FLOPs per step, GFLOP/s"},
	{"diff", cmd_diff, "diff [--json|--csv] [--top N] A B            what changed from run A to run B"},
	{"peak", cmd_peak, "peak [--json|--csv] [--top N] FILE           what was live at the peak, by stack"},
	{"allocs", cmd_allocs, "allocs [--json|--csv] [--top N] FILE         allocation sites, temporaries, sizes"},
	{"export", cmd_export, "export FILE --folded|--chrome OUT            flame-graph stacks, Perfetto timeline"},
	{"plot", cmd_plot, "plot [-o DIR] [--format svg] FILE            memory, timeline, ops and roofline pictures"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: tprof <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %s\n", commands[i].help);
	fprintf(f, "  help [COMMAND]                               this list, or a command's options\n"
		   "  version                                      the version, trace formats and libraries (--version)\n");
	fprintf(f, "\nRun 'tprof <command> --help' for its options; --csv=TABLE picks another table of\n"
		   "those that print several. Exit status: 0 ok, 1 usage error, 2 bad input (a file that\n"
		   "cannot be read or written, or is not a valid trace), 3 a tool missing or failing (gnuplot,\n"
		   "libtprof.so), 4 out of memory; record: the program's own (127 not found, 126 not\n"
		   "runnable).\n");
}

/* Traces and ELF files are read through mappings: one cut short while it is read (another process
 * truncates it) faults with SIGBUS. That is bad input, not a crash: say so and exit 2. */
static void on_sigbus(int sig)
{
	(void)sig;
	static const char msg[] = "tprof: a file being read was cut short while it was read (SIGBUS); no result\n";
	ssize_t w = write(2, msg, sizeof(msg) - 1);
	(void)w;
	_exit(2);
}

/* The sink of the lower layers' warnings and notes (base/util.h): notes only on a terminal. */
static void print_warning(int note, const char *msg)
{
	if (!note || isatty(STDERR_FILENO))
		tprof_err("%s", msg);
}

#ifndef TPROF_RELEASE
#define TPROF_RELEASE "unknown"
#endif

/* tprof --version: this build, the trace versions it reads, the libraries it uses. */
static int version(void)
{
	printf("tprof %s\n", TPROF_RELEASE);
	printf("trace format: reads versions %d to %d; libtprof.so writes version %d (docs/FORMAT.md)\n",
	       TPROF_VERSION_OLDEST, TPROF_VERSION, TPROF_VERSION);
	const char *dw = tprof_dwlib_load(NULL) == 0 ? dwfl_version(NULL) : "not found";
	printf("built with gcc %s; libdw (elfutils) %s, libzstd %s at run time; libunwind %d.%d.%d for "
	       "libtprof.so's stack check (TPROF_VERIFY_STACKS); uthash\n",
	       __VERSION__, dw, ZSTD_versionString(), UNW_VERSION_MAJOR, UNW_VERSION_MINOR, UNW_VERSION_EXTRA);
	return 0;
}

/* A command's status, after the output it printed has reached its file: output that could not be
 * written is bad output (exit 2), help and version's too. */
static int written(const char *what, int rc)
{
	if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
		tprof_err("%s: cannot write the output: %s", what, strerror(errno ? errno : EIO));
		return TPROF_EXIT_INPUT;
	}
	return rc;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigbus;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	tprof_set_warn(print_warning);
	cmd_progress_on();
	if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    (strcmp(argv[1], "help") == 0 && argc == 2)) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 1 : written("help", 0);
	}
	/* help --help and version --help: what any command's --help is, its help */
	if ((strcmp(argv[1], "help") == 0 || strcmp(argv[1], "version") == 0) && argc == 3 &&
	    (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0)) {
		if (argv[1][0] == 'v')
			printf("usage: tprof version\nPrints tprof's version.\n");
		else
			usage(stdout);
		return written("help", 0);
	}
	if ((strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0 ||
	     strcmp(argv[1], "help") == 0) && argc > (argv[1][0] == 'h' ? 3 : 2)) {
		tprof_err("%s: surplus argument '%s'", argv[1], argv[argv[1][0] == 'h' ? 3 : 2]);
		return 1;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)
		return written("version", version());
	if (strcmp(argv[1], "help") == 0 && (strcmp(argv[2], "help") == 0 || strcmp(argv[2], "version") == 0)) {
		usage(stdout);
		return written("help", 0);
	}
	if (strcmp(argv[1], "help") == 0) { /* help COMMAND: its --help */
		char *sub[] = {argv[2], "--help", NULL};
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (strcmp(argv[2], commands[i].name) == 0)
				return written("help", commands[i].fn(2, sub));
		fprintf(stderr, "tprof: unknown command '%s'\n", argv[2]);
		usage(stderr);
		return 1;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0) {
			int rc = commands[i].fn(argc - 1, argv + 1);
			/* (record ends as its program did, whatever its own output met) */
			return commands[i].fn == cmd_record ? rc : written(argv[1], rc);
		}
	fprintf(stderr, "tprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 1;
}
