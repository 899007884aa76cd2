/*
 * memory.h - what a trace's allocation records mean: every block's life joined from its
 * allocation to its free (across threads), each charged to the slice stack open on its thread
 * when it was allocated, and from that the figures the outputs show: live and peak bytes per
 * heap over time, per-slice own (self) counts, per-stack totals (allocations, bytes, peak
 * contribution, leaked at exit, temporary), cumulative heap-profile dumps, a size histogram
 * and what could not be matched. Used by the .pftrace and JSON writers and `weft report
 * --memory`. Sampled traces (memory_sample) are scaled back here: every figure is an unbiased
 * estimate of the whole program's (the C heap's: mappings and named heaps are not sampled).
 * A fork child's main thread starts inside the slices open on the parent's forking thread at
 * the fork (FORK record): its allocations there are charged to them. With memory_stacks, a
 * block's stack leaves out the allocator's own innermost frames (operator new, malloc wrappers,
 * the C++ library's allocator and container templates): it is named by its caller. Frees are
 * counted per heap, of blocks recorded as allocated; the others are counted apart.
 *
 * Sampled memory accesses (mem_access) are replayed with the allocation records, in time order:
 * each is joined to the block live at its address at that moment (the innermost of those that
 * contain it: highest start address, then the latest allocated; any heap) and charged to that
 * block's allocation site, the innermost slice open where the block was allocated. Accesses in
 * no live recorded block are counted apart (the stack, globals, blocks left out by sampling or a
 * threshold, memory the program maps without mmap). Access counts are of samples, not scaled.
 *
 * An access in no live block is joined by where it was taken: in a block's chunk header (the 16
 * bytes before it, where malloc keeps the size) it is that block's; else it waits for its
 * thread's next memory record, and when that is an allocation whose call wrote the address
 * (weft_mem_written_by_call) it is that block's. A fault taken inside an allocation call comes
 * before the call's record (malloc writes the new top chunk's header as the heap grows, calloc
 * zeroes, realloc copies): without this, every first touch of a growing heap is "unknown".
 * The SQLite export (export/sqlite-walk.c) joins the same way.
 *
 * The analysis streams through the trace (two walks, memory-internal.h): what it holds is
 * proportional to what is live at one moment (blocks not yet freed, open slices), to the
 * interned stacks and sites and to its results, never to the number of memory records; the
 * sampled accesses, the weft_heap_usage reports and the slices that allocated are results and
 * are kept. Outputs that want every block's life, or every change of a heap, take them through
 * the hooks as the replay goes instead of collecting them.
 */
#ifndef WEFT_ANALYSIS_MEMORY_H
#define WEFT_ANALYSIS_MEMORY_H

#include "format/reader.h"
#include <stddef.h>
#include <stdint.h>

/* What every output calls the blocks allocated outside any slice (stack 0). */
#define WEFT_MEM_NO_SLICE "[outside any slice]"

/* A slice's own memory traffic (not its children's): keyed by (thread, serial). */
struct weft_mem_slice {
	uint64_t serial;
	uint64_t alloc_count, alloc_bytes; /* blocks allocated while it was the innermost slice */
	uint64_t free_count, freed_bytes;  /* blocks freed while it was (whoever allocated them) */
};

/* A slice stack: interned per process; 0 is the empty stack (outside any slice). */
struct weft_mem_stack {
	uint32_t parent; /* stack id */
	uint32_t site;   /* the innermost slice's site id */
	uint32_t depth;
};

/* Per (heap, stack): totals over the run. */
struct weft_mem_total {
	uint64_t allocs, bytes;     /* allocated here */
	uint64_t frees, freed;      /* of those, freed (by any thread, anywhere) */
	uint64_t live;              /* still live at the end: leaked (bytes) */
	uint64_t leaked_count;
	uint64_t peak;              /* live at the heap's peak */
	uint64_t temporary;         /* freed before the thread allocated anything else */
};

struct weft_mem_point { uint64_t ts, live, peak; };
struct weft_mem_usage { uint64_t ts, live, cached, requested; };

/* A cumulative heap-profile dump: per stack (index = stack id) allocated/freed so far. */
struct weft_mem_dump {
	uint64_t ts;
	int at_peak;
	uint64_t *alloc_bytes, *freed_bytes, *alloc_count, *free_count; /* nstacks each */
};

struct weft_mem_leak { uint64_t addr, size, ts; uint32_t tid, stack; };

/* Sampled accesses charged to one allocation site: those that landed in a block allocated while
 * `site` was the innermost slice (or, with memory_stacks, function) on its thread. */
struct weft_mem_access_site {
	uint32_t site;                 /* site id; 0: blocks allocated outside any slice */
	uint64_t count;                /* accesses over the run */
	struct weft_mem_point *points; /* the cumulative count (live) over time: at most one point
					* per (access span / 50000), the last count of each */
	size_t npoints, pcap;
	uint64_t bucket_start;         /* replay: the bucket being filled */
};

struct weft_mem_heap {
	uint32_t id;           /* 0: the C heap, else the heap's site id */
	const char *name;      /* "malloc", "mmap", or the program's name for it */
	struct weft_mem_total *totals; /* by stack id (nstacks) */
	uint64_t live, peak, peak_ts;
	uint64_t allocs, frees, alloc_bytes, freed_bytes;
	struct weft_mem_point *points; /* live/peak over time, at most one per `resolution` ns */
	size_t npoints, pcap;
	struct weft_mem_usage *usage;  /* weft_heap_usage reports */
	size_t nusage, ucap;
	struct weft_mem_dump *dumps;
	size_t ndumps;
	struct weft_mem_leak *leaks;   /* blocks live at the end */
	size_t nleaks, lcap;
	uint64_t unknown_frees;        /* of blocks never seen allocated */
	uint64_t unrecorded_frees;     /* of blocks left out by threshold/sampling (expected) */
	uint64_t missed_frees;         /* a block allocated at an address still live: its free was not seen */
	uint64_t foreign_frees;        /* munmaps of mappings the program's mmap never made (files, libraries) */
	uint64_t alloc_calls, realloc_calls; /* records of this heap (sampled: as recorded) */
	uint64_t free_calls;           /* frees of blocks recorded as allocated (the rest: counted above) */
	uint64_t peak_event;           /* index (in replay order) of the event that made the peak */
	/* replay: the counter bucket being filled (see point() in memory.c) */
	uint64_t bucket_start, bucket_n, bucket_max, bucket_max_ts, bucket_max_peak;
	uint64_t bucket_last, bucket_last_ts, bucket_last_peak;
};

struct weft_mem_thread {
	struct weft_mem_slice *slices; /* sorted by serial */
	size_t nslices, scap;
};

/* Whether addr is one that the allocation call which returned block [baddr, baddr + size) may have
 * written while it ran: the block, its chunk header (the 16 bytes before it) or the next chunk's
 * header (past the block rounded up to 16 bytes: the new top chunk of a heap that grew for it). */
static inline int weft_mem_written_by_call(uint64_t baddr, uint64_t size, uint64_t addr)
{
	uint64_t end = baddr + ((size + 15) & ~(uint64_t)15) + 32;
	return end > baddr && addr + 16 >= baddr && addr < end;
}
/* Accesses a thread's next record may still join (per thread): past it the oldest are unjoined. */
#define WEFT_MEM_MAX_PENDING 256

#define WEFT_MEM_MAX_HEAPS 256 /* heaps analysed per process; records of more are left out */

struct weft_mem_proc {
	const struct weft_proc *p;
	int has_records;               /* any memory record in this process */
	uint64_t bad_records;          /* of undefined heaps, or beyond WEFT_MEM_MAX_HEAPS: left out */
	struct weft_mem_thread *threads; /* as p->threads */
	struct weft_mem_stack *stacks;
	size_t nstacks, stack_cap;
	struct weft_mem_heap *heaps;
	size_t nheaps;
	uint64_t alloc_calls, free_calls, realloc_calls; /* the C heap's (malloc's) calls, as its heap's */
	uint64_t first_ts, last_ts;
	uint64_t hist[64];             /* allocations by size: bucket k holds [2^(k-1), 2^k) */
	double scale_note;             /* sampling: mean bytes per sample (0: exact) */
	struct weft_mem_point *accesses; /* sampled accesses so far (live = count), per bucket */
	size_t naccesses, acap;
	/* the accesses joined to blocks, by allocation site (in the order of their first access) */
	struct weft_mem_access_site *access_sites;
	size_t naccess_sites, access_site_cap;
	uint64_t joined_accesses;      /* the sum of the sites' counts */
	struct weft_mem_access_site unjoined; /* in no live recorded block (site unused) */
	/* interning table: (parent, site) -> stack id */
	uint64_t *ikeys;
	uint32_t *ivals;
	size_t icap;
};

struct weft_mem {
	struct weft_mem_proc *procs; /* as t->procs */
	size_t nprocs;
	uint64_t big_alloc;          /* allocations at least this big are also instants */
};

/* One block's life, for exporters that list every block (weft export): given when it is freed,
 * and for what is still live when the process's records end. */
struct weft_mem_block_info {
	size_t proc;                    /* index in t->procs */
	uint32_t heap;                  /* 0 the C heap, else the heap's site id */
	unsigned fn;                    /* enum weft_mem_fn of the allocation */
	uint64_t addr, size;            /* size as requested (sampling: not scaled) */
	uint64_t alloc_ts, free_ts;     /* ns; free_ts 0: never freed */
	size_t alloc_thread, free_thread; /* indices in p->threads; free_thread SIZE_MAX: never freed */
	uint64_t alloc_serial, free_serial; /* innermost slices (walker serials), 0: none */
	uint32_t alloc_site;            /* the innermost slice's (or frame's) site id, 0: none */
	uint64_t bytes;                 /* size as the heap's figures count it (sampling: scaled) */
};
typedef void (*weft_mem_block_fn)(void *ud, const struct weft_mem_block_info *b);

/* A change of a heap's live bytes by one block, for outputs that follow them over time without
 * holding every block (weft plot heap): given as the replay goes, in time order, +bytes at an
 * allocation and -bytes at its free (bytes as the heap's figures count them). Blocks of no bytes
 * give none. */
struct weft_mem_step {
	size_t proc;     /* index in t->procs */
	uint32_t heap;   /* 0 the C heap, else the heap's site id */
	uint32_t site;   /* the block's allocation site (as weft_mem_block_info's), 0: none */
	uint64_t ts;     /* ns */
	int64_t delta;   /* +bytes allocated, -bytes freed */
};
typedef void (*weft_mem_step_fn)(void *ud, const struct weft_mem_step *s);

/* What a streaming output is given during the analysis (each may be NULL). */
struct weft_mem_hooks {
	weft_mem_block_fn block;
	weft_mem_step_fn step;
	void *ud;
};

/* Allocations at least this big are also instants in a .pftrace (default 1 MiB; the CLI's
 * convert --large-alloc sets it before converting). */
extern uint64_t weft_mem_large_alloc;

/* Analyse every process of t (memory records, named heaps). Returns 0 and *out (free with
 * weft_mem_free), or -ENOMEM with a reason. A trace without memory records gives procs with
 * has_records 0. */
int weft_mem_analyze(const struct weft_trace *t, struct weft_mem **out, char *err, size_t errlen);
/* The same, calling fn for every block's life (in the order they end; the live ones last). */
int weft_mem_analyze_blocks(const struct weft_trace *t, weft_mem_block_fn fn, void *ud, struct weft_mem **out,
			    char *err, size_t errlen);
/* The same, with both hooks. */
int weft_mem_analyze_hooks(const struct weft_trace *t, const struct weft_mem_hooks *hk, struct weft_mem **out,
			   char *err, size_t errlen);
void weft_mem_free(struct weft_mem *m);

/* The process's analysis, or NULL. */
const struct weft_mem_proc *weft_mem_for(const struct weft_mem *m, const struct weft_proc *p);
/* A slice's own figures (thread = index in p->threads), or NULL when it had none. */
const struct weft_mem_slice *weft_mem_slice(const struct weft_mem_proc *mp, size_t thread, uint64_t serial);
/* Why process pid (0: any) has no memory records to show, in one line (no allocation was sampled,
 * none reached the threshold, the program's own malloc came first, or memory was not recorded)
 * written into buf; returns buf. */
const char *weft_mem_why_none(const struct weft_trace *t, int pid, char *buf, size_t n);
/* The heap's display name for counters: "heap" for the C heap, else "heap NAME". */
const char *weft_mem_fn_name(unsigned fn);

#endif
