/*
 * memory.c - the allocation interposer of libweft-preload.so (memory=1, `weft record --memory`):
 * malloc, calloc, realloc, reallocarray, free, cfree, memalign, posix_memalign, aligned_alloc,
 * valloc, pvalloc, and direct mmap/munmap/mremap of anonymous memory. Each call goes on to the
 * allocator underneath (glibc's, or the jemalloc/tcmalloc a program links: memnext.c), then,
 * when recording is on, appends one record to the calling thread's
 * stream: ALLOC (address, size), FREE (address) or REALLOC (old, new, size), tagged with the
 * function (enum weft_mem_fn) and the heap (0 = the C heap, the "mmap" heap for mappings).
 * glibc's own large-block mmaps are internal calls that never come through here.
 *
 * Attribution costs nothing here: the record lands in the same stream as the thread's slices,
 * and the converters charge it to the innermost slice open at that moment.
 *
 * Off (memory not set) each call costs one relaxed load more than glibc's. Records are skipped,
 * uncounted, while the thread is inside the runtime (weft_in_runtime: its own chunk and
 * registry allocations, and its writer threads for their whole life); those blocks are
 * untraced and a later free of one shows as a free of an unknown block, never an error. A
 * signal handler's call inside another record of its thread (weft__tls.busy) is queued and
 * written right after the interrupted record when that is an allocation record, else counted
 * as dropped, apart too (memnested.c). Times are taken
 * before a block is given back (free, realloc), so another thread that gets the same address
 * next always has a later record.
 *
 * memory_threshold=N and memory_sample=N record only some blocks (memfilter.c), out of line.
 * This file holds the interposed functions and the records they write, the hot path; the
 * allocator underneath is memnext.c's, the source's open, stop and fork memsource.c's
 * (memory-internal.h lists the rooms and what they share).
 */
#include "memory-internal.h"
#include "memnext.h"
#include "memwindow.h"
#include "memstacks.h"
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Sanitizer builds leave the interposer out (ASan and TSan intercept malloc themselves, and
 * a preloaded malloc ahead of theirs breaks their start-up): the functions are then hidden. */
#ifdef WEFT_NO_MEMORY_INTERPOSER
#define EXPORT __attribute__((visibility("hidden")))
#else
#define EXPORT __attribute__((visibility("default")))
#endif

/* What is recorded (MEM_*, memory-internal.h): written by memsource.c at open and stop, read
 * relaxed by every call. The "mmap" heap: set at open, before the mode. */
int weft_mem_mode;
struct weft_site *weft_mem_mmap_heap;

static inline int recording(void)
{
	return __builtin_expect(__atomic_load_n(&weft_mem_mode, __ATOMIC_RELAXED) != MEM_OFF, 0);
}

/* The fast path's test: not inside the runtime or another record of this thread, and no
 * handler's record queued. A queue is written right after the window it was made in, but a
 * signal handler can run in between (after the commit, or between two queued records of
 * weft_mem_flush): its records must come after the older queued ones, or the stream would
 * show a block allocated again before its free (test_signals' AllocationsInSignalHandlers saw
 * an unknown free about once in 90 loaded runs). */
static inline int may_record(void)
{
	return !(weft_in_runtime | weft__tls.busy | weft_thread_ended |
		 (weft_mem_tls.pend_head ^ weft_mem_tls.pend_tail));
}

/* may_record; or only queued records waiting (put_words writes them first); or a signal
 * handler's call (from caller) inside another record of this thread, which put_words queues
 * or counts (memnested.c). */
static inline __attribute__((always_inline)) int may_record_from(const void *caller)
{
	if (__builtin_expect(may_record(), 1))
		return 1;
	if (!(weft_in_runtime | weft__tls.busy | weft_thread_ended))
		return 1;
	return weft_mem_nested(caller);
}
/* The interposed function's caller (in an always_inline helper: that function's). */
#define CALLER __builtin_return_address(0)

/* One record of n words. Inside another record of this thread (a signal handler's call) it is
 * queued; else written, with whatever handlers queued before and during its window after it. */
static void put_words(const uint64_t *v, unsigned n)
{
	if (__builtin_expect(weft__tls.busy, 0)) {
		weft_mem_stash(v, n);
		return;
	}
	if (__builtin_expect(weft_mem_tls.pend_head != weft_mem_tls.pend_tail, 0))
		weft_mem_flush(); /* older than this one */
	uint64_t *w = weft_mem_open(n * 8);
	if (__builtin_expect(w != 0, 1)) {
		memcpy(w, v, n * 8);
		weft__commit(w + n);
	}
	weft_mem_after();
}

static void put_alloc(uint64_t t, unsigned heap, unsigned fn, const void *p, size_t n)
{
	uint64_t w[4] = {t, weft__hdr(heap, WEFT_R_ALLOC, 2, fn), (uint64_t)(uintptr_t)p, n};
	put_words(w, 4);
}

static void put_free(uint64_t t, unsigned heap, unsigned fn, const void *p)
{
	uint64_t w[3] = {t, weft__hdr(heap, WEFT_R_FREE, 1, fn), (uint64_t)(uintptr_t)p};
	put_words(w, 3);
}

static void put_realloc(uint64_t t, unsigned heap, unsigned fn, const void *old, const void *p, size_t n)
{
	uint64_t w[5] = {t, weft__hdr(heap, WEFT_R_REALLOC, 3, fn), (uint64_t)(uintptr_t)old, (uint64_t)(uintptr_t)p, n};
	put_words(w, 5);
}

/* The fast path of MEM_ALL, for a thread that may record (may_record(): so in no window, busy
 * clear, and no queued record): the words go straight into the window, with no copy and no
 * second look at busy. */
static inline __attribute__((always_inline)) void fast_alloc(unsigned fn, const void *p, size_t n)
{
	uint64_t t = weft__ticks();
	uint64_t *w = weft_mem_open(32);
	if (__builtin_expect(w != 0, 1)) {
		w[0] = t;
		w[1] = weft__hdr(0, WEFT_R_ALLOC, 2, fn);
		w[2] = (uint64_t)(uintptr_t)p;
		w[3] = n;
		weft__commit(w + 4);
	}
	weft_mem_after();
}

static inline __attribute__((always_inline)) void fast_free(unsigned fn, const void *p)
{
	uint64_t t = weft__ticks();
	uint64_t *w = weft_mem_open(24);
	if (__builtin_expect(w != 0, 1)) {
		w[0] = t;
		w[1] = weft__hdr(0, WEFT_R_FREE, 1, fn);
		w[2] = (uint64_t)(uintptr_t)p;
		weft__commit(w + 3);
	}
	weft_mem_after();
}

/* ---- the C heap ---- */

/* memsource.c's probe (find_allocator): set on its thread while it calls the program's malloc;
 * probe_seen when that call came here. */
__thread int weft_mem_probing WEFT_TLS;
int weft_mem_probe_seen;

/* Out of line, all but the common case: a signal handler's call inside a record, a call of the
 * runtime's own, a threshold, sampling or stacks (MEM_FILTERED), find_allocator's probe. */
static __attribute__((noinline)) void on_alloc_slow(unsigned fn, void *p, size_t n, void *frame,
						    const void *caller)
{
	if (!may_record_from(caller))
		return;
	int m = __atomic_load_n(&weft_mem_mode, __ATOMIC_RELAXED);
	if (m == MEM_ALL) {
		put_alloc(weft__ticks(), 0, fn, p, n);
		return;
	}
	if (__builtin_expect(m == MEM_PROBE, 0)) {
		if (weft_mem_probing)
			weft_mem_probe_seen = 1;
		return;
	}
	if (m == MEM_OFF || !weft_mem_keep_alloc(p, n))
		return;
	if (weft_mem_with_stacks)
		weft_mem_put_with_stack(weft__ticks(), fn, NULL, p, n, frame);
	else
		put_alloc(weft__ticks(), 0, fn, p, n);
}

/* A new block p of n bytes. Off: one load and a branch. Recording every block (MEM_ALL) on a
 * thread that may record: one record, inline; the rest out of line. */
static inline __attribute__((always_inline)) void on_alloc(unsigned fn, void *p, size_t n, void *frame)
{
	int m = __atomic_load_n(&weft_mem_mode, __ATOMIC_RELAXED);
	if (__builtin_expect(m == MEM_OFF, 1) || !p)
		return;
	if (__builtin_expect(m == MEM_ALL, 1) && __builtin_expect(may_record(), 1))
		fast_alloc(fn, p, n);
	else
		on_alloc_slow(fn, p, n, frame, CALLER);
}
#define FRAME __builtin_frame_address(0)

EXPORT void *malloc(size_t n)
{
	void *p = weft_next_ready() ? weft_next.malloc(n) : weft_boot_alloc(n, 16);
	on_alloc(WEFT_MEM_MALLOC, p, n, FRAME);
	return p;
}

EXPORT void *calloc(size_t k, size_t n)
{
	size_t bytes;
	if (!weft_next_ready()) /* the area is zeroed static memory */
		return __builtin_mul_overflow(k, n, &bytes) ? NULL : weft_boot_alloc(bytes, 16);
	void *p = weft_next.calloc(k, n);
	on_alloc(WEFT_MEM_CALLOC, p, k * n, FRAME);
	return p;
}

static __attribute__((noinline)) void on_free_slow(unsigned fn, void *p, const void *caller)
{
	if (!may_record_from(caller))
		return;
	int m = __atomic_load_n(&weft_mem_mode, __ATOMIC_RELAXED);
	if (m != MEM_ALL && (m == MEM_OFF || m == MEM_PROBE || !weft_mem_keep_free(p)))
		return;
	put_free(weft__ticks(), 0, fn, p);
}

/* The free of p (not a bootstrap block), as on_alloc. */
static inline __attribute__((always_inline)) void on_free(unsigned fn, void *p)
{
	int m = __atomic_load_n(&weft_mem_mode, __ATOMIC_RELAXED);
	if (__builtin_expect(m == MEM_OFF, 1) || !p)
		return;
	if (__builtin_expect(m == MEM_ALL, 1) && __builtin_expect(may_record(), 1))
		fast_free(fn, p);
	else
		on_free_slow(fn, p, CALLER);
}

EXPORT void free(void *p)
{
	if (__builtin_expect(weft_is_boot(p), 0))
		return; /* a bootstrap block: never given back */
	on_free(WEFT_MEM_FREE, p); /* before the block can go to another thread */
	if (weft_next_ready())
		weft_next.free(p);
}

EXPORT void cfree(void *p)
{
	free(p);
}

/* realloc keeps the old block when it fails (n > 0): nothing happened. realloc(p, 0) frees p. */
static void *do_realloc(unsigned fn, void *old, size_t n, void *frame, const void *caller)
{
	if (__builtin_expect(!weft_next_ready() || weft_is_boot(old), 0)) { /* a new block, the old one's bytes copied */
		if (old && !weft_is_boot(old)) { /* cannot be: no other block exists before the lookup */
			errno = ENOMEM;
			return NULL;
		}
		void *p = weft_next_ready() ? malloc(n) : weft_boot_alloc(n, 16);
		if (p && old)
			memcpy(p, old, weft_boot_size(old) < n ? weft_boot_size(old) : n);
		return p;
	}
	if (!recording() || weft_mem_mode == MEM_PROBE)
		return weft_next.realloc(old, n);
	uint64_t t = weft__ticks();
	int filtered = weft_mem_mode == MEM_FILTERED;
	int had = old && (!filtered || (may_record_from(caller) && weft_mem_keep_free(old)));
	void *p = weft_next.realloc(old, n);
	if (!p && n) { /* failed: the old block stays */
		if (had && filtered && weft_mem_sample_mean)
			weft_mem_set_add((uint64_t)(uintptr_t)old);
		return p;
	}
	if (!may_record_from(caller))
		return p;
	int keep = p && (!filtered || weft_mem_keep_alloc(p, n));
	if (keep && weft_mem_with_stacks)
		weft_mem_put_with_stack(t, fn, had ? old : NULL, p, n, frame);
	else if (had && keep)
		put_realloc(t, 0, fn, old, p, n);
	if (had && !keep)
		put_free(t, 0, fn, old);
	else if (keep && !had && !weft_mem_with_stacks)
		put_alloc(t, 0, fn, p, n);
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	return do_realloc(WEFT_MEM_REALLOC, old, n, FRAME, CALLER);
}

EXPORT void *reallocarray(void *old, size_t k, size_t n)
{
	size_t bytes;
	if (__builtin_mul_overflow(k, n, &bytes)) {
		errno = ENOMEM;
		return NULL;
	}
	return do_realloc(WEFT_MEM_REALLOCARRAY, old, bytes, FRAME, CALLER);
}

EXPORT void *memalign(size_t align, size_t n)
{
	void *p = weft_next_ready() ? weft_next.memalign(align, n) : weft_boot_alloc(n, align);
	on_alloc(WEFT_MEM_MEMALIGN, p, n, FRAME);
	return p;
}

/* aligned_alloc, posix_memalign, valloc and pvalloc inside glibc do not come back through an
 * interposed malloc or memalign: each is wrapped here. */
EXPORT void *aligned_alloc(size_t align, size_t n)
{
	void *p = weft_next_ready() ? weft_next.aligned_alloc(align, n) : weft_boot_alloc(n, align);
	on_alloc(WEFT_MEM_ALIGNED_ALLOC, p, n, FRAME);
	return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = NULL;
	if (weft_next_ready()) {
		int rc = weft_next.posix_memalign(&p, align, n);
		if (rc)
			return rc;
	} else {
		if (align % sizeof(void *) || (align & (align - 1)) || !align)
			return EINVAL;
		if (!(p = weft_boot_alloc(n, align)))
			return ENOMEM;
	}
	*out = p;
	on_alloc(WEFT_MEM_POSIX_MEMALIGN, p, n, FRAME);
	return 0;
}

EXPORT void *valloc(size_t n)
{
	void *p = weft_next_ready() ? weft_next.valloc(n) : weft_boot_alloc(n, 4096);
	on_alloc(WEFT_MEM_VALLOC, p, n, FRAME);
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	void *p = weft_next_ready() ? weft_next.pvalloc(n) : weft_boot_alloc((n + 4095) & ~(size_t)4095, 4096);
	if (recording() && p) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		on_alloc(WEFT_MEM_PVALLOC, p, n ? (n + page - 1) & ~(page - 1) : page, FRAME);
	}
	return p;
}

/* ---- anonymous mappings (the program's own mmap calls) ---- */

static inline __attribute__((always_inline)) int heap_ok(const void *caller)
{
	return weft_mem_mmap_heap && weft__on(weft_mem_mmap_heap) && may_record_from(caller);
}

static inline __attribute__((always_inline)) void *do_mmap(void *addr, size_t len, int prot, int flags, int fd,
							    off_t off, const void *caller)
{
	void *p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (recording() && p != MAP_FAILED && (flags & MAP_ANONYMOUS) && len >= weft_mem_threshold && heap_ok(caller))
		put_alloc(weft__ticks(), weft_mem_mmap_heap->id, WEFT_MEM_MMAP, p, len);
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off, CALLER);
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return do_mmap(addr, len, prot, flags, fd, off, CALLER);
}

EXPORT int munmap(void *addr, size_t len)
{
	if (recording() && heap_ok(CALLER) && len >= weft_mem_threshold)
		put_free(weft__ticks(), weft_mem_mmap_heap->id, WEFT_MEM_MUNMAP, addr);
	return (int)syscall(SYS_munmap, addr, len);
}

EXPORT void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
	void *want = NULL;
	if (flags & MREMAP_FIXED) {
		va_list ap;
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	uint64_t t = weft__ticks();
	void *p = (void *)syscall(SYS_mremap, old, old_len, len, flags, want);
	if (recording() && p != MAP_FAILED && heap_ok(CALLER) && len >= weft_mem_threshold)
		put_realloc(t, weft_mem_mmap_heap->id, WEFT_MEM_MREMAP, old, p, len);
	return p;
}

/* Our own malloc, whatever the lookup order makes of the name (a hidden alias: &malloc here
 * would be the lookup's answer). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-attributes"
extern __typeof__(malloc) weft_own_malloc __attribute__((alias("malloc"), visibility("hidden")));
#pragma GCC diagnostic pop
