/*
 * livemap.h - the blocks live at one moment of a replay, ordered by address, so that a free
 * finds its block by exact address and a sampled access finds the block it landed in (a page
 * fault or a PEBS load hits anywhere inside a block). Blocks of one heap do not overlap; blocks
 * of different heaps may nest (a named heap carved out of a malloc'd arena), so each heap has
 * its own ordered set, and a containment query asks each and keeps the innermost. Every
 * operation is O(log n) in the live blocks of the heap (a treap over a node pool); memory is
 * proportional to the live blocks, not to the trace.
 */
#ifndef WEFT_ANALYSIS_LIVEMAP_H
#define WEFT_ANALYSIS_LIVEMAP_H

#include <stddef.h>
#include <stdint.h>

/* A live block: its extent, and what a replay wants to know about it when it ends or is hit. */
struct weft_live_block {
	uint64_t addr, size;
	uint64_t id;      /* the replay's number for the block */
	uint64_t ts;      /* allocated at (ns) */
	uint64_t serial;  /* the slice that allocated it (thread-local serial, 0: none) */
	int64_t thread;   /* the thread that allocated it (the replay's numbering) */
	uint32_t heap;
	uint32_t fn;      /* the allocating function (enum weft_mem_fn) */
	uint32_t site;    /* the allocating slice's site id (0: none) */
};

struct weft_livemap_node;
struct weft_livemap_heap;
struct weft_livemap {
	struct weft_livemap_node *nodes; /* pool; index 0 is the empty tree */
	uint32_t cap, used, free_head;
	struct weft_livemap_heap *heaps;
	size_t nheaps;
	uint64_t live;                   /* blocks in the map */
	uint64_t seed;
};

void weft_livemap_init(struct weft_livemap *m);
void weft_livemap_free(struct weft_livemap *m);
/* The live block of `heap` that starts at addr, or NULL. */
struct weft_live_block *weft_livemap_find(struct weft_livemap *m, uint32_t heap, uint64_t addr);
/* A new block of `heap` at addr (no live block of that heap may start there: find first);
 * the caller fills in the rest. NULL when out of memory. The pointer is valid until the next
 * insert or remove. */
struct weft_live_block *weft_livemap_insert(struct weft_livemap *m, uint32_t heap, uint64_t addr);
/* Removes the block of `heap` at addr (a no-op when there is none). */
void weft_livemap_remove(struct weft_livemap *m, uint32_t heap, uint64_t addr);
/* The innermost live block that contains addr (addr <= a < addr + size; a zero-size block
 * contains its own address), of any heap: the highest start wins, then the latest allocated. */
struct weft_live_block *weft_livemap_containing(struct weft_livemap *m, uint64_t addr);
/* Every live block, heap by heap, in address order. */
void weft_livemap_foreach(struct weft_livemap *m, void (*fn)(void *ud, struct weft_live_block *b), void *ud);

#endif
