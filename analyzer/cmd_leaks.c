/* tprof leaks: the blocks still in use at exit (the same set as tprof report's "in use at exit" and
 * valgrind memcheck's, all leak kinds together), grouped by allocation stack, largest first, with
 * symbolized frames; records matched by a suppression are counted but not listed. Text reads like
 * valgrind's loss records; --json is for tools and tests; --csv lists the records. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdline.h"
#include "cmds.h"
#include "heap.h"
#include "reader.h"
#include "stacks.h"
#include "suppress.h"
#include "util.h"

#define USAGE                                                                                     \
	"usage: tprof leaks [--json | --csv] [--top N] [--suppressions FILE]... "              \
	"[--no-default-suppressions] FILE\n       tprof leaks --print-default-suppressions"

/* rep: the ids of the nrep reported (not suppressed) records, largest first; the first shown of
 * them are listed. */
static void print_json(const struct tprof_trace *t, const struct heap_stats *s, struct stack_table *tab,
		       struct stack_sym *ss, const uint32_t *rep, size_t nrep, size_t shown,
		       const struct suppressions *supp, uint64_t sup_bytes, uint64_t sup_blocks)
{
	printf("{\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64, s->live_bytes, s->live_blocks);
	printf(",\"suppressed_bytes\":%" PRIu64 ",\"suppressed_blocks\":%" PRIu64, sup_bytes, sup_blocks);
	printf(",\"reported_bytes\":%" PRIu64 ",\"reported_blocks\":%" PRIu64, s->live_bytes - sup_bytes,
	       s->live_blocks - sup_blocks);
	printf(",\"records\":%zu,\"complete\":%s,\"lost_events\":%" PRIu64 ",\"leaks\":[", nrep,
	       t->complete ? "true" : "false", t->lost_events);
	for (size_t i = 0; i < shown; i++) {
		const struct stack_cost *c = &tab->cost[rep[i]];
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, rep[i], c->seq, &n, &trunc);
		printf("%s{\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"truncated\":%s,\"stack\":",
		       i ? "," : "", c->bytes, c->blocks, trunc ? "true" : "false");
		stack_print_json(stdout, fr, n);
		putchar('}');
	}
	printf("],\"suppressions\":[");
	int first = 1;
	for (size_t i = 0; i < supp->n; i++) {
		const struct supp_rule *r = &supp->rules[i];
		if (!r->blocks)
			continue;
		printf("%s{\"rule\":", first ? "" : ",");
		tprof_json_str(stdout, r->text);
		printf(",\"origin\":");
		tprof_json_str(stdout, r->origin);
		printf(",\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"records\":%" PRIu64 "}", r->bytes,
		       r->blocks, r->stacks);
		first = 0;
	}
	printf("]}\n");
}

/* One row per record listed in the JSON's "leaks". */
static void print_csv(struct stack_table *tab, struct stack_sym *ss, const uint32_t *rep, size_t shown)
{
	printf("bytes,blocks,truncated," STACK_CSV_HEADER TPROF_CSV_EOL);
	for (size_t i = 0; i < shown; i++) {
		const struct stack_cost *c = &tab->cost[rep[i]];
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, rep[i], c->seq, &n, &trunc);
		printf("%" PRIu64 ",%" PRIu64 ",%s,", c->bytes, c->blocks, trunc ? "true" : "false");
		stack_print_csv(stdout, fr, n);
		printf(TPROF_CSV_EOL);
	}
}

static void print_text(const struct tprof_trace *t, const struct heap_stats *s, struct stack_table *tab,
		       struct stack_sym *ss, const uint32_t *rep, size_t nrep, size_t shown,
		       const struct suppressions *supp, uint64_t sup_bytes, uint64_t sup_blocks)
{
	char a[32], b[32];
	printf("tprof leaks: ");
	tprof_text_str(stdout, t->path, 0);
	printf(" (");
	tprof_text_str(stdout, t->info.program, 0);
	printf(", pid %" PRIu64 ")\n", t->info.pid);
	if (!t->ended)
		printf("\nThe trace is incomplete (the process was killed, or the file was cut short):\n"
		       "these are the blocks live where it ends, not at exit.\n");
	else if (!t->complete)
		printf("\nA thread was inside a heap call when the process ended, and that call may be\n"
		       "missing: one block may be missing below, or one shown that it freed.\n");
	if (t->lost_events)
		printf("\n%s events were lost (lossy mode): blocks whose free was lost show as leaks.\n",
		       tprof_commas(t->lost_events, a));
	for (size_t i = 0; i < shown; i++) {
		const struct stack_cost *c = &tab->cost[rep[i]];
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, rep[i], c->seq, &n, &trunc);
		printf("\n%s bytes in %s block%s still in use at exit: record %zu of %zu\n",
		       tprof_commas(c->bytes, a), tprof_commas(c->blocks, b), c->blocks == 1 ? "" : "s",
		       i + 1, nrep);
		stack_print_text(stdout, fr, n, trunc, "    ");
	}
	printf("\nin use at exit: %s bytes in %s block%s (all of them: tprof report's, valgrind's \"in use "
	       "at exit\")\n",
	       tprof_commas(s->live_bytes, a), tprof_commas(s->live_blocks, b),
	       s->live_blocks == 1 ? "" : "s");
	printf("suppressed:     %s bytes in %s block%s\n", tprof_commas(sup_bytes, a),
	       tprof_commas(sup_blocks, b), sup_blocks == 1 ? "" : "s");
	uint64_t rep_blocks = s->live_blocks - sup_blocks;
	printf("reported:       %s bytes in %s block%s, %zu record%s",
	       tprof_commas(s->live_bytes - sup_bytes, a), tprof_commas(rep_blocks, b),
	       rep_blocks == 1 ? "" : "s", nrep, nrep == 1 ? "" : "s");
	if (shown < nrep)
		printf(" (the largest %zu shown: --top)", shown);
	printf("\n");
	int any = 0;
	for (size_t i = 0; i < supp->n; i++) {
		const struct supp_rule *r = &supp->rules[i];
		if (!r->blocks)
			continue;
		if (!any)
			printf("\nsuppressions used:\n");
		any = 1;
		printf("    %s bytes in %s block%s: ", tprof_commas(r->bytes, a), tprof_commas(r->blocks, b),
		       r->blocks == 1 ? "" : "s");
		tprof_text_str(stdout, r->text, 0);
		printf(" (");
		tprof_text_str(stdout, r->origin, 0);
		printf(")\n");
	}
}

struct leaks_opts {
	struct suppressions supp;
	int defaults; /* 0 after --no-default-suppressions */
};

/* leaks' own options, for cmd_parse. */
static int parse_leaks_opt(void *ctx, int argc, char **argv, int *i)
{
	struct leaks_opts *l = ctx;
	char err[512];
	if (strcmp(argv[*i], "--suppressions") == 0) {
		if (*i + 1 >= argc) {
			tprof_err("leaks: --suppressions needs a file");
			return 1;
		}
		if (supp_load(&l->supp, argv[++*i], err, sizeof(err)) != 0) {
			tprof_err("%s", err);
			return 1;
		}
	} else if (strcmp(argv[*i], "--no-default-suppressions") == 0) {
		l->defaults = 0;
	} else if (strcmp(argv[*i], "--print-default-suppressions") == 0) {
		fputs(supp_default_text, stdout); /* a file to start from: --suppressions reads it back */
		return 0;
	} else {
		return CMD_OTHER;
	}
	return CMD_RUN;
}

int cmd_leaks(int argc, char **argv)
{
	struct leaks_opts l = { .defaults = 1 };
	supp_init(&l.supp);
	struct cmd_opts o = { .name = "leaks", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP,
			      .extra = parse_leaks_opt, .ctx = &l };
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		goto done;
	if (l.defaults)
		supp_add_default(&l.supp);

	struct tprof_trace *t = cmd_open_trace(o.file);
	if (!t) {
		rc = 2;
		goto done;
	}
	struct heap_stats s;
	struct stack_table tab;
	stack_table_init(&tab, t);
	struct stack_sym *ss = NULL;
	uint32_t *ids = NULL, *rep = NULL;
	if (stacks_replay(t, UINT64_MAX, &s, &tab) < 0) {
		tprof_err("%s", t->err);
		rc = 2;
		goto out;
	}
	stack_table_set_live(&tab, &s);

	size_t nrec;
	ids = stack_table_sorted(&tab, STACK_BY_BYTES, &nrec);
	rep = xcalloc(nrec ? nrec : 1, sizeof(*rep));
	ss = stack_sym_new(t);
	struct suppressions *supp = &l.supp;
	size_t nrep = 0;
	uint64_t sup_bytes = 0, sup_blocks = 0;
	int site_only = 1; /* then matching needs only the allocation sites symbolized */
	for (size_t i = 0; i < supp->n; i++)
		site_only &= supp->rules[i].site_only;
	for (size_t i = 0; i < nrec; i++) {
		struct supp_rule *r = NULL;
		if (supp->n) {
			struct stack_cost *c = &tab.cost[ids[i]];
			size_t n;
			const struct stack_frame *fr = site_only ? stack_site_frames(ss, ids[i], c->seq, &n)
								 : stack_frames(ss, ids[i], c->seq, &n, NULL);
			r = supp_match(supp, fr, n);
			if (r) {
				r->bytes += c->bytes;
				r->blocks += c->blocks;
				r->stacks++;
				sup_bytes += c->bytes;
				sup_blocks += c->blocks;
			}
		}
		if (!r)
			rep[nrep++] = ids[i];
	}
	size_t shown = o.top && o.top < nrep ? o.top : nrep;
	if (o.json)
		print_json(t, &s, &tab, ss, rep, nrep, shown, supp, sup_bytes, sup_blocks);
	else if (o.csv)
		print_csv(&tab, ss, rep, shown);
	else
		print_text(t, &s, &tab, ss, rep, nrep, shown, supp, sup_bytes, sup_blocks);
	stack_sym_warn(ss);
	rc = 0;
out:
	free(ids);
	free(rep);
	stack_sym_free(ss);
	heap_release(&s);
	stack_table_free(&tab);
	tprof_trace_close(t);
done:
	supp_free(&l.supp);
	return rc;
}
