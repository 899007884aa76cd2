/*
 * memory.c - see memory.h. Two steps per process that has memory records:
 *   1. collect: each thread is walked (model.c) with its slice stacks mirrored here; every
 *      memory record is copied out with the slice stack (interned: (parent, site) -> id) and
 *      the slice that was innermost on the thread at that moment;
 *   2. replay: the threads' records are merged by time (a binary heap over threads) and
 *      replayed against a table of live blocks (heap, address) -> block, which joins each
 *      free to its allocation whatever thread made either. Everything the outputs show is
 *      counted on the way. A second, shorter replay up to each heap's peak gives each
 *      stack's share of the peak and the dump at the peak.
 * Sampled accesses (mem_access) are merged into the replay by time: the live blocks are also
 * kept by address range (analysis/ranges.h, only when there are accesses), and each access
 * before a record is joined to the innermost block containing it (join_accesses).
 * Memory is proportional to the memory records of one process (48 bytes each) plus the live
 * blocks; traces too big for that are issue-10 territory (bounded-memory export).
 */
#include "analysis/memory.h"
#include "analysis/ranges.h"
#include "export/model.h"
#include "format/format.h"
#include "format/symbols.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NO_SLICE UINT32_MAX

uint64_t weft_mem_large_alloc = 1u << 20;

struct rec {
	uint64_t ts, addr, addr2, size;
	uint64_t rsize;   /* replay: the (scaled) bytes this record allocated or freed */
	uint32_t stack;   /* stack of the allocation (a free: of the block it freed, after replay) */
	uint32_t slice;   /* index in the thread's slices, or NO_SLICE */
	uint32_t heap;
	uint16_t type;    /* WEFT_EV_ALLOC... */
	uint8_t fn, freed_known; /* replay: a FREE/REALLOC's old block was found */
	uint64_t rcount;  /* replay: (scaled) blocks */
	uint32_t fstack;  /* replay: a REALLOC's freed block's stack */
	uint32_t pad;
	uint64_t fsize, fcount; /* replay: a REALLOC's freed block */
	uint64_t stack_hash;    /* memory_stacks: its call stack */
};

/* memory_stacks: the call stacks defined in the process's streams, by hash. */
struct frames { uint64_t hash; uint32_t n, stack; uint64_t *pcs; };
struct frame_map { struct frames *e; size_t cap, n; };

static struct frames *frames_slot(struct frame_map *m, uint64_t hash, int add)
{
	if (add && (m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct frames *ne = calloc(cap, sizeof(*ne));
		if (!ne)
			weft_oom("the memory analysis");
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->e[i].hash)
				continue;
			size_t h = (size_t)(m->e[i].hash >> 7) & (cap - 1);
			while (ne[h].hash)
				h = (h + 1) & (cap - 1);
			ne[h] = m->e[i];
		}
		free(m->e);
		m->e = ne;
		m->cap = cap;
	}
	if (!m->cap)
		return NULL;
	size_t h = (size_t)(hash >> 7) & (m->cap - 1);
	while (m->e[h].hash && m->e[h].hash != hash)
		h = (h + 1) & (m->cap - 1);
	if (!m->e[h].hash && !add)
		return NULL;
	if (!m->e[h].hash) {
		m->e[h].hash = hash;
		m->n++;
	}
	return &m->e[h];
}

/* The process's sampled accesses (from whichever stream holds them), joined in the replay. */
struct access { uint64_t ts, addr; };
struct access_list { struct access *a; size_t n, cap; };

struct tstack_ent { uint64_t serial; uint32_t stack, slice; };
struct tstack { unsigned track; struct tstack_ent *e; size_t n, cap; };

struct collect {
	struct weft_mem_proc *mp;
	struct frame_map *frames;
	struct access_list *acc;
	struct weft_mem_thread *mt;
	struct tstack *stacks;
	size_t nstacks;
	struct rec *recs;
	size_t nrecs, rcap;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		weft_oom("the memory analysis");
	return q;
}

#define GROW(arr, n, cap)                                                       \
	do {                                                                    \
		if ((n) == (cap)) {                                             \
			(cap) = (cap) ? (cap) * 2 : 64;                         \
			(arr) = xrealloc((arr), (cap) * sizeof(*(arr)));        \
		}                                                               \
	} while (0)

/* ---- stacks ---- */

static uint32_t intern(struct weft_mem_proc *mp, uint32_t parent, uint32_t site)
{
	if (mp->nstacks * 2 >= mp->icap) { /* rehash */
		size_t cap = mp->icap ? mp->icap * 2 : 1024;
		uint64_t *k = calloc(cap, sizeof(*k));
		uint32_t *v = calloc(cap, sizeof(*v));
		if (!k || !v)
			weft_oom("the memory analysis");
		for (size_t i = 0; i < mp->icap; i++) {
			if (!mp->ikeys[i])
				continue;
			size_t h = (size_t)((mp->ikeys[i] * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
			while (k[h])
				h = (h + 1) & (cap - 1);
			k[h] = mp->ikeys[i];
			v[h] = mp->ivals[i];
		}
		free(mp->ikeys);
		free(mp->ivals);
		mp->ikeys = k;
		mp->ivals = v;
		mp->icap = cap;
	}
	uint64_t key = (((uint64_t)parent << 32) | site) + 1;
	size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (mp->icap - 1);
	while (mp->ikeys[h]) {
		if (mp->ikeys[h] == key)
			return mp->ivals[h];
		h = (h + 1) & (mp->icap - 1);
	}
	GROW(mp->stacks, mp->nstacks, mp->stack_cap);
	uint32_t id = (uint32_t)mp->nstacks++;
	mp->stacks[id].parent = parent;
	mp->stacks[id].site = site;
	mp->stacks[id].depth = mp->stacks[parent].depth + 1;
	mp->ikeys[h] = key;
	mp->ivals[h] = id;
	return id;
}

static struct tstack *tstack_for(struct collect *c, unsigned track)
{
	for (size_t i = 0; i < c->nstacks; i++)
		if (c->stacks[i].track == track)
			return &c->stacks[i];
	c->stacks = xrealloc(c->stacks, (c->nstacks + 1) * sizeof(*c->stacks));
	struct tstack *s = &c->stacks[c->nstacks++];
	memset(s, 0, sizeof(*s));
	s->track = track;
	return s;
}

/* The open slice with this serial (a top of some track's stack), or NULL. */
static struct tstack_ent *open_slice(struct collect *c, uint64_t serial)
{
	if (!serial)
		return NULL;
	for (size_t i = 0; i < c->nstacks; i++) {
		struct tstack *s = &c->stacks[i];
		if (s->n && s->e[s->n - 1].serial == serial)
			return &s->e[s->n - 1];
	}
	return NULL;
}

static void on_event(void *ud, const struct weft_ev *ev)
{
	struct collect *c = ud;
	switch (ev->kind) {
	case WEFT_EV_BEGIN: {
		struct tstack *s = tstack_for(c, ev->track);
		uint32_t parent = s->n ? s->e[s->n - 1].stack : 0;
		GROW(s->e, s->n, s->cap);
		s->e[s->n].serial = ev->serial;
		s->e[s->n].stack = intern(c->mp, parent, ev->id);
		s->e[s->n].slice = NO_SLICE;
		s->n++;
		break;
	}
	case WEFT_EV_END: {
		struct tstack *s = tstack_for(c, ev->track);
		while (s->n && s->e[s->n - 1].serial != ev->serial)
			s->n--;
		if (s->n)
			s->n--;
		break;
	}
	case WEFT_EV_ACCESS: {
		struct weft_mem_proc *mp = c->mp;
		if (ev->mfn >= 5) /* a watchpoint's hits are every access of a few bytes, not a sample */
			break;
		GROW(mp->accesses, mp->naccesses, mp->acap);
		mp->accesses[mp->naccesses++] = (struct weft_mem_point){ev->ts, 0, 0};
		GROW(c->acc->a, c->acc->n, c->acc->cap);
		c->acc->a[c->acc->n++] = (struct access){ev->ts, ev->addr};
		break;
	}
	case WEFT_EV_ALLOC: case WEFT_EV_FREE: case WEFT_EV_REALLOC: case WEFT_EV_HEAP_USAGE: {
		const struct weft_proc *p = c->mp->p;
		if (ev->id && (ev->id >= p->nsites || !p->sites[ev->id].defined || p->sites[ev->id].kind != WEFT_KIND_HEAP)) {
			c->mp->bad_records++; /* a heap that was never defined (a damaged trace) */
			break;
		}
		struct tstack_ent *se = open_slice(c, ev->serial);
		GROW(c->recs, c->nrecs, c->rcap);
		struct rec *r = &c->recs[c->nrecs++];
		memset(r, 0, sizeof(*r));
		r->ts = ev->ts;
		r->addr = ev->addr;
		r->addr2 = ev->addr2;
		r->size = ev->size;
		r->heap = ev->id;
		r->type = (uint16_t)ev->kind;
		r->fn = (uint8_t)ev->mfn;
		r->stack = se ? se->stack : 0;
		r->slice = NO_SLICE;
		r->stack_hash = ev->stack_hash;
		if (ev->stack_hash && ev->nframes) {
			struct frames *f = frames_slot(c->frames, ev->stack_hash, 1);
			if (!f->pcs) {
				f->pcs = xrealloc(NULL, ev->nframes * sizeof(uint64_t));
				memcpy(f->pcs, ev->frames, ev->nframes * sizeof(uint64_t));
				f->n = ev->nframes;
			}
		}
		if (se && ev->kind != WEFT_EV_HEAP_USAGE) {
			if (se->slice == NO_SLICE) {
				struct weft_mem_thread *mt = c->mt;
				GROW(mt->slices, mt->nslices, mt->scap);
				memset(&mt->slices[mt->nslices], 0, sizeof(mt->slices[0]));
				mt->slices[mt->nslices].serial = se->serial;
				se->slice = (uint32_t)mt->nslices++;
			}
			r->slice = se->slice;
		}
		break;
	}
	default:
		break;
	}
}

/* ---- the live-block table: (heap, address) -> block ---- */

struct block {
	uint64_t key;  /* address ^ heap << 48 rotated; 0 empty, 1 removed */
	uint64_t size, count, ts;
	uint32_t stack, thread;
	uint64_t order; /* replay index of its allocation */
	uint64_t addr, raw_size, serial; /* for the block callback */
	uint32_t heap;
	uint8_t fn;
};

struct table {
	struct block *b;
	size_t cap, used, live;
};

static uint64_t bkey(uint32_t heap, uint64_t addr)
{
	uint64_t k = addr ^ ((uint64_t)heap << 48) ^ ((uint64_t)heap >> 16);
	return k < 2 ? k + 0x8000000000000000ull : k;
}

static size_t bslot(uint64_t k, size_t cap)
{
	return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

static struct block *tfind(struct table *t, uint64_t k)
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

static struct block *tinsert(struct table *t, uint64_t k)
{
	if ((t->used + 1) * 2 > t->cap) {
		size_t cap = t->cap ? t->cap : 1024;
		while (cap < (t->live + 1) * 4)
			cap *= 2;
		struct block *nb = calloc(cap, sizeof(*nb));
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

static void tremove(struct table *t, struct block *b)
{
	b->key = 1;
	t->live--;
}

/* ---- replay ---- */

struct replay {
	struct weft_mem_proc *mp;
	weft_mem_block_fn on_block;
	void *ud;
	size_t proc;
	struct collect *threads; /* one per thread: its records */
	size_t nthreads;
	uint64_t *order;         /* thread << 32 | index, in replay order */
	size_t norder;
	struct table blocks;
	struct weft_ranges ranges; /* the live blocks by address range, of every heap: access joins */
	struct access_list acc;    /* sorted by time; the first next_acc joined */
	size_t next_acc;
	uint64_t acc_resolution;
	uint32_t *site_slot;       /* site id -> index in mp->access_sites + 1 (0: none yet) */
	size_t nslots;
	struct { uint64_t key, order; } *last_alloc; /* per thread */
	uint64_t resolution;
	uint64_t next_dump, dump_every;
	int filtered;
	double sample;
};

static struct weft_mem_heap *heap_for(struct weft_mem_proc *mp, uint32_t id)
{
	for (size_t i = 0; i < mp->nheaps; i++)
		if (mp->heaps[i].id == id)
			return &mp->heaps[i];
	if (mp->nheaps >= WEFT_MEM_MAX_HEAPS)
		return NULL;
	mp->heaps = xrealloc(mp->heaps, (mp->nheaps + 1) * sizeof(*mp->heaps));
	struct weft_mem_heap *h = &mp->heaps[mp->nheaps++];
	memset(h, 0, sizeof(*h));
	h->id = id;
	/* the replay runs once every stack is interned: one total per stack */
	if (!(h->totals = calloc(mp->nstacks + 1, sizeof(*h->totals))))
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

static void point(struct replay *rp, struct weft_mem_heap *h, uint64_t ts)
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

static void dump(struct weft_mem_proc *mp, uint64_t ts, int at_peak, struct weft_mem_heap *only)
{
	for (size_t i = 0; i < mp->nheaps; i++) {
		struct weft_mem_heap *h = &mp->heaps[i];
		if (only && h != only)
			continue;
		h->dumps = xrealloc(h->dumps, (h->ndumps + 1) * sizeof(*h->dumps));
		struct weft_mem_dump *d = &h->dumps[h->ndumps++];
		d->ts = ts;
		d->at_peak = at_peak;
		d->alloc_bytes = xrealloc(NULL, mp->nstacks * sizeof(uint64_t) * 4);
		d->freed_bytes = d->alloc_bytes + mp->nstacks;
		d->alloc_count = d->freed_bytes + mp->nstacks;
		d->free_count = d->alloc_count + mp->nstacks;
		for (size_t s = 0; s < mp->nstacks; s++) {
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
static void scaled(const struct replay *rp, uint64_t size, uint64_t *bytes, uint64_t *count)
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

static struct weft_mem_slice *slice_of(struct replay *rp, uint32_t thread, uint32_t slice)
{
	if (slice == NO_SLICE)
		return NULL;
	return &rp->mp->threads[thread].slices[slice];
}

/* A block's life to the callback; free_thread SIZE_MAX: still live. */
static void block_done(struct replay *rp, const struct block *b, uint64_t free_ts, size_t free_thread,
		       uint64_t free_serial)
{
	if (!rp->on_block)
		return;
	struct weft_mem_block_info bi = {rp->proc, b->heap, b->fn, b->addr, b->raw_size, b->ts, free_ts,
					 b->thread, free_thread, b->serial, free_serial,
					 b->stack ? rp->mp->stacks[b->stack].site : 0, b->size};
	rp->on_block(rp->ud, &bi);
}

/* Frees the block at (heap, addr); returns whether there was one. */
static int do_free(struct replay *rp, struct weft_mem_heap *h, struct rec *r, uint32_t thread, uint64_t addr)
{
	uint64_t k = bkey(h->id, addr);
	struct block *b = tfind(&rp->blocks, k);
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
	struct weft_mem_slice *s = slice_of(rp, thread, r->slice);
	if (s) {
		s->free_count += b->count;
		s->freed_bytes += b->size;
	}
	if (rp->last_alloc[b->thread].key == k && rp->last_alloc[b->thread].order == b->order)
		tt->temporary += b->count;
	if (r->type == WEFT_EV_REALLOC) {
		r->fstack = b->stack;
		r->fsize = b->size;
		r->fcount = b->count;
	} else {
		r->stack = b->stack;
		r->rsize = b->size;
		r->rcount = b->count;
	}
	r->freed_known = 1;
	const struct weft_mem_slice *fs = slice_of(rp, thread, r->slice);
	block_done(rp, b, r->ts, thread, fs ? fs->serial : 0);
	if (rp->acc.n)
		weft_ranges__remove(&rp->ranges, b->addr, b->order, NULL); /* -ENOENT: an empty block */
	tremove(&rp->blocks, b);
	return 1;
}

static void do_alloc(struct replay *rp, struct weft_mem_heap *h, struct rec *r, uint32_t thread, uint64_t addr,
		     uint64_t size, uint64_t order)
{
	uint64_t k = bkey(h->id, addr);
	struct block *old = tfind(&rp->blocks, k);
	if (old) { /* the free of what was there never came (lost or not recorded) */
		h->missed_frees++;
		struct rec tmp = *r;
		tmp.type = WEFT_EV_FREE;
		tmp.slice = NO_SLICE;
		do_free(rp, h, &tmp, thread, addr);
	}
	uint64_t bytes, count;
	if (h->id) { /* only the C heap is sampled: mappings and named heaps are whole */
		bytes = size;
		count = 1;
	} else {
		scaled(rp, size, &bytes, &count);
	}
	struct block *b = tinsert(&rp->blocks, k);
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
	const struct weft_mem_slice *as = slice_of(rp, thread, r->slice);
	b->serial = as ? as->serial : 0;
	r->rsize = bytes;
	r->rcount = count;
	h->live += bytes;
	h->allocs += count;
	h->alloc_bytes += bytes;
	struct weft_mem_total *tt = &h->totals[r->stack];
	tt->allocs += count;
	tt->bytes += bytes;
	tt->live += bytes;
	struct weft_mem_slice *s = slice_of(rp, thread, r->slice);
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
	}
}

static void apply(struct replay *rp, struct rec *r, uint32_t thread, uint64_t order)
{
	struct weft_mem_proc *mp = rp->mp;
	struct weft_mem_heap *h = heap_for(mp, r->heap);
	if (!h) { /* more heaps than a report can show: counted, left out */
		mp->bad_records++;
		return;
	}
	switch (r->type) {
	case WEFT_EV_ALLOC:
		h->alloc_calls++;
		do_alloc(rp, h, r, thread, r->addr, r->size, order);
		break;
	case WEFT_EV_FREE:
		h->free_calls += (uint64_t)do_free(rp, h, r, thread, r->addr); /* the others: counted apart */
		break;
	case WEFT_EV_REALLOC:
		h->realloc_calls++;
		if (r->addr)
			do_free(rp, h, r, thread, r->addr);
		if (r->addr2)
			do_alloc(rp, h, r, thread, r->addr2, r->size, order);
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

/* ---- accesses joined to the blocks they landed in ---- */

/* One more access charged to s at ts: its cumulative count, at most one point per resolution-wide
 * bucket (the bucket's last count, at the time of its last access). */
static void charge(struct weft_mem_access_site *s, uint64_t ts, uint64_t resolution)
{
	s->count++;
	if (s->npoints && ts - s->bucket_start < resolution) {
		s->points[s->npoints - 1].ts = ts;
		s->points[s->npoints - 1].live = s->count;
		return;
	}
	GROW(s->points, s->npoints, s->pcap);
	s->points[s->npoints++] = (struct weft_mem_point){ts, s->count, 0};
	s->bucket_start = ts;
}

static struct weft_mem_access_site *access_site(struct replay *rp, uint32_t site)
{
	struct weft_mem_proc *mp = rp->mp;
	if (site >= rp->nslots) {
		size_t n = rp->nslots ? rp->nslots : 64;
		while (n <= site)
			n *= 2;
		rp->site_slot = xrealloc(rp->site_slot, n * sizeof(*rp->site_slot));
		memset(rp->site_slot + rp->nslots, 0, (n - rp->nslots) * sizeof(*rp->site_slot));
		rp->nslots = n;
	}
	if (!rp->site_slot[site]) {
		GROW(mp->access_sites, mp->naccess_sites, mp->access_site_cap);
		memset(&mp->access_sites[mp->naccess_sites], 0, sizeof(*mp->access_sites));
		mp->access_sites[mp->naccess_sites].site = site;
		rp->site_slot[site] = (uint32_t)++mp->naccess_sites;
	}
	return &mp->access_sites[rp->site_slot[site] - 1];
}

/* The accesses before `ts` (all: every one left), each to the innermost block live at its address
 * (whatever heap or thread it is from), charged to the innermost slice open where that block was
 * allocated. */
static void join_accesses(struct replay *rp, uint64_t ts, int all)
{
	struct weft_mem_proc *mp = rp->mp;
	for (; rp->next_acc < rp->acc.n && (all || rp->acc.a[rp->next_acc].ts < ts); rp->next_acc++) {
		const struct access *a = &rp->acc.a[rp->next_acc];
		uint64_t stack;
		if (!weft_ranges__find(&rp->ranges, a->addr, NULL, NULL, &stack)) {
			charge(&mp->unjoined, a->ts, rp->acc_resolution);
			continue;
		}
		mp->joined_accesses++;
		charge(access_site(rp, stack ? mp->stacks[stack].site : 0), a->ts, rp->acc_resolution);
	}
}

static int cmp_access(const void *a, const void *b)
{
	const struct access *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* k-way merge of the threads' records by time (stable: ties go to the lower thread). */
static void merge(struct replay *rp)
{
	size_t n = 0;
	for (size_t i = 0; i < rp->nthreads; i++)
		n += rp->threads[i].nrecs;
	rp->order = xrealloc(NULL, n * sizeof(uint64_t));
	size_t *pos = calloc(rp->nthreads + 1, sizeof(size_t));
	uint32_t *heap = calloc(rp->nthreads + 1, sizeof(uint32_t));
	if (!pos || !heap)
		weft_oom("the memory analysis");
	size_t hn = 0;
#define KEY(t) (rp->threads[t].recs[pos[t]].ts)
#define LESS(a, b) (KEY(a) < KEY(b) || (KEY(a) == KEY(b) && (a) < (b)))
	for (uint32_t t = 0; t < rp->nthreads; t++) {
		if (!rp->threads[t].nrecs)
			continue;
		size_t i = hn++;
		heap[i] = t;
		while (i && LESS(heap[i], heap[(i - 1) / 2])) {
			uint32_t x = heap[i];
			heap[i] = heap[(i - 1) / 2];
			heap[(i - 1) / 2] = x;
			i = (i - 1) / 2;
		}
	}
	while (hn) {
		uint32_t t = heap[0];
		rp->order[rp->norder++] = ((uint64_t)t << 32) | pos[t];
		if (++pos[t] == rp->threads[t].nrecs)
			heap[0] = heap[--hn];
		for (size_t i = 0;;) {
			size_t l = 2 * i + 1, r = l + 1, m = i;
			if (l < hn && LESS(heap[l], heap[m]))
				m = l;
			if (r < hn && LESS(heap[r], heap[m]))
				m = r;
			if (m == i)
				break;
			uint32_t x = heap[i];
			heap[i] = heap[m];
			heap[m] = x;
			i = m;
		}
	}
#undef LESS
#undef KEY
	free(pos);
	free(heap);
}

/* Each stack's live bytes at the heap's peak, and the cumulative dump there: the records up to
 * the peak again, with what the first replay resolved. */
static void peak_pass(struct replay *rp, struct weft_mem_heap *h)
{
	struct weft_mem_proc *mp = rp->mp;
	if (!h->peak)
		return;
	struct weft_mem_total *save = xrealloc(NULL, mp->nstacks * sizeof(*save));
	memcpy(save, h->totals, mp->nstacks * sizeof(*save));
	memset(h->totals, 0, mp->nstacks * sizeof(*save));
	int64_t *live = calloc(mp->nstacks + 1, sizeof(int64_t));
	if (!live)
		weft_oom("the memory analysis");
	for (size_t o = 0; o <= h->peak_event && o < rp->norder; o++) {
		struct rec *r = &rp->threads[rp->order[o] >> 32].recs[(uint32_t)rp->order[o]];
		if (r->heap != h->id)
			continue;
		if ((r->type == WEFT_EV_FREE || r->type == WEFT_EV_REALLOC) && r->freed_known) {
			uint32_t st = r->type == WEFT_EV_REALLOC ? r->fstack : r->stack;
			uint64_t sz = r->type == WEFT_EV_REALLOC ? r->fsize : r->rsize;
			uint64_t ct = r->type == WEFT_EV_REALLOC ? r->fcount : r->rcount;
			live[st] -= (int64_t)sz;
			h->totals[st].frees += ct;
			h->totals[st].freed += sz;
		}
		if (r->type == WEFT_EV_ALLOC || (r->type == WEFT_EV_REALLOC && r->addr2)) {
			live[r->stack] += (int64_t)r->rsize;
			h->totals[r->stack].allocs += r->rcount;
			h->totals[r->stack].bytes += r->rsize;
		}
	}
	dump(mp, h->peak_ts, 1, h);
	memcpy(h->totals, save, mp->nstacks * sizeof(*save));
	for (size_t s = 0; s < mp->nstacks; s++)
		h->totals[s].peak = live[s] > 0 ? (uint64_t)live[s] : 0;
	free(save);
	free(live);
}

static int cmp_slice(const void *a, const void *b)
{
	const struct weft_mem_slice *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static int cmp_dump(const void *a, const void *b)
{
	const struct weft_mem_dump *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts ? 1 : x->at_peak - y->at_peak;
}

/* memory_stacks: is this frame the allocator's own, not where an allocation came from? The
 * allocation functions and their C++ layers: operator new/new[] (aligned and nothrow alike), the
 * C allocation functions and weft's own (a wrapper's frame names the wrapper), std::allocator,
 * __gnu_cxx::new_allocator, std::__new_allocator, allocator_traits, and the rest of the C++
 * library's templates a container or string allocates through (std::, __gnu_cxx::). A name is
 * judged by its qualified name: the return type and the parameter list left out. */
static int allocator_frame(const char *name)
{
	static const char *const c_fns[] = {"malloc", "calloc", "realloc", "reallocarray", "free", "cfree",
					    "memalign", "aligned_alloc", "posix_memalign", "valloc", "pvalloc",
					    "strdup", "strndup", "__strdup", "__strndup", "__libc_malloc",
					    "__libc_calloc", "__libc_realloc", "__libc_memalign"};
	/* the qualified name: up to the parameter list (a '(' outside <>), after the return type (the
	 * last space outside <> before it) */
	size_t end = 0, start = 0;
	int depth = 0;
	for (; name[end] && !(name[end] == '(' && !depth); end++) {
		if (name[end] == '<')
			depth++;
		else if (name[end] == '>' && depth)
			depth--;
		else if (name[end] == ' ' && !depth)
			start = end + 1;
	}
	if (end >= 12 && !strncmp(name + end - 12, "operator new", 12))
		return 1;
	if (end >= 14 && !strncmp(name + end - 14, "operator new[]", 14))
		return 1;
	if (end >= 15 && !strncmp(name + end - 15, "operator delete", 15))
		return 1;
	const char *q = name + start;
	size_t n = end - start;
	if ((n > 5 && !strncmp(q, "std::", 5)) || (n > 11 && !strncmp(q, "__gnu_cxx::", 11)) ||
	    (n > 5 && !strncmp(q, "weft_", 5)))
		return 1;
	for (size_t i = 0; i < sizeof(c_fns) / sizeof(c_fns[0]); i++)
		if (strlen(c_fns[i]) == n && !strncmp(q, c_fns[i], n))
			return 1;
	return 0;
}

/* memory_stacks: each distinct call stack as an interned stack of function frames (outermost
 * first, named by the process's symbols; a return address is looked up one byte back, inside
 * the call), then every record that has one takes it instead of its slice stack. */
static void resolve_stacks(struct weft_mem_proc *mp, struct frame_map *fm, struct collect *threads, size_t n)
{
	if (!fm->n)
		return;
	struct weft_proc *p = (struct weft_proc *)mp->p; /* frame names become sites of the process */
	struct weft_symtab *st = weft_symtab_open(p);
	struct { uint64_t pc; uint32_t site; int alloc; } *pcs = NULL; /* pc -> site, allocator's frame */
	size_t pcap = 0, npcs = 0;
	struct { const char *name; uint32_t site; } *names = NULL; /* name -> site, linear per pc miss */
	size_t ncap = 0, nnames = 0;
	for (size_t i = 0; i < fm->cap; i++) {
		struct frames *f = &fm->e[i];
		if (!f->hash || !f->pcs)
			continue;
		/* names, innermost first; a return address outside every mapped file ends the stack
		 * (past it the walk read a frame pointer the code did not keep) */
		uint32_t sites[64], depth = 0, inner_alloc = 0;
		for (uint32_t k = 0; k < f->n && k < 64; k++) {
			uint64_t pc = f->pcs[k];
			uint32_t site = 0;
			int alloc = 0;
			for (size_t j = 0; j < npcs && !site; j++) /* stacks share most pcs: few distinct */
				if (pcs[j].pc == pc) {
					site = pcs[j].site;
					alloc = pcs[j].alloc;
				}
			if (!site) {
				char name[1024];
				if (st)
					weft_symtab_name(st, pc - 1, name, sizeof(name));
				else
					snprintf(name, sizeof(name), "0x%llx", (unsigned long long)pc);
				if (name[0] == '0' && name[1] == 'x')
					site = UINT32_MAX;
				for (size_t j = 0; j < nnames && !site; j++)
					if (!strcmp(names[j].name, name))
						site = names[j].site;
				if (!site) {
					site = weft_proc_add_site(p, name, "");
					GROW(names, nnames, ncap);
					names[nnames].name = weft_site_name(p, site);
					names[nnames++].site = site;
				}
				alloc = site != UINT32_MAX && allocator_frame(name);
				GROW(pcs, npcs, pcap);
				pcs[npcs].pc = pc;
				pcs[npcs].alloc = alloc;
				pcs[npcs++].site = site;
			}
			if (site == UINT32_MAX)
				break;
			if (depth == inner_alloc && alloc)
				inner_alloc++; /* still in the allocator's own frames */
			sites[depth++] = site;
		}
		/* named by where the allocation came from: the allocator's frames innermost are left out
		 * (all of them, when nothing else is known: then the stack stays whole) */
		uint32_t stack = 0, first = inner_alloc < depth ? inner_alloc : 0;
		while (depth > first)
			stack = intern(mp, stack, sites[--depth]);
		f->stack = stack;
	}
	weft_symtab_close(st);
	free(pcs);
	free(names);
	for (size_t t = 0; t < n; t++)
		for (size_t i = 0; i < threads[t].nrecs; i++) {
			struct rec *r = &threads[t].recs[i];
			struct frames *f = r->stack_hash ? frames_slot(fm, r->stack_hash, 0) : NULL;
			if (f && f->pcs)
				r->stack = f->stack;
		}
	for (size_t i = 0; i < fm->cap; i++)
		free(fm->e[i].pcs);
}

static int cmp_point(const void *a, const void *b)
{
	const struct weft_mem_point *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Sampled accesses as a cumulative count, one point per ~span/50000 (the last of each). */
static void access_points(struct weft_mem_proc *mp)
{
	if (!mp->naccesses)
		return;
	mp->has_records = 1;
	qsort(mp->accesses, mp->naccesses, sizeof(*mp->accesses), cmp_point);
	uint64_t span = mp->accesses[mp->naccesses - 1].ts - mp->accesses[0].ts, res = span / 50000 ? span / 50000 : 1;
	size_t out = 0;
	uint64_t bucket = 0;
	for (size_t i = 0; i < mp->naccesses; i++) {
		uint64_t ts = mp->accesses[i].ts;
		if (out && ts - bucket < res) { /* the same bucket: its count grows */
			mp->accesses[out - 1].live = i + 1;
			continue;
		}
		bucket = ts;
		mp->accesses[out].ts = ts;
		mp->accesses[out].live = i + 1;
		out++;
	}
	mp->naccesses = out;
}

/* ---- a fork child's inherited slices ----
 * The child's main thread goes on from the forking thread's state: the slices open there at the
 * fork (FORK record: which thread, when) are open in the child too, and its allocations made in
 * them are theirs. The parent's stack at that moment is read from the parent's thread; the
 * child's walk of that thread begins with those slices begun (BEGIN records fed to the walker
 * first, with the child's site of the same name), so the child's own exits of them end them.
 * Their serials are far above the thread's own, which stay those every other walk gives. */
#define INHERIT_MAX 256
#define INHERIT_SERIAL (UINT64_C(1) << 62)

struct inherit {
	const struct weft_proc *parent;
	uint64_t fork_ns;
	uint32_t ids[INHERIT_MAX];
	uint64_t serials[INHERIT_MAX];
	size_t n, deep; /* deep: levels beyond INHERIT_MAX */
	int past;       /* an event after the fork was seen: the rest of the walk is not needed */
};

static void on_parent_event(void *ud, const struct weft_ev *ev)
{
	struct inherit *in = ud;
	if (ev->ts > in->fork_ns)
		in->past = 1;
	if (in->past || ev->track)
		return;
	if (ev->kind == WEFT_EV_BEGIN) {
		if (in->n < INHERIT_MAX) {
			in->ids[in->n] = ev->id;
			in->serials[in->n++] = ev->serial;
		} else {
			in->deep++;
		}
	} else if (ev->kind == WEFT_EV_END) {
		if (in->deep) {
			in->deep--;
			return;
		}
		while (in->n && in->serials[in->n - 1] != ev->serial)
			in->n--;
		if (in->n)
			in->n--;
	}
}

/* The child's site for the parent's site `id` (by name; added when the child has none). */
static uint32_t child_site(struct weft_proc *child, const struct weft_proc *parent, uint32_t id)
{
	const char *name = weft_site_name(parent, id);
	if (!name)
		return 0;
	for (size_t i = 1; i < child->nsites; i++)
		if (child->sites[i].defined && child->sites[i].name && !strcmp(child->sites[i].name, name))
			return (uint32_t)i;
	return weft_proc_add_site(child, name, "");
}

/* The slices open on the forking thread at the fork, as the child's sites (outermost first);
 * 0 when p is not a fork child of a process in the trace, or nothing was open. */
static size_t inherited_stack(const struct weft_trace *t, const struct weft_proc *p, uint32_t *ids,
			      uint64_t *fork_ns)
{
	if (!p->fork_tid)
		return 0;
	struct inherit in = {.fork_ns = weft_proc_ns(p, p->fork_ticks)};
	for (size_t i = 0; i < t->nprocs; i++) { /* the parent: the latest image started before the fork */
		const struct weft_proc *q = &t->procs[i];
		if (q != p && q->pid == p->ppid && (!q->start_ns || q->start_ns <= in.fork_ns) &&
		    (!in.parent || q->gen > in.parent->gen))
			in.parent = q;
	}
	if (!in.parent)
		return 0;
	const struct weft_thread_data *th = NULL;
	for (size_t i = 0; i < in.parent->nthreads && !th; i++)
		if (in.parent->threads[i].tid == p->fork_tid)
			th = &in.parent->threads[i];
	if (!th)
		return 0;
	uint64_t *buf = NULL;
	size_t cap = 0, nw;
	const char *why;
	struct weft_walk_stats st = {0};
	struct weft_walker w;
	weft_walker_init(&w, in.parent, on_parent_event, &in, &st);
	for (size_t c = 0; c < th->nchunks && !in.past; c++) /* up to the fork only */
		if (!weft_chunk_decode_prepared(&th->chunks[c], in.parent, &buf, &cap, &nw, &why))
			weft_walker_feed_prepared(&w, buf, nw);
	weft_walker_finish(&w, t->last_ns);
	free(buf);
	for (size_t k = 0; k < in.n; k++)
		ids[k] = child_site((struct weft_proc *)p, in.parent, in.ids[k]); /* sites of the child, as symbols do */
	*fork_ns = in.fork_ns;
	return in.n;
}

/* weft_walk_thread, with the inherited slices begun first. */
static void walk_inheriting(const struct weft_trace *t, const struct weft_proc *p, const struct weft_thread_data *th,
			    const uint32_t *ids, size_t n, uint64_t ts, weft_ev_fn fn, void *ud,
			    struct weft_walk_stats *st, uint64_t **buf, size_t *cap)
{
	struct weft_walker w;
	weft_walker_init(&w, p, fn, ud, st);
	uint64_t seed[2 * INHERIT_MAX];
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (ids[i]) {
			seed[2 * k] = ts;
			seed[2 * k + 1] = (uint64_t)ids[i] | ((uint64_t)WEFT_R_BEGIN << 32);
			k++;
		}
	w.next_serial = INHERIT_SERIAL;
	weft_walker_feed_prepared(&w, seed, 2 * k);
	w.next_serial = 0;
	for (size_t c = 0; c < th->nchunks; c++) {
		size_t nw;
		const char *why;
		int rc = weft_chunk_decode_prepared(&th->chunks[c], p, buf, cap, &nw, &why);
		if (rc)
			weft_walk_stats_refused(st, rc, why);
		else
			weft_walker_feed_prepared(&w, *buf, nw);
	}
	weft_walker_finish(&w, t->last_ns);
}

static int has_heaps(const struct weft_proc *p)
{
	if (p->mem_recorded || p->has_access)
		return 1;
	for (size_t i = 0; i < p->nsites; i++)
		if (p->sites[i].defined && p->sites[i].kind == WEFT_KIND_HEAP)
			return 1;
	return 0;
}

static void analyze_proc(const struct weft_trace *t, struct weft_mem_proc *mp, weft_mem_block_fn fn, void *ud,
			 size_t proc)
{
	const struct weft_proc *p = mp->p;
	mp->threads = calloc(p->nthreads + 1, sizeof(*mp->threads));
	if (!mp->threads)
		weft_oom("the memory analysis");
	intern(mp, 0, 0); /* stack 0: outside any slice (its own parent) */
	if (!has_heaps(p))
		return;
	struct replay rp = {.mp = mp, .nthreads = p->nthreads, .on_block = fn, .ud = ud, .proc = proc};
	rp.threads = calloc(p->nthreads + 1, sizeof(*rp.threads));
	rp.last_alloc = calloc(p->nthreads + 1, sizeof(*rp.last_alloc));
	if (!rp.threads || !rp.last_alloc)
		weft_oom("the memory analysis");
	uint64_t *buf = NULL;
	size_t cap = 0;
	struct frame_map fm = {0};
	uint32_t inherited[INHERIT_MAX];
	uint64_t fork_ns = 0;
	size_t ninherited = inherited_stack(t, p, inherited, &fork_ns);
	int seeded = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct collect *c = &rp.threads[i];
		c->mp = mp;
		c->frames = &fm;
		c->acc = &rp.acc;
		c->mt = &mp->threads[i];
		struct weft_walk_stats st = {0};
		if (ninherited && !seeded && p->threads[i].tid == (uint32_t)p->pid) { /* the forking thread's continuation */
			seeded = 1;
			walk_inheriting(t, p, &p->threads[i], inherited, ninherited, fork_ns, on_event, c, &st, &buf, &cap);
		} else {
			weft_walk_thread(p, &p->threads[i], t->last_ns, on_event, c, &st, &buf, &cap);
		}
		for (size_t s = 0; s < c->nstacks; s++)
			free(c->stacks[s].e);
		free(c->stacks);
		if (c->nrecs) {
			mp->has_records = 1;
			if (!mp->first_ts || c->recs[0].ts < mp->first_ts)
				mp->first_ts = c->recs[0].ts;
			if (c->recs[c->nrecs - 1].ts > mp->last_ts)
				mp->last_ts = c->recs[c->nrecs - 1].ts;
		}
	}
	free(buf);
	access_points(mp);
	resolve_stacks(mp, &fm, rp.threads, p->nthreads);
	free(fm.e);
	rp.filtered = p->mem_threshold || p->mem_sample;
	rp.sample = (double)p->mem_sample;
	mp->scale_note = rp.sample;
	uint64_t span = mp->last_ts - mp->first_ts;
	rp.resolution = span / 50000 ? span / 50000 : 1; /* at most ~100000 points per heap */
	rp.dump_every = span / 16 ? span / 16 : 1;
	rp.next_dump = mp->first_ts + rp.dump_every;
	if (rp.acc.n) {
		qsort(rp.acc.a, rp.acc.n, sizeof(*rp.acc.a), cmp_access);
		uint64_t aspan = rp.acc.a[rp.acc.n - 1].ts - rp.acc.a[0].ts;
		rp.acc_resolution = aspan / 50000 ? aspan / 50000 : 1; /* at most ~50000 points per site */
	}
	merge(&rp);
	for (size_t o = 0; o < rp.norder; o++) {
		uint32_t th = (uint32_t)(rp.order[o] >> 32);
		struct rec *r = &rp.threads[th].recs[(uint32_t)rp.order[o]];
		while (r->ts >= rp.next_dump && rp.next_dump < mp->last_ts) {
			dump(mp, rp.next_dump, 0, NULL);
			rp.next_dump += rp.dump_every;
		}
		join_accesses(&rp, r->ts, 0); /* an access at the time of a record comes after it */
		apply(&rp, r, th, o);
	}
	join_accesses(&rp, 0, 1);
	for (size_t i = 0; i < mp->nheaps; i++) /* the process's calls: the C heap's */
		if (!mp->heaps[i].id) {
			mp->alloc_calls = mp->heaps[i].alloc_calls;
			mp->realloc_calls = mp->heaps[i].realloc_calls;
			mp->free_calls = mp->heaps[i].free_calls;
		}
	dump(mp, mp->last_ts, 0, NULL);
	for (size_t i = 0; i < mp->nheaps; i++) {
		flush_bucket(&mp->heaps[i]);
		peak_pass(&rp, &mp->heaps[i]);
	}
	for (size_t k = 0; k < mp->nheaps; k++) {
		struct weft_mem_heap *h = &mp->heaps[k];
		if (h->ndumps)
			qsort(h->dumps, h->ndumps, sizeof(*h->dumps), cmp_dump);
	}
	for (size_t o = 0; o < rp.norder; o++) { /* leaks: allocations whose block is still live */
		uint32_t th = (uint32_t)(rp.order[o] >> 32);
		struct rec *r = &rp.threads[th].recs[(uint32_t)rp.order[o]];
		uint64_t addr = r->type == WEFT_EV_ALLOC ? r->addr : r->type == WEFT_EV_REALLOC ? r->addr2 : 0;
		if (!addr)
			continue;
		struct block *b = tfind(&rp.blocks, bkey(r->heap, addr));
		if (!b || b->order != o)
			continue;
		struct weft_mem_heap *h = heap_for(mp, r->heap);
		if (!h)
			continue;
		GROW(h->leaks, h->nleaks, h->lcap);
		h->leaks[h->nleaks++] = (struct weft_mem_leak){addr, b->size, b->ts, p->threads[th].tid, b->stack};
		h->totals[b->stack].leaked_count += b->count;
		block_done(&rp, b, 0, SIZE_MAX, 0);
	}
	for (size_t i = 0; i < p->nthreads; i++) {
		struct weft_mem_thread *mt = &mp->threads[i];
		if (mt->nslices)
			qsort(mt->slices, mt->nslices, sizeof(*mt->slices), cmp_slice);
		free(rp.threads[i].recs);
	}
	free(rp.threads);
	free(rp.order);
	free(rp.blocks.b);
	free(rp.last_alloc);
	weft_ranges__clear(&rp.ranges);
	free(rp.acc.a);
	free(rp.site_slot);
}

int weft_mem_analyze(const struct weft_trace *t, struct weft_mem **out, char *err, size_t errlen)
{
	return weft_mem_analyze_blocks(t, NULL, NULL, out, err, errlen);
}

int weft_mem_analyze_blocks(const struct weft_trace *t, weft_mem_block_fn fn, void *ud, struct weft_mem **out,
			    char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct weft_mem *m = calloc(1, sizeof(*m));
	if (!m || !(m->procs = calloc(t->nprocs + 1, sizeof(*m->procs))))
		weft_oom("the memory analysis");
	m->nprocs = t->nprocs;
	m->big_alloc = weft_mem_large_alloc;
	for (size_t i = 0; i < t->nprocs; i++) {
		m->procs[i].p = &t->procs[i];
		analyze_proc(t, &m->procs[i], fn, ud, i);
	}
	*out = m;
	return 0;
}

void weft_mem_free(struct weft_mem *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nprocs; i++) {
		struct weft_mem_proc *mp = &m->procs[i];
		for (size_t k = 0; k < mp->nheaps; k++) {
			struct weft_mem_heap *h = &mp->heaps[k];
			free(h->totals);
			free(h->points);
			free(h->usage);
			for (size_t d = 0; d < h->ndumps; d++)
				free(h->dumps[d].alloc_bytes);
			free(h->dumps);
			free(h->leaks);
		}
		free(mp->heaps);
		if (mp->threads)
			for (size_t k = 0; k < mp->p->nthreads; k++)
				free(mp->threads[k].slices);
		free(mp->threads);
		free(mp->stacks);
		free(mp->accesses);
		for (size_t k = 0; k < mp->naccess_sites; k++)
			free(mp->access_sites[k].points);
		free(mp->access_sites);
		free(mp->unjoined.points);
		free(mp->ikeys);
		free(mp->ivals);
	}
	free(m->procs);
	free(m);
}

const struct weft_mem_proc *weft_mem_for(const struct weft_mem *m, const struct weft_proc *p)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].p == p)
			return m->procs[i].has_records ? &m->procs[i] : NULL;
	return NULL;
}

const struct weft_mem_slice *weft_mem_slice(const struct weft_mem_proc *mp, size_t thread, uint64_t serial)
{
	if (!mp || thread >= mp->p->nthreads)
		return NULL;
	const struct weft_mem_thread *mt = &mp->threads[thread];
	size_t lo = 0, hi = mt->nslices;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (mt->slices[mid].serial < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < mt->nslices && mt->slices[lo].serial == serial ? &mt->slices[lo] : NULL;
}

const char *weft_mem_why_none(const struct weft_trace *t, int pid, char *buf, size_t n)
{
	const struct weft_proc *p = NULL;
	for (size_t i = 0; i < t->nprocs && !p; i++)
		if ((!pid || t->procs[i].pid == pid) && t->procs[i].mem_recorded)
			p = &t->procs[i];
	if (!p)
		snprintf(buf, n, "no memory records %s (record with 'weft record --memory', or use weft_heap_* in "
			 "the program)", pid ? "of that process" : "in the trace");
	else if (p->mem_not_interposed)
		snprintf(buf, n, "no allocation was recorded: the program's own malloc (%s) came before weft's",
			 p->mem_allocator ? p->mem_allocator : "?");
	else if (p->mem_sample)
		snprintf(buf, n, "no allocation was sampled (memory_sample=%llu: one sample per %llu bytes on "
			 "average; a smaller --memory=sample:N samples more)", (unsigned long long)p->mem_sample,
			 (unsigned long long)p->mem_sample);
	else if (p->mem_threshold)
		snprintf(buf, n, "no block of at least %llu bytes was allocated (memory_threshold=%llu)",
			 (unsigned long long)p->mem_threshold, (unsigned long long)p->mem_threshold);
	else
		snprintf(buf, n, "no allocation was recorded (memory was recorded: the program allocated nothing "
			 "while tracing was on)");
	return buf;
}

const char *weft_mem_fn_name(unsigned fn)
{
	static const char *const names[] = {"?", "malloc", "calloc", "realloc", "reallocarray", "memalign",
					    "posix_memalign", "aligned_alloc", "valloc", "pvalloc", "free",
					    "mmap", "munmap", "mremap", "heap api"};
	return fn < sizeof(names) / sizeof(names[0]) ? names[fn] : "?";
}
