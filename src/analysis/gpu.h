/*
 * gpu.h - what the GPU collector's records mean (analysis/gpu.c): per process, every kernel,
 * copy and memset with its device times mapped onto the trace's clock (CLOCK_BOOTTIME ns)
 * through the GPU_CLOCK points, its resources and its theoretical occupancy; and, when asked,
 * the host CUDA call that launched each one (the slice carrying its FLOW out).
 */
#ifndef WEFT_ANALYSIS_GPU_H
#define WEFT_ANALYSIS_GPU_H

#include "format/reader.h"
#include <stddef.h>
#include <stdint.h>

struct weft_gpu_act {
	unsigned kind;                /* enum weft_gpu_kind */
	uint32_t corr, device, context, stream;
	uint64_t start, end;          /* trace clock ns */
	uint64_t dev_start, dev_end;  /* CUPTI's clock, as recorded */
	/* kernels */
	uint32_t name_site;           /* the process's site of the mangled name */
	uint32_t grid[3], block[3];
	uint32_t regs, static_shared, dynamic_shared, local_per_thread, local_total, shared_executed;
	double occupancy;             /* 0..1; < 0 when the device's properties are unknown */
	/* copies and memsets */
	unsigned copy_kind, src_kind, dst_kind, flags;
	uint32_t value;
	uint64_t bytes;
	/* the earliest activity of its correlation id: it ends the launching call's arrow (a CUDA
	 * graph launch, one call, runs many kernels with its id; the others carry the id only) */
	int flow_end;
	/* its row on its stream: 0, or 1, 2, ... when it overlaps earlier work of the stream still
	 * running (slices of one track must nest): the first row free at its start */
	unsigned lane;
};

/* The host side of a correlation id: the CUDA call's slice begin and its site. */
struct weft_gpu_launch {
	uint32_t corr, site, tid;
	uint64_t ts;
};

struct weft_gpu_proc {
	const struct weft_proc *p;
	struct weft_gpu_act *acts; /* by start time */
	size_t n;
	struct weft_gpu_launch *launches; /* by corr; only when asked for */
	size_t nlaunches;
	/* the clock map: trace ns = base_host + (gpu - base_gpu) * slope; points used, the largest
	 * distance of a used point from the line (ns) */
	uint64_t base_gpu, base_host;
	double slope;
	size_t clock_points;
	double clock_residual_ns;
};
struct weft_gpu {
	struct weft_gpu_proc *procs;
	size_t nprocs;
};

/* Reads every process's GPU records (the chunks of the threads its GPU record names). *out is
 * NULL when no process has any. with_launches: also find each correlation id's launching call
 * (walks every thread's records). 0, or -errno with the reason in err. */
int weft_gpu_analyze(const struct weft_trace *t, int with_launches, struct weft_gpu **out, char *err, size_t errlen);
const struct weft_gpu_proc *weft_gpu_for(const struct weft_gpu *g, const struct weft_proc *p);
void weft_gpu_free(struct weft_gpu *g);
/* The launch of a correlation id, or NULL. */
const struct weft_gpu_launch *weft_gpu_launch_of(const struct weft_gpu_proc *gp, uint32_t corr);
/* The device with this id in the process's GPU_DEVICE records, or NULL. */
const struct weft_gpu_device_def *weft_gpu_device(const struct weft_proc *p, uint32_t id);

/* Theoretical occupancy (docs/gpu.md): active warps per SM / the SM's maximum, from the block
 * size, registers per thread and shared memory per block against the device's limits; < 0
 * when d is NULL or the block is empty. shared_per_sm: the carveout the kernel ran with
 * (CUPTI's sharedMemoryExecuted), 0 for the device's maximum. */
double weft_gpu_occupancy(const struct weft_gpu_device_def *d, uint32_t threads_per_block, uint32_t regs,
			  uint32_t shared_per_block, uint32_t shared_per_sm);
/* "HtoD", "DtoH", ... for a CUPTI copy kind; "pageable", "pinned", "device", ... for a memory kind. */
const char *weft_gpu_copy_kind(unsigned k);
const char *weft_gpu_mem_kind(unsigned k);
/* A kernel's name: demangled when it is a C++ name (then *dem holds the malloc'd text, for the
 * caller to free; else NULL), the site's name otherwise, "(kernel)" when it has none. */
const char *weft_gpu_kernel_name(const struct weft_proc *p, const struct weft_gpu_act *a, char **dem);

#endif
