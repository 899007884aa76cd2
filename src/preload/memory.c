/*
 * memory.c - the allocation interposer of libweft-preload.so (memory=1, `weft record --memory`):
 * malloc, calloc, realloc, reallocarray, free, cfree, memalign, posix_memalign, aligned_alloc,
 * valloc, pvalloc, and direct mmap/munmap/mremap of anonymous memory. Each call goes on to the
 * allocator underneath (glibc's, or the jemalloc/tcmalloc a program links: see below), then,
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
 * memory_threshold=N records only blocks of at least N bytes (a free when the block's usable
 * size reaches N, so some frees of unrecorded blocks are recorded: expected, not "unknown").
 * memory_sample=N records a Poisson sample by bytes (mean N bytes between samples, the
 * heapprofd/jemalloc method; the converters scale every total back) and remembers the sampled
 * addresses in a lock-free set, so only their frees are recorded.
 */
#include "memwindow.h"
#include "memstacks.h"
#include "collect/source.h"
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
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

extern void *__libc_malloc(size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

/* ---- the allocator underneath ----
 * Every call goes on to the definition that follows this library in the lookup order: glibc's,
 * or a jemalloc/tcmalloc the program links as a shared library (sending its calls to glibc
 * instead would change the program's allocator and free blocks into the wrong one). It is
 * looked up at the first call; dlsym may allocate, so while the lookup runs (on any thread)
 * blocks come from a static bootstrap area, never handed back. Where a definition is missing
 * the function is built on memalign of the same allocator. */
struct next_fns {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
	void *(*memalign)(size_t, size_t);
	int (*posix_memalign)(void **, size_t, size_t);
	void *(*aligned_alloc)(size_t, size_t);
	void *(*valloc)(size_t);
	void *(*pvalloc)(size_t);
	size_t (*usable_size)(void *);
};
static struct next_fns next; /* written once by lookup(), before next_state becomes READY */
enum { NEXT_NONE = 0, NEXT_LOOKING = 1, NEXT_READY = 2 };
static int next_state;

static char boot_area[64 << 10] __attribute__((aligned(64)));
static size_t boot_used; /* atomic bump pointer */

static int is_boot(const void *p)
{
	return (const char *)p >= boot_area && (const char *)p < boot_area + sizeof(boot_area);
}

/* A bootstrap block: 16 bytes holding its size, then the block (aligned to `align`). */
static void *boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	size_t cur = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;
	do {
		start = (cur + 16 + align - 1) & ~(align - 1);
		end = start + n;
		if (end > sizeof(boot_area) || end < start) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &cur, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	memcpy(boot_area + start - 16, &n, sizeof(n));
	return boot_area + start;
}

static size_t boot_size(const void *p)
{
	size_t n;
	memcpy(&n, (const char *)p - 16, sizeof(n));
	return n;
}

#define NEXT(name, fallback) \
	do { \
		void *f_ = dlsym(RTLD_NEXT, #name); \
		memcpy(&next.name, &f_, sizeof(f_)); \
		if (!next.name) \
			next.name = fallback; \
	} while (0)

static void *memalign_via_malloc(size_t a, size_t n);
static void *valloc_via_memalign(size_t n) { return next.memalign((size_t)sysconf(_SC_PAGESIZE), n); }
static void *pvalloc_via_memalign(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return next.memalign(page, n ? (n + page - 1) & ~(page - 1) : page);
}
static int posix_memalign_via_memalign(void **out, size_t a, size_t n)
{
	void *p = next.memalign(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
static void *aligned_via_memalign(size_t a, size_t n) { return next.memalign(a, n); }
static void *calloc_via_malloc(size_t k, size_t n)
{
	size_t b;
	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = next.malloc(b);
	if (p)
		memset(p, 0, b);
	return p;
}
static size_t usable_unknown(void *p) { (void)p; return 0; }

/* An allocator other than glibc's that lacks some of the functions: the next definition found
 * for those is glibc's, whose blocks it cannot free. Those are built on its own memalign. */
static int same_object(const void *a, const void *b)
{
	Dl_info x, y;
	return dladdr(a, &x) && dladdr(b, &y) && x.dli_fbase == y.dli_fbase;
}

static void same_allocator(void)
{
	void *m;
	memcpy(&m, &next.malloc, sizeof(m));
	if (m == (void *)__libc_malloc)
		return;
#define SAME(name, fallback)                                  \
	do {                                                  \
		void *f_;                                     \
		memcpy(&f_, &next.name, sizeof(f_));          \
		if (!same_object(f_, m))                      \
			next.name = fallback;                 \
	} while (0)
	SAME(calloc, calloc_via_malloc);
	SAME(memalign, memalign_via_malloc);
	SAME(posix_memalign, posix_memalign_via_memalign);
	SAME(aligned_alloc, aligned_via_memalign);
	SAME(valloc, valloc_via_memalign);
	SAME(pvalloc, pvalloc_via_memalign);
	SAME(usable_size, usable_unknown);
#undef SAME
}

static void lookup(void)
{
	int expect = NEXT_NONE;
	if (!__atomic_compare_exchange_n(&next_state, &expect, NEXT_LOOKING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return; /* done, or being done (here, recursively, or on another thread) */
	int saved = errno;
	NEXT(malloc, __libc_malloc);
	NEXT(free, __libc_free);
	NEXT(realloc, __libc_realloc);
	NEXT(calloc, calloc_via_malloc);
	NEXT(memalign, memalign_via_malloc);
	NEXT(posix_memalign, posix_memalign_via_memalign);
	NEXT(aligned_alloc, aligned_via_memalign);
	NEXT(valloc, valloc_via_memalign);
	NEXT(pvalloc, pvalloc_via_memalign);
	void *u = dlsym(RTLD_NEXT, "malloc_usable_size");
	memcpy(&next.usable_size, &u, sizeof(u));
	if (!next.usable_size)
		next.usable_size = usable_unknown;
	same_allocator();
	errno = saved;
	__atomic_store_n(&next_state, NEXT_READY, __ATOMIC_RELEASE);
}

/* No memalign in the allocator underneath: its aligned_alloc, else its malloc when that
 * alignment is what malloc gives anyway; else the request fails (ENOMEM) rather than take a
 * block from another allocator. */
static void *memalign_via_malloc(size_t a, size_t n)
{
	if (next.aligned_alloc && next.aligned_alloc != aligned_via_memalign)
		return next.aligned_alloc(a, (n + a - 1) & ~(a - 1));
	if (a <= 16)
		return next.malloc(n);
	errno = ENOMEM;
	return NULL;
}

/* Whether calls can go to the allocator underneath (else: the bootstrap area). */
static inline int ready(void)
{
	if (__builtin_expect(__atomic_load_n(&next_state, __ATOMIC_ACQUIRE) == NEXT_READY, 1))
		return 1;
	lookup();
	return __atomic_load_n(&next_state, __ATOMIC_ACQUIRE) == NEXT_READY;
}

/* What is recorded: 0 nothing, MEM_ALL every block, MEM_FILTERED through threshold/sample.
 * Written at start (preload_init) and at stop (before the flush); read relaxed by every call:
 * a call that still sees the old value records one event more or less, at the edge. */
enum { MEM_OFF = 0, MEM_ALL = 1, MEM_FILTERED = 2, MEM_PROBE = 3 /* find_allocator: nothing recorded */ };
static int mem_mode;
static uint64_t threshold; /* set before mem_mode, read-only after */
static uint64_t sample_mean;
static struct weft_site *mmap_heap;
static _Atomic uint64_t sample_set_full; /* samples left out: the set had no room */

static inline int recording(void)
{
	return __builtin_expect(__atomic_load_n(&mem_mode, __ATOMIC_RELAXED) != MEM_OFF, 0);
}

/* Not from inside the runtime or inside another record of this thread. */
static inline int may_record(void)
{
	return !(weft_in_runtime | weft__tls.busy | weft_thread_ended);
}

/* may_record, or a signal handler's call (from caller) inside another record of this thread,
 * which put_words queues or counts (memnested.c). */
static inline __attribute__((always_inline)) int may_record_from(const void *caller)
{
	if (__builtin_expect(may_record(), 1))
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
 * clear, and no queued record: a queue is written before the window it was made in closes):
 * the words go straight into the window, with no copy and no second look at busy. */
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

/* ---- sampling: the per-thread byte countdown and the set of sampled addresses ---- */

static __thread int64_t sample_left WEFT_TLS; /* bytes to the next sample; <= 0 before the first */
static __thread uint64_t rng WEFT_TLS;

static int64_t next_gap(void)
{
	if (!rng)
		rng = weft__ticks() ^ ((uint64_t)syscall(SYS_gettid) << 32) ^ 0x9e3779b97f4a7c15ull;
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	double u = ((double)(rng >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
	double gap = -log(u) * (double)sample_mean;
	return gap < 1 ? 1 : gap > 1e15 ? (int64_t)1e15 : (int64_t)gap;
}

/* Does this block of n bytes carry a sample? The number of samples a block gets is Poisson
 * with mean n / sample_mean; it is recorded once if that is at least one (probability
 * 1 - exp(-n / mean), which the converters divide by). */
static int sampled(size_t n)
{
	if (sample_left <= 0 && !rng)
		sample_left = next_gap();
	sample_left -= (int64_t)n;
	if (sample_left > 0)
		return 0;
	while (sample_left <= 0)
		sample_left += next_gap();
	return 1;
}

#define SET_BITS 20
#define SET_PROBES 64
#define SET_TOMB 1ull
static uint64_t *sample_set; /* open addressing; 0 empty, SET_TOMB removed; mmap'd at start */

static inline size_t set_slot(uint64_t a)
{
	return (size_t)((a * 0x9e3779b97f4a7c15ull) >> (64 - SET_BITS));
}

static int set_add(uint64_t a)
{
	size_t mask = (1u << SET_BITS) - 1;
	for (size_t i = 0, k = set_slot(a); i < SET_PROBES; i++, k = (k + 1) & mask) {
		uint64_t cur = __atomic_load_n(&sample_set[k], __ATOMIC_RELAXED);
		if ((cur == 0 || cur == SET_TOMB) &&
		    __atomic_compare_exchange_n(&sample_set[k], &cur, a, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return 0;
	}
	atomic_fetch_add_explicit(&sample_set_full, 1, memory_order_relaxed);
	return -1;
}

/* Removes a, if the set has it; returns whether it had. */
static int set_take(uint64_t a)
{
	size_t mask = (1u << SET_BITS) - 1;
	for (size_t i = 0, k = set_slot(a); i < SET_PROBES; i++, k = (k + 1) & mask) {
		uint64_t cur = __atomic_load_n(&sample_set[k], __ATOMIC_RELAXED);
		if (cur == 0)
			return 0;
		if (cur == a)
			return __atomic_compare_exchange_n(&sample_set[k], &cur, SET_TOMB, 0, __ATOMIC_RELAXED,
							   __ATOMIC_RELAXED);
	}
	return 0;
}

/* With a threshold or sampling: is this new block recorded? */
static int keep_alloc(const void *p, size_t n)
{
	if (n < threshold)
		return 0;
	if (!sample_mean)
		return 1;
	return sampled(n) && set_add((uint64_t)(uintptr_t)p) == 0;
}

/* With a threshold or sampling: is the free of this (still allocated) block recorded? */
static int keep_free(void *p)
{
	if (sample_mean)
		return set_take((uint64_t)(uintptr_t)p);
	if (!threshold) /* stacks alone */
		return 1;
	return !is_boot(p) && next.usable_size(p) >= threshold;
}

/* ---- the C heap ---- */

/* find_allocator's probe: set on its thread while it calls the program's malloc; probe_seen
 * when that call came here. */
static __thread int probing WEFT_TLS;
static int probe_seen;

/* Out of line, all but the common case: a signal handler's call inside a record, a call of the
 * runtime's own, a threshold, sampling or stacks (MEM_FILTERED), find_allocator's probe. */
static __attribute__((noinline)) void on_alloc_slow(unsigned fn, void *p, size_t n, void *frame,
						    const void *caller)
{
	if (!may_record_from(caller))
		return;
	int m = __atomic_load_n(&mem_mode, __ATOMIC_RELAXED);
	if (m == MEM_ALL) {
		put_alloc(weft__ticks(), 0, fn, p, n);
		return;
	}
	if (__builtin_expect(m == MEM_PROBE, 0)) {
		if (probing)
			probe_seen = 1;
		return;
	}
	if (m == MEM_OFF || !keep_alloc(p, n))
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
	int m = __atomic_load_n(&mem_mode, __ATOMIC_RELAXED);
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
	void *p = ready() ? next.malloc(n) : boot_alloc(n, 16);
	on_alloc(WEFT_MEM_MALLOC, p, n, FRAME);
	return p;
}

EXPORT void *calloc(size_t k, size_t n)
{
	size_t bytes;
	if (!ready()) /* the area is zeroed static memory */
		return __builtin_mul_overflow(k, n, &bytes) ? NULL : boot_alloc(bytes, 16);
	void *p = next.calloc(k, n);
	on_alloc(WEFT_MEM_CALLOC, p, k * n, FRAME);
	return p;
}

static __attribute__((noinline)) void on_free_slow(unsigned fn, void *p, const void *caller)
{
	if (!may_record_from(caller))
		return;
	int m = __atomic_load_n(&mem_mode, __ATOMIC_RELAXED);
	if (m != MEM_ALL && (m == MEM_OFF || m == MEM_PROBE || !keep_free(p)))
		return;
	put_free(weft__ticks(), 0, fn, p);
}

/* The free of p (not a bootstrap block), as on_alloc. */
static inline __attribute__((always_inline)) void on_free(unsigned fn, void *p)
{
	int m = __atomic_load_n(&mem_mode, __ATOMIC_RELAXED);
	if (__builtin_expect(m == MEM_OFF, 1) || !p)
		return;
	if (__builtin_expect(m == MEM_ALL, 1) && __builtin_expect(may_record(), 1))
		fast_free(fn, p);
	else
		on_free_slow(fn, p, CALLER);
}

EXPORT void free(void *p)
{
	if (__builtin_expect(is_boot(p), 0))
		return; /* a bootstrap block: never given back */
	on_free(WEFT_MEM_FREE, p); /* before the block can go to another thread */
	if (ready())
		next.free(p);
}

EXPORT void cfree(void *p)
{
	free(p);
}

/* realloc keeps the old block when it fails (n > 0): nothing happened. realloc(p, 0) frees p. */
static void *do_realloc(unsigned fn, void *old, size_t n, void *frame, const void *caller)
{
	if (__builtin_expect(!ready() || is_boot(old), 0)) { /* a new block, the old one's bytes copied */
		if (old && !is_boot(old)) { /* cannot be: no other block exists before the lookup */
			errno = ENOMEM;
			return NULL;
		}
		void *p = ready() ? malloc(n) : boot_alloc(n, 16);
		if (p && old)
			memcpy(p, old, boot_size(old) < n ? boot_size(old) : n);
		return p;
	}
	if (!recording() || mem_mode == MEM_PROBE)
		return next.realloc(old, n);
	uint64_t t = weft__ticks();
	int filtered = mem_mode == MEM_FILTERED;
	int had = old && (!filtered || (may_record_from(caller) && keep_free(old)));
	void *p = next.realloc(old, n);
	if (!p && n) { /* failed: the old block stays */
		if (had && filtered && sample_mean)
			set_add((uint64_t)(uintptr_t)old);
		return p;
	}
	if (!may_record_from(caller))
		return p;
	int keep = p && (!filtered || keep_alloc(p, n));
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
	void *p = ready() ? next.memalign(align, n) : boot_alloc(n, align);
	on_alloc(WEFT_MEM_MEMALIGN, p, n, FRAME);
	return p;
}

/* aligned_alloc, posix_memalign, valloc and pvalloc inside glibc do not come back through an
 * interposed malloc or memalign: each is wrapped here. */
EXPORT void *aligned_alloc(size_t align, size_t n)
{
	void *p = ready() ? next.aligned_alloc(align, n) : boot_alloc(n, align);
	on_alloc(WEFT_MEM_ALIGNED_ALLOC, p, n, FRAME);
	return p;
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = NULL;
	if (ready()) {
		int rc = next.posix_memalign(&p, align, n);
		if (rc)
			return rc;
	} else {
		if (align % sizeof(void *) || (align & (align - 1)) || !align)
			return EINVAL;
		if (!(p = boot_alloc(n, align)))
			return ENOMEM;
	}
	*out = p;
	on_alloc(WEFT_MEM_POSIX_MEMALIGN, p, n, FRAME);
	return 0;
}

EXPORT void *valloc(size_t n)
{
	void *p = ready() ? next.valloc(n) : boot_alloc(n, 4096);
	on_alloc(WEFT_MEM_VALLOC, p, n, FRAME);
	return p;
}

EXPORT void *pvalloc(size_t n)
{
	void *p = ready() ? next.pvalloc(n) : boot_alloc((n + 4095) & ~(size_t)4095, 4096);
	if (recording() && p) {
		size_t page = (size_t)sysconf(_SC_PAGESIZE);
		on_alloc(WEFT_MEM_PVALLOC, p, n ? (n + page - 1) & ~(page - 1) : page, FRAME);
	}
	return p;
}

/* ---- anonymous mappings (the program's own mmap calls) ---- */

static inline __attribute__((always_inline)) int heap_ok(const void *caller)
{
	return mmap_heap && weft__on(mmap_heap) && may_record_from(caller);
}

static inline __attribute__((always_inline)) void *do_mmap(void *addr, size_t len, int prot, int flags, int fd,
							    off_t off, const void *caller)
{
	void *p = (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	if (recording() && p != MAP_FAILED && (flags & MAP_ANONYMOUS) && len >= threshold && heap_ok(caller))
		put_alloc(weft__ticks(), mmap_heap->id, WEFT_MEM_MMAP, p, len);
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
	if (recording() && heap_ok(CALLER) && len >= threshold)
		put_free(weft__ticks(), mmap_heap->id, WEFT_MEM_MUNMAP, addr);
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
	if (recording() && p != MAP_FAILED && heap_ok(CALLER) && len >= threshold)
		put_realloc(t, mmap_heap->id, WEFT_MEM_MREMAP, old, p, len);
	return p;
}

/* ---- start and stop (preload.c) ---- */

/* Flags of the MEMORY record (docs/format.md). */
#define MEMF_ON 1u
#define MEMF_STACKS 2u
#define MEMF_NOT_INTERPOSED 4u /* the program's own malloc comes first: calls do not reach us */
static uint32_t mem_flags;
static char allocator[512]; /* the object whose malloc the program uses, when not glibc's */

static void write_memory_record(void)
{
	uint64_t nested = weft_mem_nested_lost(); /* signal handlers' calls not recorded */
	uint32_t head[2] = {mem_flags, nested > UINT32_MAX ? UINT32_MAX : (uint32_t)nested};
	uint64_t v[3] = {threshold, sample_mean, atomic_load(&sample_set_full)};
	char buf[sizeof(v) + sizeof(allocator)];
	memcpy(buf, v, sizeof(v));
	size_t n = strlen(allocator);
	memcpy(buf + sizeof(v), allocator, n + 1);
	weft_meta_write(WEFT_M_MEMORY, head, sizeof(head), buf, sizeof(v) + n + 1);
}

/* Our own malloc, whatever the lookup order makes of the name (a hidden alias: &malloc here
 * would be the lookup's answer). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-attributes"
extern __typeof__(malloc) weft_own_malloc __attribute__((alias("malloc"), visibility("hidden")));
#pragma GCC diagnostic pop

/* Does a call through the program's malloc reach ours? One probe allocation through it (and its
 * free), seen by on_alloc_filtered in MEM_PROBE mode, which records nothing: a symbol that is not
 * ours may still lead here (a non-PIE executable's canonical PLT entry, which dlsym returns for
 * an executable that takes malloc's address, or a wrapper preloaded ahead of weft that forwards
 * to the next malloc). */
static int reaches_ours(void *def)
{
	void *(*prog_malloc)(size_t);
	void (*prog_free)(void *);
	void *f = dlsym(RTLD_DEFAULT, "free");
	memcpy(&prog_malloc, &def, sizeof(def));
	memcpy(&prog_free, &f, sizeof(f));
	int saved = weft_in_runtime;
	weft_in_runtime = 0; /* may_record() lets the probe through; nothing is recorded in this mode */
	probe_seen = 0;
	__atomic_store_n(&mem_mode, MEM_PROBE, __ATOMIC_RELEASE);
	probing = 1;
	void *p = prog_malloc(24);
	probing = 0;
	if (p && prog_free)
		prog_free(p);
	__atomic_store_n(&mem_mode, MEM_OFF, __ATOMIC_RELEASE);
	weft_in_runtime = saved;
	return probe_seen;
}

/* Is def the executable's own definition (its symbol defined in a section of the program)?
 * Not for a non-PIE executable that takes malloc's address: its symbol is undefined, with the
 * address of its PLT entry as its value (that entry leads to the first definition after it). */
static int exe_defines(void *def)
{
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	struct link_map *in = NULL;
	if (!dladdr1(def, &di, (void **)&in, RTLD_DL_LINKMAP) || !in || in != _r_debug.r_map)
		return 0; /* not in the executable (the first object of the link map) */
	return dladdr1(def, &di, (void **)&sym, RTLD_DL_SYMENT) && sym && sym->st_shndx != SHN_UNDEF;
}

/* Which allocator the program's calls reach: ours (then which one is underneath), or one the
 * executable (or a library preloaded ahead of weft) defines itself, which comes before weft's
 * and is not seen. The executable's own is never called from here (a program's allocator is
 * never entered from weft); a library's gets one probe allocation, which tells a wrapper that
 * forwards to weft's from one that allocates itself. */
static void find_allocator(void)
{
	ready();
	void *def = dlsym(RTLD_DEFAULT, "malloc");
	Dl_info di;
	if (def && def != (void *)weft_own_malloc && (exe_defines(def) || !reaches_ours(def))) {
		mem_flags |= MEMF_NOT_INTERPOSED;
		snprintf(allocator, sizeof(allocator), "%s",
			 dladdr(def, &di) && di.dli_fname && *di.dli_fname ? di.dli_fname : "the program");
		weft_log(WEFT_LOG_WARN, "memory: %s defines its own malloc, which comes before weft's: its "
			 "allocations are not recorded (anonymous mmap and weft_heap_* are)", allocator);
		return;
	}
	void *under = NULL;
	memcpy(&under, &next.malloc, sizeof(under));
	if (under && under != (void *)__libc_malloc && dladdr(under, &di) && di.dli_fname)
		snprintf(allocator, sizeof(allocator), "%s", di.dli_fname);
}

/* fork: the forking thread and the time, taken in prepare (on that thread, before the runtime's
 * handlers reset its state), written by the child (after the runtime's child handler opened the
 * child's metadata): the reader charges the child's allocations in the slices it inherited. */
static uint32_t fork_tid;
static uint64_t fork_ticks;

static void fork_prepare(void)
{
	fork_tid = (uint32_t)syscall(SYS_gettid);
	fork_ticks = weft__ticks();
}

static void fork_child(void)
{
	if (!recording())
		return;
	uint32_t head[2] = {fork_tid, 0};
	weft_meta_write(WEFT_M_FORK, head, sizeof(head), &fork_ticks, sizeof(fork_ticks));
}

/* ---- the source's face (collect/source.h) ---- */

static int memory_open(char *why, size_t n)
{
	(void)why;
	(void)n;
#ifdef WEFT_NO_MEMORY_INTERPOSER
	weft_log(WEFT_LOG_WARN, "memory: this sanitizer build of weft has no allocation interposer "
		 "(weft_heap_* still works)");
	return -ENOTSUP; /* (said above, in its own words) */
#endif
	mem_flags = MEMF_ON | (weft_cfg.memory_stacks ? MEMF_STACKS : 0);
	weft_mem_nested_start();
	find_allocator();
	threshold = weft_cfg.memory_threshold;
	sample_mean = weft_cfg.memory_sample;
	if (sample_mean) {
		void *s = (void *)syscall(SYS_mmap, NULL, sizeof(uint64_t) << SET_BITS, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (s == MAP_FAILED) {
			weft_log(WEFT_LOG_WARN, "memory: no room for the sample set; recording every block");
			sample_mean = 0;
		} else {
			sample_set = s;
		}
	}
	mmap_heap = weft_heap("mmap");
	if (weft_cfg.memory_stacks)
		weft_mem_find_text();
	weft_mem_with_stacks = weft_cfg.memory_stacks;
	write_memory_record();
	__atomic_store_n(&mem_mode, threshold || sample_mean || weft_mem_with_stacks ? MEM_FILTERED : MEM_ALL, __ATOMIC_RELEASE);
	return 0;
}

static void memory_stop(void)
{
	if (!__atomic_load_n(&mem_mode, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&mem_mode, MEM_OFF, __ATOMIC_RELEASE);
	write_memory_record();
}

static int memory_wanted(void)
{
	return weft_cfg.memory;
}

static void memory_describe(char *buf, size_t n)
{
	snprintf(buf, n, "allocations and frees (malloc family, anonymous mmap)%s%s%s",
		 weft_mem_with_stacks ? ", with call stacks" : "", threshold ? ", blocks over memory_threshold" : "",
		 sample_mean ? ", a sample by bytes (memory_sample)" : "");
}

const struct weft_source weft_source_memory = {
	.name = "memory",
	.option = "memory",
	.wanted = memory_wanted,
	.open = memory_open,
	.fork_prepare = fork_prepare,
	.fork_child = fork_child, /* after the runtime's child handler opened the child's metadata */
	.stop = memory_stop,
	.describe = memory_describe,
};
