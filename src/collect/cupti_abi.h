/*
 * cupti_abi.h - the small part of NVIDIA's CUPTI ABI that collect/cupti.c uses (and the fake
 * CUPTI of the tests implements), declared here because no CUDA header exists on Debian or on
 * CI. Written from NVIDIA's public CUPTI documentation and headers (cupti_activity.h,
 * cupti_callbacks.h, cupti_result.h); the names are weft's, each struct says which CUPTI
 * struct and versions it matches. tests/gpu/layout_check.c compares every offset, size and
 * constant declared here with the real headers where the CUDA toolkit is installed (`make
 * test-gpu`); it passed against CUDA 13.0 (CUPTI_API_VERSION 130001) on the build machine.
 *
 * Activity records are read by prefix: CUPTI writes each kind in the newest struct version it
 * knows (CUpti_ActivityKernel9 on CUDA 12.0 .. 12.9, CUpti_ActivityKernel10 on 13.0, say), and
 * each new version only appends fields after the ones declared here, so one prefix serves
 * every version listed. Checked (offset and size of each field) against the CUDA 12.6.3 and
 * 13.0 headers, which still declare every older version, and against bindgen output of the
 * CUDA 11.4 .. 13.0 headers for which version each release has.
 * Records are 8-byte aligned and packed (PACKED_ALIGNMENT in cupti_activity.h); the offsets
 * below are for LP64 (Linux x86-64 and aarch64), the only ABI weft builds for.
 */
#ifndef WEFT_COLLECT_CUPTI_ABI_H
#define WEFT_COLLECT_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

/* A compile-time check that reads the same in C11 and C++11 (the header is also built as C++). */
#ifdef __cplusplus
#define WEFT_CUPTI_ABI_ASSERT(cond, what) static_assert(cond, what)
#else
#define WEFT_CUPTI_ABI_ASSERT(cond, what) _Static_assert(cond, what)
#endif
#define WEFT_CUPTI_ABI_AT(type, field, off) \
	WEFT_CUPTI_ABI_ASSERT(offsetof(struct type, field) == (off), #type "." #field " is at " #off)

/* CUptiResult (the values used; the same from CUDA 9.0 to 13.0). */
typedef int weft_cupti_result;
#define WEFT_CUPTI_SUCCESS 0
#define WEFT_CUPTI_ERROR_MAX_LIMIT_REACHED 12 /* cuptiActivityGetNextRecord: no more records */
#define WEFT_CUPTI_ERROR_INVALID_KIND 21
#define WEFT_CUPTI_ERROR_NOT_INITIALIZED 15
#define WEFT_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES 35
#define WEFT_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS 39 /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */

/* CUpti_ActivityKind (the values used; the same from CUDA 9.0 to 13.0). */
enum {
	WEFT_CUPTI_ACT_MEMCPY = 1,
	WEFT_CUPTI_ACT_MEMSET = 2,
	WEFT_CUPTI_ACT_KERNEL = 3, /* serializes kernels: weft uses CONCURRENT_KERNEL */
	WEFT_CUPTI_ACT_DRIVER = 4,
	WEFT_CUPTI_ACT_RUNTIME = 5,
	WEFT_CUPTI_ACT_DEVICE = 8,
	WEFT_CUPTI_ACT_CONTEXT = 9,
	WEFT_CUPTI_ACT_CONCURRENT_KERNEL = 10,
	WEFT_CUPTI_ACT_OVERHEAD = 17,
};

/* CUpti_CallbackDomain and CUpti_ApiCallbackSite; CUpti_ActivityFlag's FLUSH_FORCED. */
enum { WEFT_CUPTI_DOMAIN_DRIVER_API = 1, WEFT_CUPTI_DOMAIN_RUNTIME_API = 2 };
enum { WEFT_CUPTI_API_ENTER = 0, WEFT_CUPTI_API_EXIT = 1 };
#define WEFT_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1u /* cuptiActivityFlushAll's flag */

/* CUpti_Activity: the header every record starts with. */
struct weft_cupti_activity {
	uint32_t kind;
};

/* Kind CONCURRENT_KERNEL or KERNEL: the prefix, up to sharedMemoryExecuted, that
 * CUpti_ActivityKernel4 (CUDA 9.0, 144 bytes, all of it) through CUpti_ActivityKernel10 (CUDA
 * 13.0, 216 bytes) share. CUPTI writes Kernel6 on CUDA 11.4/11.5, Kernel7 on 11.6/11.7, Kernel8
 * on 11.8, Kernel9 on 12.0 .. 12.9, Kernel10 on 13.0; Kernel11 (13.1, adds a launch priority)
 * is not checked here. Kernel9 adds a 64-bit local memory total at 176 (local_memory_total
 * is 32-bit). */
struct __attribute__((packed, aligned(8))) weft_cupti_kernel {
	uint32_t kind;                       /* 0 */
	uint8_t cache_config;                /* 4: requested (bits 0-3), executed (4-7) */
	uint8_t shared_memory_config;        /* 5 */
	uint16_t registers_per_thread;       /* 6 */
	uint32_t partitioned_cache_requested; /* 8 */
	uint32_t partitioned_cache_executed; /* 12 */
	uint64_t start;                      /* 16: ns, CUPTI's clock (cuptiGetTimestamp) */
	uint64_t end;                        /* 24 */
	uint64_t completed;                  /* 32 */
	uint32_t device_id;                  /* 40 */
	uint32_t context_id;                 /* 44 */
	uint32_t stream_id;                  /* 48 */
	int32_t grid_x, grid_y, grid_z;      /* 52, 56, 60 */
	int32_t block_x, block_y, block_z;   /* 64, 68, 72 */
	int32_t static_shared_memory;        /* 76: bytes */
	int32_t dynamic_shared_memory;       /* 80 */
	uint32_t local_memory_per_thread;    /* 84 */
	uint32_t local_memory_total;         /* 88 */
	uint32_t correlation_id;             /* 92 */
	int64_t grid_id;                     /* 96 */
	const char *name;                    /* 104: mangled; shared by every record of the kernel */
	void *reserved0;                     /* 112 */
	uint64_t queued;                     /* 120 */
	uint64_t submitted;                  /* 128 */
	uint8_t launch_type;                 /* 136 */
	uint8_t is_shared_memory_carveout_requested; /* 137 */
	uint8_t shared_memory_carveout_requested;    /* 138 */
	uint8_t padding;                     /* 139 */
	uint32_t shared_memory_executed;     /* 140 */
};
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, kind, 0);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, cache_config, 4);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, shared_memory_config, 5);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, registers_per_thread, 6);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, partitioned_cache_requested, 8);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, partitioned_cache_executed, 12);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, start, 16);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, end, 24);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, completed, 32);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, device_id, 40);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, context_id, 44);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, stream_id, 48);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, grid_x, 52);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, grid_y, 56);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, grid_z, 60);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, block_x, 64);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, block_y, 68);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, block_z, 72);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, static_shared_memory, 76);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, dynamic_shared_memory, 80);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, local_memory_per_thread, 84);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, local_memory_total, 88);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, correlation_id, 92);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, grid_id, 96);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, name, 104);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, reserved0, 112);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, queued, 120);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, submitted, 128);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, launch_type, 136);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, is_shared_memory_carveout_requested, 137);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, shared_memory_carveout_requested, 138);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, padding, 139);
WEFT_CUPTI_ABI_AT(weft_cupti_kernel, shared_memory_executed, 140);
WEFT_CUPTI_ABI_ASSERT(sizeof(struct weft_cupti_kernel) == 144, "struct weft_cupti_kernel is 144 bytes");

/* Kind MEMCPY: the prefix, up to runtimeCorrelationId, of CUpti_ActivityMemcpy (64 bytes) and
 * Memcpy3 (72; the last until CUDA 11.0), Memcpy4 (80; 11.1 .. 11.5), Memcpy5 (88; 11.6 ..
 * 12.7) and Memcpy6 (96; 12.8 .. 13.0, appends a copy count). */
struct __attribute__((packed, aligned(8))) weft_cupti_memcpy {
	uint32_t kind;          /* 0 */
	uint8_t copy_kind;      /* 4: CUpti_ActivityMemcpyKind (below) */
	uint8_t src_kind;       /* 5: CUpti_ActivityMemoryKind */
	uint8_t dst_kind;       /* 6 */
	uint8_t flags;          /* 7: 1 async */
	uint64_t bytes;         /* 8 */
	uint64_t start;         /* 16 */
	uint64_t end;           /* 24 */
	uint32_t device_id;     /* 32 */
	uint32_t context_id;    /* 36 */
	uint32_t stream_id;     /* 40 */
	uint32_t correlation_id; /* 44 */
	uint32_t runtime_correlation_id; /* 48 */
};
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, kind, 0);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, copy_kind, 4);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, src_kind, 5);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, dst_kind, 6);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, flags, 7);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, bytes, 8);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, start, 16);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, end, 24);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, device_id, 32);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, context_id, 36);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, stream_id, 40);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, correlation_id, 44);
WEFT_CUPTI_ABI_AT(weft_cupti_memcpy, runtime_correlation_id, 48);
WEFT_CUPTI_ABI_ASSERT(sizeof(struct weft_cupti_memcpy) == 56, "struct weft_cupti_memcpy is 56 bytes");

/* CUpti_ActivityMemcpyKind. */
enum {
	WEFT_CUPTI_MEMCPY_UNKNOWN = 0, WEFT_CUPTI_MEMCPY_HTOD = 1, WEFT_CUPTI_MEMCPY_DTOH = 2,
	WEFT_CUPTI_MEMCPY_HTOA = 3, WEFT_CUPTI_MEMCPY_ATOH = 4, WEFT_CUPTI_MEMCPY_ATOA = 5,
	WEFT_CUPTI_MEMCPY_ATOD = 6, WEFT_CUPTI_MEMCPY_DTOA = 7, WEFT_CUPTI_MEMCPY_DTOD = 8,
	WEFT_CUPTI_MEMCPY_HTOH = 9, WEFT_CUPTI_MEMCPY_PTOP = 10,
};

/* Kind MEMSET: the prefix, up to memoryKind, of CUpti_ActivityMemset (64 bytes) and Memset2
 * (72; the last until CUDA 11.0), Memset3 (80; 11.1 .. 11.5) and Memset4 (88; 11.6 .. 13.0). */
struct __attribute__((packed, aligned(8))) weft_cupti_memset {
	uint32_t kind;          /* 0 */
	uint32_t value;         /* 4 */
	uint64_t bytes;         /* 8 */
	uint64_t start;         /* 16 */
	uint64_t end;           /* 24 */
	uint32_t device_id;     /* 32 */
	uint32_t context_id;    /* 36 */
	uint32_t stream_id;     /* 40 */
	uint32_t correlation_id; /* 44 */
	uint16_t flags;         /* 48 */
	uint16_t memory_kind;   /* 50 */
};
WEFT_CUPTI_ABI_AT(weft_cupti_memset, kind, 0);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, value, 4);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, bytes, 8);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, start, 16);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, end, 24);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, device_id, 32);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, context_id, 36);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, stream_id, 40);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, correlation_id, 44);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, flags, 48);
WEFT_CUPTI_ABI_AT(weft_cupti_memset, memory_kind, 50);
WEFT_CUPTI_ABI_ASSERT(sizeof(struct weft_cupti_memset) == 56, "struct weft_cupti_memset is 56 bytes");

/* Kind DEVICE, one per GPU, handed over once: the prefix, up to name, of CUpti_ActivityDevice2
 * (144 bytes) and Device3 (152; the last until CUDA 11.5), Device4 (176; 11.6 .. 12.1) and
 * Device5 (184; 12.2 .. 13.0). On LP64 the 16-byte uuid ends at 136, so name needs no padding
 * before it. */
struct __attribute__((packed, aligned(8))) weft_cupti_device {
	uint32_t kind;                         /* 0 */
	uint32_t flags;                        /* 4 */
	uint64_t global_memory_bandwidth;      /* 8: KB/s */
	uint64_t global_memory_size;           /* 16: bytes */
	uint32_t constant_memory_size;         /* 24 */
	uint32_t l2_cache_size;                /* 28 */
	uint32_t num_threads_per_warp;         /* 32 */
	uint32_t core_clock_rate;              /* 36: kHz */
	uint32_t num_memcpy_engines;           /* 40 */
	uint32_t num_multiprocessors;          /* 44 */
	uint32_t max_ipc;                      /* 48 */
	uint32_t max_warps_per_multiprocessor; /* 52 */
	uint32_t max_blocks_per_multiprocessor; /* 56 */
	uint32_t max_shared_memory_per_multiprocessor; /* 60 */
	uint32_t max_registers_per_multiprocessor; /* 64 */
	uint32_t max_registers_per_block;      /* 68 */
	uint32_t max_shared_memory_per_block;  /* 72 */
	uint32_t max_threads_per_block;        /* 76 */
	uint32_t max_block_dim_x, max_block_dim_y, max_block_dim_z; /* 80, 84, 88 */
	uint32_t max_grid_dim_x, max_grid_dim_y, max_grid_dim_z;    /* 92, 96, 100 */
	uint32_t compute_capability_major;     /* 104 */
	uint32_t compute_capability_minor;     /* 108 */
	uint32_t id;                           /* 112 */
	uint32_t ecc_enabled;                  /* 116 */
	uint8_t uuid[16];                      /* 120: CUuuid */
	const char *name;                      /* 136 */
};
WEFT_CUPTI_ABI_AT(weft_cupti_device, kind, 0);
WEFT_CUPTI_ABI_AT(weft_cupti_device, flags, 4);
WEFT_CUPTI_ABI_AT(weft_cupti_device, global_memory_bandwidth, 8);
WEFT_CUPTI_ABI_AT(weft_cupti_device, global_memory_size, 16);
WEFT_CUPTI_ABI_AT(weft_cupti_device, constant_memory_size, 24);
WEFT_CUPTI_ABI_AT(weft_cupti_device, l2_cache_size, 28);
WEFT_CUPTI_ABI_AT(weft_cupti_device, num_threads_per_warp, 32);
WEFT_CUPTI_ABI_AT(weft_cupti_device, core_clock_rate, 36);
WEFT_CUPTI_ABI_AT(weft_cupti_device, num_memcpy_engines, 40);
WEFT_CUPTI_ABI_AT(weft_cupti_device, num_multiprocessors, 44);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_ipc, 48);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_warps_per_multiprocessor, 52);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_blocks_per_multiprocessor, 56);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_shared_memory_per_multiprocessor, 60);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_registers_per_multiprocessor, 64);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_registers_per_block, 68);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_shared_memory_per_block, 72);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_threads_per_block, 76);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_block_dim_x, 80);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_block_dim_y, 84);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_block_dim_z, 88);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_grid_dim_x, 92);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_grid_dim_y, 96);
WEFT_CUPTI_ABI_AT(weft_cupti_device, max_grid_dim_z, 100);
WEFT_CUPTI_ABI_AT(weft_cupti_device, compute_capability_major, 104);
WEFT_CUPTI_ABI_AT(weft_cupti_device, compute_capability_minor, 108);
WEFT_CUPTI_ABI_AT(weft_cupti_device, id, 112);
WEFT_CUPTI_ABI_AT(weft_cupti_device, ecc_enabled, 116);
WEFT_CUPTI_ABI_AT(weft_cupti_device, uuid, 120);
WEFT_CUPTI_ABI_AT(weft_cupti_device, name, 136);
WEFT_CUPTI_ABI_ASSERT(sizeof(struct weft_cupti_device) == 144, "struct weft_cupti_device is 144 bytes");

/* CUpti_CallbackData, 72 bytes, unchanged from CUDA 9.0 to 13.0: what a DRIVER_API or
 * RUNTIME_API callback receives. Natural alignment (not packed), hence the gaps. */
struct weft_cupti_callback_data {
	uint32_t callback_site;       /* 0: WEFT_CUPTI_API_ENTER or _EXIT */
	const char *function_name;    /* 8 */
	const void *function_params;  /* 16: the call's parameters (generated_*_meta.h structs) */
	void *function_return_value;  /* 24 */
	const char *symbol_name;      /* 32: the kernel's, for launches */
	void *context;                /* 40: CUcontext */
	uint32_t context_uid;         /* 48 */
	uint64_t *correlation_data;   /* 56 */
	uint32_t correlation_id;      /* 64: the same as the activity records' it caused */
};
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, callback_site, 0);
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, function_name, 8);
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, function_params, 16);
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, function_return_value, 24);
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, symbol_name, 32);
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, context, 40);
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, context_uid, 48);
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, correlation_data, 56);
WEFT_CUPTI_ABI_AT(weft_cupti_callback_data, correlation_id, 64);
WEFT_CUPTI_ABI_ASSERT(sizeof(struct weft_cupti_callback_data) == 72, "struct weft_cupti_callback_data is 72 bytes");

typedef void (*weft_cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef void (*weft_cupti_buffer_requested_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*weft_cupti_buffer_completed_fn)(void *context, uint32_t stream_id, uint8_t *buffer, size_t size,
					       size_t valid_size);
/* CUpti_SubscriberHandle, opaque. C++ cannot give a struct tag and a typedef the same name, so
 * there the tag differs; C code keeps `struct weft_cupti_subscriber`. */
#ifdef __cplusplus
typedef struct weft_cupti_subscriber_st *weft_cupti_subscriber;
#else
typedef struct weft_cupti_subscriber *weft_cupti_subscriber;
#endif

/* The functions, as libcupti exports them (each returns a CUptiResult). */
struct weft_cupti_api {
	weft_cupti_result (*get_version)(uint32_t *version);                          /* cuptiGetVersion */
	weft_cupti_result (*get_result_string)(weft_cupti_result r, const char **s);  /* cuptiGetResultString */
	weft_cupti_result (*get_timestamp)(uint64_t *ns);                             /* cuptiGetTimestamp */
	weft_cupti_result (*activity_enable)(uint32_t kind);                          /* cuptiActivityEnable */
	weft_cupti_result (*activity_disable)(uint32_t kind);                         /* cuptiActivityDisable */
	weft_cupti_result (*activity_register_callbacks)(weft_cupti_buffer_requested_fn,
							 weft_cupti_buffer_completed_fn); /* cuptiActivityRegisterCallbacks */
	weft_cupti_result (*activity_get_next_record)(uint8_t *buffer, size_t valid_size,
						      struct weft_cupti_activity **record); /* cuptiActivityGetNextRecord */
	weft_cupti_result (*activity_get_num_dropped_records)(void *context, uint32_t stream_id,
							      size_t *dropped); /* cuptiActivityGetNumDroppedRecords */
	weft_cupti_result (*activity_flush_all)(uint32_t flag);                       /* cuptiActivityFlushAll */
	weft_cupti_result (*subscribe)(weft_cupti_subscriber *s, weft_cupti_callback_fn fn, void *userdata); /* cuptiSubscribe */
	weft_cupti_result (*unsubscribe)(weft_cupti_subscriber s);                    /* cuptiUnsubscribe */
	weft_cupti_result (*enable_domain)(uint32_t enable, weft_cupti_subscriber s, int domain); /* cuptiEnableDomain */
	weft_cupti_result (*get_device_id)(void *context, uint32_t *device);          /* cuptiGetDeviceId */
	weft_cupti_result (*finalize)(void);                                          /* cuptiFinalize (optional) */
};

#endif
