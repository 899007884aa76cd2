/*
 * minheap.h - the sift-down step of a binary min-heap of stream indices, for the k-way merges by
 * time of the reading side: Chrome JSON's thread streams and spill runs (export/json.c,
 * json-runs.c), the SQLite walk (export/sqlite-walk.c) and the memory replay
 * (analysis/memory-stream.c). before(ctx, a, b) says whether stream a's head goes out before
 * stream b's; callers break ties by index, so that a merge's order is the same however it runs.
 * Inlined with the caller's comparator: the merges' inner loops.
 */
#ifndef WEFT_FORMAT_MINHEAP_H
#define WEFT_FORMAT_MINHEAP_H

#include <stddef.h>

typedef int (*weft_heap_before_fn)(const void *ctx, size_t a, size_t b);

/* Moves heap[at] down to its place among heap[0..n). */
static inline __attribute__((always_inline)) void weft_heap_sift_down(size_t *heap, size_t n, size_t at,
								    weft_heap_before_fn before, const void *ctx)
{
	for (;;) {
		size_t l = 2 * at + 1, r = l + 1, m = at;
		if (l < n && before(ctx, heap[l], heap[m]))
			m = l;
		if (r < n && before(ctx, heap[r], heap[m]))
			m = r;
		if (m == at)
			return;
		size_t t = heap[m];
		heap[m] = heap[at];
		heap[at] = t;
		at = m;
	}
}

#endif
