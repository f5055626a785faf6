/* The stack walk (unwind.c): return addresses from the .eh_frame rules of the code, cached per
 * thread; a walk stops, never guesses, where the rules cannot say exactly. */
#ifndef TPROF_UNWIND_H
#define TPROF_UNWIND_H
#include <stdint.h>

/* Fills buf with up to cap return addresses, the first one in the caller's own frame (as
 * unw_backtrace does); returns how many, or -(n + 1) when the walk stopped after n frames at one
 * the rules cannot say exactly (the n are right). */
int tprof_unwind_here(void **buf, int cap) __attribute__((visibility("hidden")));
/* Walks up from its caller to the first frame whose return address lies outside every [lo, hi)
 * of skip: 0 with that frame's stack pointer and its rbx, rbp, r12 to r15; -1 when some frame
 * is beyond the rules (or the stack ends first). The frame that called the function at [after[0],
 * after[1]) (exit) is the answer even inside skip (the C library's argp or error() calling exit),
 * unless the walk out from it reaches, through skipped frames only, the frame of the program's
 * entry (a return address within 64 bytes past entry: _start, for a return from main), the answer
 * then as without after. */
int tprof_unwind_outer_frame(const uintptr_t (*skip)[2], int nskip, const uintptr_t after[2], uintptr_t entry,
			     uint64_t *sp_out, uint64_t regs[6]) __attribute__((visibility("hidden")));
/* Code was unloaded (dlclose): every thread drops the rules it computed. */
void tprof_unwind_forget_code(void);
/* The calling thread takes a cache another thread left: forget that thread's stack pages. */
void tprof_unwind_new_thread(void);
/* The stack id the last walk's frames were interned as, when that walk was a memo's (the same
 * start and the same words read as a walk before it) and the id is still good: the walk then
 * left buf unfilled. Else 0, and buf holds the frames. Not under TPROF_VERIFY_STACKS. *token
 * names the walk, for tprof_unwind_memo_keep. */
uint32_t tprof_unwind_memo_id(uint32_t *token) __attribute__((visibility("hidden")));
/* The frames of the walk token named are interned as id in the stack table of now
 * (tprof_stacks_epoch); nothing when another walk came since. */
void tprof_unwind_memo_keep(uint32_t id, uint32_t token) __attribute__((visibility("hidden")));
/* stacks.c: advanced whenever the stack table gives ids anew (a fork child's table). */
extern _Atomic uint32_t tprof_stacks_epoch __attribute__((visibility("hidden")));
/* Set in a fork child: the caches are its parent's pages until written (copy on write). */
extern int tprof_ucache_cold __attribute__((visibility("hidden")));

#endif
