/* The shared memory of libtprof.so and how a process hands it to a recorder. At its first recorded
 * call (in every fork child too) the process creates a memfd, connects to a recorder over an
 * abstract unix socket, sends the memfd and its trace file's name, which the recorder creates in
 * its own directory, and waits for one byte of answer (writing its header meanwhile when it could
 * size the memory file itself); a recorder of another user's has the process create the file
 * itself, in its own directory, and send it too. Then it closes every descriptor it opened. What
 * stays is the mapping, which no closefrom, /proc/self/fd listing or descriptor limit can see. A
 * recorder is found through TPROF_RECORDER (tprof record sets it), else at the name of the nearest
 * traced ancestor that started one, else started here (tprof-recorder beside libtprof.so,
 * detached: it is not this process's child).
 *
 * The file is allocated by bumping an offset; the process maps it piece by piece as it grows,
 * without a descriptor: mremap with an old size of 0 makes a second mapping of a shared mapping's
 * pages, here of the last piece's, extended past its end, and the part that overlaps the last
 * piece is unmapped again. Address space is so taken only as the file is used. */
#include <alloca.h>
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/auxv.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "preload.h"
#include "sys.h"

extern char **environ;

struct tprof_shm *tprof_shm;

/* The pieces of the file this process has mapped, in file order. */
#define MAX_PIECES 64
static struct piece {
	uint64_t off, len;
	uint8_t *addr;
} pieces[MAX_PIECES];
static _Atomic uint32_t npieces;
static uint64_t piece_end; /* file offset where the last piece ends */
static uint64_t file_bytes; /* the memory file's size: no piece goes past it */

static char recorder_name[108]; /* the socket this process registered at, for its fork children */
/* That recorder takes a fork child without answering (TPROF_ANSWER_YES_ASYNC), and the user it runs
 * as (the effective one when it listened): a child registers so only where the recorder creates
 * its trace file, which it does for its own user only. */
static int recorder_async;
static uid_t recorder_uid;
static pid_t children_async; /* the process that forked while recorder_async was set */
static size_t recorder_name_len;
/* The pid namespace of the process that found recorder_name by its parent chain or started it
 * (its device and inode; 0 when it was inherited by name, through TPROF_RECORDER): an image in
 * another pid namespace could not find it so (tprof_region_exec_env). Fork children inherit it. */
static uint64_t recorder_pidns_dev, recorder_pidns_ino;

/* The device and inode of this process's pid namespace as its /proc shows them, by raw system
 * call (a vfork child on its way to exec calls it: errno untouched); 0 when it cannot be read. */
static int pidns_of_self(uint64_t *dev, uint64_t *ino)
{
	struct stat st;
	static const char path[] = "/proc/self/ns/pid";
	if (tprof_raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, 0) != 0)
		return 0;
	*dev = (uint64_t)st.st_dev;
	*ino = (uint64_t)st.st_ino;
	return 1;
}

/* fd is connected to a recorder this process found by its parent chain or started: an exec in
 * another pid namespace will need its name in the environment. */
static int found_by_walk(int fd)
{
	if (fd >= 0 && !pidns_of_self(&recorder_pidns_dev, &recorder_pidns_ino))
		recorder_pidns_dev = recorder_pidns_ino = 0;
	return fd;
}
static int recorder_silent; /* the recorder gave no answer to this process's registration */

/* The first piece holds the header (about 1.1 MiB) and the first thread's ring (2 MiB by default),
 * and with stacks on the first chunks of the stack index (1 MiB) and frames (4 MiB): a process with
 * one thread maps once. Each later piece is a mremap and a munmap, about 15 us on a VM. */
uint64_t tprof_as_limit(void)
{
	/* as last read when a filter may end the process at a call it does not expect (getrlimit) */
	static uint64_t limit;
	if (atomic_load(&tprof_sandboxed))
		return limit;
	/* the address space limit, or the data limit (ulimit -d), which private writable mappings
	 * count against, reserved or not (the stack table, the walk caches): the smaller */
	struct rlimit r;
	uint64_t l = 0;
	if (tprof_getrlimit(RLIMIT_AS, &r) == 0 && r.rlim_cur != RLIM_INFINITY)
		l = (uint64_t)r.rlim_cur;
	if (tprof_getrlimit(RLIMIT_DATA, &r) == 0 && r.rlim_cur != RLIM_INFINITY && (!l || (uint64_t)r.rlim_cur < l))
		l = (uint64_t)r.rlim_cur;
	limit = l;
	return limit;
}

static uint64_t first_piece(void)
{
	/* under mlockall(MCL_FUTURE) a mapping counts against the locked memory limit whole, even
	 * without access, and under an address space limit against that: the least that holds the
	 * header and a ring (the stack table's chunks come as pieces of their own, as needed) */
	return tprof_cfg.depth && !TPROF_SYS_LOCK_FUTURE && !tprof_as_limit() ? 12ull << 20 : 4ull << 20;
}

_Static_assert(TPROF_SHM_FILE_MIN >= (12ull << 20), "the smallest memory file holds the first piece");

/* ---- the allocator ---- */

/* Maps [piece_end, piece_end + len) as a new piece. Called with alloc_busy held. */
static int grow(uint64_t len)
{
	uint32_t n = atomic_load_explicit(&npieces, memory_order_relaxed);
	if (n == MAX_PIECES || piece_end + len > file_bytes)
		return -1;
	struct piece *last = &pieces[n - 1];
	uint8_t *m = mremap(last->addr, 0, last->len + len, MREMAP_MAYMOVE);
	if (m == MAP_FAILED)
		return -1;
	munmap(m, last->len);
	madvise(m + last->len, len, MADV_DONTFORK); /* as the first piece (map_header) */
	madvise(m + last->len, len, MADV_DONTDUMP);
	pieces[n] = (struct piece){piece_end, len, m + last->len};
	piece_end += len;
	atomic_store_explicit(&npieces, n + 1, memory_order_release);
	return 0;
}

void *tprof_shm_alloc(uint64_t len, uint64_t *off, int *busy)
{
	struct tprof_shm *s = tprof_shm;
	if (!s || len == 0)
		return NULL;
	len = (len + 63) & ~63ull;
	int saved = errno;
	/* Rare (a new thread's ring, a chunk of stacks): a flag, not a lock. A thread that finds it
	 * taken retries a few times, then gives up, so that a signal handler interrupting the holder
	 * on its own thread cannot wait forever. */
	uint32_t expect = 0;
	int tries = 0;
	while (!atomic_compare_exchange_weak(&s->alloc_busy, &expect, 1)) {
		expect = 0;
		if (++tries > 2000) {
			if (busy)
				*busy = 1;
			errno = saved;
			return NULL;
		}
		sched_yield();
	}
	void *p = NULL;
	uint64_t at = atomic_load_explicit(&s->used, memory_order_relaxed);
	if (at + len > piece_end) {
		/* double what is mapped, at least what is asked; under an address space limit, which
		 * the mapping counts against, at most a 64th of it (pieces are few all the same: at
		 * most MAX_PIECES) */
		uint64_t want = piece_end, limit = tprof_as_limit();
		if (limit && want > limit / 64)
			want = limit / 64;
		if (want < len)
			want = len;
		want = (want + (2u << 20) - 1) & ~((2ull << 20) - 1);
		if (grow(want) != 0 && (want == len || grow((len + 4095) & ~4095ull) != 0)) {
			atomic_store(&s->reserve_failed, 1);
			goto out;
		}
		at = pieces[atomic_load(&npieces) - 1].off; /* the rest of the older piece stays unused */
	}
	uint32_t n = atomic_load_explicit(&npieces, memory_order_relaxed);
	for (uint32_t i = n; i-- > 0;) {
		if (at >= pieces[i].off && at + len <= pieces[i].off + pieces[i].len) {
			p = pieces[i].addr + (at - pieces[i].off);
			break;
		}
	}
	if (p) {
		atomic_store_explicit(&s->used, at + len, memory_order_release);
		*off = at;
	}
out:
	atomic_store_explicit(&s->alloc_busy, 0, memory_order_release);
	errno = saved;
	return p;
}

/* ---- descriptors, carefully ---- */

/* The program may run at a descriptor limit it has used up, or below the two descriptors
 * registration holds at once (three when the process creates its trace file itself). Registration
 * first tries without touching the limit; only when it ran into it (EMFILE) is the limit raised for
 * a second try, and then put back. A privileged process (CAP_SYS_RESOURCE) may go past its hard
 * limit; others get their soft limit raised to the hard one, and at a hard limit with fewer free
 * they are not traced (and say so). A recorder the process starts inherits the limit: one that runs
 * out of descriptors answers so, which the process says too. */
struct nofile_guard {
	struct rlimit old;
	int raised;
};

static int emfile_seen; /* a descriptor could not be had for the limit (set by the steps below) */

static void note_fd_error(void)
{
	if (errno == EMFILE)
		emfile_seen = 1;
}

/* 1 when the limit was raised */
static int nofile_raise(struct nofile_guard *g)
{
	g->raised = 0;
	if (tprof_getrlimit(RLIMIT_NOFILE, &g->old) != 0)
		return 0;
	if (g->old.rlim_max != RLIM_INFINITY && g->old.rlim_max < 1024) {
		struct rlimit r = {g->old.rlim_max + 16, g->old.rlim_max + 16};
		if (setrlimit(RLIMIT_NOFILE, &r) == 0) {
			g->raised = 1;
			return 1;
		}
	}
	if (g->old.rlim_cur >= g->old.rlim_max)
		return 0;
	struct rlimit r = {g->old.rlim_max, g->old.rlim_max};
	g->raised = setrlimit(RLIMIT_NOFILE, &r) == 0;
	return g->raised;
}

static void nofile_restore(struct nofile_guard *g)
{
	if (g->raised)
		setrlimit(RLIMIT_NOFILE, &g->old);
	g->raised = 0;
}

/* An error's description, untranslated: strerror may load a message catalog (and allocate). */
static const char *errtext(int err)
{
	const char *d = strerrordesc_np(err);
	return d ? d : "unknown error";
}

static int say_to_recorder(const char *line, size_t n);

/* The registration's connection while its message is not sent yet (register_once), else -1: the
 * recorder is reading that connection and takes no other until it has the message or its end, so
 * a line said meanwhile (the trace file cannot be made) first ends it; said through the recorder
 * otherwise, the line waited 2 s for an answer, then was written a second time by the process. */
static __thread int unsent_sock = -1; /* this thread's: another thread's line leaves it alone */

/* One line naming the process, as the recorder's line does: in a tree of processes the user must
 * learn which one is not traced. It goes where the recorder's lines go, the stderr of the tree's
 * first process, when a recorder is known (said through it: TPROF_HELLO_SAY): the program's own
 * stderr may be its stdout by now (2>&1), or a file of its own. Without one, on this process's. */
static void say(const char *a, const char *b, const char *c)
{
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "tprof: ");
	tprof_sb_text(&s, program_invocation_short_name);
	tprof_sb_str(&s, " (pid ");
	tprof_sb_u64(&s, (uint64_t)tprof_getpid());
	tprof_sb_str(&s, "): ");
	tprof_sb_str(&s, a);
	tprof_sb_text(&s, b); /* a path, the program's */
	tprof_sb_str(&s, c);
	if (unsent_sock >= 0) {
		close(unsent_sock);
		unsent_sock = -1;
	}
	if (s.n < sizeof(s.b) && say_to_recorder(s.b, s.n))
		return;
	tprof_sb_str(&s, "\n");
	tprof_sb_emit(&s);
}

void tprof_region_warn(const char *a, const char *b, const char *c)
{
	say(a, b, c);
}

/* What no hook sees (TPROF_UNHOOKED_*): kept by the process, which a fork child inherits, and put in
 * its shared memory for the trace's END block. */
static _Atomic uint32_t unhooked;

void tprof_region_unhooked(uint32_t bits)
{
	atomic_fetch_or(&unhooked, bits);
	if (tprof_shm)
		atomic_fetch_or(&tprof_shm->unhooked, bits);
}

/* An allocator preloaded after libtprof.so (tprof record puts it there) that defines C++'s operator
 * new and delete (tcmalloc, jemalloc, mimalloc; AddressSanitizer's runtime too) serves them without
 * malloc: new and delete never reach a hook. Said once per image that has a C++ library loaded, as
 * it registers (a fork child has its parent's answer), and kept for its trace's END block. */
void tprof_region_note_cxx(int child)
{
	if (!child && tprof_find_symbol("_ZSt9terminatev")) { /* else no C++ library: no new to call */
		void *f = tprof_find_symbol("_Znwm");
		struct dl_find_object fo;
		struct link_map *m = f && _dl_find_object(f, &fo) == 0 ? fo.dlfo_link_map : NULL;
		const char *n = m ? m->l_name : NULL;
		/* the allocator behind the hooks (the next malloc: one preloaded after libtprof.so)
		 * defines operator new too; a library linked with its own copy of the C++ library
		 * exports one that calls malloc, which is recorded */
		struct dl_find_object mo;
		void *next = tprof_next_malloc();
		if (n && *n && !tprof_has_text(n, "libstdc++") && !tprof_has_text(n, "libc++") && next &&
		    _dl_find_object(next, &mo) == 0 && mo.dlfo_link_map == m) {
			atomic_fetch_or(&unhooked, TPROF_UNHOOKED_NEW);
			if (!tprof_cfg.quiet) /* the trace says it: its report warns */
				say("C++ operator new and delete are ", n,
				    "'s, which serves them without malloc: new and delete are not in the trace");
		}
	}
	uint32_t u = atomic_load(&unhooked);
	if (u && tprof_shm)
		atomic_fetch_or(&tprof_shm->unhooked, u);
}

/* ---- the trace file ---- */

static const char *program_name(void);

/* Builds the trace path from TPROF_OUTPUT (%p: pid, %%: %) or tprof.<program>.<pid>.trace, at
 * most 1023 bytes, in a static buffer (valid until the next call), which shares its page with
 * variables every registration writes: a fork child copies no page more for it. */
static const char *make_path(pid_t pid)
{
	static struct tprof_sbuf s; /* registration is one thread's at a time, signals blocked: static,
				     * so that a fork child's first call writes no fresh stack page */
	s.n = 0;
	const char *o = tprof_cfg.output;
	size_t olen = o ? strlen(o) : 0;
	if (olen) {
		for (; *o; o++) {
			if (o[0] == '%' && o[1] == 'p') {
				tprof_sb_u64(&s, (uint64_t)pid);
				o++;
			} else if (o[0] == '%' && o[1] == '%') {
				tprof_sb_str(&s, "%");
				o++;
			} else {
				char c[2] = {*o, 0};
				tprof_sb_str(&s, c);
			}
		}
	}
	if (!olen || tprof_cfg.output[olen - 1] == '/') { /* no name, or a directory's: the default */
		tprof_sb_str(&s, "tprof.");
		/* at most 200 bytes of the name, so that the file's name, its pid, ".trace" and a ".999"
		 * fit a directory entry's 255 (bytes outside printable ASCII are '_' anyway) */
		const char *nm = program_name();
		for (size_t i = 0; i < 200 && nm[i]; i++) {
			char ch[2] = {(nm[i] == '/' || (signed char)nm[i] < 32) ? '_' : nm[i], 0};
			tprof_sb_str(&s, ch);
		}
		tprof_sb_str(&s, ".");
		tprof_sb_u64(&s, (uint64_t)pid);
		tprof_sb_str(&s, ".trace");
	}
	if (s.n >= sizeof(s.b) - 1)
		return NULL; /* cut: another file's name */
	s.b[s.n] = 0;
	return s.b;
}

/* make_path, or NULL after saying that the name is too long. */
static const char *trace_name_said(pid_t pid)
{
	const char *p = make_path(pid);
	if (!p)
		say("the trace's name (TPROF_OUTPUT) is longer than 1022 bytes", "", "; not tracing");
	return p;
}

/* base, or base.k for k > 0, into path (cap bytes); -1 when it does not fit. */
static int suffixed(char *path, size_t cap, const char *base, int k)
{
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, base);
	if (k) {
		tprof_sb_str(&s, ".");
		tprof_sb_u64(&s, (uint64_t)k);
	}
	if (s.n >= sizeof(s.b) - 1 || s.n >= cap - 1)
		return -1;
	memcpy(path, s.b, s.n);
	path[s.n] = 0;
	return 0;
}

/* Creates the trace file exclusively: never through a symlink, never over an existing file. An
 * existing name gets a numeric suffix (.1, .2, ...). Returns the descriptor, path in path; or -1,
 * said. For a process whose recorder runs as another user, which does not create it (hello).
 * Where the file system can, the file is made without a name first (O_TMPFILE), which is the slow
 * part (an inode), and then named: a process killed meanwhile leaves no empty file that no
 * recorder knows of, and between the name and the recorder's taking it there are a few system
 * calls only. */
static int open_trace(char *path, size_t cap, pid_t pid)
{
	const char *base = trace_name_said(pid);
	if (!base)
		return -1;
	char dir[1024];
	const char *slash = strrchr(base, '/');
	size_t dl = !slash ? 1 : slash == base ? 1 : (size_t)(slash - base);
	int tmp = -1;
	if (dl < sizeof(dir)) {
		memcpy(dir, slash ? base : ".", dl);
		dir[dl] = 0;
		tmp = open(dir, O_WRONLY | O_TMPFILE | O_CLOEXEC, 0644);
	}
	if (tmp >= 0) {
		struct tprof_sbuf fdp = {.n = 0};
		tprof_sb_str(&fdp, "/proc/self/fd/");
		tprof_sb_u64(&fdp, (uint64_t)tmp);
		fdp.b[fdp.n] = 0;
		for (int k = 0; k < 1000; k++) {
			if (suffixed(path, cap, base, k) != 0)
				break; /* said below, by the loop that creates it by name */
			if (linkat(AT_FDCWD, fdp.b, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) {
				/* opened again by its name, which the recorder reads off the descriptor (the
				 * first still says the file has none) */
				struct stat a, b;
				int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
				if (fd >= 0 && tprof_sys_fstat(fd, &a) == 0 && tprof_sys_fstat(tmp, &b) == 0 &&
				    a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
					close(tmp);
					tmp = fd;
				} else if (fd >= 0) {
					close(fd);
				}
				flock(tmp, LOCK_EX | LOCK_NB); /* as below */
				return tmp;
			}
			if (errno != EEXIST)
				break; /* (no /proc): by name */
		}
		close(tmp);
	}
	for (int k = 0; k < 1000; k++) {
		if (suffixed(path, cap, base, k) != 0) {
			errno = ENAMETOOLONG; /* the suffix did not fit: never another file's name */
			break;
		}
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0) {
			/* held by the recorder (the lock goes with the open file) until the trace is
			 * complete: a reader waits for it (docs/FORMAT.md) */
			flock(fd, LOCK_EX | LOCK_NB);
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	int err = errno;
	note_fd_error();
	if (!emfile_seen) {
		char why[160] = ": ";
		const char *e = errtext(err);
		size_t n = strnlen(e, sizeof(why) - 32);
		memcpy(why + 2, e, n);
		memcpy(why + 2 + n, "; not tracing", sizeof("; not tracing"));
		say("cannot create ", path, why);
	}
	return -1;
}

/* ---- finding or starting a recorder ---- */

/* Field 4 (ppid) and 22 (start time) of /proc/PID/stat; -1 when it cannot be read. */
static int proc_stat(pid_t pid, pid_t *ppid, uint64_t *start)
{
	char buf[1024];
	uint64_t pp;
	int err = 0;
	const char *t = tprof_stat_read_err(pid, buf, sizeof(buf), &err);
	if (!t) {
		if (err == EMFILE)
			emfile_seen = 1; /* at the descriptor limit: registration raises it and tries again */
		return -1;
	}
	if (tprof_stat_field(t, 4, &pp) != 0 || tprof_stat_field(t, 22, start) != 0)
		return -1;
	*ppid = (pid_t)pp;
	return 0;
}

/* The name of the recorder process pid started, as a process of user uid: "\0tprof.UID.PID.START". */
static size_t socket_name(char *out, uid_t uid, pid_t pid, uint64_t start)
{
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, "#tprof.");
	tprof_sb_u64(&s, (uint64_t)uid);
	tprof_sb_str(&s, ".");
	tprof_sb_u64(&s, (uint64_t)pid);
	tprof_sb_str(&s, ".");
	tprof_sb_u64(&s, start);
	s.b[0] = 0; /* abstract namespace */
	memcpy(out, s.b, s.n);
	return s.n;
}

/* The inode of this process's user namespace when it is not the initial one, else 0 (also when
 * /proc cannot tell). In a user namespace of its own a process's ids are other numbers: under
 * unshare -r, uid 12345 is 0, and the name of a recorder it starts could be that of root's recorder,
 * started by the same pid before (setpriv then unshare, each exec'ing the next), which this process
 * may not use. Its recorder then takes the name with ".u" and this number after it, which the
 * processes of the same namespace look for too. */
static uint64_t userns_tag(void)
{
	/* asked each time (rarely: a name found taken), as a process may enter a namespace itself */
	struct stat st;
	return tprof_sys_stat("/proc/self/ns/user", &st) == 0 && st.st_ino != 0xEFFFFFFDu /* PROC_USER_INIT_INO */
		       ? (uint64_t)st.st_ino
		       : 0;
}

/* name (of len bytes, from socket_name, in a buffer of sizeof(recorder_name)) with the user
 * namespace's tag after it; its new length, or 0 when there is none (name unchanged) */
static size_t tag_name(char *name, size_t len)
{
	uint64_t tag = userns_tag();
	if (!tag || len + 22 > sizeof(recorder_name))
		return 0;
	struct tprof_sbuf s = {.n = 0};
	tprof_sb_str(&s, ".u");
	tprof_sb_u64(&s, tag);
	memcpy(name + len, s.b, s.n);
	return len + s.n;
}

/* Set by try_connect when a recorder listens at the name but runs as a user this process may not
 * hand its memory to (userns_tag). */
static int name_taken;

static int try_connect(const char *name, size_t len)
{
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	if (len > sizeof(a.sun_path))
		return -1;
	memcpy(a.sun_path, name, len);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		note_fd_error();
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) != 0) {
		close(fd);
		return -1;
	}
	/* abstract names are open to every user: never hand our memory and trace to another's */
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || (cred.uid != getuid() && cred.uid != 0)) {
		close(fd);
		name_taken = 1;
		return -1;
	}
	recorder_uid = cred.uid;
	return fd;
}

/* The user a recorder's name says it runs as (tprof.UID.…, as socket_name and tprof record make
 * them), else this process's. The directory of its path is that user's: in a user namespace of its
 * own, a process's getuid() is another number than the recorder's (0 under unshare -r, or the
 * overflow id before the map is written). */
static uint32_t name_uid(const char *name, size_t len)
{
	static const char pre[] = "tprof.";
	uint64_t u = 0;
	size_t i = 1 + sizeof(pre) - 1, d = 0;
	if (len > i && memcmp(name + 1, pre, sizeof(pre) - 1) == 0) {
		for (; i < len && name[i] >= '0' && name[i] <= '9' && d < 10; i++, d++)
			u = u * 10 + (uint64_t)(name[i] - '0');
		if (d && i < len && name[i] == '.' && u <= UINT32_MAX)
			return (uint32_t)u;
	}
	return (uint32_t)getuid();
}

/* The recorder of an abstract name through its path (tprof_sock_path): from another network
 * namespace, the abstract name cannot be reached. */
static int try_connect_path(const char *name, size_t len)
{
	char path[108];
	if (len < 2 || name[0] != 0)
		return -1;
	size_t n = tprof_sock_path(path, sizeof(path), name + 1, len - 1, name_uid(name, len), 0);
	return n ? try_connect(path, n + 1) : -1;
}

/* Has the recorder this process knows write line (n bytes, no newline) on its stderr, and waits for
 * it to have done so; 0 when there is none to reach (then the caller writes it). One socket for the
 * moment; what a registration keeps of its own search (the recorder's user, a name taken, a
 * descriptor limit met) is left as it was. */
static int say_to_recorder(const char *line, size_t n)
{
	if (!recorder_name_len || recorder_silent || atomic_load(&tprof_sandboxed) || n > TPROF_HELLO_NAME_MAX)
		return 0;
	uid_t uid = recorder_uid;
	int taken = name_taken, emfile = emfile_seen, e = errno;
	int fd = try_connect(recorder_name, recorder_name_len);
	if (fd < 0)
		fd = try_connect_path(recorder_name, recorder_name_len);
	recorder_uid = uid;
	name_taken = taken;
	emfile_seen = emfile;
	int ok = 0;
	if (fd >= 0) {
		/* a recorder that is stopped, or busy with a peer that never sent its message, must not
		 * hold the program: then the line goes to its own stderr */
		struct timeval tv = {2, 0};
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		struct tprof_hello h = {TPROF_SHM_MAGIC, TPROF_SHM_VERSION, (int32_t)tprof_getpid(), TPROF_HELLO_SAY, 0};
		struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)line, n}};
		struct msghdr m = {.msg_iov = iov, .msg_iovlen = 2};
		ssize_t w;
		do
			w = sendmsg(fd, &m, MSG_NOSIGNAL);
		while (w < 0 && errno == EINTR);
		char ack = 0;
		ssize_t r = -1;
		if (w == (ssize_t)(sizeof(h) + n))
			do
				r = recv(fd, &ack, 1, 0);
			while (r < 0 && errno == EINTR);
		ok = r == 1 && ack == TPROF_ANSWER_YES;
		close(fd);
	}
	errno = e;
	return ok;
}

/* Whether any recorder of user uid listens at a path: one look before trying the names of a walk
 * there, which a process that starts the first recorder would otherwise try one by one. */
static int sock_dir_present(uid_t uid)
{
	char dir[108];
	return tprof_sock_path(dir, sizeof(dir), "", 0, (uint32_t)uid, 1) && access(dir, X_OK) == 0;
}

/* The path of tprof-recorder: beside libtprof.so. */
static int recorder_path(char *out, size_t cap)
{
	Dl_info di;
	if (!dladdr((void *)&tprof_region_start, &di) || !di.dli_fname)
		return -1;
	const char *slash = strrchr(di.dli_fname, '/');
	size_t dir = slash ? (size_t)(slash - di.dli_fname) : 1;
	const char *d = slash ? di.dli_fname : ".";
	static const char exe[] = "/tprof-recorder";
	if (dir + sizeof(exe) > cap)
		return -1;
	memcpy(out, d, dir);
	memcpy(out + dir, exe, sizeof(exe));
	return 0;
}

static int spawn_err; /* why the last recorder could not be started (clone's errno), else 0 */
static const char *spawn_why; /* or this, when it was not tried */

/* The file on descriptor 2 as the image started (tprof_region_note_stderr): the recorder started
 * later writes its lines there, and only there. A program that closed 2 and opened a file of its
 * own, which got 2, before its first heap call would find them in that file. */
static struct {
	int seen; /* 1: known; -1: 2 was closed */
	dev_t dev;
	ino_t ino;
} start_stderr;

TPROF_STARTUP void tprof_region_note_stderr(void)
{
	struct stat st;
	char empty[1] = {0}; /* the call the C library's fstat makes (a seccomp filter may allow no other) */
	if (start_stderr.seen)
		return;
	if (tprof_raw_syscall4(SYS_newfstatat, 2, (long)empty, (long)&st, AT_EMPTY_PATH) == 0)
		start_stderr.dev = st.st_dev, start_stderr.ino = st.st_ino, start_stderr.seen = 1;
	else
		start_stderr.seen = -1;
}

int tprof_stderr_is_start(void)
{
	struct stat st;
	int saved = errno;
	tprof_region_note_stderr(); /* a library's constructor registered before ours ran */
	int same = start_stderr.seen == 1 && tprof_sys_fstat(2, &st) == 0 && st.st_dev == start_stderr.dev &&
		   st.st_ino == start_stderr.ino;
	errno = saved;
	return same;
}

/* A process whose children go to another pid namespace (unshare -p, nsenter -p): a recorder cloned
 * now would be in that namespace, a child of its init, which may never reap it; and when the
 * namespace is new (unshare without a fork), its first process, whose end (the recorder's starter
 * exits at once) ends the namespace: the program's fork then fails. The clone is made in the
 * process's own pid namespace instead: set for it, and the children's set back after it (*kids, to
 * close). 0 when nothing is to be done, 1 when it was set, -1 when it cannot be: no right to enter
 * the process's own namespace, or a new namespace no process is in yet, which cannot be entered
 * back (the kernel shows its link only once it has an init). */
static int pidns_own_for_clone(int *kids)
{
	struct stat a, b;
	*kids = -1;
	if (tprof_sys_stat("/proc/self/ns/pid", &a) != 0)
		return 0;
	if (tprof_sys_stat("/proc/self/ns/pid_for_children", &b) != 0) /* a new namespace no process is in yet */
		return errno == ENOENT ? -1 : 0;
	if (a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return 0;
	int own = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	*kids = open("/proc/self/ns/pid_for_children", O_RDONLY | O_CLOEXEC);
	int ok = own >= 0 && *kids >= 0 && syscall(SYS_setns, own, (long)CLONE_NEWPID) == 0;
	if (own >= 0)
		close(own);
	if (!ok && *kids >= 0) {
		close(*kids);
		*kids = -1;
	}
	return ok ? 1 : -1;
}

/* Starts a recorder listening at name, detached from this process (a grandchild made with raw clone
 * calls, so that the program's wait calls never see it and no fork handler runs), and returns a
 * socket connected to it, or -1. Never in another pid namespace than the process's: there it
 * would be a child of that namespace's init, which may never reap it. */
static int spawn_recorder(const char *name, size_t len)
{
	static TPROF_LARGE char path[4096]; /* one registration at a time (register_once) */
	if (tprof_getppid() == 0 && tprof_getpid() != 1) {
		/* its parent is outside its pid namespace (nsenter -p): the recorder would be orphaned
		 * to the namespace's init, which need not reap it */
		spawn_why = "its parent is outside its pid namespace, whose init would get the recorder";
		return -1;
	}
	if (recorder_path(path, sizeof(path)) != 0 || access(path, X_OK) != 0) {
		say("cannot find the recorder ", path, "; not tracing");
		return -1;
	}
	struct sockaddr_un a;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	memcpy(a.sun_path, name, len);
	int lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		note_fd_error();
		return -1;
	}
	if (bind(lfd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) != 0 ||
	    listen(lfd, 64) != 0) {
		int e = errno;
		close(lfd);
		if (e != EADDRINUSE)
			return -1;
		name_taken = 0;
		return try_connect(name, len); /* a sibling started one first */
	}
	int err_ok = tprof_stderr_is_start(); /* else the recorder's lines go nowhere */
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	/* the recorder's environment: the program's, less the preload (it must not trace itself) */
	size_t n = 0;
	while (environ && environ[n])
		n++;
	char **envp = alloca((n + 1) * sizeof(char *));
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
			envp[k++] = environ[i];
	envp[k] = NULL;
	char rootbuf[24];
	struct tprof_sbuf rs = {.n = 0};
	tprof_sb_u64(&rs, (uint64_t)tprof_getpid());
	memcpy(rootbuf, rs.b, rs.n);
	rootbuf[rs.n] = 0;
	char *argv[] = {path, (char *)"--listen-fd", (char *)"3", (char *)"--root", rootbuf, NULL};
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	/* A child subreaper (a container's init, a supervisor) would get the orphaned recorder as its
	 * child, see it in its wait calls and, waiting for every child to end, wait for it forever:
	 * the flag is off from the first clone until its child has exited and been reaped, so the
	 * recorder goes to the next subreaper up, or to init. */
	int reaper = 0;
	if (syscall(SYS_prctl, (long)PR_GET_CHILD_SUBREAPER, &reaper, 0L, 0L, 0L) != 0)
		reaper = 0;
	if (reaper)
		syscall(SYS_prctl, (long)PR_SET_CHILD_SUBREAPER, 0L, 0L, 0L, 0L);
	/* The init of a pid namespace (unshare -p -f, a container's first process) is where every
	 * orphan of it goes: a recorder orphaned by the clone in between would be its child all the
	 * same, one it sees in its wait calls and, waiting for every child, waits for (a hang: the
	 * recorder waits for its root). There the clone in between stays, the recorder's parent,
	 * with no descriptor open, waiting for it: a child without an exit signal, which those calls
	 * do not see (but with __WALL or __WCLONE). An exec would give it one (SIGCHLD): the recorder
	 * cannot be that child itself. Both end with the namespace. */
	int direct = tprof_getpid() == 1;
	int kids = -1, ns = pidns_own_for_clone(&kids);
	long c = -1;
	if (ns >= 0)
		c = syscall(SYS_clone, 0L /* no exit signal: invisible to the program's wait calls */, NULL, NULL,
			    NULL, NULL);
	spawn_err = ns < 0 ? 0 : c < 0 ? errno : 0;
	if (ns > 0 && c != 0) {
		syscall(SYS_setns, kids, (long)CLONE_NEWPID); /* the program's next fork: as it asked */
		close(kids);
	}
	if (c == 0) {
		long g = syscall(SYS_clone, (long)SIGCHLD, NULL, NULL, NULL, NULL);
		if (g > 0 && direct) {
			syscall(SYS_close_range, 0u, ~0u, 0u); /* none of the program's files held open */
			syscall(SYS_prctl, (long)PR_SET_NAME, (long)"tprof-wait", 0L, 0L, 0L); /* in ps -o comm */
			int st;
			while (syscall(SYS_wait4, g, &st, (long)__WALL, NULL) < 0 && errno == EINTR)
				;
		}
		if (g == 0) {
			setsid();
			/* 3: the listening socket, 0 and 1: /dev/null, 2 kept (/dev/null too when it is
			 * not the file it was as the image started). Everything else goes
			 * first, so that this works under a descriptor limit of 5 too; either may sit on
			 * 0, 1 or 3 (a program that closed them), and dup2 onto itself would keep
			 * close-on-exec */
			int keep[3] = {2, lfd, devnull}; /* sorted, then the gaps between them closed */
			for (int i = 0; i < 3; i++)
				for (int j = i + 1; j < 3; j++)
					if (keep[j] < keep[i]) {
						int x = keep[i];
						keep[i] = keep[j];
						keep[j] = x;
					}
			int from = 0;
			for (int i = 0; i < 3; i++)
				if (keep[i] >= from) {
					if (keep[i] > from)
						syscall(SYS_close_range, (unsigned)from, (unsigned)keep[i] - 1u, 0u);
					from = keep[i] + 1;
				}
			syscall(SYS_close_range, (unsigned)from, ~0u, 0u);
			int l = lfd;
			if (devnull >= 0) {
				if (l < 3) /* 2 too: stderr closed, the socket took its number */
					l = fcntl(l, F_DUPFD, 3); /* below the limit: few are open */
				for (int t = 0; t < (err_ok ? 2 : 3); t++)
					if (devnull == t)
						fcntl(t, F_SETFD, 0);
					else
						dup2(devnull, t);
			}
			if (l == 3)
				fcntl(3, F_SETFD, 0);
			else
				dup2(l, 3);
			syscall(SYS_close_range, 4u, ~0u, 0u);
			struct sigaction sa;
			memset(&sa, 0, sizeof(sa));
			sa.sa_handler = SIG_DFL;
			for (int sig = 1; sig < 32; sig++)
				if (sig != SIGKILL && sig != SIGSTOP)
					syscall(SYS_rt_sigaction, (long)sig, &sa, NULL, 8L);
			sigset_t none;
			sigemptyset(&none);
			syscall(SYS_rt_sigprocmask, (long)SIG_SETMASK, &none, NULL, 8L);
			/* a program that turned the TSC off (PR_SET_TSC) passes that on through exec too:
			 * the recorder reads it */
			syscall(SYS_prctl, (long)PR_SET_TSC, (long)PR_TSC_ENABLE, 0L, 0L, 0L);
			syscall(SYS_execve, path, argv, envp);
			syscall(SYS_exit_group, 127L);
		}
		syscall(SYS_exit_group, g < 0 ? 1L : 0L);
	}
	if (c > 0 && !direct) {
		int st;
		while (syscall(SYS_wait4, c, &st, (long)__WALL, NULL) < 0 && errno == EINTR)
			;
	}
	if (reaper)
		syscall(SYS_prctl, (long)PR_SET_CHILD_SUBREAPER, 1L, 0L, 0L, 0L);
	syscall(SYS_rt_sigprocmask, (long)SIG_SETMASK, &old, NULL, 8L); /* exactly (release_signals) */
	close(lfd);
	if (devnull >= 0)
		close(devnull);
	if (ns < 0)
		spawn_why = "its children's pid namespace is not its own, and it may not enter its own (unshare -p "
			    "before its first heap call?)";
	if (c < 0)
		return -1;
	return try_connect(name, len);
}

/* A socket connected to the recorder process pid (started at start) started as one of the users,
 * by its abstract name (left in recorder_name), or -1. */
static int connect_named(const uid_t *uids, int nuids, pid_t pid, uint64_t start)
{
	for (int u = 0; u < nuids; u++) {
		recorder_name_len = socket_name(recorder_name, uids[u], pid, start);
		name_taken = 0;
		int fd = try_connect(recorder_name, recorder_name_len);
		if (fd >= 0)
			return fd;
		size_t tagged = name_taken ? tag_name(recorder_name, recorder_name_len) : 0;
		if (tagged && (fd = try_connect(recorder_name, tagged)) >= 0) {
			recorder_name_len = tagged;
			return fd;
		}
	}
	return -1;
}

/* A socket connected to this process's recorder, or -1: the one it found or started before (a fork
 * child's parent's, in memory: no walk through /proc), TPROF_RECORDER's, the nearest traced
 * ancestor's, or one started now. */
static int find_recorder(void)
{
	if (recorder_name_len) { /* found or started before (a fork child: by its parent): no walk */
		int fd = try_connect(recorder_name, recorder_name_len);
		if (fd < 0)
			fd = try_connect_path(recorder_name, recorder_name_len);
		if (fd >= 0)
			return fd;
	}
	recorder_async = 0; /* another recorder: its answer tells */
	recorder_pidns_dev = recorder_pidns_ino = 0;
	const char *env = getenv(TPROF_RECORDER_ENV);
	if (env && *env && strlen(env) < sizeof(recorder_name) - 1) {
		recorder_name[0] = 0; /* abstract */
		recorder_name_len = 1 + strlen(env);
		memcpy(recorder_name + 1, env, recorder_name_len - 1);
		int fd = try_connect(recorder_name, recorder_name_len);
		if (fd < 0)
			fd = try_connect_path(recorder_name, recorder_name_len);
		if (fd >= 0)
			return fd;
	}
	/* The nearest ancestor that started a recorder; the walk stops at the first process that
	 * cannot be read (another user's, or gone) or after 4096 steps. A recorder is named after the
	 * user that started it: this process's, or root's, which takes every user's processes (a
	 * program that dropped its privileges and exec'd). Then the same names at their paths: a
	 * process in a network namespace of its own reaches its ancestors' recorder so. */
	uid_t uids[2] = {getuid(), 0};
	int nuids = uids[0] != 0 ? 2 : 1;
	pid_t walked[32]; /* the first steps, for the paths below */
	uint64_t starts[32];
	int nwalked = 0;
	/* A process gone since its child was read (a shell that ended while its child exec'd us: no
	 * file, or a parent 0 while it is being released) leaves its children with another parent by
	 * then, their subreaper or init: the walk starts again from this process, up to 3 times, unless
	 * it fails where and as it did before (a process of another user's, hidden; a parent 0 that
	 * stays is one outside this pid namespace). It includes pid 1, the init of a pid namespace
	 * that started a recorder, and goes up to 4096 steps (pids are reused: a bound, not a cycle's
	 * end). */
	pid_t fail_at = -1, fail_child = -1;
	for (int attempt = 0;; attempt++) {
		/* /proc of another pid namespace, where this process is under another number (the child
		 * of a process that entered a pid namespace with setns, whose parent is pid 0 to it,
		 * still sees the /proc of the namespace outside): the walk is in its numbers, from the
		 * parent it shows */
		pid_t pid = tprof_getppid(), pp0, child = 0;
		uint64_t start0;
		if (!tprof_proc_is_own() && proc_stat(0, &pp0, &start0) == 0)
			pid = pp0;
		nwalked = 0;
		int again = 0;
		for (int depth = 0; depth < 4096 && pid >= 1; depth++) {
			pid_t pp;
			uint64_t start;
			int bad = proc_stat(pid, &pp, &start) != 0;
			if (bad || (pp == 0 && pid != 1)) {
				if (attempt < 3 && (pid != fail_at || child != fail_child)) {
					fail_at = pid;
					fail_child = child;
					again = 1;
					break;
				}
				if (bad)
					break;
			}
			int fd = connect_named(uids, nuids, pid, start);
			if (fd >= 0)
				return found_by_walk(fd);
			if (nwalked < 32) {
				walked[nwalked] = pid;
				starts[nwalked++] = start;
			}
			child = pid;
			if (pp == 0)
				break;
			pid = pp;
		}
		if (!again)
			break;
	}
	int paths = sock_dir_present(uids[0]); /* another user's directory is closed to this one */
	for (int i = 0; i < nwalked && paths; i++) {
		recorder_name_len = socket_name(recorder_name, uids[0], walked[i], starts[i]);
		int fd = try_connect_path(recorder_name, recorder_name_len);
		if (fd >= 0)
			return found_by_walk(fd);
	}
	pid_t pp;
	uint64_t start;
	if (proc_stat(tprof_getpid(), &pp, &start) != 0)
		return -1;
	if (nuids > 1) { /* an earlier image of this process, before it dropped its privileges */
		int fd = connect_named(uids + 1, 1, tprof_getpid(), start);
		if (fd >= 0)
			return found_by_walk(fd);
	}
	recorder_name_len = socket_name(recorder_name, uids[0], tprof_getpid(), start);
	/* the recorder an earlier image of this process started, before it entered a network
	 * namespace of its own (unshare -n then exec); in the same namespace, spawn_recorder finds it */
	int fd = paths ? try_connect_path(recorder_name, recorder_name_len) : -1;
	if (fd >= 0)
		return found_by_walk(fd);
	name_taken = 0;
	fd = spawn_recorder(recorder_name, recorder_name_len);
	size_t tagged = fd < 0 && name_taken ? tag_name(recorder_name, recorder_name_len) : 0;
	if (tagged) { /* the name is another user's recorder's (see userns_tag) */
		recorder_name_len = tagged;
		fd = try_connect(recorder_name, recorder_name_len);
		if (fd < 0)
			fd = spawn_recorder(recorder_name, recorder_name_len);
	}
	return found_by_walk(fd);
}

/* Whether the kernel names the process at the other end of a unix socket with a pidfd, which is
 * what a recorder needs to take a fork child that does not wait for its answer (the recorder,
 * of the same build, says TPROF_ANSWER_YES_ASYNC when it does). Asked of the recorder's end. */
static int peer_pidfd_ok(int sock)
{
	int pidfd = -1;
	socklen_t len = sizeof(pidfd);
	int ok = getsockopt(sock, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0 && pidfd >= 0;
	if (pidfd >= 0)
		close(pidfd);
	return ok;
}

/* Before the first fork of a process that has not registered: the recorder its children will
 * register with, found or started now (and whether they may register without waiting). */
void tprof_recorder_ensure(void)
{
	if (recorder_name_len)
		return;
	int saved = errno;
	struct nofile_guard g = {.raised = 0};
	emfile_seen = 0;
	int sock = find_recorder();
	if (sock < 0 && emfile_seen && nofile_raise(&g))
		sock = find_recorder();
	if (sock >= 0) {
		recorder_async = peer_pidfd_ok(sock);
		close(sock);
	}
	nofile_restore(&g);
	errno = saved;
}

/* Sends the memory file and the trace file; 0 when sent. */
/* tracefd -1: the recorder is to create the file path (relative: to its own directory). */
static int send_hello(int sock, int memfd, int tracefd, const char *path, uint32_t async)
{
	struct tprof_hello h = {TPROF_SHM_MAGIC, TPROF_SHM_VERSION, (int32_t)tprof_getpid(),
				(tracefd < 0 ? TPROF_HELLO_NO_FILE : 0) | async |
					(tprof_cfg.quiet ? TPROF_HELLO_QUIET : 0),
				0};
	size_t nlen = tracefd < 0 ? strnlen(path, TPROF_HELLO_NAME_MAX) : 0;
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)path, nlen}};
	union {
		char buf[CMSG_SPACE(2 * sizeof(int))];
		struct cmsghdr align;
	} u;
	memset(&u, 0, sizeof(u));
	int nfds = tracefd < 0 ? 1 : 2;
	struct msghdr m = {.msg_iov = iov, .msg_iovlen = nlen ? 2 : 1, .msg_control = u.buf,
			   .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
	struct cmsghdr *c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
	int fds[2] = {memfd, tracefd};
	memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	ssize_t w;
	do
		w = sendmsg(sock, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)(sizeof(h) + nlen) ? 0 : -1;
}

/* Waits for the recorder's byte: it has sized the file, taken the process (its credentials, a
 * pidfd) and started the writer. 0 when it said yes (and recorder_async set when it takes fork
 * children without an answer), else what it said (-1 for nothing). */
static int await_answer(int sock)
{
	struct timeval tv = {10, 0};
	setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char ack = 0;
	ssize_t r;
	do
		r = recv(sock, &ack, 1, 0);
	while (r < 0 && errno == EINTR);
	if (r == 1 && (ack == TPROF_ANSWER_YES || ack == TPROF_ANSWER_YES_ASYNC)) {
		recorder_async = ack == TPROF_ANSWER_YES_ASYNC;
		return 0;
	}
	recorder_silent = r != 1; /* what the process says then is not for it (say_to_recorder) */
	return r != 1 || ack == 0 ? -1 : ack; /* 0 is a refusal: -1 as no answer */
}

/* Whether s begins with p. The exec hooks' own loops, here and below: a fork child on its way to
 * exec runs them, where each page of the C library's code touched first is a fault (5 to 20 us on a
 * VM). */
TPROF_STARTUP static int starts(const char *s, const char *p)
{
	while (*p && *s == *p)
		s++, p++;
	return !*p;
}

/* memcpy and memcmp of the exec hooks, as loops the compiler does not turn back into calls */
TPROF_STARTUP __attribute__((optimize("no-tree-loop-distribute-patterns"))) static void copy(char *d, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = s[i];
}

TPROF_STARTUP __attribute__((optimize("no-tree-loop-distribute-patterns"))) static int same(const char *a, const char *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return 0;
	return 1;
}

/* An exec by a process whose parent is outside its pid namespace (the first process of a namespace:
 * unshare -p -f, bwrap, nsenter -p): the new image could not find the recorder through its parent
 * chain (its parent is pid 0 to it) and would start one inside the namespace, which the kernel
 * kills as soon as the namespace's first process ends, before it has written the traces. Nor could
 * an image whose /proc is another pid namespace's (nsenter -m into a container's mounts), nor one
 * in another pid namespace than the process that found the recorder by its parent chain or
 * started it (a fork child of a namespace's first process: bwrap's and firejail's sandboxes). The new
 * image is told the recorder's name in its environment instead (TPROF_RECORDER, as tprof record
 * does), which the namespace's other processes inherit. Only an environment that keeps LD_PRELOAD
 * and does not name a recorder gets it. Writes "TPROF_RECORDER=name" into out and returns the
 * number of entries of envp (at most max), or 0 when nothing is to be added. */
TPROF_STARTUP size_t tprof_region_exec_env(char *const envp[], char *out, size_t cap, size_t max)
{
	static const char key[] = TPROF_RECORDER_ENV "=";
	if (!envp || recorder_name_len < 2 || recorder_name[0] != 0 || sizeof(key) - 1 + recorder_name_len > cap)
		return 0;
	uint64_t dev, ino;
	if (tprof_getppid() != 0 && tprof_proc_is_own() &&
	    (!recorder_pidns_ino || (pidns_of_self(&dev, &ino) && dev == recorder_pidns_dev && ino == recorder_pidns_ino)))
		return 0;
	size_t n = 0;
	int preload = 0;
	for (; envp[n]; n++) {
		if (n >= max || starts(envp[n], key))
			return 0;
		preload |= starts(envp[n], "LD_PRELOAD=");
	}
	if (!preload)
		return 0;
	copy(out, key, sizeof(key) - 1);
	copy(out + sizeof(key) - 1, recorder_name + 1, recorder_name_len - 1);
	out[sizeof(key) - 1 + recorder_name_len - 1] = 0;
	return n;
}

/* Whether path is the file this process's loader was loaded from (device and inode); 0 when that
 * cannot be told (the process was started through the loader). A function of its own, asked only
 * for an exec that names a loader with --list: no other exec's stack carries its frame. */
__attribute__((noinline)) static int is_our_loader(const char *path)
{
	Dl_info di;
	struct stat a, l;
	unsigned long base = getauxval(AT_BASE); /* 0 when the loader was run as the program */
	return base && dladdr((void *)base, &di) && di.dli_fname && tprof_sys_stat(di.dli_fname, &l) == 0 &&
	       tprof_sys_stat(path, &a) == 0 && a.st_dev == l.st_dev && a.st_ino == l.st_ino;
}

/* Whether an exec of path with argv runs the dynamic loader itself to list a program's libraries
 * (ld.so --list PROGRAM, after any of its other options): a path (with a '/') named as the loader
 * is (ld-*.so*, ld.so*, ld64.so*) to this process's loader. Not under a seccomp filter, which a
 * call more than the program's could end. */
TPROF_STARTUP static int loader_lists(const char *path, char *const argv[])
{
	static const char *const takes_arg[] = {"library-path", "inhibit-rpath", "audit", "preload", "argv0",
						"glibc-hwcaps-prepend", "glibc-hwcaps-mask", NULL};
	if (!path || !argv || !argv[0] || atomic_load(&tprof_sandboxed))
		return 0;
	const char *b = NULL;
	for (const char *c = path; *c; c++)
		if (*c == '/')
			b = c + 1;
	if (!b || (!starts(b, "ld-") && !starts(b, "ld.so") && !starts(b, "ld64.so")))
		return 0;
	int list = 0;
	for (size_t i = 1; argv[i] && strncmp(argv[i], "--", 2) == 0 && !list; i++) {
		list = strcmp(argv[i] + 2, "list") == 0;
		for (size_t k = 0; takes_arg[k]; k++)
			if (strcmp(argv[i] + 2, takes_arg[k]) == 0) {
				if (!argv[++i])
					return 0;
				break;
			}
	}
	return list && is_our_loader(path);
}

/* Whether the new image of an exec will find no descriptor free under its RLIMIT_NOFILE: every
 * number below the limit holds one the exec keeps (no FD_CLOEXEC). Its loader then cannot open
 * libtprof.so, and says so on stderr, a line a bare run does not print (nor, mostly, anything else:
 * the image fails as bare). Looked at only under a low limit, where it costs a system call a number. */
TPROF_STARTUP static int exec_leaves_no_fd(void)
{
	struct rlimit rl;
	if (atomic_load(&tprof_sandboxed)) /* a filter may end the process at a call it does not make */
		return 0;
	int full = tprof_getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur <= 256;
	for (int fd = 0; full && fd < (int)rl.rlim_cur; fd++) {
		long f = tprof_raw_syscall2(SYS_fcntl, fd, F_GETFD);
		full = f >= 0 && !(f & FD_CLOEXEC);
	}
	return full;
}

/* Whether the file an exec runs is an ELF program of another class or machine than this library's
 * (a 32-bit program), or a script whose interpreter (#!, to the kernel's four levels) is one: its
 * loader would print an error for libtprof.so ("wrong ELF class"), a line a bare run does not
 * print. A regular file only (opening another, a device, could act on it), read when it can be: an
 * execute-only program is taken for one of ours. Four system calls, not under a seccomp filter. */
TPROF_STARTUP static int foreign_file(const char *path)
{
	char h[160], next[160]; /* the exec may run on a small stack (a clone child's) */
	for (int depth = 0; depth <= 4; depth++) {
		struct stat st;
		if (tprof_raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)path, (long)&st, 0) != 0 || !S_ISREG(st.st_mode))
			return 0;
		long fd = tprof_raw_syscall4(SYS_openat, AT_FDCWD, (long)path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0);
		if (fd < 0)
			return 0;
		long n = tprof_raw_syscall4(SYS_pread64, fd, (long)h, sizeof(h) - 1, 0);
		tprof_raw_syscall2(SYS_close, fd, 0);
		if (n >= 20 && h[0] == 0x7f && h[1] == 'E' && h[2] == 'L' && h[3] == 'F')
			return (unsigned char)h[4] != __ehdr_start[4] || (unsigned char)h[5] != __ehdr_start[5] ||
			       (unsigned char)h[18] != __ehdr_start[18] ||
			       (unsigned char)h[19] != __ehdr_start[19]; /* class, byte order, machine */
		if (n < 3 || h[0] != '#' || h[1] != '!')
			return 0;
		h[n] = 0;
		const char *i = h + 2, *e;
		while (*i == ' ' || *i == '\t')
			i++;
		for (e = i; *e && *e != ' ' && *e != '\t' && *e != '\n'; e++)
			;
		if (e == i || (!*e && n == (long)sizeof(h) - 1)) /* none, or longer than what was read */
			return 0;
		copy(next, i, (size_t)(e - i));
		next[e - i] = 0;
		path = next; /* the interpreter, which may be a script itself */
	}
	return 0;
}

/* The same for the file an exec names: with search (execvp, execvpe), a name without a '/' is looked
 * up in the directories of PATH as the C library does (the first executable regular file; its
 * default when PATH is not set). */
TPROF_STARTUP static int foreign_image(const char *path, int search)
{
	if (!path || !*path || atomic_load(&tprof_sandboxed))
		return 0;
	const char *c = path;
	while (*c && *c != '/')
		c++;
	if (!search || *c)
		return foreign_file(path);
	const char *dirs = "/bin:/usr/bin";
	for (size_t k = 0; environ && environ[k]; k++)
		if (starts(environ[k], "PATH=")) {
			dirs = environ[k] + 5;
			break;
		}
	size_t fl = (size_t)(c - path);
	for (const char *d = dirs;;) {
		size_t dl = 0;
		while (d[dl] && d[dl] != ':')
			dl++;
		char full[256]; /* the exec may run on a small stack (a clone child's); a longer one is skipped */
		if (dl + fl + 2 <= sizeof(full)) {
			copy(full, dl ? d : ".", dl ? dl : 1);
			size_t o = dl ? dl : 1;
			full[o++] = '/';
			copy(full + o, path, fl + 1);
			struct stat st;
			if (tprof_raw_syscall4(SYS_newfstatat, AT_FDCWD, (long)full, (long)&st, 0) == 0 &&
			    S_ISREG(st.st_mode) && tprof_raw_syscall2(SYS_access, (long)full, X_OK) == 0)
				return foreign_file(full);
		}
		if (!d[dl])
			return 0;
		d += dl + 1;
	}
}

/* This library's file name, as the loader has it (the path LD_PRELOAD named), without its
 * directory: learnt once, by a process before its first fork (tprof_region_before_fork), so that
 * its children, which exec, find it known. Without dladdr, which takes the loader's lock and looks
 * through a whole symbol table for the nearest name. 0 when it cannot be known. */
static const char *_Atomic own_name; /* stored after its length */
static size_t own_name_len;

TPROF_STARTUP static int own_name_learn(void)
{
	if (atomic_load(&own_name))
		return 1;
	struct dl_find_object fo;
	const char *f = _dl_find_object((void *)&own_name_learn, &fo) == 0 && fo.dlfo_link_map
				? fo.dlfo_link_map->l_name
				: NULL;
	Dl_info di;
	if (!f && dladdr((void *)&own_name_learn, &di))
		f = di.dli_fname;
	if (!f)
		return 0;
	const char *b = f;
	for (; *f; f++)
		if (*f == '/')
			b = f + 1;
	own_name_len = (size_t)(f - b);
	atomic_store(&own_name, b);
	return 1;
}

/* LD_PRELOAD for the new image of an exec, without this library when the loader could not load it
 * or it would only show: the environment asks the loader to list the program's libraries and stop
 * (LD_TRACE_LOADED_OBJECTS, what ldd sets), or the exec runs the loader to list them (ld.so
 * --list), where libtprof.so would be listed, a line a bare run does not print, and nothing of the
 * program runs; or the new image will have no descriptor to open it with (exec_leaves_no_fd); or
 * it is a program of another class or machine (foreign_image: a 32-bit one); or
 * this library's path cannot be read from
 * here (chroot, a mount namespace with another root, a bind mount over its directory), where the
 * loader would print an error for it on the new image's stderr. Entries are split at ':' and ' ',
 * as the loader does; an entry is this library when its file name is libtprof.so's, and one
 * without a '/' is looked up by the loader in the system's directories: left. Writes
 * "LD_PRELOAD=rest" into out ("" when nothing is left: the variable is dropped), sets *at to its
 * entry and returns the count of envp's entries (at most max), or 0 when the environment stays. */
TPROF_STARTUP size_t tprof_region_exec_unpreload(const char *path, int search, char *const argv[], char *const envp[],
						 char *out, size_t cap, size_t max, size_t *at)
{
	static const char pre[] = "LD_PRELOAD=";
	if (!envp)
		return 0;
	size_t n = 0, where = SIZE_MAX;
	int trace = 0, nofd = -1, foreign = -1; /* -1: not looked at yet */
	for (; envp[n]; n++) {
		if (n >= max)
			return 0;
		if (starts(envp[n], "LD_TRACE_LOADED_OBJECTS="))
			trace = 1;
		else if (starts(envp[n], pre))
			where = n;
	}
	if (where == SIZE_MAX)
		return 0;
	if (!trace)
		trace = loader_lists(path, argv);
	if (!own_name_learn())
		return 0;
	const char *me = atomic_load(&own_name);
	size_t mel = own_name_len, o = sizeof(pre) - 1;
	if (o >= cap)
		return 0;
	copy(out, pre, o);
	int dropped = 0;
	for (const char *p = envp[where] + sizeof(pre) - 1; *p;) {
		size_t len = 0;
		while (p[len] && p[len] != ':' && p[len] != ' ')
			len++;
		if (len) {
			const char *b = p + len;
			while (b > p && b[-1] != '/')
				b--;
			int ours = (size_t)(p + len - b) == mel && same(b, me, mel), drop = ours && trace;
			if (ours && !drop) {
				if (nofd < 0)
					nofd = exec_leaves_no_fd();
				drop = nofd;
			}
			if (ours && !drop && b > p && len < 4096) {
				char lib[len + 1]; /* the exec may run on a small stack (a clone child's) */
				copy(lib, p, len);
				lib[len] = 0;
				drop = tprof_raw_syscall2(SYS_access, (long)lib, R_OK) != 0;
			}
			if (ours && !drop) {
				if (foreign < 0)
					foreign = foreign_image(path, search);
				drop = foreign;
			}
			if (drop) {
				dropped = 1;
			} else {
				if (o + len + 2 > cap)
					return 0;
				if (o > sizeof(pre) - 1)
					out[o++] = ':';
				copy(out + o, p, len);
				o += len;
			}
		}
		p += len;
		if (*p)
			p++;
	}
	if (!dropped)
		return 0;
	out[o > sizeof(pre) - 1 ? o : 0] = 0;
	*at = where;
	return n;
}

/* See preload.h: unmapped only when not inherited. */
void tprof_region_forget(int inherited)
{
	uint32_t n = atomic_load(&npieces);
	for (uint32_t i = 0; i < n && !inherited; i++)
		munmap(pieces[i].addr, pieces[i].len);
	atomic_store(&npieces, 0);
	piece_end = 0;
	tprof_shm = NULL;
}

/* A valgrind tool that replaces the heap functions (memcheck, helgrind, drd, massif, dhat) runs
 * them on its own heap, whichever library's malloc the program calls: it loads its own preload
 * module for them, vgpreload_TOOL-PLATFORM.so, which is not libtprof.so's name for a module
 * ahead of it. A tool without one (none, cachegrind, callgrind, lackey) leaves them to the
 * hooks; vgpreload_core is every tool's. */
static int valgrind_heap_module(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	const char *name = info->dlpi_name, *base = name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	if (!base || strncmp(base, "vgpreload_", 10) != 0 || strncmp(base + 10, "core-", 5) == 0)
		return 0;
	*(const char **)data = name;
	return 1;
}

/* The module whose malloc this program's calls reach, when it is not ours: the executable defines
 * one, an allocator was preloaded ahead of us, or a valgrind tool replaces them all. Looked up once
 * (the constructor asks first): no library loaded later can come before those in the global scope. */
TPROF_STARTUP void tprof_malloc_owner(char *out, size_t cap)
{
	static char owner[sizeof(((struct tprof_shm *)0)->malloc_owner)];
	static int known;
	if (!known) {
		tprof_init();
		extern int tprof_real_ahead;
		void *seen = tprof_real_ahead ? (void *)tprof_real.malloc
					      : tprof_foreign_symbol("malloc", (void *)tprof_own_malloc, (void *)tprof_real.malloc);
		Dl_info theirs;
		const char *name = NULL;
		if (seen && dladdr(seen, &theirs))
			name = theirs.dli_fname && theirs.dli_fname[0] ? theirs.dli_fname : program_invocation_name;
		else
			dl_iterate_phdr(valgrind_heap_module, &name); /* sets it when it finds one */
		if (name) {
			size_t n = strnlen(name, sizeof(owner) - 1);
			memcpy(owner, name, n);
			owner[n] = 0;
		}
		known = 1;
	}
	size_t n = strnlen(owner, cap - 1);
	memcpy(out, owner, n);
	out[n] = 0;
}

/* What a fork child's header copies from its parent instead of asking /proc again (each read is
 * five system calls): the executable, and the arguments as they were when the parent first read
 * them. Kept by the first registration, or before the first fork of a process that has none. */
static TPROF_LARGE struct {
	char exe[TPROF_SHM_EXE];
	char cmdline[TPROF_SHM_CMDLINE];
	uint32_t exe_len, cmdline_len;
	int known;
} self_id;

/* argv[0]'s last part, as the C library names the program; before the C library has set that name
 * (the dynamic loader's own first heap call, under an audit module), from /proc/self/cmdline. */
static const char *program_name(void)
{
	const char *nm = program_invocation_short_name;
	if (nm && *nm)
		return nm;
	tprof_region_learn_self();
	const char *a0 = self_id.cmdline_len ? self_id.cmdline : "";
	const char *slash = strrchr(a0, '/');
	return slash ? slash + 1 : a0;
}

int tprof_region_fork_ready(void)
{
	return recorder_name_len && self_id.known;
}

void tprof_region_learn_self(void)
{
	if (self_id.known)
		return;
	ssize_t en = readlink("/proc/self/exe", self_id.exe, sizeof(self_id.exe));
	self_id.exe_len = en > 0 ? (uint32_t)en : 0;
	ssize_t cn = tprof_proc_read("/proc/self/cmdline", self_id.cmdline, sizeof(self_id.cmdline));
	self_id.cmdline_len = cn > 0 ? (uint32_t)cn : 0;
	/* without /proc (a chroot): the name the program was exec'd by, and its argv[0] */
	const char *fn = self_id.exe_len ? NULL : (const char *)getauxval(AT_EXECFN);
	if (fn) {
		self_id.exe_len = (uint32_t)strnlen(fn, sizeof(self_id.exe));
		memcpy(self_id.exe, fn, self_id.exe_len);
	}
	const char *a0 = self_id.cmdline_len ? NULL : program_invocation_name;
	if (a0) { /* with its terminator, as /proc/self/cmdline has it, when it fits */
		self_id.cmdline_len = (uint32_t)strnlen(a0, sizeof(self_id.cmdline) - 1) + 1;
		memcpy(self_id.cmdline, a0, self_id.cmdline_len - 1);
		self_id.cmdline[self_id.cmdline_len - 1] = 0;
	}
	self_id.known = 1;
}


/* This library's own zero-initialized data (the slot table, paths, the stack walk's tables: most
 * of a MiB) is left out of the program's core dumps as well: the pages wholly past the library's
 * file data, which the loader maps anonymous. Once: a fork child inherits the mark. */
static void bss_dontdump(void)
{
	extern char __bss_start[] __attribute__((visibility("hidden")));
	extern char _end[] __attribute__((visibility("hidden")));
	static int done;
	if (done)
		return;
	done = 1;
	const uintptr_t pg = 4096;
	uintptr_t lo = ((uintptr_t)__bss_start + pg - 1) & ~(pg - 1), hi = ((uintptr_t)_end + pg - 1) & ~(pg - 1);
	int saved = errno;
	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_DONTDUMP);
	errno = saved;
}

/* Maps the first piece of the memory file and writes the header but its last words
 * (header_publish); returns it, or NULL. */
static struct tprof_shm *map_header(int memfd, const char *path, pid_t pid)
{
	/* unlocked: the pieces mapped after it from it (grow) are then not faulted in whole by
	 * mlockall(MCL_FUTURE) either */
	uint64_t first = first_piece();
	uint8_t *m = tprof_map_unlocked(first, MAP_SHARED, memfd);
	if (m == MAP_FAILED) {
		say("cannot map shared memory: ", errtext(errno), "; not tracing");
		return NULL;
	}
	/* Not passed on to fork children, which map memory of their own: a fork then duplicates no
	 * mapping of it, and a child that makes no recorded call has none to unmap */
	madvise(m, first, MADV_DONTFORK);
	/* nor in the program's core dumps: they are the program's, as bare */
	madvise(m, first, MADV_DONTDUMP);
	bss_dontdump();
	pieces[0] = (struct piece){0, first, m};
	piece_end = first;
	atomic_store(&npieces, 1);
	struct tprof_shm *s = (struct tprof_shm *)m;
	/* read here: the process may be gone before its recorder could look */
	tprof_region_learn_self();
	uint32_t el = self_id.exe_len < TPROF_SHM_EXE ? self_id.exe_len : 0, cl = self_id.cmdline_len;
	/* the header's pages every process writes: the first ones (up to the end of its arguments),
	 * the first thread slot, the first modules and their paths */
	tprof_populate(s, offsetof(struct tprof_shm, self) + el + cl);
	tprof_populate(&s->threads[0], sizeof(s->threads[0]));
	tprof_populate(&s->modules[0], 8 * sizeof(s->modules[0]));
	tprof_populate(&s->paths[0], 4096);
	s->version = TPROF_SHM_VERSION;
	s->bytes = sizeof(*s);
	s->pid = (int32_t)pid;
	s->ppid = (int32_t)tprof_getppid();
	/* the first clock pair: every event of the image comes after it */
	struct timespec ts, mt;
	s->start_tick = tprof_now();
	tprof_sys_clock(CLOCK_MONOTONIC, &mt);
	tprof_sys_clock(CLOCK_REALTIME, &ts);
	s->start_mono_ns = (uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec;
	s->start_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	s->clock = (uint32_t)tprof_cfg.clock;
	s->lossy = (uint32_t)tprof_cfg.lossy;
	s->quiet = (uint32_t)tprof_cfg.quiet;
	s->debug = (uint32_t)tprof_cfg.debug;
	s->depth = tprof_cfg.depth;
	s->ring_entries = tprof_cfg.ring_entries;
	s->rss_interval_ms = tprof_cfg.rss_interval_ms;
	s->compress = (uint32_t)tprof_cfg.compress;
	s->leakscan = (uint32_t)tprof_cfg.leakscan;
	if (path[0]) { /* the file is zeroes: "" costs no page */
		memcpy(s->trace_path, path, strlen(path) + 1);
		s->written |= TPROF_SHM_HAS_TRACE_PATH;
	}
	memcpy(s->self, self_id.exe, el);
	s->exe_len = el;
	memcpy(s->self + el, self_id.cmdline, cl);
	s->cmdline_len = cl;
	char owner[sizeof(s->malloc_owner)];
	tprof_malloc_owner(owner, sizeof(owner));
	if (owner[0]) {
		memcpy(s->malloc_owner, owner, strlen(owner) + 1);
		s->written |= TPROF_SHM_HAS_MALLOC_OWNER;
	}
	atomic_store(&s->seq, 1);
	atomic_store(&s->used, (sizeof(*s) + 4095) & ~4095ull);
	return s;
}

/* The header's last words, once the recorder has taken the process: the resident size as recording
 * begins (not before a wait for a recorder that is just starting; not by a fork child that did not
 * wait, async: its recorder's first sample stands for it, one /proc read less in the child), then
 * the magic number, which the writer waits for. */
static void header_publish(struct tprof_shm *s, int async)
{
	if (tprof_cfg.rss_interval_ms && !async) {
		s->start_rss_bytes = tprof_rss_now(NULL);
		s->start_rss_tick = tprof_now();
	}
	__atomic_store_n(&s->magic, TPROF_SHM_MAGIC, __ATOMIC_RELEASE);
}

/* One try at registration; -1 with emfile_seen when the descriptor limit was in the way. The
 * recorder creates the trace file (in the directory it started in, where every process of a tree
 * has its trace: none lands in a directory of the program's), unless own is set: 1 (unsaid) when
 * it would not, as a recorder of another user's, so that the process creates it itself. */
static int register_once(int child, pid_t pid, int own)
{
	int rc = -1, memfd = -1, tracefd = -1, sock = -1;
	struct tprof_shm *s = NULL;
	/* sealable: the recorder seals it against shrinking before it maps it (recorder/server.c) */
	memfd = (int)syscall(SYS_memfd_create, "tprof", (long)(MFD_CLOEXEC | MFD_ALLOW_SEALING));
	if (memfd < 0) {
		note_fd_error();
		if (!emfile_seen)
			say("cannot create shared memory: ", errtext(errno),
			    errno == ENOSYS || errno == EPERM ? " (a seccomp filter forbids memfd_create?); not tracing"
							      : "; not tracing");
		goto out;
	}
	static TPROF_LARGE char own_path[4096]; /* one registration at a time (see make_path) */
	const char *path = own_path;
	int no_file = !own; /* the recorder is to create the file */
	if (no_file && !(path = trace_name_said(pid)))
		goto out;
	spawn_err = 0;
	spawn_why = NULL;
	sock = unsent_sock = find_recorder();
	if (sock < 0) {
		if (spawn_why)
			say("cannot start the recorder: ", spawn_why, "; not tracing");
		else if (spawn_err)
			say("cannot start the recorder: ", errtext(spawn_err),
			    spawn_err == EAGAIN ? " (the process limit, ulimit -u?); not tracing" : "; not tracing");
		else if (!child && !emfile_seen && name_taken)
			say("no recorder took ", no_file ? path : "the trace",
			    ": the recorder's name is held by another user's process; not tracing");
		else if (!child && !emfile_seen)
			say("no recorder took ", no_file ? path : "the trace", "; not tracing");
		goto out;
	}
	/* The recorder sizes the file (it may have a larger file size limit than the program); the
	 * process does too when its own limit allows, and then writes its header while the recorder
	 * takes it, instead of waiting first: about a quarter of a millisecond per process. */
	struct rlimit fl;
	int sized = tprof_getrlimit(RLIMIT_FSIZE, &fl) == 0 &&
		    (fl.rlim_cur == RLIM_INFINITY || fl.rlim_cur >= TPROF_SHM_FILE_BYTES) &&
		    ftruncate(memfd, (off_t)TPROF_SHM_FILE_BYTES) == 0;
	/* the file this process makes itself, only now that a recorder is there to take it, just
	 * before it is sent: a process killed between the two leaves an empty file no recorder knows of */
	if (!no_file && (tracefd = open_trace(own_path, sizeof(own_path), pid)) < 0) {
		sock = unsent_sock; /* -1 when a line said why, which ended the connection */
		unsent_sock = -1;   /* closed below: no later line may close that number again */
		goto out;
	}
	unsent_sock = -1;
	/* A fork child of a process the recorder took with TPROF_ANSWER_YES_ASYNC does not wait for
	 * the answer (about 0.1 ms): the recorder takes it even after it has ended, and a refusal is
	 * written into its memory (recorder_gone), as only a file it could not size (the child did
	 * here) or create (its own user's: it does) would be said back. */
	file_bytes = TPROF_SHM_FILE_BYTES;
	int async = tprof_fork_child && sized && no_file && recorder_async && recorder_uid == geteuid();
	if (send_hello(sock, memfd, tracefd, path, async ? TPROF_HELLO_ASYNC : 0) != 0) {
		say("no recorder took ", path, "; not tracing");
		if (!no_file)
			unlink(path);
		goto out;
	}
	if (sized && !(s = map_header(memfd, no_file ? "" : path, pid)))
		goto out;
	if (s)
		tprof_region_prepare(s); /* its stacks' and modules' tables, meanwhile */
	int answer = async ? 0 : await_answer(sock);
	if (answer != 0) {
		if (s)
			tprof_region_forget(0);
		s = NULL;
		if (answer == TPROF_ANSWER_FSIZE)
			say("the file size limit (ulimit -f) is below the 32 MiB the recorder's shared memory "
			    "file needs, for ", path, "; not tracing");
		else if (answer == TPROF_ANSWER_NO_FILE)
			rc = 1;
		else if (answer == TPROF_ANSWER_FDS)
			say("too few descriptors left to register", " (the recorder's: the limit, ulimit -n, is "
				"inherited)", "; not tracing");
		else
			say("no recorder took ", path, "; not tracing");
		if (!no_file)
			unlink(path);
		goto out;
	}
	if (!s) {
		/* the recorder sized the file: under a file size limit it could not lift, smaller */
		struct stat st;
		if (tprof_sys_fstat(memfd, &st) != 0 || (uint64_t)st.st_size < first_piece()) {
			say("the recorder's shared memory file is too small for ", path, "; not tracing");
			if (!no_file)
				unlink(path);
			goto out;
		}
		if ((uint64_t)st.st_size < file_bytes)
			file_bytes = (uint64_t)st.st_size;
		if (!(s = map_header(memfd, no_file ? "" : path, pid)))
			goto out;
	}
	header_publish(s, async);
	atomic_fetch_add(&s->kick, 1);
	tprof_futex_wake(&s->kick);
	tprof_shm = s;
	rc = 0;
out:
	if (sock >= 0)
		close(sock);
	if (tracefd >= 0)
		close(tracefd);
	if (memfd >= 0)
		close(memfd);
	return rc;
}

void tprof_region_before_fork(void)
{
	own_name_learn(); /* once: what a child's exec asks (tprof_region_exec_unpreload) */
	if (recorder_async) {
		pid_t pid = (pid_t)tprof_getpid();
		if (children_async != pid) /* written once: a page written here is copied for each child */
			children_async = pid;
	}
}

static int init_drained; /* the init of a pid namespace asked for its drain (tprof_region_barrier) */

/* The end of a process whose fork children may have registered without waiting for their answer
 * (TPROF_HELLO_ASYNC): one message to the recorder, answered once it has taken every registration
 * queued before it, so that when a process has ended the trace files of the children it made
 * exist, as they do when a child waits at registration. One round trip, at most 10 s. */
TPROF_STARTUP void tprof_region_barrier(void)
{
	/* the init of a pid namespace: whatever is inside, the recorder too, is killed as it ends, so it
	 * waits, besides, for the traces of the processes that are gone (TPROF_HELLO_DRAIN) */
	pid_t me = (pid_t)tprof_getpid();
	/* (only for a recorder it found by its parent chain or started: one named by TPROF_RECORDER,
	 * tprof record's, lives outside and outlives the namespace) */
	int init = me == 1 && tprof_shm && tprof_shm->pid == 1 && !init_drained && recorder_pidns_ino;
	if ((!init && (!children_async || children_async != me)) || !recorder_name_len ||
	    atomic_load(&tprof_sandboxed))
		return; /* none, or a vfork child: the memory is its parent's */
	children_async = 0; /* once */
	init_drained = 1;
	int saved = errno;
	int sock = try_connect(recorder_name, recorder_name_len);
	if (sock < 0) /* it entered a network namespace of its own since */
		sock = try_connect_path(recorder_name, recorder_name_len);
	if (sock >= 0) {
		struct tprof_hello h = {TPROF_SHM_MAGIC, TPROF_SHM_VERSION, (int32_t)tprof_getpid(),
					TPROF_HELLO_BARRIER | (init ? TPROF_HELLO_DRAIN : 0), 0};
		ssize_t w;
		do
			w = send(sock, &h, sizeof(h), MSG_NOSIGNAL);
		while (w < 0 && errno == EINTR);
		if (w == (ssize_t)sizeof(h))
			await_answer(sock);
		close(sock);
	}
	errno = saved;
}

int tprof_region_start(int child)
{
	int saved = errno;
	if (!child)
		tprof_sandbox_inherited();
	if (atomic_load(&tprof_sandboxed)) {
		if (!tprof_cfg.quiet) /* no fault: said as the line at exit is */
			say("a seccomp filter is in force, which may end the process at a call tprof makes", "",
			    "; not tracing (TPROF_SECCOMP=1 traces anyway)");
		errno = saved;
		return -1;
	}
	pid_t pid = tprof_getpid();
	struct nofile_guard g = {.raised = 0};
	emfile_seen = 0;
	int rc = register_once(child, pid, 0);
	if (rc == 1)
		rc = register_once(child, pid, 1);
	if (rc != 0 && emfile_seen) {
		if (nofile_raise(&g)) {
			emfile_seen = 0;
			rc = register_once(child, pid, 0);
			if (rc == 1)
				rc = register_once(child, pid, 1);
		}
		if (rc != 0 && emfile_seen)
			say("too few descriptors left to register", "", "; not tracing");
		nofile_restore(&g);
	}
	errno = saved;
	return rc;
}
