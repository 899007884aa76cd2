/*
 * pftrace-gpu.h - the GPU collector's part of a .pftrace (pftrace-gpu.c), called by pftrace.c.
 * `mix` is pftrace.c's uuid hash.
 */
#ifndef WEFT_PFTRACE_GPU_H
#define WEFT_PFTRACE_GPU_H

#include "analysis/gpu.h"
#include "analysis/system.h"
#include "export/pb.h"
#include "export/pftrace-gpu-uuid.h"

/* Descriptors (sequence 1) of every GPU with activity that the system part (NVML) does not
 * describe already (sys may be NULL). */
void weft_pf_gpu_tracks(struct pb *b, const struct weft_gpu *g, const struct weft_sys *sys,
			uint64_t (*mix)(uint64_t, uint64_t));
/* One process's kernels, copies and memsets on sequence seq (its stream tracks described on
 * the way); drain(ctx) after each few packets. */
void weft_pf_gpu_events(struct pb *b, const struct weft_gpu *g, const struct weft_gpu_proc *gp, uint32_t seq,
			uint64_t (*mix)(uint64_t, uint64_t), void (*drain)(void *ctx), void *ctx);

#endif
