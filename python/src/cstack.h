/*
 * cstack.h - room on the C stack for the frame-evaluation hook (calltrace.c). With a PEP 523
 * hook set, CPython 3.11 evaluates every Python-to-Python call by a recursive C call (without
 * one it runs them in one C frame), so a Python recursion the interpreter allows (a raised
 * sys.setrecursionlimit) can use up the thread's C stack where the program alone never
 * would. The hook asks pw_cstack_short() before each frame; when the thread's stack is
 * nearly used up it runs the frame on a fresh segment (pw_cstack_run), and the calls under
 * it go on there. Internal to the weft._calltrace extension.
 */
#ifndef PW_CSTACK_H
#define PW_CSTACK_H

#include <stdint.h>

/* The complement of the lowest stack address the running code may reach before a frame
 * moves to a new segment: 0 until the thread's first check (so that check takes the slow
 * path), ~0 where nothing can be moved (no segment then, the stack as it is). Written by the
 * owning thread only (cstack.c), in the slow path and around a segment. */
extern __thread uintptr_t pw_cstack_nfloor __attribute__((tls_model("initial-exec")));

/* Is the stack below the current frame short (or not yet known)? A TLS load and a compare. */
static inline __attribute__((always_inline)) int pw_cstack_short(void)
{
	return (uintptr_t)__builtin_frame_address(0) < ~pw_cstack_nfloor;
}

/* The slow path of pw_cstack_short(): learns the thread's stack bounds at its first call,
 * then says whether the caller must move (1) or has room (0). */
int pw_cstack_must_move(void);

/* Makes the thread's next pw_cstack_short() true once (its caller has something to do in
 * its slow path); pw_cstack_must_move() then answers as usual. */
void pw_cstack_poke(void);

/* Runs fn(arg) on the thread's next stack segment (made on first use, kept for the next
 * time), where pw_cstack_short() then measures; on the current stack when no segment can be
 * made (out of memory: then it is as without this). Back on the calling stack afterwards. */
void pw_cstack_run(void (*fn)(void *), void *arg);

#endif
