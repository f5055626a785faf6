/* Implementation of trace/symcache.h: the cache file's writer and its validating reader, the cache
 * directory, and the identity of debug files. */
#include "trace/symcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <uthash.h>

#include "base/util.h"
#include "tprof_trace.h"

/* ---- the directory */

/* mkdir -p, each level made private; 0 when path is a directory at the end. */
static int make_dirs(char *path)
{
	for (char *p = path + 1;; p++) {
		if (*p != '/' && *p != 0)
			continue;
		char c = *p;
		*p = 0;
		int r = mkdir(path, 0700);
		int e = errno;
		*p = c;
		if (r != 0 && e != EEXIST)
			return -1;
		if (!c)
			break;
	}
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

int symcache_dir(char *dir, size_t cap)
{
	const char *v = getenv("TPROF_SYMBOL_CACHE");
	int n;
	if (v && *v) {
		if (!strcmp(v, "0") || !strcmp(v, "off") || !strcmp(v, "no") || !strcmp(v, "false"))
			return -1;
		n = snprintf(dir, cap, "%s", v);
	} else if ((v = getenv("XDG_CACHE_HOME")) && v[0] == '/') {
		n = snprintf(dir, cap, "%s/tprof/symbols", v);
	} else if ((v = getenv("HOME")) && v[0] == '/') {
		n = snprintf(dir, cap, "%s/.cache/tprof/symbols", v);
	} else {
		return -1;
	}
	return n > 0 && (size_t)n < cap && make_dirs(dir) == 0 ? 0 : -1;
}

/* ---- debug files */

void symcache_sig_of(struct symcache_sig *sig, const char *path)
{
	memset(sig, 0, sizeof(*sig));
	struct stat st;
	if (!path || !*path || strlen(path) >= sizeof(sig->path) || stat(path, &st) != 0)
		return;
	memcpy(sig->path, path, strlen(path) + 1);
	sig->size = (uint64_t)st.st_size;
	sig->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec;
	sig->ino = (uint64_t)st.st_ino;
}

static void hex(char *out, const uint8_t *id, size_t len)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = 0;
}

int symcache_sig_holds(const struct symcache_sig *sig, const uint8_t *id, size_t id_len)
{
	if (sig->path[0]) {
		struct symcache_sig now;
		symcache_sig_of(&now, sig->path);
		return now.path[0] && now.size == sig->size && now.mtime_ns == sig->mtime_ns && now.ino == sig->ino
			       ? 0
			       : -1;
	}
	/* none was found: none may have appeared where libdw looks first */
	if (id_len < 2 || id_len > 64)
		return 0;
	char h[129], path[200];
	hex(h, id, id_len);
	snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%.2s/%s.debug", h, h + 2);
	struct stat st;
	return stat(path, &st) != 0 && errno == ENOENT ? 0 : -1;
}

/* ---- reading: little-endian fields */

static uint64_t load_u64(const uint8_t *p)
{
	return (uint64_t)tprof_load_u32(p) | (uint64_t)tprof_load_u32(p + 4) << 32;
}

struct rd {
	const uint8_t *p, *end;
};

static int get_u32(struct rd *r, uint32_t *v)
{
	if (r->end - r->p < 4)
		return -1;
	*v = tprof_load_u32(r->p);
	r->p += 4;
	return 0;
}

static int get_u64(struct rd *r, uint64_t *v)
{
	if (r->end - r->p < 8)
		return -1;
	*v = load_u64(r->p);
	r->p += 8;
	return 0;
}

static int get_bytes(struct rd *r, size_t n, const uint8_t **out)
{
	if ((size_t)(r->end - r->p) < n)
		return -1;
	*out = r->p;
	r->p += n;
	return 0;
}

#define MAX_FRAMES 1024u

/* One pass over the body; with entry NULL it only checks. strs: nstr NUL-terminated copies (pass 2). */
static int parse_body(struct rd *r, uint32_t nstr, const char **strs,
		      void (*entry)(void *, uint64_t, const struct symcache_frame *, uint32_t), void *ctx)
{
	uint32_t nent;
	if (get_u32(r, &nent) || nent > (size_t)(r->end - r->p) / 12)
		return -1;
	struct symcache_frame fr[MAX_FRAMES];
	for (uint32_t i = 0; i < nent; i++) {
		uint64_t vaddr;
		uint32_t n;
		if (get_u64(r, &vaddr) || get_u32(r, &n) || n == 0 || n > MAX_FRAMES ||
		    n > (size_t)(r->end - r->p) / 16)
			return -1;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t fn, file, line, inl;
			if (get_u32(r, &fn) || get_u32(r, &file) || get_u32(r, &line) || get_u32(r, &inl) ||
			    fn > nstr || file > nstr || line > INT32_MAX || inl > 1)
				return -1;
			if (strs)
				fr[k] = (struct symcache_frame){fn ? strs[fn - 1] : NULL, file ? strs[file - 1] : NULL,
								(int32_t)line, (uint8_t)inl};
		}
		if (entry)
			entry(ctx, vaddr, fr, n);
	}
	return 0;
}

int symcache_parse(const uint8_t *data, size_t len, const uint8_t *id, size_t id_len, int check_crc,
		   struct symcache_head *head,
		   void (*entry)(void *ctx, uint64_t vaddr, const struct symcache_frame *frames, uint32_t n),
		   void *ctx)
{
	if (len < 8 + 4 + 4 || len > SYMCACHE_MAX_BYTES || memcmp(data, SYMCACHE_MAGIC, 8) != 0)
		return -1;
	if (check_crc && tprof_crc32c_update(0, data, len - 4) != tprof_load_u32(data + len - 4))
		return -1;
	struct rd r = {data + 8, data + len - 4};
	uint32_t version, status, n;
	const uint8_t *b;
	if (get_u32(&r, &version) || version != SYMCACHE_VERSION || get_u32(&r, &status) ||
	    (status != 0 && status != 3) || get_u32(&r, &n) || n != id_len || get_bytes(&r, n, &b) ||
	    memcmp(b, id, n) != 0)
		return -1;
	struct symcache_head h;
	memset(&h, 0, sizeof(h));
	h.status = status;
	if (get_u32(&r, &n) || n >= sizeof(h.sig.path) || get_bytes(&r, n, &b) || memchr(b, 0, n))
		return -1;
	memcpy(h.sig.path, b, n);
	if (get_u64(&r, &h.sig.size) || get_u64(&r, &h.sig.mtime_ns) || get_u64(&r, &h.sig.ino))
		return -1;
	if (get_u32(&r, &n) || n == 0 || n >= sizeof(h.main.path) || get_bytes(&r, n, &b) || memchr(b, 0, n))
		return -1;
	memcpy(h.main.path, b, n);
	if (get_u64(&r, &h.main.size) || get_u64(&r, &h.main.mtime_ns) || get_u64(&r, &h.main.ino))
		return -1;
	uint32_t nstr;
	if (get_u32(&r, &nstr) || nstr > (size_t)(r.end - r.p) / 4)
		return -1;
	const uint8_t *strs_at = r.p;
	size_t total = 0;
	for (uint32_t i = 0; i < nstr; i++) {
		if (get_u32(&r, &n) || get_bytes(&r, n, &b) || memchr(b, 0, n))
			return -1;
		total += n + 1;
	}
	struct rd body = r;
	if (parse_body(&r, nstr, NULL, NULL, NULL) != 0 || r.p != r.end)
		return -1;
	*head = h;
	if (!entry)
		return 0;
	/* second pass: the strings NUL-terminated, then the entries */
	char *pool = xmalloc(total ? total : 1);
	const char **strs = xcalloc(nstr ? nstr : 1, sizeof(*strs));
	struct rd s = {strs_at, body.p};
	char *q = pool;
	for (uint32_t i = 0; i < nstr; i++) {
		get_u32(&s, &n);
		get_bytes(&s, n, &b);
		memcpy(q, b, n);
		q[n] = 0;
		strs[i] = q;
		q += n + 1;
	}
	parse_body(&body, nstr, strs, entry, ctx);
	free(strs);
	free(pool);
	return 0;
}

/* dir/BUILDID-PATHHASH.sym, or a temporary name beside it */
static void cache_path(char *out, size_t cap, const char *dir, const uint8_t *id, size_t id_len,
		       const char *module, const char *tmp)
{
	char h[129];
	hex(h, id, id_len);
	uint32_t ph = tprof_crc32c_update(0, module, strlen(module));
	if (tmp)
		snprintf(out, cap, "%s/.%s-%08x.%s.tmp", dir, h, ph, tmp);
	else
		snprintf(out, cap, "%s/%s-%08x.sym", dir, h, ph);
}

int symcache_load(const char *dir, const uint8_t *id, size_t id_len, const struct symcache_sig *main,
		  struct symcache_head *head,
		  void (*entry)(void *ctx, uint64_t vaddr, const struct symcache_frame *frames, uint32_t n),
		  void *ctx)
{
	if (!dir || id_len == 0 || id_len > 64 || !main->path[0])
		return -1;
	char path[4096 + 160];
	cache_path(path, sizeof(path), dir, id, id_len, main->path, NULL);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	uint8_t *data = NULL;
	int rc = -1;
	/* another user's file could name anything: only ours is believed */
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || st.st_size < 16 ||
	    (uint64_t)st.st_size > SYMCACHE_MAX_BYTES)
		goto out;
	size_t len = (size_t)st.st_size, got = 0;
	data = xmalloc(len);
	while (got < len) {
		ssize_t k = read(fd, data + got, len - got);
		if (k <= 0)
			goto out;
		got += (size_t)k;
	}
	struct symcache_head h;
	if (symcache_parse(data, len, id, id_len, 1, &h, NULL, NULL) != 0 || strcmp(h.main.path, main->path) != 0 ||
	    h.main.size != main->size || h.main.mtime_ns != main->mtime_ns || h.main.ino != main->ino ||
	    symcache_sig_holds(&h.sig, id, id_len) != 0)
		goto out;
	rc = symcache_parse(data, len, id, id_len, 1, head, entry, ctx);
	if (rc == 0)
		futimens(fd, NULL); /* its time is when it was last used: the pruning goes by it */
out:
	free(data);
	close(fd);
	return rc;
}

/* ---- pruning */

struct aged {
	int64_t t;
	char name[256];
};

static int cmp_aged(const void *a, const void *b)
{
	const struct aged *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

size_t symcache_prune(const char *dir, size_t max_files)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct aged *v = NULL;
	size_t n = 0, cap = 0, removed = 0;
	time_t now = time(NULL);
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		int sym = len > 4 && strcmp(e->d_name + len - 4, ".sym") == 0 && e->d_name[0] != '.';
		int tmp = len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0 && e->d_name[0] == '.';
		struct stat st;
		if ((!sym && !tmp) || len >= sizeof(v->name) || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid())
			continue;
		if (tmp) { /* a writer's that died an hour ago or more */
			if (st.st_mtime < now - 3600 && unlinkat(dirfd(d), e->d_name, 0) == 0)
				removed++;
			continue;
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			v = xrealloc(v, cap * sizeof(*v));
		}
		v[n].t = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		memcpy(v[n].name, e->d_name, len + 1);
		n++;
	}
	if (n > max_files) { /* down to 80%, the least recently used first */
		qsort(v, n, sizeof(*v), cmp_aged);
		for (size_t i = 0; i < n - max_files / 5 * 4; i++)
			if (unlinkat(dirfd(d), v[i].name, 0) == 0)
				removed++;
	}
	closedir(d);
	free(v);
	return removed;
}

/* ---- writing */

struct str_idx {
	uint32_t idx;
	UT_hash_handle hh;
	char s[];
};

struct symcache_out {
	uint8_t *buf;
	size_t len, cap;
	uint8_t id[64];
	size_t id_len;
	struct symcache_head head;
	struct str_idx *strs;
	uint32_t nstr;
	uint8_t *ents; /* the entries, after the strings in the file */
	size_t ents_len, ents_cap;
	uint32_t nent;
	int too_big;
};

static void put(uint8_t **buf, size_t *len, size_t *cap, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (*len + n > *cap) {
		*cap = (*len + n) * 2 + 256;
		*buf = xrealloc(*buf, *cap);
	}
	memcpy(*buf + *len, p, n);
	*len += n;
}

static void put_u32(uint8_t **buf, size_t *len, size_t *cap, uint32_t v)
{
	uint8_t b[4];
	tprof_put_u32(b, v);
	put(buf, len, cap, b, 4);
}

static void put_u64(uint8_t **buf, size_t *len, size_t *cap, uint64_t v)
{
	put_u32(buf, len, cap, (uint32_t)v);
	put_u32(buf, len, cap, (uint32_t)(v >> 32));
}

struct symcache_out *symcache_out_new(const struct symcache_head *head, const uint8_t *id, size_t id_len)
{
	struct symcache_out *o = xcalloc(1, sizeof(*o));
	o->head = *head;
	o->id_len = id_len < sizeof(o->id) ? id_len : sizeof(o->id);
	memcpy(o->id, id, o->id_len);
	return o;
}

/* 1 + the string's index in the file, 0 for NULL */
static uint32_t str_ref(struct symcache_out *o, const char *s)
{
	if (!s)
		return 0;
	size_t n = strlen(s);
	struct str_idx *e;
	HASH_FIND(hh, o->strs, s, n, e);
	if (!e) {
		e = xmalloc(sizeof(*e) + n + 1);
		memcpy(e->s, s, n + 1);
		e->idx = o->nstr++;
		HASH_ADD_KEYPTR(hh, o->strs, e->s, n, e);
		put_u32(&o->buf, &o->len, &o->cap, (uint32_t)n);
		put(&o->buf, &o->len, &o->cap, s, n);
	}
	return e->idx + 1;
}

void symcache_out_add(struct symcache_out *o, uint64_t vaddr, const struct symcache_frame *frames, uint32_t n)
{
	if (n == 0 || n > MAX_FRAMES || o->len + o->ents_len > SYMCACHE_MAX_BYTES / 2) {
		o->too_big |= n != 0;
		return;
	}
	put_u64(&o->ents, &o->ents_len, &o->ents_cap, vaddr);
	put_u32(&o->ents, &o->ents_len, &o->ents_cap, n);
	for (uint32_t k = 0; k < n; k++) {
		put_u32(&o->ents, &o->ents_len, &o->ents_cap, str_ref(o, frames[k].function));
		put_u32(&o->ents, &o->ents_len, &o->ents_cap, str_ref(o, frames[k].file));
		put_u32(&o->ents, &o->ents_len, &o->ents_cap, frames[k].line > 0 ? (uint32_t)frames[k].line : 0);
		put_u32(&o->ents, &o->ents_len, &o->ents_cap, frames[k].inlined ? 1 : 0);
	}
	o->nent++;
}

static void out_free(struct symcache_out *o)
{
	struct str_idx *e, *tmp;
	HASH_ITER(hh, o->strs, e, tmp) {
		HASH_DEL(o->strs, e);
		free(e);
	}
	free(o->buf);
	free(o->ents);
	free(o);
}

int symcache_out_write(struct symcache_out *o, const char *dir)
{
	int rc = -1;
	if (!dir || o->id_len == 0 || o->too_big || !o->head.main.path[0])
		goto done;
	uint8_t *f = NULL;
	size_t len = 0, cap = 0;
	put(&f, &len, &cap, SYMCACHE_MAGIC, 8);
	put_u32(&f, &len, &cap, SYMCACHE_VERSION);
	put_u32(&f, &len, &cap, o->head.status);
	put_u32(&f, &len, &cap, (uint32_t)o->id_len);
	put(&f, &len, &cap, o->id, o->id_len);
	size_t pl = strnlen(o->head.sig.path, sizeof(o->head.sig.path) - 1);
	put_u32(&f, &len, &cap, (uint32_t)pl);
	put(&f, &len, &cap, o->head.sig.path, pl);
	put_u64(&f, &len, &cap, o->head.sig.size);
	put_u64(&f, &len, &cap, o->head.sig.mtime_ns);
	put_u64(&f, &len, &cap, o->head.sig.ino);
	pl = strnlen(o->head.main.path, sizeof(o->head.main.path) - 1);
	put_u32(&f, &len, &cap, (uint32_t)pl);
	put(&f, &len, &cap, o->head.main.path, pl);
	put_u64(&f, &len, &cap, o->head.main.size);
	put_u64(&f, &len, &cap, o->head.main.mtime_ns);
	put_u64(&f, &len, &cap, o->head.main.ino);
	put_u32(&f, &len, &cap, o->nstr);
	put(&f, &len, &cap, o->buf, o->len);
	put_u32(&f, &len, &cap, o->nent);
	put(&f, &len, &cap, o->ents, o->ents_len);
	put_u32(&f, &len, &cap, tprof_crc32c_update(0, f, len));
	char tmp[4096 + 200], path[4096 + 160], pid[24];
	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	cache_path(tmp, sizeof(tmp), dir, o->id, o->id_len, o->head.main.path, pid);
	cache_path(path, sizeof(path), dir, o->id, o->id_len, o->head.main.path, NULL);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0) {
		size_t done = 0;
		while (done < len) {
			ssize_t k = write(fd, f + done, len - done);
			if (k <= 0)
				break;
			done += (size_t)k;
		}
		struct stat st;
		int fresh = stat(path, &st) != 0;
		if (close(fd) == 0 && done == len && rename(tmp, path) == 0)
			rc = 0;
		else
			unlink(tmp);
		if (rc == 0 && fresh)
			symcache_prune(dir, SYMCACHE_MAX_FILES);
	}
	free(f);
done:
	out_free(o);
	return rc;
}
