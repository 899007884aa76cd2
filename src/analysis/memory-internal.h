/*
 * memory-internal.h - the rooms of the memory analysis (analysis/memory.h) and what they share.
 * A process is read twice, each time thread by thread through the walker (export/model.h):
 *   memory-scan.c    pass 1: every slice stack interned, the call stacks collected, the span of
 *                    the records and the sampled accesses; no memory record is kept;
 *   memory-stacks.c  the slice stacks interned ((parent, site) -> id) and the call stacks
 *                    (memory_stacks) named and interned as stacks of frames;
 *   memory-fork.c    the slices a fork child inherits from its parent's forking thread;
 *   memory-stream.c  pass 2: the threads walked side by side, one chunk at a time, their
 *                    records merged by time and handed to the replay as they come;
 *   memory-replay.c  the live blocks, every figure counted on the way, each stack's share of
 *                    the heap's peak kept as the peak moves (no second replay);
 *   memory-access.c  the sampled accesses joined to the blocks live where they landed.
 * Memory is proportional to what is live (blocks not yet freed, open slices), to the interned
 * stacks and sites, to one decoded chunk per thread and to the results (bounded counter points
 * and dumps), never to the number of memory records.
 */
#ifndef WEFT_ANALYSIS_MEMORY_INTERNAL_H
#define WEFT_ANALYSIS_MEMORY_INTERNAL_H

#include "analysis/memory.h"
#include "analysis/ranges.h"
#include "export/model.h"
#include <stddef.h>
#include <stdint.h>

#define NO_SLICE UINT32_MAX

/* One memory record as the replay sees it. */
struct mem_rec {
	uint64_t ts, addr, addr2, size;
	uint32_t stack;   /* the allocation's stack (slice stack, or call stack with memory_stacks) */
	uint32_t slice;   /* index in the thread's slices, or NO_SLICE */
	uint32_t heap;
	uint16_t type;    /* WEFT_EV_ALLOC... */
	uint8_t fn;
};

/* memory_stacks: the call stacks defined in the process's streams, by hash; once resolved
 * (weft_mem__resolve_stacks), each is an interned stack of frames and its pcs are dropped. */
struct mem_frames { uint64_t hash; uint32_t n, stack; uint64_t *pcs; int resolved; };
struct mem_frame_map { struct mem_frames *e; size_t cap, n; };

/* The process's sampled accesses (from whichever stream holds them), joined in the replay. */
struct mem_access {
	uint64_t ts, addr;
	uint32_t tid;
	uint32_t stack; /* the join's: the block's allocation stack */
	int joined;
};
struct mem_access_list { struct mem_access *a; size_t n, cap; };

/* A track's open slices while a thread is walked. */
struct mem_tstack_ent { uint64_t serial; uint32_t stack, slice; };
struct mem_tstack { unsigned track; struct mem_tstack_ent *e; size_t n, cap; };

/* One thread of the process, in both passes. */
struct mem_thread {
	struct weft_mem_proc *mp;
	struct mem_frame_map *frames;
	struct mem_access_list *acc;
	struct weft_mem_thread *mt;
	size_t index;            /* in p->threads */
	struct mem_tstack *stacks; /* open slices per track (freed after each pass) */
	size_t nstacks;
	int scan;                /* pass 1 (memory-scan.c), else pass 2 (memory-stream.c) */
	/* pass 1 */
	uint64_t first_ts;       /* of its first event (tids are reused) */
	int started;
	uint64_t first_rec, last_rec; /* its first and last memory record's time */
	int has_recs;
	/* pass 2: its walker, the chunk it reads next, the records of the last chunk read */
	struct weft_walker w;
	struct weft_walk_stats st;
	size_t next_chunk;
	int walking, done;
	struct mem_rec *q;
	size_t qhead, qn, qcap;
	/* the replay: its accesses in no live block (indices in the access list), for its next
	 * memory record to join (analysis/memory.h) */
	size_t *pend;
	size_t npend, pendcap;
};

/* A heap's share of its peak, kept as the replay goes (memory-replay.c). */
struct mem_peak_stack { int64_t live; uint64_t allocs, bytes, frees, freed; };
struct mem_heap_peak {
	uint64_t epoch;               /* new peaks so far */
	struct mem_peak_stack *cur;   /* per stack, now */
	struct mem_peak_stack *at;    /* per stack, at the latest peak (where seen == epoch) */
	uint64_t *seen;               /* per stack: the epoch in which `at` was saved */
};

struct mem_block {
	uint64_t key;  /* address ^ heap << 48 rotated; 0 empty, 1 removed */
	uint64_t size, count, ts;
	uint32_t stack, thread;
	uint64_t order; /* replay index of its allocation */
	uint64_t addr, raw_size, serial; /* for the block callback */
	uint32_t heap;
	uint8_t fn;
};
struct mem_table { struct mem_block *b; size_t cap, used, live; };

struct mem_replay {
	const struct weft_trace *t;
	struct weft_mem_proc *mp;
	weft_mem_block_fn on_block;
	weft_mem_step_fn on_step;
	void *ud;
	size_t proc;
	struct mem_thread *threads; /* one per thread */
	size_t nthreads;
	uint64_t *buf;               /* a decoded chunk (pass 2) */
	size_t bufcap;
	const uint32_t *inherited;   /* a fork child's inherited slices (memory-fork.c) */
	size_t ninherited;
	uint64_t fork_ns;
	size_t seeded_thread;        /* the thread that goes on from the fork (SIZE_MAX: none) */
	uint64_t norder;             /* records replayed so far */
	struct mem_table blocks;
	struct mem_heap_peak *peaks; /* parallel to mp->heaps */
	struct weft_ranges ranges;   /* the live blocks by address range, of every heap: access joins */
	struct mem_access_list acc;  /* sorted by time; the first next_acc joined */
	size_t next_acc;
	uint32_t *bytid;             /* thread indices sorted by tid */
	uint64_t acc_resolution;
	uint32_t *site_slot;         /* site id -> index in mp->access_sites + 1 (0: none yet) */
	size_t nslots;
	struct { uint64_t key, order; } *last_alloc; /* per thread */
	uint64_t resolution;
	uint64_t next_dump, dump_every;
	int filtered;
	double sample;
};

void *weft_mem__realloc(void *p, size_t n);
#define MEM_GROW(arr, n, cap)                                                          \
	do {                                                                           \
		if ((n) == (cap)) {                                                    \
			(cap) = (cap) ? (cap) * 2 : 64;                                \
			(arr) = weft_mem__realloc((arr), (cap) * sizeof(*(arr)));      \
		}                                                                      \
	} while (0)

/* memory-stacks.c */
uint32_t weft_mem__intern(struct weft_mem_proc *mp, uint32_t parent, uint32_t site);
struct mem_frames *weft_mem__frames(struct mem_frame_map *m, uint64_t hash, int add);
void weft_mem__resolve_stacks(struct weft_mem_proc *mp, struct mem_frame_map *fm);
void weft_mem__frames_free(struct mem_frame_map *fm);

/* memory-fork.c: the slices open on p's forking thread at the fork, as p's sites (outermost
 * first): how many, 0 when p is not a fork child in the trace or nothing was open. */
#define WEFT_MEM_INHERIT_MAX 256
size_t weft_mem__inherited(const struct weft_trace *t, const struct weft_proc *p, uint32_t *ids, uint64_t *fork_ns);
/* Begins those slices in a fresh walker (serials far above the thread's own). */
void weft_mem__seed(struct weft_walker *w, const uint32_t *ids, size_t n, uint64_t ts);

/* memory-scan.c: pass 1 over thread th; the slice stack ops both passes share. */
void weft_mem__scan_thread(struct mem_replay *rp, struct mem_thread *th);
void weft_mem__slice_event(struct mem_thread *th, const struct weft_ev *ev);
struct mem_tstack_ent *weft_mem__open_slice(struct mem_thread *th, uint64_t serial);
int weft_mem__bad_heap(const struct weft_proc *p, const struct weft_ev *ev);
void weft_mem__tstacks_free(struct mem_thread *th);

/* memory-stream.c: pass 2, calling weft_mem__apply for every record in time order. */
void weft_mem__stream(struct mem_replay *rp);

/* memory-replay.c */
void weft_mem__apply(struct mem_replay *rp, struct mem_rec *r, uint32_t thread, uint64_t order);
void weft_mem__dump(struct weft_mem_proc *mp, uint64_t ts, int at_peak, struct weft_mem_heap *only,
		    const struct mem_peak_stack *at);
void weft_mem__finish_heaps(struct mem_replay *rp); /* counter tails, peak shares, dumps sorted */
void weft_mem__leaks(struct mem_replay *rp);        /* the blocks still live at the end */
void weft_mem__replay_free(struct mem_replay *rp);

/* memory-access.c */
void weft_mem__access_points(struct weft_mem_proc *mp);
void weft_mem__access_prepare(struct mem_replay *rp);
void weft_mem__join_accesses(struct mem_replay *rp, uint64_t ts, int all);
void weft_mem__settle(struct mem_replay *rp, struct mem_thread *c, const struct mem_rec *r);
void weft_mem__charge_accesses(struct mem_replay *rp);

#endif
