/* System helpers the preload may use anywhere, including hooks and signal handlers: futex wait/wake,
 * thread ids, and message building into a fixed stack buffer written with write(2). Nothing here
 * allocates, takes a lock or touches stdio. */
#ifndef TPROF_SYS_H
#define TPROF_SYS_H

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The preload defines it as "a seccomp filter may kill at an unexpected call" (preload.h): the
 * helpers below then skip the calls that only make things faster. */
#ifndef TPROF_SYS_SANDBOXED
#define TPROF_SYS_SANDBOXED 0
#endif
#ifndef TPROF_SYS_LOCK_FUTURE
#define TPROF_SYS_LOCK_FUTURE 1
#endif

/* A system call made here, not through the C library: -errno on failure, errno untouched. For the
 * start-up of every process and a fork child's way to exec, where the C library's wrapper may be a
 * page not touched yet (a fault costs more than the call on a VM). */
static inline long tprof_raw_syscall6(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = a4, r8 __asm__("r8") = a5, r9 __asm__("r9") = a6;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
#else
	int saved = errno;
	long r = syscall(nr, a1, a2, a3, a4, a5, a6);
	if (r == -1)
		r = -errno;
	errno = saved;
	return r;
#endif
}

static inline long tprof_raw_syscall2(long nr, long a1, long a2)
{
	return tprof_raw_syscall6(nr, a1, a2, 0, 0, 0, 0);
}

static inline long tprof_raw_syscall4(long nr, long a1, long a2, long a3, long a4)
{
	return tprof_raw_syscall6(nr, a1, a2, a3, a4, 0, 0);
}

static inline pid_t tprof_getpid(void)
{
	return (pid_t)tprof_raw_syscall6(SYS_getpid, 0, 0, 0, 0, 0, 0);
}

/* getrlimit by the system call the C library makes (prlimit64), without touching errno: 0, or -1. */
static inline int tprof_getrlimit(int resource, struct rlimit *r)
{
	return tprof_raw_syscall4(SYS_prlimit64, 0, resource, 0, (long)r) == 0 ? 0 : -1;
}

/* Whether /proc is this process's: after entering another mount namespace (nsenter -m) it may be
 * that of another pid namespace, where this process is not, or is under another number. */
static inline int tprof_proc_is_own(void)
{
	char buf[24], self[] = "/proc/self"; /* on the stack: a fork child on its way to exec reads no page more */
	long n = tprof_raw_syscall4(SYS_readlink, (long)self, (long)buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return 0;
	uint64_t v = 0;
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return 0;
		v = v * 10 + (uint64_t)(buf[i] - '0');
	}
	return v == (uint64_t)tprof_getpid();
}

static inline pid_t tprof_gettid(void)
{
	return (pid_t)tprof_raw_syscall2(SYS_gettid, 0, 0);
}

/* The pidfd of a unix socket's peer (Linux 6.5; older kernel headers lack the name). */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* Maps in, with one system call, the pages of [p, p + len) a process is about to write: each page
 * it would otherwise fault in costs a trap, about 10 us on a VM, against 1 to 3 us here. Where the
 * kernel cannot (before Linux 5.14) the pages fault in as before. errno is kept. */
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
static inline void tprof_populate(void *p, size_t len)
{
	if (TPROF_SYS_SANDBOXED)
		return;
	int saved = errno;
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095, e = ((uintptr_t)p + len + 4095) & ~(uintptr_t)4095;
	syscall(SYS_madvise, a, e - a, MADV_POPULATE_WRITE);
	errno = saved;
}

/* mmap read-write, but never faulted in and locked whole: under mlockall(MCL_FUTURE) a new readable
 * mapping is, and one without access is not; it is mapped so, unlocked, then opened. Two system
 * calls more, about 20 us on a VM: only when the process may have asked for MCL_FUTURE. */
static inline void *tprof_map_unlocked(size_t len, int flags, int fd)
{
	if (TPROF_SYS_SANDBOXED || !TPROF_SYS_LOCK_FUTURE)
		return mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);
	void *m = mmap(NULL, len, PROT_NONE, flags, fd, 0);
	if (m != MAP_FAILED && (munlock(m, len) != 0 || mprotect(m, len, PROT_READ | PROT_WRITE) != 0)) {
		int e = errno;
		munmap(m, len);
		errno = e;
		return MAP_FAILED;
	}
	return m;
}

/* Sleeps while *addr == val, at most timeout_ns. Spurious returns are allowed; callers re-check.
 * Shared futexes: the word may sit in memory mapped by the traced process and its recorder. */
static inline void tprof_futex_wait(_Atomic uint32_t *addr, uint32_t val, long timeout_ns)
{
	struct timespec ts = {timeout_ns / 1000000000L, timeout_ns % 1000000000L};
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAIT, val, &ts, NULL, 0);
}

static inline void tprof_futex_wake(_Atomic uint32_t *addr)
{
	syscall(SYS_futex, (uint32_t *)addr, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0);
}

/* A message under construction; too-long messages are cut, never overflow. */
struct tprof_sbuf {
	char b[1024];
	unsigned n;
};

static inline void tprof_sb_str(struct tprof_sbuf *s, const char *str)
{
	while (str && *str && s->n < sizeof(s->b) - 1)
		s->b[s->n++] = *str++;
}

/* The length (2..4) of the valid UTF-8 sequence at s, a C1 control (U+0080..U+009F) excepted, or 0. */
static inline unsigned tprof_utf8_seq(const unsigned char *s)
{
	unsigned n;
	unsigned char lo = 0x80, hi = 0xbf; /* the range of the second byte */
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, lo = s[0] == 0xc2 ? 0xa0 : 0x80;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, lo = s[0] == 0xe0 ? 0xa0 : 0x80, hi = s[0] == 0xed ? 0x9f : 0xbf;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, lo = s[0] == 0xf0 ? 0x90 : 0x80, hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	else
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (unsigned i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* Appends str to b (cap bytes, *n used, room for a NUL kept) for a terminal, as the analyzer writes
 * names in its messages: control bytes (C0, C1, DEL) as \n, \r, \t or \xHH, a backslash as \\, and
 * each byte of invalid UTF-8 as \xHH, so that a program or file name holding an escape sequence or a
 * line break cannot act on it or forge a line of ours. */
static inline void tprof_text_append(char *b, size_t cap, unsigned *n, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str;
	while (s && *s && *n + 5 < cap) {
		unsigned char c = *s;
		unsigned len = c >= 0x80 ? tprof_utf8_seq(s) : c >= 0x20 && c != 0x7f && c != '\\';
		if (len) {
			if (*n + len + 5 >= cap)
				break;
			for (unsigned i = 0; i < len; i++)
				b[(*n)++] = (char)s[i];
			s += len;
			continue;
		}
		b[(*n)++] = '\\';
		s++;
		if (c == '\n' || c == '\r' || c == '\t' || c == '\\') {
			b[(*n)++] = c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : '\\';
			continue;
		}
		b[(*n)++] = 'x';
		b[(*n)++] = hex[c >> 4];
		b[(*n)++] = hex[c & 15];
	}
}

/* str as tprof_text_append writes it, into b alone (NUL-terminated); returns b. */
static inline const char *tprof_text_copy(char *b, size_t cap, const char *str)
{
	unsigned n = 0;
	tprof_text_append(b, cap, &n, str);
	b[n] = 0;
	return b;
}

static inline void tprof_sb_text(struct tprof_sbuf *s, const char *str)
{
	tprof_text_append(s->b, sizeof(s->b), &s->n, str);
}

static inline void tprof_sb_u64(struct tprof_sbuf *s, uint64_t v)
{
	char tmp[24];
	int i = 0;
	do {
		tmp[i++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (i && s->n < sizeof(s->b) - 1)
		s->b[s->n++] = tmp[--i];
}

/* Abstract socket names belong to a network namespace: a process in another (unshare -n, bwrap
 * --unshare-net) cannot reach them. So the recorder listens at a path too, named after its
 * abstract name in a directory of the user's own, TPROF_SOCK_DIR "-<uid>" (mode 0700), reachable
 * from every network namespace that sees the same /dev/shm (a tmpfs: a socket file costs 4 us
 * there, 25 us in /tmp on ext4, and programs seldom list it). Writes the directory (dir_only) or the
 * socket's path into out; returns its length, or 0 when the name cannot have one (empty, a '/',
 * too long for a socket address). */
#define TPROF_SOCK_DIR "/dev/shm/.tprof"
static inline size_t tprof_sock_path(char *out, size_t cap, const char *name, size_t len, uint32_t uid,
				     int dir_only)
{
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, TPROF_SOCK_DIR "-");
	tprof_sb_u64(&s, uid);
	if (!dir_only) {
		if (len == 0 || memchr(name, '/', len) || memchr(name, 0, len) || s.n + 1 + len >= sizeof(s.b))
			return 0;
		s.b[s.n++] = '/';
		memcpy(s.b + s.n, name, len);
		s.n += (unsigned)len;
	}
	if (s.n + 1 > cap || s.n + 1 > 108) /* 108: sockaddr_un's sun_path */
		return 0;
	memcpy(out, s.b, s.n);
	out[s.n] = 0;
	return s.n;
}

static inline void tprof_sb_hex(struct tprof_sbuf *s, uint64_t v)
{
	char tmp[16];
	int i = 0;
	do {
		tmp[i++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	tprof_sb_str(s, "0x");
	while (i && s->n < sizeof(s->b) - 1)
		s->b[s->n++] = tmp[--i];
}

/* Writes the message to stderr, retrying short writes; errno is preserved. */
/* libtprof.so (region.c): descriptor 2 is still the file it was as the image started; a program's
 * own file there must get none of tprof's lines. The recorder, which has its own, defines none. */
int tprof_stderr_is_start(void) __attribute__((weak));

static inline void tprof_sb_emit(struct tprof_sbuf *s)
{
	if (tprof_stderr_is_start && !tprof_stderr_is_start())
		return;
	int saved = errno;
	unsigned off = 0;
	while (off < s->n) {
		ssize_t w = write(2, s->b + off, s->n - off);
		if (w <= 0 && errno != EINTR)
			break;
		if (w > 0)
			off += (unsigned)w;
	}
	errno = saved;
}

/* Writes all of buf to fd; returns 0, or -1 with errno set. */
static inline int tprof_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* open, fstat, pread and close by the system calls the C library makes, never through a symbol
 * another preloaded library may define (libfaketime's fstat, called before its constructor ran,
 * set it up twice and left the program one more descriptor). -1 with errno, as the C library. */
static inline long tprof_sys_ret(long r)
{
	if (r < 0 && r > -4096) {
		errno = (int)-r;
		return -1;
	}
	return r;
}

static inline int tprof_sys_open(const char *path, int flags)
{
	return (int)tprof_sys_ret(tprof_raw_syscall4(SYS_openat, AT_FDCWD, (long)path, flags, 0));
}

static inline int tprof_sys_fstat(int fd, struct stat *st)
{
	char empty[1] = {0};
	return (int)tprof_sys_ret(tprof_raw_syscall4(SYS_newfstatat, fd, (long)empty, (long)st, AT_EMPTY_PATH));
}

static inline ssize_t tprof_sys_pread(int fd, void *buf, size_t n, off_t off)
{
	return tprof_sys_ret(tprof_raw_syscall4(SYS_pread64, fd, (long)buf, (long)n, (long)off));
}

static inline int tprof_sys_stat(const char *path, struct stat *st)
{
	return (int)tprof_sys_ret(tprof_raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)path, (long)st, 0));
}

/* The clock, by system call: libfaketime and its like define clock_gettime, and tprof's clock pairs
 * and timeouts are of the machine's time. Never on the hook path (a system call where the C
 * library reads the vDSO). */
static inline void tprof_sys_clock(clockid_t id, struct timespec *ts)
{
	if (tprof_raw_syscall2(SYS_clock_gettime, id, (long)ts) != 0)
		ts->tv_sec = ts->tv_nsec = 0;
}

static inline pid_t tprof_getppid(void)
{
	return (pid_t)tprof_raw_syscall2(SYS_getppid, 0, 0);
}

static inline int tprof_sys_close(int fd)
{
	return (int)tprof_sys_ret(tprof_raw_syscall2(SYS_close, fd, 0));
}

/* Reads a /proc file into buf (NUL-terminated, at most cap - 1 bytes); returns its length or -1.
 * The program may close descriptors at any moment (daemons close them all, then open their own
 * files), so the number opened here may stop being ours: the file is read with pread, which never
 * takes a pipe's or socket's data nor moves a file's offset, and closed only if it is still the
 * file opened. errno is kept. */
static inline ssize_t tprof_proc_read_err(const char *path, char *buf, size_t cap, int *open_err)
{
	int saved = errno;
	ssize_t n = -1;
	struct stat a, b;
	int fd = tprof_sys_open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && open_err)
		*open_err = errno;
	if (fd < 0 || tprof_sys_fstat(fd, &a) != 0) /* a failed fstat: the number is closed already */
		goto out;
	do
		n = tprof_sys_pread(fd, buf, cap - 1, 0);
	while (n < 0 && errno == EINTR);
	if (tprof_sys_fstat(fd, &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
		n = -1;
		goto out;
	}
	tprof_sys_close(fd);
	if (n >= 0)
		buf[n] = 0;
out:
	errno = saved;
	return n;
}

static inline ssize_t tprof_proc_read(const char *path, char *buf, size_t cap)
{
	return tprof_proc_read_err(path, buf, cap, NULL);
}

/* /proc/PID/stat (pid 0: this process), read into buf: returns the text from field 3 (the state
 * letter) on, past the command name, which may hold spaces and parentheses; NULL when unreadable
 * (*open_err, when given, gets the errno of an open that failed: EMFILE at the descriptor limit). */
static inline const char *tprof_stat_read_err(pid_t pid, char *buf, size_t cap, int *open_err)
{
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "/proc/");
	if (pid)
		tprof_sb_u64(&s, (uint64_t)pid);
	else
		tprof_sb_str(&s, "self");
	tprof_sb_str(&s, "/stat");
	s.b[s.n] = 0;
	if (tprof_proc_read_err(s.b, buf, cap, open_err) <= 0)
		return NULL;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p + 2 : NULL;
}

static inline const char *tprof_stat_read(pid_t pid, char *buf, size_t cap)
{
	return tprof_stat_read_err(pid, buf, cap, NULL);
}

/* Numeric field k (>= 4, counted as proc(5) counts: 4 ppid, 20 threads, 22 start time, 52 exit
 * code) of what tprof_stat_read returned; 0 on success. */
static inline int tprof_stat_field(const char *tail, int k, uint64_t *v)
{
	int field = 3;
	const char *p = tail;
	while (*p && field < k) {
		if (*p++ == ' ')
			field++;
	}
	if (field != k || *p < '0' || *p > '9')
		return -1;
	uint64_t x = 0;
	for (; *p >= '0' && *p <= '9'; p++)
		x = x * 10 + (uint64_t)(*p - '0');
	*v = x;
	return 0;
}

/* The tasks of this process, from /proc/self/task: fn(tid, arg) for each but the caller's, until
 * fn returns nonzero, which is returned; 0 once all were given, -1 when the list cannot be read.
 * buf holds the directory's entries: the caller's, static where the stack may be small. errno is
 * kept. */
static inline int tprof_each_task(char *buf, size_t len, int (*fn)(int32_t tid, void *arg), void *arg)
{
	int saved = errno;
	int fd = (int)syscall(SYS_open, "/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		errno = saved;
		return -1;
	}
	int32_t self = (int32_t)syscall(SYS_gettid);
	int r = 0;
	long got;
	while (!r && (got = syscall(SYS_getdents64, fd, buf, len)) > 0) {
		for (long at = 0; at < got && !r;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + at);
			at += d->reclen;
			if (d->name[0] < '0' || d->name[0] > '9')
				continue;
			int32_t tid = 0;
			for (const char *c = d->name; *c >= '0' && *c <= '9'; c++)
				tid = tid * 10 + (*c - '0');
			if (tid != self)
				r = fn(tid, arg);
		}
	}
	syscall(SYS_close, fd);
	errno = saved;
	return r;
}

#endif
