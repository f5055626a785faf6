/* The stack walk of libtprof.so on x86-64: the return addresses of the calling thread, from the
 * DWARF call frame information every x86-64 object carries (.eh_frame), without libunwind (which
 * only TPROF_VERIFY_STACKS loads, as the reference). A frame's rule (where its caller's stack pointer, frame pointer and return
 * address are, relative to its own stack pointer or frame pointer) is computed once per return
 * address from the object's .eh_frame_hdr (found with _dl_find_object, which is lock-free and safe
 * while other threads dlopen and dlclose) and kept in a per-thread cache; a walk is then a cache
 * probe and one or two loads per frame. Every stack word read is first checked to lie on a page
 * this thread has seen readable (process_vm_readv, once per page). Signal frames are walked
 * through from the C library's own rules for its sigreturn trampoline, and so are frames whose
 * CFA or saved registers are given by the simple DWARF expressions compilers emit (a register plus
 * an offset, dereferenced or not: stack realignment, the trampoline). Code without unwind
 * information (JIT code, hand-written assembly) is taken to keep a frame pointer, as libunwind
 * takes it. Whatever the rules cannot say exactly (another expression, an odd encoding, a frame not
 * above the one before) ends the walk there, and the caller keeps the stack up to it, marked cut.
 * TPROF_VERIFY_STACKS=1 compares every capture with a full libunwind unwind (stacks.c). */
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "preload.h"
#include "sys.h"
#include "unwind.h"

#if defined(__x86_64__)

#define RULES 1024 /* per thread, direct-mapped by return address */
#define PAGES 64   /* stack pages known readable, direct-mapped */
#define MAX_FRAME (16u << 20) /* a frame larger than this is taken for a broken rule */

/* A frame's rule: the CFA (the caller's stack pointer) is rsp or rbp + cfa_off, or the word there;
 * the return address is at CFA + ra_off, or at rsp or rbp + ra_off; the caller's rbp is at CFA +
 * rbp_off, or at rsp or rbp + rbp_off, or unchanged (all with this frame's rsp and rbp). Its flags
 * say which (F_*), F_LAST that the return address is undefined (the outermost frame), and F_SIGNAL
 * that the frame is a signal frame: the caller's address is the interrupted instruction itself, not
 * a return address just past a call. */
struct rule {
	uint64_t ip; /* the address the rule is for (KEY_EXACT: an interrupted instruction); 0: empty */
	int32_t cfa_off;
	int16_t rbp_off, ra_off;
};
/* The last walks, to be given again without walking: a walk is a function of its start (ip, sp,
 * rbp), of the rules (fixed while no code is unloaded) and of the words it reads. When the start is
 * the same and every word it read, read again in its order, is the same, the walk would take the
 * same steps (each address read is one the walk itself would read next) and give the same frames.
 * A loop that allocates from one place costs a few compares instead of a walk and an intern; so
 * does one that allocates from a few places in turn (a wrapper such as OpenSSL's CRYPTO_zalloc
 * called from two places per operation): NMEMO walks are kept, the least recently given replaced.
 * With one, `openssl speed sha256` ran at 0.39 of its bare speed, every walk a new one. */
#define NMEMO 4
#define MEMO_READS 160 /* two words a frame (return address, saved rbp) at the default depth */
#define MEMO_FRAMES 80  /* the default depth, 64, and the frames of tprof itself */
/* Every word kept here is scrambled (^ MEMO_KEY): the reachability scan at the end takes this
 * memory as roots, and a saved rbp may be a pointer into a heap block (code built without a frame
 * pointer uses rbp as any register), as may a stack address (a thread stack the program
 * allocated) or a return address (code made at run time), which would make the block reachable. */
#define MEMO_KEY 0xa5c3f0e1d2b49687ull
struct memo {
	uint64_t ip, sp, rbp;
	int ret;         /* what the walk returned; 0: no memo */
	int cap;
	int rbp_used;    /* the walk used its starting rbp (else rbp is not compared) */
	uint32_t nreads; /* above MEMO_READS: too many to keep (the walk is not kept) */
	uint32_t id;     /* the stack id the frames were interned as (0: not yet) */
	uint32_t id_epoch;
	uint32_t used;   /* when it was last made or given (the cache's clock): the oldest goes */
	uint64_t addr[MEMO_READS], val[MEMO_READS];
	uint64_t frames[MEMO_FRAMES];
};

/* The rule state of the CFA program, for the registers a walk needs: unchanged, saved at CFA + off,
 * undefined, saved at register `base` + off (DW_CFA_expression), or anything else. */
enum { K_SAME, K_OFFSET, K_UNDEF, K_OTHER, K_AT };
struct regrule {
	uint8_t kind, base;
	int64_t off;
};
/* The callee-saved registers, in the order the exit scan keeps them: rbx, rbp, r12 to r15. */
#define NSAVED 6
static const uint8_t saved_dwarf[NSAVED] = {3, 6, 12, 13, 14, 15};
#define S_RBP 1

struct state {
	uint8_t cfa_reg;   /* DWARF number: 7 rsp, 6 rbp; else unsupported */
	uint8_t cfa_expr;  /* given by an expression beyond simple_expr */
	uint8_t cfa_deref; /* the CFA is the word at cfa_reg + cfa_off */
	uint8_t signal;    /* a signal frame ('S' augmentation) */
	int64_t cfa_off;
	struct regrule saved[NSAVED], ra;
};

struct cache {
	uint64_t generation;
	struct rule r[RULES];
	uint16_t flags[RULES];
	uint64_t page[PAGES]; /* page number + 1; 0: empty */
	struct memo memo[NMEMO];
	int memo_cur;         /* the memo the last walk gave or made */
	int memo_hit;         /* the last walk was that memo's, whose stack id is still good */
	uint32_t memo_clock;  /* for the memos' used */
	uint32_t walks;       /* walks begun: names a walk (tprof_unwind_memo_id, _keep) */
	/* a new frame's CFA program runs here (frame_state, run_cfa), not on the thread's stack,
	 * which may be small (a thread made with 16 KiB, an alternate signal stack): a kilobyte and a
	 * half less below a hook. A heap call a signal handler makes during a walk is deferred, and
	 * an exit from one never comes back to it; a walk can run inside another only once the code
	 * has been forgotten (a fork child's first hook, a hook a handler left by siglongjmp), which
	 * the outer walk sees when it has worked out a rule: it gives up (walk). */
	struct state cfa_init, cfa_now, cfa_remembered[8];
};
#define F_VALID 1u
#define F_LAST 2u
#define F_CFA_RBP 4u    /* CFA from rbp, else from rsp */
#define F_RBP_SAVED 8u  /* rbp at CFA + rbp_off */
#define F_CFA_DEREF 16u /* the CFA is the word at rsp/rbp + cfa_off */
#define F_RA_AT 32u     /* the return address at rsp/rbp + ra_off, not CFA + ra_off */
#define F_RA_RBP 64u    /* ... from rbp */
#define F_RBP_AT 128u   /* rbp at rsp/rbp + rbp_off */
#define F_RBP_RBP 256u  /* ... from rbp */
#define F_SIGNAL 512u
#define F_NO_FDE 1024u  /* code without unwind information: the frame pointer rule, as libunwind has it */
#define KEY_EXACT (1ull << 63) /* user addresses never have it */

static _Atomic uint64_t unwind_generation = 1;

void tprof_unwind_forget_code(void)
{
	atomic_fetch_add(&unwind_generation, 1);
}

static struct cache *cache_get(void)
{
	struct cache *c = tprof_tls.ucache;
	if (unlikely(!c)) {
		void *m = mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		tprof_populate(m, sizeof(*c)); /* the rules of a first walk land on every page */
		c = m;
		c->generation = atomic_load_explicit(&unwind_generation, memory_order_acquire);
		tprof_tls.ucache = c;
	}
	if (unlikely(tprof_ucache_cold)) {
		/* a fork child's first walk: the cache's pages are still its parent's, and a walk
		 * writes its memo and a rule for each new frame (three pages in a small program, a
		 * fault each, 5 to 7 us on a VM): one call copies them all (six) for about as much */
		tprof_ucache_cold = 0;
		tprof_populate(c, sizeof(*c));
	}
	uint64_t g = atomic_load_explicit(&unwind_generation, memory_order_acquire);
	if (unlikely(c->generation != g)) { /* code was unloaded: addresses may mean other code now */
		memset(c->r, 0, sizeof(c->r));
		memset(c->flags, 0, sizeof(c->flags));
		for (int k = 0; k < NMEMO; k++)
			c->memo[k].ret = 0;
		c->generation = g;
	}
	return c;
}

void tprof_unwind_new_thread(void)
{
	struct cache *c = tprof_tls.ucache;
	if (c) {
		memset(c->page, 0, sizeof(c->page)); /* another thread's stack */
		for (int k = 0; k < NMEMO; k++)
			c->memo[k].ret = 0;
	}
}

uint32_t tprof_unwind_memo_id(uint32_t *token)
{
	struct cache *c = tprof_tls.ucache;
	*token = c ? c->walks : 0;
	return c && c->memo_hit ? c->memo[c->memo_cur].id : 0;
}

void tprof_unwind_memo_keep(uint32_t id, uint32_t token)
{
	struct cache *c = tprof_tls.ucache;
	if (!c)
		return;
	struct memo *m = &c->memo[c->memo_cur];
	/* only when no walk came since (a signal handler's heap call in a fork child, which forgets the
	 * code): memo_cur is then the memo that walk gave or made, and no other's frames */
	if (m->ret > 0 && c->walks == token) {
		m->id = id;
		m->id_epoch = atomic_load_explicit(&tprof_stacks_epoch, memory_order_relaxed);
	}
}

/* ---- reading the stack ---- */

static int page_readable(uint64_t page)
{
	char b;
	struct iovec local = {&b, 1}, remote = {(void *)(uintptr_t)(page << 12), 1};
	if (atomic_load_explicit(&tprof_sandboxed, memory_order_relaxed))
		return 0; /* the walk ends here: its stack is marked cut */
	int saved = errno;
	long r = syscall(SYS_process_vm_readv, (long)tprof_gettid(), &local, 1L, &remote, 1L, 0L);
	errno = saved;
	return r == 1;
}

/* *out = the word at a, when a's page is known readable (or found so now). */
static inline int load(struct cache *c, uint64_t a, uint64_t *out)
{
	if (unlikely(a & 7))
		return -1;
	uint64_t page = a >> 12;
	uint64_t *slot = &c->page[page % PAGES];
	if (unlikely(*slot != page + 1)) {
		if (!page_readable(page))
			return -1;
		*slot = page + 1;
	}
	*out = *(const uint64_t *)(uintptr_t)a;
	return 0;
}

/* Notes a word the walk read, and depends on, in the memo being made. */
static inline void memo_add(struct memo *m, uint64_t a, uint64_t v)
{
	uint32_t k = m->nreads++;
	if (k < MEMO_READS) {
		m->addr[k] = a ^ MEMO_KEY;
		m->val[k] = v ^ MEMO_KEY;
	}
}

/* load, noting the word */
static inline int load_kept(struct cache *c, struct memo *m, uint64_t a, uint64_t *out)
{
	if (load(c, a, out) != 0)
		return -1;
	memo_add(m, a, *out);
	return 0;
}

/* ---- DWARF call frame information ---- */

struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (;;) {
		if (r->p >= r->end || shift > 63) {
			r->bad = 1;
			return 0;
		}
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t sleb(struct rd *r)
{
	int64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		if (r->p >= r->end || shift > 63) {
			r->bad = 1;
			return 0;
		}
		b = *r->p++;
		v |= (int64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= -((int64_t)1 << shift);
	return v;
}

static uint64_t fixed(struct rd *r, unsigned n)
{
	if ((size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	uint64_t v = 0;
	memcpy(&v, r->p, n);
	r->p += n;
	if (n == 4 && (v & 0x80000000u))
		v |= 0xffffffff00000000ull; /* sign-extended; callers of unsigned forms mask */
	return v;
}

/* A pointer in one of the DW_EH_PE encodings used by .eh_frame (absolute, pc-relative or relative
 * to .eh_frame_hdr; 2, 4 or 8 bytes; uleb/sleb). Others: bad. */
static uint64_t encoded(struct rd *r, uint8_t enc, uint64_t datarel)
{
	if (enc == 0xff) /* DW_EH_PE_omit */
		return 0;
	uint64_t here = (uint64_t)(uintptr_t)r->p, v;
	switch (enc & 0x0f) {
	case 0x00: v = fixed(r, 8); break;                       /* absptr */
	case 0x01: v = uleb(r); break;                           /* uleb128 */
	case 0x02: v = fixed(r, 2); break;                       /* udata2 */
	case 0x03: v = fixed(r, 4) & 0xffffffffu; break;         /* udata4 */
	case 0x04: v = fixed(r, 8); break;                       /* udata8 */
	case 0x09: v = (uint64_t)sleb(r); break;                 /* sleb128 */
	case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(r, 2); break; /* sdata2 */
	case 0x0b: v = fixed(r, 4); break;                       /* sdata4 */
	case 0x0c: v = fixed(r, 8); break;                       /* sdata8 */
	default: r->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0x00: break;                /* absolute */
	case 0x10: v += here; break;     /* pcrel */
	case 0x30: v += datarel; break;  /* datarel: from .eh_frame_hdr */
	default: r->bad = 1; return 0;
	}
	if (enc & 0x80) /* indirect */
		r->bad = 1;
	return v;
}

static unsigned enc_size(uint8_t enc)
{
	switch (enc & 0x0f) {
	case 0x02: case 0x0a: return 2;
	case 0x03: case 0x0b: return 4;
	case 0x00: case 0x04: case 0x0c: return 8;
	default: return 0;
	}
}

#define DW_RBP 6
#define DW_RSP 7

/* The DWARF expressions the walk evaluates: DW_OP_breg6 or DW_OP_breg7 (rbp or rsp plus a signed
 * offset), then DW_OP_deref or nothing. 0 when [p, p + len) is one of them. */
static int simple_expr(const uint8_t *p, uint64_t len, uint8_t *base, int64_t *off, uint8_t *deref)
{
	if (len < 2 || (p[0] != 0x70 + DW_RBP && p[0] != 0x70 + DW_RSP))
		return -1;
	struct rd r = {p + 1, p + len, 0};
	*base = (uint8_t)(p[0] - 0x70);
	*off = sleb(&r);
	if (r.bad)
		return -1;
	*deref = 0;
	if (r.p < r.end && *r.p == 0x06) { /* DW_OP_deref */
		*deref = 1;
		r.p++;
	}
	return r.p == r.end ? 0 : -1;
}

static struct regrule *reg_of(struct state *s, uint64_t reg, uint64_t ra_reg)
{
	if (reg == ra_reg)
		return &s->ra;
	for (int i = 0; i < NSAVED; i++)
		if (reg == saved_dwarf[i])
			return &s->saved[i];
	return NULL;
}

/* Runs a CFA program until the location passes pc; 0 on success. init: the CIE's state (for
 * DW_CFA_restore). */
static int run_cfa(struct rd *r, uint64_t loc, uint64_t pc, uint64_t code_align, int64_t data_align,
		   uint64_t ra_reg, struct state *s, const struct state *init, struct state stack[8])
{
	int depth = 0;
	while (r->p < r->end && !r->bad) {
		uint8_t op = *r->p++;
		uint64_t reg, delta = 0;
		struct regrule *rr;
		switch (op & 0xc0) {
		case 0x40: /* advance_loc */
			delta = (op & 0x3f) * code_align;
			goto advance;
		case 0x80: /* offset */
			rr = reg_of(s, op & 0x3f, ra_reg);
			delta = uleb(r);
			if (rr)
				*rr = (struct regrule){K_OFFSET, 0, (int64_t)delta * data_align};
			continue;
		case 0xc0: /* restore */
			rr = reg_of(s, op & 0x3f, ra_reg);
			if (rr)
				*rr = *reg_of((struct state *)init, op & 0x3f, ra_reg);
			continue;
		}
		switch (op) {
		case 0x00: /* nop */
			continue;
		case 0x02: delta = fixed(r, 1) * code_align; goto advance;
		case 0x03: delta = (fixed(r, 2) & 0xffff) * code_align; goto advance;
		case 0x04: delta = (fixed(r, 4) & 0xffffffffu) * code_align; goto advance;
		case 0x05: /* offset_extended */
			reg = uleb(r);
			delta = uleb(r);
			if ((rr = reg_of(s, reg, ra_reg)))
				*rr = (struct regrule){K_OFFSET, 0, (int64_t)delta * data_align};
			continue;
		case 0x06: /* restore_extended */
			reg = uleb(r);
			if ((rr = reg_of(s, reg, ra_reg)))
				*rr = *reg_of((struct state *)init, reg, ra_reg);
			continue;
		case 0x07: /* undefined */
			if ((rr = reg_of(s, uleb(r), ra_reg)))
				rr->kind = K_UNDEF;
			continue;
		case 0x08: /* same_value */
			if ((rr = reg_of(s, uleb(r), ra_reg)))
				rr->kind = K_SAME;
			continue;
		case 0x09: /* register */
			reg = uleb(r);
			uleb(r);
			if ((rr = reg_of(s, reg, ra_reg)))
				rr->kind = K_OTHER;
			continue;
		case 0x0a: /* remember_state */
			if (depth == 8)
				return -1;
			stack[depth++] = *s;
			continue;
		case 0x0b: /* restore_state */
			if (depth == 0)
				return -1;
			*s = stack[--depth];
			continue;
		case 0x0c: /* def_cfa */
			s->cfa_reg = (uint8_t)uleb(r);
			s->cfa_off = (int64_t)uleb(r);
			s->cfa_expr = s->cfa_deref = 0;
			continue;
		case 0x0d: /* def_cfa_register: only after a register + offset rule */
			if (s->cfa_expr || s->cfa_deref)
				return -1;
			s->cfa_reg = (uint8_t)uleb(r);
			continue;
		case 0x0e: /* def_cfa_offset: likewise */
			if (s->cfa_expr || s->cfa_deref)
				return -1;
			s->cfa_off = (int64_t)uleb(r);
			continue;
		case 0x0f: /* def_cfa_expression */
			delta = uleb(r);
			if ((uint64_t)(r->end - r->p) < delta)
				return -1;
			s->cfa_expr = simple_expr(r->p, delta, &s->cfa_reg, &s->cfa_off, &s->cfa_deref) != 0;
			r->p += delta;
			continue;
		case 0x10: /* expression: the register is saved at the address the expression gives */
		case 0x16: /* val_expression */
			reg = uleb(r);
			delta = uleb(r);
			if ((uint64_t)(r->end - r->p) < delta)
				return -1;
			if ((rr = reg_of(s, reg, ra_reg))) {
				uint8_t base, deref = 1;
				int64_t o = 0;
				if (op == 0x10 && simple_expr(r->p, delta, &base, &o, &deref) == 0 && !deref)
					*rr = (struct regrule){K_AT, base, o};
				else
					rr->kind = K_OTHER;
			}
			r->p += delta;
			continue;
		case 0x11: /* offset_extended_sf */
			reg = uleb(r);
			{
				int64_t o = sleb(r);
				if ((rr = reg_of(s, reg, ra_reg)))
					*rr = (struct regrule){K_OFFSET, 0, o * data_align};
			}
			continue;
		case 0x12: /* def_cfa_sf */
			s->cfa_reg = (uint8_t)uleb(r);
			s->cfa_off = sleb(r) * data_align;
			s->cfa_expr = s->cfa_deref = 0;
			continue;
		case 0x13: /* def_cfa_offset_sf */
			if (s->cfa_expr || s->cfa_deref)
				return -1;
			s->cfa_off = sleb(r) * data_align;
			continue;
		case 0x14: /* val_offset */
		case 0x15: /* val_offset_sf */
			reg = uleb(r);
			if (op == 0x14)
				uleb(r);
			else
				sleb(r);
			if ((rr = reg_of(s, reg, ra_reg)))
				rr->kind = K_OTHER;
			continue;
		case 0x2e: /* GNU_args_size */
			uleb(r);
			continue;
		case 0x2f: /* GNU_negative_offset_extended */
			reg = uleb(r);
			delta = uleb(r);
			if ((rr = reg_of(s, reg, ra_reg)))
				*rr = (struct regrule){K_OFFSET, 0, -(int64_t)delta * data_align};
			continue;
		default: /* set_loc and anything unknown */
			return -1;
		}
	advance:
		loc += delta;
		if (loc > pc)
			return 0;
	}
	return r->bad ? -1 : 0;
}

/* The CFA program's state at pc (a return address less 1, or an interrupted instruction), left in
 * cc->cfa_now; 0 on success. */
#define NO_FDE (-2) /* no unwind information covers pc */
static int frame_state(struct cache *cc, uint64_t pc)
{
	struct dl_find_object fo;
	if (_dl_find_object((void *)(uintptr_t)pc, &fo) != 0 || !fo.dlfo_eh_frame)
		return NO_FDE;
	const uint8_t *hdr = fo.dlfo_eh_frame;
	/* .eh_frame_hdr: version 1, then the encodings of eh_frame_ptr, fde_count and the table,
	 * which must be a sorted table of 4-byte datarel pairs to be searched */
	if (hdr[0] != 1 || hdr[3] != 0x3b)
		return -1;
	struct rd r = {hdr + 4, hdr + 4 + 16, 0};
	encoded(&r, hdr[1], (uint64_t)(uintptr_t)hdr);
	uint64_t count = encoded(&r, hdr[2], (uint64_t)(uintptr_t)hdr);
	if (r.bad || count == 0 || count > (1u << 26))
		return -1;
	const int32_t *table = (const int32_t *)(const void *)r.p;
	int64_t rel = (int64_t)(pc - (uint64_t)(uintptr_t)hdr);
	uint64_t lo = 0, hi = count;
	if (rel < table[0])
		return NO_FDE;
	while (hi - lo > 1) { /* the last entry whose start is <= pc */
		uint64_t mid = lo + (hi - lo) / 2;
		if (table[2 * mid] <= rel)
			lo = mid;
		else
			hi = mid;
	}
	const uint8_t *fde = hdr + table[2 * lo + 1];
	/* the FDE */
	uint32_t len;
	memcpy(&len, fde, 4);
	if (len == 0 || len == 0xffffffffu)
		return -1;
	const uint8_t *fde_end = fde + 4 + len;
	int32_t cie_delta;
	memcpy(&cie_delta, fde + 4, 4);
	const uint8_t *cie = fde + 4 - cie_delta;
	uint32_t clen;
	memcpy(&clen, cie, 4);
	if (clen == 0 || clen == 0xffffffffu)
		return -1;
	struct rd c = {cie + 8, cie + 4 + clen, 0};
	uint32_t cie_id;
	memcpy(&cie_id, cie + 4, 4);
	if (cie_id != 0)
		return -1;
	uint8_t version = (uint8_t)fixed(&c, 1);
	if (version != 1 && version != 3)
		return -1;
	const char *aug = (const char *)c.p;
	size_t augn = strnlen(aug, (size_t)(c.end - c.p));
	if (augn == (size_t)(c.end - c.p))
		return -1;
	c.p += augn + 1;
	uint64_t code_align = uleb(&c);
	int64_t data_align = sleb(&c);
	uint64_t ra_reg = version == 1 ? fixed(&c, 1) & 0xff : uleb(&c);
	uint8_t fde_enc = 0; /* absptr */
	int signal = 0;
	if (aug[0] == 'z') {
		uint64_t n = uleb(&c);
		const uint8_t *after = c.p + n;
		for (const char *a = aug + 1; *a && !c.bad; a++) {
			switch (*a) {
			case 'R': fde_enc = (uint8_t)fixed(&c, 1); break;
			case 'L': fixed(&c, 1); break;
			case 'P': {
				uint8_t pe = (uint8_t)fixed(&c, 1);
				unsigned sz = enc_size(pe);
				if (!sz || (size_t)(c.end - c.p) < sz)
					return -1;
				c.p += sz;
				break;
			}
			case 'S': signal = 1; break;
			default: return -1;
			}
		}
		if (c.bad || after > c.end)
			return -1;
		c.p = after;
	} else if (aug[0]) {
		return -1;
	}
	if (c.bad || code_align == 0)
		return -1;
	struct rd f = {fde + 8, fde_end, 0};
	uint64_t start = encoded(&f, fde_enc, 0);
	struct rd fr = f; /* the range: same size, no pc-relative part */
	uint64_t range = encoded(&fr, fde_enc & 0x0f, 0);
	f.p = fr.p;
	if (f.bad || fr.bad)
		return -1;
	if (pc < start || pc >= start + range)
		return NO_FDE;
	if (aug[0] == 'z') {
		uint64_t n = uleb(&f);
		if (f.bad || (uint64_t)(f.end - f.p) < n)
			return -1;
		f.p += n;
	}
	struct state *init = &cc->cfa_init, *s = &cc->cfa_now;
	memset(init, 0, sizeof(*init)); /* every saved register: K_SAME */
	init->cfa_reg = DW_RSP;
	init->cfa_off = 8;
	init->ra.kind = K_UNDEF;
	*s = *init;
	if (run_cfa(&c, start, UINT64_MAX, code_align, data_align, ra_reg, s, init, cc->cfa_remembered) != 0)
		return -1;
	*init = *s;
	if (run_cfa(&f, start, pc, code_align, data_align, ra_reg, s, init, cc->cfa_remembered) != 0)
		return -1;
	if (s->cfa_expr || (s->cfa_reg != DW_RSP && s->cfa_reg != DW_RBP) ||
	    s->cfa_off < (s->cfa_deref ? -(int64_t)MAX_FRAME : 0) || s->cfa_off > (int64_t)MAX_FRAME)
		return -1;
	s->signal = (uint8_t)signal;
	return 0;
}

/* Where a K_OFFSET or K_AT rule puts a register: at CFA + off, or at rsp or rbp + off. */
static inline uint64_t rule_addr(const struct regrule *r, uint64_t cfa, uint64_t sp, uint64_t rbp)
{
	if (r->kind == K_AT)
		return (r->base == DW_RBP ? rbp : sp) + (uint64_t)r->off;
	return cfa + (uint64_t)r->off;
}

/* Computes the rule for return address ip (the call is at ip - 1), or with exact for the
 * interrupted instruction at ip; 0 on success. */
static int compute_rule(struct cache *c, uint64_t ip, int exact, struct rule *out, uint16_t *flags)
{
	int rc = frame_state(c, exact ? ip : ip - 1);
	if (rc != 0)
		return rc;
	const struct state *st = &c->cfa_now;
	uint16_t fl = F_VALID;
	if (st->ra.kind == K_UNDEF)
		fl |= F_LAST;
	else if ((st->ra.kind != K_OFFSET && st->ra.kind != K_AT) || st->ra.off < -32768 || st->ra.off > 32767)
		return -1;
	if (st->ra.kind == K_AT)
		fl |= F_RA_AT | (st->ra.base == DW_RBP ? F_RA_RBP : 0);
	if (st->cfa_reg == DW_RBP)
		fl |= F_CFA_RBP;
	if (st->cfa_deref)
		fl |= F_CFA_DEREF;
	if (st->signal)
		fl |= F_SIGNAL;
	const struct regrule *rbp = &st->saved[S_RBP];
	if (rbp->kind == K_OFFSET || rbp->kind == K_AT) {
		if (rbp->off < -32768 || rbp->off > 32767)
			return -1;
		fl |= rbp->kind == K_OFFSET ? F_RBP_SAVED : F_RBP_AT | (rbp->base == DW_RBP ? F_RBP_RBP : 0);
	} else if (rbp->kind != K_SAME) {
		return -1;
	}
	*out = (struct rule){ip | (exact ? KEY_EXACT : 0), (int32_t)st->cfa_off, (int16_t)rbp->off,
			     (int16_t)st->ra.off};
	*flags = fl;
	return 0;
}

/* The walk: frames from the caller of tprof_unwind_here on, as unw_backtrace gives them; -(n + 1)
 * when the frame after the n found is beyond the rules. */
int tprof_unwind_walk(void **buf, int cap, uint64_t ip, uint64_t sp, uint64_t rbp)
	__attribute__((visibility("hidden")));
static int walk(struct cache *c, struct memo *m, void **buf, int cap, uint64_t ip, uint64_t sp, uint64_t rbp);

int tprof_unwind_walk(void **buf, int cap, uint64_t ip, uint64_t sp, uint64_t rbp)
{
	struct cache *c = cache_get();
	if (!c)
		return -1;
	c->memo_hit = 0;
	c->walks++;
	/* the memo the last walk gave first: a loop that allocates from one place finds it at once */
	for (int q = 0; q < NMEMO; q++) {
		int j = (c->memo_cur + q) % NMEMO;
		struct memo *m = &c->memo[j];
		if (m->ret <= 0 || m->ip != (ip ^ MEMO_KEY) || m->sp != (sp ^ MEMO_KEY) ||
		    (m->rbp_used && m->rbp != (rbp ^ MEMO_KEY)) || m->cap != cap)
			continue;
		uint32_t i = 0;
		for (uint64_t v; i < m->nreads && load(c, m->addr[i] ^ MEMO_KEY, &v) == 0 && (v ^ MEMO_KEY) == m->val[i];
		     i++)
			;
		if (i < m->nreads)
			continue;
		/* its id stands for the frames, unless the table gives ids anew (a fork child) or every
		 * capture is to be checked */
		c->memo_cur = j;
		m->used = ++c->memo_clock;
		c->memo_hit = m->id && !tprof_cfg.verify_stacks &&
			      m->id_epoch == atomic_load_explicit(&tprof_stacks_epoch, memory_order_relaxed);
		if (!c->memo_hit)
			for (int k = 0; k < m->ret; k++)
				buf[k] = (void *)(uintptr_t)(m->frames[k] ^ MEMO_KEY);
		return m->ret;
	}
	int oldest = 0; /* the memo to make: an empty one, else the least recently used */
	for (int j = 1; j < NMEMO && c->memo[oldest].ret > 0; j++)
		if (c->memo[j].ret <= 0 || (int32_t)(c->memo[j].used - c->memo[oldest].used) < 0)
			oldest = j;
	struct memo *m = &c->memo[oldest];
	c->memo_cur = oldest;
	m->ret = 0;
	m->nreads = 0;
	m->id = 0;
	m->used = ++c->memo_clock;
	uint64_t gen = c->generation;
	int r = walk(c, m, buf, cap, ip, sp, rbp);
	if (unlikely(atomic_load_explicit(&unwind_generation, memory_order_acquire) != gen)) {
		m->ret = 0; /* a walk inside this one kept its reads in the same memo */
		return r;
	}
	if (r > 0 && r <= MEMO_FRAMES && m->nreads <= MEMO_READS) {
		for (int k = 0; k < r; k++)
			m->frames[k] = (uint64_t)(uintptr_t)buf[k] ^ MEMO_KEY;
		m->ip = ip ^ MEMO_KEY;
		m->sp = sp ^ MEMO_KEY;
		m->rbp = rbp ^ MEMO_KEY;
		m->cap = cap;
		m->ret = r;
	}
	return r;
}

static int walk(struct cache *c, struct memo *m, void **buf, int cap, uint64_t ip, uint64_t sp, uint64_t rbp)
{
#define GIVE_UP (-n - 1)
	const uint64_t gen = c->generation;
	int n = 0, exact = 0;
	/* Code built without a frame pointer uses rbp as any register: a saved rbp is read at every
	 * frame that saves it, but the walk depends on it only where a later rule computes with rbp.
	 * Such a word goes into the memo only then (after words read since, whose addresses did not
	 * depend on it), so that a loop variable held in rbp does not make every walk new. */
	uint64_t pend_a = 0, pend_v = 0;
	int pend = 0, rbp_loaded = 0;
	m->rbp_used = 0;
#define USE_RBP()                                                                                 \
	do {                                                                                      \
		if (pend)                                                                         \
			memo_add(m, pend_a, pend_v);                                              \
		else if (!rbp_loaded)                                                             \
			m->rbp_used = 1;                                                          \
		pend = 0;                                                                         \
	} while (0)
	while (n < cap) {
		buf[n++] = (void *)(uintptr_t)ip;
		uint64_t key = ip | (exact ? KEY_EXACT : 0);
		unsigned k = (unsigned)((ip ^ (ip >> 11)) % RULES);
		struct rule *ru = &c->r[k];
		if (unlikely(ru->ip != key || !(c->flags[k] & F_VALID))) {
			struct rule nr;
			uint16_t fl;
			int rc = compute_rule(c, ip, exact, &nr, &fl);
			/* a walk inside this one (a signal handler's heap call, in a fork child that
			 * forgot its parent's state, or after the handler left a hook: both forget the
			 * code first) may have worked out its own rule in the same scratch meanwhile */
			if (unlikely(atomic_load_explicit(&unwind_generation, memory_order_acquire) != gen))
				return GIVE_UP;
			/* Code without unwind information (JIT code; the loader's entry, which runs
			 * the constructors) is taken, as libunwind takes it, to keep a frame pointer:
			 * the caller's rbp at rbp, its return address above it. */
			if (rc == NO_FDE) {
				nr = (struct rule){ip | (exact ? KEY_EXACT : 0), 16, -16, -8};
				fl = F_VALID | F_NO_FDE | F_CFA_RBP | F_RBP_SAVED;
				rc = 0;
			}
			if (rc != 0)
				return GIVE_UP;
			*ru = nr;
			c->flags[k] = fl;
		}
		uint16_t fl = c->flags[k];
		if (fl & F_LAST)
			break;
		if (fl & (F_NO_FDE | F_CFA_RBP | F_RA_RBP | F_RBP_RBP))
			USE_RBP();
		if ((fl & F_NO_FDE) && rbp == 0)
			break; /* where the frame pointer chain ends, the stack ends */
		uint64_t cfa = ((fl & F_CFA_RBP) ? rbp : sp) + (uint64_t)(int64_t)ru->cfa_off;
		if ((fl & F_CFA_DEREF) && load_kept(c, m, cfa, &cfa) != 0)
			return GIVE_UP;
		/* each frame above the one before, but for the frame a signal interrupted, which may
		 * be on another stack (sigaltstack) */
		if (!(fl & F_SIGNAL) && (cfa <= sp || cfa - sp > MAX_FRAME))
			return GIVE_UP;
		uint64_t next, ra_at = cfa, rbp_at = cfa;
		if (fl & F_RA_AT)
			ra_at = (fl & F_RA_RBP) ? rbp : sp;
		if (fl & F_RBP_AT)
			rbp_at = (fl & F_RBP_RBP) ? rbp : sp;
		if (load_kept(c, m, ra_at + (uint64_t)(int64_t)ru->ra_off, &next) != 0)
			return GIVE_UP;
		if (fl & (F_RBP_SAVED | F_RBP_AT)) {
			uint64_t a = rbp_at + (uint64_t)(int64_t)ru->rbp_off;
			if (load(c, a, &rbp) != 0)
				return GIVE_UP;
			pend = 1; /* an rbp read before and never used is dropped */
			pend_a = a;
			pend_v = rbp;
			rbp_loaded = 1;
		}
		sp = cfa;
		ip = next;
		exact = (fl & F_SIGNAL) != 0;
		if (ip == 0)
			break;
	}
	return n;
#undef USE_RBP
#undef GIVE_UP
}

/* The entry: the return address into the caller, the caller's stack pointer (past that return
 * address) and its frame pointer, then the walk. */
__asm__(".text\n"
	".align 16\n"
	".globl tprof_unwind_here\n"
	".hidden tprof_unwind_here\n"
	".type tprof_unwind_here,@function\n"
	"tprof_unwind_here:\n"
	"\t.cfi_startproc\n"
	"\tmovq (%rsp), %rdx\n"
	"\tleaq 8(%rsp), %rcx\n"
	"\tmovq %rbp, %r8\n"
	"\tjmp tprof_unwind_walk\n"
	"\t.cfi_endproc\n"
	".size tprof_unwind_here, .-tprof_unwind_here\n");

/* The registers of the frame that called tprof_unwind_regs (its return address, its stack pointer
 * past that address, then rbx, rbp, r12 to r15 as they are in that frame). */
struct regs_here {
	uint64_t ip, sp, saved[NSAVED];
};
void tprof_unwind_regs(struct regs_here *out) __attribute__((visibility("hidden")));
__asm__(".text\n"
	".align 16\n"
	".globl tprof_unwind_regs\n"
	".hidden tprof_unwind_regs\n"
	".type tprof_unwind_regs,@function\n"
	"tprof_unwind_regs:\n"
	"\t.cfi_startproc\n"
	"\tmovq (%rsp), %rax\n"
	"\tmovq %rax, 0(%rdi)\n"
	"\tleaq 8(%rsp), %rax\n"
	"\tmovq %rax, 8(%rdi)\n"
	"\tmovq %rbx, 16(%rdi)\n"
	"\tmovq %rbp, 24(%rdi)\n"
	"\tmovq %r12, 32(%rdi)\n"
	"\tmovq %r13, 40(%rdi)\n"
	"\tmovq %r14, 48(%rdi)\n"
	"\tmovq %r15, 56(%rdi)\n"
	"\tret\n"
	"\t.cfi_endproc\n"
	".size tprof_unwind_regs, .-tprof_unwind_regs\n");

int tprof_unwind_outer_frame(const uintptr_t (*skip)[2], int nskip, const uintptr_t after[2], uintptr_t entry,
			     uint64_t *sp_out, uint64_t regs[6])
{
	struct cache *c = cache_get();
	if (!c)
		return -1;
	struct regs_here r;
	tprof_unwind_regs(&r);
	uint64_t ip = r.ip, sp = r.sp;
	uint8_t known = (1u << NSAVED) - 1;
	int exact = 0, in_after = 0, have_cand = 0;
	uint64_t cand_sp = 0, cand_regs[NSAVED] = {0};
	for (int depth = 0; depth < 64; depth++) {
		if (frame_state(c, exact ? ip : ip - 1) != 0)
			goto fail;
		const struct state st = c->cfa_now;
		if (st.ra.kind != K_OFFSET && st.ra.kind != K_AT)
			goto fail;
		int uses_rbp = st.cfa_reg == DW_RBP || (st.ra.kind == K_AT && st.ra.base == DW_RBP);
		for (int i = 0; i < NSAVED; i++)
			uses_rbp |= st.saved[i].kind == K_AT && st.saved[i].base == DW_RBP;
		if (uses_rbp && !(known & (1u << S_RBP)))
			goto fail;
		uint64_t rbp = r.saved[S_RBP];
		uint64_t cfa = (st.cfa_reg == DW_RBP ? rbp : sp) + (uint64_t)st.cfa_off;
		if (st.cfa_deref && load(c, cfa, &cfa) != 0)
			goto fail;
		if (!st.signal && (cfa <= sp || cfa - sp > MAX_FRAME))
			goto fail;
		uint64_t next;
		if (load(c, rule_addr(&st.ra, cfa, sp, rbp), &next) != 0)
			goto fail;
		for (int i = 0; i < NSAVED; i++) {
			if (st.saved[i].kind == K_OFFSET || st.saved[i].kind == K_AT) {
				if (load(c, rule_addr(&st.saved[i], cfa, sp, rbp), &r.saved[i]) != 0)
					goto fail;
				known |= (uint8_t)(1u << i);
			} else if (st.saved[i].kind != K_SAME) {
				known &= (uint8_t)~(1u << i);
			}
		}
		ip = next;
		sp = cfa;
		exact = st.signal;
		if (ip == 0)
			goto fail;
		int caller_of_after = in_after, in_self = nskip > 0 && ip >= skip[0][0] && ip < skip[0][1];
		/* ip - 1: exit's call of its handlers, which never return, is its last instruction; a
		 * frame of skip[0] (tprof's exit hook, which calls exit for the program) passes it on */
		in_after = (after[1] && ip - 1 >= after[0] && ip - 1 < after[1]) || (caller_of_after && in_self);
		int skipped = 0;
		for (int k = 0; k < nskip && !skipped; k++)
			skipped = ip >= skip[k][0] && ip < skip[k][1];
		if (skipped && caller_of_after && !in_self && !have_cand && known == (1u << NSAVED) - 1) {
			have_cand = 1; /* exit's caller, the C library's: the answer unless _start is next */
			cand_sp = sp;
			for (int i = 0; i < NSAVED; i++)
				cand_regs[i] = r.saved[i];
		}
		if (skipped)
			continue;
		if (known != (1u << NSAVED) - 1)
			goto fail;
		if (have_cand && !(entry && ip >= entry && ip - entry < 64))
			goto fail; /* not a return from main: exit's caller */
		*sp_out = sp;
		for (int i = 0; i < NSAVED; i++)
			regs[i] = r.saved[i];
		return 0;
	}
fail:
	if (!have_cand)
		return -1;
	*sp_out = cand_sp;
	for (int i = 0; i < NSAVED; i++)
		regs[i] = cand_regs[i];
	return 0;
}

#else /* no walk of our own elsewhere: captures use libunwind (stacks.c); the exit scan takes whole stacks */

void tprof_unwind_forget_code(void) {}
void tprof_unwind_new_thread(void) {}
int tprof_unwind_here(void **buf, int cap)
{
	(void)buf;
	(void)cap;
	return -1;
}
int tprof_unwind_outer_frame(const uintptr_t (*skip)[2], int nskip, const uintptr_t after[2], uintptr_t entry,
			     uint64_t *sp_out, uint64_t regs[6])
{
	(void)skip;
	(void)nskip;
	(void)after;
	(void)entry;
	(void)sp_out;
	(void)regs;
	return -1;
}

#endif
