/* The roofline's cache file (analysis/roofline.h): the measurement written as one JSON object,
 * atomically (a temporary file renamed), and read back with a small JSON reader that rejects what is
 * not JSON and takes only a measurement of this machine. */
#include "analysis/roofline.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

static void json_num(FILE *f, const char *key, double v)
{
	fprintf(f, ",\"%s\":%.6g", key, isfinite(v) ? v : 0.0);
}

/* The measurement's fields, as the cache holds them. */
static void json_fields(FILE *f, const struct tprof_roofline *r)
{
	fprintf(f, "{\"version\":%d,\"cpu\":", TPROF_ROOFLINE_VERSION);
	tprof_json_str(f, r->cpu);
	fprintf(f, ",\"cores\":%d,\"isa\":", r->cores);
	tprof_json_str(f, r->isa);
	json_num(f, "fp32_gflops_1core", r->fp32_gflops_1core);
	json_num(f, "fp32_gflops_all", r->fp32_gflops_all);
	json_num(f, "fp64_gflops_1core", r->fp64_gflops_1core);
	json_num(f, "fp64_gflops_all", r->fp64_gflops_all);
	json_num(f, "stream_gbs_1core", r->stream_gbs_1core);
	json_num(f, "stream_gbs_all", r->stream_gbs_all);
	fprintf(f, ",\"by_isa\":[");
	for (int i = 0; i < r->nisa; i++) {
		const struct tprof_roofline_isa *o = &r->by_isa[i];
		fprintf(f, "%s{\"isa\":", i ? "," : "");
		tprof_json_str(f, o->name);
		json_num(f, "fp32_gflops_1core", o->fp32_gflops_1core);
		json_num(f, "fp32_gflops_all", o->fp32_gflops_all);
		json_num(f, "fp64_gflops_1core", o->fp64_gflops_1core);
		json_num(f, "fp64_gflops_all", o->fp64_gflops_all);
		fputc('}', f);
	}
	fputc(']', f);
	json_num(f, "stream_array_mib", r->stream_array_mib);
	json_num(f, "seconds", r->seconds);
	fprintf(f, ",\"measured_at\":%lld,\"busy\":%s", (long long)r->measured_at, r->busy ? "true" : "false");
	fputc('}', f);
}

#define JSON_DEPTH 4

/* A JSON reader that hands every scalar to on_value with the keys that lead to it (array elements
 * get their index as key). Enough for the cache file; it rejects what is not JSON. */
struct jreader {
	const char *p;
	char keys[JSON_DEPTH][64];
	char str[256];
	void (*on_value)(struct jreader *j, int depth, const char *str, double num);
	void *ctx;
	int version;
};

static void skip_ws(struct jreader *j)
{
	while (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')
		j->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Reads the string at j->p into out, truncated to size - 1 bytes. Returns 0, or -1 when malformed. */
static int parse_string(struct jreader *j, char *out, size_t size)
{
	size_t o = 0;
	if (*j->p++ != '"')
		return -1;
	for (;;) {
		unsigned char ch = (unsigned char)*j->p++;
		char enc[4];
		int len = 1;
		if (ch == '"')
			break;
		if (ch < 0x20)
			return -1; /* the end of the text included */
		enc[0] = (char)ch;
		if (ch == '\\') {
			ch = (unsigned char)*j->p++;
			static const char names[] = "\"\\/bfnrt", chars[] = "\"\\/\b\f\n\r\t";
			const char *plain = ch ? strchr(names, ch) : NULL;
			if (plain) {
				enc[0] = chars[plain - names];
			} else if (ch == 'u') {
				unsigned v = 0;
				for (int k = 0; k < 4; k++) {
					int h = hexval(j->p[k]);
					if (h < 0)
						return -1;
					v = v << 4 | (unsigned)h;
				}
				j->p += 4;
				if (v >= 0xd800 && v < 0xe000)
					v = 0xfffd; /* surrogates: not needed for what tprof writes */
				if (v < 0x80) {
					enc[0] = (char)v;
				} else if (v < 0x800) {
					enc[0] = (char)(0xc0 | v >> 6);
					enc[1] = (char)(0x80 | (v & 0x3f));
					len = 2;
				} else {
					enc[0] = (char)(0xe0 | v >> 12);
					enc[1] = (char)(0x80 | ((v >> 6) & 0x3f));
					enc[2] = (char)(0x80 | (v & 0x3f));
					len = 3;
				}
			} else {
				return -1;
			}
		}
		for (int k = 0; k < len; k++)
			if (o + 1 < size)
				out[o++] = enc[k];
	}
	out[o] = 0;
	return 0;
}

static int parse_value(struct jreader *j, int depth)
{
	skip_ws(j);
	char open = *j->p;
	if (open == '{' || open == '[') {
		char close = open == '{' ? '}' : ']';
		if (depth >= JSON_DEPTH)
			return -1;
		j->p++;
		skip_ws(j);
		if (*j->p == close) {
			j->p++;
			return 0;
		}
		for (int i = 0;; i++) {
			skip_ws(j);
			if (open == '{') {
				if (parse_string(j, j->keys[depth], sizeof(j->keys[depth])) != 0)
					return -1;
				skip_ws(j);
				if (*j->p++ != ':')
					return -1;
			} else {
				snprintf(j->keys[depth], sizeof(j->keys[depth]), "%d", i);
			}
			if (parse_value(j, depth + 1) != 0)
				return -1;
			skip_ws(j);
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			return *j->p++ == close ? 0 : -1;
		}
	}
	if (open == '"') {
		if (parse_string(j, j->str, sizeof(j->str)) != 0)
			return -1;
		j->on_value(j, depth, j->str, 0);
		return 0;
	}
	static const struct {
		const char *word;
		double v;
	} words[] = {{"true", 1}, {"false", 0}, {"null", 0}};
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (strncmp(j->p, words[i].word, strlen(words[i].word)) == 0) {
			j->p += strlen(words[i].word);
			j->on_value(j, depth, NULL, words[i].v);
			return 0;
		}
	if (open != '-' && (open < '0' || open > '9'))
		return -1;
	char *end;
	double v = strtod(j->p, &end);
	j->p = end;
	j->on_value(j, depth, NULL, v);
	return 0;
}

/* Stores one value of the cache file into the struct tprof_roofline at j->ctx. */
static void cache_value(struct jreader *j, int depth, const char *str, double num)
{
	struct tprof_roofline *r = j->ctx;
	const char *k = j->keys[depth - 1];
	struct tprof_roofline_isa *o = NULL;
	double *field = NULL;
	if (depth == 3 && strcmp(j->keys[0], "by_isa") == 0) {
		int i = atoi(j->keys[1]);
		if (i < 0 || i >= TPROF_ROOFLINE_MAX_ISA)
			return;
		o = &r->by_isa[i];
		r->nisa = i + 1 > r->nisa ? i + 1 : r->nisa;
		if (strcmp(k, "isa") == 0 && str)
			snprintf(o->name, sizeof(o->name), "%s", str);
		field = strcmp(k, "fp32_gflops_1core") == 0 ? &o->fp32_gflops_1core
			: strcmp(k, "fp32_gflops_all") == 0 ? &o->fp32_gflops_all
			: strcmp(k, "fp64_gflops_1core") == 0 ? &o->fp64_gflops_1core
			: strcmp(k, "fp64_gflops_all") == 0 ? &o->fp64_gflops_all
							     : NULL;
	} else if (depth == 1) {
		if (strcmp(k, "version") == 0)
			j->version = (int)num;
		else if (strcmp(k, "cores") == 0)
			r->cores = (int)num;
		else if (strcmp(k, "measured_at") == 0)
			r->measured_at = (int64_t)num;
		else if (strcmp(k, "busy") == 0)
			r->busy = num != 0;
		else if (strcmp(k, "cpu") == 0 && str)
			snprintf(r->cpu, sizeof(r->cpu), "%s", str);
		else if (strcmp(k, "isa") == 0 && str)
			snprintf(r->isa, sizeof(r->isa), "%s", str);
		static const struct {
			const char *key;
			size_t off;
		} nums[] = {
			{"fp32_gflops_1core", offsetof(struct tprof_roofline, fp32_gflops_1core)},
			{"fp32_gflops_all", offsetof(struct tprof_roofline, fp32_gflops_all)},
			{"fp64_gflops_1core", offsetof(struct tprof_roofline, fp64_gflops_1core)},
			{"fp64_gflops_all", offsetof(struct tprof_roofline, fp64_gflops_all)},
			{"stream_gbs_1core", offsetof(struct tprof_roofline, stream_gbs_1core)},
			{"stream_gbs_all", offsetof(struct tprof_roofline, stream_gbs_all)},
			{"stream_array_mib", offsetof(struct tprof_roofline, stream_array_mib)},
			{"seconds", offsetof(struct tprof_roofline, seconds)},
		};
		for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
			if (strcmp(k, nums[i].key) == 0)
				field = (double *)((char *)r + nums[i].off);
	}
	if (field && !str)
		*field = isfinite(num) && num > 0 ? num : 0;
}

/* Reads the cache at path into *out. Returns 0 when it holds a measurement of this machine (same
 * version, CPU model and core count, an ISA this CPU runs), 1 when there is no such cache, -1 when the
 * file cannot be read (errno), -2 when it is not JSON. */
int tprof_roofline_cache_read(const char *path, const struct tprof_roofline *here, struct tprof_roofline *out)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? 1 : -1;
	char buf[16384];
	size_t len = fread(buf, 1, sizeof(buf) - 1, f);
	int bad = ferror(f) || !feof(f);
	fclose(f);
	buf[len] = 0;
	memset(out, 0, sizeof(*out));
	struct jreader j = {.p = buf, .on_value = cache_value, .ctx = out};
	if (bad || *buf != '{' || parse_value(&j, 0) != 0 || (skip_ws(&j), *j.p != 0)) {
		memset(out, 0, sizeof(*out));
		return -2;
	}
	if (j.version != TPROF_ROOFLINE_VERSION || strcmp(out->cpu, here->cpu) != 0 || out->cores != here->cores ||
	    out->fp32_gflops_all <= 0 || !tprof_roofline_isa_supported(out->isa))
		return 1;
	snprintf(out->source, sizeof(out->source), "cache");
	snprintf(out->others_from, sizeof(out->others_from), "cache");
	return 0;
}

/* Creates the directories leading to the file `path` (mode 0700, as XDG asks for ~/.cache). */
static int make_parents(const char *path)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *s = dir + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(dir, 0700) != 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return 0;
}

/* Writes the measurement to path through a temporary file and rename(2), so that a reader never sees a
 * half-written cache. Returns 0, or -1 with errno set. */
int tprof_roofline_cache_write(const struct tprof_roofline *r, const char *path)
{
	char tmp[4200];
	if (make_parents(path) != 0)
		return -1;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
		return -1;
	}
	json_fields(f, r);
	fputc('\n', f);
	int bad = ferror(f);
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path) != 0) {
		int e = bad ? (errno ? errno : EIO) : errno;
		unlink(tmp);
		errno = e;
		return -1;
	}
	return 0;
}

const char *tprof_roofline_cache_path(char *buf, size_t size)
{
	const char *env = getenv("TPROF_ROOFLINE_CACHE"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (env && *env)
		snprintf(buf, size, "%s", env);
	else if (xdg && xdg[0] == '/') /* XDG: a relative path is invalid and must be ignored */
		snprintf(buf, size, "%s/tprof/roofline.json", xdg);
	else if (home && *home)
		snprintf(buf, size, "%s/.cache/tprof/roofline.json", home);
	else if (size)
		buf[0] = 0;
	return buf;
}
