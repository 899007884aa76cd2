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

/* The CHUNK_INDEX record's payload (72 bytes). Depth counts the slices open on the thread's own
 * track: a BEGIN on track 0 or a function entry adds one, an END on track 0 or a function exit
 * takes one away. */
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

/* Fills e's times, depth and flags from a chunk's records (whole records of nwords words);
 * the caller sets tid, file, seq and offset. One pass over the record headers. */
static inline void weft_index_scan(const uint64_t *w, size_t nwords, struct weft_index_rec *e)
{
	uint64_t t0 = UINT64_MAX, t1 = 0, n0 = UINT64_MAX, n1 = 0;
	int32_t depth = 0, low = 0;
	uint32_t flags = 0;
	for (size_t i = 0; i + 2 <= nwords;) {
		uint64_t h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (i + 2 + extra > nwords)
			break;
		switch (type) {
		case WEFT_R_BEGIN:
			if (weft_rec_track(h)) {
				flags |= WEFT_IX_TRACKS;
				break;
			}
			/* fall through */
		case WEFT_R_FUNC_ENTER:
			depth++;
			break;
		case WEFT_R_END:
			if (weft_rec_track(h)) {
				flags |= WEFT_IX_TRACKS;
				break;
			}
			/* fall through */
		case WEFT_R_FUNC_EXIT:
			if (--depth < low)
				low = depth;
			break;
		case WEFT_R_COUNTER_I64:
		case WEFT_R_COUNTER_F64:
			flags |= WEFT_IX_COUNTERS;
			break;
		case WEFT_R_ASYNC_BEGIN:
		case WEFT_R_ASYNC_END:
			flags |= WEFT_IX_ASYNC;
			break;
		default:
			break;
		}
		if (weft_rec_time_is_ns(type)) {
			uint64_t a = w[i], b = a;
			if (type == WEFT_R_COMPLETE && extra && w[i + 2] > b)
				b = w[i + 2];
			if (a < n0)
				n0 = a;
			if (b > n1)
				n1 = b;
		} else if (weft_rec_has_ticks(type)) {
			if (w[i] < t0)
				t0 = w[i];
			if (w[i] > t1)
				t1 = w[i];
		}
		i += 2 + extra;
	}
	e->first_ticks = t0;
	e->last_ticks = t1;
	e->first_ns = n0;
	e->last_ns = n1;
	e->depth_delta = depth;
	e->depth_min = low;
	e->flags = flags;
	e->zero = 0;
}

#endif
