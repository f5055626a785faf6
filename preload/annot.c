/* The annotation entry point behind include/tprof.h (tprof_annotate) and the table of interned
 * annotation names. Names are copied into a fixed open-addressing table (no allocation, no lock: a
 * slot is claimed with one compare-and-swap and published when its bytes are in place), so a program
 * may pass a name that lives on its stack. The table is in the shared memory; the recorder defines
 * each name in a NAMES block before the first record that uses it. */
#include <errno.h>
#include <string.h>

#include "preload.h"

enum { SLOT_EMPTY = 0, SLOT_FILLING = 1, SLOT_READY = 2 };
#define names (tprof_shm->names) /* shared: the recorder reads them back (shm.h) */

static uint32_t hash_name(const char *s, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

uint32_t tprof_name_intern(const char *name)
{
	if (!name || !name[0] || !tprof_shm)
		return 0; /* "" is no name, as NULL: a trace's names are never empty */
	size_t n = strnlen(name, TPROF_NAME_MAX);
	if (n == TPROF_NAME_MAX) /* cut before the character the limit falls inside, not in it */
		while (n > 0 && ((uint8_t)name[n] & 0xc0) == 0x80)
			n--;
	if (n == 0)
		return 0;
	uint32_t h = hash_name(name, n);
	for (uint32_t k = 0; k < TPROF_NAME_IDS; k++) {
		uint32_t i = (h + k) & (TPROF_NAME_IDS - 1);
		if (i == 0)
			continue; /* id 0 means "no name" */
		int st = atomic_load_explicit(&names[i].state, memory_order_acquire);
		if (st == SLOT_EMPTY) {
			int expected = SLOT_EMPTY;
			if (atomic_compare_exchange_strong(&names[i].state, &expected, SLOT_FILLING)) {
				memcpy(names[i].name, name, n);
				names[i].name[n] = 0;
				names[i].len = (uint8_t)n;
				atomic_store_explicit(&names[i].state, SLOT_READY, memory_order_release);
				return i;
			}
			st = expected;
		}
		while (st == SLOT_FILLING) /* another thread is copying its name: a few bytes */
			st = atomic_load_explicit(&names[i].state, memory_order_acquire);
		if (names[i].len == n && memcmp(names[i].name, name, n) == 0)
			return i;
	}
	return 0; /* the table is full: recorded without a name */
}

void tprof_annot_record(int kind, uint32_t name_id, int64_t value)
{
	tprof_alive_check(); /* a fork child's first call (the OpenMP notes come here) */
	if (tprof_tls.crit) { /* a handler's, inside a ring write it interrupted: published after it */
		tprof_defer_annot(name_id, kind, value);
		return;
	}
	struct tprof_thread *t = tprof_tls.thread;
	if (!t)
		t = tprof_thread_attach();
	if (!t) {
		tprof_lost_no_ring();
		return;
	}
	/* as a heap event's ring write (tprof_record): a signal handler's heap call meanwhile is
	 * deferred, and published in sequence order */
	const volatile uint32_t *frame = tprof_tls.frame;
	tprof_tls.frame = NULL; /* held outside a hook: tprof_crit_left leaves it alone */
	tprof_tls.crit = 1;
	uint64_t seq;
	struct tprof_ev *e = tprof_ring_take(t, &seq);
	if (!e) {
		tprof_tls.frame = frame;
		return;
	}
	e->seq_kind = tprof_ev_pack(seq, name_id, TPROF_RING_ANNOT);
	e->tick = tprof_now();
	e->size = (uint64_t)kind;
	e->ptr = (uint64_t)value;
	tprof_ring_publish(t->ring, 1);
	tprof_ring_kick(t->ring, 1);
	tprof_crit_end(t);
	tprof_tls.frame = frame;
}

/* The one exported annotation call (include/tprof.h wraps it): kind is enum tprof_annot_kind, one
 * of those the API offers. */
TPROF_EXPORT void tprof_annotate(int kind, const char *name, int64_t value);
TPROF_EXPORT void tprof_annotate(int kind, const char *name, int64_t value)
{
	if (kind < 1 || kind > TPROF_ANNOT_API_MAX || !atomic_load_explicit(&tprof_ready, memory_order_acquire) ||
	    tprof_tls.guard)
		return;
	tprof_alive_check(); /* a fork child's first call: its parent's names are not its own */
	if (!atomic_load_explicit(&tprof_recording, memory_order_relaxed) && !tprof_start_recording())
		return; /* an annotation registers the process like a heap call */
	int saved = errno; /* no guard: interning allocates nothing, and a signal handler's heap call
			    * meanwhile is the program's (deferred during the ring write) */
	tprof_annot_record(kind, tprof_name_intern(name), value);
	errno = saved;
}
