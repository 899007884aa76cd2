/*
 * memnext.c - the allocator underneath the allocation interposer (memory.c; memnext.h).
 * Every call goes on to the definition that follows libweft-preload.so in the lookup order:
 * glibc's, or a jemalloc/tcmalloc the program links as a shared library (sending its calls to
 * glibc instead would change the program's allocator and free blocks into the wrong one). It
 * is looked up at the first call; dlsym may allocate, so while the lookup runs (on any thread)
 * blocks come from a static bootstrap area, never handed back. Where a definition is missing
 * the function is built on memalign of the same allocator.
 */
#include "memnext.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

struct weft_next_fns weft_next;
int weft_next_state;

char weft_boot_area[WEFT_BOOT_AREA] __attribute__((aligned(64)));
static size_t boot_used; /* atomic bump pointer */

/* A bootstrap block: 16 bytes holding its size, then the block (aligned to `align`). */
void *weft_boot_alloc(size_t n, size_t align)
{
	if (align < 16)
		align = 16;
	size_t cur = __atomic_load_n(&boot_used, __ATOMIC_RELAXED), start, end;
	do {
		start = (cur + 16 + align - 1) & ~(align - 1);
		end = start + n;
		if (end > sizeof(weft_boot_area) || end < start) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&boot_used, &cur, end, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	memcpy(weft_boot_area + start - 16, &n, sizeof(n));
	return weft_boot_area + start;
}

#define NEXT(name, fallback) \
	do { \
		void *f_ = dlsym(RTLD_NEXT, #name); \
		memcpy(&weft_next.name, &f_, sizeof(f_)); \
		if (!weft_next.name) \
			weft_next.name = fallback; \
	} while (0)

static void *memalign_via_malloc(size_t a, size_t n);
static void *valloc_via_memalign(size_t n) { return weft_next.memalign((size_t)sysconf(_SC_PAGESIZE), n); }
static void *pvalloc_via_memalign(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	return weft_next.memalign(page, n ? (n + page - 1) & ~(page - 1) : page);
}
static int posix_memalign_via_memalign(void **out, size_t a, size_t n)
{
	void *p = weft_next.memalign(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
static void *aligned_via_memalign(size_t a, size_t n) { return weft_next.memalign(a, n); }
static void *calloc_via_malloc(size_t k, size_t n)
{
	size_t b;
	if (__builtin_mul_overflow(k, n, &b)) {
		errno = ENOMEM;
		return NULL;
	}
	void *p = weft_next.malloc(b);
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
	memcpy(&m, &weft_next.malloc, sizeof(m));
	if (m == (void *)__libc_malloc)
		return;
#define SAME(name, fallback)                                  \
	do {                                                  \
		void *f_;                                     \
		memcpy(&f_, &weft_next.name, sizeof(f_));          \
		if (!same_object(f_, m))                      \
			weft_next.name = fallback;                 \
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

void weft_next_lookup(void)
{
	int expect = NEXT_NONE;
	if (!__atomic_compare_exchange_n(&weft_next_state, &expect, NEXT_LOOKING, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
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
	memcpy(&weft_next.usable_size, &u, sizeof(u));
	if (!weft_next.usable_size)
		weft_next.usable_size = usable_unknown;
	same_allocator();
	errno = saved;
	__atomic_store_n(&weft_next_state, NEXT_READY, __ATOMIC_RELEASE);
}

/* No memalign in the allocator underneath: its aligned_alloc, else its malloc when that
 * alignment is what malloc gives anyway; else the request fails (ENOMEM) rather than take a
 * block from another allocator. */
static void *memalign_via_malloc(size_t a, size_t n)
{
	if (weft_next.aligned_alloc && weft_next.aligned_alloc != aligned_via_memalign)
		return weft_next.aligned_alloc(a, (n + a - 1) & ~(a - 1));
	if (a <= 16)
		return weft_next.malloc(n);
	errno = ENOMEM;
	return NULL;
}
