/* Implementation of base/util.h: checked allocation (and prefaulting of large tables), messages,
 * formatting, and names written as JSON strings, CSV fields and escaped text. */
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef MADV_POPULATE_WRITE
#define TPROF_MADV_POPULATE_WRITE MADV_POPULATE_WRITE
#else
#define TPROF_MADV_POPULATE_WRITE 23 /* Linux 5.14; older kernels answer EINVAL */
#endif

void tprof_oom(size_t n, const char *file, int line)
{
	fprintf(stderr, "tprof: out of memory allocating %zu bytes (%s:%d)\n", n, file, line);
	exit(TPROF_EXIT_NOMEM);
}

void tprof_bug(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("tprof: internal error: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

static tprof_warn_fn warn_sink;

void tprof_set_warn(tprof_warn_fn fn)
{
	warn_sink = fn;
}

static void to_sink(int note, const char *fmt, va_list ap)
{
	if (!warn_sink)
		return;
	char msg[1024];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	warn_sink(note, msg);
}

void tprof_warn(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	to_sink(0, fmt, ap);
	va_end(ap);
}

int tprof_same_file(const char *a, const char *b)
{
	struct stat x, y;
	return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

int tprof_env_switch(const char *name, int dflt)
{
	static const char *const on[] = {"1", "y", "yes", "true", "on"}, *const off[] = {"0", "n", "no", "false", "off"};
	const char *v = getenv(name);
	if (!v || !*v)
		return dflt;
	for (size_t k = 0; k < sizeof(on) / sizeof(on[0]); k++) {
		if (strcasecmp(v, on[k]) == 0)
			return 1;
		if (strcasecmp(v, off[k]) == 0)
			return 0;
	}
	tprof_warn("%s=%s: not 1 or 0 (yes or no, true or false, on or off); the default is kept", name, v);
	return dflt;
}

void tprof_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	to_sink(1, fmt, ap);
	va_end(ap);
}

void *tprof_xmalloc(size_t n, const char *file, int line)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		tprof_oom(n, file, line);
	return p;
}

void *tprof_xcalloc(size_t n, size_t size, const char *file, int line)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		tprof_oom(n * size, file, line);
	return p;
}

void *tprof_xzalloc(size_t n, size_t size, const char *file, int line)
{
	if (size && n > SIZE_MAX / size)
		tprof_oom(SIZE_MAX, file, line);
	/* calloc writes no zero into pages fresh from the kernel, which the prefault then makes
	 * present and writable (each page zeroed once, by the kernel) */
	void *p = tprof_xcalloc(n, size, file, line);
	tprof_prefault(p, n * size);
	return p;
}

void tprof_prefault(void *p, size_t n)
{
	if (!p || n < (1u << 20))
		return;
	uintptr_t huge = 2u << 20, page = 4096;
	uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), e = ((uintptr_t)p + n) & ~(huge - 1);
	int saved = errno;
	if (e > a)
		madvise((void *)a, e - a, MADV_HUGEPAGE);
	a = ((uintptr_t)p + page - 1) & ~(page - 1);
	e = ((uintptr_t)p + n) & ~(page - 1);
	if (e > a)
		madvise((void *)a, e - a, TPROF_MADV_POPULATE_WRITE);
	errno = saved;
}

void *tprof_xgrow(void *p, size_t old, size_t n, const char *file, int line)
{
	if (n < (1u << 20)) {
		void *q = tprof_xrealloc(p, n, file, line);
		if (n > old)
			memset((char *)q + old, 0, n - old);
		return q;
	}
	void *q = tprof_xcalloc(1, n, file, line); /* zero: see tprof_xzalloc */
	tprof_prefault(q, n);
	if (p)
		memcpy(q, p, old < n ? old : n);
	free(p);
	return q;
}

void *tprof_xrealloc(void *p, size_t n, const char *file, int line)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		tprof_oom(n, file, line);
	return q;
}

char *tprof_xstrndup(const char *s, size_t n, const char *file, int line)
{
	char *d = tprof_xmalloc(n + 1, file, line);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

static int text_escape(FILE *f, const unsigned char *s);

/* The message with what a terminal would act on escaped, as in text tables: C0 and C1 controls,
 * DEL, invalid UTF-8 and '\\' (a name from a trace, a path, may hold an escape sequence or a line
 * break). */
void tprof_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char small[1024], *msg = small;
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n >= (int)sizeof(small) && (msg = malloc((size_t)n + 1)) != NULL) {
		va_start(ap, fmt);
		vsnprintf(msg, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	if (!msg)
		msg = small; /* cut */
	fputs("tprof: ", stderr);
	text_escape(stderr, (const unsigned char *)msg); /* as text tables show names */
	fputc('\n', stderr);
	if (msg != small)
		free(msg);
}

long tprof_utf8_next(const unsigned char *s, int *len)
{
	*len = 1;
	if (s[0] < 0x80)
		return s[0];
	int n;
	long cp;
	unsigned char lo = 0x80, hi = 0xbf; /* allowed range of the second byte */
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		n = 2, cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3, cp = s[0] & 0x0f;
		if (s[0] == 0xe0)
			lo = 0xa0; /* overlong */
		if (s[0] == 0xed)
			hi = 0x9f; /* surrogates */
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4, cp = s[0] & 0x07;
		if (s[0] == 0xf0)
			lo = 0x90; /* overlong */
		if (s[0] == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return -1;
	}
	if (s[1] < lo || s[1] > hi)
		return -1;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	*len = n;
	return cp;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when it is not valid. */
static int utf8_len(const unsigned char *s)
{
	int n;
	return tprof_utf8_next(s, &n) < 0 ? 0 : n;
}

void tprof_json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	fputc('"', f);
	while (*s) {
		if (*s == '"' || *s == '\\') {
			fputc('\\', f);
			fputc(*s++, f);
		} else if (*s < 0x20 || *s == 0x7f) {
			fprintf(f, "\\u%04x", *s++);
		} else {
			int n = utf8_len(s);
			if (n == 0) {
				fputs("\\ufffd", f);
				s++;
			} else {
				fwrite(s, 1, (size_t)n, f);
				s += n;
			}
		}
	}
	fputc('"', f);
}

void tprof_csv_str(FILE *f, const char *s)
{
	if (!s)
		return;
	if (!s[strcspn(s, ",\"\r\n")]) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* The columns a terminal gives code point cp: 2 for the East Asian wide and fullwidth blocks and
 * the emoji (Unicode's East_Asian_Width W and F, in the blocks that hold them), 0 for combining
 * marks, variation selectors and zero-width spaces and joiners, else 1; as wcwidth would in a UTF-8
 * locale, which the analyzer does not set. */
static int cp_cols(long cp)
{
	if ((cp >= 0x300 && cp <= 0x36f) || (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x20d0 && cp <= 0x20ff) ||
	    (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef))
		return 0;
	if ((cp >= 0x1100 && cp <= 0x115f) || (cp >= 0x2e80 && cp <= 0x303e) || (cp >= 0x3041 && cp <= 0x33ff) ||
	    (cp >= 0x3400 && cp <= 0x4dbf) || (cp >= 0x4e00 && cp <= 0x9fff) || (cp >= 0xa000 && cp <= 0xa4cf) ||
	    (cp >= 0xac00 && cp <= 0xd7a3) || (cp >= 0xf900 && cp <= 0xfaff) || (cp >= 0xfe30 && cp <= 0xfe4f) ||
	    (cp >= 0xff00 && cp <= 0xff60) || (cp >= 0xffe0 && cp <= 0xffe6) || (cp >= 0x1f300 && cp <= 0x1f64f) ||
	    (cp >= 0x1f680 && cp <= 0x1f6ff) || (cp >= 0x1f900 && cp <= 0x1f9ff) || (cp >= 0x1fa70 && cp <= 0x1faff) ||
	    (cp >= 0x20000 && cp <= 0x3fffd))
		return 2;
	/* the emoji among the symbols of U+2300..U+2BFF that Unicode makes wide (East_Asian_Width W) */
	static const uint16_t wide_sym[][2] = {
		{0x231a, 0x231b}, {0x23e9, 0x23ec}, {0x23f0, 0x23f0}, {0x23f3, 0x23f3}, {0x25fd, 0x25fe},
		{0x2614, 0x2615}, {0x2648, 0x2653}, {0x267f, 0x267f}, {0x2693, 0x2693}, {0x26a1, 0x26a1},
		{0x26aa, 0x26ab}, {0x26bd, 0x26be}, {0x26c4, 0x26c5}, {0x26ce, 0x26ce}, {0x26d4, 0x26d4},
		{0x26ea, 0x26ea}, {0x26f2, 0x26f3}, {0x26f5, 0x26f5}, {0x26fa, 0x26fa}, {0x26fd, 0x26fd},
		{0x2705, 0x2705}, {0x270a, 0x270b}, {0x2728, 0x2728}, {0x274c, 0x274c}, {0x274e, 0x274e},
		{0x2753, 0x2755}, {0x2757, 0x2757}, {0x2795, 0x2797}, {0x27b0, 0x27b0}, {0x27bf, 0x27bf},
		{0x2b1b, 0x2b1c}, {0x2b50, 0x2b50}, {0x2b55, 0x2b55}};
	for (size_t i = 0; cp >= 0x231a && cp <= 0x2b55 && i < sizeof(wide_sym) / sizeof(wide_sym[0]); i++)
		if (cp >= wide_sym[i][0] && cp <= wide_sym[i][1])
			return 2;
	return 1;
}

/* Writes (f non-NULL) or only measures the escaped form of s, at most max columns of it (a whole
 * character or escape, never half of one); returns its columns, as a terminal shows them (cp_cols).
 * C1 controls (U+0080..U+009F) are escaped too: some terminals act on them. */
static int text_escape_max(FILE *f, const unsigned char *s, int max)
{
	int cols = 0;
	while (*s) {
		char esc[8];
		int n = 0;
		long cp = *s < 0x20 || *s == 0x7f || *s == '\\' ? -1 : tprof_utf8_next(s, &n);
		if (cp < 0 || (cp >= 0x80 && cp < 0xa0))
			n = 0;
		if (n > 0) {
			int w = cp_cols(cp);
			if (cols + w > max)
				break;
			if (f)
				fwrite(s, 1, (size_t)n, f);
			s += n;
			cols += w;
			continue;
		}
		if (*s == '\\')
			snprintf(esc, sizeof(esc), "\\\\");
		else if (*s == '\n')
			snprintf(esc, sizeof(esc), "\\n");
		else if (*s == '\r')
			snprintf(esc, sizeof(esc), "\\r");
		else if (*s == '\t')
			snprintf(esc, sizeof(esc), "\\t");
		else
			snprintf(esc, sizeof(esc), "\\x%02x", *s);
		if (cols + (int)strlen(esc) > max)
			break;
		if (f)
			fputs(esc, f);
		cols += (int)strlen(esc);
		s++;
	}
	return cols;
}

static int text_escape(FILE *f, const unsigned char *s)
{
	return text_escape_max(f, s, INT32_MAX);
}

int tprof_text_cut(FILE *f, const char *str, int width)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	int want = width < 0 ? -width : width;
	if (want < 2 || text_escape(NULL, s) <= want)
		return tprof_text_str(f, str, width);
	int lead = width > 0 ? want - 1 - text_escape_max(NULL, s, want - 1) : 0;
	for (int i = 0; i < lead; i++)
		fputc(' ', f);
	int cols = text_escape_max(f, s, want - 1);
	fputs("\u2026", f); /* one column: the name goes on */
	for (int i = cols + 1 + lead; i < want; i++)
		fputc(' ', f);
	return want;
}

int tprof_text_str(FILE *f, const char *str, int width)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	int len = text_escape(NULL, s), want = width < 0 ? -width : width;
	int pad = want > len ? want - len : 0;
	for (int i = 0; width > 0 && i < pad; i++)
		fputc(' ', f);
	text_escape(f, s);
	for (int i = 0; width < 0 && i < pad; i++)
		fputc(' ', f);
	return len + pad;
}

int tprof_text_cols(const char *str)
{
	return text_escape(NULL, (const unsigned char *)(str ? str : ""));
}

const char *tprof_commas(uint64_t v, char *buf)
{
	char tmp[32];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v), o = 0;
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = 0;
	return buf;
}

const char *tprof_fmt_ns(uint64_t ns, char *buf)
{
	if (ns < 10000)
		snprintf(buf, 32, "%llu ns", (unsigned long long)ns);
	else if (ns < 10000000)
		snprintf(buf, 32, "%.2f us", ns / 1e3);
	else if (ns < 10000000000ull)
		snprintf(buf, 32, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, 32, "%.3f s", ns / 1e9);
	return buf;
}

const char *tprof_fmt_bytes(uint64_t b, char *buf)
{
	if (b < 1024)
		snprintf(buf, 32, "%llu B", (unsigned long long)b);
	else if (b < (1ull << 20))
		snprintf(buf, 32, "%.1f KiB", b / 1024.0);
	else if (b < (1ull << 30))
		snprintf(buf, 32, "%.1f MiB", b / 1048576.0);
	else
		snprintf(buf, 32, "%.2f GiB", b / 1073741824.0);
	return buf;
}

void tprof_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

static void swap_elems(char *a, char *b, size_t size)
{
	char t[64];
	memcpy(t, a, size);
	memcpy(a, b, size);
	memcpy(b, t, size);
}

/* Sifts element i of the heap base[0, k) down: every parent comes after its children in cmp's order
 * (the root is the last of the k kept). */
static void sift_down(char *base, size_t i, size_t k, size_t size, int (*cmp)(const void *, const void *))
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < k && cmp(base + l * size, base + m * size) > 0)
			m = l;
		if (r < k && cmp(base + r * size, base + m * size) > 0)
			m = r;
		if (m == i)
			return;
		swap_elems(base + i * size, base + m * size, size);
		i = m;
	}
}

void tprof_sort_top(void *base, size_t n, size_t k, size_t size, int (*cmp)(const void *, const void *))
{
	if (k == 0 || k >= n / 4 || size > 64) { /* most of it, or elements too large to swap here */
		tprof_sort(base, n, size, cmp);
		return;
	}
	char *b = base;
	for (size_t i = k / 2; i-- > 0;)
		sift_down(b, i, k, size, cmp);
	for (size_t j = k; j < n; j++)
		if (cmp(b + j * size, b) < 0) { /* before the last of the kept: it takes that one's place */
			swap_elems(b, b + j * size, size);
			sift_down(b, 0, k, size, cmp);
		}
	tprof_sort(base, k, size, cmp);
}

struct tprof_unit tprof_ns_unit(uint64_t max_ns)
{
	if (max_ns < 10000)
		return (struct tprof_unit){"ns", 1, 0};
	if (max_ns < 10000000)
		return (struct tprof_unit){"us", 1e3, 1};
	if (max_ns < 10000000000ull)
		return (struct tprof_unit){"ms", 1e6, 2};
	return (struct tprof_unit){"s", 1e9, 3};
}

struct tprof_unit tprof_bytes_unit(uint64_t max_bytes)
{
	if (max_bytes < 10240)
		return (struct tprof_unit){"B", 1, 0};
	if (max_bytes < 10485760)
		return (struct tprof_unit){"KiB", 1024, 1};
	if (max_bytes < 10737418240ull)
		return (struct tprof_unit){"MiB", 1048576, 1};
	return (struct tprof_unit){"GiB", 1073741824, 2};
}

const char *tprof_fmt_in(uint64_t v, struct tprof_unit u, char *buf)
{
	snprintf(buf, 32, "%.*f", u.decimals, (double)v / u.div);
	return buf;
}

const char *tprof_base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

FILE *tprof_fopen_nowait(const char *path, const char *mode)
{
	int w = mode[0] == 'w';
	int fd = open(path, (w ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY) | O_NONBLOCK | O_CLOEXEC, 0666);
	if (fd < 0)
		return NULL;
	int fl = fcntl(fd, F_GETFL);
	FILE *f = fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0 ? fdopen(fd, mode) : NULL;
	if (!f) {
		int e = errno;
		close(fd);
		errno = e;
	}
	return f;
}
