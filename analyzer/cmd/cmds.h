/* The analyzer's subcommands: one cmd_<verb>.c each, dispatched from the table in tprof.c.
 * Each returns the process exit status (enum tprof_exit, base/util.h): 0 success, 1 usage error,
 * 2 bad input (a file that cannot be read or written, or is not a valid trace), 3 a tool missing
 * or failing (plot: gnuplot); 4 (out of memory) ends the process where it happens. */
#ifndef TPROF_CMDS_H
#define TPROF_CMDS_H

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_roofline(int argc, char **argv);
int cmd_leaks(int argc, char **argv);
/* tprof record --error-exitcode: the leaks of the given kinds (a mask of 1 << enum tprof_leak_kind)
 * in the trace at path, after the default suppressions, summed up in one line on stderr; returns
 * code when any is left (any block in use, when the trace cannot be classified), 0 when none, 2
 * when the trace cannot be read. */
int leaks_check(const char *path, int kinds, int code);
int cmd_ops(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_peak(int argc, char **argv);
int cmd_allocs(int argc, char **argv);
int cmd_summary(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_diff(int argc, char **argv);

#endif
