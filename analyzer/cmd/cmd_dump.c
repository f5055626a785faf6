/* tprof dump: every heap event of a trace in global order, one line each (sequence number, time,
 * thread, call, size, addresses, stack id: the reader's, which numbers stacks in the order they are
 * defined, one id for stacks of the same frames), then the modules, the raw stacks, the RSS samples
 * ("# rss TIME_NS BYTES"), the kernel calls ("# kcall ENTER_NS EXIT_NS TID OP flops N bytes N shape
 * V,...") and the annotations ("# annot SEQ TIME_NS TID KIND VALUE NAME", the name the rest of the
 * line), for debugging a trace or feeding another tool. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmdline.h"
#include "cmd/cmds.h"
#include "trace/reader.h"
#include "base/util.h"

int cmd_dump(int argc, char **argv)
{
	/* the shared parser: the same messages as every other command (an unknown option named, one
	 * trace at a time), and --help with a file too */
	struct cmd_opts o = {.name = "dump", .usage = "usage: tprof dump FILE", .accept = 0};
	int rc = cmd_parse(&o, argc, argv);
	if (rc != CMD_RUN)
		return rc;
	cmd_progress_off(); /* it prints while it reads */
	struct tprof_trace *t = cmd_open_trace(o.file);
	if (!t)
		return 2;
	printf("# seq time_ns tid call size ptr [old_ptr] stack=ID\n");
	struct tprof_event e;
	int r;
	while ((r = tprof_trace_next(t, &e)) > 0) {
		int realloc_kind = e.kind == TPROF_EV_REALLOC || e.kind == TPROF_EV_REALLOCARRAY;
		printf("%" PRIu64 " %" PRIu64 " %u %s%s %" PRIu64 " 0x%" PRIx64, e.seq, tprof_trace_ns(t, e.tick),
		       e.tid, tprof_event_name(e.kind), realloc_kind ? (e.phase ? "/new" : "/old") : "",
		       e.size, e.ptr);
		if (realloc_kind)
			printf(" 0x%" PRIx64, e.old_ptr);
		if (e.stack)
			printf(" stack=%u", e.stack);
		putchar('\n');
	}
	if (r < 0)
		tprof_err("%s", t->err);
	for (size_t i = 0; i < t->nmodules; i++) {
		const struct tprof_module *m = &t->modules[i];
		printf("# module %zu 0x%" PRIx64 "-0x%" PRIx64 " base 0x%" PRIx64 " seq %" PRIu64 "..", i, m->start,
		       m->end, m->base, m->load_seq);
		if (m->unload_seq != UINT64_MAX)
			printf("%" PRIu64, m->unload_seq);
		printf(" build-id ");
		for (size_t k = 0; k < m->build_id_len; k++)
			printf("%02x", m->build_id[k]);
		putchar(' ');
		tprof_text_str(stdout, m->path[0] ? m->path : "(main program)", 0); /* one line per module */
		putchar('\n');
	}
	static uint64_t f[TPROF_STACK_MAX_DEPTH];
	for (uint32_t id = 1; id < t->nstacks; id++) {
		int trunc;
		uint32_t depth = tprof_trace_stack(t, id, f, &trunc);
		if (!depth)
			continue;
		printf("# stack %u%s:", id, trunc ? " (truncated)" : "");
		for (uint32_t k = 0; k < depth; k++)
			printf(" 0x%" PRIx64, f[k]);
		putchar('\n');
	}
	for (size_t i = 0; i < t->nrss; i++)
		printf("# rss %" PRIu64 " %" PRIu64 "\n", tprof_trace_ns(t, t->rss[i].tick), t->rss[i].rss_bytes);
	/* kernel calls and annotations: their own records (KERNELS blocks), in time order per thread */
	static const char *const akind[] = {"?", "push", "pop", "step", "mark", "param", "omp_fork", "omp_begin",
					    "omp_end"};
	for (size_t i = 0; i < t->nkcalls; i++) {
		const struct tprof_kcall *k = &t->kcalls[i];
		printf("# kcall %" PRIu64 " %" PRIu64 " %u ", tprof_trace_ns(t, k->t0), tprof_trace_ns(t, k->t1), k->tid);
		tprof_text_str(stdout, k->op < t->nop_names && t->op_names[k->op] ? t->op_names[k->op] : "?", 0);
		printf(" flops %" PRIu64 " bytes %" PRIu64 " shape", k->flops, k->bytes);
		for (unsigned j = 0; j < k->nshape; j++)
			printf("%c%" PRId64, j ? ',' : ' ', t->kshape[k->shape_at + j]);
		putchar('\n');
	}
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *a = &t->annots[i];
		/* the name last: the rest of the line, spaces and all */
		printf("# annot %" PRIu64 " %" PRIu64 " %u %s %" PRId64 " ", a->seq, tprof_trace_ns(t, a->tick), a->tid,
		       a->kind <= TPROF_ANNOT_KIND_MAX ? akind[a->kind] : "?", a->value);
		tprof_text_str(stdout, a->name && a->name < t->nannot_names && t->annot_names[a->name] ?
						   t->annot_names[a->name] : "-", 0);
		putchar('\n');
	}
	printf("# complete: %s, lost: %" PRIu64 "\n", t->complete ? "yes" : "no", t->lost_events);
	tprof_trace_close(t);
	return r < 0 ? 2 : 0;
}
