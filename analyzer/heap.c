/* Implementation of analyzer/heap.h. */
#include "heap.h"

#include <string.h>

static void take(struct heap_stats *s, const struct tprof_event *e)
{
	uint64_t old;
	if (addrmap_put(&s->live, e->ptr, e->size, &old)) {
		/* the recorder orders a free before any reuse of its address, so this is a gap in
		 * the trace (lost events); count it and treat the old block as gone */
		s->reused_live++;
		s->live_bytes -= old;
		s->live_blocks--;
	}
	s->allocations++;
	s->bytes_allocated += e->size;
	s->live_bytes += e->size;
	s->live_blocks++;
	if (s->live_bytes > s->peak_bytes) {
		s->peak_bytes = s->live_bytes;
		s->peak_blocks = s->live_blocks;
		s->peak_seq = e->seq;
		s->peak_tick = e->tick;
	}
}

static void give_back(struct heap_stats *s, uint64_t ptr)
{
	uint64_t size;
	if (!ptr)
		return;
	if (addrmap_del(&s->live, ptr, &size)) {
		s->frees++;
		s->live_bytes -= size;
		s->live_blocks--;
	} else {
		s->unmatched_frees++;
	}
}

int heap_analyze(struct tprof_trace *t, struct heap_stats *s)
{
	memset(s, 0, sizeof(*s));
	addrmap_init(&s->live);
	struct tprof_event e;
	int r;
	while ((r = tprof_trace_next(t, &e)) > 0) {
		s->events++;
		switch (e.kind) {
		case TPROF_EV_FREE:
			s->calls[e.kind]++;
			give_back(s, e.ptr);
			break;
		case TPROF_EV_REALLOC:
		case TPROF_EV_REALLOCARRAY:
			if (e.phase == 0) {
				s->calls[e.kind]++;
				/* success, or glibc's realloc(p, 0), which frees p and returns NULL */
				if (e.ptr || (e.size == 0 && e.old_ptr))
					give_back(s, e.old_ptr);
				else
					s->failed++;
			} else if (e.ptr) {
				take(s, &e);
			}
			break;
		default:
			s->calls[e.kind]++;
			if (e.ptr)
				take(s, &e);
			else
				s->failed++;
			break;
		}
	}
	return r;
}
