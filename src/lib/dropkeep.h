/*
 * dropkeep.h - what a drop leaves open, kept (thread.c's drop mode).
 *
 * When a thread has no chunk to write into (overflow=drop with every chunk taken, or the flight
 * recorder's queue drained by a snapshot) its events are dropped. The ones that begin or end a
 * slice are still seen: each dropped event of at most WEFT_DROPKEEP_REC bytes is written into
 * the thread's bucket instead of nowhere, and looked at on the thread's next slow path. Of
 * those, the ones that still matter when the drop ends are kept - the BEGINs and function
 * entries whose slices are still open then, and the ENDs and function exits of slices begun
 * before the drop - in order, with their times, and written right after the DROPPED record
 * in the thread's next chunk. So a converter closes what closed during the drop and opens
 * what opened in it: the nesting after a drop is the program's, not a stale level left open
 * (a lost exit) or a level closed by the wrong exit (a lost entry). Closes are matched as the
 * converter's walker matches them (model.c): by track (functions on the thread's own, 0) and
 * id, the levels above on that track closed with it. Arguments and everything else dropped
 * stay dropped (counted). Bounded: WEFT_DROPKEEP_WORDS; what does not fit is dropped as before.
 */
#ifndef WEFT_DROPKEEP_H
#define WEFT_DROPKEEP_H

#include <stddef.h>
#include <stdint.h>

#define WEFT_DROPKEEP_REC 64    /* bytes: the largest dropped record looked at */
#define WEFT_DROPKEEP_WORDS 256 /* kept records, at most (2 KiB) */

struct weft_dropkeep {
	uint64_t bucket[WEFT_DROPKEEP_REC / 8]; /* the last dropped record, written by the program */
	int in_bucket;                          /* the bucket was handed out: look at it */
	uint64_t since;                         /* ticks: when the drop began */
	size_t nkeep;                           /* words */
	uint64_t keep[WEFT_DROPKEEP_WORDS];
};

/* The dropped record written into the bucket (n words) is looked at: a begin or end kept or
 * matched against the kept ones. */
void weft_dropkeep_note(struct weft_dropkeep *k, const uint64_t *w, size_t n);
/* The events the kept records stand for (each a begin or an end). */
uint64_t weft_dropkeep_events(const struct weft_dropkeep *k);
/* The drop ends: its DROPPED record (when `lost` events were lost: ticks, header, count) and
 * the kept records are written at out (room for 3 + WEFT_DROPKEEP_WORDS words); returns the
 * words written. The kept records are cleared. */
size_t weft_dropkeep_write(struct weft_dropkeep *k, uint64_t *out, uint64_t lost);

#endif
