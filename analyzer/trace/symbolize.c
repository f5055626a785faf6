/* Implementation of trace/symbolize.h on top of libdwfl (elfutils).
 *
 * Every distinct ELF file (path plus recorded build-id) gets its own Dwfl session, opened on first
 * use and reported at bias 0, so all lookups are by ELF virtual address: a library unloaded and
 * loaded again elsewhere shares one session and one cache, and modules whose runtime ranges overlap
 * (address reuse after dlclose) never meet inside libdwfl.
 *
 * libdw's dwarf_getscopes walks a whole compilation unit per address once inlining is involved
 * (about 10 ms per address in a unit that includes <regex>), so each unit is indexed once instead:
 * the code ranges of its functions, sorted, and the namespaces and classes around every function
 * declaration (for qualified names). A lookup is then a binary search plus a walk down the blocks
 * and inlined instances of one function. Results are cached per (file, virtual address), and kept
 * on disk between runs (trace/symcache.h, read before libdw is asked anything of a file: libdw is
 * loaded, and a file opened with it, only for an address the cache does not hold); every string is
 * interned, so the frames handed out stay valid until sym_free. C++ names are demangled with
 * libstdc++'s __cxa_demangle. */
#include "trace/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uthash.h>

#include "base/dwlib.h"
#include "base/util.h"
#include "trace/symcache.h"

/* uint64 -> uint64 (uthash); the keys are addresses of mapped debug data. */
struct u64ent {
	uint64_t key, val;
	UT_hash_handle hh;
};
struct u64map {
	struct u64ent *head;
};

/* The code of one function: [lo, hi) in DWARF addresses. */
struct unit_fn {
	uint64_t lo, hi;
	Dwarf_Die die;
};

/* A namespace, class, struct, union or function, and the index of the one around it (-1: none). */
struct unit_scope {
	Dwarf_Die die;
	int32_t parent;
};

/* What one compilation (or partial) unit holds that lookups need; built on first use. */
struct unit_index {
	struct unit_fn *fns; /* sorted by lo */
	uint64_t *max_hi;    /* max_hi[i]: the largest hi among fns[0..i] */
	size_t nfns, fns_cap;
	struct unit_scope *scopes;
	size_t nscopes, scopes_cap;
	struct u64map subprograms; /* DW_TAG_subprogram DIE address -> index in scopes */
	int cxx;
};

struct sym_file {
	char *path;       /* what is opened: the recorded path, or exe for the main program */
	const char *name; /* interned basename of path */
	uint8_t build_id[64];
	size_t build_id_len;
	int tried; /* 1 once opening was attempted */
	enum tprof_sym_status status; /* from then on; OK may still become MISSING or MISMATCH when
				       * libdw opens a file known from the cache (cached) */
	Dwfl *dwfl; /* non-NULL when status is OK and libdw opened the file */
	Dwfl_Module *mod;
	int loaded;      /* 1 once its symbols and debug information were asked for (load_info) */
	int from_cache;  /* its persistent cache was read */
	uint32_t fresh;  /* addresses resolved through libdw since: the cache is to be written */
	struct symcache_sig sig;  /* the debug file the entries come from */
	struct symcache_sig main; /* the file itself, as opened */
};

struct sym_mod {
	uint64_t base, start, end, load_seq, unload_seq;
	uint32_t file; /* index in files */
};

/* A looked-up address and its frames (uthash, keyed by vaddr and file together). */
struct cache_key {
	uint64_t vaddr; /* return address - 1 - base */
	uint64_t file;
};
struct cache_ent {
	struct cache_key k;
	uint32_t first, n; /* frames[first .. first + n) */
	UT_hash_handle hh;
};

/* An interned string (uthash, keyed by its bytes). */
struct str_ent {
	UT_hash_handle hh;
	char s[];
};

struct tprof_symbolizer {
	struct sym_mod *mods; /* sorted by start */
	uint64_t *max_end;    /* max_end[i]: the largest end among mods[0..i] */
	size_t nmods;
	struct sym_file *files;
	size_t nfiles;

	struct cache_ent *cache;
	struct tprof_sym_frame *frames;
	size_t nframes, frames_cap;

	struct str_ent *strs; /* interned strings */
	struct u64map names; /* C++ function DIE address -> its interned qualified name */
	struct u64map units; /* unit DIE address -> struct unit_index * */

	size_t lookups; /* addresses that went to libdw, i.e. cache misses */
	Dwfl_Callbacks cb; /* every session keeps a pointer to it */
	char cache_dir[4096]; /* the persistent cache's directory; "" when it is off */
};

/* ---- interned strings */

static const char *intern(struct tprof_symbolizer *s, const char *str)
{
	if (!str)
		return NULL;
	struct str_ent *e;
	size_t len = strlen(str);
	HASH_FIND(hh, s->strs, str, len, e);
	if (e)
		return e->s;
	e = xmalloc(sizeof(*e) + len + 1);
	memcpy(e->s, str, len + 1);
	HASH_ADD_KEYPTR(hh, s->strs, e->s, len, e);
	return e->s;
}

/* Itanium-mangled names ("_Z...") are demangled; anything else, or a name the demangler rejects,
 * is kept as it is. */
static const char *intern_symbol(struct tprof_symbolizer *s, const char *name)
{
	if (!name || !*name)
		return NULL;
	if (name[0] == '_' && name[1] == 'Z') {
		int status = -1;
		char *d = tprof_dwlib.cxa_demangle ? tprof_dwlib.cxa_demangle(name, NULL, NULL, &status) : NULL;
		if (d && status == 0) {
			const char *r = intern(s, d);
			free(d);
			return r;
		}
		free(d);
	}
	return intern(s, name);
}

/* ---- u64map */

static void u64map_init(struct u64map *m)
{
	m->head = NULL;
}

static void u64map_free(struct u64map *m)
{
	struct u64ent *e, *tmp;
	HASH_ITER(hh, m->head, e, tmp) {
		HASH_DEL(m->head, e);
		free(e);
	}
}

static int u64map_get(const struct u64map *m, uint64_t key, uint64_t *val)
{
	struct u64ent *e;
	HASH_FIND(hh, m->head, &key, sizeof(key), e);
	if (e)
		*val = e->val;
	return e != NULL;
}

/* Inserts or replaces. */
static void u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
	struct u64ent *e;
	HASH_FIND(hh, m->head, &key, sizeof(key), e);
	if (!e) {
		e = xmalloc(sizeof(*e));
		e->key = key;
		HASH_ADD(hh, m->head, key, sizeof(e->key), e);
	}
	e->val = val;
}

/* ---- modules and files */

/* A module's file identity; sorting by it makes the modules of one file adjacent. */
struct file_key {
	const char *path;
	const uint8_t *id;
	size_t id_len;
	size_t mod;
};

static int cmp_file_key(const void *a, const void *b)
{
	const struct file_key *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	if (c)
		return c;
	if (x->id_len != y->id_len)
		return x->id_len < y->id_len ? -1 : 1;
	return memcmp(x->id, y->id, x->id_len);
}

static int cmp_mod(const void *a, const void *b)
{
	const struct sym_mod *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->load_seq != y->load_seq)
		return x->load_seq < y->load_seq ? -1 : 1;
	return 0;
}

struct tprof_symbolizer *sym_new(const struct tprof_module *modules, size_t n, const char *exe)
{
	struct tprof_symbolizer *s = xcalloc(1, sizeof(*s));
	u64map_init(&s->names);
	u64map_init(&s->units);
	if (symcache_dir(s->cache_dir, sizeof(s->cache_dir)) != 0)
		s->cache_dir[0] = 0;

	s->nmods = n;
	s->mods = xcalloc(n, sizeof(*s->mods));
	s->max_end = xcalloc(n, sizeof(*s->max_end));
	s->files = xcalloc(n, sizeof(*s->files));

	struct file_key *keys = xcalloc(n, sizeof(*keys));
	for (size_t i = 0; i < n; i++) {
		const struct tprof_module *m = &modules[i];
		const char *path = m->path && *m->path ? m->path : exe ? exe : "";
		keys[i] = (struct file_key){path, m->build_id,
					    m->build_id_len < sizeof(m->build_id) ? m->build_id_len
										  : sizeof(m->build_id),
					    i};
	}
	tprof_sort(keys, n, sizeof(*keys), cmp_file_key);
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || cmp_file_key(&keys[i - 1], &keys[i]) != 0) {
			struct sym_file *f = &s->files[s->nfiles++];
			f->path = xstrndup(keys[i].path, strlen(keys[i].path));
			f->name = intern(s, tprof_base_name(f->path));
			memcpy(f->build_id, keys[i].id, keys[i].id_len);
			f->build_id_len = keys[i].id_len;
		}
		const struct tprof_module *m = &modules[keys[i].mod];
		s->mods[i] = (struct sym_mod){m->base, m->start, m->end, m->load_seq, m->unload_seq,
					      (uint32_t)(s->nfiles - 1)};
	}
	free(keys);

	tprof_sort(s->mods, n, sizeof(*s->mods), cmp_mod);
	for (size_t i = 0; i < n; i++)
		s->max_end[i] = i && s->max_end[i - 1] > s->mods[i].end ? s->max_end[i - 1] : s->mods[i].end;
	return s;
}

static void save_caches(struct tprof_symbolizer *s);

void sym_free(struct tprof_symbolizer *s)
{
	if (!s)
		return;
	save_caches(s);
	for (size_t i = 0; i < s->nfiles; i++) {
		if (s->files[i].dwfl)
			dwfl_end(s->files[i].dwfl);
		free(s->files[i].path);
	}
	struct str_ent *se, *stmp;
	HASH_ITER(hh, s->strs, se, stmp) {
		HASH_DEL(s->strs, se);
		free(se);
	}
	u64map_free(&s->names);
	struct u64ent *ue, *utmp;
	HASH_ITER(hh, s->units.head, ue, utmp) {
		struct unit_index *u = (struct unit_index *)(uintptr_t)ue->val;
		free(u->fns);
		free(u->max_hi);
		free(u->scopes);
		u64map_free(&u->subprograms);
		free(u);
	}
	u64map_free(&s->units);
	free(s->files);
	free(s->mods);
	free(s->max_end);
	struct cache_ent *ce, *ctmp;
	HASH_ITER(hh, s->cache, ce, ctmp) {
		HASH_DEL(s->cache, ce);
		free(ce);
	}
	free(s->frames);
	free(s);
}

/* The module covering pc (a runtime address) that was loaded at seq; failing that, the
 * latest-loaded module covering pc; NULL when none does. Starts are sorted and max_end is their
 * running maximum, so the scan walks back only over modules that could still reach pc. */
static const struct sym_mod *find_mod(const struct tprof_symbolizer *s, uint64_t pc, uint64_t seq)
{
	size_t lo = 0, hi = s->nmods;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->mods[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct sym_mod *live = NULL, *latest = NULL;
	for (size_t i = lo; i-- > 0 && s->max_end[i] > pc;) {
		const struct sym_mod *m = &s->mods[i];
		if (pc >= m->end)
			continue;
		if (m->load_seq <= seq && seq < m->unload_seq && (!live || m->load_seq > live->load_seq))
			live = m;
		if (!latest || m->load_seq > latest->load_seq)
			latest = m;
	}
	return live ? live : latest;
}

const char *sym_module_path(const struct tprof_symbolizer *s, uint64_t addr, uint64_t seq)
{
	const struct sym_mod *m = addr ? find_mod(s, addr - 1, seq) : NULL;
	return m ? s->files[m->file].path : NULL;
}

static void push_frame(struct tprof_symbolizer *s, const char *function, const char *file, int line,
		       int inlined)
{
	if (s->nframes == s->frames_cap) {
		s->frames_cap = s->frames_cap ? s->frames_cap * 2 : 256;
		s->frames = xrealloc(s->frames, s->frames_cap * sizeof(*s->frames));
	}
	s->frames[s->nframes++] = (struct tprof_sym_frame){function, file, line, NULL, 0, inlined};
}

/* Asks libdw for f's symbol tables and DWARF, in itself or in a separate debug file (the costly
 * step: a separate debug file's sections are inflated whole); none of either makes f NO_INFO.
 * Notes which debug file was used, for the persistent cache. */
static void load_info(struct sym_file *f)
{
	f->loaded = 1;
	Dwarf_Addr bias;
	int syms = dwfl_module_getsymtab(f->mod);
	Dwarf *dw = dwfl_module_getdwarf(f->mod, &bias); /* lookups need it anyway; so does the cache */
	if (syms <= 0 && !dw) {
		f->status = TPROF_SYM_NO_INFO; /* nothing to name anything with: module+offset */
		dwfl_end(f->dwfl);
		f->dwfl = NULL;
		f->mod = NULL;
		return;
	}
	const char *debugfile = NULL;
	dwfl_module_info(f->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
	symcache_sig_of(&f->sig, debugfile);
}

static struct cache_ent *cache_add(struct tprof_symbolizer *s, uint32_t file, uint64_t vaddr, uint32_t first,
				   uint32_t n)
{
	struct cache_ent *e = xcalloc(1, sizeof(*e));
	e->k = (struct cache_key){vaddr, file};
	e->first = first;
	e->n = n;
	HASH_ADD(hh, s->cache, k, sizeof(e->k), e);
	return e;
}

struct cache_load {
	struct tprof_symbolizer *s;
	uint32_t file;
};

/* One entry of a persistent cache file into the in-memory cache. */
static void cache_load_entry(void *ctx, uint64_t vaddr, const struct symcache_frame *fr, uint32_t n)
{
	struct cache_load *c = ctx;
	struct tprof_symbolizer *s = c->s;
	struct cache_key k = {vaddr, c->file};
	struct cache_ent *e;
	HASH_FIND(hh, s->cache, &k, sizeof(k), e);
	if (e)
		return;
	uint32_t first = (uint32_t)s->nframes;
	for (uint32_t i = 0; i < n; i++) {
		push_frame(s, intern(s, fr[i].function), intern(s, fr[i].file), fr[i].line, fr[i].inlined);
		s->frames[s->nframes - 1].module = s->files[c->file].name;
		s->frames[s->nframes - 1].offset = vaddr + 1;
	}
	cache_add(s, c->file, vaddr, first, n);
}

/* The regular file at path, opened for reading into *st: its descriptor, or -1. A path in a trace
 * may name a FIFO or a device (another user may have put one there since): it is looked at first
 * through an O_PATH descriptor, which opens nothing (opening some devices acts: a watchdog, a tape
 * that rewinds, a new pseudo-terminal), and only a regular file is opened for reading, through
 * that descriptor (/proc/self/fd), so that the path cannot change in between; without /proc, by
 * its path again, O_NONBLOCK (a FIFO must not hang us). Only a regular file is read. */
static int open_regular(const char *path, struct stat *st)
{
	int at = open(path, O_PATH | O_CLOEXEC);
	if (at < 0)
		return -1;
	if (fstat(at, st) != 0 || !S_ISREG(st->st_mode)) {
		close(at);
		return -1;
	}
	char via[64];
	snprintf(via, sizeof(via), "/proc/self/fd/%d", at);
	int fd = open(via, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT)
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	close(at);
	if (fd >= 0 && (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))) {
		close(fd);
		fd = -1;
	}
	return fd;
}

/* Opens f with libdw, through fd (which it takes): 0 with f's status OK, or -1 with its status
 * said (NO_INFO, or MISMATCH: its build-id is not the recorded one) and f without a session.
 * libdw itself is loaded by the first file that needs it; without it every file is NO_INFO,
 * which is said once. */
static int open_dwfl(struct tprof_symbolizer *s, struct sym_file *f, int fd)
{
	f->status = TPROF_SYM_NO_INFO;
	const char *why;
	if (tprof_dwlib_load(&why) != 0) {
		static int said;
		if (!said++)
			tprof_warn("cannot name functions: %s", why);
		close(fd);
		return -1;
	}
	if (!s->cb.find_elf) {
		s->cb.find_elf = dwfl_build_id_find_elf;
		s->cb.find_debuginfo = dwfl_standard_find_debuginfo;
		s->cb.section_address = dwfl_offline_section_address;
	}
	f->dwfl = dwfl_begin(&s->cb);
	if (!f->dwfl) {
		close(fd);
		return -1;
	}
	dwfl_report_begin(f->dwfl);
	/* Base 0 with add_p_vaddr: the module sits at its ELF virtual addresses (bias 0). libdwfl
	 * takes the descriptor when it succeeds. */
	f->mod = dwfl_report_elf(f->dwfl, f->name, f->path, fd, 0, true);
	if (!f->mod)
		close(fd);
	if (dwfl_report_end(f->dwfl, NULL, NULL) != 0 || !f->mod)
		goto unusable;
	if (f->build_id_len) {
		const unsigned char *bits = NULL;
		GElf_Addr vaddr;
		int len = dwfl_module_build_id(f->mod, &bits, &vaddr);
		if (len != (int)f->build_id_len || memcmp(bits, f->build_id, f->build_id_len) != 0) {
			f->status = TPROF_SYM_MISMATCH;
			goto unusable;
		}
	}
	f->status = TPROF_SYM_OK;
	return 0;
unusable:
	dwfl_end(f->dwfl);
	f->dwfl = NULL;
	f->mod = NULL;
	return -1;
}

/* Opens f once: a file that cannot be opened is MISSING. Its persistent cache, when there is a
 * valid one (the file the cache was written for, by its path, size, time and inode, and the
 * recorded build-id, which libdw checked when it wrote it), holds what is known of it, and libdw is
 * not asked (cached() opens it for an address the cache does not hold). Otherwise libdw opens it:
 * one whose build-id is not the recorded one (when one was recorded) is MISMATCH, and load_info
 * asks for its symbols and DWARF (which may make it NO_INFO). */
static void open_file(struct tprof_symbolizer *s, struct sym_file *f)
{
	f->tried = 1;
	struct stat st;
	int fd = open_regular(f->path, &st);
	if (fd < 0) {
		f->status = TPROF_SYM_MISSING;
		return;
	}
	if (f->build_id_len && strlen(f->path) < sizeof(f->main.path)) {
		memcpy(f->main.path, f->path, strlen(f->path) + 1);
		f->main.size = (uint64_t)st.st_size;
		f->main.mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
		f->main.ino = (uint64_t)st.st_ino;
		struct symcache_head h;
		struct cache_load c = {s, (uint32_t)(f - s->files)};
		if (s->cache_dir[0] && symcache_load(s->cache_dir, f->build_id, f->build_id_len, &f->main, &h,
						     cache_load_entry, &c) == 0) {
			close(fd);
			f->from_cache = 1;
			f->sig = h.sig;
			f->status = (enum tprof_sym_status)h.status;
			return;
		}
	}
	if (open_dwfl(s, f, fd) == 0)
		load_info(f);
}

/* Writes the persistent cache of every file that libdw answered something new for (or found
 * nothing in): all its entries, those read from the cache included. */
static void save_caches(struct tprof_symbolizer *s)
{
	if (!s->cache_dir[0])
		return;
	for (size_t i = 0; i < s->nfiles; i++) {
		struct sym_file *f = &s->files[i];
		int no_info = f->loaded && f->status == TPROF_SYM_NO_INFO && !f->from_cache;
		if (!f->build_id_len || !f->main.path[0] || !(f->fresh || no_info))
			continue;
		struct symcache_head h = {.status = no_info ? TPROF_SYM_NO_INFO : TPROF_SYM_OK, .sig = f->sig,
					  .main = f->main};
		struct symcache_out *o = symcache_out_new(&h, f->build_id, f->build_id_len);
		struct cache_ent *e, *tmp;
		struct symcache_frame fr[64];
		HASH_ITER(hh, s->cache, e, tmp) {
			if (e->k.file != i || no_info)
				continue;
			if (e->n > sizeof(fr) / sizeof(fr[0]))
				continue; /* deeper inlining than that is looked up again next time */
			for (uint32_t k = 0; k < e->n; k++) {
				const struct tprof_sym_frame *x = &s->frames[e->first + k];
				fr[k] = (struct symcache_frame){x->function, x->file, x->line, (uint8_t)x->inlined};
			}
			symcache_out_add(o, e->k.vaddr, fr, e->n);
		}
		symcache_out_write(o, s->cache_dir);
	}
}

/* ---- lookups */


/* ---- unit index */

static int is_cxx_lang(int lang)
{
	switch (lang) {
	case DW_LANG_C_plus_plus:
	case DW_LANG_C_plus_plus_03:
	case DW_LANG_C_plus_plus_11:
	case DW_LANG_C_plus_plus_14:
		return 1;
	}
	return 0;
}

static int32_t add_scope(struct unit_index *u, Dwarf_Die *die, int32_t parent)
{
	if (u->nscopes == u->scopes_cap) {
		u->scopes_cap = u->scopes_cap ? u->scopes_cap * 2 : 64;
		u->scopes = xrealloc(u->scopes, u->scopes_cap * sizeof(*u->scopes));
	}
	u->scopes[u->nscopes] = (struct unit_scope){*die, parent};
	return (int32_t)u->nscopes++;
}

static void add_fn_ranges(struct unit_index *u, Dwarf_Die *die)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off = 0;
	while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (u->nfns == u->fns_cap) {
			u->fns_cap = u->fns_cap ? u->fns_cap * 2 : 64;
			u->fns = xrealloc(u->fns, u->fns_cap * sizeof(*u->fns));
		}
		u->fns[u->nfns++] = (struct unit_fn){lo, hi, *die};
	}
}

/* Records the functions under die, and the scopes that can own functions: namespaces and classes
 * (member declarations, and clang's nested definitions), functions (local classes, lambdas, GNU C
 * nested functions) and the blocks inside them. Depth-limited against malformed input. */
static void index_children(struct unit_index *u, Dwarf_Die *die, int32_t parent, int depth)
{
	Dwarf_Die child;
	if (depth > 64 || dwarf_child(die, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram: {
			int32_t k = add_scope(u, &child, parent);
			u64map_put(&u->subprograms, (uint64_t)(uintptr_t)child.addr, (uint64_t)k);
			add_fn_ranges(u, &child);
			index_children(u, &child, k, depth + 1);
			break;
		}
		case DW_TAG_namespace:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (u->cxx)
				index_children(u, &child, add_scope(u, &child, parent), depth + 1);
			break;
		case DW_TAG_lexical_block:
			index_children(u, &child, parent, depth + 1);
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int cmp_fn(const void *a, const void *b)
{
	const struct unit_fn *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->hi > y->hi ? -1 : x->hi < y->hi; /* outer first, so the inner one is found first */
}

static struct unit_index *unit_of(struct tprof_symbolizer *s, Dwarf_Die *unit)
{
	uint64_t key = (uint64_t)(uintptr_t)unit->addr, v;
	if (u64map_get(&s->units, key, &v))
		return (struct unit_index *)(uintptr_t)v;
	struct unit_index *u = xcalloc(1, sizeof(*u));
	u64map_init(&u->subprograms);
	u->cxx = is_cxx_lang(dwarf_srclang(unit));
	index_children(u, unit, -1, 0);
	tprof_sort(u->fns, u->nfns, sizeof(*u->fns), cmp_fn);
	u->max_hi = xcalloc(u->nfns, sizeof(*u->max_hi));
	for (size_t i = 0; i < u->nfns; i++)
		u->max_hi[i] = i && u->max_hi[i - 1] > u->fns[i].hi ? u->max_hi[i - 1] : u->fns[i].hi;
	u64map_put(&s->units, key, (uint64_t)(uintptr_t)u);
	return u;
}

/* The innermost function whose code contains pc (a DWARF address); NULL when none does. */
static Dwarf_Die *fn_at(struct unit_index *u, uint64_t pc)
{
	size_t lo = 0, hi = u->nfns;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (u->fns[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && u->max_hi[i] > pc;)
		if (pc < u->fns[i].hi)
			return &u->fns[i].die;
	return NULL;
}

/* ---- function names from DWARF */

/* The mangled name; the _integrate lookup follows DW_AT_abstract_origin and DW_AT_specification. */
static const char *linkage_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	return name;
}

static void append(char **buf, size_t *len, size_t *cap, const char *str)
{
	size_t n = strlen(str);
	while (*len + n + 1 > *cap) {
		*cap *= 2;
		*buf = xrealloc(*buf, *cap);
	}
	memcpy(*buf + *len, str, n + 1);
	*len += n;
}

/* DW_AT_name, and in C++ prefixed with the enclosing namespaces, classes and functions
 * ("ns::Widget::poke", "(anonymous namespace)::helper"). GCC gives functions with internal linkage
 * no linkage name, so this is how inlined static C++ functions are named. Cached per function. */
static const char *qualified_name(struct tprof_symbolizer *s, Dwarf_Die *die)
{
	/* to the declaration, where the name is and whose parents are the scopes */
	Dwarf_Die decl = *die, next, unit;
	Dwarf_Attribute attr;
	for (int hops = 0; hops < 16; hops++) {
		if (!dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &attr), &next) &&
		    !dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &attr), &next))
			break;
		decl = next;
	}
	const char *name = dwarf_diename(&decl);
	if (!name)
		return NULL;
	if (!dwarf_diecu(&decl, &unit, NULL, NULL))
		return intern(s, name);
	struct unit_index *u = unit_of(s, &unit);
	uint64_t key = (uint64_t)(uintptr_t)decl.addr, v;
	if (!u->cxx || !u64map_get(&u->subprograms, key, &v))
		return intern(s, name);
	if (u64map_get(&s->names, key, &v))
		return (const char *)(uintptr_t)v;

	const char *parts[64];
	int n = 0;
	for (int32_t k = u->scopes[v].parent; k >= 0 && n < 64; k = u->scopes[k].parent) {
		const char *part = dwarf_diename(&u->scopes[k].die);
		if (!part)
			part = dwarf_tag(&u->scopes[k].die) == DW_TAG_namespace ? "(anonymous namespace)"
										: "(anonymous)";
		parts[n++] = part;
	}
	size_t len = 0, cap = 128;
	char *buf = xmalloc(cap);
	buf[0] = '\0';
	while (n-- > 0) {
		append(&buf, &len, &cap, parts[n]);
		append(&buf, &len, &cap, "::");
	}
	append(&buf, &len, &cap, name);
	const char *q = intern(s, buf);
	free(buf);
	u64map_put(&s->names, key, (uint64_t)(uintptr_t)q);
	return q;
}

/* The symbol-table name covering pc, when it is a mangled one; any clone suffix (".cold",
 * ".constprop.0") is cut, since the DWARF function it stands for is the whole function. */
static const char *mangled_symbol(struct tprof_symbolizer *s, Dwfl_Module *mod, uint64_t pc)
{
	GElf_Off off;
	GElf_Sym sym;
	const char *name = dwfl_module_addrinfo(mod, pc, &off, &sym, NULL, NULL, NULL);
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	char *cut = xstrndup(name, strcspn(name, "."));
	const char *r = intern_symbol(s, cut);
	free(cut);
	return r;
}

/* The name of a function (real = 1, pc in its own code) or of an inlined instance: the demangled
 * linkage name when there is one, as it carries scope and parameters. Lacking one, a C++
 * function's own code is named from the symbol table the same way; an inlined instance gets its
 * qualified DW_AT_name. */
static const char *die_name(struct tprof_symbolizer *s, Dwarf_Die *die, Dwfl_Module *mod, uint64_t pc,
			    int real, int cxx)
{
	const char *name = linkage_name(die);
	if (name)
		return intern_symbol(s, name);
	if (real && cxx && (name = mangled_symbol(s, mod, pc)))
		return name;
	return qualified_name(s, die);
}

/* Where an inlined instance was called from: its DW_AT_call_file and DW_AT_call_line, the file
 * index being one of its own unit's line table. */
static void call_site(struct tprof_symbolizer *s, Dwarf_Die *die, const char **file, int *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;
	Dwarf_Die cu;
	Dwarf_Files *files;
	*file = NULL;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr), &v) == 0 &&
	    dwarf_diecu(die, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, NULL) == 0)
		*file = intern(s, dwarf_filesrc(files, v, NULL, NULL));
	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &attr), &v) == 0 && v <= INT32_MAX)
		*line = (int)v;
}

/* Pushes the frames for pc (vaddr in the module, dpc in DWARF addresses) from the debug info: one
 * per inlined instance around it, innermost first, then the function, each with the source
 * position inside it. Always pushes at least the last frame, whose function may be NULL when no
 * DWARF function covers pc (assembly, for one). */
static void dwarf_frames(struct tprof_symbolizer *s, Dwfl_Module *mod, Dwarf_Die *cudie, uint64_t vaddr,
			 uint64_t dpc)
{
	const char *file = NULL;
	int line = 0;
	Dwfl_Line *l = dwfl_module_getsrc(mod, vaddr);
	if (l) {
		const char *src = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
		file = intern(s, src);
		if (!src)
			line = 0;
	}
	struct unit_index *u = unit_of(s, cudie);
	Dwarf_Die *fn = fn_at(u, dpc);
	if (!fn) {
		push_frame(s, NULL, file, line, 0);
		return;
	}

	/* down from the function through the blocks and inlined instances that contain pc */
	Dwarf_Die chain[64], child;
	int n = 0;
	chain[n++] = *fn;
	while (n < 64 && dwarf_child(&chain[n - 1], &child) == 0) {
		int found = 0;
		do {
			int tag = dwarf_tag(&child);
			if ((tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
			     tag == DW_TAG_try_block || tag == DW_TAG_catch_block) &&
			    dwarf_haspc(&child, dpc) > 0) {
				chain[n++] = child;
				found = 1;
				break;
			}
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}
	for (int i = n - 1; i > 0; i--) {
		if (dwarf_tag(&chain[i]) != DW_TAG_inlined_subroutine)
			continue;
		push_frame(s, die_name(s, &chain[i], mod, vaddr, 0, u->cxx), file, line, 1);
		call_site(s, &chain[i], &file, &line);
	}
	push_frame(s, die_name(s, fn, mod, vaddr, 1, u->cxx), file, line, 0);
}

/* Resolves vaddr in f (usable) into new frames at the end of s->frames; returns how many. */
static uint32_t lookup(struct tprof_symbolizer *s, struct sym_file *f, uint64_t vaddr)
{
	size_t first = s->nframes;
	s->lookups++;
	Dwarf_Addr bias = 0;
	Dwarf_Die *cudie = dwfl_module_addrdie(f->mod, vaddr, &bias);
	if (cudie)
		dwarf_frames(s, f->mod, cudie, vaddr, vaddr - bias);
	else
		push_frame(s, NULL, NULL, 0, 0);
	struct tprof_sym_frame *real = &s->frames[s->nframes - 1];
	if (!real->function) {
		GElf_Off off;
		GElf_Sym sym;
		real->function = intern_symbol(s, dwfl_module_addrinfo(f->mod, vaddr, &off, &sym, NULL, NULL,
									 NULL));
	}
	for (size_t i = first; i < s->nframes; i++) {
		s->frames[i].module = f->name;
		s->frames[i].offset = vaddr + 1;
	}
	return (uint32_t)(s->nframes - first);
}

static const struct cache_ent *cached(struct tprof_symbolizer *s, uint32_t file, uint64_t vaddr)
{
	struct cache_key k = {vaddr, file};
	struct cache_ent *e;
	HASH_FIND(hh, s->cache, &k, sizeof(k), e);
	if (e)
		return e;
	struct sym_file *f = &s->files[file];
	if (!f->dwfl && f->status == TPROF_SYM_OK) { /* known from the cache until now */
		struct stat st;
		int fd = open_regular(f->path, &st);
		if (fd < 0 || (uint64_t)st.st_ino != f->main.ino || (uint64_t)st.st_size != f->main.size) {
			if (fd >= 0)
				close(fd);
			f->status = TPROF_SYM_MISSING; /* gone, or another file since the cache was read */
			return NULL;
		}
		if (open_dwfl(s, f, fd) != 0)
			return NULL;
	}
	if (!f->loaded)
		load_info(f);
	if (f->status != TPROF_SYM_OK)
		return NULL;
	uint32_t first = (uint32_t)s->nframes;
	uint32_t n = lookup(s, f, vaddr);
	f->fresh++;
	return cache_add(s, file, vaddr, first, n);
}

size_t sym_resolve(struct tprof_symbolizer *s, uint64_t addr, uint64_t seq, struct tprof_sym_frame *out,
		   size_t max)
{
	if (max == 0)
		return 0;
	uint64_t pc = addr - 1;
	const struct sym_mod *m = addr ? find_mod(s, pc, seq) : NULL;
	if (!m) {
		out[0] = (struct tprof_sym_frame){.offset = addr};
		return 1;
	}
	struct sym_file *f = &s->files[m->file];
	uint64_t vaddr = pc - m->base;
	if (!f->tried)
		open_file(s, f);
	if (f->status != TPROF_SYM_OK) {
		out[0] = (struct tprof_sym_frame){.module = f->name, .offset = vaddr + 1};
		return 1;
	}
	const struct cache_ent *e = cached(s, m->file, vaddr);
	if (!e) { /* libdw found neither symbols nor DWARF after all */
		out[0] = (struct tprof_sym_frame){.module = f->name, .offset = vaddr + 1};
		return 1;
	}
	const struct tprof_sym_frame *fr = &s->frames[e->first];
	if (e->n <= max) {
		memcpy(out, fr, e->n * sizeof(*out));
		return e->n;
	}
	/* Too many inlined levels: drop the outer inlined ones, keep the real function last. */
	memcpy(out, fr, (max - 1) * sizeof(*out));
	out[max - 1] = fr[e->n - 1];
	return max;
}

void sym_problems(struct tprof_symbolizer *s,
		  void (*fn)(void *ctx, const char *path, enum tprof_sym_status st), void *ctx)
{
	for (size_t i = 0; i < s->nfiles; i++) {
		const struct sym_file *f = &s->files[i];
		if (!f->tried || f->status == TPROF_SYM_OK)
			continue;
		/* files are sorted by path: one call per path and status */
		int seen = 0;
		for (size_t j = i; j > 0 && strcmp(s->files[j - 1].path, f->path) == 0; j--)
			if (s->files[j - 1].tried && s->files[j - 1].status == f->status)
				seen = 1;
		if (seen)
			continue;
		fn(ctx, f->path, f->status);
	}
}

size_t sym_lookups(const struct tprof_symbolizer *s)
{
	return s->lookups;
}
