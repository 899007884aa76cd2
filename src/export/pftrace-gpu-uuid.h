/*
 * pftrace-gpu-uuid.h - the uuid of a GPU's parent track in a .pftrace ("GPU N: NAME"), shared
 * by the parts that put tracks under it: the system sampler's NVML counters (pftrace-system.c)
 * and the CUPTI streams. `mix` is pftrace.c's uuid hash.
 */
#ifndef WEFT_PFTRACE_GPU_UUID_H
#define WEFT_PFTRACE_GPU_UUID_H

#include <stdint.h>

static inline uint64_t weft_pf_gpu_uuid(uint64_t (*mix)(uint64_t, uint64_t), unsigned index)
{
	return mix(20, index);
}

#endif
