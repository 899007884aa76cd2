/*
 * fake_cuda.h - the CUDA calls of the fake CUPTI (fake_cupti.so): a test program calls these
 * instead of CUDA, and each one does what the CUDA driver and CUPTI would around a real call:
 * the API callbacks at entry and exit on the calling thread, then the activity record of the
 * device work, stamped on a fake device clock that runs 40 ppm fast and 3000 s ahead of the
 * host's. The first call plays cuInit: it calls InitializeInjection of CUDA_INJECTION64_PATH,
 * as the driver does.
 */
#ifndef FAKE_CUDA_H
#define FAKE_CUDA_H

#include <stddef.h>
#include <stdint.h>

/* cudaMalloc / cudaFree (runtime domain), cuMemAlloc_v2 / cuMemFree_v2 (driver domain). */
int fakecuda_malloc(void **p, size_t n);
int fakecuda_free(void *p);
int fakecuda_cu_mem_alloc(uint64_t *p, size_t n);
int fakecuda_cu_mem_free(uint64_t p);
/* cudaLaunchKernel: a kernel of `duration_ns` device time on `stream`, after the stream's
 * previous work. The name is interned: every launch of one name hands CUPTI the same pointer. */
void fakecuda_launch(uint32_t stream, const char *mangled, const uint32_t grid[3], const uint32_t block[3],
		     uint16_t regs, uint32_t static_shared, uint32_t dynamic_shared, uint32_t local_per_thread,
		     uint64_t duration_ns);
/* cudaGraphLaunch of a graph of `nodes` kernels: one call, one correlation id, every kernel
 * record carrying it. */
void fakecuda_graph_launch(uint32_t stream, const char *mangled, unsigned nodes, uint64_t duration_ns);
/* cuLaunchKernel: the same through the driver domain. */
void fakecuda_driver_launch(uint32_t stream, const char *mangled, const uint32_t grid[3], const uint32_t block[3],
			    uint16_t regs, uint64_t duration_ns);
/* cudaMemcpy (async 0) or cudaMemcpyAsync; copy_kind as CUPTI's (1 HtoD, 2 DtoH, 8 DtoD). */
void fakecuda_memcpy(unsigned copy_kind, uint64_t bytes, uint32_t stream, int async);
/* cudaMemset. */
void fakecuda_memset(uint64_t bytes, uint32_t value, uint32_t stream);
/* cudaDeviceSynchronize: returns when the device clock has passed every stream's work. */
void fakecuda_synchronize(void);
/* The next n activity records are not stored: counted as dropped. */
void fakecuda_drop_next(unsigned n);
/* For tests: whether an activity kind is enabled; launches so far. */
int fakecuda_enabled_kind(uint32_t kind);
uint64_t fakecuda_launches(void);

#endif
