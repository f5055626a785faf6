/* The memory that a traced process shares with its recorder: one memfd per process image, created by
 * libtprof.so at start-up (and in every fork child), handed to the recorder over a unix socket, then
 * closed in the process, whose mapping stays. Everything the recorder needs lives here: the
 * configuration, the global sequence counter, the thread slots and their rings, the interned stacks,
 * the module table, the annotation names and how the process ended. The process never waits for
 * the recorder except when a ring is full in lossless mode; the recorder reads whatever is published
 * here, during the process's life and after its end (the memfd outlives the process).
 *
 * The file is sparse: objects are bump-allocated at increasing file offsets (shm_alloc in
 * preload/region.c) and the process maps only what it has allocated, piece by piece. Offsets are
 * what the two sides exchange; pointers are private to each side. */
#ifndef TPROF_SHM_H
#define TPROF_SHM_H

#include <stdatomic.h>
#include <stdint.h>

#include "ring.h"
#include "tprof_trace.h"

#define TPROF_SHM_MAGIC 0x314d485346525054ull /* "TPRFSHM1" */
#define TPROF_SHM_VERSION 14 /* 14: the memory file is sealable, and sealed by the recorder */
#define TPROF_UNHOOKED_NEW 1u      /* C++ operator new is an allocator's that does not call malloc */
#define TPROF_UNHOOKED_DEEPBIND 2u /* a library was loaded with RTLD_DEEPBIND */
#define TPROF_SHM_FILE_BYTES (16ull << 30) /* the memfd's (sparse) size: nothing is used until touched */
/* Under a file size limit (ulimit -f) that neither the process nor the recorder can lift, the file is
 * as large as the limit allows, down to this: the first piece (12 MiB) and rings for a few threads. */
#define TPROF_SHM_FILE_MIN (32ull << 20)
#define TPROF_SHM_THREADS 4096             /* threads alive at once that can record; more count as lost */
#define TPROF_SHM_MODULES 2048
#define TPROF_SHM_PATHS (512u << 10)       /* module paths, NUL-terminated, back to back */
#define TPROF_NAME_IDS 4096u               /* annotation names; id 0 is "no name" */
#define TPROF_SHM_EXE 4096                 /* the executable's path */
#define TPROF_SHM_CMDLINE 32768            /* the arguments */

#define TPROF_STACK_IDS_MAX (1u << 24)     /* stack ids travel in 24 bits of a ring entry */
#define TPROF_STACK_CHUNK_IDS (1u << 16)   /* stack index entries per chunk */
#define TPROF_STACK_CHUNKS (TPROF_STACK_IDS_MAX / TPROF_STACK_CHUNK_IDS)
#define TPROF_ARENA_CHUNK_WORDS (1u << 19) /* 4 MiB of frames per arena chunk */

#define TPROF_SCAN_THREADS 1024          /* threads that can stop for the reachability scan */

enum { TPROF_SLOT_FREE = 0, TPROF_SLOT_ACTIVE = 1, TPROF_SLOT_SETUP = -1 };

/* The reachability scan at the process's end (preload/scan.c asks, recorder/leakscan.c scans):
 * IDLE -> STOPPING (the asking thread stops the others) -> ASKED (the recorder may scan) ->
 * SCANNING -> DONE (the process goes on to its end). The process gives up waiting (GAVE_UP) when
 * the recorder stops beating. IDLE -> EMPTY: a process with one thread that holds no block of its
 * own (preload.h, TPROF_FEW) asks for nothing; its scan's result is empty, with no late block. */
enum { TPROF_SCAN_IDLE = 0, TPROF_SCAN_STOPPING, TPROF_SCAN_ASKED, TPROF_SCAN_SCANNING, TPROF_SCAN_DONE,
       TPROF_SCAN_GAVE_UP, TPROF_SCAN_EMPTY };

/* A thread stopped for the scan: its stack from sp up holds its registers (a signal frame, or the
 * asking thread's own spills) and everything live on it. [alt_lo, alt_hi): its alternate signal
 * stack (0, 0: none), whose part below sp (all of it when sp is elsewhere) holds only the frames of
 * handlers that returned. */
struct tprof_scan_thread {
	int32_t tid;
	uint32_t pad;
	uint64_t sp;
	uint64_t alt_lo, alt_hi;
};

/* One recording thread. The process claims a free slot (FREE -> SETUP -> ACTIVE); the recorder
 * frees it once the thread is gone and its ring drained. A slot keeps its ring for the next thread. */
struct tprof_shm_thread {
	_Atomic int state;
	int32_t tid;
	_Atomic uint32_t inflight; /* 1: the thread is inside a heap hook, the call not returned (END
				    * flag INCALL); 2: inside free, its event in the ring already;
				    * 3 or 4: signal handlers' calls returned with their events
				    * deferred (INFLIGHT: lost if the process ends now; each call
				    * deferred while it is 3 or 4 flips it) */
	_Atomic int exit_named;    /* exit_name holds the name the thread had as it exited */
	uint64_t ring_off;         /* file offset of its ring, 0 while it has none */
	uint32_t ring_entries;
	uint32_t pad;
	char exit_name[16];
	char start_name[16];       /* the name the thread had as it took the slot */
};

/* One interned stack: its frames are arena words at file offset `off`. */
struct tprof_shm_stack {
	uint64_t off;
	uint16_t depth; /* 0: not yet published */
	uint8_t truncated;
	uint8_t pad[5];
};

/* A module (the main program, a shared library, the vDSO) as dl_iterate_phdr reported it. */
struct tprof_shm_module {
	uint64_t base, start, end;
	uint64_t load_seq;
	_Atomic uint64_t unload_seq; /* 0: still loaded */
	uint32_t path_off, path_len; /* in paths[] */
	uint8_t build_id[32];
	uint8_t build_id_len;
	uint8_t pad[7];
};

struct tprof_shm_name {
	_Atomic int state; /* 0 empty, 1 being filled, 2 ready */
	uint8_t len;
	char name[TPROF_NAME_MAX + 1];
};

#define TPROF_SHM_HAS_TRACE_PATH 1u   /* trace_path */
#define TPROF_SHM_HAS_MALLOC_OWNER 2u /* malloc_owner (a page never written is never read either:
				       * a read allocates it) */

/* Laid out by who writes it when: a process's registration writes its first page (the scalars,
 * its executable and arguments when they are short), the first thread slot, the first modules and
 * their paths: four pages, each a page fault of about 10 us on a VM. What most processes never
 * write (a trace path of their own, another malloc, the stopped threads of a scan) comes last. */
struct tprof_shm {
	uint64_t magic;
	uint32_t version, bytes; /* TPROF_SHM_VERSION, sizeof(struct tprof_shm) */
	int32_t pid, ppid;
	uint64_t start_realtime_ns;
	uint64_t start_tick, start_mono_ns; /* the trace's first clock pair, taken at registration */
	/* configuration, fixed before registration */
	uint32_t clock, lossy, quiet, debug, depth, ring_entries, rss_interval_ms, compress;

	/* the bump allocator over the file (region.c) */
	_Atomic uint64_t used;
	_Atomic uint32_t alloc_busy;
	_Atomic uint32_t reserve_failed; /* a piece could not be mapped (address space limit) */
	_Atomic uint32_t sandboxed;      /* the process installed a seccomp filter (tprof_sandboxed) */
	_Atomic uint32_t unhooked;       /* heap calls no hook sees: TPROF_UNHOOKED_* */

	_Alignas(64) _Atomic uint64_t seq; /* global event order */
	_Alignas(64) _Atomic uint32_t epoch; /* advanced by the recorder on every pass */
	_Atomic uint32_t writer_sleeping;    /* the recorder waits on kick; 2: a long nap, the
					      * process having been idle (the next event kicks) */
	_Atomic uint32_t kick;
	_Atomic uint32_t heartbeat;          /* advanced by the recorder on each pass: every 10 ms at
					      * least, 200 ms while the process is idle, at once when kicked */
	_Atomic uint32_t recorder_gone;      /* the process saw no heartbeat for a long time: drop */
	_Atomic uint32_t threads_hwm;        /* slots in use are below this index */
	_Atomic uint32_t slots_wanted;       /* a new thread found no free slot: reap dead threads now */
	_Atomic uint32_t slots_reaped;       /* advanced (and woken) by the recorder after such a reap */
	_Atomic uint32_t thread_exits;       /* threads that have begun to exit: reap their slots soon */
	_Alignas(64) _Atomic uint64_t lost_global; /* events lost without a ring */

	/* resident set size samples the process takes itself: at start-up (before its recorder can)
	 * and at exit, _exit and quick_exit (after which its recorder cannot) */
	uint64_t start_rss_bytes, start_rss_tick;
	_Atomic uint64_t exit_rss_bytes, exit_rss_tick;

	/* how the process ended, as far as it could say */
	/* enum tprof_end_reason; 0 while running, TPROF_END_EXIT_BEGUN once an exit call has begun
	 * (core.c, tprof_note_exit_begun) */
	_Atomic int32_t end_reason;
#define TPROF_END_EXIT_BEGUN 0x100 /* never in a trace: the recorder makes it exit or _exit */
	_Atomic int32_t end_value;
	_Atomic uint32_t exec_pending; /* an exec call is under way */

	/* the reachability scan (see TPROF_SCAN_*); leakscan: TPROF_LEAKSCAN, fixed before registration */
	uint32_t leakscan;
	_Atomic uint32_t scan_state;
	_Atomic uint32_t scan_stopped; /* entries of scan_threads filled (the asking thread first) */
	uint32_t scan_asked;           /* threads signalled to stop */
	uint32_t scan_reason;          /* enum tprof_end_reason of the way out that asked */
	int32_t scan_reader;           /* the recorder's pid: may read this process's memory (Yama) */
	uint64_t own[4][2]; /* [start, end) of tprof's memory in the process: never roots */
	uint64_t boot_used[2]; /* [start, end) of the bootstrap pool's blocks (inside own[0]): the
				* program's, roots (heap calls before tprof's constructor) */
	uint64_t scan_regs[8]; /* the exiting thread's callee-saved registers as its program frame had them */

	/* stacks (stacks.c): ids below stack_next_id are allocated, published once depth != 0 */
	_Atomic uint32_t stack_next_id;
	_Atomic uint64_t stack_dropped;

	/* modules (stacks.c): records below nmodules are complete */
	_Atomic uint32_t nmodules;
	_Atomic uint32_t modules_busy;
	uint32_t paths_used;

	/* file offsets of the stack index's chunks: on the first page, which registration maps in
	 * with the rest of the header (a fault less for each process) */
	_Atomic uint64_t stack_chunk_off[TPROF_STACK_CHUNKS];

	/* /proc/self/exe as the process saw it at start-up (exe_len bytes, < TPROF_SHM_EXE), then
	 * /proc/self/cmdline, NUL-separated arguments (cmdline_len bytes, may be cut short) */
	uint32_t exe_len, cmdline_len;
	uint32_t written; /* TPROF_SHM_HAS_*: which of the rarely written fields at the end hold text */
	char self[TPROF_SHM_EXE + TPROF_SHM_CMDLINE];

	struct tprof_shm_thread threads[TPROF_SHM_THREADS];
	struct tprof_shm_module modules[TPROF_SHM_MODULES];
	_Alignas(4096) char paths[TPROF_SHM_PATHS];

	struct tprof_shm_name names[TPROF_NAME_IDS];
	char trace_path[4096];   /* as the process created it (relative to its working directory); ""
				  * when the recorder created it (TPROF_HELLO_NO_FILE, the usual case) */
	char malloc_owner[512];  /* the module whose malloc the program reaches, "" when it is ours */
	struct tprof_scan_thread scan_threads[TPROF_SCAN_THREADS];
};

/* The registration message (a SOCK_SEQPACKET datagram) a process sends its recorder, with the
 * memfd, flags TPROF_HELLO_NO_FILE and the trace file's path after the struct (at most
 * TPROF_HELLO_NAME_MAX bytes; relative: to the directory the recorder was started in), for the
 * recorder to create. The recorder answers one byte: 1 when it took the process, 0 when it
 * refused, TPROF_ANSWER_FSIZE when the file size limit it inherited (RLIMIT_FSIZE) is below the
 * memory file's size, TPROF_ANSWER_FDS when it has too few descriptors left, TPROF_ANSWER_NO_FILE
 * when it does not create the file (it runs as another user, or could not): the process then
 * creates it itself, in its own directory, and sends it with the memfd in a second message,
 * without the flag. TPROF_ANSWER_YES_ASYNC is a yes that also says the recorder takes a fork child
 * without answering (TPROF_HELLO_ASYNC): it learns which process connected even when that process
 * has already ended (SO_PEERPIDFD), so the child sends its message and goes on. An asynchronous
 * registration it refuses gets no answer: the recorder sets recorder_gone in its memory instead
 * (the process then drops its events and counts them) and says why on its stderr. A process whose
 * children may have registered so sends a barrier (TPROF_HELLO_BARRIER, no descriptor) at its end
 * and waits for its answer: the recorder takes connections in order, so every child that
 * registered before then has its trace file once its parent has ended. A process that is not
 * traced says why through its recorder (TPROF_HELLO_SAY), whose stderr is the tree's. */
#define TPROF_ANSWER_YES 1
#define TPROF_ANSWER_FSIZE 2
#define TPROF_ANSWER_NO_FILE 3
#define TPROF_ANSWER_FDS 4 /* the recorder ran out of descriptors (a limit it inherited) */
#define TPROF_ANSWER_YES_ASYNC 5
#define TPROF_HELLO_NO_FILE 1u
#define TPROF_HELLO_ASYNC 2u /* the process does not wait for the answer */
#define TPROF_HELLO_BARRIER 4u /* no registration: answered once every one queued before it is taken */
#define TPROF_HELLO_SAY 8u /* no registration: one line (the bytes after the struct) for the recorder's
			    * stderr, why the process is not traced; answered TPROF_ANSWER_YES once written */
#define TPROF_HELLO_QUIET 16u /* with a registration: TPROF_QUIET=1, known to the recorder before the
			       * process's memory says it (a process killed while it registers) */
#define TPROF_HELLO_DRAIN 32u /* with TPROF_HELLO_BARRIER: answered once, besides, the trace of every
			       * process that is gone is written (the init of a pid namespace, at its
			       * end: the kernel then kills the recorder with everything else inside) */
#define TPROF_HELLO_NAME_MAX 4095
struct tprof_hello {
	uint64_t magic; /* TPROF_SHM_MAGIC */
	uint32_t version;
	int32_t pid;
	uint32_t flags;    /* TPROF_HELLO_NO_FILE, TPROF_HELLO_ASYNC, TPROF_HELLO_QUIET */
	uint32_t reserved; /* 0 */
};

/* Where a recorder listens: an abstract unix socket, "\0tprof.<uid>.<pid>.<starttime>" of the
 * process that started it, or the name in TPROF_RECORDER (set by tprof record). */
#define TPROF_RECORDER_ENV "TPROF_RECORDER"

#endif
