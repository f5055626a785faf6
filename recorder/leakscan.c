/* Leak classification in the recorder: the live-block table the writer keeps from the events it
 * drains, and the reachability scan of a traced process at its end (preload/scan.c stops the
 * process's threads and waits). The scan follows memcheck's leak checker: the roots are every
 * readable and writable mapping of the process but the heap's own (and tprof's), with each stopped
 * thread's stack read from its stack pointer up (its registers lie there, in a signal frame or
 * spilled); every aligned 8-byte word that points at the start or inside a live block reaches it;
 * blocks reached only through an interior pointer, or from such blocks, are possibly lost unless a
 * C++ heuristic (std::string, length64, new[], multiple inheritance) explains the pointer; the
 * blocks left are grouped into cliques in address order, whose leaders are definitely lost and the
 * rest indirectly lost. The process's memory is read with process_vm_readv: a page that cannot be
 * read is skipped, never a fault; the pages of a large private anonymous mapping that were never
 * touched (neither present nor swapped out: they read as zeros) are not read at all. docs/LEAKS.md
 * says where this differs from memcheck. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "leakscan.h"

/* Large tables come from their own mappings with transparent huge pages where the system offers
 * them: a table of millions of blocks would otherwise cost a page fault per 4 KiB as it fills. */
static void *big_alloc(size_t n)
{
	if (n < (2u << 20))
		return calloc(1, n);
	void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	madvise(p, n, MADV_HUGEPAGE);
	return p;
}

/* Asks for huge pages on the 2 MiB-aligned part of a large malloc'd array (glibc maps those on
 * their own). */
static void hint_huge(void *p, size_t n)
{
	uintptr_t a = ((uintptr_t)p + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1);
	uintptr_t e = ((uintptr_t)p + n) & ~(uintptr_t)((2u << 20) - 1);
	if (p && e > a)
		madvise((void *)a, e - a, MADV_HUGEPAGE);
}

static void big_free(void *p, size_t n)
{
	if (!p)
		return;
	if (n < (2u << 20))
		free(p);
	else
		munmap(p, n);
}

/* ---- the live blocks ---- */

/* The home slot of an address. Neighbouring blocks go to neighbouring slots (the low bits of the
 * address, which a heap fills densely, are kept in order; the high ones folded in spread the heaps
 * of different arenas): a table of millions of blocks is filled and rehashed as a stream, not one
 * cache and TLB miss per block. */
static inline uint64_t live_slot_of(const struct leak_live *m, uint64_t a)
{
	return ((a >> 4) ^ (a >> 30) ^ (a >> 47)) & m->mask;
}

struct leak_live *leak_live_new(_Atomic uint32_t *beat)
{
	struct leak_live *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->beat = beat;
	m->last_seq = UINT64_MAX;
	m->mask = 1023; /* grows: a table read whole at the scan costs a page fault per page */
	m->s = big_alloc((m->mask + 1) * sizeof(*m->s));
	if (!m->s) {
		free(m);
		return NULL;
	}
	return m;
}

void leak_live_free(struct leak_live *m)
{
	if (m) {
		big_free(m->s, (m->mask + 1) * sizeof(*m->s));
		free(m);
	}
}

uint64_t leak_live_count(const struct leak_live *m)
{
	return m ? m->live : 0;
}

static struct live_slot *live_find(struct leak_live *m, uint64_t addr)
{
	for (uint64_t i = live_slot_of(m, addr);; i = (i + 1) & m->mask)
		if (m->s[i].addr == addr || m->s[i].addr == 0)
			return &m->s[i];
}

static int live_grow(struct leak_live *m)
{
	uint64_t n = (m->mask + 1) * 2;
	struct live_slot *ns = big_alloc(n * sizeof(*ns)), *old = m->s;
	if (!ns)
		return -1;
	uint64_t om = m->mask;
	m->s = ns;
	m->mask = n - 1;
	for (uint64_t i = 0; i <= om; i++) {
		if (old[i].addr)
			*live_find(m, old[i].addr) = old[i];
		if (!(i & 0xfffff))
			atomic_fetch_add(m->beat, 1);
	}
	big_free(old, (om + 1) * sizeof(*old));
	return 0;
}

/* Backward-shift deletion keeps every probe chain whole. */
static void live_delete(struct leak_live *m, struct live_slot *e)
{
	uint64_t i = (uint64_t)(e - m->s);
	for (uint64_t j = (i + 1) & m->mask; m->s[j].addr; j = (j + 1) & m->mask) {
		uint64_t home = live_slot_of(m, m->s[j].addr);
		if (((j - home) & m->mask) >= ((j - i) & m->mask)) {
			m->s[i] = m->s[j];
			i = j;
		}
	}
	m->s[i].addr = 0;
	m->used--;
}

/* An address's event: it is kept when it is the address's latest (by sequence number). An address
 * whose latest event is a free is remembered too, until leak_live_prune: an allocation of it that
 * came earlier may still be drained after it. */
void leak_live_event(struct leak_live *m, uint64_t addr, uint64_t seq, uint64_t size)
{
	if (!addr)
		return;
	struct live_slot *e = live_find(m, addr);
	if (e->addr == 0) {
		if ((m->used + 1) * 2 > m->mask + 1) {
			if (live_grow(m) != 0)
				return;
			e = live_find(m, addr);
		}
		e->addr = addr;
		e->seq = seq;
		e->size = size;
		m->used++;
		if (size != LIVE_FREED)
			m->live++;
		else
			m->freed++;
		return;
	}
	if (e->seq > seq)
		return; /* a later event of this address came first */
	int was = e->size != LIVE_FREED, is = size != LIVE_FREED;
	m->live += (uint64_t)is - (uint64_t)was;
	m->freed += (uint64_t)was - (uint64_t)is;
	e->seq = seq;
	e->size = size;
}

/* An allocation record's release (a realloc's old block, at seq, as the heap replay counts it);
 * returns the sequence number at which its block is taken. */
uint64_t leak_live_alloc_release(struct leak_live *m, const struct tprof_rec *r)
{
	if (!tprof_kind_is_realloc(r->kind))
		return r->seq;
	if (r->ptr || (r->size == 0 && r->old_ptr)) /* success, or realloc(p, 0), which frees p */
		leak_live_event(m, r->old_ptr, r->seq, LIVE_FREED);
	return r->seq2;
}

void leak_live_block_end(struct leak_live *m)
{
	if (!m)
		return;
	m->last_seq = UINT64_MAX; /* the next block's first record begins a run */
	for (uint32_t i = 0; i < TPROF_PTR_HIST; i++)
		if (m->hold[i].addr) {
			leak_live_event(m, m->hold[i].addr, m->hold[i].seq, m->hold[i].size);
			m->hold[i].addr = 0;
		}
}

uint64_t leak_live_freed(const struct leak_live *m)
{
	return m ? m->freed : 0;
}

void leak_live_prune(struct leak_live *m, uint64_t below)
{
	for (uint64_t i = 0; i <= m->mask; i++)
		while (m->s[i].addr && m->s[i].size == LIVE_FREED && m->s[i].seq < below) {
			live_delete(m, &m->s[i]); /* an entry from further on may move here: look again */
			m->freed--;
		}
}

void leak_live_apply(struct leak_live *m, const struct tprof_rec *r)
{
	if (!m)
		return;
	if (r->kind == TPROF_EV_FREE)
		leak_live_event(m, r->ptr, r->seq, LIVE_FREED);
	else
		leak_live_event(m, r->ptr, leak_live_alloc_release(m, r), r->size);
}

/* ---- the process's memory ---- */

struct lmap {
	uint64_t start, end;
	uint8_t r, w, x, file; /* file: backed by a file (not anonymous, not [heap] or [stack]) */
	uint8_t heap;          /* [heap]: the allocator's memory, never a root */
	uint8_t anon;          /* anonymous */
	uint8_t priv;          /* private (copy on write) */
	uint8_t skip;          /* not a root for another reason (tprof's own, a device) */
	uint8_t libc;          /* the C library's data: glibc's arena state lies there */
	uint64_t from;         /* a stack: roots start at the lowest stopped thread's sp in it */
};

struct zone {
	uint64_t start, end;
};

/* A cache of 64 KiB windows of the allocator's zones, direct-mapped: a list or tree of small blocks
 * laid out near each other costs one read per window, not one per block. */
#define WIN_SHIFT 16
#define WIN_SLOTS 1024
struct win {
	uint64_t base; /* window-aligned address; 0: empty */
	uint64_t lo, hi; /* the part of it read: one zone's */
	uint8_t *data;
};

/* A cache of the pages the leak heuristics read words of (a block's first words, the word an
 * interior pointer names): a program whose blocks point into each other's middles (perl) has
 * hundreds of thousands of them, each of which would otherwise be a system call. */
#define HPAGE_SLOTS 2048
struct hpage {
	uint64_t base; /* page address + 1 when loaded (0: empty) */
	int ok;        /* the page could be read */
	uint8_t data[4096];
};

struct scan {
	pid_t pid;
	struct win *wins; /* NULL: blocks are read directly (a small heap) */
	uint8_t *win_mem; /* their data, WIN_SLOTS windows */
	struct hpage *hpages; /* HPAGE_SLOTS, allocated at the first heuristic's read */
	int no_hpages;        /* that allocation failed */
	struct zone *zones; /* the allocator's memory, sorted and merged: never roots */
	size_t nzones, capzones;
	_Atomic uint32_t *beat;
	uint64_t beat_bytes;
	struct leak_block *b;
	uint64_t nb;
	uint64_t lo, hi; /* every block lies in [lo, hi) */
	struct lmap *maps;
	size_t nmaps;
	uint64_t *stack; /* indices of blocks waiting to be scanned */
	uint64_t nstack, capstack;
	int clique_mode;
	int in_libc; /* scanning the C library's data */
	uint64_t clique;
	uint64_t *buf; /* read buffer */
	size_t buf_words;
	int failed; /* out of memory */
	uint64_t root_bytes, block_bytes;
	int unreadable; /* errno of the first read that failed whole */
	/* /proc/PID/pagemap (-1: none, or not opened yet: pm_tried) and what it said last: the present
	 * or swapped ranges from pr_from up to pr_walked (present_range) */
	int pm_fd, pm_tried, pm_no_scan;
	struct prange {
		uint64_t start, end, categories;
	} pr[64];
	size_t npr;
	uint64_t pr_from, pr_walked;
	/* the dead parts of the stopped threads' alternate signal stacks, sorted, apart and 8-aligned:
	 * the frames of handlers that returned, never scanned (memcheck's stack tracking makes them
	 * inaccessible when the stack pointer leaves them) */
	struct dead {
		uint64_t lo, hi;
	} dead[16];
	size_t ndead;
};

static void beat(struct scan *s, uint64_t bytes)
{
	s->beat_bytes += bytes;
	if (s->beat_bytes >= (8u << 20)) {
		s->beat_bytes = 0;
		atomic_fetch_add(s->beat, 1);
	}
}

/* Reads len bytes at addr of the process into dst; pages that cannot be read are zeroed. Returns
 * the bytes actually read. */
static uint64_t read_mem(struct scan *s, uint64_t addr, void *dst, uint64_t len)
{
	struct iovec l = {dst, len}, r = {(void *)addr, len};
	ssize_t n = process_vm_readv(s->pid, &l, 1, &r, 1, 0);
	if (n == (ssize_t)len)
		return len;
	if (n < 0 && !s->unreadable && errno != EFAULT)
		s->unreadable = errno ? errno : EIO;
	/* page by page from where it stopped */
	uint64_t got = n > 0 ? (uint64_t)n : 0, ok = got;
	while (got < len) {
		uint64_t a = addr + got, page_end = (a | 4095) + 1, k = page_end - a;
		if (k > len - got)
			k = len - got;
		struct iovec l2 = {(char *)dst + got, k}, r2 = {(void *)a, k};
		ssize_t m = process_vm_readv(s->pid, &l2, 1, &r2, 1, 0);
		if (m == (ssize_t)k)
			ok += k;
		else
			memset((char *)dst + got, 0, k);
		got += k;
	}
	return ok;
}

/* The block holding address v (start or inside; a zero-size block only at its start), or -1. */
static int64_t find_block(const struct scan *s, uint64_t v)
{
	if (v < s->lo || v >= s->hi)
		return -1;
	uint64_t lo = 0, hi = s->nb; /* the last block with addr <= v */
	while (hi - lo > 1) {
		uint64_t mid = (lo + hi) / 2;
		if (s->b[mid].addr <= v)
			lo = mid;
		else
			hi = mid;
	}
	const struct leak_block *b = &s->b[lo];
	if (v < b->addr)
		return -1;
	if (v - b->addr < b->size || v == b->addr)
		return (int64_t)lo;
	return -1;
}

static void push(struct scan *s, uint64_t i)
{
	if (s->b[i].pending)
		return;
	if (s->nstack == s->capstack) {
		uint64_t n = s->capstack ? s->capstack * 2 : 4096;
		uint64_t *ns = realloc(s->stack, n * sizeof(*ns));
		if (!ns) {
			s->failed = 1;
			return;
		}
		s->stack = ns;
		s->capstack = n;
	}
	s->b[i].pending = 1;
	s->stack[s->nstack++] = i;
}

static const struct lmap *map_of(const struct scan *s, uint64_t a)
{
	size_t lo = 0, hi = s->nmaps;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->maps[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->nmaps && s->maps[lo].start <= a ? &s->maps[lo] : NULL;
}

/* Reads len bytes at a (within one page) for the heuristics, through the page cache: the number of
 * bytes read (len, or 0 when the page cannot be read). */
static uint64_t heur_read(struct scan *s, uint64_t a, void *dst, uint64_t len)
{
	uint64_t page = a & ~4095ull;
	if (((a + len - 1) & ~4095ull) != page)
		return read_mem(s, a, dst, len) == len ? len : 0;
	if (!s->hpages && !s->no_hpages && !(s->hpages = calloc(HPAGE_SLOTS, sizeof(*s->hpages))))
		s->no_hpages = 1; /* not asked again */
	if (!s->hpages)
		return read_mem(s, a, dst, len) == len ? len : 0;
	struct hpage *h = &s->hpages[(a >> 12) % HPAGE_SLOTS];
	if (h->base != page + 1) {
		struct iovec l = {h->data, 4096}, r = {(void *)page, 4096};
		ssize_t n = process_vm_readv(s->pid, &l, 1, &r, 1, 0);
		if (n < 0 && !s->unreadable && errno != EFAULT)
			s->unreadable = errno ? errno : EIO;
		h->ok = n == 4096;
		h->base = page + 1;
	}
	if (!h->ok)
		return 0;
	memcpy(dst, h->data + (a - page), len);
	return len;
}

static int read_word(struct scan *s, uint64_t a, uint64_t *v)
{
	return heur_read(s, a, v, 8) == 8 ? 0 : -1;
}

/* memcheck's test for a vtable: in a readable file mapping, and among its first 20 words two
 * non-null entries point into executable file mappings before one that does not. */
static int is_vtable(struct scan *s, uint64_t a)
{
	if (a < 4096 || (a & 7))
		return 0;
	const struct lmap *m = map_of(s, a);
	if (!m || !m->r || !m->file)
		return 0;
	uint64_t w[20];
	uint64_t n = m->end - a < sizeof(w) ? (m->end - a) / 8 : 20;
	if (read_mem(s, a, w, n * 8) != n * 8)
		return 0;
	int seen = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (!w[i])
			continue;
		const struct lmap *f = map_of(s, w[i]);
		if (!f || !f->x || !f->file)
			return 0;
		if (++seen == 2)
			return 1;
	}
	return 0;
}

/* Which of memcheck's heuristics explain an interior pointer ptr into block b (0: none). */
static int heuristic(struct scan *s, const struct leak_block *b, uint64_t ptr)
{
	uint64_t w[3] = {0, 0, 0};
	uint64_t off = ptr - b->addr;
	if (off == 24 && b->size >= 24 && heur_read(s, b->addr, w, 16) == 16) { /* old std::string rep */
		uint64_t len = w[0], cap = w[1];
		if (cap < UINT64_MAX - 25 && 24 + cap + 1 == b->size && len <= cap)
			return TPROF_LEAK_HEUR_STDSTRING;
	}
	if (off == 8 && b->size >= 8 && heur_read(s, b->addr, w, 8) == 8) {
		if (w[0] > 0 && w[0] == b->size - 8)
			return TPROF_LEAK_HEUR_LENGTH64;
		if (w[0] > 0 && (b->size - 8) % w[0] == 0)
			return TPROF_LEAK_HEUR_NEWARRAY;
	}
	if (!(ptr & 7) && off >= 8) {
		uint64_t inner, first;
		if (read_word(s, ptr, &inner) == 0 && read_word(s, b->addr, &first) == 0 && inner >= 4096 &&
		    first >= 4096 && !(inner & 7) && !(first & 7) && is_vtable(s, inner) && is_vtable(s, first))
			return TPROF_LEAK_HEUR_MULTIPLE_INHERITANCE;
	}
	return 0;
}

/* The size of glibc's chunk for a request of n bytes: the header word, rounded to 16, 32 at least.
 * The next chunk's header begins 16 bytes before its end, inside the last word of this block. */
static inline uint64_t glibc_chunk_size(uint64_t n)
{
	uint64_t c = (n + 8 + 15) & ~15ull;
	return c < 32 ? 32 : c;
}

/* A word found in a root (definite = 1) or in a scanned block. */
static void candidate(struct scan *s, uint64_t v, int definite)
{
	int64_t k = find_block(s, v);
	if (k < 0)
		return;
	struct leak_block *b = &s->b[k];
	if (s->clique_mode) {
		if (b->kind == TPROF_LEAK_DEFINITE && (uint64_t)k != s->clique) {
			s->b[s->clique].indirect += b->size + b->indirect;
			b->indirect = 0;
			b->kind = TPROF_LEAK_INDIRECT;
			push(s, (uint64_t)k);
		}
		return;
	}
	if (s->in_libc && v - b->addr == glibc_chunk_size(b->size) - 16)
		return; /* glibc's arena (top, bins) points at the header of the chunk after b */
	if (b->kind == TPROF_LEAK_REACHABLE) {
		if (v == b->addr)
			b->heuristic = 0;
		return;
	}
	int via_reachable = v == b->addr;
	if (!via_reachable) {
		int h = heuristic(s, b, v);
		b->heuristic = (uint8_t)h;
		via_reachable = h != 0;
	}
	if (via_reachable && definite) {
		b->kind = TPROF_LEAK_REACHABLE;
		push(s, (uint64_t)k); /* (again): what it points at is reachable now */
	} else if (b->kind == TPROF_LEAK_DEFINITE) {
		b->kind = TPROF_LEAK_POSSIBLE;
		push(s, (uint64_t)k);
	}
}

static void scan_words(struct scan *s, const uint64_t *w, uint64_t n, int definite)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = w[i];
		if (v >= s->lo && v < s->hi)
			candidate(s, v, definite);
	}
}

/* The words w[0, n), read from address a, but for those in the dead ranges. */
static void scan_at(struct scan *s, uint64_t a, const uint64_t *w, uint64_t n, int definite)
{
	for (size_t k = 0; k < s->ndead && n; k++) {
		uint64_t lo = s->dead[k].lo, hi = s->dead[k].hi, end = a + 8 * n;
		if (hi <= a)
			continue;
		if (lo >= end)
			break;
		if (lo > a)
			scan_words(s, w, (lo - a) / 8, definite);
		uint64_t skip = ((hi < end ? hi : end) - a) / 8;
		w += skip;
		n -= skip;
		a += 8 * skip;
	}
	scan_words(s, w, n, definite);
}

/* Scans [a, end) of the process as roots. */
static void scan_range(struct scan *s, uint64_t a, uint64_t end)
{
	a = (a + 7) & ~7ull;
	end &= ~7ull;
	while (a < end) {
		uint64_t len = end - a, cap = s->buf_words * 8;
		if (len > cap)
			len = cap;
		read_mem(s, a, s->buf, len);
		s->root_bytes += len;
		scan_at(s, a, s->buf, len / 8, 1);
		beat(s, len);
		a += len;
	}
}

/* Scans the blocks on the stack until it is empty, reading them a batch at a time. */
static size_t zone_after(const struct scan *s, uint64_t a);

/* The words of [a, end), which lie in one window of a zone, through the window cache; NULL when
 * they cannot be cached. */
static const uint64_t *cached(struct scan *s, uint64_t a, uint64_t end)
{
	uint64_t base = a >> WIN_SHIFT << WIN_SHIFT;
	if (!s->wins || (end - 1) >> WIN_SHIFT != a >> WIN_SHIFT)
		return NULL;
	struct win *w = &s->wins[(a >> WIN_SHIFT) % WIN_SLOTS];
	if (w->base != base || !w->data || a < w->lo || end > w->hi) { /* (another zone's part) */
		size_t z = zone_after(s, a);
		if (z >= s->nzones || s->zones[z].start > a)
			return NULL;
		if (!w->data) {
			if (!s->win_mem) { /* all windows in one mapping, with huge pages where offered */
				s->win_mem = big_alloc((size_t)WIN_SLOTS << WIN_SHIFT);
				if (!s->win_mem)
					return NULL;
			}
			w->data = s->win_mem + ((size_t)(w - s->wins) << WIN_SHIFT);
		}
		uint64_t lo = base > s->zones[z].start ? base : s->zones[z].start;
		uint64_t hi = base + (1u << WIN_SHIFT) < s->zones[z].end ? base + (1u << WIN_SHIFT) : s->zones[z].end;
		read_mem(s, lo, w->data + (lo - base), hi - lo);
		s->block_bytes += hi - lo;
		beat(s, hi - lo);
		w->base = base;
		w->lo = lo;
		w->hi = hi;
		if (a < lo || end > hi) /* a block that runs past its zone: read on its own */
			return NULL;
	}
	return (const uint64_t *)(w->data + (a - base));
}

/* Scans the blocks on the stack until it is empty. With the window cache (a large heap) small
 * blocks come from it; without, they are read many at a time (one process_vm_readv for up to 1024
 * of them). A block larger than the buffer is read in pieces. */
static void process_stack(struct scan *s)
{
	enum { BATCH = 1024 };
	int definite[BATCH];
	struct iovec local[BATCH], remote[BATCH];
	uint64_t cap = s->buf_words * 8;
	while (s->nstack && !s->failed) {
		uint64_t i = s->stack[s->nstack - 1];
		struct leak_block *b = &s->b[i];
		uint64_t a = (b->addr + 7) & ~7ull, end = (b->addr + b->size) & ~7ull;
		const uint64_t *w = end > a ? cached(s, a, end) : NULL;
		if (w) {
			s->nstack--;
			b->pending = 0;
			scan_at(s, a, w, (end - a) / 8, b->kind != TPROF_LEAK_POSSIBLE);
			continue;
		}
		if (end <= a || end - a > cap / 4) { /* empty, or large: on its own */
			s->nstack--;
			b->pending = 0;
			int def = b->kind != TPROF_LEAK_POSSIBLE;
			while (a < end) {
				uint64_t len = end - a < cap ? end - a : cap;
				read_mem(s, a, s->buf, len);
				s->block_bytes += len;
				scan_at(s, a, s->buf, len / 8, def);
				beat(s, len);
				a += len;
			}
			continue;
		}
		/* a batch of small blocks, taken off the stack before any is scanned */
		int n = 0;
		uint64_t total = 0;
		while (s->nstack && n < BATCH) {
			uint64_t k = s->stack[s->nstack - 1];
			struct leak_block *c = &s->b[k];
			uint64_t ca = (c->addr + 7) & ~7ull, ce = (c->addr + c->size) & ~7ull;
			if (ce <= ca || ce - ca > cap / 4 || total + (ce - ca) > cap)
				break;
			s->nstack--;
			c->pending = 0;
			definite[n] = c->kind != TPROF_LEAK_POSSIBLE;
			local[n] = (struct iovec){(char *)s->buf + total, ce - ca};
			remote[n] = (struct iovec){(void *)ca, ce - ca};
			total += ce - ca;
			n++;
		}
		if (n == 0)
			continue;
		ssize_t got = process_vm_readv(s->pid, local, (unsigned long)n, remote, (unsigned long)n, 0);
		if (got != (ssize_t)total) /* one of them cannot be read: each on its own */
			for (int k = 0; k < n; k++)
				read_mem(s, (uint64_t)remote[k].iov_base, local[k].iov_base, remote[k].iov_len);
		s->block_bytes += total;
		for (int k = 0; k < n; k++)
			scan_at(s, (uint64_t)remote[k].iov_base, local[k].iov_base, local[k].iov_len / 8, definite[k]);
		beat(s, total);
		
	}
}

static int cmp_block(const void *a, const void *b)
{
	uint64_t x = ((const struct leak_block *)a)->addr, y = ((const struct leak_block *)b)->addr;
	return x < y ? -1 : x > y;
}

/* Sorts the blocks by address: a radix sort (three passes of 16 bits over bits 4 to 51; user
 * addresses are below 2^47 and blocks 16-aligned) that beats between passes, so the process waiting
 * for the scan never takes a long sort for a recorder that is gone. */
static int sort_blocks(struct scan *s)
{
	uint64_t or_all = 0;
	for (uint64_t i = 0; i < s->nb; i++)
		or_all |= s->b[i].addr;
	if (s->nb < 4096 || or_all >> 52) {
		qsort(s->b, s->nb, sizeof(*s->b), cmp_block);
		return 0;
	}
	struct leak_block *tmp = malloc(s->nb * sizeof(*tmp));
	hint_huge(tmp, s->nb * sizeof(*tmp));
	uint64_t *count = malloc((1u << 16) * sizeof(*count));
	if (!tmp || !count) {
		free(tmp);
		free(count);
		return -1;
	}
	struct leak_block *from = s->b, *to = tmp;
	for (int shift = 4; shift < 52; shift += 16) {
		memset(count, 0, (1u << 16) * sizeof(*count));
		for (uint64_t i = 0; i < s->nb; i++)
			count[from[i].addr >> shift & 0xffff]++;
		uint64_t sum = 0;
		for (uint32_t d = 0; d < (1u << 16); d++) {
			uint64_t c = count[d];
			count[d] = sum;
			sum += c;
		}
		for (uint64_t i = 0; i < s->nb; i++)
			to[count[from[i].addr >> shift & 0xffff]++] = from[i];
		struct leak_block *t = from;
		from = to;
		to = t;
		atomic_fetch_add(s->beat, 1);
	}
	if (from == tmp) { /* an odd number of passes: the result is in tmp */
		free(s->b);
		s->b = tmp;
	} else {
		free(tmp);
	}
	free(count);
	return 0;
}

static int add_zone(struct scan *s, uint64_t start, uint64_t end)
{
	if (s->nzones == s->capzones) {
		size_t n = s->capzones ? s->capzones * 2 : 256;
		struct zone *nz = realloc(s->zones, n * sizeof(*nz));
		if (!nz)
			return -1;
		s->zones = nz;
		s->capzones = n;
	}
	s->zones[s->nzones++] = (struct zone){start, end};
	return 0;
}

static int cmp_zone(const void *a, const void *b)
{
	uint64_t x = ((const struct zone *)a)->start, y = ((const struct zone *)b)->start;
	return x < y ? -1 : x > y;
}

static void merge_zones(struct scan *s)
{
	qsort(s->zones, s->nzones, sizeof(*s->zones), cmp_zone);
	size_t k = 0;
	for (size_t i = 0; i < s->nzones; i++) {
		if (k && s->zones[i].start <= s->zones[k - 1].end) {
			if (s->zones[i].end > s->zones[k - 1].end)
				s->zones[k - 1].end = s->zones[i].end;
		} else {
			s->zones[k++] = s->zones[i];
		}
	}
	s->nzones = k;
}

/* The first zone ending after a, or nzones. */
static size_t zone_after(const struct scan *s, uint64_t a)
{
	size_t lo = 0, hi = s->nzones;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->zones[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* ---- the pages of a mapping that hold anything ---- */

/* PAGEMAP_SCAN (Linux 6.7): the ranges of a process's pages in given categories, found by walking its
 * page tables, so that terabytes never touched (an AddressSanitizer shadow) cost nothing. Declared
 * here for headers older than the kernel. */
#ifndef PAGEMAP_SCAN
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages, category_inverted, category_mask,
		category_anyof_mask, return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#endif

/* A mapping whose untouched pages are skipped: private and anonymous (a page never written reads
 * as zeros; a shared one may hold what another process wrote), and large enough to be worth a look
 * at its page tables. */
#define SPARSE_MIN (1u << 20)
static int sparse_candidate(const struct lmap *m)
{
	return m->anon && m->priv && m->end - m->start >= SPARSE_MIN;
}

/* Fills s->pr with the present or swapped ranges from a (page-aligned) up to at most end, through
 * PAGEMAP_SCAN, or else by reading pagemap entries (bit 63 present, 62 swapped); -1 when pagemap
 * cannot tell (then every page counts). */
static int pagemap_fill(struct scan *s, uint64_t a, uint64_t end)
{
	if (!s->pm_tried) {
		char path[64];
		s->pm_tried = 1;
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)s->pid);
		s->pm_fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	/* the cache holds nothing until a walk succeeds (a failed one must not pass for a walk that
	 * found nothing) */
	s->npr = 0;
	s->pr_from = s->pr_walked = a;
	if (s->pm_fd < 0)
		return -1;
	if (!s->pm_no_scan) {
		struct pm_scan_arg arg = {
			.size = sizeof(arg), .start = a, .end = end, .vec = (uint64_t)(uintptr_t)s->pr,
			.vec_len = sizeof(s->pr) / sizeof(s->pr[0]), .category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
			.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		};
		long n = ioctl(s->pm_fd, PAGEMAP_SCAN, &arg);
		if (n >= 0 && arg.walk_end > a && arg.walk_end <= end) {
			s->npr = (size_t)n;
			s->pr_walked = arg.walk_end;
			return 0;
		}
		if (n >= 0 || (errno != ENOTTY && errno != EINVAL))
			return -1; /* an answer that makes no sense, or a failure: every page counts */
		s->pm_no_scan = 1; /* a kernel before 6.7: the entries, 512 pages a read */
	}
	uint64_t e[512];
	uint64_t page = a >> 12, last = (end + 4095) >> 12;
	size_t want = last - page < 512 ? (size_t)(last - page) : 512;
	ssize_t got = pread(s->pm_fd, e, want * 8, (off_t)(page * 8));
	if (got < 8)
		return -1;
	size_t n = (size_t)got / 8;
	for (size_t i = 0; i < n; i++) {
		if (!(e[i] >> 62))
			continue;
		uint64_t st = (page + i) << 12;
		if (s->npr && s->pr[s->npr - 1].end == st)
			s->pr[s->npr - 1].end = st + 4096;
		else if (s->npr < sizeof(s->pr) / sizeof(s->pr[0]))
			s->pr[s->npr++] = (struct prange){st, st + 4096, 0};
		else {
			n = i; /* full: the walk ends here */
			break;
		}
	}
	s->pr_walked = (page + n) << 12;
	return 0;
}

/* The first range of [a, end) that may hold anything, in m: 1 with [*lo, *hi), 0 when the rest holds
 * nothing. Outside sparse candidates, and where pagemap cannot tell, all of it. */
static int present_range(struct scan *s, const struct lmap *m, uint64_t a, uint64_t end, uint64_t *lo, uint64_t *hi)
{
	if (a >= end)
		return 0;
	if (!m || !sparse_candidate(m)) {
		*lo = a;
		*hi = end;
		return 1;
	}
	for (;;) {
		if (a < s->pr_from || a >= s->pr_walked) {
			if (pagemap_fill(s, a & ~4095ull, end) != 0) {
				*lo = a;
				*hi = end;
				return 1;
			}
		}
		for (size_t i = 0; i < s->npr; i++)
			if (s->pr[i].end > a) {
				if (s->pr[i].start >= end)
					return 0;
				*lo = s->pr[i].start > a ? s->pr[i].start : a;
				*hi = s->pr[i].end < end ? s->pr[i].end : end;
				return 1;
			}
		if (s->pr_walked >= end)
			return 0;
		a = s->pr_walked; /* nothing present in what was walked: on from where the walk stopped */
	}
}

/* The allocator's memory, where stale copies of pointers lie in free chunks: the brk heap, glibc's
 * other arenas (64 MiB-aligned heaps that start with a heap_info: arena, previous heap, size, and
 * the size made writable, which is how far the arena reaches), and the pages of every block outside
 * those (a chunk glibc mapped for it alone, with its header). */
static int find_zones(struct scan *s, const struct tprof_shm *shm)
{
	const uint64_t arena_align = 64ull << 20;
	for (int i = 0; i < 4; i++)
		if (shm->own[i][1] > shm->own[i][0] &&
		    add_zone(s, shm->own[i][0] & ~4095ull, (shm->own[i][1] + 4095) & ~4095ull) != 0)
			return -1;
	for (size_t i = 0; i < s->nmaps; i++) {
		const struct lmap *m = &s->maps[i];
		if (m->heap && add_zone(s, m->start, m->end) != 0)
			return -1;
		if (!m->anon || !m->r || !m->w)
			continue;
		for (uint64_t a = (m->start + arena_align - 1) & ~(arena_align - 1), lo, hi; a < m->end; a += arena_align) {
			uint64_t h[4];
			if (!present_range(s, m, a, m->end, &lo, &hi))
				break;
			if (lo > a) { /* the next arena-aligned address at or after what holds anything */
				a = ((lo + arena_align - 1) & ~(arena_align - 1)) - arena_align;
				continue;
			}
			if (m->end - a < sizeof(h) || read_mem(s, a, h, sizeof(h)) != sizeof(h))
				continue;
			if (h[0] && !(h[1] & (arena_align - 1)) && h[3] && !(h[3] & 4095) && h[3] <= arena_align &&
			    h[2] <= h[3] && a + h[3] <= m->end && add_zone(s, a, a + h[3]) != 0)
				return -1;
		}
	}
	merge_zones(s);
	size_t known = s->nzones;
	for (uint64_t i = 0; i < s->nb; i++) {
		uint64_t a = s->b[i].addr;
		size_t z = zone_after(s, a);
		if (z < known && s->zones[z].start <= a)
			continue;
		uint64_t lo = (a - 16) & ~4095ull, hi = (a + s->b[i].size + 4095) & ~4095ull;
		if (add_zone(s, lo, hi) != 0)
			return -1;
		/* zones found so far stay sorted below `known`: the new ones go after and are merged below */
	}
	merge_zones(s);
	return 0;
}

/* Scans [a, end) of mapping m as roots but for the allocator's zones and the pages that hold
 * nothing. */
static void scan_roots(struct scan *s, const struct lmap *m, uint64_t a, uint64_t end)
{
	for (size_t z = zone_after(s, a); a < end; z++) {
		uint64_t stop = z < s->nzones && s->zones[z].start < end ? s->zones[z].start : end;
		for (uint64_t p = a, lo, hi; p < stop && present_range(s, m, p, stop, &lo, &hi); p = hi)
			scan_range(s, lo, hi);
		if (z >= s->nzones || s->zones[z].start >= end)
			break;
		a = s->zones[z].end;
	}
}

static int cmp_map(const void *a, const void *b)
{
	uint64_t x = ((const struct lmap *)a)->start, y = ((const struct lmap *)b)->start;
	return x < y ? -1 : x > y;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* /proc/PID/maps: every mapping, with what the scan needs of it. */
static int read_maps(struct scan *s)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)s->pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t cap = 0;
	char *line = NULL;
	size_t linecap = 0;
	while (getline(&line, &linecap, f) > 0) {
		unsigned long long st, en, off, ino;
		char perms[8], dev[16];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %15s %llu %n", &st, &en, perms, &off, dev, &ino, &pos) < 6)
			continue;
		char *name = line + pos;
		name[strcspn(name, "\n")] = 0;
		if (s->nmaps == cap) {
			cap = cap ? cap * 2 : 256;
			struct lmap *nm = realloc(s->maps, cap * sizeof(*nm));
			if (!nm) {
				free(line);
				fclose(f);
				return -1;
			}
			s->maps = nm;
		}
		struct lmap *m = &s->maps[s->nmaps++];
		memset(m, 0, sizeof(*m));
		m->start = st;
		m->end = en;
		m->r = perms[0] == 'r';
		m->w = perms[1] == 'w';
		m->x = perms[2] == 'x';
		m->file = name[0] == '/' && ino != 0;
		if (strcmp(name, "[heap]") == 0)
			m->heap = 1;
		if (strncmp(name, "/memfd:tprof", 12) == 0 || ends_with(name, "/libtprof.so") ||
		    name[0] == '[' /* [vvar], [vsyscall], [vdso]; [stack] is handled below */)
			m->skip = strcmp(name, "[stack]") != 0 && strcmp(name, "[heap]") != 0;
		if (m->file && strncmp(name, "/dev/", 5) == 0 && strcmp(name, "/dev/zero") != 0) {
			struct stat sb;
			if (stat(name, &sb) == 0 && (S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode)))
				m->skip = 1;
		}
		m->anon = !name[0];
	m->priv = perms[3] == 'p';
		const char *base = strrchr(name, '/');
		m->libc = base && strncmp(base + 1, "libc.so", 7) == 0;
	}
	free(line);
	fclose(f);
	if (!s->nmaps) {
		errno = ESRCH;
		return -1;
	}
	qsort(s->maps, s->nmaps, sizeof(*s->maps), cmp_map);
	return 0;
}

/* Adds [lo, hi) (its whole words) to the dead ranges, kept sorted and apart; beyond 16 ranges the
 * rest are scanned as any memory. */
static void add_dead(struct scan *s, uint64_t lo, uint64_t hi)
{
	lo = (lo + 7) & ~7ull;
	hi &= ~7ull;
	if (lo >= hi)
		return;
	size_t k = 0;
	while (k < s->ndead && s->dead[k].hi < lo)
		k++;
	size_t j = k; /* [k, j): the ranges [lo, hi) touches, merged into it */
	while (j < s->ndead && s->dead[j].lo <= hi) {
		lo = s->dead[j].lo < lo ? s->dead[j].lo : lo;
		hi = s->dead[j].hi > hi ? s->dead[j].hi : hi;
		j++;
	}
	if (j == k && s->ndead == sizeof(s->dead) / sizeof(s->dead[0]))
		return;
	memmove(&s->dead[k + 1], &s->dead[j], (s->ndead - j) * sizeof(s->dead[0]));
	s->ndead = s->ndead - (j - k) + 1;
	s->dead[k] = (struct dead){lo, hi};
}

static uint64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

void leak_scan(pid_t pid, const struct tprof_shm *shm, struct leak_live *live, _Atomic uint32_t *beat_word,
	       struct leak_result *out)
{
	uint64_t t0 = now_ns();
	memset(out, 0, sizeof(*out));
	/* The memory is read through the thread that asked (it waits): a main thread that called
	 * pthread_exit is a zombie without memory, and the process's pid names it. That thread id
	 * comes from the shared memory, which the process writes: it is taken only when it is a thread
	 * of this process (a recorder that serves other users' processes, as root's does, would
	 * otherwise read whichever process the id named). */
	pid_t reader = pid;
	char task[64];
	if (shm->scan_stopped && shm->scan_threads[0].tid > 0 && shm->pid == pid) {
		struct stat st;
		snprintf(task, sizeof(task), "/proc/%d/task/%d", (int)pid, (int)shm->scan_threads[0].tid);
		if (stat(task, &st) == 0)
			reader = shm->scan_threads[0].tid;
	}
	/* (a process in a child pid namespace knows its threads by ids that name others here) */
	struct scan s = {.pid = reader, .beat = beat_word, .pm_fd = -1};
	/* the live blocks, sorted */
	s.nb = live->live;
	s.b = calloc(s.nb ? s.nb : 1, sizeof(*s.b));
	hint_huge(s.b, s.nb * sizeof(*s.b));
	/* 64 KiB, 1 MiB for a large heap: its pages are faulted in for each scan */
	s.buf_words = live->live > 4096 ? 1u << 17 : 1u << 13;
	s.buf = malloc(s.buf_words * 8);
	if (!s.b || !s.buf) {
		out->status = TPROF_LEAKS_NOMEM;
		goto done;
	}
	uint64_t k = 0;
	for (uint64_t i = 0; i <= live->mask && k < s.nb; i++) {
		if (!(i & 0xfffff))
			atomic_fetch_add(s.beat, 1);
		if (live->s[i].addr && live->s[i].size != LIVE_FREED) {
			s.b[k].addr = live->s[i].addr;
			s.b[k].size = live->s[i].size;
			s.b[k].seq = live->s[i].seq;
			s.b[k].kind = TPROF_LEAK_DEFINITE;
			k++;
		}
	}
	s.nb = k;
	out->live_blocks = k;
	for (uint64_t i = 0; i < k; i++)
		out->live_bytes += s.b[i].size;
	atomic_fetch_add(s.beat, 1);
	if (sort_blocks(&s) != 0) {
		out->status = TPROF_LEAKS_NOMEM;
		goto done;
	}
	s.lo = s.nb ? s.b[0].addr : 0;
	for (uint64_t i = 0; i < s.nb; i++) {
		uint64_t e = s.b[i].addr + (s.b[i].size ? s.b[i].size : 1);
		if (e > s.hi)
			s.hi = e;
	}
	if (s.nb == 0) { /* nothing to classify: no memory to read */
		out->status = TPROF_LEAKS_OK;
		goto done;
	}
	if (read_maps(&s) != 0) {
		out->err = errno;
		out->status = kill(pid, 0) != 0 && errno == ESRCH ? TPROF_LEAKS_GONE : TPROF_LEAKS_UNREADABLE;
		goto done;
	}
	if (find_zones(&s, shm) != 0) {
		out->status = TPROF_LEAKS_NOMEM;
		goto done;
	}
	if (s.nb > 4096)
		s.wins = calloc(WIN_SLOTS, sizeof(*s.wins));
	/* stacks: from each stopped thread's stack pointer up */
	uint32_t stopped = atomic_load(&((struct tprof_shm *)shm)->scan_stopped);
	if (stopped > TPROF_SCAN_THREADS)
		stopped = TPROF_SCAN_THREADS;
	for (uint32_t t = 0; t < stopped; t++) {
		uint64_t sp = shm->scan_threads[t].sp;
		uint64_t alo = shm->scan_threads[t].alt_lo, ahi = shm->scan_threads[t].alt_hi;
		int on_alt = alo < ahi && sp >= alo && sp < ahi;
		if (alo < ahi)
			add_dead(&s, alo, on_alt ? sp : ahi);
		/* (on its alternate stack, the thread's own stack is scanned whole) */
		struct lmap *m = on_alt ? NULL : (struct lmap *)map_of(&s, sp);
		if (m && (!m->from || sp < m->from))
			m->from = sp;
	}
	out->threads_stopped = stopped;
	out->threads_missed = shm->scan_asked + 1 > stopped ? shm->scan_asked + 1 - stopped : 0;
	/* the roots: memory, then the exiting thread's registers that its program frame had */
	for (size_t i = 0; i < s.nmaps && !s.failed; i++) {
		const struct lmap *m = &s.maps[i];
		if (!m->r || !m->w || m->heap || m->skip)
			continue;
		s.in_libc = m->libc;
		scan_roots(&s, m, m->from ? m->from : m->start, m->end);
		s.in_libc = 0;
		process_stack(&s);
	}
	/* the blocks of tprof's bootstrap pool are the program's (heap calls made before tprof's
	 * constructor in a process with a sanitizer runtime), in tprof's own data all the same */
	uint64_t blo = shm->boot_used[0], bhi = shm->boot_used[1];
	int inside = blo < bhi && blo >= shm->own[0][0] && bhi <= shm->own[0][1]; /* tprof's data: checked */
	const struct lmap *bm = inside ? map_of(&s, blo) : NULL;
	if (bm && bm->r && bm->w && !bm->heap && !s.failed) {
		bhi = bhi < bm->end ? bhi : bm->end;
		for (uint64_t a = blo, lo, hi; a < bhi && present_range(&s, bm, a, bhi, &lo, &hi); a = hi)
			scan_range(&s, lo, hi); /* not scan_roots: tprof's data is a zone, never a root */
		process_stack(&s);
	}
	uint64_t regs[8];
	memcpy(regs, shm->scan_regs, sizeof(regs));
	scan_words(&s, regs, 8, 1);
	process_stack(&s);
	if (s.unreadable && s.root_bytes && !s.block_bytes && s.unreadable != EFAULT) {
		out->status = TPROF_LEAKS_UNREADABLE;
		out->err = s.unreadable;
		goto done;
	}
	/* the cliques of what is left */
	s.clique_mode = 1;
	for (uint64_t i = 0; i < s.nb && !s.failed; i++) {
		if (s.b[i].kind != TPROF_LEAK_DEFINITE || s.b[i].pending)
			continue;
		s.clique = i;
		push(&s, i);
		process_stack(&s);
	}
	if (s.failed) {
		out->status = TPROF_LEAKS_NOMEM;
		goto done;
	}
	if (kill(pid, 0) != 0 && errno == ESRCH) {
		out->status = TPROF_LEAKS_GONE;
		goto done;
	}
	/* the thread read through is still the process's (its id was not taken by another process
	 * meanwhile, which would have been read instead): else nothing of it is kept */
	if (reader != pid && stat(task, &(struct stat){0}) != 0) {
		out->status = TPROF_LEAKS_UNREADABLE;
		goto done;
	}
	out->status = TPROF_LEAKS_OK;
	out->blocks = s.b;
	out->nblocks = s.nb;
	s.b = NULL;
done:
	out->root_bytes = s.root_bytes;
	out->block_bytes = s.block_bytes;
	out->ns = now_ns() - t0;
	free(s.b);
	free(s.buf);
	if (s.pm_fd >= 0)
		close(s.pm_fd);
	big_free(s.win_mem, (size_t)WIN_SLOTS << WIN_SHIFT);
	free(s.wins);
	free(s.hpages);
	free(s.maps);
	free(s.zones);
	free(s.stack);
}

void leak_result_free(struct leak_result *r)
{
	free(r->blocks);
	r->blocks = NULL;
	r->nblocks = 0;
}

int leak_result_final(struct leak_result *r, const struct leak_live *live)
{
	if (r->status != TPROF_LEAKS_OK)
		return 0;
	/* keep what is still the same block; count what came after */
	uint64_t kept = 0, late = 0;
	for (uint64_t i = 0; i < r->nblocks; i++) {
		struct leak_block *b = &r->blocks[i];
		const struct live_slot *e = live_find((struct leak_live *)live, b->addr);
		b->pending = e->addr == b->addr && e->size != LIVE_FREED && e->seq == b->seq;
		kept += b->pending;
	}
	late = live->live > kept ? live->live - kept : 0;
	struct leak_block *nb = malloc((kept + late + 1) * sizeof(*nb));
	if (!nb)
		return -1;
	uint64_t n = 0;
	for (uint64_t i = 0; i < r->nblocks; i++)
		if (r->blocks[i].pending)
			nb[n++] = r->blocks[i];
	uint64_t kept_n = n;
	for (uint64_t i = 0; i <= live->mask && late; i++) {
		const struct live_slot *e = &live->s[i];
		if (!e->addr || e->size == LIVE_FREED)
			continue;
		uint64_t lo = 0, hi = kept_n; /* kept blocks are by address */
		while (lo < hi) {
			uint64_t mid = (lo + hi) / 2;
			if (nb[mid].addr < e->addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < kept_n && nb[lo].addr == e->addr && nb[lo].seq == e->seq)
			continue;
		if (n < kept + late)
			nb[n++] = (struct leak_block){.addr = e->addr, .size = e->size, .seq = e->seq, .late = 1};
	}
	qsort(nb, n, sizeof(*nb), cmp_block);
	free(r->blocks);
	r->blocks = nb;
	r->nblocks = n;
	r->live_blocks = n;
	r->live_bytes = 0;
	for (uint64_t i = 0; i < n; i++) {
		r->live_bytes += nb[i].size;
		nb[i].pending = 0;
	}
	return 0;
}
