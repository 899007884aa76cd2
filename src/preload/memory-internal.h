/*
 * memory-internal.h - what the rooms of the allocation recorder (memory=1) share:
 *   memory.c     the interposed functions (malloc & co., anonymous mmap), each call on to the
 *                allocator underneath and, when recording, one record; the hot path;
 *   memnext.c    the allocator underneath and the bootstrap area (memnext.h);
 *   memfilter.c  memory_threshold and memory_sample: which blocks are recorded;
 *   memsource.c  the source's face: open (which allocator the program's calls reach), stop,
 *                fork, the MEMORY record;
 *   memnested.c, memstacks.c  a signal handler's records inside another, and call stacks.
 */
#ifndef WEFT_PRELOAD_MEMORY_INTERNAL_H
#define WEFT_PRELOAD_MEMORY_INTERNAL_H

#include "lib/internal.h"
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

/* What is recorded: 0 nothing, MEM_ALL every block, MEM_FILTERED through threshold/sample.
 * Written at start (memsource.c's open) and at stop (before the flush); read relaxed by every
 * call: a call that still sees the old value records one event more or less, at the edge. */
enum { MEM_OFF = 0, MEM_ALL = 1, MEM_FILTERED = 2, MEM_PROBE = 3 /* find_allocator: nothing recorded */ };
WEFT_HIDDEN extern int weft_mem_mode;
WEFT_HIDDEN extern struct weft_site *weft_mem_mmap_heap; /* the "mmap" heap; set at open, before the mode */

/* memsource.c's probe of the program's malloc: set on its thread while it calls that malloc
 * (weft_mem_probing); weft_mem_probe_seen when the call came here (memory.c). */
WEFT_HIDDEN extern __thread int weft_mem_probing WEFT_TLS;
WEFT_HIDDEN extern int weft_mem_probe_seen;
/* Our own malloc, whatever the lookup order makes of the name (memory.c). */
WEFT_HIDDEN extern __typeof__(malloc) weft_own_malloc;

/* ---- memfilter.c: memory_threshold and memory_sample ---- */

/* Set by weft_mem_filter_open before the mode, read-only after. */
WEFT_HIDDEN extern uint64_t weft_mem_threshold, weft_mem_sample_mean;
WEFT_HIDDEN extern _Atomic uint64_t weft_mem_sample_set_full; /* samples left out: the set had no room */
/* threshold, sample mean: the sample set mapped when sampling (else sampling is turned off,
 * said in the log) */
WEFT_HIDDEN void weft_mem_filter_open(uint64_t threshold, uint64_t sample_mean);
/* With a threshold or sampling: is this new block recorded? Is the free of this (still
 * allocated) block recorded? */
WEFT_HIDDEN int weft_mem_keep_alloc(const void *p, size_t n);
WEFT_HIDDEN int weft_mem_keep_free(void *p);
/* Remembers a sampled address (a failed realloc keeps its old block): 0, or -1 when full. */
WEFT_HIDDEN int weft_mem_set_add(uint64_t a);

#endif
