/* Stack capture, interning and the module table of libtprof.so (see stacks.h).
 *
 * Interning: an open-addressing table of slots, each a 64-bit tag (a hash of the frames and the
 * module generation) and an id. An inserting thread claims an empty slot with a compare-and-swap,
 * copies the frames into an append-only arena, fills the id's index entry and only then publishes
 * the tag; a reader that meets a slot being filled skips it. Nobody ever waits, so a signal or a
 * descheduled thread cannot stall another; the price is that two threads racing on the same new
 * stack may give it two ids, which the analyzer merges by content. Ids, frames and slots are never
 * reused, so the writer can read a stack back as soon as it sees an event that references it. */
#define UNW_LOCAL_ONLY
#include <elf.h>
#include <errno.h>
#include <libunwind.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "preload.h"
#include "stacks.h"

#define SLOT_BITS 22 /* 4 Mi slots: stays below half full up to the id limit */
#define SLOTS (1u << SLOT_BITS)
#define MAX_PROBES 128
#define ARENA_WORDS (1u << 27) /* 1 GiB of address space, touched only as stacks arrive */
#define TAG_BUSY 1ull

struct slot {
	_Atomic uint64_t tag;
	uint32_t id;
	uint32_t pad;
};

struct index_entry {
	uint32_t offset; /* in arena words */
	uint16_t depth;
	uint8_t truncated;
	uint8_t pad;
};

static struct slot *slots;
static struct index_entry *index_;
static uint64_t *arena;
static _Atomic uint32_t next_id = 1;
static _Atomic uint64_t arena_used;
static _Atomic uint64_t dropped;
static _Atomic uint64_t generation; /* bumped by dlclose: addresses may now mean other code */
static unsigned max_depth;
static uintptr_t self_lo, self_hi; /* libtprof.so's own code, whose frames are skipped */

static void *map_lazy(size_t bytes)
{
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t me = (uintptr_t)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (me >= lo && me < hi) {
			self_lo = lo;
			self_hi = hi;
			return 1;
		}
	}
	return 0;
}

int tprof_stacks_init(unsigned depth)
{
	max_depth = depth > TPROF_DEPTH_MAX ? TPROF_DEPTH_MAX : depth;
	if (max_depth == 0)
		return 0;
	slots = map_lazy((size_t)SLOTS * sizeof(*slots));
	index_ = map_lazy((size_t)TPROF_STACK_IDS * sizeof(*index_));
	arena = map_lazy((size_t)ARENA_WORDS * sizeof(*arena));
	if (!slots || !index_ || !arena) {
		max_depth = 0;
		return -1;
	}
	dl_iterate_phdr(find_self, (void *)(uintptr_t)&tprof_stacks_init);
	/* libunwind's per-thread cache of frame descriptions: each thread unwinds without locks. */
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	return 0;
}

static inline uint64_t hash_frames(const uint64_t *f, unsigned n, uint64_t gen)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (gen * 0xff51afd7ed558ccdull) ^ n;
	for (unsigned i = 0; i < n; i++) {
		h ^= f[i];
		h *= 0xc2b2ae3d27d4eb4full;
		h ^= h >> 31;
	}
	h ^= h >> 33;
	return h | (1ull << 63); /* never 0 (empty) nor TAG_BUSY */
}

static uint32_t intern(const uint64_t *f, unsigned n, int truncated)
{
	uint64_t tag = hash_frames(f, n, atomic_load_explicit(&generation, memory_order_relaxed));
	uint32_t i = (uint32_t)tag & (SLOTS - 1);
	for (unsigned probe = 0; probe < MAX_PROBES; probe++, i = (i + 1) & (SLOTS - 1)) {
		struct slot *s = &slots[i];
		uint64_t t = atomic_load_explicit(&s->tag, memory_order_acquire);
		if (t == tag) {
			const struct index_entry *e = &index_[s->id];
			if (e->depth == n && e->truncated == truncated &&
			    memcmp(arena + e->offset, f, n * sizeof(*f)) == 0)
				return s->id;
			continue;
		}
		if (t != 0)
			continue; /* another stack, or one being inserted */
		if (!atomic_compare_exchange_strong_explicit(&s->tag, &t, TAG_BUSY, memory_order_acquire,
							     memory_order_acquire)) {
			if (t == tag) { /* lost the race to the same stack: it is published now */
				const struct index_entry *e = &index_[s->id];
				if (e->depth == n && e->truncated == truncated &&
				    memcmp(arena + e->offset, f, n * sizeof(*f)) == 0)
					return s->id;
			}
			continue;
		}
		uint32_t id = atomic_fetch_add_explicit(&next_id, 1, memory_order_relaxed);
		uint64_t off = atomic_fetch_add_explicit(&arena_used, n, memory_order_relaxed);
		if (id >= TPROF_STACK_IDS || off + n > ARENA_WORDS) {
			atomic_store_explicit(&s->tag, 0, memory_order_release); /* give the slot back */
			break;
		}
		memcpy(arena + off, f, n * sizeof(*f));
		index_[id] = (struct index_entry){(uint32_t)off, (uint16_t)n, (uint8_t)truncated, 0};
		s->id = id;
		atomic_store_explicit(&s->tag, tag, memory_order_release);
		return id;
	}
	atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed);
	return 0;
}

uint32_t tprof_stack_capture(void)
{
	if (max_depth == 0)
		return 0;
	void *buf[TPROF_DEPTH_MAX + 8];
	int got = unw_backtrace(buf, (int)max_depth + 8);
	int skip = 0;
	while (skip < got && (uintptr_t)buf[skip] >= self_lo && (uintptr_t)buf[skip] < self_hi)
		skip++;
	int n = got - skip;
	int truncated = 0;
	if (n > (int)max_depth) {
		n = (int)max_depth;
		truncated = 1;
	} else if (got == (int)max_depth + 8) {
		truncated = 1; /* the buffer filled: there may be more */
	}
	if (n <= 0)
		return 0;
	return intern((const uint64_t *)(buf + skip), (unsigned)n, truncated);
}

int tprof_stack_get(uint32_t id, struct tprof_stack_ref *out)
{
	if (id == 0 || id >= atomic_load_explicit(&next_id, memory_order_acquire) || id >= TPROF_STACK_IDS)
		return 0;
	const struct index_entry *e = &index_[id];
	out->frames = arena + e->offset;
	out->depth = e->depth;
	out->truncated = e->truncated;
	return e->depth != 0;
}

uint64_t tprof_stacks_dropped(void)
{
	return atomic_load(&dropped);
}

uint32_t tprof_stacks_count(void)
{
	uint32_t n = atomic_load(&next_id);
	return n > TPROF_STACK_IDS ? TPROF_STACK_IDS - 1 : n - 1;
}

/* ---- modules ---- */

#define MAX_MODULES 4096
#define PATH_ARENA (4u << 20)

static struct tprof_module_rec modules[MAX_MODULES];
static uint32_t nmodules;
static char *path_arena;
static size_t path_used;
static unsigned long long seen_adds = ~0ull, seen_subs = ~0ull;
static _Atomic uint64_t last_close_seq;

struct scan_ctx {
	uint8_t *present; /* per module index: seen in this scan */
	unsigned long long adds, subs;
	int changed;
	int counters_only;
};

/* Runs on the writer thread, whose own allocations are never recorded. A relative path (as given in
 * LD_PRELOAD or to dlopen) is made absolute, so the trace can be read from any directory. */
static const char *keep_path(const char *s)
{
	static char abs[4096];
	if (s[0] && s[0] != '/' && strchr(s, '/') && realpath(s, abs))
		s = abs;
	size_t n = strlen(s) + 1;
	if (!path_arena)
		path_arena = map_lazy(PATH_ARENA);
	if (!path_arena || path_used + n > PATH_ARENA)
		return "";
	char *p = path_arena + path_used;
	memcpy(p, s, n);
	path_used += n;
	return p;
}

static void read_build_id(const struct dl_phdr_info *info, struct tprof_module_rec *m)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*nh);
			const uint8_t *desc = name + ((nh->n_namesz + 3) & ~3u);
			const uint8_t *next = desc + ((nh->n_descsz + 3) & ~3u);
			if (next > end || next <= p)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
			    nh->n_descsz <= sizeof(m->build_id)) {
				memcpy(m->build_id, desc, nh->n_descsz);
				m->build_id_len = (uint8_t)nh->n_descsz;
				return;
			}
			p = next;
		}
	}
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct scan_ctx *c = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		c->adds = info->dlpi_adds;
		c->subs = info->dlpi_subs;
	}
	if (c->counters_only)
		return 1;
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (hi == 0)
		return 0;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	for (uint32_t i = 0; i < nmodules; i++) {
		struct tprof_module_rec *m = &modules[i];
		if (!m->unload_seq && m->base == info->dlpi_addr && m->start == lo && m->end == hi &&
		    strcmp(m->path, name) == 0) {
			c->present[i] = 1;
			return 0;
		}
	}
	if (nmodules == MAX_MODULES)
		return 0;
	struct tprof_module_rec *m = &modules[nmodules];
	memset(m, 0, sizeof(*m));
	m->id = nmodules;
	m->base = info->dlpi_addr;
	m->start = lo;
	m->end = hi;
	m->path = keep_path(name);
	m->load_seq = atomic_load(&tprof_seq);
	read_build_id(info, m);
	c->present[nmodules] = 1;
	nmodules++;
	c->changed = 1;
	return 0;
}

int tprof_modules_scan(int force)
{
	static uint8_t present[MAX_MODULES];
	struct scan_ctx c = {.present = present, .counters_only = 1};
	if (!force) {
		dl_iterate_phdr(scan_cb, &c);
		if (c.adds == seen_adds && c.subs == seen_subs)
			return 0;
	}
	memset(present, 0, sizeof(present));
	c.counters_only = 0;
	c.changed = 0;
	dl_iterate_phdr(scan_cb, &c);
	seen_adds = c.adds;
	seen_subs = c.subs;
	uint64_t closed = atomic_load(&last_close_seq);
	for (uint32_t i = 0; i < nmodules; i++) {
		if (!present[i] && !modules[i].unload_seq) {
			modules[i].unload_seq = closed ? closed : atomic_load(&tprof_seq);
			c.changed = 1;
		}
	}
	return c.changed;
}

struct tprof_module_rec *tprof_modules(uint32_t *n)
{
	*n = nmodules;
	return modules;
}

void tprof_modules_closed(uint64_t seq)
{
	atomic_store(&last_close_seq, seq);
	atomic_fetch_add(&generation, 1);
}
