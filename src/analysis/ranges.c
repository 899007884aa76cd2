/*
 * ranges.c - see ranges.h. A treap: a binary search tree on the key (start, seq) whose nodes
 * also form a max-heap on a random priority, which keeps its depth O(log n) expected whatever
 * the order of inserts. Insert and remove are a split of the tree around the key and merges;
 * every node keeps the highest end in its subtree (maxend), refreshed on the way back up.
 *
 * The lookup walks down from the root: a subtree whose maxend is <= addr holds no range
 * containing addr and is skipped whole. Where a node starts at or below addr its right subtree
 * (higher starts) is tried first, then the node itself, then its left subtree. Subtrees whose
 * starts are all <= addr are entered only when their maxend says one of their ranges contains
 * addr, so they are never left empty-handed: the walk is the search path of addr plus one
 * descent, O(depth).
 *
 * Nodes live in one array, linked by index (index 0 is "none"), so growing it moves no links;
 * removed nodes are reused from a free list.
 */
#include "analysis/ranges.h"
#include <errno.h>
#include <stdlib.h>

struct weft_ranges_node {
	uint64_t start, end, seq, value;
	uint64_t maxend;            /* the highest end in this node's subtree */
	uint32_t left, right, prio;
	uint32_t pad;
};

/* (start, seq) of node i before (start, seq) (inclusive: or equal to it) */
static int before(const struct weft_ranges *r, uint32_t i, uint64_t start, uint64_t seq, int inclusive)
{
	const struct weft_ranges_node *x = &r->n[i];
	if (x->start != start)
		return x->start < start;
	return inclusive ? x->seq <= seq : x->seq < seq;
}

static void pull(struct weft_ranges *r, uint32_t i)
{
	struct weft_ranges_node *x = &r->n[i];
	uint64_t m = x->end;
	if (x->left && r->n[x->left].maxend > m)
		m = r->n[x->left].maxend;
	if (x->right && r->n[x->right].maxend > m)
		m = r->n[x->right].maxend;
	x->maxend = m;
}

/* Splits tree t into the keys before (start, seq) (inclusive: up to and with it) -> *lo, the
 * rest -> *hi. Allocates nothing, so the array stays where it is. */
static void split(struct weft_ranges *r, uint32_t t, uint64_t start, uint64_t seq, int inclusive, uint32_t *lo,
		  uint32_t *hi)
{
	if (!t) {
		*lo = *hi = 0;
		return;
	}
	if (before(r, t, start, seq, inclusive)) {
		split(r, r->n[t].right, start, seq, inclusive, &r->n[t].right, hi);
		*lo = t;
	} else {
		split(r, r->n[t].left, start, seq, inclusive, lo, &r->n[t].left);
		*hi = t;
	}
	pull(r, t);
}

/* Joins two trees, every key of a before every key of b. */
static uint32_t merge(struct weft_ranges *r, uint32_t a, uint32_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	if (r->n[a].prio > r->n[b].prio) {
		uint32_t m = merge(r, r->n[a].right, b);
		r->n[a].right = m;
		pull(r, a);
		return a;
	}
	uint32_t m = merge(r, a, r->n[b].left);
	r->n[b].left = m;
	pull(r, b);
	return b;
}

static uint32_t next_prio(struct weft_ranges *r)
{
	uint64_t x = r->rng ? r->rng : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	r->rng = x;
	return (uint32_t)(x >> 32);
}

static uint32_t new_node(struct weft_ranges *r)
{
	if (r->free_list) {
		uint32_t i = r->free_list;
		r->free_list = r->n[i].right;
		return i;
	}
	if (!r->len)
		r->len = 1; /* n[0]: "none" */
	if (r->len >= UINT32_MAX)
		return 0;
	if (r->len >= r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 256;
		struct weft_ranges_node *n = realloc(r->n, cap * sizeof(*n));
		if (!n)
			return 0;
		r->n = n;
		r->cap = cap;
	}
	return (uint32_t)r->len++;
}

int weft_ranges__insert(struct weft_ranges *r, uint64_t start, uint64_t end, uint64_t seq, uint64_t value)
{
	if (end <= start)
		return -EINVAL;
	uint32_t lo, mid, hi;
	split(r, r->root, start, seq, 0, &lo, &hi);
	split(r, hi, start, seq, 1, &mid, &hi);
	if (mid) {
		r->root = merge(r, merge(r, lo, mid), hi);
		return -EEXIST;
	}
	uint32_t i = new_node(r);
	if (!i) {
		r->root = merge(r, lo, hi);
		return -ENOMEM;
	}
	r->n[i] = (struct weft_ranges_node){.start = start, .end = end, .seq = seq, .value = value, .maxend = end,
					    .prio = next_prio(r)};
	r->root = merge(r, merge(r, lo, i), hi);
	r->count++;
	return 0;
}

int weft_ranges__remove(struct weft_ranges *r, uint64_t start, uint64_t seq, uint64_t *value)
{
	uint32_t lo, mid, hi;
	split(r, r->root, start, seq, 0, &lo, &hi);
	split(r, hi, start, seq, 1, &mid, &hi);
	if (!mid) {
		r->root = merge(r, lo, hi);
		return -ENOENT;
	}
	if (value)
		*value = r->n[mid].value;
	r->n[mid].right = r->free_list; /* mid is one node: keys are unique */
	r->free_list = mid;
	r->root = merge(r, lo, hi);
	r->count--;
	return 0;
}

static uint32_t find(const struct weft_ranges *r, uint32_t t, uint64_t addr)
{
	while (t && r->n[t].maxend > addr) {
		const struct weft_ranges_node *x = &r->n[t];
		if (x->start > addr) { /* it and its right subtree start past addr */
			t = x->left;
			continue;
		}
		uint32_t f = find(r, x->right, addr);
		if (f)
			return f;
		if (x->end > addr)
			return t;
		t = x->left;
	}
	return 0;
}

int weft_ranges__find(const struct weft_ranges *r, uint64_t addr, uint64_t *start, uint64_t *end,
		      uint64_t *value)
{
	uint32_t i = find(r, r->root, addr);
	if (!i)
		return 0;
	if (start)
		*start = r->n[i].start;
	if (end)
		*end = r->n[i].end;
	if (value)
		*value = r->n[i].value;
	return 1;
}

void weft_ranges__clear(struct weft_ranges *r)
{
	free(r->n);
	*r = (struct weft_ranges){0};
}
