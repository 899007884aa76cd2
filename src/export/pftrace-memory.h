/*
 * pftrace-memory.h - the memory tracks, slice args and heap profiles of a .pftrace
 * (pftrace-memory.c), called by pftrace.c. `mix` is pftrace.c's uuid hash.
 */
#ifndef WEFT_PFTRACE_MEMORY_H
#define WEFT_PFTRACE_MEMORY_H

#include "analysis/memory.h"
#include "export/pb.h"

/* Counter track descriptors of a process's heaps (on sequence 1, under the process). */
void weft_pf_mem_tracks(struct pb *b, const struct weft_mem_proc *mp, uint64_t proc_uuid,
			uint64_t (*mix)(uint64_t, uint64_t));
/* Their values, on sequence seq; drain(ctx) after each few packets. */
void weft_pf_mem_counters(struct pb *b, const struct weft_mem_proc *mp, uint32_t seq,
			  uint64_t (*mix)(uint64_t, uint64_t), void (*drain)(void *ctx), void *ctx);
/* A slice's own figures as debug annotations of the TrackEvent being written. */
void weft_pf_mem_slice_args(struct pb *b, const struct weft_mem_slice *s);
/* The heap profiles, one sequence per heap from seq on; returns how many it used. */
uint32_t weft_pf_mem_profiles(struct pb *b, const struct weft_mem_proc *mp, uint32_t seq,
			      void (*drain)(void *ctx), void *ctx);

#endif
