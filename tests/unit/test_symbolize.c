/* Unit tests of the symbolizer in analyzer/trace/symbolize.c, on this very process: its modules come from
 * dl_iterate_phdr (build-ids from PT_NOTE), and return addresses are taken at lines known through
 * __LINE__. Checks function, file and line; an inlined frame (this file is built -O2 -g); C++
 * names (fixtures of mk/symbolize.mk) demangled from DWARF linkage names, from the symbol table for
 * internal-linkage functions and from .dynsym in a stripped copy, and qualified DW_AT_names for
 * inlined ones; a separate debug file found through .gnu_debuglink; module+offset for a stripped
 * local function; build-id mismatch; missing, truncated and non-ELF files; choosing among
 * overlapping modules by sequence number; the cache, and the cache kept on disk (TPROF_SYMBOL_CACHE):
 * the same frames from it without libdw, and a damaged or stale one ignored. */
#include <dirent.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <libgen.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>

#include <stdlib.h>
#include <string.h>

#include "trace/symbolize.h"
#include "trace/symcache.h"
#include "base/util.h"
#include "../unittest.h"

/* ---- return addresses at known lines */

static volatile uintptr_t vzero;

/* The address its caller will return to; the volatile read keeps it a real call. */
static __attribute__((noinline, noclone)) uintptr_t grab(void)
{
	return (uintptr_t)__builtin_return_address(0) + vzero;
}

/* The empty asm after each call keeps it from becoming a tail call. */
static __attribute__((noinline, noclone)) uintptr_t caller_known(int *line)
{
	*line = __LINE__ + 1;
	uintptr_t r = grab();
	__asm__ volatile("" ::: "memory");
	return r;
}

static inline __attribute__((always_inline)) uintptr_t inl_helper(int *line)
{
	*line = __LINE__ + 1;
	uintptr_t r = grab();
	__asm__ volatile("" ::: "memory");
	return r;
}

static __attribute__((noinline, noclone)) uintptr_t inl_outer(int *line_inl, int *line_outer)
{
	*line_outer = __LINE__ + 1;
	uintptr_t r = inl_helper(line_inl);
	__asm__ volatile("" ::: "memory");
	return r;
}

/* ---- this process's modules */

#define MAX_MODS 64

struct mods {
	struct tprof_module m[MAX_MODS];
	size_t n;
};

static void read_build_id(struct tprof_module *m, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	while (end - p >= (ptrdiff_t)sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
		size_t name = (nh->n_namesz + 3) & ~(size_t)3, desc = (nh->n_descsz + 3) & ~(size_t)3;
		const uint8_t *d = p + sizeof(*nh) + name;
		if (d + desc > end)
			return;
		if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(p + sizeof(*nh), "GNU", 4) == 0 &&
		    nh->n_descsz <= sizeof(m->build_id)) {
			memcpy(m->build_id, d, nh->n_descsz);
			m->build_id_len = nh->n_descsz;
			return;
		}
		p = d + desc;
	}
}

static int add_module(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	struct mods *ms = ctx;
	if (ms->n == MAX_MODS)
		return 1;
	struct tprof_module *m = &ms->m[ms->n++];
	memset(m, 0, sizeof(*m));
	m->path = info->dlpi_name;
	m->base = info->dlpi_addr;
	m->start = UINT64_MAX;
	m->unload_seq = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD) {
			if (lo < m->start)
				m->start = lo;
			if (lo + ph->p_memsz > m->end)
				m->end = lo + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && !m->build_id_len) {
			read_build_id(m, (const uint8_t *)(uintptr_t)lo, ph->p_memsz);
		}
	}
	if (m->start > m->end)
		m->start = m->end = 0;
	return 0;
}

static struct mods self_mods;
static char exe[PATH_MAX];
static char fixtures[PATH_MAX]; /* $(BUILD)/fixtures/symbolize */

static void load_self(void)
{
	self_mods.n = 0;
	dl_iterate_phdr(add_module, &self_mods);
}

/* The module of this process that covers addr. */
static const struct tprof_module *mod_of(uintptr_t addr)
{
	for (size_t i = 0; i < self_mods.n; i++)
		if (self_mods.m[i].start <= addr && addr < self_mods.m[i].end)
			return &self_mods.m[i];
	return NULL;
}

static const char *base_of(const char *path)
{
	return path ? tprof_base_name(path) : NULL;
}

/* ---- sym_problems collection */

struct problem {
	char path[PATH_MAX];
	enum tprof_sym_status st;
};

struct problems {
	struct problem p[16];
	int n;
};

static void on_problem(void *ctx, const char *path, enum tprof_sym_status st)
{
	struct problems *ps = ctx;
	if (ps->n < 16) {
		snprintf(ps->p[ps->n].path, sizeof(ps->p[ps->n].path), "%s", path);
		ps->p[ps->n++].st = st;
	}
}

static int has_problem(const struct problems *ps, const char *path, enum tprof_sym_status st)
{
	for (int i = 0; i < ps->n; i++)
		if (strcmp(ps->p[i].path, path) == 0 && ps->p[i].st == st)
			return 1;
	return 0;
}

/* ---- tests */

static void test_known_line(void)
{
	int line = 0;
	uintptr_t ra = caller_known(&line);
	const struct tprof_module *m = mod_of(ra);
	CHECK(m && m->path[0] == '\0'); /* the main program, named by exe */
	struct tprof_symbolizer *s = sym_new(self_mods.m, self_mods.n, exe);
	struct tprof_sym_frame f[8];
	size_t n = sym_resolve(s, ra, 1, f, 8);
	CHECK_EQ(n, 1);
	CHECK_STR(f[0].function, "caller_known");
	CHECK_STR(base_of(f[0].file), "test_symbolize.c");
	CHECK_EQ(f[0].line, line);
	CHECK_STR(f[0].module, tprof_base_name(exe));
	CHECK(m && f[0].offset == ra - m->base);
	CHECK_EQ(f[0].inlined, 0);
	struct problems ps = {0};
	sym_problems(s, on_problem, &ps);
	CHECK_EQ(ps.n, 0);
	sym_free(s);
}

static void test_inlined(void)
{
	int line_inl = 0, line_outer = 0;
	uintptr_t ra = inl_outer(&line_inl, &line_outer);
	struct tprof_symbolizer *s = sym_new(self_mods.m, self_mods.n, exe);
	struct tprof_sym_frame f[8];
	size_t n = sym_resolve(s, ra, 1, f, 8);
	CHECK_EQ(n, 2);
	CHECK_STR(f[0].function, "inl_helper");
	CHECK_STR(base_of(f[0].file), "test_symbolize.c");
	CHECK_EQ(f[0].line, line_inl);
	CHECK_EQ(f[0].inlined, 1);
	CHECK_STR(f[1].function, "inl_outer");
	CHECK_STR(base_of(f[1].file), "test_symbolize.c");
	CHECK_EQ(f[1].line, line_outer);
	CHECK_EQ(f[1].inlined, 0);
	CHECK(f[0].module == f[1].module && f[0].offset == f[1].offset);
	/* room for one frame: the real function, at the line where the inlined code sits in it */
	n = sym_resolve(s, ra, 1, f, 1);
	CHECK_EQ(n, 1);
	CHECK_STR(f[0].function, "inl_outer");
	CHECK_EQ(f[0].line, line_outer);
	CHECK_EQ(sym_resolve(s, ra, 1, f, 0), 0);
	sym_free(s);
}

/* The fixture's modules, with the one of libsymcxx.so answering to another path (path: PATH_MAX +
 * 64 bytes). */
static struct tprof_symbolizer *fixture_symbolizer(const char *lib, uintptr_t ra, char *path)
{
	static struct tprof_module m[MAX_MODS];
	memcpy(m, self_mods.m, sizeof(m));
	for (size_t i = 0; i < self_mods.n; i++)
		if (m[i].start <= ra && ra < m[i].end) {
			snprintf(path, PATH_MAX + 64, "%s/%s", fixtures, lib);
			m[i].path = path;
		}
	return sym_new(m, self_mods.n, exe);
}

static void *fixture_dl; /* libsymcxx.so, dlopen'ed */

static void test_cxx(void)
{
	void *dl = fixture_dl;
	uintptr_t (*where)(int *) = (uintptr_t(*)(int *))dlsym(dl, "tprof_fx_where");
	uintptr_t (*hidden)(int *) = (uintptr_t(*)(int *))dlsym(dl, "tprof_fx_hidden");
	uintptr_t (*anon)(int *) = (uintptr_t(*)(int *))dlsym(dl, "tprof_fx_anon");
	uintptr_t (*inlined)(int *, int *) = (uintptr_t(*)(int *, int *))dlsym(dl, "tprof_fx_inlined");
	CHECK(where && hidden && anon && inlined);
	if (!where || !hidden || !anon || !inlined)
		return;
	int line = 0, hline = 0, aline = 0, iline = 0, oline = 0;
	uintptr_t ra = where(&line), hra = hidden(&hline), ara = anon(&aline);
	uintptr_t ira = inlined(&iline, &oline);
	const struct tprof_module *m = mod_of(ra);
	CHECK(m && strcmp(base_of(m->path), "libsymcxx.so") == 0);
	if (!m)
		return;
	char path[PATH_MAX + 64];
	struct tprof_sym_frame f[8];
	struct problems ps = {0};

	/* with DWARF: demangled linkage name, source position */
	struct tprof_symbolizer *s = fixture_symbolizer("libsymcxx.so", ra, path);
	CHECK_EQ(sym_resolve(s, ra, 1, f, 8), 1);
	CHECK_STR(f[0].function, "tprof_fx::Widget::where(int*)");
	CHECK_STR(base_of(f[0].file), "cxx_fixture.cpp");
	CHECK_EQ(f[0].line, line);
	CHECK_STR(f[0].module, "libsymcxx.so");
	CHECK_EQ(sym_resolve(s, hra, 1, f, 8), 1);
	CHECK_STR(f[0].function, "hidden_worker(int*)");
	CHECK_EQ(f[0].line, hline);
	CHECK_EQ(sym_resolve(s, ara, 1, f, 8), 1);
	CHECK_STR(f[0].function, "(anonymous namespace)::Local::poke(int*)");
	CHECK_EQ(f[0].line, aline);
	CHECK_EQ(sym_resolve(s, ira, 1, f, 8), 2);
	CHECK_STR(f[0].function, "tprof_fx::inl");
	CHECK_EQ(f[0].line, iline);
	CHECK_EQ(f[0].inlined, 1);
	CHECK_STR(f[1].function, "tprof_fx_inlined");
	CHECK_EQ(f[1].line, oline);
	CHECK_EQ(f[1].inlined, 0);
	sym_free(s);

	/* stripped: the exported function is named from .dynsym, the local one is module+offset */
	s = fixture_symbolizer("libsymcxx-stripped.so", ra, path);
	CHECK_EQ(sym_resolve(s, ra, 1, f, 8), 1);
	CHECK_STR(f[0].function, "tprof_fx::Widget::where(int*)");
	CHECK(f[0].file == NULL);
	CHECK_EQ(f[0].line, 0);
	CHECK_STR(f[0].module, "libsymcxx-stripped.so");
	CHECK_EQ(sym_resolve(s, hra, 1, f, 8), 1);
	CHECK(f[0].function == NULL);
	CHECK(f[0].file == NULL);
	CHECK_STR(f[0].module, "libsymcxx-stripped.so");
	CHECK(f[0].offset == hra - m->base);
	sym_problems(s, on_problem, &ps);
	CHECK_EQ(ps.n, 0);
	sym_free(s);

	/* stripped, with .gnu_debuglink to a separate debug file */
	s = fixture_symbolizer("libsymcxx-linked.so", ra, path);
	CHECK_EQ(sym_resolve(s, ra, 1, f, 8), 1);
	CHECK_STR(f[0].function, "tprof_fx::Widget::where(int*)");
	CHECK_STR(base_of(f[0].file), "cxx_fixture.cpp");
	CHECK_EQ(f[0].line, line);
	CHECK_STR(f[0].module, "libsymcxx-linked.so");
	CHECK_EQ(sym_resolve(s, hra, 1, f, 8), 1);
	CHECK_STR(f[0].function, "hidden_worker(int*)"); /* from the debug file's .symtab */
	CHECK_EQ(f[0].line, hline);
	sym_free(s);
}

static void test_build_id_mismatch(void)
{
	int line = 0;
	uintptr_t ra = caller_known(&line);
	struct tprof_module m = *mod_of(ra);
	CHECK(m.build_id_len > 0);
	struct tprof_sym_frame f[4];

	m.build_id[0] ^= 0xff;
	struct tprof_symbolizer *s = sym_new(&m, 1, exe);
	CHECK_EQ(sym_resolve(s, ra, 1, f, 4), 1);
	CHECK(f[0].function == NULL && f[0].file == NULL && f[0].line == 0);
	CHECK_STR(f[0].module, tprof_base_name(exe));
	CHECK(f[0].offset == ra - m.base);
	struct problems ps = {0};
	sym_problems(s, on_problem, &ps);
	CHECK_EQ(ps.n, 1);
	CHECK(has_problem(&ps, exe, TPROF_SYM_MISMATCH));
	sym_free(s);

	/* a shorter recorded id is a mismatch too; no recorded id is not checked */
	m.build_id[0] ^= 0xff;
	m.build_id_len--;
	s = sym_new(&m, 1, exe);
	CHECK_EQ(sym_resolve(s, ra, 1, f, 4), 1);
	CHECK(f[0].function == NULL);
	sym_free(s);
	m.build_id_len = 0;
	s = sym_new(&m, 1, exe);
	CHECK_EQ(sym_resolve(s, ra, 1, f, 4), 1);
	CHECK_STR(f[0].function, "caller_known");
	sym_free(s);
}

static void test_missing(void)
{
	int line = 0;
	uintptr_t ra = caller_known(&line);
	struct tprof_module m = *mod_of(ra);
	m.path = "/nonexistent/dir/libnope.so";
	struct tprof_module mods[3] = {m, m, m};
	mods[1].path = "linux-vdso.so.1";
	mods[1].base = mods[1].start = 0x7000;
	mods[1].end = 0x9000;
	mods[2].path = "/tmp"; /* a directory cannot be a module */
	mods[2].base = mods[2].start = 0x10000;
	mods[2].end = 0x20000;
	struct tprof_symbolizer *s = sym_new(mods, 3, exe);
	struct tprof_sym_frame f[4];
	CHECK_EQ(sym_resolve(s, ra, 1, f, 4), 1);
	CHECK(f[0].function == NULL && f[0].file == NULL);
	CHECK_STR(f[0].module, "libnope.so");
	CHECK(f[0].offset == ra - m.base);
	struct problems ps = {0};
	sym_problems(s, on_problem, &ps);
	CHECK_EQ(ps.n, 1); /* only modules some address fell in */
	CHECK(has_problem(&ps, "/nonexistent/dir/libnope.so", TPROF_SYM_MISSING));
	CHECK_EQ(sym_resolve(s, 0x7123, 1, f, 4), 1);
	CHECK_STR(f[0].module, "linux-vdso.so.1");
	CHECK(f[0].function == NULL && f[0].offset == 0x123);
	CHECK_EQ(sym_resolve(s, 0x10010, 1, f, 4), 1);
	CHECK_STR(f[0].module, "tmp");
	ps.n = 0;
	sym_problems(s, on_problem, &ps);
	CHECK_EQ(ps.n, 3);
	CHECK(has_problem(&ps, "linux-vdso.so.1", TPROF_SYM_MISSING));
	CHECK(has_problem(&ps, "/tmp", TPROF_SYM_MISSING));
	sym_free(s);
}

/* Truncated copies of this executable and a text file: never a crash, only module+offset. */
static void test_bad_files(void)
{
	int line = 0;
	uintptr_t ra = caller_known(&line);
	struct tprof_module m = *mod_of(ra);
	FILE *in = fopen(exe, "rb");
	CHECK(in != NULL);
	if (!in)
		return;
	fseek(in, 0, SEEK_END);
	long size = ftell(in);
	char *buf = xmalloc((size_t)size);
	fseek(in, 0, SEEK_SET);
	CHECK_EQ(fread(buf, 1, (size_t)size, in), size);
	fclose(in);

	char path[] = "/tmp/tprof_symtest_XXXXXX";
	int fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0) {
		free(buf);
		return;
	}
	close(fd);
	/* cut < 0: a text file instead */
	const long cuts[] = {0, 4, 16, 63, 64, 65, 200, 1000, 4096, 10000, size / 2, size - 100, -1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		long cut = cuts[i];
		FILE *out = fopen(path, "wb");
		if (cut < 0)
			fputs("not an ELF file\n", out);
		else
			fwrite(buf, 1, (size_t)cut, out);
		fclose(out);
		m.path = path;
		for (int with_id = 0; with_id < 2; with_id++) {
			struct tprof_module mm = m;
			if (!with_id)
				mm.build_id_len = 0;
			struct tprof_symbolizer *s = sym_new(&mm, 1, exe);
			struct tprof_sym_frame f[8];
			size_t n = sym_resolve(s, ra, 1, f, 8);
			CHECK(n >= 1 && n <= 8);
			CHECK_STR(f[n - 1].module, tprof_base_name(path));
			CHECK(f[n - 1].offset == ra - m.base);
			struct problems ps = {0};
			sym_problems(s, on_problem, &ps);
			CHECK(ps.n <= 1);
			if (cut < 4096) /* not even all of the headers: unusable */
				CHECK(ps.n == 1 && f[0].function == NULL);
			sym_free(s);
		}
	}
	unlink(path);
	free(buf);
}

static void test_seq(void)
{
	int line = 0;
	uintptr_t ra = caller_known(&line);
	struct tprof_module a = *mod_of(ra), b = a;
	a.load_seq = 10;
	a.unload_seq = 20;
	b.path = "/nonexistent/libgone.so";
	b.load_seq = 20;
	b.unload_seq = UINT64_MAX;
	struct tprof_module mods[2] = {b, a}; /* order does not matter */
	struct tprof_symbolizer *s = sym_new(mods, 2, exe);
	struct tprof_sym_frame f[4];
	CHECK_EQ(sym_resolve(s, ra, 15, f, 4), 1);
	CHECK_STR(f[0].function, "caller_known");
	CHECK_EQ(f[0].line, line);
	CHECK_EQ(sym_resolve(s, ra, 25, f, 4), 1);
	CHECK(f[0].function == NULL);
	CHECK_STR(f[0].module, "libgone.so");
	CHECK_EQ(sym_resolve(s, ra, 5, f, 4), 1); /* before both: the latest loaded */
	CHECK_STR(f[0].module, "libgone.so");
	CHECK_EQ(sym_resolve(s, ra, 20, f, 4), 1);
	CHECK_STR(f[0].module, "libgone.so");
	CHECK_EQ(sym_resolve(s, ra, 19, f, 4), 1);
	CHECK_STR(f[0].function, "caller_known");
	sym_free(s);
}

static void test_odd_input(void)
{
	struct tprof_sym_frame f[4];
	struct tprof_symbolizer *s = sym_new(NULL, 0, NULL);
	CHECK_EQ(sym_resolve(s, 0x1234, 0, f, 4), 1);
	CHECK(f[0].module == NULL && f[0].function == NULL && f[0].offset == 0x1234);
	struct problems ps = {0};
	sym_problems(s, on_problem, &ps);
	CHECK_EQ(ps.n, 0);
	sym_free(s);
	sym_free(NULL);

	int line = 0;
	uintptr_t ra = caller_known(&line);
	struct tprof_module mods[4] = {*mod_of(ra), *mod_of(ra), *mod_of(ra), *mod_of(ra)};
	mods[0].path = NULL; /* like "": the main program */
	mods[1].start = mods[1].end = 0x5000; /* zero size */
	mods[2].start = 0x9000;               /* end before start */
	mods[2].end = 0x8000;
	mods[3].base = mods[3].start = UINT64_MAX - 0x1000;
	mods[3].end = UINT64_MAX;
	s = sym_new(mods, 4, exe);
	static const uint64_t outside[] = {0, 1, 0x5000, 0x5001, 0x8800, 0x9000};
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		CHECK_EQ(sym_resolve(s, outside[i], 0, f, 4), 1);
		CHECK(f[0].module == NULL && f[0].function == NULL && f[0].offset == outside[i]);
	}
	CHECK_EQ(sym_resolve(s, UINT64_MAX - 0x10, 0, f, 4), 1);
	CHECK_STR(f[0].module, tprof_base_name(exe));
	CHECK(f[0].offset == 0xff0);
	CHECK_EQ(sym_resolve(s, ra, 0, f, 4), 1);
	CHECK_STR(f[0].function, "caller_known");
	sym_free(s);
}

/* Distinct addresses across this program's text: the table grows, and a second pass is served
 * entirely from the cache with the same strings. */
static void test_cache(void)
{
	int line = 0;
	uintptr_t ra = caller_known(&line);
	const struct tprof_module *m = mod_of(ra);
	struct tprof_symbolizer *s = sym_new(self_mods.m, self_mods.n, exe);
	struct tprof_sym_frame f[8], g[8];
	size_t n = sym_resolve(s, ra, 0, f, 8);
	size_t before = sym_lookups(s);
	CHECK_EQ(sym_resolve(s, ra, 0, g, 8), n);
	CHECK_EQ(sym_lookups(s), before);
	CHECK(f[0].function == g[0].function && f[0].file == g[0].file && f[0].module == g[0].module);

	enum { N = 5000 };
	uint64_t step = (m->end - m->start) / N ? (m->end - m->start) / N : 1;
	static size_t counts[N];
	static const char *names[N];
	for (size_t i = 0; i < N; i++) {
		counts[i] = sym_resolve(s, m->start + 1 + i * step, 0, f, 8);
		names[i] = f[counts[i] - 1].function;
	}
	size_t after = sym_lookups(s);
	CHECK(after >= before + N / 2);
	int same = 1;
	for (size_t i = 0; i < N; i++) {
		size_t k = sym_resolve(s, m->start + 1 + i * step, 0, f, 8);
		same &= k == counts[i] && f[k - 1].function == names[i];
	}
	CHECK(same);
	CHECK_EQ(sym_lookups(s), after);
	sym_free(s);
}


/* ---- the cache on disk */

enum { PC_N = 400 };
struct pc_run {
	size_t n[PC_N];
	struct tprof_sym_frame f[PC_N][8];
};

/* Frees run's copies of the strings. */
static void pc_free(struct pc_run *run)
{
	for (size_t i = 0; i < PC_N; i++) {
		for (size_t k = 0; k < run->n[i]; k++) {
			free((char *)run->f[i][k].function);
			free((char *)run->f[i][k].file);
			free((char *)run->f[i][k].module);
		}
		run->n[i] = 0;
	}
}

/* Resolves PC_N addresses over the executable's text (and two known ones) with a new symbolizer
 * of mods into run (what it held is freed); returns how many went to libdw. Strings are compared
 * by value across symbolizers, so they are copied out. */
static size_t pc_resolve(const struct tprof_module *mods, size_t nmods, uintptr_t base_start, uintptr_t base_end,
			 struct pc_run *run)
{
	int line = 0, l2 = 0;
	uintptr_t known[2] = {caller_known(&line), inl_outer(&line, &l2)};
	pc_free(run);
	struct tprof_symbolizer *s = sym_new(mods, nmods, exe);
	uint64_t step = (base_end - base_start) / PC_N ? (base_end - base_start) / PC_N : 1;
	for (size_t i = 0; i < PC_N; i++) {
		uintptr_t a = i < 2 ? known[i] : base_start + 1 + i * step;
		run->n[i] = sym_resolve(s, a, 0, run->f[i], 8);
		for (size_t k = 0; k < run->n[i]; k++) {
			struct tprof_sym_frame *x = &run->f[i][k];
			x->function = x->function ? strdup(x->function) : NULL;
			x->file = x->file ? strdup(x->file) : NULL;
			x->module = x->module ? strdup(x->module) : NULL;
		}
	}
	size_t lookups = sym_lookups(s);
	sym_free(s);
	return lookups;
}

static int str_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

static int pc_same(const struct pc_run *a, const struct pc_run *b)
{
	for (size_t i = 0; i < PC_N; i++) {
		if (a->n[i] != b->n[i])
			return 0;
		for (size_t k = 0; k < a->n[i]; k++) {
			const struct tprof_sym_frame *x = &a->f[i][k], *y = &b->f[i][k];
			if (!str_eq(x->function, y->function) || !str_eq(x->file, y->file) || x->line != y->line ||
			    !str_eq(x->module, y->module) || x->offset != y->offset || x->inlined != y->inlined)
				return 0;
		}
	}
	return 1;
}

static size_t count_files(const char *dir)
{
	DIR *d = opendir(dir);
	size_t n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += strstr(e->d_name, ".sym") != NULL;
	if (d)
		closedir(d);
	return n;
}

/* Flips one byte in the middle of every cache file in dir. */
static void damage_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strstr(e->d_name, ".sym"))
			continue;
		char p[PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		int fd = open(p, O_RDWR);
		struct stat st;
		if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 2) {
			unsigned char c;
			if (pread(fd, &c, 1, st.st_size / 2) == 1) {
				c ^= 0x20;
				CHECK(pwrite(fd, &c, 1, st.st_size / 2) == 1);
			}
		}
		if (fd >= 0)
			close(fd);
	}
	if (d)
		closedir(d);
}

static void test_disk_cache(void)
{
	char dir[] = "/tmp/tprof_symcache.XXXXXX";
	CHECK(mkdtemp(dir) != NULL);
	setenv("TPROF_SYMBOL_CACHE", dir, 1);
	static struct pc_run cold, warm, again, copy_cold, copy_warm, copy_stale;
	int line = 0;
	const struct tprof_module *m = mod_of(caller_known(&line));
	size_t n = pc_resolve(self_mods.m, self_mods.n, m->start, m->end, &cold);
	CHECK(n > PC_N / 2);
	CHECK(count_files(dir) >= 1);
	/* warm: every answer from the file, the same frames */
	CHECK_EQ(pc_resolve(self_mods.m, self_mods.n, m->start, m->end, &warm), 0);
	CHECK(pc_same(&cold, &warm));
	CHECK(cold.f[0][cold.n[0] - 1].line > 0 && cold.n[1] >= 2); /* a line, and inlined frames */
	/* damaged: ignored, the same frames from libdw, and written again */
	damage_files(dir);
	CHECK(pc_resolve(self_mods.m, self_mods.n, m->start, m->end, &again) > PC_N / 2);
	CHECK(pc_same(&cold, &again));
	CHECK_EQ(pc_resolve(self_mods.m, self_mods.n, m->start, m->end, &again), 0);
	/* a copy of the executable (same build-id) has a file of its own; changed, it is stale */
	char copy[PATH_MAX + 32];
	snprintf(copy, sizeof(copy), "%s/copy", dir);
	FILE *in = fopen(exe, "rb"), *out = fopen(copy, "wb");
	char buf[65536];
	size_t got;
	while (in && out && (got = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, got, out);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
	struct tprof_module mods[64];
	size_t nm = self_mods.n < 64 ? self_mods.n : 64;
	memcpy(mods, self_mods.m, nm * sizeof(mods[0]));
	for (size_t i = 0; i < nm; i++)
		if (mods[i].start == m->start)
			mods[i].path = copy;
	size_t before = count_files(dir);
	CHECK(pc_resolve(mods, nm, m->start, m->end, &copy_cold) > PC_N / 2);
	CHECK_EQ(count_files(dir), before + 1);
	CHECK_EQ(pc_resolve(mods, nm, m->start, m->end, &copy_warm), 0);
	CHECK(pc_same(&copy_cold, &copy_warm));
	struct timespec later[2] = {{0, UTIME_OMIT}, {time(NULL) + 100, 0}};
	CHECK_EQ(utimensat(AT_FDCWD, copy, later, 0), 0);
	CHECK(pc_resolve(mods, nm, m->start, m->end, &copy_stale) > PC_N / 2);
	CHECK(pc_same(&copy_cold, &copy_stale));
	/* pruning: 1000 old files beside the real ones go down to 800, the least recently used first;
	 * a dead writer's temporary file goes, a live one's stays */
	size_t real = count_files(dir);
	struct timespec old[2] = {{946684800, 0}, {946684800, 0}}; /* 2000-01-01 */
	for (int i = 0; i < 1000; i++) {
		char p[PATH_MAX + 64];
		snprintf(p, sizeof(p), "%s/%040x-%08x.sym", dir, i, i);
		FILE *f = fopen(p, "w");
		if (f)
			fclose(f);
		old[0].tv_sec = old[1].tv_sec = 946684800 + i;
		utimensat(AT_FDCWD, p, old, 0);
	}
	char dead[PATH_MAX + 64], live[PATH_MAX + 64];
	snprintf(dead, sizeof(dead), "%s/.dead.1.tmp", dir);
	snprintf(live, sizeof(live), "%s/.live.2.tmp", dir);
	fclose(fopen(dead, "w"));
	fclose(fopen(live, "w"));
	CHECK_EQ(utimensat(AT_FDCWD, dead, old, 0), 0);
	CHECK_EQ(symcache_prune(dir, 1000), 1000 + real - 800 + 1);
	CHECK_EQ(count_files(dir), 800);
	CHECK(access(dead, F_OK) != 0 && access(live, F_OK) == 0);
	CHECK_EQ(pc_resolve(mods, nm, m->start, m->end, &copy_warm), 0); /* the recent ones stayed */
	/* off: libdw every time, nothing written */
	setenv("TPROF_SYMBOL_CACHE", "off", 1);
	before = count_files(dir);
	CHECK(pc_resolve(self_mods.m, self_mods.n, m->start, m->end, &again) > PC_N / 2);
	CHECK_EQ(count_files(dir), before);
	struct pc_run *runs[] = {&cold, &warm, &again, &copy_cold, &copy_warm, &copy_stale};
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		pc_free(runs[i]);
	char cmd[PATH_MAX + 32];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	setenv("TPROF_SYMBOL_CACHE", "off", 1); /* the tests but test_disk_cache: libdw's own answers */
	/* Stay offline: no debuginfod downloads for the system libraries. */
	unsetenv("DEBUGINFOD_URLS");
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0) {
		printf("Bail out! cannot read /proc/self/exe\n");
		return 1;
	}
	exe[len] = '\0';
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s", exe);
	snprintf(fixtures, sizeof(fixtures), "%s/../fixtures/symbolize", dirname(dir));
	load_self();

	RUN(test_known_line);
	RUN(test_inlined);
	RUN(test_build_id_mismatch);
	RUN(test_missing);
	RUN(test_bad_files);
	RUN(test_seq);
	RUN(test_odd_input);
	RUN(test_cache);
	RUN(test_disk_cache);

	char lib[PATH_MAX + 32];
	snprintf(lib, sizeof(lib), "%s/libsymcxx.so", fixtures);
	fixture_dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (fixture_dl) {
		load_self();
		RUN(test_cxx);
		dlclose(fixture_dl);
	} else {
		printf("# %s\n", dlerror());
		SKIP(test_cxx, "fixture libsymcxx.so not built");
	}
	return UT_DONE();
}
