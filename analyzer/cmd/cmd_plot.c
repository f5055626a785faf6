/* tprof plot: four pictures of a trace, drawn by gnuplot, each written next to the gnuplot script and
 * the data that make it, so that a user can restyle and re-run it: memory (live heap bytes over time,
 * the exact peak, step boundaries, RSS), timeline (per thread, the kernel call running at each moment
 * and the annotated ranges above it), ops (self-time share per op) and roofline (each op's GFLOP/s
 * against its arithmetic intensity under this machine's roofs). The pictures' scripts and data are
 * written by out/plot_*.c (out/gnuplot.h); this file fills their context, runs gnuplot on each and
 * chooses the exit status. docs/PLOT.md. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analysis/ops.h"
#include "analysis/roofline.h"
#include "base/util.h"
#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "out/gnuplot.h"
#include "trace/reader.h"

#define USAGE                                                                                            \
	"usage: tprof plot [-o|--output DIR] [--format png|svg] FILE\n"                                  \
	"Draws memory, timeline, ops and roofline pictures of the trace with gnuplot into DIR (default: .),\n" \
	"each beside the .gp script and .dat data that make it. Exit status 3: gnuplot missing or failed."

#define PLOT_TOOL TPROF_EXIT_TOOL /* gnuplot missing or failing: no pictures */
#define PLOT_FILE TPROF_EXIT_INPUT /* DIR or a file in it cannot be written, or the trace changed */

/* ---- gnuplot ---- */

/* The gnuplot executable the way execvp would find it in PATH. 0 with its path in buf, or -1. */
static int find_gnuplot(char *buf, size_t n)
{
	const char *path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t len = colon ? (size_t)(colon - p) : strlen(p);
		struct stat st;
		snprintf(buf, n, "%.*s/gnuplot", (int)len, len ? p : ".");
		if (stat(buf, &st) == 0 && S_ISREG(st.st_mode) && access(buf, X_OK) == 0)
			return 0;
		if (!colon)
			return -1;
		p = colon + 1;
	}
}

/* Whether the picture at path ends as a whole one does: a PNG with its IEND chunk, an SVG with its
 * closing tag. gnuplot exits 0 when the file system fills under it, and leaves a picture cut short. */
static int picture_whole(const char *path, int svg)
{
	static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
	unsigned char tail[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 12) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	size_t n = st.st_size < (off_t)sizeof(tail) ? (size_t)st.st_size : sizeof(tail);
	ssize_t got = pread(fd, tail, n, st.st_size - (off_t)n);
	close(fd);
	if (got != (ssize_t)n)
		return 0;
	if (!svg)
		return memcmp(tail + n - 12, iend, 12) == 0;
	while (n > 0 && (tail[n - 1] == '\n' || tail[n - 1] == '\r' || tail[n - 1] == ' ' || tail[n - 1] == '\t'))
		n--;
	return n >= 6 && memcmp(tail + n - 6, "</svg>", 6) == 0;
}

/* Runs gnuplot on NAME.gp inside dir. 0 on success; else prints what gnuplot said, removes the picture
 * it may have left half-written and returns PLOT_TOOL (PLOT_FILE when gnuplot ran well but the
 * picture was cut short: the file system is full). */
static int run_gnuplot(const struct plot_ctx *c, const char *gnuplot, const char *name)
{
	char script[64], pic[PATH_MAX];
	snprintf(script, sizeof(script), "%s.gp", name);
	snprintf(pic, sizeof(pic), "%s/%s.%s", c->dir, name, c->ext);
	if (tprof_same_file(pic, c->file)) {
		tprof_err("plot: %s is the trace being read: not written over", pic);
		return PLOT_TOOL;
	}
	FILE *msgs = tmpfile();
	if (!msgs) {
		tprof_err("plot: cannot create a temporary file: %s", strerror(errno));
		return PLOT_TOOL;
	}
	/* The environment, with LC_ALL=C.UTF-8: the scripts say `set encoding utf8`, and in the C locale
	 * gnuplot warns on each that it cannot convert its degree sign (it draws the same in both). */
	extern char **environ;
	size_t nenv = 0;
	while (environ[nenv])
		nenv++;
	char **env = xcalloc(nenv + 2, sizeof(*env)), lc_all[] = "LC_ALL=C.UTF-8";
	size_t k = 0;
	for (size_t i = 0; i < nenv; i++)
		if (strncmp(environ[i], "LC_ALL=", 7) != 0)
			env[k++] = environ[i];
	env[k] = lc_all;
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		tprof_err("plot: cannot start gnuplot: %s", strerror(errno));
		fclose(msgs);
		free(env);
		return PLOT_TOOL;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY);
		if (null >= 0)
			dup2(null, 0);
		dup2(fileno(msgs), 1);
		dup2(fileno(msgs), 2);
		if (chdir(c->dir) != 0) {
			fprintf(stderr, "cannot enter %s: %s\n", c->dir, strerror(errno));
			_exit(126);
		}
		char *args[] = {"gnuplot", script, NULL};
		execve(gnuplot, args, env);
		fprintf(stderr, "cannot run %s: %s\n", gnuplot, strerror(errno));
		_exit(127);
	}
	free(env);
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = -1;
			break;
		}
	struct stat st;
	int ok = status == 0 && stat(pic, &st) == 0 && st.st_size > 0, cut = ok && !picture_whole(pic, c->svg);
	if (cut)
		tprof_err("plot: gnuplot wrote %s only in part (is the file system full?)", pic);
	if (ok && !cut)
		;
	else if (cut)
		;
	else if (status == -1)
		tprof_err("plot: gnuplot %s/%s: lost track of the process", c->dir, script);
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		tprof_err("plot: gnuplot failed on %s/%s (exit status %d):", c->dir, script, WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		tprof_err("plot: gnuplot was killed by signal %d on %s/%s:", WTERMSIG(status), c->dir, script);
	else
		tprof_err("plot: gnuplot wrote no %s:", pic);
	/* What gnuplot said, warnings included: they point at a script that needs looking at. */
	rewind(msgs);
	char line[1024];
	for (size_t shown = 0; fgets(line, sizeof(line), msgs) && shown < 200; shown++)
		fputs(line, stderr);
	fclose(msgs);
	if (ok && !cut)
		return 0;
	unlink(pic);
	return cut ? PLOT_FILE : PLOT_TOOL;
}

/* ---- the command ---- */

struct plot_opts {
	const char *dir;
	int svg;
};

static int plot_option(void *ctx, int argc, char **argv, int *i)
{
	struct plot_opts *p = ctx;
	const char *a = argv[*i];
	if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
		if (*i + 1 >= argc || !argv[*i + 1][0]) {
			tprof_err("plot: %s needs a directory", a);
			return 1;
		}
		p->dir = argv[++*i];
		return CMD_RUN;
	}
	if (!strcmp(a, "--format")) {
		const char *v = *i + 1 < argc ? argv[++*i] : "";
		if (!strcmp(v, "png") || !strcmp(v, "svg")) {
			p->svg = v[0] == 's';
			return CMD_RUN;
		}
		tprof_err("plot: --format takes png or svg");
		return 1;
	}
	return CMD_OTHER;
}

/* The time from time zero to the last thing the trace holds. Call after the heap events were read. */
static uint64_t trace_span(const struct plot_ctx *c)
{
	const struct tprof_trace *t = c->t;
	uint64_t s = t->end_ns > t->t0_ns ? t->end_ns - t->t0_ns : 0, x;
#define SEE(tick) (x = plot_ns_of(c, (tick)), s = x > s ? x : s)
	if (t->last_tick_seen)
		SEE(t->last_tick_seen);
	for (size_t i = 0; i < t->nkcalls; i++)
		SEE(t->kcalls[i].t1);
	for (size_t i = 0; i < t->nannots; i++)
		SEE(t->annots[i].tick);
	for (size_t i = 0; i < t->nrss; i++)
		SEE(t->rss[i].tick);
#undef SEE
	return s;
}

int cmd_plot(int argc, char **argv)
{
	struct plot_opts po = {".", 0};
	struct cmd_opts o = {.name = "plot", .usage = USAGE, .extra = plot_option, .ctx = &po};
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	struct plot_ctx c = {.file = o.file, .dir = po.dir, .svg = po.svg, .ext = po.svg ? "svg" : "png",
			     .open_again = cmd_open_trace};
	c.t = cmd_open_trace(c.file);
	if (!c.t)
		return 2;
	char gnuplot[PATH_MAX];
	if (find_gnuplot(gnuplot, sizeof(gnuplot)) != 0) {
		tprof_err("plot: gnuplot is not installed (not found in PATH); install the package gnuplot-nox "
			  "(apt-get install gnuplot-nox) and run this again");
		tprof_trace_close(c.t);
		return PLOT_TOOL;
	}
	struct ops_options oo = {0};
	if (ops_analyze(c.t, &oo, &c.r) != 0) {
		tprof_err("%s", c.t->err);
		tprof_trace_close(c.t);
		return 2;
	}
	if (c.r.nrows) /* rows is NULL when there are none */
		tprof_sort(c.r.rows, c.r.nrows, sizeof(*c.r.rows), plot_row_by_self);
	c.op_class = xcalloc(c.t->nop_names + 1, sizeof(uint32_t));
	for (uint32_t id = 0; id < c.t->nop_names; id++) {
		c.op_class[id] = NCLASS;
		for (size_t i = 0; c.t->op_names[id] && i < c.r.nrows; i++)
			if (strcmp(c.r.rows[i].name, c.t->op_names[id]) == 0 && (i < NCLASS - 1 || c.r.nrows <= NCLASS))
				c.op_class[id] = (uint32_t)i + 1;
	}
	for (size_t i = 0; i < c.r.nrows && i < NCLASS; i++)
		c.class_name[i + 1] = i < NCLASS - 1 || c.r.nrows <= NCLASS ? c.r.rows[i].name : NULL;
	c.span = trace_span(&c);
	tprof_roofline_get(&c.rf, TPROF_ROOFLINE_MEASURE);

	struct stat st;
	if (stat(c.dir, &st) != 0 && (errno != ENOENT || mkdir(c.dir, 0777) != 0)) {
		tprof_err("plot: cannot create the directory %s: %s", c.dir, strerror(errno));
		rc = PLOT_FILE;
		goto out;
	} else if (stat(c.dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		tprof_err("plot: %s is not a directory", c.dir);
		rc = PLOT_FILE;
		goto out;
	}
	static const char *const names[] = {"memory", "timeline", "ops", "roofline"};
	int (*const make[])(struct plot_ctx *) = {plot_memory, plot_timeline, plot_ops, plot_roofline};
	/* a trace without kernel calls gets no empty pictures of them (the timeline stays for ranges) */
	int ranges = 0;
	for (size_t i = 0; i < c.t->nannots && !ranges; i++)
		ranges = c.t->annots[i].kind == TPROF_ANNOT_PUSH;
	int want[4] = {1, c.t->nkcalls > 0 || ranges, c.t->nkcalls > 0, c.t->nkcalls > 0};
	for (size_t i = 0; i < 4; i++) {
		if (!want[i])
			continue;
		if (make[i](&c) != 0) {
			if (c.err[0])
				tprof_err("%s", c.err);
			rc = PLOT_FILE;
			goto out;
		}
		if ((rc = run_gnuplot(&c, gnuplot, names[i])) != 0)
			goto out;
	}
	for (size_t i = 0; i < 4; i++)
		if (want[i]) { /* escaped as in messages: a line per file, whatever DIR holds */
			tprof_text_str(stdout, c.dir, 0);
			printf("/%s.%s\n", names[i], c.ext);
		}
	if (!c.t->nkcalls) /* on stderr: stdout lists the files made, for tools */
		fprintf(stderr, "tprof: plot: the trace has no kernel calls: no ops%s or roofline picture\n",
			want[1] ? "" : ", timeline"); /* stdout lists the files made, for tools */
	rc = 0;
out:
	free(c.op_class);
	ops_free(&c.r);
	tprof_trace_close(c.t);
	return rc;
}
