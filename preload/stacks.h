/* Call stacks inside libtprof.so: capture with the walk of unwind.c, intern into a lock-free table so each
 * distinct stack gets a small id (the trace references stacks by id and the recorder defines each
 * once), and the table of loaded modules the analyzer needs to symbolize return addresses offline.
 * Frames and modules live in the shared memory (shm.h), the hash table in private mmap'd memory:
 * no malloc, no locks on the path of an allocation. */
#ifndef TPROF_STACKS_H
#define TPROF_STACKS_H

#include <stdatomic.h>
#include <stdint.h>

#define TPROF_DEPTH_DEFAULT 64
#define TPROF_DEPTH_MAX 256
#define TPROF_STACK_ID_BITS 24 /* ids travel in 24 bits of a ring entry; id 0 is "no stack" */
#define TPROF_STACK_IDS (1u << TPROF_STACK_ID_BITS)

/* Sets up the tables and records the loaded modules (after registration, before recording starts);
 * 0 on success. On failure stacks are off. */
int tprof_stacks_init(unsigned depth);
/* In a fork child, after it has shared memory of its own: forget the parent's stacks, record the
 * modules again. */
void tprof_stacks_reset(void);

/* Sets up the calling thread's stack walk cache (unwind.c) with one walk. A process that forks
 * before its first heap call does it once, so that its children inherit the cache and the rules of
 * the frames they share with it. */
void tprof_stacks_warm(void);
/* Before a fork, in the parent: the modules as they are, for its child's first scan (when the
 * loader has loaded or unloaded something since the last time). */
void tprof_modules_before_fork(void);
/* What the loader loaded or unloaded since the last scan, at an end of the image that runs no exit
 * handler (_exit, _Exit, quick_exit, exec): a scan, only when its counts changed. */
void tprof_modules_scan_if_changed(void);

/* Captures the calling thread's stack, skipping libtprof.so's own frames, and returns its id; 0 when
 * stacks are off or the table is full. Call with the hook guard held. */
uint32_t tprof_stack_capture(void);
/* TPROF_VERIFY_STACKS=1: loads libunwind, the reference (from the constructor), and at the end
 * prints one line on stderr, once, with how many captures matched libunwind's. */
void tprof_stacks_load_reference(void);
void tprof_stacks_verify_report(void);

/* Brings the shared module table up to date with what is loaded (dlopen, dlclose and exit call it;
 * it takes the loader's lock, so never from a heap hook; when another thread is scanning for long,
 * it leaves the work to the next scan). closing: a dlclose is under way,
 * so stacks taken from now on must not reuse older ids (an address may soon mean other code). */
void tprof_modules_scan(int closing);

/* libunwind's memory validation writes the address to check into a pipe; the process must not hold
 * one. hooks.c hands libunwind descriptor numbers no file has (the library's own pipe2, read, write
 * and syscall calls on them are answered there, everyone else's go through untouched). */
int tprof_unwinder_owns(const void *caller);
uint64_t tprof_stacks_program_sp(uint64_t regs[8]);
/* Learns where exit()'s code is, for tprof_stacks_program_sp: once per image, in the constructor or
 * at a registration before it. */
void tprof_stacks_learn_exit(void);
#define TPROF_FAKE_PIPE_R (-1000)
#define TPROF_FAKE_PIPE_W (-1001)
/* Whether the byte at addr can be read, without a descriptor. */
int tprof_readable(const void *addr);

#endif
