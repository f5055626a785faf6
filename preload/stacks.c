/* Stack capture, interning and the module table of libtprof.so (see stacks.h).
 *
 * Interning: an open-addressing table of private slots, each a 64-bit tag (a hash of the frames and
 * the module generation), the id and where its frames are. An inserting thread claims an empty slot
 * with a compare-and-swap, copies the frames into the shared arena, fills the id's shared index
 * entry and only then publishes the tag; a reader that meets a slot being filled skips it. Nobody
 * waits on another (but for the rare mapping of a new chunk), so a signal or a descheduled thread
 * cannot stall another; the price is that two threads racing on the same new stack may give it two
 * ids, which the analyzer merges by content. Ids and frames are never reused, so the recorder can
 * read a stack back as soon as it sees an event that references it. */
#define UNW_LOCAL_ONLY
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <libunwind.h>
#include <link.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "preload.h"
#include "stacks.h"
#include "sys.h"
#include "unwind.h"

/* The table grows in levels, each 8 times the one before, all in one reservation: a process with
 * a few hundred stacks touches a few pages of its first level (each page touched costs a fault),
 * not one page of a large table per stack. A stack lives in the level it was inserted into;
 * lookups try every level in use, inserts go into the newest, and the next is opened when the
 * newest is half full. */
#define LEVELS 5
static const uint8_t level_bits[LEVELS] = {10, 13, 16, 19, 21}; /* the last: 2 Mi slots */
#define MAX_PROBES 128
#define TAG_BUSY 1ull
#define ARENA_CHUNKS 256 /* 1 GiB of frames at most */

struct slot {
	_Atomic uint64_t tag;
	const uint64_t *frames;
	uint32_t id;
	uint16_t depth;
	uint8_t truncated;
};

/* A chunk of the shared file: 0 absent, 1 being mapped, 2 ready. */
struct chunk {
	_Atomic int state;
	void *ptr;
	uint64_t off;
};

static struct slot *levels[LEVELS];
static _Atomic uint32_t level_used[LEVELS]; /* stacks inserted into each level */
static uint32_t nlevels;                    /* the levels mapped: fewer under a tight limit */
static _Atomic uint32_t top_level;          /* the newest level in use */
static struct slot *table;                  /* every level, reserved together */
static size_t table_bytes;
/* The chunks of the stack index and of the frames, side by side: the first of each, all a small
 * program uses, share a page, which a fork child copies when it starts again from the first. */
static TPROF_LARGE struct {
	struct chunk index, arena;
} chunks[TPROF_STACK_CHUNKS > ARENA_CHUNKS ? TPROF_STACK_CHUNKS : ARENA_CHUNKS];
static _Atomic uint32_t chunks_touched; /* entries of chunks[] ever used: the rest are still zero */
static _Atomic uint64_t arena_pos; /* chunk << 32 | words used in it */
_Atomic uint32_t tprof_stacks_epoch; /* advanced whenever ids start again (a fork child's table) */
static _Atomic uint64_t generation; /* bumped by dlclose: addresses may now mean other code */
static unsigned max_depth;
static uintptr_t self_lo, self_hi;   /* libtprof.so's own code, whose frames are skipped */
static uintptr_t unw_lo, unw_hi;     /* libunwind's code, when it is loaded */
static uint64_t last_scan_seq;       /* when the last module scan began (serialized by modules_busy) */
static unsigned long long scan_adds = ~0ull, scan_subs; /* the loader's counts as it began */

static int find_self(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uintptr_t *range = data, me = range[0];
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
		if (me >= lo && me < hi) {
			range[0] = lo;
			range[1] = hi;
			return 1;
		}
	}
	return 0;
}

static void code_range(const void *addr, uintptr_t *lo, uintptr_t *hi)
{
	uintptr_t r[2] = {(uintptr_t)addr, 0};
	if (dl_iterate_phdr(find_self, r)) {
		*lo = r[0];
		*hi = r[1];
	}
}

/* libunwind, the reference of TPROF_VERIFY_STACKS only: the walk of unwind.c needs no other
 * unwinder, and a library loaded into every traced process (libunwind and its liblzma: about a
 * millisecond of loading and relocation each time a process starts) for nothing would cost more
 * than the rest of tprof's start-up. Loaded from the constructor, where the loader may be entered. */
#define STR_(x) #x
#define STR(x) STR_(x)
static struct {
	int (*getcontext)(unw_context_t *);
	int (*init_local)(unw_cursor_t *, unw_context_t *);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int ready;
} unw;

static void say(const char *msg)
{
	struct tprof_sbuf b = {.n = 0};
	tprof_sb_str(&b, msg);
	tprof_sb_emit(&b);
}

void tprof_stacks_load_reference(void)
{
	if (unw.ready || !tprof_real.dlopen)
		return;
	void *h = tprof_real.dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h) {
		say("tprof: TPROF_VERIFY_STACKS: cannot load libunwind.so.8; stacks are not checked\n");
		return;
	}
	unw.getcontext = (int (*)(unw_context_t *))tprof_dlsym(h, STR(unw_tdep_getcontext));
	unw.init_local = (int (*)(unw_cursor_t *, unw_context_t *))tprof_dlsym(h, STR(unw_init_local));
	unw.step = (int (*)(unw_cursor_t *))tprof_dlsym(h, STR(unw_step));
	unw.get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))tprof_dlsym(h, STR(unw_get_reg));
	int (*policy)(unw_addr_space_t, unw_caching_policy_t) =
		(int (*)(unw_addr_space_t, unw_caching_policy_t))tprof_dlsym(h, STR(unw_set_caching_policy));
	unw_addr_space_t *space = (unw_addr_space_t *)tprof_dlsym(h, STR(unw_local_addr_space));
	if (!unw.getcontext || !unw.init_local || !unw.step || !unw.get_reg) {
		say("tprof: TPROF_VERIFY_STACKS: libunwind.so.8 lacks its functions; stacks are not checked\n");
		return;
	}
	if (policy && space) /* per-thread caches: threads unwind without locks */
		policy(*space, UNW_CACHE_PER_THREAD);
	code_range((const void *)unw.step, &unw_lo, &unw_hi);
	unw.ready = 1;
}

/* The C library's exit: tprof exports a hook of that name, which &exit names in this library. */
TPROF_STARTUP static const void *libc_exit(void)
{
	return tprof_real.exit ? (const void *)tprof_real.exit : tprof_dlsym(RTLD_NEXT, "exit");
}

/* exit()'s own code, learnt in the constructor, or at a registration that comes before it (a
 * library's constructor that allocates), from the C library's own symbol table, without the
 * loader's lock: the frame above exit's called it. */
static uintptr_t exit_fn[2];

TPROF_STARTUP void tprof_stacks_learn_exit(void)
{
	if (exit_fn[1])
		return;
	const void *fn = libc_exit();
	uintptr_t lo, hi;
	if (fn && tprof_function_bounds(fn, "exit", &lo, &hi) == 0 && (uintptr_t)fn >= lo && (uintptr_t)fn < hi) {
		exit_fn[0] = lo;
		exit_fn[1] = hi;
	}
}

/* The stack pointer of the innermost frame of the program's own code above the caller (the caller
 * of exit, _exit or quick_exit; _start after a return from main): the frames below it are the C
 * library's and tprof's on the way out; regs: that frame's callee-saved registers (rbx, rbp, r12 to
 * r15), the program's values, which those frames saved. exit called by the C library itself (argp
 * after --help, error()) leaves the program's call chain in library frames above it: there the
 * answer is exit's caller, whose frames and their locals the program's are (as memcheck scans
 * them), unless the walk out from it ends at _start (a return from main, which leaves only the
 * library's start-up frames). 0 when the stack cannot be walked.
 * This one is libunwind's: the reference for tprof_stacks_program_sp. */
static __attribute__((noinline)) uint64_t program_sp_libunwind(uint64_t regs[8], uintptr_t libc_lo,
								 uintptr_t libc_hi, uintptr_t ld_lo, uintptr_t ld_hi,
								 uintptr_t entry)
{
	static const int saved[] = {UNW_X86_64_RBX, UNW_X86_64_RBP, UNW_X86_64_R12, UNW_X86_64_R13,
				    UNW_X86_64_R14, UNW_X86_64_R15};
	unw_context_t uc;
	unw_cursor_t c;
	if (!unw.ready || unw.getcontext(&uc) != 0 || unw.init_local(&c, &uc) != 0)
		return 0;
	uint64_t cand_sp = 0, cand_regs[6] = {0};
	int in_exit = 0;
	for (int depth = 0; depth < 64 && unw.step(&c) > 0; depth++) {
		unw_word_t ip = 0, sp = 0;
		if (unw.get_reg(&c, UNW_REG_IP, &ip) != 0 || unw.get_reg(&c, UNW_REG_SP, &sp) != 0)
			break;
		int caller_of_exit = in_exit, in_self = ip >= self_lo && ip < self_hi;
		/* its last call: ip - 1; tprof's exit hook calls it for the program, whose frame is then
		 * exit's caller */
		in_exit = (exit_fn[1] && ip - 1 >= exit_fn[0] && ip - 1 < exit_fn[1]) || (caller_of_exit && in_self);
		int skipped = in_self || (ip >= libc_lo && ip < libc_hi) || (ip >= ld_lo && ip < ld_hi);
		if (skipped && caller_of_exit && !cand_sp && !in_self) {
			cand_sp = sp;
			for (int i = 0; i < 6; i++) {
				unw_word_t v = 0;
				cand_regs[i] = unw.get_reg(&c, saved[i], &v) == 0 ? v : 0;
			}
		}
		if (skipped)
			continue;
		if (cand_sp && !(entry && ip >= entry && ip - entry < 64))
			break;
		for (int i = 0; i < 6; i++) {
			unw_word_t v = 0;
			regs[i] = unw.get_reg(&c, saved[i], &v) == 0 ? v : 0;
		}
		return sp;
	}
	if (cand_sp)
		memcpy(regs, cand_regs, sizeof(cand_regs));
	return cand_sp;
}

/* TPROF_VERIFY_STACKS: the captures checked and those that differed from the reference. */
static _Atomic uint64_t verified, differed, fell_back;

uint64_t tprof_stacks_program_sp(uint64_t regs[8])
{
	extern void *__tls_get_addr(void *); /* ld.so's */
	uintptr_t skip[3][2] = {{self_lo, self_hi}, {0, 0}, {0, 0}};
	code_range(libc_exit(), &skip[1][0], &skip[1][1]);
	code_range((const void *)&__tls_get_addr, &skip[2][0], &skip[2][1]);
	uint64_t sp = 0;
	uintptr_t entry = (uintptr_t)getauxval(AT_ENTRY);
	if (tprof_unwind_outer_frame((const uintptr_t(*)[2])skip, 3, exit_fn, entry, &sp, regs) != 0) {
		if (tprof_cfg.verify_stacks)
			atomic_fetch_add(&fell_back, 1);
		return 0; /* the scan takes the exiting thread's whole stack */
	}
	if (unw.ready) {
		uint64_t ref[8] = {0};
		uint64_t rsp = program_sp_libunwind(ref, skip[1][0], skip[1][1], skip[2][0], skip[2][1], entry);
		atomic_fetch_add(&verified, 1);
		if (rsp != sp || memcmp(ref, regs, 6 * sizeof(regs[0])) != 0)
			atomic_fetch_add(&differed, 1);
	}
	return sp;
}

int tprof_unwinder_owns(const void *caller)
{
	return (uintptr_t)caller >= unw_lo && (uintptr_t)caller < unw_hi;
}

int tprof_readable(const void *addr)
{
	char c;
	struct iovec local = {&c, 1}, remote = {(void *)addr, 1};
	if (atomic_load_explicit(&tprof_sandboxed, memory_order_relaxed))
		return 0;
	/* this thread's id, not the process's: a main thread that called pthread_exit is a zombie
	 * without memory, and the call would fail for every thread */
	return syscall(SYS_process_vm_readv, (long)tprof_gettid(), &local, 1L, &remote, 1L, 0L) == 1;
}

/* A chunk of the shared file, mapped by whichever thread needs it first. */
static void *chunk_get(struct chunk *c, uint64_t bytes)
{
	int st = atomic_load_explicit(&c->state, memory_order_acquire);
	if (st == 2)
		return c->ptr;
	int expected = 0;
	if (st == 0 && atomic_compare_exchange_strong(&c->state, &expected, 1)) {
		c->ptr = tprof_shm_alloc(bytes, &c->off, NULL);
		atomic_store_explicit(&c->state, c->ptr ? 2 : 0, memory_order_release);
		return c->ptr;
	}
	for (int k = 0; k < 2000; k++) { /* another thread maps it: microseconds */
		if (atomic_load_explicit(&c->state, memory_order_acquire) == 2)
			return c->ptr;
		sched_yield();
	}
	return NULL;
}

static void chunk_touch(uint32_t k)
{
	uint32_t t = atomic_load_explicit(&chunks_touched, memory_order_relaxed);
	while (t < k + 1 && !atomic_compare_exchange_weak(&chunks_touched, &t, k + 1))
		;
}

static struct tprof_shm_stack *index_entry(uint32_t id)
{
	uint32_t k = id / TPROF_STACK_CHUNK_IDS;
	struct chunk *c = &chunks[k].index;
	chunk_touch(k);
	struct tprof_shm_stack *base = chunk_get(c, (uint64_t)TPROF_STACK_CHUNK_IDS * sizeof(*base));
	if (!base)
		return NULL;
	if (atomic_load_explicit(&tprof_shm->stack_chunk_off[k], memory_order_relaxed) != c->off)
		atomic_store_explicit(&tprof_shm->stack_chunk_off[k], c->off, memory_order_release);
	return base + id % TPROF_STACK_CHUNK_IDS;
}

/* Room for n frames in the shared arena: the pointer and its file offset. */
static uint64_t *arena_take(unsigned n, uint64_t *off)
{
	for (int tries = 0; tries < 8; tries++) {
		uint64_t pos = atomic_fetch_add_explicit(&arena_pos, n, memory_order_relaxed);
		uint32_t k = (uint32_t)(pos >> 32), used = (uint32_t)pos;
		if (k >= ARENA_CHUNKS)
			return NULL;
		if (used + n <= TPROF_ARENA_CHUNK_WORDS) {
			chunk_touch(k);
			uint64_t *base = chunk_get(&chunks[k].arena, (uint64_t)TPROF_ARENA_CHUNK_WORDS * 8);
			if (!base)
				return NULL;
			*off = chunks[k].arena.off + (uint64_t)used * 8;
			return base + used;
		}
		/* this chunk is full: move everyone on to the next one (the first to get here does) */
		uint64_t want = pos + n;
		uint64_t next = (uint64_t)(k + 1) << 32;
		while (want >> 32 == k && !atomic_compare_exchange_weak(&arena_pos, &want, next))
			;
	}
	return NULL;
}

/* Where tprof's own memory lies (its data and the intern table), for the scan at the end. */
static void publish_own(void)
{
	/* libtprof.so's data, found once (it is never unloaded): a fork child reads no ELF header,
	 * a page its parent's mapping does not pass on */
	static uintptr_t lo, hi;
	if (!hi)
		code_range((const void *)&max_depth, &lo, &hi);
	tprof_shm->own[0][0] = lo;
	tprof_shm->own[0][1] = hi;
	if (table) {
		tprof_shm->own[1][0] = (uintptr_t)table;
		tprof_shm->own[1][1] = (uintptr_t)table + table_bytes;
	}
}

/* The first level is filled at random (by hash): its pages, all of them soon, mapped at once. */
static void populate_first_level(void)
{
	tprof_populate(levels[0], ((size_t)1 << level_bits[0]) * sizeof(struct slot));
}

/* Maps the table, its first level mapped in; 0, or -1 when no memory could be had. Not passed on to
 * fork children (MADV_DONTFORK): a fork copied its page table entries and the parent then copied
 * each page it wrote after (a fault each, 5 to 7 us on a VM), for a table every child starts anew. */
static pid_t table_pid; /* the process the table was mapped in: in another, it is not there */
static size_t levels_bytes(uint32_t n)
{
	size_t bytes = 0;
	for (uint32_t k = 0; k < n; k++)
		bytes += ((size_t)1 << level_bits[k]) * sizeof(struct slot);
	return bytes;
}

static int map_table(void)
{
	void *m;
	size_t bytes;
	/* Under an address space limit the reservation counts against it whole: the levels that fit
	 * in a 32nd of it (2 at least), not all that could be had (62 MiB: most of a 64 MiB limit,
	 * which the program would find gone). Stacks beyond them are counted in END. */
	uint64_t limit = tprof_as_limit();
	nlevels = LEVELS;
	while (limit && nlevels > 2 && levels_bytes(nlevels) > limit / 32)
		nlevels--;
	for (;; nlevels--) {
		bytes = levels_bytes(nlevels);
		m = tprof_map_unlocked(bytes, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1);
		if (m != MAP_FAILED)
			break;
		atomic_store(&tprof_shm->reserve_failed, 1);
		if (nlevels == 2) {
			table = NULL;
			return -1;
		}
	}
	madvise(m, bytes, MADV_DONTFORK);
	madvise(m, bytes, MADV_DONTDUMP); /* not in the program's core dumps */
	table = m;
	table_bytes = bytes;
	table_pid = (pid_t)tprof_getpid();
	struct slot *at = m;
	for (uint32_t k = 0; k < nlevels; k++) {
		levels[k] = at;
		at += (size_t)1 << level_bits[k];
	}
	populate_first_level();
	return 0;
}

int tprof_stacks_init(unsigned depth)
{
	max_depth = depth > TPROF_DEPTH_MAX ? TPROF_DEPTH_MAX : depth;
	atomic_fetch_add(&tprof_stacks_epoch, 1);
	if (!self_hi) /* once: as in publish_own */
		code_range((const void *)&tprof_stacks_init, &self_lo, &self_hi);
	tprof_modules_scan(0);
	publish_own();
	if (max_depth == 0)
		return 0;
	/* Never locked whole by mlockall(MCL_FUTURE): 64 MiB the program never had. Under a limit
	 * that refuses it (address space, or locked memory with MCL_FUTURE), the largest levels go
	 * one by one: fewer distinct stacks, the others counted as allocations without a stack;
	 * the trace's END says that memory was refused. */
	if (map_table() != 0) {
		max_depth = 0;
		return -1;
	}
	atomic_store(&tprof_shm->stack_next_id, 1);
	publish_own();
	return 0;
}

void tprof_stacks_warm(void)
{
	if (tprof_cfg.depth == 0 || tprof_tls.unwound)
		return;
	void *buf[4];
	tprof_unwind_here(buf, 4); /* the fast walk's cache, which fork children inherit */
	tprof_tls.unwound = 1;
}

void tprof_stacks_reset(void)
{
	atomic_fetch_add(&tprof_stacks_epoch, 1);
	last_scan_seq = 0;
	/* only what was used: a page written here is copied for a fork child */
	memset(chunks, 0, atomic_load(&chunks_touched) * sizeof(chunks[0]));
	atomic_store(&chunks_touched, 0);
	atomic_store(&arena_pos, 0);
	if (table && table_pid != (pid_t)tprof_getpid()) {
		/* a fork child: its parent's table was not passed on, and its address may hold the
		 * program's memory by now: never touched, a new one mapped */
		table = NULL;
		if (map_table() != 0)
			max_depth = 0;
	} else if (table) {
		madvise(table, table_bytes, MADV_DONTNEED); /* zero again */
		populate_first_level();
	}
	for (int l = 0; l < LEVELS; l++)
		atomic_store(&level_used[l], 0);
	atomic_store(&top_level, 0);
	atomic_store(&tprof_shm->stack_next_id, 1);
	publish_own();
	tprof_modules_scan(0);
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

/* The frames compared and copied by loops of our own, not the C library's memcmp and memcpy: a
 * ThreadSanitizer runtime in the process intercepts those, sees threads read a stack's frames that
 * another wrote without the release and acquire (tprof's atomics are not instrumented), and reports
 * a race inside tprof that ends the program with its error status. */
static inline int same(const struct slot *s, const uint64_t *f, unsigned n, int truncated)
{
	if (s->depth != n || s->truncated != truncated)
		return 0;
	for (unsigned k = 0; k < n; k++)
		if (s->frames[k] != f[k])
			return 0;
	return 1;
}

static inline void copy_frames(uint64_t *dst, const uint64_t *f, unsigned n)
{
	for (unsigned k = 0; k < n; k++) {
		dst[k] = f[k];
		__asm__ volatile("" ::: "memory"); /* a loop the compiler must not make a memcpy call */
	}
}

/* A stack's id: found in any level, else inserted into the newest. 0: no room. */
static uint32_t intern(const uint64_t *f, unsigned n, int truncated)
{
	struct tprof_shm *shm = tprof_shm;
	uint64_t tag = hash_frames(f, n, atomic_load_explicit(&generation, memory_order_relaxed));
	uint32_t top = atomic_load_explicit(&top_level, memory_order_acquire);
	for (uint32_t l = 0; l < top; l++) { /* the older levels: look only */
		struct slot *tab = levels[l];
		uint32_t mask = (1u << level_bits[l]) - 1;
		uint32_t i = (uint32_t)tag & mask;
		for (unsigned probe = 0; probe < MAX_PROBES; probe++, i = (i + 1) & mask) {
			uint64_t t = atomic_load_explicit(&tab[i].tag, memory_order_acquire);
			if (t == 0)
				break;
			if (t == tag && same(&tab[i], f, n, truncated))
				return tab[i].id;
		}
	}
	struct slot *tab = levels[top];
	uint32_t mask = (1u << level_bits[top]) - 1;
	uint32_t i = (uint32_t)tag & mask;
	for (unsigned probe = 0; probe < MAX_PROBES; probe++, i = (i + 1) & mask) {
		struct slot *s = &tab[i];
		uint64_t t = atomic_load_explicit(&s->tag, memory_order_acquire);
		if (t == tag) {
			if (same(s, f, n, truncated))
				return s->id;
			continue;
		}
		if (t != 0)
			continue; /* another stack, or one being inserted */
		if (!atomic_compare_exchange_strong_explicit(&s->tag, &t, TAG_BUSY, memory_order_acquire,
							     memory_order_acquire)) {
			if (t == tag && same(s, f, n, truncated)) /* lost the race to the same stack */
				return s->id;
			continue;
		}
		uint32_t id = atomic_fetch_add_explicit(&shm->stack_next_id, 1, memory_order_relaxed);
		uint64_t off = 0;
		struct tprof_shm_stack *e = id < TPROF_STACK_IDS ? index_entry(id) : NULL;
		uint64_t *dst = e ? arena_take(n, &off) : NULL;
		if (!dst) {
			atomic_store_explicit(&s->tag, 0, memory_order_release); /* give the slot back */
			break;
		}
		copy_frames(dst, f, n);
		e->off = off;
		e->truncated = (uint8_t)truncated;
		__atomic_store_n(&e->depth, (uint16_t)n, __ATOMIC_RELEASE); /* published */
		s->frames = dst;
		s->depth = (uint16_t)n;
		s->truncated = (uint8_t)truncated;
		s->id = id;
		atomic_store_explicit(&s->tag, tag, memory_order_release);
		if (atomic_fetch_add(&level_used[top], 1) + 1 == (mask + 1) / 2 && top + 1 < nlevels)
			atomic_store_explicit(&top_level, top + 1, memory_order_release);
		return id;
	}
	atomic_fetch_add_explicit(&shm->stack_dropped, 1, memory_order_relaxed);
	return 0;
}

/* The reference: libunwind stepping frame by frame through the DWARF rules (no trace cache). */
static __attribute__((noinline)) int reference_unwind(void **buf, int cap)
{
	unw_context_t uc;
	unw_cursor_t c;
	int n = 0;
	if (unw.getcontext(&uc) != 0 || unw.init_local(&c, &uc) != 0)
		return 0;
	do {
		unw_word_t ip;
		if (unw.get_reg(&c, UNW_REG_IP, &ip) != 0)
			break;
		buf[n++] = (void *)ip;
	} while (n < cap && unw.step(&c) > 0);
	return n;
}

/* Leaves out tprof's own frames wherever they are: the hook's at the top, and in the middle a
 * kernel wrapper's or an OpenMP region's body (a kernel that allocates, a pool thread). */
static int drop_own(void **buf, int got)
{
	int n = 0;
	for (int i = 0; i < got; i++)
		if ((uintptr_t)buf[i] < self_lo || (uintptr_t)buf[i] >= self_hi)
			buf[n++] = buf[i];
	return n;
}

/* Out of line: its buffers and libunwind's context (about 5 KiB) stay off the stack of every capture. */
static __attribute__((noinline, cold)) void verify(void *const *got, int n, int cut)
{
	if (!unw.ready)
		return;
	void *ref[TPROF_DEPTH_MAX + 64];
	int m = drop_own(ref, reference_unwind(ref, (int)(sizeof(ref) / sizeof(ref[0]))));
	int same = cut ? m >= n : m == n;
	for (int i = 0; same && i < n; i++)
		same = ref[i] == got[i];
	atomic_fetch_add(&verified, 1);
	if (same)
		return;
	if (atomic_fetch_add(&differed, 1) < 3 && tprof_cfg.debug) {
		struct tprof_sbuf b = {.n = 0};
		tprof_sb_str(&b, "tprof: stack differs from the reference:\n  fast");
		for (int i = 0; i < n && i < 24; i++) {
			tprof_sb_str(&b, " ");
			tprof_sb_hex(&b, (uint64_t)(uintptr_t)got[i]);
		}
		tprof_sb_str(&b, "\n  ref ");
		for (int i = 0; i < m && i < 24; i++) {
			tprof_sb_str(&b, " ");
			tprof_sb_hex(&b, (uint64_t)(uintptr_t)ref[i]);
		}
		tprof_sb_str(&b, "\n");
		tprof_sb_emit(&b);
	}
}

void tprof_stacks_verify_report(void)
{
	static _Atomic int done;
	if (!tprof_cfg.verify_stacks || !unw.ready || atomic_exchange(&done, 1))
		return;
	struct tprof_sbuf b = {.n = 0};
	tprof_sb_str(&b, "tprof: stack check: ");
	tprof_sb_u64(&b, atomic_load(&verified));
	tprof_sb_str(&b, " captures compared with libunwind, ");
	tprof_sb_u64(&b, atomic_load(&differed));
	tprof_sb_str(&b, " differed, ");
	tprof_sb_u64(&b, atomic_load(&fell_back));
	tprof_sb_str(&b, " cut short\n");
	tprof_sb_emit(&b);
}

uint32_t tprof_stack_capture(void)
{
	if (max_depth == 0)
		return 0;
	int cap = (int)max_depth + 8;
	void *buf[cap]; /* sized by the depth asked for: a hook may run on a small stack */
#if defined(__x86_64__)
	int got = tprof_unwind_here(buf, cap), cut = 0;
	uint32_t token;
	uint32_t again = tprof_unwind_memo_id(&token);
	if (again)
		return again; /* the same walk as the last one: the same frames, interned already */
#else /* no walk of our own: libunwind (linked on these machines), which may allocate */
	tprof_tls.guard++;
	int got = unw_backtrace(buf, cap), cut = 0;
	tprof_tls.guard--;
#endif
	if (got < 0) { /* a frame the walk cannot read exactly: the stack up to it, marked cut */
		got = -got - 1;
		cut = 1;
		if (tprof_cfg.verify_stacks)
			atomic_fetch_add(&fell_back, 1);
	}
	int n = drop_own(buf, got);
	int truncated = cut;
	if (n > (int)max_depth) {
		n = (int)max_depth;
		truncated = 1;
	} else if (got == cap) {
		truncated = 1; /* the buffer filled: there may be more */
	}
	if (tprof_cfg.verify_stacks) { /* libunwind may allocate: its calls are tprof's own */
		tprof_tls.guard++;
		verify(buf, n, truncated);
		tprof_tls.guard--;
	}
	if (n <= 0)
		return 0;
	uint32_t id = intern((const uint64_t *)buf, (unsigned)n, truncated);
#if defined(__x86_64__)
	if (id)
		tprof_unwind_memo_keep(id, token);
#endif
	return id;
}

/* ---- modules ---- */

struct scan_ctx {
	uint64_t present[TPROF_SHM_MODULES / 64]; /* per module index, a bit: seen in this scan */
	uint64_t since; /* a module new to this scan was loaded after the previous scan began */
};


/* A relative path (as given in LD_PRELOAD or to dlopen) is made absolute, so the trace can be read
 * from any directory. */
static uint32_t keep_text(struct tprof_shm *shm, const char *s, uint32_t *len)
{
	size_t n = strnlen(s, 4095);
	if (shm->paths_used + n + 1 > TPROF_SHM_PATHS) {
		*len = 0;
		return 0;
	}
	uint32_t at = shm->paths_used;
	memcpy(shm->paths + at, s, n);
	shm->paths[at + n] = 0;
	shm->paths_used += (uint32_t)n + 1;
	*len = (uint32_t)n;
	return at;
}

/* Its buffer is on the stack only when needed: a fork child's scan touches no fresh stack page. */
static __attribute__((noinline)) uint32_t keep_relative(struct tprof_shm *shm, const char *s, uint32_t *len)
{
	char abs[4096];
	return keep_text(shm, realpath(s, abs) ? abs : s, len);
}

static uint32_t keep_path(struct tprof_shm *shm, const char *s, uint32_t *len)
{
	if (s[0] && s[0] != '/' && strchr(s, '/'))
		return keep_relative(shm, s, len);
	return keep_text(shm, s, len);
}

static void read_build_id(const struct dl_phdr_info *info, struct tprof_shm_module *m)
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

/* [*lo, *hi) of a module's loaded segments; 0 when it has none. */
static int module_range(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < *lo)
			*lo = a;
		if (a + ph->p_memsz > *hi)
			*hi = a + ph->p_memsz;
	}
	return *hi != 0;
}

/* Appends a module record (the caller checked there is room) and publishes it. */
static void module_add(struct tprof_shm *shm, uint64_t base, uint64_t lo, uint64_t hi, const char *name,
		       uint64_t since, const uint8_t *build_id, uint8_t build_id_len)
{
	uint32_t n = atomic_load_explicit(&shm->nmodules, memory_order_relaxed);
	struct tprof_shm_module *m = &shm->modules[n];
	memset(m, 0, sizeof(*m));
	m->base = base;
	m->start = lo;
	m->end = hi;
	m->path_off = keep_path(shm, name, &m->path_len);
	m->load_seq = since;
	memcpy(m->build_id, build_id, build_id_len);
	m->build_id_len = build_id_len;
	atomic_store_explicit(&shm->nmodules, n + 1, memory_order_release);
}

static int scan_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	struct scan_ctx *c = data;
	struct tprof_shm *shm = tprof_shm;
	uint64_t lo, hi;
	if (!module_range(info, &lo, &hi))
		return 0;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	uint32_t n = atomic_load_explicit(&shm->nmodules, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++) {
		struct tprof_shm_module *m = &shm->modules[i];
		if (!atomic_load_explicit(&m->unload_seq, memory_order_relaxed) && m->base == info->dlpi_addr &&
		    m->start == lo && m->end == hi) {
			c->present[i / 64] |= 1ull << (i % 64);
			return 0;
		}
	}
	if (n == TPROF_SHM_MODULES)
		return 0;
	struct tprof_shm_module m;
	m.build_id_len = 0;
	read_build_id(info, &m);
	/* scans come late (dlopen is not followed by one): events since the last may be its */
	module_add(shm, info->dlpi_addr, lo, hi, name, c->since, m.build_id, m.build_id_len);
	c->present[n / 64] |= 1ull << (n % 64);
	return 0;
}

/* The modules as the parent saw them at its last fork, in its own memory, for a fork child to copy
 * into its new table without reading their ELF headers and notes: file pages that a parent's
 * mappings do not pass on to a child, a fault each (4 in a small program, 5 to 7 us each on a VM).
 * Taken again before a fork only when the loader's counts of loads and unloads have changed. */
#define SNAP_MODULES 128
static TPROF_LARGE struct {
	unsigned long long adds, subs; /* the loader's counts it was taken at */
	uint32_t n;                    /* modules; 0: none taken (or more than it holds) */
	uint32_t names_used;
	struct snap_module {
		uint64_t base, start, end;
		uint32_t name_off; /* in names: copied, for a name may lie in a file page (the
				    * loader's, in the program's PT_INTERP) */
		uint8_t build_id[32];
		uint8_t build_id_len;
	} m[SNAP_MODULES];
	char names[16384];
} snap;

struct loader_counts {
	unsigned long long adds, subs;
	int known;
};

static int counts_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct loader_counts *lc = data;
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs)) {
		lc->adds = info->dlpi_adds;
		lc->subs = info->dlpi_subs;
		lc->known = 1;
	}
	return 1; /* the first module says them */
}

static int snap_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	uint32_t *n = data;
	uint64_t lo, hi;
	if (!module_range(info, &lo, &hi))
		return 0;
	if (*n == SNAP_MODULES) {
		*n = SNAP_MODULES + 1; /* too many: none kept */
		return 1;
	}
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	size_t len = strnlen(name, 4095);
	if (snap.names_used + len + 1 > sizeof(snap.names)) {
		*n = SNAP_MODULES + 1;
		return 1;
	}
	struct snap_module *s = &snap.m[(*n)++];
	struct tprof_shm_module m;
	m.build_id_len = 0;
	read_build_id(info, &m);
	*s = (struct snap_module){.base = info->dlpi_addr, .start = lo, .end = hi, .name_off = snap.names_used,
				  .build_id_len = m.build_id_len};
	memcpy(s->build_id, m.build_id, m.build_id_len);
	memcpy(snap.names + snap.names_used, name, len);
	snap.names[snap.names_used + len] = 0;
	snap.names_used += (uint32_t)len + 1;
	return 0;
}

void tprof_modules_before_fork(void)
{
	if (atomic_load(&tprof_sandboxed))
		return;
	struct loader_counts lc = {0, 0, 0};
	dl_iterate_phdr(counts_cb, &lc);
	if (!lc.known || (snap.n && snap.adds == lc.adds && snap.subs == lc.subs))
		return; /* nothing written: a page written here would be copied at each fork */
	uint32_t n = 0;
	snap.n = 0;
	snap.names_used = 0;
	dl_iterate_phdr(snap_cb, &n);
	struct loader_counts after = {0, 0, 0};
	dl_iterate_phdr(counts_cb, &after);
	if (n > SNAP_MODULES || !after.known || after.adds != lc.adds || after.subs != lc.subs)
		return; /* another thread loaded or unloaded meanwhile: none kept */
	snap.adds = lc.adds;
	snap.subs = lc.subs;
	snap.n = n;
}

/* A fork child's first scan into its new, empty table: the parent's modules, when the loader has
 * loaded and unloaded nothing since. 1 when done. */
static int modules_from_snapshot(struct tprof_shm *shm, uint64_t since)
{
	if (!tprof_fork_child || !snap.n || atomic_load(&shm->nmodules) != 0 || scan_adds != snap.adds ||
	    scan_subs != snap.subs) /* the counts as this scan began */
		return 0;
	for (uint32_t i = 0; i < snap.n && i < TPROF_SHM_MODULES; i++) {
		const struct snap_module *s = &snap.m[i];
		module_add(shm, s->base, s->start, s->end, snap.names + s->name_off, since, s->build_id,
			   s->build_id_len);
	}
	return 1;
}

/* The last scan's counts, if the loader's have not changed since: nothing loaded or unloaded, no
 * scan needed (and no module's ELF header read: a fork child has not faulted those pages in). */
void tprof_modules_scan_if_changed(void)
{
	struct tprof_shm *shm = tprof_shm;
	if (!shm || shm->pid != (int32_t)tprof_getpid()) /* none, or a vfork child's parent's */
		return;
	struct loader_counts lc = {0, 0, 0};
	dl_iterate_phdr(counts_cb, &lc);
	if (lc.known && lc.adds == scan_adds && lc.subs == scan_subs)
		return;
	tprof_tls.guard++; /* a relative path's realpath allocates */
	tprof_modules_scan(0);
	tprof_tls.guard--;
}

void tprof_modules_scan(int closing)
{
	struct tprof_shm *shm = tprof_shm;
	if (!shm)
		return;
	int saved = errno;
	/* Another thread scans. It may be waiting for the loader's lock, which this thread can hold
	 * (a library's constructor calling dlopen): wait a little, then leave the scan to the next
	 * one rather than deadlock. */
	uint32_t expect = 0;
	for (int tries = 0; !atomic_compare_exchange_weak(&shm->modules_busy, &expect, 1); tries++) {
		expect = 0;
		if (tries == 1000) {
			errno = saved;
			return;
		}
		sched_yield();
	}
	struct loader_counts lc = {0, 0, 0};
	dl_iterate_phdr(counts_cb, &lc);
	scan_adds = lc.known ? lc.adds : ~0ull;
	scan_subs = lc.subs;
	struct scan_ctx c = {.since = 0}; /* 264 bytes of stack: no page of ours written for it */
	c.since = last_scan_seq;
	last_scan_seq = atomic_load(&shm->seq);
	if (!closing && modules_from_snapshot(shm, c.since)) {
		atomic_store_explicit(&shm->modules_busy, 0, memory_order_release);
		errno = saved;
		return;
	}
	dl_iterate_phdr(scan_cb, &c);
	uint64_t seq = atomic_load(&shm->seq);
	uint32_t n = atomic_load(&shm->nmodules);
	for (uint32_t i = 0; i < n; i++)
		if (!(c.present[i / 64] >> (i % 64) & 1) && !atomic_load(&shm->modules[i].unload_seq))
			atomic_store(&shm->modules[i].unload_seq, seq);
	if (closing)
		atomic_fetch_add(&generation, 1);
	atomic_store_explicit(&shm->modules_busy, 0, memory_order_release);
	errno = saved;
}
