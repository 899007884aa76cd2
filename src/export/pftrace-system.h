/*
 * pftrace-system.h - the system sampler's part of a .pftrace (pftrace-system.c), called by
 * pftrace.c. `mix` is pftrace.c's uuid hash, proc_uuid its process track uuid.
 */
#ifndef WEFT_PFTRACE_SYSTEM_H
#define WEFT_PFTRACE_SYSTEM_H

#include "analysis/system.h"
#include "export/pb.h"

/* Counter track descriptors (sequence 1): per process, and the global power tracks once. */
void weft_pf_sys_tracks(struct pb *b, const struct weft_sys *s, uint64_t (*mix)(uint64_t, uint64_t),
			uint64_t (*proc_uuid)(int pid));
/* One process's values on sequence seq (counters, and CPU frequency as ftrace events);
 * drain(ctx) after each few packets. */
void weft_pf_sys_counters(struct pb *b, const struct weft_sys_proc *sp, uint32_t seq,
			  uint64_t (*mix)(uint64_t, uint64_t), void (*drain)(void *ctx), void *ctx);
/* A slice's CPU time and RSS (weft_sys_slice) as debug annotations of the TrackEvent being
 * written, when the slice is long enough. */
/* A cpu_mem_exact= slice's readings: the thread's own CPU time deltas, the RSS at its end (left
 * out when 0: statm could not be read). */
void weft_pf_exact_slice_args(struct pb *b, uint64_t user_ns, uint64_t sys_ns, uint64_t rss_bytes);
void weft_pf_sys_slice_args(struct pb *b, const struct weft_sys_proc *sp, uint64_t begin, uint64_t end);

#endif
