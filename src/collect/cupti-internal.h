/*
 * cupti-internal.h - what the GPU collector's rooms share (the overview is at the top of
 * collect/cupti.c):
 *   cupti.c           loading CUPTI, the clock map (GPU_CLOCK pairs), start, drain, stop, fork,
 *                     the gpu source and CUDA's injection entry;
 *   cupti-api.c       the API callbacks: each CUDA call a slice, a flow to what it launched,
 *                     device memory as a heap per GPU;
 *   cupti-activity.c  the activity buffers: handed to CUPTI, taken back full, each record a GPU
 *                     record (kernels, copies, memsets) or a GPU_DEVICE metadata record.
 */
#ifndef WEFT_COLLECT_CUPTI_INTERNAL_H
#define WEFT_COLLECT_CUPTI_INTERNAL_H

#include "lib/internal.h"
#include "collect/cupti_abi.h"
#include <pthread.h>

#define MAX_TIDS 16       /* threads that handed buffers back, for the readers */

/* ---- cupti.c ---- */

/* The loaded library. Written by start (under weft_g.lock, before any callback is enabled),
 * read by the callbacks and stop. */
WEFT_HIDDEN extern struct weft_cupti_api weft_cu;
WEFT_HIDDEN extern _Atomic int weft_cupti__active; /* 1 from start to stop: callbacks record */
/* inside a callback or a CUPTI call of ours (on this thread) */
WEFT_HIDDEN extern __thread int weft_cupti__in_collector WEFT_TLS;
/* the totals of the GPU metadata record: GPU records written, records CUPTI dropped, buffers
 * converted, CUDA calls seen, buffers out at once */
WEFT_HIDDEN extern _Atomic uint64_t weft_cupti__n_records, weft_cupti__n_dropped, weft_cupti__n_buffers,
	weft_cupti__n_api, weft_cupti__n_buffers_out;
WEFT_HIDDEN void weft_cupti__clock_pair(void);     /* a GPU_CLOCK pair now */
WEFT_HIDDEN void weft_cupti__clock_pair_due(void); /* ... when 100 ms have passed (one thread takes it) */

/* ---- cupti-api.c ---- */

WEFT_HIDDEN void weft_cupti__on_api(void *ud, int domain, uint32_t cbid, const void *data);
WEFT_HIDDEN void weft_cupti__api_atfork_child(void);

/* ---- cupti-activity.c ---- */

/* Buffer conversion: under weft_cupti__conv_lock (CUPTI may hand buffers back on several
 * threads); tids: the threads that handed buffers back. */
WEFT_HIDDEN extern pthread_mutex_t weft_cupti__conv_lock;
WEFT_HIDDEN extern uint32_t weft_cupti__tids[MAX_TIDS];
WEFT_HIDDEN extern int weft_cupti__ntids;
WEFT_HIDDEN void weft_cupti__buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records);
WEFT_HIDDEN void weft_cupti__buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size,
					      size_t valid);
WEFT_HIDDEN void weft_cupti__activity_atfork_child(void);

#endif
