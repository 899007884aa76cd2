/*
 * memstacks.h - call stacks for the allocation recorder (memstacks.c), used by memory.c.
 */
#ifndef WEFT_PRELOAD_MEMSTACKS_H
#define WEFT_PRELOAD_MEMSTACKS_H

#include <stddef.h>
#include <stdint.h>

/* memory_stacks=1: set by memory.c at start, before any record */
extern int weft_mem_with_stacks;
/* At start, with stacks on: the loaded objects' text segments (a return address must point
 * into one, just after a call, for a stack scan to take it). */
void weft_mem_find_text(void);
/* An allocation (old NULL) or reallocation record of time t, followed by its STACK record,
 * walked from frame (the interposed function's); queued whole inside another record. */
void weft_mem_put_with_stack(uint64_t t, unsigned fn, const void *old, const void *p, size_t n, void *frame);

#endif
