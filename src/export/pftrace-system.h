/*
 * pftrace-system.h - the system sampler's part of a .pftrace (pftrace-system.c), called by
 * pftrace.c. `mix` is pftrace.c's uuid hash, proc_uuid its process track uuid.
 */
#ifndef WEFT_PFTRACE_SYSTEM_H
#define WEFT_PFTRACE_SYSTEM_H

#include "analysis/system.h"
#include "export/pb.h"

/* Counter track descriptors (sequence 1): per process, the global power tracks once, and each
 * GPU's track (weft_pf_gpu_track) once with its NVML counter tracks under it. */
void weft_pf_sys_tracks(struct pb *b, const struct weft_sys *s, uint64_t (*mix)(uint64_t, uint64_t),
			uint64_t (*proc_uuid)(int pid));
/* 1 when weft_pf_sys_tracks describes GPU index's track (NVML readings of it that become
 * counters), with NVML's name of it in *name ("" when unknown; name may be NULL); else 0.
 * A part that puts other tracks under the GPU's (the CUPTI streams) describes the track only
 * where this says 0, so each GPU is described once. */
int weft_pf_sys_gpu(const struct weft_sys *s, unsigned index, const char **name);
/* GPU index's track (sequence 1): uuid weft_pf_gpu_uuid (pftrace-gpu-uuid.h), named "GPU N: NAME"
 * ("GPU N" when name is NULL or ""), its children ordered by their sibling_order_rank. */
void weft_pf_gpu_track(struct pb *b, uint64_t (*mix)(uint64_t, uint64_t), unsigned index, const char *name);
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
