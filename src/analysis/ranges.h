/*
 * ranges.h - a set of address ranges [start, end) that answers "which range contains this
 * address" while ranges come and go: the memory analysis keeps the live blocks in one to join
 * each sampled access to the block it landed in. Ranges may overlap and nest (a pool's items
 * inside a malloc'd chunk, blocks of two heaps at one address); a lookup gives the innermost,
 * i.e. the one with the highest start among those containing the address, and of those the one
 * with the highest `seq` (the caller's order: the latest allocated).
 *
 * Each range is keyed by (start, seq), which must be unique among the ranges in the set. Insert,
 * remove and lookup take O(log n) expected time (a treap ordered by the key, each node knowing the
 * highest end in its subtree). Not thread-safe: one set per thread.
 */
#ifndef WEFT_ANALYSIS_RANGES_H
#define WEFT_ANALYSIS_RANGES_H

#include <stddef.h>
#include <stdint.h>

struct weft_ranges_node;

struct weft_ranges {
	struct weft_ranges_node *n; /* n[0] unused: index 0 is "no node" */
	size_t len, cap;            /* nodes used (with n[0]) and allocated */
	uint32_t root, free_list;   /* free_list: removed nodes, chained by `right` */
	size_t count;               /* ranges in the set */
	uint64_t rng;               /* priorities: xorshift state */
};

/* An empty set (a zeroed struct is one too). */
#define WEFT_RANGES_INIT {0}

/* Adds [start, end) with the caller's value. 0; -EINVAL when end <= start (an empty range
 * contains nothing: the set is unchanged); -EEXIST when (start, seq) is in the set already;
 * -ENOMEM. */
int weft_ranges__insert(struct weft_ranges *r, uint64_t start, uint64_t end, uint64_t seq, uint64_t value);
/* Removes the range keyed (start, seq): 0 and its value in *value (may be NULL), or -ENOENT. */
int weft_ranges__remove(struct weft_ranges *r, uint64_t start, uint64_t seq, uint64_t *value);
/* The innermost range containing addr (highest start, then highest seq): 1 with its start, end and
 * value (each pointer may be NULL), or 0 when no range contains it. */
int weft_ranges__find(const struct weft_ranges *r, uint64_t addr, uint64_t *start, uint64_t *end,
		      uint64_t *value);
/* Frees the set's memory; it is empty (and usable) after. */
void weft_ranges__clear(struct weft_ranges *r);

#endif
