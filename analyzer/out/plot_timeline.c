/* The timeline picture (out/gnuplot.h): per thread, the kernel call running at each moment (nested
 * calls flattened to the innermost, runs narrower than a pixel merged), the annotated ranges above it,
 * marks, and the step boundaries. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/heap.h"
#include "base/util.h"
#include "out/gnuplot.h"

struct lane {
	uint32_t tid;
	uint64_t first; /* ns of its first kernel call or range */
};

static int lane_by_tid(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int lane_by_first(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The lane of tid in lanes sorted by tid (its index in drawing order is in .first after renumbering). */
static struct lane *lane_find(struct lane *byid, size_t n, uint32_t tid)
{
	struct lane key = {tid, 0};
	return bsearch(&key, byid, n, sizeof(*byid), lane_by_tid);
}

static void lane_note(struct lane **l, size_t *n, uint32_t tid, uint64_t ns)
{
	for (size_t i = 0; i < *n; i++)
		if ((*l)[i].tid == tid) {
			if (ns < (*l)[i].first)
				(*l)[i].first = ns;
			return;
		}
	*l = xrealloc(*l, (*n + 1) * sizeof(**l));
	(*l)[(*n)++] = (struct lane){tid, ns};
}

/* One range instance. */
struct inst {
	uint32_t lane, depth;
	struct plot_span s; /* key: annotation name id */
};

static int inst_cmp(const void *a, const void *b)
{
	const struct inst *x = a, *y = b;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->s.t0 < y->s.t0 ? -1 : x->s.t0 > y->s.t0;
}

int plot_timeline(struct plot_ctx *c)
{
	struct tprof_trace *t = c->t;
	struct lane *lanes = NULL, *byid;
	size_t nl = 0;
	for (size_t i = 0; i < t->nkcalls; i++)
		lane_note(&lanes, &nl, t->kcalls[i].tid, plot_ns_of(c, t->kcalls[i].t0));
	for (size_t i = 0; i < t->nannots; i++)
		if (t->annots[i].kind == TPROF_ANNOT_PUSH)
			lane_note(&lanes, &nl, t->annots[i].tid, plot_ns_of(c, t->annots[i].tick));
	if (nl)
		tprof_sort(lanes, nl, sizeof(*lanes), lane_by_first);
	/* byid maps a tid to its lane number (kept in .first) */
	byid = xmalloc((nl + 1) * sizeof(*byid));
	for (size_t i = 0; i < nl; i++)
		byid[i] = (struct lane){lanes[i].tid, i};
	tprof_sort(byid, nl, sizeof(*byid), lane_by_tid);

	/* kernel calls per lane, flattened and merged */
	uint64_t min_ns = c->span / (WIDTH - TL_L - TL_R);
	size_t *nper = xcalloc(nl + 1, sizeof(size_t));
	struct plot_span **per = xcalloc(nl + 1, sizeof(*per));
	for (size_t i = 0; i < t->nkcalls; i++) {
		const struct tprof_kcall *k = &t->kcalls[i];
		size_t l = (size_t)lane_find(byid, nl, k->tid)->first;
		if (nper[l] % 256 == 0)
			per[l] = xrealloc(per[l], (nper[l] + 256) * sizeof(**per));
		per[l][nper[l]++] = (struct plot_span){plot_ns_of(c, k->t0), plot_ns_of(c, k->t1),
						       k->op < t->nop_names ? c->op_class[k->op] : NCLASS};
	}
	struct plot_box **boxes = xcalloc(nl + 1, sizeof(*boxes));
	size_t *nboxes = xcalloc(nl + 1, sizeof(size_t));
	int used[NCLASS + 1] = {0};
	for (size_t l = 0; l < nl; l++) {
		nboxes[l] = plot_flatten(per[l], nper[l], &boxes[l]);
		nboxes[l] = plot_merge(boxes[l], nboxes[l], min_ns);
		for (size_t i = 0; i < nboxes[l]; i++)
			used[boxes[l][i].key] = 1;
		free(per[l]);
	}
	free(per);

	/* ranges: instances per lane and nesting level, merged like the calls. A lane keeps 64 open
	 * ranges; deeper pushes are only counted, so that their pops close nothing drawn. */
	struct inst *in = NULL;
	size_t nin = 0, cap = 0;
	struct pushed {
		uint64_t t0;
		uint32_t name;
	} (*stk)[64] = xcalloc(nl + 1, sizeof(*stk));
	uint32_t *depth = xcalloc(nl + 1, sizeof(uint32_t)), *deeper = xcalloc(nl + 1, sizeof(uint32_t));
	uint32_t levels = 0;
	for (size_t i = 0; i < t->nannots; i++) {
		const struct tprof_annot *an = &t->annots[i];
		if (an->kind != TPROF_ANNOT_PUSH && an->kind != TPROF_ANNOT_POP)
			continue;
		const struct lane *ln = lane_find(byid, nl, an->tid);
		if (!ln)
			continue; /* a pop on a thread that never pushed */
		size_t l = (size_t)ln->first;
		if (an->kind == TPROF_ANNOT_PUSH) {
			if (depth[l] < 64)
				stk[l][depth[l]++] = (struct pushed){plot_ns_of(c, an->tick), an->name};
			else
				deeper[l]++;
			continue;
		}
		if (deeper[l]) {
			deeper[l]--;
			continue;
		}
		if (!depth[l])
			continue; /* a pop without a push */
		uint64_t end = plot_ns_of(c, an->tick);
		struct pushed *o = &stk[l][--depth[l]];
		if (depth[l] < MAX_LEVELS) {
			if (nin == cap)
				in = xrealloc(in, (cap = cap ? 2 * cap : 256) * sizeof(*in));
			in[nin++] = (struct inst){(uint32_t)l, depth[l], {o->t0, end > o->t0 ? end : o->t0, o->name}};
			levels = depth[l] + 1 > levels ? depth[l] + 1 : levels;
		}
	}
	for (size_t l = 0; l < nl; l++) /* ranges still open at the end last until then */
		while (depth[l]) {
			struct pushed *o = &stk[l][--depth[l]];
			if (depth[l] >= MAX_LEVELS)
				continue;
			if (nin == cap)
				in = xrealloc(in, (cap = cap ? 2 * cap : 256) * sizeof(*in));
			in[nin++] = (struct inst){(uint32_t)l, depth[l], {o->t0, c->span > o->t0 ? c->span : o->t0, o->name}};
			levels = depth[l] + 1 > levels ? depth[l] + 1 : levels;
		}
	free(stk);
	free(depth);
	free(deeper);
	if (nin)
		tprof_sort(in, nin, sizeof(*in), inst_cmp);

	char path[PATH_MAX], a[32], b[32];
	int rc = -1;
	FILE *f = plot_out_open(c, "timeline", "dat", path);
	if (!f)
		goto out;
	size_t nused = 0;
	for (int k = 1; k <= NCLASS; k++)
		nused += used[k];
	plot_dat_header(f, "timeline.dat, the data of timeline.gp: kernel calls and ranges per thread");
	fprintf(f, "# index 1: lanes: lane number, label (thread name and tid)\n"
		   "# index 2..%zu: one block per op colour class, its first line the class's name: start and end\n"
		   "#          (seconds since the trace began), lane, class. Each box is the innermost kernel call\n"
		   "#          running; runs of boxes narrower than 1/%d of the time axis are merged into one box\n"
		   "#          of the class that covers most of it.\n"
		   "# index %zu: ranges: start, end, lane, level (0: outermost), name (\"\": several merged)\n"
		   "# index %zu: the names of the ranges whose box is wide enough for them: middle, lane, level, name\n"
		   "# index %zu: step boundaries: seconds (NaN: none)\n",
		1 + nused, WIDTH - TL_L - TL_R, 2 + nused, 3 + nused, 4 + nused);
	plot_dat_meta(f, c);
	for (size_t l = 0; l < nl; l++) {
		char buf[PLOT_TEXT_SIZE];
		const char *name = tprof_trace_thread_name(t, lanes[l].tid);
		/* "\n" here is gnuplot's escape, inside the quotes: a second line under the name */
		if (name && *name)
			fprintf(f, "%zu \"%s\\ntid %" PRIu32 "\"\n", l, plot_gp_text(buf, name), lanes[l].tid);
		else
			fprintf(f, "%zu \"tid %" PRIu32 "\"\n", l, lanes[l].tid);
	}
	if (!nl)
		fprintf(f, "0 \"\"\n");
	fprintf(f, "\n\n");
	char classes[NCLASS * 4] = "";
	for (uint32_t k = 1; k <= NCLASS; k++) {
		if (!used[k])
			continue;
		snprintf(classes + strlen(classes), sizeof(classes) - strlen(classes), "%s%u", *classes ? " " : "", k);
		plot_gp_field(f, c->class_name[k] ? c->class_name[k] : "other ops");
		fprintf(f, "\n");
		for (size_t l = 0; l < nl; l++)
			for (size_t i = 0; i < nboxes[l]; i++)
				if (boxes[l][i].key == k)
					fprintf(f, "%s %s %zu %u\n", plot_secs(boxes[l][i].t0, a), plot_secs(boxes[l][i].t1, b), l, k);
		fprintf(f, "\n\n");
	}
	size_t nrbox = 0, nlabels = 0, labels_len = 0;
	char *labels = NULL;
	FILE *lf = open_memstream(&labels, &labels_len);
	if (!lf) {
		plot_fail(c, "plot: out of memory");
		fclose(f);
		goto out;
	}
	double px_per_ns = c->span ? (double)(WIDTH - TL_L - TL_R) / (double)c->span : 0;
	for (size_t i = 0; i < nin;) {
		size_t j = i;
		while (j < nin && in[j].lane == in[i].lane && in[j].depth == in[i].depth)
			j++;
		struct plot_box *rb = xmalloc((j - i) * sizeof(*rb));
		for (size_t q = i; q < j; q++)
			rb[q - i] = (struct plot_box){in[q].s.t0, in[q].s.t1, in[q].s.key, 0};
		size_t n = plot_merge(rb, j - i, min_ns);
		for (size_t q = 0; q < n; q++) {
			const char *name = rb[q].key < t->nannot_names && t->annot_names[rb[q].key] ? t->annot_names[rb[q].key] : "?";
			fprintf(f, "%s %s %u %u ", plot_secs(rb[q].t0, a), plot_secs(rb[q].t1, b), in[i].lane, in[i].depth);
			plot_gp_field(f, rb[q].mixed ? "" : name);
			fprintf(f, "\n");
			/* a name is written where its box holds it at the labels' font (about 6 pixels a character) */
			if (!rb[q].mixed && (double)(rb[q].t1 - rb[q].t0) * px_per_ns >= 6.0 * (double)plot_shown_chars(name) + 8) {
				fprintf(lf, "%s %u %u ", plot_secs(rb[q].t0 / 2 + rb[q].t1 / 2, a), in[i].lane, in[i].depth);
				plot_gp_field(lf, name);
				fprintf(lf, "\n");
				nlabels++;
			}
		}
		nrbox += n;
		free(rb);
		i = j;
	}
	if (!nrbox)
		fprintf(f, "NaN NaN NaN NaN \"\"\n");
	fprintf(f, "\n\n");
	fclose(lf);
	fwrite(labels, 1, labels_len, f);
	free(labels);
	fprintf(f, "%s\n\n", nlabels ? "" : "NaN NaN NaN \"\"\n");
	size_t nsteps = 0, every = 1, drawn = plot_write_steps(f, c, WIDTH - TL_L - TL_R, &nsteps, &every);
	fprintf(f, "\n");
	if (plot_out_close(c, f, path) != 0)
		goto out;

	if (!(f = plot_out_open(c, "timeline", "gp", path)))
		goto out;
	size_t nlanes = nl ? nl : 1;
	plot_gp_preamble(f, c, "timeline", "per thread, the kernel call running at each moment, annotated ranges above",
		    WIDTH, TIMELINE_H((int)nlanes));
	plot_time_unit(f, c->span);
	fprintf(f, "span = %s; nlanes = %zu; levels = %u\n", plot_secs(c->span, a), nlanes, levels);
	fprintf(f, "classes = \"%s\" # the colour (linetype) of each op block, in order\n", classes);
	fprintf(f, "# Lane geometry (y grows downwards): kernel calls from k_top to k_bot below the lane's\n"
		   "# number; above them range level d (0: outermost, on top) from r_top(d) to r_bot(d).\n"
		   "k_top = 0.0; k_bot = 0.40\n"
		   "rh = levels > 0 ? (0.44 / levels < 0.15 ? 0.44 / levels : 0.15) : 0\n"
		   "r_bot(d) = -0.05 - (levels - 1 - d) * rh; r_top(d) = r_bot(d) - 0.88 * rh\n"
		   "y_first = levels > 0 ? r_top(0) - 0.1 : -0.15; y_last = nlanes - 0.45\n");
	fprintf(f, "set title sprintf(\"%%s (pid %%d): kernel calls per thread over time\\n"
		   "each lane shows the innermost kernel call running (the op its self time goes to), the annotated "
		   "ranges above it\\n%zu kernel calls; boxes narrower than a pixel merged\", program, pid)\n",
		t->nkcalls);
	plot_gp_margins(f, WIDTH, TIMELINE_H((int)nlanes), TL_L, TL_R, 0, 0);
	fprintf(f, "set xlabel sprintf(\"time since the trace began (%%s)\", tunit)\n"
		   "set xrange [0:(span > 0 ? span : 1e-9) * tscale]\n"
		   "set yrange [y_last:y_first]\n"
		   "set ytics scale 0 font \",10\"\n"
		   "set grid xtics noytics\n"
		   "set tics nomirror\n"
		   "set style fill solid 0.9 noborder\n");
	plot_gp_key_below(f, TIMELINE_H((int)nlanes), (int)nused + (nrbox > 0) + (drawn > 0));
	if (!nl)
		fprintf(f, "set label 1 \"no kernel calls or annotated ranges in this trace\" at graph 0.5, graph 0.5 center\n");
	fprintf(f, "plot 'timeline.dat' index 1 using (NaN):($1 + (k_top + k_bot) / 2):ytic(strcol(2)) notitle");
	if (nused)
		fprintf(f, ", \\\n     for [k = 1:words(classes)] '' index 1 + k using ($1 * tscale):3:($1 * tscale):($2 * tscale):"
			   "($3 + k_top):($3 + k_bot) with boxxyerror lt int(word(classes, k)) title columnheader(1)");
	if (nrbox)
		fprintf(f, ", \\\n     '' index %zu using ($1 * tscale):3:($1 * tscale):($2 * tscale):($3 + r_top($4)):"
			   "($3 + r_bot($4)) with boxxyerror fs solid 0.35 border lc rgb \"#6b8fb3\" lc rgb \"#9ecae1\" "
			   "title \"annotated range\"",
			2 + nused);
	/* Labels from a plain column: gnuplot 5.4 decodes escapes once more in a string computed by an
	 * expression, and crashes on a labels plot without a single defined point. */
	if (nlabels)
		fprintf(f, ", \\\n     '' index %zu using ($1 * tscale):($2 + (r_top($3) + r_bot($3)) / 2):4 with labels "
			   "font \",8\" tc rgb \"#08306b\" notitle",
			3 + nused);
	if (drawn) {
		char st[96];
		fprintf(f, ", \\\n     '' index %zu using ($1 * tscale):(y_last):(0):(y_first - y_last) with vectors nohead "
			   "lc rgb \"#888888\" dt 2 title \"%s\"",
			4 + nused, plot_steps_title(st, sizeof(st), nsteps, drawn));
	}
	fprintf(f, "\n");
	if (plot_out_close(c, f, path) != 0)
		goto out;
	rc = 0;
out:
	for (size_t l = 0; l < nl; l++)
		free(boxes[l]);
	free(boxes);
	free(nboxes);
	free(nper);
	free(in);
	free(lanes);
	free(byid);
	return rc;
}
