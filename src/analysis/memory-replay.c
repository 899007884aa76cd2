/*
 * memory-replay.c - the replay of a process's memory records in time order (memory-stream.c
 * hands them over one by one): a table of live blocks (heap, address) -> block joins each free
 * to its allocation whatever thread made either, and every figure the outputs show is counted
 * on the way: live and peak per heap (counter points, at most ~4 per resolution-wide bucket),
 * per-stack totals, per-slice own counts, the size histogram, cumulative dumps at 16 moments.
 *
 * Each stack's share of a heap's peak is kept as the replay goes, without a second pass: every
 * stack's figures (as at the peak: the frees a missed free implies are not counted) are kept
 * now and at the latest peak; a new peak only advances an epoch, and a stack's figures are
 * saved when they first change after it. At the end, a stack's share of the peak is its saved
 * figures where it changed since the last peak, else its figures now.
 */
#include "analysis/memory-internal.h"
#include "format/format.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GROW MEM_GROW

/* ---- the live-block table: (heap, address) -> block ---- */

static uint64_t bkey(uint32_t heap, uint64_t addr)
{
	uint64_t k = addr ^ ((uint64_t)heap << 48) ^ ((uint64_t)heap >> 16);
	return k < 2 ? k + 0x8000000000000000ull : k;
}

static size_t bslot(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static struct mem_block *tfind(struct mem_table *t, uint64_t k)
{
	if (!t->cap)
		return NULL;
	for (size_t h = bslot(k, t->cap);; h = (h + 1) & (t->cap - 1)) {
		if (t->b[h].key == k)
			return &t->b[h];
		if (!t->b[h].key)
			return NULL;
	}
}

static struct mem_block *tinsert(struct mem_table *t, uint64_t k)
{
	if ((t->used + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap : 1024;
		while (cap < (t->live + 1) * 4)
			cap *= 2;
		struct mem_block *nb = calloc(cap, sizeof(*nb));
		if (!nb)
			weft_oom("the memory analysis");
		for (size_t i = 0; i < t->cap; i++) {
			if (t->b[i].key < 2)
				continue;
			size_t h = bslot(t->b[i].key, cap);
			while (nb[h].key)
				h = (h + 1) & (cap - 1);
			nb[h] = t->b[i];
		}
		free(t->b);
		t->b = nb;
		t->cap = cap;
		t->used = t->live;
	}
	size_t h = bslot(k, t->cap);
	while (t->b[h].key >= 2)
		h = (h + 1) & (t->cap - 1);
	if (!t->b[h].key)
		t->used++;
	t->live++;
	t->b[h].key = k;
	return &t->b[h];
}

static void tremove(struct mem_table *t, struct mem_block *b)
{
	b->key = 1;
	t->live--;
}

static struct weft_mem_heap *heap_for(struct mem_replay *rp, uint32_t id, struct mem_heap_peak **pk)
{
	struct weft_mem_proc *mp = rp->mp;
	for (size_t i = 0; i < mp->nheaps; i++)
		if (mp->heaps[i].id == id) {
			*pk = &rp->peaks[i];
			return &mp->heaps[i];
		}
	if (mp->nheaps >= WEFT_MEM_MAX_HEAPS)
		return NULL;
	mp->heaps = weft_mem__realloc(mp->heaps, (mp->nheaps + 1) * sizeof(*mp->heaps));
	rp->peaks = weft_mem__realloc(rp->peaks, (mp->nheaps + 1) * sizeof(*rp->peaks));
	struct mem_heap_peak *hp = *pk = &rp->peaks[mp->nheaps];
	struct weft_mem_heap *h = &mp->heaps[mp->nheaps++];
	memset(h, 0, sizeof(*h));
	h->id = id;
	/* the scan interned every stack: one total per stack */
	hp->epoch = 0;
	hp->cur = calloc(mp->nstacks + 1, sizeof(*hp->cur));
	hp->at = calloc(mp->nstacks + 1, sizeof(*hp->at));
	hp->seen = calloc(mp->nstacks + 1, sizeof(*hp->seen));
	if (!(h->totals = calloc(mp->nstacks + 1, sizeof(*h->totals))) || !hp->cur || !hp->at || !hp->seen)
		weft_oom("the memory analysis");
	const char *n = id ? weft_site_name(mp->p, id) : "malloc";
	h->name = n ? n : "heap";
	return h;
}

/* Counter points: every change where changes are further apart than the resolution; within
 * one resolution-wide bucket, the bucket's highest value and its last (so neither a peak nor
 * the final value is lost, and a long trace gets at most ~4 points per bucket). */
static void push_point(struct weft_mem_heap *h, uint64_t ts, uint64_t live, uint64_t peak)
{
	if (h->npoints && h->points[h->npoints - 1].ts == ts) {
		h->points[h->npoints - 1].live = live;
		h->points[h->npoints - 1].peak = peak;
		return;
	}
	GROW(h->points, h->npoints, h->pcap);
	h->points[h->npoints++] = (struct weft_mem_point){ts, live, peak};
}

static void flush_bucket(struct weft_mem_heap *h)
{
	if (!h->bucket_n)
		return;
	push_point(h, h->bucket_max_ts, h->bucket_max, h->bucket_max_peak);
	push_point(h, h->bucket_last_ts, h->bucket_last, h->bucket_last_peak); /* same ts: replaces */
	h->bucket_n = 0;
}

static void point(struct mem_replay *rp, struct weft_mem_heap *h, uint64_t ts)
{
	if (h->bucket_n && ts - h->bucket_start >= rp->resolution)
		flush_bucket(h);
	if (!h->bucket_n) {
		h->bucket_start = ts;
		h->bucket_max = 0;
	}
	h->bucket_n++;
	if (h->bucket_n == 1 || h->live >= h->bucket_max) {
		h->bucket_max = h->live;
		h->bucket_max_ts = ts;
		h->bucket_max_peak = h->peak;
	}
	h->bucket_last = h->live;
	h->bucket_last_ts = ts;
	h->bucket_last_peak = h->peak;
}

/* A cumulative dump of every heap (or only one): the totals so far, or the figures `at` the peak. */
void weft_mem__dump(struct weft_mem_proc *mp, uint64_t ts, int at_peak, struct weft_mem_heap *only,
		    const struct mem_peak_stack *at)
{
	for (size_t i = 0; i < mp->nheaps; i++) {
		struct weft_mem_heap *h = &mp->heaps[i];
		if (only && h != only)
			continue;
		h->dumps = weft_mem__realloc(h->dumps, (h->ndumps + 1) * sizeof(*h->dumps));
		struct weft_mem_dump *d = &h->dumps[h->ndumps++];
		d->ts = ts;
		d->at_peak = at_peak;
		d->alloc_bytes = weft_mem__realloc(NULL, mp->nstacks * sizeof(uint64_t) * 4);
		d->freed_bytes = d->alloc_bytes + mp->nstacks;
		d->alloc_count = d->freed_bytes + mp->nstacks;
		d->free_count = d->alloc_count + mp->nstacks;
		for (size_t s = 0; s < mp->nstacks && at; s++) {
			d->alloc_bytes[s] = at[s].bytes;
			d->freed_bytes[s] = at[s].freed;
			d->alloc_count[s] = at[s].allocs;
			d->free_count[s] = at[s].frees;
		}
		for (size_t s = 0; s < mp->nstacks && !at; s++) {
			d->alloc_bytes[s] = h->totals[s].bytes;
			d->freed_bytes[s] = h->totals[s].freed;
			d->alloc_count[s] = h->totals[s].allocs;
			d->free_count[s] = h->totals[s].frees;
		}
	}
}

static unsigned bucket(uint64_t size)
{
	unsigned b = size ? 64 - (unsigned)__builtin_clzll(size) : 0;
	return b > 63 ? 63 : b;
}

/* Scaled size and count of a recorded block (sampling: divided by its chance of a sample). */
static void scaled(const struct mem_replay *rp, uint64_t size, uint64_t *bytes, uint64_t *count)
{
	if (rp->sample <= 0) {
		*bytes = size;
		*count = 1;
		return;
	}
	double p = -expm1(-(double)size / rp->sample);
	double w = p > 0 ? 1.0 / p : rp->sample, b = (double)size * w;
	*bytes = b < 9e18 ? (uint64_t)llround(b) : size; /* (a corrupt size) */
	*count = w < 9e18 ? (uint64_t)llround(w) : 1;
	if (!*count)
		*count = 1;
}

static struct weft_mem_slice *slice_of(struct mem_replay *rp, uint32_t thread, uint32_t slice)
{
	if (slice == NO_SLICE)
		return NULL;
	return &rp->mp->threads[thread].slices[slice];
}

/* A block's life to the callback; free_thread SIZE_MAX: still live. */
static void block_done(struct mem_replay *rp, const struct mem_block *b, uint64_t free_ts, size_t free_thread,
		       uint64_t free_serial)
{
	if (!rp->on_block)
		return;
	struct weft_mem_block_info bi = {rp->proc, b->heap, b->fn, b->addr, b->raw_size, b->ts, free_ts,
					 b->thread, free_thread, b->serial, free_serial,
					 b->stack ? rp->mp->stacks[b->stack].site : 0, b->size};
	rp->on_block(rp->ud, &bi);
}

/* A block's bytes coming or going, to the step hook (none at address 0: that block is never
 * listed as a leak either). */
static void step(struct mem_replay *rp, const struct mem_block *b, uint64_t ts, int64_t delta)
{
	if (!rp->on_step || !b->size || !b->addr)
		return;
	struct weft_mem_step st = {rp->proc, b->heap, b->stack ? rp->mp->stacks[b->stack].site : 0, ts, delta};
	rp->on_step(rp->ud, &st);
}

/* Stack s's figures as at the peak are about to change: saved first if the peak moved since. */
static struct mem_peak_stack *peak_touch(struct mem_heap_peak *hp, uint32_t s)
{
	if (hp->seen[s] != hp->epoch) {
		hp->at[s] = hp->cur[s];
		hp->seen[s] = hp->epoch;
	}
	return &hp->cur[s];
}

/* Frees the block at (heap, addr); returns whether there was one. `implied`: the free a missed
 * free implies (a block allocated where one was live), which the peak's figures leave out. */
static int do_free(struct mem_replay *rp, struct weft_mem_heap *h, struct mem_heap_peak *hp, const struct mem_rec *r,
		   uint32_t thread, uint64_t addr, int implied)
{
	uint64_t k = bkey(h->id, addr);
	struct mem_block *b = tfind(&rp->blocks, k);
	if (!b) {
		if (h->id && !strcmp(h->name, "mmap"))
			h->foreign_frees++; /* munmap of a mapping not made by the program's mmap (a file, glibc's own) */
		else if (rp->filtered)
			h->unrecorded_frees++;
		else
			h->unknown_frees++;
		return 0;
	}
	h->live -= b->size;
	h->frees += b->count;
	h->freed_bytes += b->size;
	struct weft_mem_total *tt = &h->totals[b->stack];
	tt->frees += b->count;
	tt->freed += b->size;
	tt->live -= b->size;
	if (!implied) {
		struct mem_peak_stack *ps = peak_touch(hp, b->stack);
		ps->live = (int64_t)((uint64_t)ps->live - b->size); /* (wraps, never overflows: a damaged trace's sizes) */
		ps->frees += b->count;
		ps->freed += b->size;
	}
	struct weft_mem_slice *s = slice_of(rp, thread, implied ? NO_SLICE : r->slice);
	if (s) {
		s->free_count += b->count;
		s->freed_bytes += b->size;
	}
	if (rp->last_alloc[b->thread].key == k && rp->last_alloc[b->thread].order == b->order)
		tt->temporary += b->count;
	block_done(rp, b, r->ts, thread, s ? s->serial : 0);
	step(rp, b, r->ts, -(int64_t)b->size);
	if (rp->acc.n)
		weft_ranges__remove(&rp->ranges, b->addr, b->order, NULL); /* -ENOENT: an empty block */
	tremove(&rp->blocks, b);
	return 1;
}

static void do_alloc(struct mem_replay *rp, struct weft_mem_heap *h, struct mem_heap_peak *hp, const struct mem_rec *r,
		     uint32_t thread, uint64_t addr, uint64_t size, uint64_t order)
{
	uint64_t k = bkey(h->id, addr);
	if (tfind(&rp->blocks, k)) { /* the free of what was there never came (lost or not recorded) */
		h->missed_frees++;
		do_free(rp, h, hp, r, thread, addr, 1);
	}
	uint64_t bytes, count;
	if (h->id) { /* only the C heap is sampled: mappings and named heaps are whole */
		bytes = size;
		count = 1;
	} else {
		scaled(rp, size, &bytes, &count);
	}
	struct mem_block *b = tinsert(&rp->blocks, k);
	b->size = bytes;
	b->count = count;
	b->ts = r->ts;
	b->stack = r->stack;
	b->thread = thread;
	b->order = order;
	b->addr = addr;
	b->raw_size = size;
	b->heap = h->id;
	b->fn = r->fn;
	/* its address range, for the access joins (an empty block, or one past the end of the
	 * address space, contains no address: left out); none without accesses */
	if (rp->acc.n && size && addr + size > addr &&
	    weft_ranges__insert(&rp->ranges, addr, addr + size, order, r->stack) == -ENOMEM)
		weft_oom("the memory analysis");
	struct weft_mem_slice *s = slice_of(rp, thread, r->slice);
	b->serial = s ? s->serial : 0;
	step(rp, b, r->ts, (int64_t)bytes);
	h->live += bytes;
	h->allocs += count;
	h->alloc_bytes += bytes;
	struct weft_mem_total *tt = &h->totals[r->stack];
	tt->allocs += count;
	tt->bytes += bytes;
	tt->live += bytes;
	struct mem_peak_stack *ps = peak_touch(hp, r->stack);
	ps->live = (int64_t)((uint64_t)ps->live + bytes);
	ps->allocs += count;
	ps->bytes += bytes;
	if (s) {
		s->alloc_count += count;
		s->alloc_bytes += bytes;
	}
	rp->mp->hist[bucket(size)] += count;
	rp->last_alloc[thread].key = k;
	rp->last_alloc[thread].order = order;
	if (h->live > h->peak) {
		h->peak = h->live;
		h->peak_ts = r->ts;
		h->peak_event = order;
		hp->epoch++; /* every stack's figures now are those at the peak */
	}
}

void weft_mem__apply(struct mem_replay *rp, struct mem_rec *r, uint32_t thread, uint64_t order)
{
	struct weft_mem_proc *mp = rp->mp;
	struct mem_heap_peak *hp;
	struct weft_mem_heap *h = heap_for(rp, r->heap, &hp);
	if (!h) { /* more heaps than a report can show: counted, left out */
		mp->bad_records++;
		return;
	}
	switch (r->type) {
	case WEFT_EV_ALLOC:
		h->alloc_calls++;
		do_alloc(rp, h, hp, r, thread, r->addr, r->size, order);
		break;
	case WEFT_EV_FREE:
		h->free_calls += (uint64_t)do_free(rp, h, hp, r, thread, r->addr, 0); /* the others: counted apart */
		break;
	case WEFT_EV_REALLOC:
		h->realloc_calls++;
		if (r->addr)
			do_free(rp, h, hp, r, thread, r->addr, 0);
		if (r->addr2)
			do_alloc(rp, h, hp, r, thread, r->addr2, r->size, order);
		break;
	case WEFT_EV_HEAP_USAGE:
		GROW(h->usage, h->nusage, h->ucap);
		h->usage[h->nusage++] = (struct weft_mem_usage){r->ts, r->addr, r->addr2, r->size};
		return;
	default:
		return;
	}
	point(rp, h, r->ts);
}

static int cmp_dump(const void *a, const void *b)
{
	const struct weft_mem_dump *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts ? 1 : x->at_peak - y->at_peak;
}

void weft_mem__finish_heaps(struct mem_replay *rp)
{
	struct weft_mem_proc *mp = rp->mp;
	for (size_t i = 0; i < mp->nheaps; i++) {
		struct weft_mem_heap *h = &mp->heaps[i];
		struct mem_heap_peak *hp = &rp->peaks[i];
		flush_bucket(h);
		if (!h->peak)
			continue;
		/* each stack's figures at the peak: saved when they changed after it, else as now */
		for (size_t s = 0; s < mp->nstacks; s++)
			if (hp->seen[s] != hp->epoch)
				hp->at[s] = hp->cur[s];
		weft_mem__dump(mp, h->peak_ts, 1, h, hp->at);
		for (size_t s = 0; s < mp->nstacks; s++)
			h->totals[s].peak = hp->at[s].live > 0 ? (uint64_t)hp->at[s].live : 0;
	}
	for (size_t k = 0; k < mp->nheaps; k++) {
		struct weft_mem_heap *h = &mp->heaps[k];
		if (h->ndumps)
			qsort(h->dumps, h->ndumps, sizeof(*h->dumps), cmp_dump);
	}
}

static int cmp_order(const void *a, const void *b)
{
	const struct mem_block *x = *(const struct mem_block *const *)a, *y = *(const struct mem_block *const *)b;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The blocks still live, in the order they were allocated: the leaks, and their lives. */
void weft_mem__leaks(struct mem_replay *rp)
{
	struct weft_mem_proc *mp = rp->mp;
	const struct mem_table *t = &rp->blocks;
	struct mem_block **live = weft_mem__realloc(NULL, (t->live + 1) * sizeof(*live));
	size_t n = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->b[i].key >= 2 && t->b[i].addr) /* (a block at 0 is none) */
			live[n++] = &t->b[i];
	qsort(live, n, sizeof(*live), cmp_order);
	for (size_t i = 0; i < n; i++) {
		const struct mem_block *b = live[i];
		struct mem_heap_peak *hp;
		struct weft_mem_heap *h = heap_for(rp, b->heap, &hp);
		if (!h)
			continue;
		GROW(h->leaks, h->nleaks, h->lcap);
		h->leaks[h->nleaks++] = (struct weft_mem_leak){b->addr, b->size, b->ts, mp->p->threads[b->thread].tid,
							     b->stack};
		h->totals[b->stack].leaked_count += b->count;
		block_done(rp, b, 0, SIZE_MAX, 0);
	}
	free(live);
}

void weft_mem__replay_free(struct mem_replay *rp)
{
	for (size_t i = 0; i < rp->mp->nheaps && rp->peaks; i++) {
		free(rp->peaks[i].cur);
		free(rp->peaks[i].at);
		free(rp->peaks[i].seen);
	}
	free(rp->peaks);
	free(rp->blocks.b);
	rp->peaks = NULL;
	rp->blocks.b = NULL;
}
