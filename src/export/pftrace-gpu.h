/*
 * pftrace-gpu.h - the GPU collector's part of a .pftrace (pftrace-gpu.c), called by pftrace.c.
 * `mix` is pftrace.c's uuid hash.
 */
#ifndef WEFT_PFTRACE_GPU_H
#define WEFT_PFTRACE_GPU_H

#include "analysis/gpu.h"
#include "export/pb.h"

/* The track of GPU `index` (the parent of its streams' tracks and of its NVML counters). */
static inline uint64_t weft_pf_gpu_uuid(uint64_t (*mix)(uint64_t, uint64_t), unsigned index)
{
	return mix(20, index);
}

/* Descriptors (sequence 1) of every GPU with activity, but those whose described[index] is
 * set (already described by the system part; described may be NULL). */
void weft_pf_gpu_tracks(struct pb *b, const struct weft_gpu *g, uint64_t (*mix)(uint64_t, uint64_t),
			const unsigned char *described);
/* One process's kernels, copies and memsets on sequence seq (its stream tracks described on
 * the way); drain(ctx) after each few packets. */
void weft_pf_gpu_events(struct pb *b, const struct weft_gpu *g, const struct weft_gpu_proc *gp, uint32_t seq,
			uint64_t (*mix)(uint64_t, uint64_t), void (*drain)(void *ctx), void *ctx);

#endif
