/*
 * weft_fastpath.h - the only hot code in weft. Included by weft.h; not an API of its own.
 *
 * Every event is a record of 8-byte words appended to the calling thread's current chunk:
 *   word0  timestamp in clock ticks (or a value, for records that attach to an event)
 *   word1  header: id (bits 0-31) | type (32-39) | extra words (40-47) | track (48-63)
 *   word2.. extra words (counter value, async id, end time, string bytes)
 * A call site owns a static `struct weft_site`; its `state` byte is the one predicated load that
 * decides whether anything happens (WEFT__SITE_ON) or the slow path must look (unregistered,
 * disabled, filtered). Reserving space is a compare against the chunk end; when the chunk is full
 * (or the thread has none yet) weft__reserve_slow() hands it to the writers and returns a fresh
 * one, or NULL when the event is dropped (counted there). Committing is one release store of the
 * new position: a plain store on x86-64, stlr on aarch64, so a flusher on another thread that
 * acquires `pos` sees every byte before it.
 */
#ifndef WEFT_FASTPATH_H
#define WEFT_FASTPATH_H

#include <stddef.h>
#include <stdint.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_API __attribute__((visibility("default")))
/* Every inline helper of the headers: never instrumented by -finstrument-functions (weft's own
 * helpers would otherwise be recorded as the program's functions). */
#define WEFT__INLINE static inline __attribute__((no_instrument_function, unused))

/* Record types (word1 bits 32-39). The on-disk meaning is specified in docs/format.md. */
enum weft_rec_type {
	/* an END may carry one extra word (format 1.4): flags, WEFT_END_* below */
	WEFT_R_BEGIN = 1, WEFT_R_END = 2, WEFT_R_INSTANT = 3,
	WEFT_R_COUNTER_I64 = 4, WEFT_R_COUNTER_F64 = 5,
	WEFT_R_ASYNC_BEGIN = 6, WEFT_R_ASYNC_END = 7, WEFT_R_COMPLETE = 8,
	WEFT_R_ARG_I64 = 9, WEFT_R_ARG_U64 = 10, WEFT_R_ARG_F64 = 11, WEFT_R_ARG_BOOL = 12,
	WEFT_R_ARG_PTR = 13, WEFT_R_ARG_STR = 14,
	WEFT_R_FLOW_OUT = 15, WEFT_R_FLOW_IN = 16, WEFT_R_DROPPED = 17,
	WEFT_R_ASYNC_INSTANT = 18,
	/* function entry/exit (-finstrument-functions): id | track << 32 is the 48-bit address */
	WEFT_R_FUNC_ENTER = 19, WEFT_R_FUNC_EXIT = 20,
	/* setjmp / longjmp on a jmp_buf (address packed as for FUNC): the walker unwinds the
	 * slices a longjmp skips, at the longjmp */
	WEFT_R_SETJMP = 21, WEFT_R_LONGJMP = 22,
	/* memory (format 1.3): id = heap (0 the C heap, else a heap site), track = the function
	 * (enum weft_mem_fn); extra words: ALLOC addr, size; FREE addr; REALLOC old addr, new
	 * addr, new size; HEAP_USAGE live, cached, requested (a named heap's own report) */
	WEFT_R_ALLOC = 23, WEFT_R_FREE = 24, WEFT_R_REALLOC = 25, WEFT_R_HEAP_USAGE = 26,
	/* the return addresses of the allocation before it (memory_stacks=1), innermost first:
	 * word0 is the number of frames, the extra words the addresses */
	WEFT_R_STACK = 27,
	/* a sampled memory access (format 1.3; written by the preload runtime's sampler thread):
	 * word0 the time in CLOCK_BOOTTIME ns (not ticks), id the tid that made it, track the
	 * source (1 page fault: a first touch); extra words: data address, instruction address */
	WEFT_R_ACCESS = 28,
	/* a scheduling event (format 1.5; written by the preload runtime's sched readers,
	 * sched=1): word0 the time in CLOCK_BOOTTIME ns (not ticks), id the CPU, track the kind
	 * (enum weft_sched_kind in src/collect/sched_tp.h; docs/format.md lists the extra words) */
	WEFT_R_SCHED = 29,
	/* a system sampler reading (format 1.5; written by the runtime's sampler thread,
	 * collect/sampler.c): word0 the time in CLOCK_BOOTTIME ns (not ticks), id the channel (a
	 * SYS_CHANNEL metadata record), one extra word: the reading */
	WEFT_R_SAMPLE = 30,
	/* a slice's exact CPU time and RSS (format 1.5; cpu_mem_exact=): written by the thread
	 * right after the BEGIN (track 0) and right before the END (track 1) of a slice whose name
	 * matches the pattern; id the site, word0 the RSS in bytes, extra words: the thread's
	 * user and system CPU time in ns (getrusage RUSAGE_THREAD) */
	WEFT_R_CPUMEM = 31,
	/* GPU activity (format 1.6; gpu=1, collect/cupti.c): a kernel, copy or memset as CUPTI
	 * reported it, written by the thread CUPTI hands its buffers to. word0 the device start
	 * in CUPTI's clock (ns, not weft's: GPU_CLOCK metadata records map it), id the CUPTI
	 * correlation id, track the kind (enum weft_gpu_kind in src/format/format.h; docs/format.md
	 * lists the extra words) */
	WEFT_R_GPU = 32,
	/* a slice with nothing recorded inside it (format 1.12): a BEGIN and its END in one record,
	 * for the reader the same two events. word0 the begin's ticks, id the site (track 0), one
	 * extra word: the ticks from the begin to the end. Written by weft__end_leaf: an END that
	 * finds its own BEGIN the last record of the chunk turns that BEGIN into this record. */
	WEFT_R_LEAF = 33,
};

/* Flags of an END's extra word. */
enum weft_end_flag {
	WEFT_END_EXCEPTION = 1, /* the scope was left by an exception (a Python frame that raised) */
};

/* Which function made a memory record (its track field). */
enum weft_mem_fn {
	WEFT_MEM_MALLOC = 1, WEFT_MEM_CALLOC = 2, WEFT_MEM_REALLOC = 3, WEFT_MEM_REALLOCARRAY = 4,
	WEFT_MEM_MEMALIGN = 5, WEFT_MEM_POSIX_MEMALIGN = 6, WEFT_MEM_ALIGNED_ALLOC = 7,
	WEFT_MEM_VALLOC = 8, WEFT_MEM_PVALLOC = 9, WEFT_MEM_FREE = 10, WEFT_MEM_MMAP = 11,
	WEFT_MEM_MUNMAP = 12, WEFT_MEM_MREMAP = 13, WEFT_MEM_HEAP_API = 14,
};

/* EXACT: records, and its slices carry CPUMEM records (cpu_mem_exact=); like NEW it takes the
 * out-of-line weft__site_check, which returns 2 for it, so ON stays one load and a branch. */
enum weft_site_state { WEFT__SITE_NEW = 0, WEFT__SITE_ON = 1, WEFT__SITE_OFF = 2, WEFT__SITE_EXACT = 3 };
enum weft_site_kind {
	WEFT_KIND_EVENT = 0, WEFT_KIND_COUNTER = 1, WEFT_KIND_ARG = 2, WEFT_KIND_TRACK = 3,
	WEFT_KIND_HEAP = 4, /* a named heap (weft_heap) */
};

/* One per call site (static storage). `state` and `id` are written by the registry (slow path,
 * under its lock, and again whenever categories or filters change); read racily by the hot path,
 * which is harmless: a stale state only delays a change by one event. */
struct weft_site {
	uint8_t state;
	uint8_t kind;
	uint8_t counter_is_double;
	uint8_t pad_;
	uint32_t id;
	const char *name;
	const char *category;
	const char *unit; /* counters only */
	struct weft_site *next; /* registry list */
};

/* The calling thread's write window. Written only by its own thread, except `pos` is read
 * (acquire) by the flusher at exit. Initial-exec TLS: one %fs-relative access, no call. */
struct weft__tls {
	char *pos;
	char *end;
	char *start; /* of the current chunk: lets a record be taken back (func_min=) */
	int busy;    /* between reserve and commit: a signal handler's event then is dropped */
	/* counters= (format 1.5): how many counter values this thread's slice records carry (0:
	 * none, the default). Written by the thread itself when its counter group opens (preload
	 * runtime: at start for the main thread, before a new thread's code runs for the others);
	 * read by weft__slice(), on the same cache line as pos. */
	int nctr;
};
extern WEFT_API __thread struct weft__tls weft__tls __attribute__((tls_model("initial-exec")));

WEFT_API int weft__site_check(struct weft_site *s);
/* weft__site_check for a call that emits `events` events at once (a scope: its begin and its
 * end): where they are not recorded (after weft_stop, or a failed start) all are counted. */
WEFT_API int weft__site_check_n(struct weft_site *s, unsigned events);
WEFT_API void weft__lost(void); /* counts an event dropped inside a signal handler */
WEFT_API void *weft__reserve_slow(size_t bytes);
WEFT_API uint64_t weft__ticks_fallback(void);
/* A slice record (BEGIN, END, FUNC_ENTER, FUNC_EXIT) with the thread's counter values as extra
 * words (END: a flags word 0 first); out of line, since reading counters is a syscall or rdpmc. */
WEFT_API void weft__slice_ctr(uint64_t hdr);
/* cpu_mem_exact=: a CPUMEM record of site id at a slice's begin (at_end 0: after the BEGIN) or
 * end (1: before the END), read now; out of line (a syscall and a /proc read). */
WEFT_API void weft__cpumem(uint32_t id, unsigned at_end);
/* After the END of an EXACT site's slice (written): trigger= compares its duration there, so a
 * snapshot it asks for comes after the END (out of line; only EXACT sites call it). */
WEFT_API void weft__exact_end(uint32_t id);

WEFT__INLINE uint64_t weft__ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#elif defined(__aarch64__)
	uint64_t v;
	__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	return weft__ticks_fallback();
#endif
}

WEFT__INLINE uint64_t weft__hdr(uint32_t id, unsigned type, unsigned extra, unsigned track)
{
	return (uint64_t)id | ((uint64_t)type << 32) | ((uint64_t)extra << 40) |
	       ((uint64_t)track << 48);
}

/* Is site s recorded? For a call that stands for `events` events (a scope's begin and end),
 * all of which are counted where they are not recorded. */
WEFT__INLINE int weft__on_n(struct weft_site *s, unsigned events)
{
	/* Acquire pairs with the registry's release store of state after id: a plain load on
	 * x86-64, ldarb on aarch64, so a site seen ON always has its id. */
	uint8_t st = __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
	if (__builtin_expect(st == WEFT__SITE_ON, 1))
		return 1;
	if (__builtin_expect(st == WEFT__SITE_OFF, 1))
		return 0; /* disabled: stays inline, one load and two predicted branches */
	return weft__site_check_n(s, events); /* 2: on, with exact CPU and RSS (WEFT__SITE_EXACT) */
}

WEFT__INLINE int weft__on(struct weft_site *s)
{
	return weft__on_n(s, 1);
}


/* Reserve and commit bracket a window in which the thread's write position is in flux. A
 * signal handler that emits on the same thread inside that window finds `busy` set: its event
 * is dropped and counted, instead of overwriting (or, across a chunk switch, corrupting) the
 * interrupted event. Signal fences keep the compiler from moving stores across the flag. */
WEFT__INLINE uint64_t *weft__reserve(size_t bytes)
{
	if (__builtin_expect(weft__tls.busy, 0)) {
		weft__lost();
		return 0;
	}
	weft__tls.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	char *p = weft__tls.pos;
	if (__builtin_expect((size_t)(weft__tls.end - p) < bytes, 0))
		p = (char *)weft__reserve_slow(bytes);
	if (__builtin_expect(p == 0, 0)) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		weft__tls.busy = 0;
	}
	return (uint64_t *)p;
}

WEFT__INLINE void weft__commit(uint64_t *end)
{
	__atomic_store_n(&weft__tls.pos, (char *)end, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	weft__tls.busy = 0;
}

/* Two-word record at time t (read by the caller, before the window opens). */
WEFT__INLINE void weft__rec2_at(uint64_t t, uint64_t hdr)
{
	uint64_t *p = weft__reserve(16);
	if (__builtin_expect(p == 0, 0))
		return;
	p[0] = t;
	p[1] = hdr;
	weft__commit(p + 2);
}

/* Two-word record with the current time: begin, end, instant. The clock is read before the
 * window opens, to keep the window short. */
WEFT__INLINE void weft__rec2(uint64_t hdr)
{
	weft__rec2_at(weft__ticks(), hdr);
}

/* A slice's begin or end: two words, or (counters=) the out-of-line record with the counter
 * values. Counters off costs one load of nctr, beside pos on the same line, and a branch
 * predicted not taken. */
WEFT__INLINE void weft__slice(uint64_t hdr)
{
	if (__builtin_expect(weft__tls.nctr != 0, 0)) {
		weft__slice_ctr(hdr);
		return;
	}
	weft__rec2(hdr);
}

/* Three-word record with the current time: counters, async begin/end. */
WEFT__INLINE void weft__rec3(uint64_t hdr, uint64_t extra)
{
	uint64_t t = weft__ticks();
	uint64_t *p = weft__reserve(24);
	if (__builtin_expect(p == 0, 0))
		return;
	p[0] = t;
	p[1] = hdr;
	p[2] = extra;
	weft__commit(p + 3);
}

/* The end, at time t, of a slice begun by the plain two-word record `begin` (a BEGIN on the
 * thread's own track, without counters=), when that record is the last one of the thread's
 * current chunk (nothing was recorded inside: a leaf call): the record becomes `leaf` (a LEAF,
 * one extra word: the ticks to the end) instead of a second
 * two-word record being written, so a writer packs one record for a leaf. Returns 1 when it is
 * done (or the event was dropped inside a signal handler's), 0 when the caller writes its END.
 * The header is rewritten before the position moves past the new word (release), so a reader
 * of the published records (the live view, a crash's snapshot) sees the begin, the whole leaf,
 * or at worst a leaf whose last word is not yet published, which it drops as cut short. */
WEFT__INLINE int weft__leaf_end(uint64_t t, uint64_t begin, uint64_t leaf)
{
	if (__builtin_expect(weft__tls.busy, 0)) { /* a signal handler's end inside an event */
		weft__lost();
		return 1;
	}
	weft__tls.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uint64_t *p = (uint64_t *)weft__tls.pos;
	if (__builtin_expect(p && (char *)p - 16 >= weft__tls.start && p[-1] == begin &&
			     weft__tls.end - (char *)p >= 8, 1)) {
		p[0] = t > p[-2] ? t - p[-2] : 0;
		/* a published word rewritten: the one store others may read while it happens */
		__atomic_store_n(&p[-1], leaf, __ATOMIC_RELAXED);
		weft__commit(p + 1);
		return 1;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	weft__tls.busy = 0;
	return 0;
}

/* The END of site id's slice on the thread's own track, begun by weft__rec2(BEGIN): a LEAF
 * when nothing was recorded inside it (weft__leaf_end), else a plain two-word END. */
WEFT__INLINE void weft__end_leaf(uint32_t id)
{
	uint64_t t = weft__ticks();
	if (!weft__leaf_end(t, weft__hdr(id, WEFT_R_BEGIN, 0, 0), weft__hdr(id, WEFT_R_LEAF, 1, 0)))
		weft__rec2_at(t, weft__hdr(id, WEFT_R_END, 0, 0));
}

#ifdef __cplusplus
}
#endif
#endif
