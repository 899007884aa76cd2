/*
 * livemap.c - see livemap.h. A treap per heap (a binary search tree on the address, heap-
 * ordered on a pseudo-random priority, so it stays balanced in expectation whatever the order
 * of the addresses), built with split and merge. Nodes live in one pool addressed by 32-bit
 * indices (0 is "none"); removed nodes go on a free list.
 */
#include "analysis/livemap.h"
#include <stdlib.h>
#include <string.h>

struct weft_livemap_node {
	struct weft_live_block b;
	uint32_t left, right, prio;
};

struct weft_livemap_heap {
	uint32_t heap, root;
	uint64_t count;
};

#define N(i) (m->nodes[i])

void weft_livemap_init(struct weft_livemap *m)
{
	memset(m, 0, sizeof(*m));
	m->seed = 0x9e3779b97f4a7c15ull;
}

void weft_livemap_free(struct weft_livemap *m)
{
	free(m->nodes);
	free(m->heaps);
	memset(m, 0, sizeof(*m));
}

static struct weft_livemap_heap *heap_of(struct weft_livemap *m, uint32_t heap, int add)
{
	for (size_t i = 0; i < m->nheaps; i++)
		if (m->heaps[i].heap == heap)
			return &m->heaps[i];
	if (!add)
		return NULL;
	struct weft_livemap_heap *h = realloc(m->heaps, (m->nheaps + 1) * sizeof(*h));
	if (!h)
		return NULL;
	m->heaps = h;
	h = &m->heaps[m->nheaps++];
	memset(h, 0, sizeof(*h));
	h->heap = heap;
	return h;
}

/* Splits t into keys < key (*l) and keys >= key (*r). */
static void split(struct weft_livemap *m, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
	if (!t) {
		*l = *r = 0;
		return;
	}
	if (N(t).b.addr < key) {
		split(m, N(t).right, key, &N(t).right, r);
		*l = t;
	} else {
		split(m, N(t).left, key, l, &N(t).left);
		*r = t;
	}
}

/* Every key of l below every key of r. */
static uint32_t merge(struct weft_livemap *m, uint32_t l, uint32_t r)
{
	if (!l || !r)
		return l ? l : r;
	if (N(l).prio > N(r).prio) {
		N(l).right = merge(m, N(l).right, r);
		return l;
	}
	N(r).left = merge(m, l, N(r).left);
	return r;
}

static uint32_t find_in(struct weft_livemap *m, uint32_t t, uint64_t addr)
{
	while (t && N(t).b.addr != addr)
		t = addr < N(t).b.addr ? N(t).left : N(t).right;
	return t;
}

struct weft_live_block *weft_livemap_find(struct weft_livemap *m, uint32_t heap, uint64_t addr)
{
	struct weft_livemap_heap *h = heap_of(m, heap, 0);
	uint32_t t = h ? find_in(m, h->root, addr) : 0;
	return t ? &N(t).b : NULL;
}

static uint32_t node_new(struct weft_livemap *m)
{
	if (m->free_head) {
		uint32_t i = m->free_head;
		m->free_head = N(i).left;
		return i;
	}
	if (m->used + 1 >= m->cap) {
		if (m->cap >= UINT32_MAX / 2)
			return 0;
		uint32_t cap = m->cap ? m->cap * 2 : 1024;
		struct weft_livemap_node *n = realloc(m->nodes, (size_t)cap * sizeof(*n));
		if (!n)
			return 0;
		m->nodes = n;
		m->cap = cap;
		if (!m->used)
			m->used = 1; /* index 0 is "none" */
	}
	return m->used++;
}

struct weft_live_block *weft_livemap_insert(struct weft_livemap *m, uint32_t heap, uint64_t addr)
{
	struct weft_livemap_heap *h = heap_of(m, heap, 1);
	if (!h)
		return NULL;
	size_t hi = (size_t)(h - m->heaps);
	uint32_t i = node_new(m); /* may move the pool, not the heaps */
	if (!i)
		return NULL;
	h = &m->heaps[hi];
	memset(&N(i), 0, sizeof(N(i)));
	N(i).b.addr = addr;
	N(i).b.heap = heap;
	m->seed ^= m->seed << 13; /* xorshift64 */
	m->seed ^= m->seed >> 7;
	m->seed ^= m->seed << 17;
	N(i).prio = (uint32_t)(m->seed >> 32);
	uint32_t l, r;
	split(m, h->root, addr, &l, &r);
	h->root = merge(m, merge(m, l, i), r);
	h->count++;
	m->live++;
	return &N(i).b;
}

/* Removes the node with key addr from t (found by descent); returns the new root. */
static uint32_t remove_in(struct weft_livemap *m, uint32_t t, uint64_t addr, uint32_t *gone)
{
	if (!t)
		return 0;
	if (N(t).b.addr == addr) {
		*gone = t;
		return merge(m, N(t).left, N(t).right);
	}
	if (addr < N(t).b.addr)
		N(t).left = remove_in(m, N(t).left, addr, gone);
	else
		N(t).right = remove_in(m, N(t).right, addr, gone);
	return t;
}

void weft_livemap_remove(struct weft_livemap *m, uint32_t heap, uint64_t addr)
{
	struct weft_livemap_heap *h = heap_of(m, heap, 0);
	if (!h)
		return;
	uint32_t gone = 0;
	h->root = remove_in(m, h->root, addr, &gone);
	if (!gone)
		return;
	N(gone).left = m->free_head;
	m->free_head = gone;
	h->count--;
	m->live--;
}

struct weft_live_block *weft_livemap_containing(struct weft_livemap *m, uint64_t addr)
{
	struct weft_live_block *best = NULL;
	for (size_t i = 0; i < m->nheaps; i++) {
		uint32_t t = m->heaps[i].root, pred = 0;
		while (t) { /* the last block starting at or below addr */
			if (N(t).b.addr <= addr) {
				pred = t;
				t = N(t).right;
			} else {
				t = N(t).left;
			}
		}
		if (!pred)
			continue;
		struct weft_live_block *b = &N(pred).b;
		if (addr - b->addr >= b->size && !(b->size == 0 && addr == b->addr))
			continue;
		if (!best || b->addr > best->addr || (b->addr == best->addr && b->ts > best->ts))
			best = b;
	}
	return best;
}

static void walk(struct weft_livemap *m, uint32_t t, void (*fn)(void *, struct weft_live_block *), void *ud)
{
	while (t) {
		walk(m, N(t).left, fn, ud);
		fn(ud, &N(t).b);
		t = N(t).right;
	}
}

void weft_livemap_foreach(struct weft_livemap *m, void (*fn)(void *ud, struct weft_live_block *b), void *ud)
{
	for (size_t i = 0; i < m->nheaps; i++)
		walk(m, m->heaps[i].root, fn, ud);
}
