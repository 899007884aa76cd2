/*
 * layout_check - compares every offset and size that src/collect/cupti_abi.h declares with the
 * installed CUDA toolkit's own CUPTI headers, and the constants' values. Built by
 * scripts/test-gpu.sh only where the toolkit exists; the record struct of each activity kind
 * is the one the installed cupti_activity.h documents for it (the script passes it:
 * -DKERNEL_T=CUpti_ActivityKernel10 -DMEMCPY_T=... -DMEMSET_T=... -DDEVICE_T=...), which is the
 * version CUPTI writes. Prints one line per check and exits 1 on any mismatch.
 */
#include <cupti.h>
#include <stddef.h>
#include <stdio.h>
#include "collect/cupti_abi.h"

#ifndef KERNEL_T
#define KERNEL_T CUpti_ActivityKernel10
#define MEMCPY_T CUpti_ActivityMemcpy6
#define MEMSET_T CUpti_ActivityMemset4
#define DEVICE_T CUpti_ActivityDevice5
#endif
#define STR2(x) #x
#define STR(x) STR2(x)

static int bad;

static void check(const char *what, size_t ours, size_t real)
{
	printf("%-48s ours %4zu real %4zu %s\n", what, ours, real, ours == real ? "ok" : "MISMATCH");
	bad |= ours != real;
}

#define OFF(ours, theirs, f, g) check(#ours "." #f, offsetof(struct ours, f), offsetof(theirs, g))
#define SZ(ours, theirs, f, g) check(#ours "." #f " (size)", sizeof(((struct ours *)0)->f), sizeof(((theirs *)0)->g))
#define F(ours, theirs, f, g) (OFF(ours, theirs, f, g), SZ(ours, theirs, f, g))
#define VAL(ours, real) check(#ours " (value)", (size_t)(ours), (size_t)(real))

int main(void)
{
	printf("CUPTI_API_VERSION %d; kernel %s, memcpy %s, memset %s, device %s\n", CUPTI_API_VERSION, STR(KERNEL_T),
	       STR(MEMCPY_T), STR(MEMSET_T), STR(DEVICE_T));
	F(weft_cupti_kernel, KERNEL_T, kind, kind);
	F(weft_cupti_kernel, KERNEL_T, registers_per_thread, registersPerThread);
	F(weft_cupti_kernel, KERNEL_T, start, start);
	F(weft_cupti_kernel, KERNEL_T, end, end);
	F(weft_cupti_kernel, KERNEL_T, completed, completed);
	F(weft_cupti_kernel, KERNEL_T, device_id, deviceId);
	F(weft_cupti_kernel, KERNEL_T, context_id, contextId);
	F(weft_cupti_kernel, KERNEL_T, stream_id, streamId);
	F(weft_cupti_kernel, KERNEL_T, grid_x, gridX);
	F(weft_cupti_kernel, KERNEL_T, grid_y, gridY);
	F(weft_cupti_kernel, KERNEL_T, grid_z, gridZ);
	F(weft_cupti_kernel, KERNEL_T, block_x, blockX);
	F(weft_cupti_kernel, KERNEL_T, block_y, blockY);
	F(weft_cupti_kernel, KERNEL_T, block_z, blockZ);
	F(weft_cupti_kernel, KERNEL_T, static_shared_memory, staticSharedMemory);
	F(weft_cupti_kernel, KERNEL_T, dynamic_shared_memory, dynamicSharedMemory);
	F(weft_cupti_kernel, KERNEL_T, local_memory_per_thread, localMemoryPerThread);
	F(weft_cupti_kernel, KERNEL_T, local_memory_total, localMemoryTotal);
	F(weft_cupti_kernel, KERNEL_T, correlation_id, correlationId);
	F(weft_cupti_kernel, KERNEL_T, grid_id, gridId);
	F(weft_cupti_kernel, KERNEL_T, name, name);
	F(weft_cupti_kernel, KERNEL_T, queued, queued);
	F(weft_cupti_kernel, KERNEL_T, submitted, submitted);
	F(weft_cupti_kernel, KERNEL_T, launch_type, launchType);
	F(weft_cupti_kernel, KERNEL_T, shared_memory_executed, sharedMemoryExecuted);
	check("weft_cupti_kernel fits in the record", sizeof(struct weft_cupti_kernel) <= sizeof(KERNEL_T), 1);

	F(weft_cupti_memcpy, MEMCPY_T, kind, kind);
	F(weft_cupti_memcpy, MEMCPY_T, copy_kind, copyKind);
	F(weft_cupti_memcpy, MEMCPY_T, src_kind, srcKind);
	F(weft_cupti_memcpy, MEMCPY_T, dst_kind, dstKind);
	F(weft_cupti_memcpy, MEMCPY_T, flags, flags);
	F(weft_cupti_memcpy, MEMCPY_T, bytes, bytes);
	F(weft_cupti_memcpy, MEMCPY_T, start, start);
	F(weft_cupti_memcpy, MEMCPY_T, end, end);
	F(weft_cupti_memcpy, MEMCPY_T, device_id, deviceId);
	F(weft_cupti_memcpy, MEMCPY_T, context_id, contextId);
	F(weft_cupti_memcpy, MEMCPY_T, stream_id, streamId);
	F(weft_cupti_memcpy, MEMCPY_T, correlation_id, correlationId);
	F(weft_cupti_memcpy, MEMCPY_T, runtime_correlation_id, runtimeCorrelationId);

	F(weft_cupti_memset, MEMSET_T, kind, kind);
	F(weft_cupti_memset, MEMSET_T, value, value);
	F(weft_cupti_memset, MEMSET_T, bytes, bytes);
	F(weft_cupti_memset, MEMSET_T, start, start);
	F(weft_cupti_memset, MEMSET_T, end, end);
	F(weft_cupti_memset, MEMSET_T, device_id, deviceId);
	F(weft_cupti_memset, MEMSET_T, context_id, contextId);
	F(weft_cupti_memset, MEMSET_T, stream_id, streamId);
	F(weft_cupti_memset, MEMSET_T, correlation_id, correlationId);
	F(weft_cupti_memset, MEMSET_T, flags, flags);
	F(weft_cupti_memset, MEMSET_T, memory_kind, memoryKind);

	F(weft_cupti_device, DEVICE_T, kind, kind);
	F(weft_cupti_device, DEVICE_T, flags, flags);
	F(weft_cupti_device, DEVICE_T, global_memory_bandwidth, globalMemoryBandwidth);
	F(weft_cupti_device, DEVICE_T, global_memory_size, globalMemorySize);
	F(weft_cupti_device, DEVICE_T, num_threads_per_warp, numThreadsPerWarp);
	F(weft_cupti_device, DEVICE_T, core_clock_rate, coreClockRate);
	F(weft_cupti_device, DEVICE_T, num_multiprocessors, numMultiprocessors);
	F(weft_cupti_device, DEVICE_T, max_warps_per_multiprocessor, maxWarpsPerMultiprocessor);
	F(weft_cupti_device, DEVICE_T, max_blocks_per_multiprocessor, maxBlocksPerMultiprocessor);
	F(weft_cupti_device, DEVICE_T, max_shared_memory_per_multiprocessor, maxSharedMemoryPerMultiprocessor);
	F(weft_cupti_device, DEVICE_T, max_registers_per_multiprocessor, maxRegistersPerMultiprocessor);
	F(weft_cupti_device, DEVICE_T, max_registers_per_block, maxRegistersPerBlock);
	F(weft_cupti_device, DEVICE_T, max_shared_memory_per_block, maxSharedMemoryPerBlock);
	F(weft_cupti_device, DEVICE_T, max_threads_per_block, maxThreadsPerBlock);
	F(weft_cupti_device, DEVICE_T, compute_capability_major, computeCapabilityMajor);
	F(weft_cupti_device, DEVICE_T, compute_capability_minor, computeCapabilityMinor);
	F(weft_cupti_device, DEVICE_T, id, id);
	F(weft_cupti_device, DEVICE_T, uuid, uuid);
	F(weft_cupti_device, DEVICE_T, name, name);

	F(weft_cupti_callback_data, CUpti_CallbackData, callback_site, callbackSite);
	F(weft_cupti_callback_data, CUpti_CallbackData, function_name, functionName);
	F(weft_cupti_callback_data, CUpti_CallbackData, function_params, functionParams);
	F(weft_cupti_callback_data, CUpti_CallbackData, function_return_value, functionReturnValue);
	F(weft_cupti_callback_data, CUpti_CallbackData, symbol_name, symbolName);
	F(weft_cupti_callback_data, CUpti_CallbackData, context, context);
	F(weft_cupti_callback_data, CUpti_CallbackData, context_uid, contextUid);
	F(weft_cupti_callback_data, CUpti_CallbackData, correlation_data, correlationData);
	F(weft_cupti_callback_data, CUpti_CallbackData, correlation_id, correlationId);

	VAL(WEFT_CUPTI_ACT_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY);
	VAL(WEFT_CUPTI_ACT_MEMSET, CUPTI_ACTIVITY_KIND_MEMSET);
	VAL(WEFT_CUPTI_ACT_KERNEL, CUPTI_ACTIVITY_KIND_KERNEL);
	VAL(WEFT_CUPTI_ACT_DRIVER, CUPTI_ACTIVITY_KIND_DRIVER);
	VAL(WEFT_CUPTI_ACT_RUNTIME, CUPTI_ACTIVITY_KIND_RUNTIME);
	VAL(WEFT_CUPTI_ACT_DEVICE, CUPTI_ACTIVITY_KIND_DEVICE);
	VAL(WEFT_CUPTI_ACT_CONTEXT, CUPTI_ACTIVITY_KIND_CONTEXT);
	VAL(WEFT_CUPTI_ACT_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	VAL(WEFT_CUPTI_ACT_OVERHEAD, CUPTI_ACTIVITY_KIND_OVERHEAD);
	VAL(WEFT_CUPTI_DOMAIN_DRIVER_API, CUPTI_CB_DOMAIN_DRIVER_API);
	VAL(WEFT_CUPTI_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_RUNTIME_API);
	VAL(WEFT_CUPTI_API_ENTER, CUPTI_API_ENTER);
	VAL(WEFT_CUPTI_API_EXIT, CUPTI_API_EXIT);
	VAL(WEFT_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED, CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	VAL(WEFT_CUPTI_ERROR_MAX_LIMIT_REACHED, CUPTI_ERROR_MAX_LIMIT_REACHED);
	VAL(WEFT_CUPTI_ERROR_INVALID_KIND, CUPTI_ERROR_INVALID_KIND);
	VAL(WEFT_CUPTI_ERROR_NOT_INITIALIZED, CUPTI_ERROR_NOT_INITIALIZED);
	VAL(WEFT_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
	VAL(WEFT_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS, CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
	VAL(WEFT_CUPTI_MEMCPY_HTOD, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD);
	VAL(WEFT_CUPTI_MEMCPY_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH);
	VAL(WEFT_CUPTI_MEMCPY_DTOD, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD);
	VAL(WEFT_CUPTI_MEMCPY_PTOP, CUPTI_ACTIVITY_MEMCPY_KIND_PTOP);
	printf("%s\n", bad ? "layout_check: MISMATCH" : "layout_check: every offset, size and value matches");
	return bad;
}
