/* tprof leaks: the blocks still in use at exit (the same set as tprof report's "in use at exit" and
 * valgrind memcheck's, all leak kinds together), grouped by allocation stack, largest first, with
 * symbolized frames; records matched by a suppression are counted but not listed. Text reads like
 * valgrind's loss records; --json is for tools and tests. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmds.h"
#include "heap.h"
#include "reader.h"
#include "stacks.h"
#include "suppress.h"
#include "util.h"

#define USAGE                                                                                     \
	"usage: tprof leaks [--json] [--top N] [--suppressions FILE]... [--no-default-suppressions] " \
	"FILE\n       tprof leaks --print-default-suppressions"

struct leak_rec {
	uint32_t id;
	const struct supp_rule *supp; /* NULL: reported */
};

static void print_json(const struct tprof_trace *t, const struct heap_stats *s, struct stack_table *tab,
		       struct stack_sym *ss, const struct leak_rec *recs, size_t nrec, size_t top,
		       const struct suppressions *supp, uint64_t sup_bytes, uint64_t sup_blocks)
{
	size_t nrep = 0;
	for (size_t i = 0; i < nrec; i++)
		nrep += !recs[i].supp;
	printf("{\"leaked_bytes\":%" PRIu64 ",\"leaked_blocks\":%" PRIu64, s->live_bytes, s->live_blocks);
	printf(",\"suppressed_bytes\":%" PRIu64 ",\"suppressed_blocks\":%" PRIu64, sup_bytes, sup_blocks);
	printf(",\"reported_bytes\":%" PRIu64 ",\"reported_blocks\":%" PRIu64, s->live_bytes - sup_bytes,
	       s->live_blocks - sup_blocks);
	printf(",\"records\":%zu,\"complete\":%s,\"lost_events\":%" PRIu64 ",\"leaks\":[", nrep,
	       t->complete ? "true" : "false", t->lost_events);
	size_t shown = 0;
	for (size_t i = 0; i < nrec && (top == 0 || shown < top); i++) {
		if (recs[i].supp)
			continue;
		const struct stack_cost *c = &tab->cost[recs[i].id];
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, recs[i].id, c->seq, &n, &trunc);
		printf("%s{\"bytes\":%" PRIu64 ",\"blocks\":%" PRIu64 ",\"truncated\":%s,\"stack\":",
		       shown ? "," : "", c->bytes, c->blocks, trunc ? "true" : "false");
		stack_print_json(stdout, fr, n);
		putchar('}');
		shown++;
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

static void print_text(const struct tprof_trace *t, const struct heap_stats *s, struct stack_table *tab,
		       struct stack_sym *ss, const struct leak_rec *recs, size_t nrec, size_t top,
		       const struct suppressions *supp, uint64_t sup_bytes, uint64_t sup_blocks)
{
	char a[32], b[32];
	size_t nrep = 0;
	for (size_t i = 0; i < nrec; i++)
		nrep += !recs[i].supp;
	printf("tprof leaks: %s (%s, pid %" PRIu64 ")\n", t->path, t->info.program, t->info.pid);
	if (!t->complete)
		printf("\nThe trace is incomplete (the process was killed, or the file was cut short):\n"
		       "these are the blocks live where it ends, not at exit.\n");
	if (t->lost_events)
		printf("\n%s events were lost (lossy mode): blocks whose free was lost show as leaks.\n",
		       tprof_commas(t->lost_events, a));
	size_t shown = 0, rank = 0;
	for (size_t i = 0; i < nrec && (top == 0 || shown < top); i++) {
		if (recs[i].supp)
			continue;
		const struct stack_cost *c = &tab->cost[recs[i].id];
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(ss, recs[i].id, c->seq, &n, &trunc);
		rank++;
		printf("\n%s bytes in %s block%s still in use at exit: record %zu of %zu\n",
		       tprof_commas(c->bytes, a), tprof_commas(c->blocks, b), c->blocks == 1 ? "" : "s", rank,
		       nrep);
		stack_print_text(stdout, fr, n, trunc, "    ");
		shown++;
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
		printf("    %s bytes in %s block%s: %s (%s)\n", tprof_commas(r->bytes, a),
		       tprof_commas(r->blocks, b), r->blocks == 1 ? "" : "s", r->text, r->origin);
	}
}

int cmd_leaks(int argc, char **argv)
{
	int json = 0, defaults = 1;
	size_t top = 0;
	const char *file = NULL;
	struct suppressions supp;
	supp_init(&supp);
	char err[512];
	int rc = 1;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--top") == 0) {
			if (stacks_parse_top(i + 1 < argc ? argv[++i] : NULL, &top) != 0) {
				tprof_err("leaks: --top needs a number (0: all)");
				goto done;
			}
		} else if (strcmp(argv[i], "--suppressions") == 0) {
			if (i + 1 >= argc) {
				tprof_err("leaks: --suppressions needs a file");
				goto done;
			}
			if (supp_load(&supp, argv[++i], err, sizeof(err)) != 0) {
				tprof_err("%s", err);
				goto done;
			}
		} else if (strcmp(argv[i], "--no-default-suppressions") == 0) {
			defaults = 0;
		} else if (strcmp(argv[i], "--print-default-suppressions") == 0) {
			fputs(supp_default_text, stdout); /* a file to start from: --suppressions reads it back */
			rc = 0;
			goto done;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			printf("%s\n", USAGE);
			rc = 0;
			goto done;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			tprof_err("leaks: unknown option '%s'", argv[i]);
			goto done;
		} else if (!file) {
			file = argv[i];
		} else {
			tprof_err("leaks: one trace at a time");
			goto done;
		}
	}
	if (!file) {
		tprof_err("%s", USAGE);
		goto done;
	}
	if (defaults)
		supp_add_default(&supp);

	struct tprof_trace *t;
	if (tprof_trace_open(file, &t, err, sizeof(err)) != 0) {
		tprof_err("%s", err);
		rc = 2;
		goto done;
	}
	struct heap_stats s;
	struct stack_table tab;
	stack_table_init(&tab, t);
	struct stack_sym *ss = NULL;
	struct leak_rec *recs = NULL;
	uint32_t *ids = NULL;
	if (stacks_replay(t, UINT64_MAX, &s, &tab) < 0) {
		tprof_err("%s", t->err);
		rc = 2;
		goto out;
	}
	stack_table_set_live(&tab, &s);

	size_t nrec;
	ids = stack_table_sorted(&tab, STACK_BY_BYTES, &nrec);
	recs = xcalloc(nrec ? nrec : 1, sizeof(*recs));
	ss = stack_sym_new(t);
	uint64_t sup_bytes = 0, sup_blocks = 0;
	int site_only = 1; /* then matching needs only the allocation sites symbolized */
	for (size_t i = 0; i < supp.n; i++)
		site_only &= supp.rules[i].site_only;
	for (size_t i = 0; i < nrec; i++) {
		recs[i].id = ids[i];
		if (!supp.n)
			continue;
		struct stack_cost *c = &tab.cost[ids[i]];
		size_t n;
		const struct stack_frame *fr = site_only ? stack_site_frames(ss, ids[i], c->seq, &n)
							 : stack_frames(ss, ids[i], c->seq, &n, NULL);
		struct supp_rule *r = supp_match(&supp, fr, n);
		if (r) {
			recs[i].supp = r;
			r->bytes += c->bytes;
			r->blocks += c->blocks;
			r->stacks++;
			sup_bytes += c->bytes;
			sup_blocks += c->blocks;
		}
	}
	if (json)
		print_json(t, &s, &tab, ss, recs, nrec, top, &supp, sup_bytes, sup_blocks);
	else
		print_text(t, &s, &tab, ss, recs, nrec, top, &supp, sup_bytes, sup_blocks);
	stack_sym_warn(ss);
	rc = 0;
out:
	free(ids);
	free(recs);
	stack_sym_free(ss);
	heap_release(&s);
	stack_table_free(&tab);
	tprof_trace_close(t);
done:
	supp_free(&supp);
	return rc;
}
