/* The progress line of a long read (the reader's hook, trace/reader.h): one line on stderr, redrawn
 * in place, erased when the reading ends. Only on a terminal, for a trace of 100 MB or more
 * (TPROF_PROGRESS=1: any size, =0: never), and only for commands whose output allows it (not
 * --json, --csv or dump: cmd_progress_off). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmdline.h"
#include "trace/reader.h"
#include "base/util.h"

static int want(uint64_t size)
{
	static int sw = -2; /* -1: unset, by the size; read (and a bad value said) once */
	if (sw == -2)
		sw = tprof_env_switch("TPROF_PROGRESS", -1);
	if (sw == 0 || !isatty(2))
		return 0;
	return sw == 1 || size >= 100000000u;
}

static void show(const char *path, uint64_t at, uint64_t size, double secs)
{
	fprintf(stderr, "\rtprof: reading %s: %.0f of %.0f MB (%.0f%%), %.0f MB/s\033[K", path, (double)at / 1e6,
		(double)size / 1e6, size ? 100.0 * (double)at / (double)size : 100.0,
		secs > 0 ? (double)at / 1e6 / secs : 0.0);
	fflush(stderr);
}

static void end(void)
{
	fputs("\r\033[K", stderr);
	fflush(stderr);
}

static const struct tprof_progress line = {want, show, end};

void cmd_progress_on(void)
{
	tprof_progress_hook = &line;
}

void cmd_progress_off(void)
{
	tprof_progress_hook = NULL;
}
