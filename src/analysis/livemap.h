/*
 * livemap.h - the blocks live at one moment of a replay, by address, so that a free
 * finds its block by exact address and a sampled access finds the block it landed in (a page
 * fault or a PEBS load hits anywhere inside a block). Blocks of one heap do not overlap; blocks
 * of different heaps may nest (a named heap carved out of a malloc'd arena): a containment
 * query gives the innermost. Exact lookups are a hash table's; containment is a range set's
 * (analysis/ranges.h), O(log n). Memory is proportional to the live blocks, not to the trace.
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

struct weft_ranges;
struct weft_livemap {
	struct weft_live_block *blocks; /* pool; free ones chained through `id` */
	size_t nblocks, cap;
	uint32_t free_head;
	uint32_t *slots;                /* (heap, addr) -> index in blocks */
	size_t nslots, gone;
	struct weft_ranges *ranges;     /* (addr, id) -> index in blocks, by extent */
	uint64_t live;                  /* blocks in the map */
};

void weft_livemap_init(struct weft_livemap *m);
void weft_livemap_free(struct weft_livemap *m);
/* The live block of `heap` that starts at addr, or NULL. */
struct weft_live_block *weft_livemap_find(struct weft_livemap *m, uint32_t heap, uint64_t addr);
/* A new block [addr, addr + size) of `heap`, numbered id (unique: the replay's allocation
 * order, which breaks ties between blocks at one address); no live block of that heap may start
 * there (find first). The caller fills in the rest. NULL when out of memory. The pointer is
 * valid until the next insert or remove. */
struct weft_live_block *weft_livemap_insert(struct weft_livemap *m, uint32_t heap, uint64_t addr, uint64_t size,
					    uint64_t id);
/* Removes the block of `heap` at addr (a no-op when there is none). */
void weft_livemap_remove(struct weft_livemap *m, uint32_t heap, uint64_t addr);
/* The innermost live block that contains addr (addr <= a < addr + size; a zero-size block
 * contains its own address), of any heap: the highest start wins, then the latest allocated. */
struct weft_live_block *weft_livemap_containing(struct weft_livemap *m, uint64_t addr);
/* Every live block, in no particular order. */
void weft_livemap_foreach(struct weft_livemap *m, void (*fn)(void *ud, struct weft_live_block *b), void *ud);

#endif
