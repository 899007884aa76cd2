/*
 * cupti_abi.h - the small part of NVIDIA's CUPTI ABI that collect/cupti.c uses (and the fake
 * CUPTI of the tests implements), declared here because no CUDA header exists on Debian or on
 * CI. Written from NVIDIA's public CUPTI documentation and headers (cupti_activity.h,
 * cupti_callbacks.h, cupti_result.h); the names are weft's, each struct says which CUPTI
 * struct and versions it matches. tests/gpu/layout_check.c compares every offset, size and
 * constant declared here with the real headers where the CUDA toolkit is installed (`make
 * test-gpu`); it has passed against CUDA 13.0 (CUPTI_API_VERSION 130001: Kernel10, Memcpy6,
 * Memset4, Device5). The older versions named below were not compiled against here.
 *
 * Activity records are read by prefix: CUPTI writes each kind in the newest struct version it
 * knows (CUpti_ActivityKernel9 on CUDA 12.4, say), and newer versions only add fields after
 * the ones declared here, so one prefix serves every version listed.
 * Records are 8-byte aligned and packed (PACKED_ALIGNMENT in cupti_activity.h).
 */
#ifndef WEFT_COLLECT_CUPTI_ABI_H
#define WEFT_COLLECT_CUPTI_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef int weft_cupti_result; /* CUptiResult */
#define WEFT_CUPTI_SUCCESS 0
#define WEFT_CUPTI_ERROR_MAX_LIMIT_REACHED 12 /* cuptiActivityGetNextRecord: no more records */
#define WEFT_CUPTI_ERROR_INVALID_KIND 21
#define WEFT_CUPTI_ERROR_NOT_INITIALIZED 15
#define WEFT_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES 35
#define WEFT_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS 39 /* CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED */

/* CUpti_ActivityKind (the values used). */
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

/* CUpti_CallbackDomain and CUpti_ApiCallbackSite. */
enum { WEFT_CUPTI_DOMAIN_DRIVER_API = 1, WEFT_CUPTI_DOMAIN_RUNTIME_API = 2 };
enum { WEFT_CUPTI_API_ENTER = 0, WEFT_CUPTI_API_EXIT = 1 };
#define WEFT_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED 1u /* cuptiActivityFlushAll's flag */

/* CUpti_Activity: the header every record starts with. */
struct weft_cupti_activity {
	uint32_t kind;
};

/* CUpti_ActivityKernel4 .. CUpti_ActivityKernel10 (CUDA 9.0 .. 13.0), kind
 * CONCURRENT_KERNEL or KERNEL: the prefix up to sharedMemoryExecuted. */
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

/* CUpti_ActivityMemcpy3 .. CUpti_ActivityMemcpy6 (CUDA 9.0 .. 13.0), kind MEMCPY. */
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

/* CUpti_ActivityMemcpyKind. */
enum {
	WEFT_CUPTI_MEMCPY_UNKNOWN = 0, WEFT_CUPTI_MEMCPY_HTOD = 1, WEFT_CUPTI_MEMCPY_DTOH = 2,
	WEFT_CUPTI_MEMCPY_HTOA = 3, WEFT_CUPTI_MEMCPY_ATOH = 4, WEFT_CUPTI_MEMCPY_ATOA = 5,
	WEFT_CUPTI_MEMCPY_ATOD = 6, WEFT_CUPTI_MEMCPY_DTOA = 7, WEFT_CUPTI_MEMCPY_DTOD = 8,
	WEFT_CUPTI_MEMCPY_HTOH = 9, WEFT_CUPTI_MEMCPY_PTOP = 10,
};

/* CUpti_ActivityMemset2 .. CUpti_ActivityMemset4 (CUDA 9.0 .. 13.0), kind MEMSET. */
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

/* CUpti_ActivityDevice2 .. CUpti_ActivityDevice5 (CUDA 9.0 .. 13.0), kind DEVICE: one per GPU,
 * handed over once. */
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

/* CUpti_CallbackData: what a DRIVER_API or RUNTIME_API callback receives (CUDA 9.0 .. 13.0). */
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

typedef void (*weft_cupti_callback_fn)(void *userdata, int domain, uint32_t cbid, const void *cbdata);
typedef void (*weft_cupti_buffer_requested_fn)(uint8_t **buffer, size_t *size, size_t *max_records);
typedef void (*weft_cupti_buffer_completed_fn)(void *context, uint32_t stream_id, uint8_t *buffer, size_t size,
					       size_t valid_size);
typedef struct weft_cupti_subscriber *weft_cupti_subscriber; /* CUpti_SubscriberHandle */

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
