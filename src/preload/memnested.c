/*
 * memnested.c - allocation records of a signal handler that interrupted another record of its
 * thread (memory=1). A record is written between weft__reserve and weft__commit; a handler
 * that runs in that window cannot append to the thread's chunk (the interrupted record owns
 * the position, and a chunk switch would hand its half-written bytes to the writers), which is
 * why the fast path drops, and counts, a handler's event there.
 *
 * For the allocation recorder's own windows (memwindow.h: busy is WEFT_MEM_WINDOW there) that
 * loss is avoidable: the handler's record goes into a small per-thread
 * queue instead, and the interrupted recorder writes the queue right after its own commit, so
 * the stream keeps the order of time (the interrupted record, taken first, then the handler's).
 * A record is queued only while busy is set, i.e. while no record of this thread can open, and
 * queued records are written only from a record window of their own, in which handlers queue
 * behind them: the writer and the queuers never interleave on one slot. Only this thread
 * touches its queue (handlers included): no lock, no atomics beyond a compare-and-swap that a
 * nested handler cannot tear.
 *
 * A handler inside another kind of record (a function entry, a weft.h event) or with the queue
 * full: its allocation calls are counted as dropped (like any event there) and, apart, in
 * weft_mem_nested_lost, which the MEMORY record carries so `weft info` and `weft report
 * --memory` say how many.
 */
#include "memwindow.h"
#include <link.h>
#include <string.h>

#define PEND_SLOTS 16
#define PEND_WORDS 40 /* the longest record: a REALLOC (5 words) and its STACK (2 + 32 frames) */

struct pend {
	unsigned n;
	uint64_t w[PEND_WORDS];
};
/* The thread's queue (its head and tail in weft_mem_tls, memwindow.h). */
static __thread struct pend pend[PEND_SLOTS] WEFT_TLS;
__thread struct weft_mem_tls weft_mem_tls WEFT_TLS;
/* Allocation calls of handlers that could be neither written nor queued. Relaxed adds, from any
 * thread and from handlers; read at stop. */
static _Atomic uint64_t nested_lost;

/* weft's own code: an allocation call from it, inside the runtime, is the runtime's own. */
static uintptr_t text_lo, text_hi;

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t me = (uintptr_t)arg;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < lo + ph->p_memsz) {
			text_lo = lo;
			text_hi = lo + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

void weft_mem_nested_start(void)
{
	dl_iterate_phdr(find_text, (void *)(uintptr_t)weft_mem_nested_start);
}

/* A call that found the thread inside the runtime or inside a record (may_record said no): is
 * it a signal handler's, made inside a record window of this thread? Yes when the window is
 * open and the runtime is not running, or when the runtime is (its slow path, a chunk switch)
 * but the caller is not weft's code. (libc allocating on the slow path's behalf would pass for
 * a handler: it does not in practice, pthread_setspecific only beyond 32 keys.) */
int weft_mem_nested(const void *caller)
{
	if (weft_thread_ended || !weft__tls.busy || weft_mem_tls.own)
		return 0;
	if (!weft_in_runtime)
		return 1;
	return text_hi && ((uintptr_t)caller < text_lo || (uintptr_t)caller >= text_hi);
}

static void lost(void)
{
	atomic_fetch_add_explicit(&nested_lost, 1, memory_order_relaxed);
	weft__lost(); /* an event dropped inside another, as the fast path counts it */
}

/* From a handler, with busy set: queue the record (n words), or count it. */
void weft_mem_stash(const uint64_t *w, unsigned n)
{
	if (weft__tls.busy != WEFT_MEM_WINDOW || n > PEND_WORDS) {
		lost(); /* nothing would write the queue in order after this window */
		return;
	}
	unsigned t = __atomic_load_n(&weft_mem_tls.pend_tail, __ATOMIC_RELAXED);
	do {
		if (t - __atomic_load_n(&weft_mem_tls.pend_head, __ATOMIC_RELAXED) >= PEND_SLOTS) {
			lost();
			return;
		}
	} while (!__atomic_compare_exchange_n(&weft_mem_tls.pend_tail, &t, t + 1, 0, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	struct pend *e = &pend[t % PEND_SLOTS];
	memcpy(e->w, w, n * 8);
	e->n = n;
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* complete before whatever this handler does next */
}

/* Writes the queue, oldest first, each record from a window of its own (busy set: a handler
 * that comes meanwhile queues behind). Called with busy clear. */
void weft_mem_flush(void)
{
	while (__atomic_load_n(&weft_mem_tls.pend_head, __ATOMIC_RELAXED) !=
	       __atomic_load_n(&weft_mem_tls.pend_tail, __ATOMIC_RELAXED)) {
		uint64_t *p = weft_mem_open(PEND_WORDS * 8);
		unsigned h = __atomic_load_n(&weft_mem_tls.pend_head, __ATOMIC_RELAXED);
		if (p) {
			/* inside the window nothing else takes from the queue: the record at head is
			 * still there, unless a handler before the window wrote it (then: the next) */
			if (h != __atomic_load_n(&weft_mem_tls.pend_tail, __ATOMIC_RELAXED)) {
				const struct pend *e = &pend[h % PEND_SLOTS];
				memcpy(p, e->w, e->n * 8);
				p += e->n;
				__atomic_store_n(&weft_mem_tls.pend_head, h + 1, __ATOMIC_RELAXED);
			}
			weft__commit(p);
		} else if (h != __atomic_load_n(&weft_mem_tls.pend_tail, __ATOMIC_RELAXED)) {
			/* no room (the run stopped, or buffers full): the runtime counted it; it goes */
			__atomic_compare_exchange_n(&weft_mem_tls.pend_head, &h, h + 1, 0, __ATOMIC_RELAXED,
						    __ATOMIC_RELAXED);
		}
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
}

uint64_t weft_mem_nested_lost(void)
{
	return atomic_load_explicit(&nested_lost, memory_order_relaxed);
}
