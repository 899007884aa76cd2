/*
 * memnext.h - the allocator underneath the allocation interposer (memnext.c): the next
 * definition of each allocation function in the lookup order, and the bootstrap area that
 * serves calls while that lookup runs. What the interposers (memory.c) call on every
 * allocation is here, inline: whether the lookup is done, whether a block is a bootstrap one.
 */
#ifndef WEFT_PRELOAD_MEMNEXT_H
#define WEFT_PRELOAD_MEMNEXT_H

#include "lib/internal.h" /* WEFT_HIDDEN */
#include <stddef.h>
#include <string.h>

struct weft_next_fns {
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
/* written once by weft_next_lookup(), before weft_next_state becomes NEXT_READY */
WEFT_HIDDEN extern struct weft_next_fns weft_next;
enum { NEXT_NONE = 0, NEXT_LOOKING = 1, NEXT_READY = 2 };
WEFT_HIDDEN extern int weft_next_state;

#define WEFT_BOOT_AREA (64 << 10)
WEFT_HIDDEN extern char weft_boot_area[WEFT_BOOT_AREA];

/* Looks the next definitions up, once (on any thread; a call made meanwhile returns at once). */
WEFT_HIDDEN void weft_next_lookup(void);
/* A bootstrap block of n bytes aligned to align (never given back), or NULL with ENOMEM. */
WEFT_HIDDEN void *weft_boot_alloc(size_t n, size_t align);

/* What a bootstrap block was asked for (the 16 bytes before it hold it). */
static inline size_t weft_boot_size(const void *p)
{
	size_t n;
	memcpy(&n, (const char *)p - 16, sizeof(n));
	return n;
}

static inline int weft_is_boot(const void *p)
{
	return (const char *)p >= weft_boot_area && (const char *)p < weft_boot_area + sizeof(weft_boot_area);
}

/* Whether calls can go to the allocator underneath (else: the bootstrap area). */
static inline int weft_next_ready(void)
{
	if (__builtin_expect(__atomic_load_n(&weft_next_state, __ATOMIC_ACQUIRE) == NEXT_READY, 1))
		return 1;
	weft_next_lookup();
	return __atomic_load_n(&weft_next_state, __ATOMIC_ACQUIRE) == NEXT_READY;
}

#endif
