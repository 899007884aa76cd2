/*
 * access-internal.h - what the rooms of memory access sampling and watchpoints share
 * (mem_access=, watch=; the overview is at the top of collect/access.c):
 *   access-ring.c  each thread's perf rings: opening them (a sampling source's, a
 *                  watchpoint's), the list the sampler drains, walking a ring's records,
 *                  closing; and weft's own extent, whose samples are left out;
 *   access.c       the sampler thread and the drain into ACCESS records, threads the program
 *                  creates (the pthread_create wrapper), fork, the totals, and the mem_access
 *                  source (access_open picks PEBS, IBS or page faults);
 *   watch.c        the watch source: the self-test, each spec's address, the WATCH totals.
 * Both sources run on the same rings, sampler and fork handlers (started once, whichever
 * opens first).
 */
#ifndef WEFT_COLLECT_ACCESS_INTERNAL_H
#define WEFT_COLLECT_ACCESS_INTERNAL_H

#include "lib/internal.h"
#include "collect/perf_sample.h"
#include <linux/perf_event.h>
#include <pthread.h>

#define RING_PAGES 64 /* data pages per thread (256 KiB): ~5000 samples between drains */

struct ring {
	struct ring *next;
	int fd, aux_fd; /* aux_fd: the mem-loads-aux group leader, or -1 */
	int src;
	uint64_t sample_type;
	uint32_t tid;
	void *base;
	size_t size; /* 1 + RING_PAGES pages */
	int watch;      /* the watchpoint's index, or -1 for a sampling source */
	int monotonic;  /* its times are CLOCK_MONOTONIC (breakpoint events refuse CLOCK_BOOTTIME) */
	struct ring *thread_next; /* the same thread's other rings (ring_key holds the newest) */
	_Atomic int ended; /* the thread is gone: drain once more, then close */
};

/* ---- access-ring.c ---- */

/* Guarded by weft_acc__rings_lock; the sampler drains every ring on the list. */
WEFT_HIDDEN extern pthread_mutex_t weft_acc__rings_lock;
WEFT_HIDDEN extern struct ring *weft_acc__rings;
WEFT_HIDDEN extern pthread_key_t weft_acc__ring_key; /* a thread's rings, marked ended by the key's destructor */
/* What each thread opens (0: none): page faults, or PEBS loads + stores, or IBS. Set by
 * access_open at start (mem_access=), read-only after. */
WEFT_HIDDEN extern int weft_acc__sources[2];
/* perf_event_open failures of threads' rings (a sampling source's; a watchpoint's) */
WEFT_HIDDEN extern _Atomic uint64_t weft_acc__open_failures, weft_acc__watch_open_failures;
WEFT_HIDDEN extern int weft_acc__first_errno, weft_acc__watch_first_errno; /* why the first of each failed */
WEFT_HIDDEN extern _Atomic uint64_t weft_acc__own_samples; /* samples left out as weft's own */

WEFT_HIDDEN void weft_acc__make_key(void); /* once, before a thread's first ring */
/* This thread's rings of the sampling sources (sources), or of the watchpoints (watches). */
WEFT_HIDDEN void weft_acc__open_sources(uint32_t tid);
WEFT_HIDDEN void weft_acc__open_watches(uint32_t tid);
/* The current thread's rings of both (called on the thread itself). */
WEFT_HIDDEN void weft_acc__watch_this_thread(void);
/* mapped: 0 for a fork child's inherited rings, which the kernel did not copy (perf mappings
 * are VM_DONTCOPY): their addresses are not the child's to unmap */
WEFT_HIDDEN void weft_acc__free_ring(struct ring *r, int mapped);
/* Closes this thread's watchpoint rings (at start, when one of them could not be opened). */
WEFT_HIDDEN void weft_acc__drop_watch_rings(void);
/* Walks the ring's records from its tail to its head, each with its body (up to 512 bytes)
 * copied out, and gives the space back. */
WEFT_HIDDEN void weft_acc__ring_walk(struct ring *r, void (*on)(struct ring *r, const struct perf_event_header *eh,
						    const unsigned char *body, size_t len, void *ud),
			 void *ud);
/* weft's own memory: found once at start; then whether a thread created from creator is
 * weft's, and whether a sample is in weft's code or data (counted, then left out). */
WEFT_HIDDEN void weft_acc__find_own_extent(void);
WEFT_HIDDEN int weft_acc__own_thread(const void *creator);
WEFT_HIDDEN int weft_acc__own_sample(const struct weft_perf_sample *s);

/* ---- watch.c ---- */

/* watch=: set at start by watch_open (before any ring of theirs exists), read-only after */
struct weft_acc_watch { uint64_t addr; unsigned len; int src; char name[128]; };
WEFT_HIDDEN extern struct weft_acc_watch weft_acc__watches[WEFT_MAX_WATCH];
WEFT_HIDDEN extern int weft_acc__nwatches;
WEFT_HIDDEN extern _Atomic uint64_t weft_acc__watch_hits[WEFT_MAX_WATCH], weft_acc__watch_lost;
WEFT_HIDDEN void weft_acc__write_watch_totals(void); /* the WATCH metadata record, when watching */

/* ---- access.c: the sampler both sources share ---- */

WEFT_HIDDEN void weft_acc__begin(void);        /* sampling starts in this process (once) */
WEFT_HIDDEN void weft_acc__stop(void);         /* the sampler's last drain, the totals */
WEFT_HIDDEN void weft_acc__fork_prepare(void);
WEFT_HIDDEN void weft_acc__fork_parent(void);
WEFT_HIDDEN void weft_acc__fork_child(void);
WEFT_HIDDEN void weft_access_drain(void);

#endif
