/*
 * memfilter.c - which blocks the allocation recorder records when not every one is
 * (memory-internal.h). memory_threshold=N records only blocks of at least N bytes (a free
 * when the block's usable size reaches N, so some frees of unrecorded blocks are recorded:
 * expected, not "unknown"). memory_sample=N records a Poisson sample by bytes (mean N bytes
 * between samples, the heapprofd/jemalloc method; the converters scale every total back) and
 * remembers the sampled addresses in a lock-free set, so only their frees are recorded. Both
 * run out of line, from the interposers' slow path (MEM_FILTERED).
 */
#include "memory-internal.h"
#include "memnext.h"
#include <math.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

uint64_t weft_mem_threshold;
uint64_t weft_mem_sample_mean;
_Atomic uint64_t weft_mem_sample_set_full;

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
	double gap = -log(u) * (double)weft_mem_sample_mean;
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

int weft_mem_set_add(uint64_t a)
{
	size_t mask = (1u << SET_BITS) - 1;
	for (size_t i = 0, k = set_slot(a); i < SET_PROBES; i++, k = (k + 1) & mask) {
		uint64_t cur = __atomic_load_n(&sample_set[k], __ATOMIC_RELAXED);
		if ((cur == 0 || cur == SET_TOMB) &&
		    __atomic_compare_exchange_n(&sample_set[k], &cur, a, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return 0;
	}
	atomic_fetch_add_explicit(&weft_mem_sample_set_full, 1, memory_order_relaxed);
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
int weft_mem_keep_alloc(const void *p, size_t n)
{
	if (n < weft_mem_threshold)
		return 0;
	if (!weft_mem_sample_mean)
		return 1;
	return sampled(n) && weft_mem_set_add((uint64_t)(uintptr_t)p) == 0;
}

/* With a threshold or sampling: is the free of this (still allocated) block recorded? */
int weft_mem_keep_free(void *p)
{
	if (weft_mem_sample_mean)
		return set_take((uint64_t)(uintptr_t)p);
	if (!weft_mem_threshold) /* stacks alone */
		return 1;
	return !weft_is_boot(p) && weft_next.usable_size(p) >= weft_mem_threshold;
}

void weft_mem_filter_open(uint64_t threshold, uint64_t sample_mean)
{
	weft_mem_threshold = threshold;
	weft_mem_sample_mean = sample_mean;
	if (!weft_mem_sample_mean)
		return;
	void *s = (void *)syscall(SYS_mmap, NULL, sizeof(uint64_t) << SET_BITS, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s == MAP_FAILED) {
		weft_log(WEFT_LOG_WARN, "memory: no room for the sample set; recording every block");
		weft_mem_sample_mean = 0;
	} else {
		sample_set = s;
	}
}
