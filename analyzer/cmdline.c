/* The trace commands' shared command line: one parser for the options they have in common, so that
 * report, leaks, peak, allocs and export accept, reject and word them the same way, and one place
 * that opens a trace or says why it cannot. See cmdline.h. */
#include <stdio.h>
#include <string.h>

#include "cmdline.h"
#include "reader.h"
#include "stacks.h"
#include "util.h"

int cmd_parse(struct cmd_opts *o, int argc, char **argv)
{
	o->json = 0;
	o->file = NULL;
	for (int i = 1; i < argc; i++) {
		int rc;
		if ((o->accept & CMD_JSON) && strcmp(argv[i], "--json") == 0) {
			o->json = 1;
		} else if ((o->accept & CMD_TOP) && strcmp(argv[i], "--top") == 0) {
			if (stacks_parse_top(i + 1 < argc ? argv[++i] : NULL, &o->top) != 0) {
				tprof_err("%s: --top needs a number (0: all)", o->name);
				return 1;
			}
		} else if (o->extra && (rc = o->extra(o->ctx, argc, argv, &i)) != CMD_OTHER) {
			if (rc != CMD_RUN)
				return rc;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("%s\n", o->usage);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			tprof_err("%s: unknown option '%s'", o->name, argv[i]);
			return 1;
		} else if (!o->file) {
			o->file = argv[i];
		} else {
			tprof_err("%s: one trace at a time", o->name);
			return 1;
		}
	}
	if (!o->file) {
		tprof_err("%s", o->usage);
		return 1;
	}
	return CMD_RUN;
}

struct tprof_trace *cmd_open_trace(const char *path)
{
	char err[512];
	struct tprof_trace *t;
	if (tprof_trace_open(path, &t, err, sizeof(err)) != 0) {
		tprof_err("%s", err);
		return NULL;
	}
	return t;
}
