/*
 * chunkindex.h - the time index of a trace's chunks (format 1.8). For each chunk the runtime
 * writes one CHUNK_INDEX metadata record (lib/chunkindex.c): where the chunk is, whose it is,
 * the times its records span, and how the thread's slice depth moves through it. A reader asked
 * for a time window (format/window.c) then finds the window's chunks, and the few earlier chunks
 * holding the begins of the slices still open at the window's start, without decoding the rest.
 * weft_index_scan computes an entry from a chunk's records (absolute timestamps, before delta
 * coding): the runtime on the chunk it writes, a reader on a chunk that has no entry (a trace
 * written before 1.8, or cut short before its index records).
 */
#ifndef WEFT_CHUNKINDEX_H
#define WEFT_CHUNKINDEX_H

#include <stddef.h>
#include <stdint.h>
#include "format.h"

#define WEFT_IX_COUNTERS 0x1u /* the chunk holds counter records (a window starts with their last values) */
#define WEFT_IX_TRACKS 0x2u   /* ... slices on named tracks */
#define WEFT_IX_ASYNC 0x4u    /* ... async slices */
#define WEFT_IX_LEAF 0x8u     /* ... LEAF records (1.12; the writer flags the chunk WEFT_CHUNK_LEAF) */
#define WEFT_IX_FUNCS 0x10u   /* (1.13) the record's tail lists the chunk's function addresses (funcset.h) */
#define WEFT_IX_JUMPS 0x20u   /* (1.15) ... longjmp records: its depths count the exits they skip as open */

/* The CHUNK_INDEX record's payload (72 bytes; with WEFT_IX_FUNCS the chunk's function addresses
 * follow it, funcset.h). Depth counts the slices open on the thread's own track: a BEGIN on
 * track 0 or a function entry adds one, an END on track 0 or a function exit takes one away. */
struct weft_index_rec {
	uint32_t tid;
	uint32_t file;        /* the events file's writer index K (P-K.wevents) */
	uint64_t seq;         /* the chunk header's seq */
	uint64_t offset;      /* of the chunk's frame in that file */
	uint64_t first_ticks; /* the first and last record timed in clock ticks (first > last: none) */
	uint64_t last_ticks;
	uint64_t first_ns;    /* ... timed in ns (COMPLETE and its end, ACCESS, SCHED, SAMPLE) */
	uint64_t last_ns;
	int32_t depth_delta;  /* depth at the chunk's end minus depth at its start */
	int32_t depth_min;    /* the lowest depth inside the chunk, relative to its start (<= 0) */
	uint32_t flags;       /* WEFT_IX_* */
	uint32_t zero;
};

/* Is the record's word0 a time in ns rather than in ticks? */
static inline int weft_rec_time_is_ns(unsigned type)
{
	return type == WEFT_R_COMPLETE || type == WEFT_R_ACCESS || type == WEFT_R_SCHED || type == WEFT_R_SAMPLE;
}

/* Has the record a time of its own (ticks or ns)? Arguments, flows, stacks and CPUMEM belong
 * to the event next to them. */
static inline int weft_rec_is_timed(unsigned type)
{
	return weft_rec_has_ticks(type) || weft_rec_time_is_ns(type);
}

/* What a record type does to the index (weft_index_scan): its depth change, its flag, and
 * whether word0 is a time in ticks (1) or in ns (2). Tables, not branches: the scan runs over
 * every record a writer writes. */
#define WEFT__IX_TYPES 256 /* every type a header can name: unknown ones do nothing */
static const int8_t weft__ix_depth[WEFT__IX_TYPES] = {
	[WEFT_R_BEGIN] = 1, [WEFT_R_END] = -1, [WEFT_R_FUNC_ENTER] = 1, [WEFT_R_FUNC_EXIT] = -1};
static const uint8_t weft__ix_flag[WEFT__IX_TYPES] = {
	[WEFT_R_COUNTER_I64] = WEFT_IX_COUNTERS, [WEFT_R_COUNTER_F64] = WEFT_IX_COUNTERS,
	[WEFT_R_ASYNC_BEGIN] = WEFT_IX_ASYNC, [WEFT_R_ASYNC_END] = WEFT_IX_ASYNC, [WEFT_R_LEAF] = WEFT_IX_LEAF,
	[WEFT_R_LONGJMP] = WEFT_IX_JUMPS};
static const uint8_t weft__ix_time[WEFT__IX_TYPES] = {
	[WEFT_R_BEGIN] = 1, [WEFT_R_END] = 1, [WEFT_R_INSTANT] = 1, [WEFT_R_COUNTER_I64] = 1,
	[WEFT_R_COUNTER_F64] = 1, [WEFT_R_ASYNC_BEGIN] = 1, [WEFT_R_ASYNC_END] = 1, [WEFT_R_COMPLETE] = 2,
	[WEFT_R_DROPPED] = 1, [WEFT_R_ASYNC_INSTANT] = 1, [WEFT_R_FUNC_ENTER] = 1, [WEFT_R_FUNC_EXIT] = 1,
	[WEFT_R_SETJMP] = 1, [WEFT_R_LONGJMP] = 1, [WEFT_R_ALLOC] = 1, [WEFT_R_FREE] = 1,
	[WEFT_R_REALLOC] = 1, [WEFT_R_HEAP_USAGE] = 1, [WEFT_R_ACCESS] = 2, [WEFT_R_SCHED] = 2,
	[WEFT_R_SAMPLE] = 2, [WEFT_R_LEAF] = 1};

/* The entry as it accumulates over a chunk's records: weft_index_scan's walk, and the writers'
 * packing walk (pack.h), which computes it on the way. */
struct weft__ix_acc {
	uint64_t t0, t1, n0, n1;
	int32_t depth, low;
	uint32_t flags;
	/* optional (the runtime's live view, src/lib/live.c; NULL elsewhere): the record index of
	 * the last slice opened at each depth relative to the chunk's start, opens[r +
	 * WEFT_IX_OPENS] for r in [-WEFT_IX_OPENS, WEFT_IX_OPENS); at the end, those of the levels
	 * [low, depth) are the chunk's slices still open. jumps: a SETJMP or LONGJMP was seen (a
	 * longjmp closes levels the depth count does not see) */
	uint32_t *opens;
	int jumps;
};
#define WEFT_IX_OPENS 256

static inline void weft__ix_init(struct weft__ix_acc *a)
{
	a->t0 = a->n0 = UINT64_MAX;
	a->t1 = a->n1 = 0;
	a->depth = a->low = 0;
	a->flags = 0;
	a->opens = 0;
	a->jumps = 0;
}

/* One record: its header h, type and extra words; w + i is the record (word0 its time). */
static inline __attribute__((always_inline)) void weft__ix_step(struct weft__ix_acc *a, const uint64_t *w,
								size_t i, uint64_t h, unsigned type,
								unsigned extra)
{
	int dd = weft__ix_depth[type];
	if (__builtin_expect(dd && weft_rec_track(h) && type <= WEFT_R_END, 0)) {
		a->flags |= WEFT_IX_TRACKS; /* a named track's slice: not the thread's own depth */
		dd = 0;
	}
	if (__builtin_expect(a->opens != 0, 0)) {
		if (dd > 0 && (uint32_t)(a->depth + WEFT_IX_OPENS) < 2 * WEFT_IX_OPENS)
			a->opens[a->depth + WEFT_IX_OPENS] = (uint32_t)i;
		a->jumps |= type == WEFT_R_SETJMP || type == WEFT_R_LONGJMP;
	}
	a->depth += dd;
	a->low = a->depth < a->low ? a->depth : a->low;
	a->flags |= weft__ix_flag[type];
	unsigned tk = weft__ix_time[type];
	uint64_t v = w[i];
	if (__builtin_expect(tk == 2, 0)) {
		uint64_t e = type == WEFT_R_COMPLETE && extra && w[i + 2] > v ? w[i + 2] : v;
		a->n0 = v < a->n0 ? v : a->n0;
		a->n1 = e > a->n1 ? e : a->n1;
	} else if (tk) {
		/* a LEAF ends its duration (the extra word) after its begin */
		uint64_t e = __builtin_expect(type == WEFT_R_LEAF, 0) && extra ? v + w[i + 2] : v;
		a->t0 = v < a->t0 ? v : a->t0;
		a->t1 = e > a->t1 ? e : a->t1;
	}
}

static inline void weft__ix_done(const struct weft__ix_acc *a, struct weft_index_rec *e)
{
	e->first_ticks = a->t0;
	e->last_ticks = a->t1;
	e->first_ns = a->n0;
	e->last_ns = a->n1;
	e->depth_delta = a->depth;
	e->depth_min = a->low;
	e->flags = a->flags;
	e->zero = 0;
}

/* Fills e's times, depth and flags from a chunk's records (whole records of nwords words);
 * the caller sets tid, file, seq and offset. One pass over the record headers. */
static inline void weft_index_scan(const uint64_t *w, size_t nwords, struct weft_index_rec *e)
{
	struct weft__ix_acc a;
	weft__ix_init(&a);
	for (size_t i = 0; i + 2 <= nwords;) {
		uint64_t h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (i + 2 + extra > nwords)
			break;
		weft__ix_step(&a, w, i, h, type, extra);
		i += 2 + extra;
	}
	weft__ix_done(&a, e);
}

#endif
