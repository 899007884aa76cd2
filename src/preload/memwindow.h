/*
 * memwindow.h - the allocation recorder's record window, shared by memory.c (which writes the
 * records) and memnested.c (which queues a signal handler's records made inside one).
 *
 * A window is weft__reserve .. weft__commit with weft__tls.busy set to WEFT_MEM_WINDOW (2)
 * instead of 1: a handler's allocation call that finds busy == WEFT_MEM_WINDOW knows that the
 * interrupted recorder writes the thread's queue right after its commit, so it queues its
 * record; inside any other window (busy 1: a function entry, a weft.h event) it counts it.
 * The thread's queue state is one initial-exec TLS block, so the fast path's check of it after
 * the commit costs one address load and two %fs-relative loads.
 */
#ifndef WEFT_PRELOAD_MEMWINDOW_H
#define WEFT_PRELOAD_MEMWINDOW_H

#include "lib/internal.h"

#define WEFT_MEM_WINDOW 2

/* The thread's queue of a signal handler's records (memnested.c). Slots [head, tail) are
 * complete records; tail is advanced by handlers (claiming a slot before filling it), head by
 * the writer; both only on this thread. own: set by memory.c around its own calls into libc
 * that allocate (pthread_getattr_np): what they allocate is weft's, whatever the caller. */
struct weft_mem_tls {
	unsigned pend_head, pend_tail;
	int own;
};
extern __thread struct weft_mem_tls weft_mem_tls WEFT_TLS;

int weft_mem_nested(const void *caller);
void weft_mem_stash(const uint64_t *w, unsigned n);
void weft_mem_flush(void);
void weft_mem_nested_start(void);
uint64_t weft_mem_nested_lost(void);

/* Opens a window of `bytes` on this thread, which is in none (busy clear): the record's words,
 * or NULL (no room: the runtime counted the event; the window is closed again). */
static inline __attribute__((always_inline)) uint64_t *weft_mem_open(size_t bytes)
{
	weft__tls.busy = WEFT_MEM_WINDOW;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	char *p = weft__tls.pos;
	if (__builtin_expect((size_t)(weft__tls.end - p) < bytes, 0))
		p = (char *)weft__reserve_slow(bytes);
	/* the chunk's line 512 bytes on, for writing: a malloc/free stream writes a new line every
	 * two or three records, and its read-for-ownership miss was the fast path's largest
	 * cost after the clock on a busy machine (2-3 ns per event, bench/RESULTS.md, issue 21).
	 * Past the chunk's end (or from NULL) a prefetch does nothing. */
	__builtin_prefetch(p + 512, 1, 3);
	if (__builtin_expect(p == 0, 0)) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		weft__tls.busy = 0;
	}
	return (uint64_t *)p;
}

/* After a window closed (committed, or failed to open): the records handlers queued in it. */
static inline __attribute__((always_inline)) void weft_mem_after(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__builtin_expect(weft_mem_tls.pend_head != weft_mem_tls.pend_tail, 0))
		weft_mem_flush();
}

#endif
