/* tprof leaks: the blocks still in use at exit (the same set as tprof report's "in use at exit" and
 * valgrind memcheck's), each with the kind the reachability scan at the process's end gave it
 * (definitely, indirectly, possibly lost, still reachable: leakclass.c), grouped by kind and
 * allocation stack like memcheck's loss records, lost kinds first and largest first within a kind,
 * with symbolized frames. Records matched by a suppression are counted per kind but not listed.
 * --kinds picks the kinds listed (the three lost ones by default), --error-exitcode makes a leak of
 * those kinds the exit status. Without a scan the trace can trust, every block is listed as in use
 * and the output says why. Text reads like valgrind's; --json is for tools and tests; --csv lists
 * the records (both written through out/table.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "analysis/heap.h"
#include "analysis/leakclass.h"
#include "trace/reader.h"
#include "analysis/stacks.h"
#include "out/frames.h"
#include "out/table.h"
#include "analysis/suppress.h"
#include "base/util.h"

#define USAGE                                                                                     \
	"usage: tprof leaks [--json | --csv] [--top N] [--kinds LIST] [--error-exitcode N]\n"      \
	"                   [--suppressions FILE]... [--no-default-suppressions] FILE\n"           \
	"       tprof leaks --print-default-suppressions\n"                                        \
	"  LIST: definite,indirect,possible,reachable (or all, or lost); default: lost"

#define LEAK_LOST_KINDS (1 << TPROF_LEAK_DEFINITE | 1 << TPROF_LEAK_INDIRECT | 1 << TPROF_LEAK_POSSIBLE)
#define UNCLASSIFIED LEAK_KINDS /* the table of every block when the trace has no usable scan */

/* One loss record: the blocks of one kind allocated at one stack. */
struct leak_rec {
	int kind;
	uint32_t id;
	uint64_t bytes, blocks, indirect;
	uint64_t seq; /* the stack's latest allocation: its frames are resolved as of then */
};

struct leak_sum {
	uint64_t bytes, blocks;
};

/* Everything the printers need. */
struct leak_view {
	const struct tprof_trace *t;
	const struct heap_stats *s;
	const struct leak_class *lc;
	struct stack_sym *ss;
	struct leak_rec *rec; /* reported records of the chosen kinds, in print order */
	size_t nrec, shown;
	int kinds;            /* mask of 1 << kind listed */
	struct leak_sum kind[LEAK_KINDS + 1], suppressed[LEAK_KINDS + 1], heur[TPROF_LEAK_HEUR_MAX + 1];
	struct leak_sum sup_total;
	const struct suppressions *supp;
	int classified;  /* for leaks_check */
	char why[256];
};

static int rec_kind_rank(int kind)
{
	return kind == TPROF_LEAK_DEFINITE ? 0 : kind == TPROF_LEAK_INDIRECT ? 1 : kind == TPROF_LEAK_POSSIBLE ? 2
	       : kind == TPROF_LEAK_REACHABLE ? 3 : 4;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct leak_rec *x = a, *y = b;
	int rx = rec_kind_rank(x->kind), ry = rec_kind_rank(y->kind);
	if (rx != ry)
		return rx < ry ? -1 : 1;
	uint64_t tx = x->bytes + x->indirect, ty = y->bytes + y->indirect;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	if (x->blocks != y->blocks)
		return x->blocks > y->blocks ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static const char *kind_json(const struct leak_view *v, int kind)
{
	return v->lc->classified ? leak_kind_name(kind) : "unclassified";
}

/* The tables of --json and --csv (out/table.h): the records listed, JSON's "leaks" and --csv's one
 * table, whose columns added later go at its end, so that a reader that takes CSV columns by position
 * keeps working; and the suppressions that matched, in JSON only. */
static const struct out_col leak_cols[] = {
	{"kind", OUT_STR, "", NULL, NULL},
	{"bytes", OUT_U64, "bytes", NULL, NULL},
	{"blocks", OUT_U64, "blocks", NULL, NULL},
	{"indirect_bytes", OUT_U64, "bytes", NULL, NULL},
	{"truncated", OUT_BOOL, "", NULL, NULL},
	{"stack", OUT_STACK, "", NULL, NULL},
};
static const struct out_table leak_table = {"leaks", "leaks", leak_cols, OUT_NCOLS(leak_cols), 0};

static const struct out_col supp_cols[] = {
	{"rule", OUT_STR, "", NULL, NULL},
	{"origin", OUT_STR, "", NULL, NULL},
	{"bytes", OUT_U64, "bytes", NULL, NULL},
	{"blocks", OUT_U64, "blocks", NULL, NULL},
	{"records", OUT_U64, "records", NULL, NULL},
};
static const struct out_table supp_table = {NULL, "suppressions", supp_cols, OUT_NCOLS(supp_cols), 0};

/* A JSON member outside the tables: its key and its number. */
static void put_key_u64(struct out *w, const char *key, uint64_t v)
{
	out_key(w, key);
	out_u64(w, v);
}

/* The JSON document, or the CSV table of the records listed. */
static void print_tables(const struct cmd_opts *o, const struct leak_view *v)
{
	const struct tprof_trace *t = v->t;
	const struct heap_stats *s = v->s;
	uint64_t rep_bytes = 0, rep_blocks = 0;
	for (int k = 0; k <= LEAK_KINDS; k++)
		if (k == UNCLASSIFIED || v->kinds >> k & 1) {
			rep_bytes += v->kind[k].bytes;
			rep_blocks += v->kind[k].blocks;
		}
	struct out w;
	cmd_out_begin(&w, o);
	put_key_u64(&w, "leaked_bytes", s->live_bytes);
	put_key_u64(&w, "leaked_blocks", s->live_blocks);
	put_key_u64(&w, "suppressed_bytes", v->sup_total.bytes);
	put_key_u64(&w, "suppressed_blocks", v->sup_total.blocks);
	put_key_u64(&w, "reported_bytes", rep_bytes);
	put_key_u64(&w, "reported_blocks", rep_blocks);
	out_key(&w, "classified");
	out_bool(&w, v->lc->classified);
	out_key(&w, "not_classified");
	out_str(&w, v->lc->classified ? NULL : v->lc->why);
	out_key(&w, "kinds");
	out_arr_begin(&w);
	for (int k = LEAK_KINDS - 1; k >= 0; k--)
		if (v->kinds >> k & 1)
			out_str(&w, leak_kind_name(k));
	out_arr_end(&w);
	out_key(&w, "summary");
	out_obj_begin(&w);
	for (int k = LEAK_KINDS - 1; k >= -1; k--) {
		int i = k < 0 ? UNCLASSIFIED : k; /* the kinds, then the blocks without one */
		out_key(&w, k < 0 ? "unclassified" : leak_kind_name(k));
		out_obj_begin(&w);
		put_key_u64(&w, "bytes", v->kind[i].bytes);
		put_key_u64(&w, "blocks", v->kind[i].blocks);
		put_key_u64(&w, "suppressed_bytes", v->suppressed[i].bytes);
		put_key_u64(&w, "suppressed_blocks", v->suppressed[i].blocks);
		out_obj_end(&w);
	}
	out_obj_end(&w);
	out_key(&w, "reachable_via_heuristic");
	out_obj_begin(&w);
	for (int h = 1; h <= TPROF_LEAK_HEUR_MAX; h++)
		if (v->heur[h].blocks) {
			out_key(&w, leak_heuristic_name(h));
			out_obj_begin(&w);
			put_key_u64(&w, "bytes", v->heur[h].bytes);
			put_key_u64(&w, "blocks", v->heur[h].blocks);
			out_obj_end(&w);
		}
	out_obj_end(&w);
	const struct tprof_leakscan *l = &t->leaks;
	out_key(&w, "scan");
	if (l->present) {
		out_obj_begin(&w);
		put_key_u64(&w, "ns", l->ns);
		put_key_u64(&w, "threads_stopped", l->threads_stopped);
		put_key_u64(&w, "threads_not_stopped", l->threads_missed);
		put_key_u64(&w, "root_bytes", l->root_bytes);
		put_key_u64(&w, "block_bytes", l->block_bytes);
		out_obj_end(&w);
	} else {
		out_null(&w);
	}
	put_key_u64(&w, "records", v->nrec);
	out_key(&w, "complete");
	out_bool(&w, t->complete);
	put_key_u64(&w, "lost_events", t->lost_events);
	out_table_begin(&w, &leak_table);
	for (size_t i = 0; i < v->shown; i++) {
		const struct leak_rec *r = &v->rec[i];
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(v->ss, r->id, r->seq, &n, &trunc);
		out_row_begin(&w);
		out_str(&w, kind_json(v, r->kind));
		out_u64(&w, r->bytes);
		out_u64(&w, r->blocks);
		out_u64(&w, r->indirect);
		out_bool(&w, trunc);
		out_stack(&w, fr, n);
		out_row_end(&w);
	}
	out_table_end(&w);
	out_table_begin(&w, &supp_table);
	for (size_t i = 0; i < v->supp->n; i++) {
		const struct supp_rule *r = &v->supp->rules[i];
		if (!r->blocks)
			continue;
		out_row_begin(&w);
		out_str(&w, r->text);
		out_str(&w, r->origin);
		out_u64(&w, r->bytes);
		out_u64(&w, r->blocks);
		out_u64(&w, r->stacks);
		out_row_end(&w);
	}
	out_table_end(&w);
	out_end(&w); /* a failed write is reported by main (tprof.c), as for every command */
}

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

static void print_text(const struct leak_view *v)
{
	const struct tprof_trace *t = v->t;
	const struct heap_stats *s = v->s;
	char a[32], b[32], c[32], d[32];
	printf("tprof leaks: ");
	tprof_text_str(stdout, t->path, 0);
	printf(" (");
	tprof_text_str(stdout, t->info.program, 0);
	printf(", pid %" PRIu64 ")\n", t->info.pid);
	if (!t->ended)
		printf("\nThe trace is incomplete (the process was killed, or the file was cut short):\n"
		       "these are the blocks live where it ends, not at exit.\n");
	else if (!t->complete)
		printf("\nIncomplete: %s.\nBlocks may be missing below, or shown that they freed.\n",
		       tprof_trace_inflight_note(t));
	if (t->ended && (t->end_flags & TPROF_ENDF_INCALL))
		printf("\nA thread was inside a heap call when the process ended: the call never returned to\n"
		       "the program, and a block it was taking may show below.\n");
	if (t->lost_events)
		printf("\n%s events were lost (lossy mode): blocks whose free was lost show as leaks.\n",
		       tprof_commas(t->lost_events, a));
	if (!v->lc->classified)
		printf("\nNot classified: %s.\nEvery block in use at exit is listed; whether it leaked is not known.\n",
		       v->lc->why);
	else if (v->kind[UNCLASSIFIED].blocks + v->suppressed[UNCLASSIFIED].blocks)
		printf("\n%s block%s allocated after the leak scan, by threads still running, %s no kind: listed as "
		       "in use at exit.\n", tprof_commas(v->kind[UNCLASSIFIED].blocks + v->suppressed[UNCLASSIFIED].blocks, a),
		       plural(v->kind[UNCLASSIFIED].blocks + v->suppressed[UNCLASSIFIED].blocks),
		       v->kind[UNCLASSIFIED].blocks + v->suppressed[UNCLASSIFIED].blocks == 1 ? "has" : "have");
	if (v->lc->classified && t->leaks.threads_missed)
		printf("\n%" PRIu64 " thread%s did not stop for the scan: %s whole stack%s counted as roots.\n",
		       t->leaks.threads_missed, plural(t->leaks.threads_missed),
		       t->leaks.threads_missed == 1 ? "its" : "their", plural(t->leaks.threads_missed));
	for (size_t i = 0; i < v->shown; i++) {
		const struct leak_rec *r = &v->rec[i];
		size_t n;
		int trunc;
		const struct stack_frame *fr = stack_frames(v->ss, r->id, r->seq, &n, &trunc);
		if (r->indirect)
			printf("\n%s (%s direct, %s indirect) bytes in %s block%s %s %s: record %zu of %zu\n",
			       tprof_commas(r->bytes + r->indirect, a), tprof_commas(r->bytes, b),
			       tprof_commas(r->indirect, c), tprof_commas(r->blocks, d), plural(r->blocks),
			       r->blocks == 1 ? "is" : "are", leak_kind_words(r->kind), i + 1, v->nrec);
		else
			printf("\n%s bytes in %s block%s %s %s: record %zu of %zu\n", tprof_commas(r->bytes, a),
			       tprof_commas(r->blocks, b), plural(r->blocks), r->blocks == 1 ? "is" : "are",
			       r->kind == UNCLASSIFIED ? "still in use at exit" : leak_kind_words(r->kind), i + 1,
			       v->nrec);
		stack_print_text(stdout, fr, n, trunc, "    ");
	}
	if (v->lc->classified) {
		printf("\nLEAK SUMMARY:\n");
		for (int k = LEAK_KINDS - 1; k >= 0; k--) {
			printf("   %15s: %s bytes in %s block%s", leak_kind_words(k), tprof_commas(v->kind[k].bytes, a),
			       tprof_commas(v->kind[k].blocks, b), plural(v->kind[k].blocks));
			if (!(v->kinds >> k & 1) && v->kind[k].blocks)
				printf(" (not listed: --kinds %s)", leak_kind_name(k));
			printf("\n");
			if (k == TPROF_LEAK_REACHABLE) {
				int any = 0;
				for (int h = 1; h <= TPROF_LEAK_HEUR_MAX; h++)
					if (v->heur[h].blocks) {
						if (!any)
							printf("                    of which reachable via heuristic:\n");
						any = 1;
						printf("   %28s: %s bytes in %s block%s\n", leak_heuristic_name(h),
						       tprof_commas(v->heur[h].bytes, a), tprof_commas(v->heur[h].blocks, b),
						       plural(v->heur[h].blocks));
					}
			}
		}
		printf("   %15s: %s bytes in %s block%s\n", "suppressed", tprof_commas(v->sup_total.bytes, a),
		       tprof_commas(v->sup_total.blocks, b), plural(v->sup_total.blocks));
		printf("\nin use at exit: %s bytes in %s block%s (tprof report's, valgrind's \"in use at exit\")\n",
		       tprof_commas(s->live_bytes, a), tprof_commas(s->live_blocks, b), plural(s->live_blocks));
	} else {
		printf("\nin use at exit: %s bytes in %s block%s (all of them: tprof report's, valgrind's \"in use "
		       "at exit\")\n",
		       tprof_commas(s->live_bytes, a), tprof_commas(s->live_blocks, b), plural(s->live_blocks));
		printf("suppressed:     %s bytes in %s block%s\n", tprof_commas(v->sup_total.bytes, a),
		       tprof_commas(v->sup_total.blocks, b), plural(v->sup_total.blocks));
	}
	printf("reported:       %zu record%s", v->nrec, plural(v->nrec));
	if (v->shown < v->nrec)
		printf(" (the largest %zu shown: --top)", v->shown);
	printf("\n");
	int any = 0;
	for (size_t i = 0; i < v->supp->n; i++) {
		const struct supp_rule *r = &v->supp->rules[i];
		if (!r->blocks)
			continue;
		if (!any)
			printf("\nsuppressions used:\n");
		any = 1;
		printf("    %s bytes in %s block%s: ", tprof_commas(r->bytes, a), tprof_commas(r->blocks, b),
		       plural(r->blocks));
		tprof_text_str(stdout, r->text, 0);
		printf(" (");
		tprof_text_str(stdout, r->origin, 0);
		printf(")\n");
	}
}

struct leaks_opts {
	struct suppressions supp;
	int defaults; /* 0 after --no-default-suppressions */
	int kinds;    /* mask of 1 << kind */
	int error_exitcode; /* 0: none */
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
			return 2; /* a file that cannot be read, or is not suppressions: bad input */
		}
	} else if (strcmp(argv[*i], "--kinds") == 0) {
		if (*i + 1 >= argc || (l->kinds = leak_kinds_parse(argv[++*i])) < 0) {
			tprof_err("leaks: --kinds takes a list of definite, indirect, possible, reachable (or all, "
				  "or lost)");
			return 1;
		}
	} else if (strcmp(argv[*i], "--error-exitcode") == 0) {
		char *end = NULL;
		long n = *i + 1 < argc ? strtol(argv[*i + 1], &end, 10) : -1;
		if (*i + 1 >= argc || !end || *end || end == argv[*i + 1] || n < 1 || n > 255) {
			tprof_err("leaks: --error-exitcode takes a status from 1 to 255");
			return 1;
		}
		++*i;
		l->error_exitcode = (int)n;
	} else if (strcmp(argv[*i], "--no-default-suppressions") == 0) {
		l->defaults = 0;
	} else if (strcmp(argv[*i], "--print-default-suppressions") == 0) {
		if (argc > 2) { /* it takes nothing else: the rest would be left unread */
			tprof_err("leaks: --print-default-suppressions takes no other argument");
			return 1;
		}
		fputs(supp_default_text, stdout); /* a file to start from: --suppressions reads it back */
		return 0;
	} else {
		return CMD_OTHER;
	}
	return CMD_RUN;
}

/* The records of live blocks by kind and stack: tabs[kind] (UNCLASSIFIED without a scan). */
static void group(const struct heap_stats *s, const struct leak_class *lc, struct stack_table *tabs,
		  uint64_t **indirect, struct leak_view *v)
{
	const struct addrmap *live = &s->live;
	for (size_t i = 0; i < live->cap; i++) {
		if (!live->keys[i])
			continue;
		uint64_t stack = 0;
		addrmap_get(&s->live_stack, live->keys[i], &stack);
		int kind = UNCLASSIFIED;
		const struct tprof_leak_entry *e = NULL;
		if (lc->classified)
			kind = leak_class_of(lc, live->keys[i], &e);
		struct stack_cost *c = stack_cost_of(&tabs[kind], (uint32_t)stack);
		c->bytes += live->vals[i];
		c->blocks++;
		if (e && e->kind == TPROF_LEAK_DEFINITE)
			indirect[kind][c - tabs[kind].cost] += e->indirect;
		if (e && e->heuristic && kind == TPROF_LEAK_REACHABLE) {
			v->heur[e->heuristic].bytes += live->vals[i];
			v->heur[e->heuristic].blocks++;
		}
	}
}

/* The report of one trace, printed as o asks (o NULL: nothing but *reported); returns 0, or 2 when
 * the trace cannot be read. *reported: the blocks of the chosen kinds left after suppressions (every
 * unsuppressed block when the trace cannot be classified). */
static int leaks_of(struct leaks_opts *l, const char *file, const struct cmd_opts *o, uint64_t *reported,
		    struct leak_view *summary)
{
	int rc;
	struct tprof_trace *t = cmd_open_trace_flags(file, TPROF_OPEN_HEAP_ONLY);
	if (!t)
		return 2;
	struct heap_stats s;
	struct stack_table tab, tabs[LEAK_KINDS + 1];
	uint64_t *indirect[LEAK_KINDS + 1];
	stack_table_init(&tab, t);
	for (int k = 0; k <= LEAK_KINDS; k++) {
		stack_table_init(&tabs[k], t);
		indirect[k] = xcalloc(tab.n, sizeof(uint64_t));
	}
	struct leak_view v = {.t = t, .s = &s, .supp = &l->supp, .kinds = l->kinds};
	struct leak_class lc;
	if (stacks_replay(t, UINT64_MAX, &s, &tab) < 0) {
		tprof_err("%s", t->err);
		rc = 2;
		goto out;
	}
	leak_class_init(&lc, t, &s);
	v.lc = &lc;
	group(&s, &lc, tabs, indirect, &v);
	v.ss = stack_sym_new(t);
	struct suppressions *supp = &l->supp;
	int site_only = 1; /* then matching needs only the allocation sites symbolized */
	for (size_t i = 0; i < supp->n; i++)
		site_only &= supp->rules[i].site_only;
	size_t cap = 0;
	for (int k = 0; k <= LEAK_KINDS; k++) {
		for (uint32_t id = 0; id < tabs[k].n; id++) {
			struct stack_cost *c = &tabs[k].cost[id];
			if (!c->blocks)
				continue;
			c->seq = tab.cost[id].seq;
			struct supp_rule *r = NULL;
			if (supp->n) {
				size_t n;
				const struct stack_frame *fr = site_only ? stack_site_frames(v.ss, id, c->seq, &n)
									 : stack_frames(v.ss, id, c->seq, &n, NULL);
				r = supp_match(supp, fr, n);
			}
			if (r) {
				r->bytes += c->bytes;
				r->blocks += c->blocks;
				r->stacks++;
				v.suppressed[k].bytes += c->bytes;
				v.suppressed[k].blocks += c->blocks;
				v.sup_total.bytes += c->bytes;
				v.sup_total.blocks += c->blocks;
				continue;
			}
			v.kind[k].bytes += c->bytes;
			v.kind[k].blocks += c->blocks;
			if (k != UNCLASSIFIED && !(l->kinds >> k & 1))
				continue;
			if (v.nrec == cap) {
				cap = cap ? cap * 2 : 64;
				v.rec = xrealloc(v.rec, cap * sizeof(*v.rec));
			}
			v.rec[v.nrec++] = (struct leak_rec){k, id, c->bytes, c->blocks, indirect[k][id], c->seq};
		}
	}
	tprof_sort(v.rec, v.nrec, sizeof(*v.rec), cmp_rec);
	v.shown = o && o->top && o->top < v.nrec ? o->top : v.nrec;
	if (o && (o->json || o->csv))
		print_tables(o, &v);
	else if (o)
		print_text(&v);
	if (o)
		stack_sym_warn(v.ss);
	*reported = 0;
	for (size_t i = 0; i < v.nrec; i++)
		*reported += v.rec[i].blocks;
	if (summary) {
		memcpy(summary->kind, v.kind, sizeof(v.kind));
		summary->sup_total = v.sup_total;
		summary->classified = lc.classified;
		snprintf(summary->why, sizeof(summary->why), "%s", lc.why);
	}
	rc = 0;
out:
	free(v.rec);
	stack_sym_free(v.ss);
	heap_release(&s);
	stack_table_free(&tab);
	for (int k = 0; k <= LEAK_KINDS; k++) {
		stack_table_free(&tabs[k]);
		free(indirect[k]);
	}
	tprof_trace_close(t);
	return rc;
}

int cmd_leaks(int argc, char **argv)
{
	struct leaks_opts l = {.defaults = 1, .kinds = LEAK_LOST_KINDS};
	supp_init(&l.supp);
	struct cmd_opts o = { .name = "leaks", .usage = USAGE, .accept = CMD_JSON | CMD_CSV | CMD_TOP,
			      .extra = parse_leaks_opt, .ctx = &l };
	int rc = cmd_parse(&o, argc, argv);
	if (rc == CMD_RUN) {
		if (l.defaults)
			supp_add_default(&l.supp);
		uint64_t reported;
		rc = leaks_of(&l, o.file, &o, &reported, NULL);
		if (rc == 0 && l.error_exitcode && reported)
			rc = l.error_exitcode;
	}
	supp_free(&l.supp);
	return rc;
}

int leaks_check(const char *path, int kinds, int code)
{
	struct leaks_opts l = {.defaults = 1, .kinds = kinds};
	supp_init(&l.supp);
	supp_add_default(&l.supp);
	uint64_t reported = 0;
	struct leak_view v = {0};
	int rc = leaks_of(&l, path, NULL, &reported, &v);
	if (rc == 0) {
		char a[32], b[32];
		if (!v.classified) {
			fprintf(stderr, "tprof: %s: leaks not classified (%s): %s bytes in %s blocks in use at exit\n", path,
				v.why, tprof_commas(v.kind[UNCLASSIFIED].bytes, a), tprof_commas(v.kind[UNCLASSIFIED].blocks, b));
		} else {
			fprintf(stderr, "tprof: %s: LEAK SUMMARY:", path);
			for (int k = LEAK_KINDS - 1; k >= 0; k--)
				fprintf(stderr, "%s %s %s bytes in %s blocks", k == LEAK_KINDS - 1 ? "" : ",", leak_kind_words(k),
					tprof_commas(v.kind[k].bytes, a), tprof_commas(v.kind[k].blocks, b));
			fprintf(stderr, "; suppressed %s bytes in %s blocks\n", tprof_commas(v.sup_total.bytes, a),
				tprof_commas(v.sup_total.blocks, b));
		}
		rc = reported ? code : 0;
	}
	supp_free(&l.supp);
	return rc;
}
