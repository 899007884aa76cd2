/*
 * livemap.c - see livemap.h. The blocks live in a pool (indices, a free list); an open-
 * addressing table maps (heap, address) to a block for exact lookups, and a range set
 * (analysis/ranges.h: a treap that knows each subtree's highest end) answers containment,
 * keyed by (address, block id) so blocks of different heaps at one address stay apart.
 */
#include "analysis/livemap.h"
#include "analysis/ranges.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define EMPTY UINT32_MAX
#define GONE (UINT32_MAX - 1)

static uint64_t mix(uint32_t heap, uint64_t addr)
{
	uint64_t k = (addr ^ ((uint64_t)heap << 47) ^ heap) * 0x9e3779b97f4a7c15ull;
	return k ^ (k >> 29);
}

void weft_livemap_init(struct weft_livemap *m)
{
	memset(m, 0, sizeof(*m));
	m->free_head = EMPTY;
}

void weft_livemap_free(struct weft_livemap *m)
{
	if (m->ranges)
		weft_ranges__clear(m->ranges);
	free(m->ranges);
	free(m->blocks);
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* The slot of (heap, addr), or where it would go (the first removed or empty slot). */
static size_t slot_of(const struct weft_livemap *m, uint32_t heap, uint64_t addr, int *found)
{
	size_t mask = m->nslots - 1, h = (size_t)mix(heap, addr) & mask, first_gone = SIZE_MAX;
	for (;; h = (h + 1) & mask) {
		uint32_t i = m->slots[h];
		if (i == EMPTY) {
			*found = 0;
			return first_gone != SIZE_MAX ? first_gone : h;
		}
		if (i == GONE) {
			if (first_gone == SIZE_MAX)
				first_gone = h;
			continue;
		}
		if (m->blocks[i].addr == addr && m->blocks[i].heap == heap) {
			*found = 1;
			return h;
		}
	}
}

struct weft_live_block *weft_livemap_find(struct weft_livemap *m, uint32_t heap, uint64_t addr)
{
	if (!m->live)
		return NULL;
	int found;
	size_t h = slot_of(m, heap, addr, &found);
	return found ? &m->blocks[m->slots[h]] : NULL;
}

static int rehash(struct weft_livemap *m, size_t n)
{
	uint32_t *s = malloc(n * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		s[i] = EMPTY;
	for (size_t i = 0; i < m->nslots; i++) {
		uint32_t b = m->slots[i];
		if (b == EMPTY || b == GONE)
			continue;
		size_t h = (size_t)mix(m->blocks[b].heap, m->blocks[b].addr) & (n - 1);
		while (s[h] != EMPTY)
			h = (h + 1) & (n - 1);
		s[h] = b;
	}
	free(m->slots);
	m->slots = s;
	m->nslots = n;
	m->gone = 0;
	return 0;
}

/* A block from the pool (its index), or EMPTY when out of memory. */
static uint32_t block_new(struct weft_livemap *m)
{
	if (m->free_head != EMPTY) {
		uint32_t i = m->free_head;
		m->free_head = (uint32_t)m->blocks[i].id; /* the free list runs through `id` */
		return i;
	}
	if (m->nblocks == m->cap) {
		if (m->cap >= GONE / 2)
			return EMPTY;
		size_t cap = m->cap ? m->cap * 2 : 1024;
		struct weft_live_block *b = realloc(m->blocks, cap * sizeof(*b));
		if (!b)
			return EMPTY;
		m->blocks = b;
		m->cap = cap;
	}
	return (uint32_t)m->nblocks++;
}

struct weft_live_block *weft_livemap_insert(struct weft_livemap *m, uint32_t heap, uint64_t addr, uint64_t size,
					    uint64_t id)
{
	if (!m->ranges && !(m->ranges = calloc(1, sizeof(*m->ranges))))
		return NULL;
	if ((m->live + m->gone + 1) * 2 > m->nslots && rehash(m, m->nslots ? m->nslots * 2 : 1024))
		return NULL;
	int found;
	size_t h = slot_of(m, heap, addr, &found);
	if (found)
		return NULL; /* the caller finds first */
	uint32_t i = block_new(m);
	if (i == EMPTY)
		return NULL;
	/* a zero-size block still holds its own address; a block that would wrap ends at the top */
	uint64_t end = addr + (size ? size : 1);
	if (end < addr)
		end = UINT64_MAX;
	if (weft_ranges__insert(m->ranges, addr, end, id, i) == -ENOMEM) {
		m->blocks[i].id = m->free_head;
		m->free_head = i;
		return NULL;
	}
	if (m->slots[h] == GONE)
		m->gone--;
	m->slots[h] = i;
	struct weft_live_block *b = &m->blocks[i];
	memset(b, 0, sizeof(*b));
	b->heap = heap;
	b->addr = addr;
	b->size = size;
	b->id = id;
	m->live++;
	return b;
}

void weft_livemap_remove(struct weft_livemap *m, uint32_t heap, uint64_t addr)
{
	if (!m->live)
		return;
	int found;
	size_t h = slot_of(m, heap, addr, &found);
	if (!found)
		return;
	uint32_t i = m->slots[h];
	weft_ranges__remove(m->ranges, addr, m->blocks[i].id, NULL);
	m->slots[h] = GONE;
	m->gone++;
	m->blocks[i].id = m->free_head;
	m->free_head = i;
	m->live--;
}

struct weft_live_block *weft_livemap_containing(struct weft_livemap *m, uint64_t addr)
{
	uint64_t i;
	if (!m->live || !weft_ranges__find(m->ranges, addr, NULL, NULL, &i))
		return NULL;
	return &m->blocks[i];
}

void weft_livemap_foreach(struct weft_livemap *m, void (*fn)(void *ud, struct weft_live_block *b), void *ud)
{
	for (size_t i = 0; i < m->nslots; i++)
		if (m->slots[i] != EMPTY && m->slots[i] != GONE)
			fn(ud, &m->blocks[m->slots[i]]);
}
