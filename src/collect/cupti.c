/*
 * cupti.c - the GPU collector (gpu=1, `weft record --gpu`): CUDA kernels, copies and memsets
 * with their device times and resources, the CUDA API calls that launched them, and device
 * memory, through NVIDIA's CUPTI loaded at run time with dlopen (cupti_lib=, else searched:
 * CUDA_HOME, /usr/local/cuda, the loader path). weft has no link-time dependency on CUDA; the
 * part of CUPTI's ABI used is declared in cupti_abi.h.
 *
 * Two halves:
 *   API callbacks (cuptiSubscribe, DRIVER_API and RUNTIME_API domains) run on the program's
 *     thread at every CUDA call's entry and exit: the call becomes a slice of that thread (a
 *     site per function name, category "cuda"), on weft's own clock. A launch, copy or memset
 *     call also writes a FLOW out whose id (weft_gpu_flow_id) names the CUPTI correlation id,
 *     which the device activity it causes carries too. cudaMalloc / cudaFree and their
 *     driver, async and managed variants go into a named heap per GPU ("GPU N memory"), so
 *     device memory is attributed to the slice that allocated it like any heap.
 *     A driver call made while a runtime call is open on the thread (the runtime's own) is a
 *     slice too, but leaves flows and memory to the runtime call.
 *   Activity buffers (cuptiActivityRegisterCallbacks) of CONCURRENT_KERNEL, MEMCPY, MEMSET
 *     and DEVICE records: CUPTI fills buffers weft gives it and hands them back full on a
 *     thread of its own (or, at a flush, on the flushing thread); each record becomes a GPU
 *     record (format 1.6) of the thread that handed the buffer back. Device times stay in
 *     CUPTI's clock: pairs (cuptiGetTimestamp, CLOCK_BOOTTIME) are written as GPU_CLOCK
 *     metadata at start, every 100 ms from the API callbacks, at each buffer and at stop, and
 *     the readers map device times through them (analysis/gpu.c).
 * Records CUPTI could not store (cuptiActivityGetNumDroppedRecords) are counted in the GPU
 * metadata record and shown as drops. Flushed (cuptiActivityFlushAll) at weft_stop, which
 * runs at exit too, and at a fatal signal when the signal did not come from inside CUPTI or
 * this file's callbacks.
 */
#include "lib/internal.h"
#include "collect/cupti_abi.h"
#include "collect/source.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_CBID 4096     /* callback ids per domain (CUDA 12: under 1000) */
#define MAX_DEVICES 64
#define MAX_TIDS 16       /* threads that handed buffers back, for the readers */
#define MAX_BUFFERS 64    /* activity buffers out at once: beyond, CUPTI drops (and counts) */
#define CLOCK_EVERY_NS 100000000ull

/* What an API function is to the collector (decided once per callback id, by name). */
enum api_role {
	ROLE_PLAIN = 0,
	ROLE_LAUNCH,      /* causes device activity: a FLOW out */
	ROLE_MALLOC,      /* params {T **ptr; size_t size; ...} */
	ROLE_MALLOC_PITCH, /* params {T **ptr; size_t *pitch; size_t width; size_t height} */
	ROLE_FREE,        /* params {T ptr; ...} */
};
struct api_site {
	struct weft_site site;
	int role;
};

/* The loaded library. Written by start (under weft_g.lock, before any callback is enabled),
 * read by the callbacks and stop. */
static struct weft_cupti_api cu;
static void *lib;
static weft_cupti_subscriber sub;
static _Atomic int active;          /* 1 from start to stop: callbacks record */
static char lib_path[1024];
static uint32_t cupti_version;

/* Per callback id, made on first sight under sites_lock, then read without it (published with
 * a release store). */
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;
static struct api_site *_Atomic api_sites[2][MAX_CBID];
static struct weft_site *_Atomic heaps[MAX_DEVICES];

/* Per thread: how many runtime calls are open, the last correlation id given a flow. */
static __thread int rt_depth WEFT_TLS;
static __thread uint32_t last_flow WEFT_TLS;
static __thread int in_collector WEFT_TLS; /* inside a callback or a CUPTI call of ours */

/* Buffer conversion: under conv_lock (CUPTI may hand buffers back on several threads). */
static pthread_mutex_t conv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { const char *key; struct weft_site *site; } *names; /* kernel name pointer -> site */
static size_t names_cap, names_n;
static uint32_t tids[MAX_TIDS];
static int ntids;
static int devices_seen[MAX_DEVICES];
static _Atomic uint64_t n_records, n_dropped, n_buffers, n_api, n_buffers_out;
static _Atomic uint64_t next_clock_ticks;

/* ---- the clock map ---- */

/* The narrowest of three tries: a thread preempted between the readings gives a wide pair. */
static void clock_pair(void)
{
	uint64_t best[3] = {0, 0, UINT64_MAX};
	for (int i = 0; i < 3; i++) {
		uint64_t g = 0, b0 = weft_boottime_ns();
		if (!cu.get_timestamp || cu.get_timestamp(&g) != WEFT_CUPTI_SUCCESS)
			return;
		uint64_t b1 = weft_boottime_ns();
		if (b1 - b0 < best[2] - best[1] || best[2] == UINT64_MAX) {
			best[0] = g;
			best[1] = b0;
			best[2] = b1;
		}
	}
	weft_meta_write(WEFT_M_GPU_CLOCK, best, sizeof(best), NULL, 0);
}

/* 100 ms in ticks (a 3 GHz guess where the tick rate is unknown). */
static uint64_t clock_step(void)
{
	uint64_t hz = weft_clock_nominal_hz();
	return (hz ? hz : 3000000000ull) / 10;
}

/* From an API callback: a pair when 100 ms have passed (one thread takes it). */
static void clock_pair_due(void)
{
	uint64_t now = weft__ticks(), due = atomic_load_explicit(&next_clock_ticks, memory_order_relaxed);
	if (now < due)
		return;
	uint64_t step = clock_step();
	if (atomic_compare_exchange_strong(&next_clock_ticks, &due, now + step))
		clock_pair();
}

/* ---- API callbacks ---- */

static int role_of(const char *n)
{
	static const char *const launch[] = {"cudaLaunch", "cuLaunch", "cudaMemcpy", "cuMemcpy", "cudaMemset",
					     "cuMemset", "cudaGraphLaunch", "cuGraphLaunch", NULL};
	static const char *const mallocs[] = {"cudaMalloc_", "cudaMallocAsync", "cudaMallocManaged",
					      "cudaMallocFromPoolAsync", "cuMemAlloc_v2", "cuMemAllocAsync",
					      "cuMemAllocManaged", "cuMemAllocFromPoolAsync", NULL};
	static const char *const frees[] = {"cudaFree_", "cudaFreeAsync", "cuMemFree_v2", "cuMemFreeAsync", NULL};
	char nv[128];
	/* names come as "cudaMalloc_v3020" or "cudaMalloc": compare with a '_' appended */
	snprintf(nv, sizeof(nv), "%s_", n);
	for (int i = 0; mallocs[i]; i++)
		if (!strncmp(nv, mallocs[i], strlen(mallocs[i])))
			return ROLE_MALLOC;
	if (!strncmp(nv, "cudaMallocPitch_", 16) || !strncmp(nv, "cuMemAllocPitch_v2", 18))
		return ROLE_MALLOC_PITCH;
	for (int i = 0; frees[i]; i++)
		if (!strncmp(nv, frees[i], strlen(frees[i])))
			return ROLE_FREE;
	for (int i = 0; launch[i]; i++)
		if (!strncmp(n, launch[i], strlen(launch[i])))
			return ROLE_LAUNCH;
	return ROLE_PLAIN;
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": CUPTI may name a runtime function with the
 * version of its entry point; a driver function's own "_v2" stays (it is the symbol's name). */
static void strip_version(char *n)
{
	char *v = strrchr(n, '_');
	if (!v || v[1] != 'v' || strlen(v + 2) < 4)
		return;
	for (const char *c = v + 2; *c; c++)
		if (*c < '0' || *c > '9')
			return;
	*v = 0;
}

static struct api_site *api_site(int domain, uint32_t cbid, const char *fname)
{
	int d = domain == WEFT_CUPTI_DOMAIN_RUNTIME_API;
	if (cbid >= MAX_CBID)
		cbid = 0; /* shares the slot of id 0 (invalid in both domains) */
	struct api_site *s = atomic_load_explicit(&api_sites[d][cbid], memory_order_acquire);
	if (s)
		return s;
	weft_in_runtime++;
	pthread_mutex_lock(&sites_lock);
	s = atomic_load_explicit(&api_sites[d][cbid], memory_order_relaxed);
	if (!s && (s = calloc(1, sizeof(*s)))) {
		char *n = strdup(cbid && fname ? fname : "(CUDA call)");
		strip_version(n);
		if (!n) {
			free(s);
			s = NULL;
		} else {
			s->site.kind = WEFT_KIND_EVENT;
			s->site.name = n;
			s->site.category = d ? "cuda" : "cuda_driver";
			s->role = role_of(n);
			atomic_store_explicit(&api_sites[d][cbid], s, memory_order_release);
		}
	}
	pthread_mutex_unlock(&sites_lock);
	weft_in_runtime--;
	return s;
}

static struct weft_site *device_heap(void *ctx)
{
	uint32_t dev = 0;
	if (!cu.get_device_id || cu.get_device_id(ctx, &dev) != WEFT_CUPTI_SUCCESS || dev >= MAX_DEVICES)
		dev = 0;
	struct weft_site *h = atomic_load_explicit(&heaps[dev], memory_order_acquire);
	if (!h) {
		char name[32];
		snprintf(name, sizeof(name), "GPU %u memory", dev);
		h = weft_heap(name);
		atomic_store_explicit(&heaps[dev], h, memory_order_release);
	}
	return h;
}

static void memory_op(const struct api_site *s, const struct weft_cupti_callback_data *cb, int at_exit)
{
	const void *const *pp = cb->function_params;
	if (!pp)
		return;
	if (s->role == ROLE_FREE) {
		void *ptr = *(void *const *)pp;
		if (!at_exit && ptr) /* before the memory is given back, as FREE records are */
			weft_heap_free((weft_heap_t *)device_heap(cb->context), ptr);
		return;
	}
	if (!at_exit || (cb->function_return_value && *(const int *)cb->function_return_value != 0))
		return; /* failed: nothing allocated */
	void *const *out = pp[0];
	if (!out || !*out)
		return;
	size_t size;
	if (s->role == ROLE_MALLOC) {
		size = ((const size_t *)pp)[1];
	} else { /* pitch * height */
		const size_t *pitch = (const size_t *)((const void *const *)pp)[1];
		size = pitch ? *pitch * ((const size_t *)pp)[3] : 0;
	}
	weft_heap_alloc((weft_heap_t *)device_heap(cb->context), *out, size);
}

static void on_api(void *ud, int domain, uint32_t cbid, const void *data)
{
	(void)ud;
	if (domain != WEFT_CUPTI_DOMAIN_RUNTIME_API && domain != WEFT_CUPTI_DOMAIN_DRIVER_API)
		return;
	if (!atomic_load_explicit(&active, memory_order_relaxed) || weft_in_runtime)
		return;
	const struct weft_cupti_callback_data *cb = data;
	int rt = domain == WEFT_CUPTI_DOMAIN_RUNTIME_API;
	struct api_site *s = api_site(domain, cbid, cb->function_name);
	if (!s)
		return;
	int saved = errno;
	in_collector++;
	if (cb->callback_site == WEFT_CUPTI_API_ENTER) {
		int own = rt || rt_depth == 0; /* a runtime call's own driver calls: a slice only */
		rt_depth += rt;
		atomic_fetch_add_explicit(&n_api, 1, memory_order_relaxed);
		/* device memory is charged to the slice that called: a free before the call's slice
		 * begins, an allocation after it ends */
		if (own && s->role == ROLE_FREE)
			memory_op(s, cb, 0);
		if (weft__on(&s->site)) {
			weft__slice(weft__hdr(s->site.id, WEFT_R_BEGIN, 0, 0));
			if (own && s->role == ROLE_LAUNCH && cb->correlation_id != last_flow) {
				last_flow = cb->correlation_id;
				uint64_t *w = weft__reserve(16);
				if (w) {
					w[0] = weft_gpu_flow_id((uint32_t)weft_g.pid, cb->correlation_id);
					w[1] = weft__hdr(0, WEFT_R_FLOW_OUT, 0, 0);
					weft__commit(w + 2);
				}
			}
		}
		clock_pair_due();
	} else {
		rt_depth -= rt && rt_depth > 0;
		int own = rt || rt_depth == 0;
		if (weft__on(&s->site))
			weft__slice(weft__hdr(s->site.id, WEFT_R_END, 0, 0));
		if (own && (s->role == ROLE_MALLOC || s->role == ROLE_MALLOC_PITCH))
			memory_op(s, cb, 1);
	}
	in_collector--;
	errno = saved;
}

/* ---- activity buffers ---- */

/* Buffers handed back are kept for the next request (up to SPARE_BUFFERS): a fresh 8 MiB
 * allocation is a fresh mapping, whose every page faults in once more. */
#define SPARE_BUFFERS 4
static pthread_mutex_t spare_lock = PTHREAD_MUTEX_INITIALIZER;
static void *spare[SPARE_BUFFERS];
static int nspare;

static void *buffer_get(void)
{
	void *b = NULL;
	pthread_mutex_lock(&spare_lock);
	if (nspare)
		b = spare[--nspare];
	pthread_mutex_unlock(&spare_lock);
	if (!b) {
		weft_in_runtime++;
		b = aligned_alloc(8, weft_cfg.gpu_buffer_size);
		weft_in_runtime--;
	}
	return b;
}

static void buffer_put(void *b)
{
	pthread_mutex_lock(&spare_lock);
	if (nspare < SPARE_BUFFERS) {
		spare[nspare++] = b;
		b = NULL;
	}
	pthread_mutex_unlock(&spare_lock);
	if (b) {
		weft_in_runtime++;
		free(b);
		weft_in_runtime--;
	}
}

static void buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = NULL;
	*size = 0;
	*max_records = 0; /* as many as fit */
	if (atomic_fetch_add(&n_buffers_out, 1) >= MAX_BUFFERS) {
		atomic_fetch_sub(&n_buffers_out, 1);
		return; /* CUPTI drops what it cannot store, and counts it */
	}
	void *b = buffer_get();
	if (!b) {
		atomic_fetch_sub(&n_buffers_out, 1);
		return;
	}
	*buffer = b;
	*size = weft_cfg.gpu_buffer_size;
}

/* The site of a kernel name (CUPTI's pointer is the same for every record of a kernel). */
static struct weft_site *kernel_site(const char *name)
{
	if (!name)
		name = "(unnamed kernel)";
	if (names_n * 2 >= names_cap) {
		size_t cap = names_cap ? names_cap * 2 : 256;
		void *t = calloc(cap, sizeof(*names));
		if (!t)
			return NULL;
		void *old = names;
		size_t oldcap = names_cap;
		names = t;
		names_cap = cap;
		for (size_t i = 0; i < oldcap; i++) {
			const char *k = ((__typeof__(names))old)[i].key;
			if (!k)
				continue;
			size_t h = ((uintptr_t)k >> 3) & (cap - 1);
			while (names[h].key)
				h = (h + 1) & (cap - 1);
			names[h] = ((__typeof__(names))old)[i];
		}
		free(old);
	}
	size_t h = ((uintptr_t)name >> 3) & (names_cap - 1);
	while (names[h].key && names[h].key != name)
		h = (h + 1) & (names_cap - 1);
	if (names[h].key)
		return names[h].site;
	struct weft_site *s = calloc(1, sizeof(*s));
	char *n = strdup(name);
	if (!s || !n) {
		free(s);
		free(n);
		return NULL;
	}
	s->kind = WEFT_KIND_EVENT;
	s->name = n;
	s->category = "gpu";
	names[h].key = name;
	names[h].site = s;
	names_n++;
	return s;
}

static void put(uint64_t start, uint32_t corr, unsigned kind, const uint64_t *x, unsigned n)
{
	uint64_t *w = weft__reserve(8 * (2 + n));
	if (!w)
		return; /* counted as dropped by the runtime */
	w[0] = start;
	w[1] = weft__hdr(corr, WEFT_R_GPU, n, kind);
	memcpy(w + 2, x, 8 * n);
	weft__commit(w + 2 + n);
	atomic_fetch_add_explicit(&n_records, 1, memory_order_relaxed);
}

static uint64_t pair32(uint32_t lo, uint32_t hi) { return lo | (uint64_t)hi << 32; }

static void device_record(const struct weft_cupti_device *d)
{
	if (d->id < MAX_DEVICES) {
		if (devices_seen[d->id])
			return;
		devices_seen[d->id] = 1;
	}
	uint32_t r[16] = {d->id, d->num_multiprocessors, d->compute_capability_major, d->compute_capability_minor,
			  d->max_warps_per_multiprocessor, d->max_blocks_per_multiprocessor,
			  d->max_shared_memory_per_multiprocessor, d->max_registers_per_multiprocessor,
			  d->max_registers_per_block, d->max_shared_memory_per_block, d->max_threads_per_block,
			  d->num_threads_per_warp};
	memcpy(&r[12], &d->global_memory_size, 8);
	r[14] = d->core_clock_rate;
	const char *name = d->name ? d->name : "";
	weft_meta_write(WEFT_M_GPU_DEVICE, r, sizeof(r), name, strnlen(name, 255) + 1);
}

static void convert(const struct weft_cupti_activity *a)
{
	uint64_t x[9];
	switch (a->kind) {
	case WEFT_CUPTI_ACT_CONCURRENT_KERNEL:
	case WEFT_CUPTI_ACT_KERNEL: {
		const struct weft_cupti_kernel *k = (const void *)a;
		struct weft_site *s = kernel_site(k->name);
		if (!s || !weft__on(s))
			return;
		x[0] = k->end;
		x[1] = pair32(k->device_id, k->context_id);
		x[2] = pair32(k->stream_id, s->id);
		x[3] = pair32((uint32_t)k->grid_x, (uint32_t)k->grid_y);
		x[4] = pair32((uint32_t)k->grid_z, (uint32_t)k->block_x);
		x[5] = pair32((uint32_t)k->block_y, (uint32_t)k->block_z);
		x[6] = pair32(k->registers_per_thread, (uint32_t)k->static_shared_memory);
		x[7] = pair32((uint32_t)k->dynamic_shared_memory, k->local_memory_per_thread);
		x[8] = pair32(k->local_memory_total, k->shared_memory_executed);
		put(k->start, k->correlation_id, WEFT_GPU_KERNEL, x, 9);
		break;
	}
	case WEFT_CUPTI_ACT_MEMCPY: {
		const struct weft_cupti_memcpy *m = (const void *)a;
		x[0] = m->end;
		x[1] = pair32(m->device_id, m->context_id);
		x[2] = m->stream_id | (uint64_t)m->copy_kind << 32 | (uint64_t)m->src_kind << 40 |
		       (uint64_t)m->dst_kind << 48 | (uint64_t)m->flags << 56;
		x[3] = m->bytes;
		put(m->start, m->correlation_id, WEFT_GPU_MEMCPY, x, 4);
		break;
	}
	case WEFT_CUPTI_ACT_MEMSET: {
		const struct weft_cupti_memset *m = (const void *)a;
		x[0] = m->end;
		x[1] = pair32(m->device_id, m->context_id);
		x[2] = pair32(m->stream_id, m->value);
		x[3] = m->bytes;
		put(m->start, m->correlation_id, WEFT_GPU_MEMSET, x, 4);
		break;
	}
	case WEFT_CUPTI_ACT_DEVICE:
		device_record((const void *)a);
		break;
	default:
		break;
	}
}

static void note_tid(void)
{
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	for (int i = 0; i < ntids; i++)
		if (tids[i] == tid)
			return;
	if (ntids < MAX_TIDS)
		tids[ntids++] = tid;
}

static void buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)size;
	in_collector++;
	int saved = errno;
	if (buffer && valid) {
		pthread_mutex_lock(&conv_lock);
		note_tid();
		struct weft_cupti_activity *r = NULL;
		while (cu.activity_get_next_record(buffer, valid, &r) == WEFT_CUPTI_SUCCESS && r)
			convert(r);
		pthread_mutex_unlock(&conv_lock);
		atomic_fetch_add(&n_buffers, 1);
	}
	size_t dropped = 0;
	if (cu.activity_get_num_dropped_records && cu.activity_get_num_dropped_records(ctx, stream, &dropped) ==
	    WEFT_CUPTI_SUCCESS && dropped)
		atomic_fetch_add(&n_dropped, dropped);
	clock_pair();
	if (buffer) {
		buffer_put(buffer);
		atomic_fetch_sub(&n_buffers_out, 1);
	}
	errno = saved;
	in_collector--;
}

/* ---- loading, start, stop ---- */

static const char *result_string(weft_cupti_result r, char *buf, size_t n)
{
	const char *s = NULL;
	if (!cu.get_result_string || cu.get_result_string(r, &s) != WEFT_CUPTI_SUCCESS)
		s = NULL;
	snprintf(buf, n, "%s (CUPTI error %d)", s ? s : "error", r);
	return buf;
}

static void *try_load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h)
		snprintf(lib_path, sizeof(lib_path), "%s", path);
	return h;
}

/* cupti_lib= when given; else CUDA_HOME's, /usr/local/cuda's, then the loader's. */
static void *load(char *why, size_t n)
{
	if (weft_cfg.cupti_lib[0]) {
		void *h = try_load(weft_cfg.cupti_lib);
		if (!h) {
			const char *e = dlerror();
			snprintf(why, n, "cannot load %s: %s", weft_cfg.cupti_lib, e ? e : "dlopen failed");
		}
		return h;
	}
	const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda", NULL};
	const char *subs[] = {"extras/CUPTI/lib64/libcupti.so", "lib64/libcupti.so", "targets/x86_64-linux/lib/libcupti.so",
			      "targets/sbsa-linux/lib/libcupti.so", NULL};
	char path[1024];
	for (int i = 0; i < 3; i++) {
		if (!homes[i] || !*homes[i])
			continue;
		for (int j = 0; subs[j]; j++) {
			snprintf(path, sizeof(path), "%s/%s", homes[i], subs[j]);
			void *h = access(path, R_OK) == 0 ? try_load(path) : NULL;
			if (h)
				return h;
		}
	}
	const char *plain[] = {"libcupti.so", "libcupti.so.13", "libcupti.so.12", "libcupti.so.11.8", NULL};
	for (int i = 0; plain[i]; i++) {
		void *h = try_load(plain[i]);
		if (h)
			return h;
	}
	const char *e = dlerror();
	snprintf(why, n, "no CUPTI library found (CUDA_HOME, /usr/local/cuda, the loader path; cupti_lib= names one): %s",
		 e ? e : "not found");
	return NULL;
}

/* Is the NVIDIA driver's library there (CUPTI fails without it)? */
static int driver_present(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
	if (h)
		dlclose(h);
	return h != NULL;
}

#define SYM(field, name) (*(void **)&cu.field = dlsym(lib, name))

static int resolve(char *why, size_t n)
{
	SYM(get_version, "cuptiGetVersion");
	SYM(get_result_string, "cuptiGetResultString");
	SYM(get_timestamp, "cuptiGetTimestamp");
	SYM(activity_enable, "cuptiActivityEnable");
	SYM(activity_disable, "cuptiActivityDisable");
	SYM(activity_register_callbacks, "cuptiActivityRegisterCallbacks");
	SYM(activity_get_next_record, "cuptiActivityGetNextRecord");
	SYM(activity_get_num_dropped_records, "cuptiActivityGetNumDroppedRecords");
	SYM(activity_flush_all, "cuptiActivityFlushAll");
	SYM(subscribe, "cuptiSubscribe");
	SYM(unsubscribe, "cuptiUnsubscribe");
	SYM(enable_domain, "cuptiEnableDomain");
	SYM(get_device_id, "cuptiGetDeviceId");
	SYM(finalize, "cuptiFinalize");
	if (!cu.get_timestamp || !cu.activity_enable || !cu.activity_disable || !cu.activity_register_callbacks ||
	    !cu.activity_get_next_record || !cu.activity_flush_all || !cu.subscribe || !cu.unsubscribe ||
	    !cu.enable_domain) {
		snprintf(why, n, "%s lacks a CUPTI function weft needs (cuptiGetTimestamp, cuptiActivity*, cuptiSubscribe, "
			 "cuptiEnableDomain)", lib_path);
		return -ENOSYS;
	}
	return 0;
}

static void meta_state(int state, const char *text)
{
	unsigned char h[48 + 4 * MAX_TIDS];
	memset(h, 0, sizeof(h));
	uint32_t st = (uint32_t)state, nt = (uint32_t)ntids;
	uint64_t c[4] = {atomic_load(&n_records), atomic_load(&n_dropped), atomic_load(&n_buffers), atomic_load(&n_api)};
	memcpy(h, &st, 4);
	memcpy(h + 4, &nt, 4);
	memcpy(h + 8, c, sizeof(c));
	memcpy(h + 40, &cupti_version, 4);
	memcpy(h + 48, tids, 4 * (size_t)ntids);
	weft_meta_write(WEFT_M_GPU, h, 48 + 4 * (size_t)ntids, text, strlen(text) + 1);
}

static const unsigned kinds[] = {WEFT_CUPTI_ACT_DEVICE, WEFT_CUPTI_ACT_CONCURRENT_KERNEL, WEFT_CUPTI_ACT_MEMCPY,
				 WEFT_CUPTI_ACT_MEMSET};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void unload(void)
{
	/* the library stays mapped: CUPTI and the driver keep threads and exit handlers */
	memset(&cu, 0, sizeof(cu));
	lib = NULL;
}

/* Called at trace start (under weft_g.lock) when gpu=1. 0, or -errno with why in desc. */
static int open_cupti(char *why, size_t n)
{
	char eb[160];
	weft_cupti_result r;
	if (!(lib = load(why, n)))
		return -ENOENT;
	int rc = resolve(why, n);
	if (rc) {
		unload();
		return rc;
	}
	if (cu.get_version && (r = cu.get_version(&cupti_version)) != WEFT_CUPTI_SUCCESS) {
		snprintf(why, n, "cuptiGetVersion failed: %s", result_string(r, eb, sizeof(eb)));
		unload();
		return -EIO;
	}
	if ((r = cu.activity_register_callbacks(buffer_requested, buffer_completed)) != WEFT_CUPTI_SUCCESS) {
		snprintf(why, n, "cuptiActivityRegisterCallbacks failed: %s", result_string(r, eb, sizeof(eb)));
		unload();
		return -EIO;
	}
	if ((r = cu.subscribe(&sub, on_api, NULL)) != WEFT_CUPTI_SUCCESS) {
		snprintf(why, n, "cuptiSubscribe failed: %s%s", result_string(r, eb, sizeof(eb)),
			 r == WEFT_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS ? " (another CUPTI client, such as a profiler, is attached)"
			 : !driver_present() ? " (no NVIDIA driver: libcuda.so.1 cannot be loaded)" : "");
		unload();
		return -EBUSY;
	}
	for (size_t i = 0; i < NKINDS; i++) {
		if ((r = cu.activity_enable(kinds[i])) != WEFT_CUPTI_SUCCESS) {
			snprintf(why, n, "cuptiActivityEnable(%u) failed: %s%s", kinds[i], result_string(r, eb, sizeof(eb)),
				 r == WEFT_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
					 ? " (profiling needs NVreg_RestrictProfilingToAdminUsers=0 or root)" : "");
			for (size_t j = 0; j < i; j++)
				cu.activity_disable(kinds[j]);
			cu.unsubscribe(sub);
			unload();
			return -EPERM;
		}
	}
	if ((r = cu.enable_domain(1, sub, WEFT_CUPTI_DOMAIN_RUNTIME_API)) != WEFT_CUPTI_SUCCESS ||
	    (r = cu.enable_domain(1, sub, WEFT_CUPTI_DOMAIN_DRIVER_API)) != WEFT_CUPTI_SUCCESS) {
		snprintf(why, n, "cuptiEnableDomain failed: %s", result_string(r, eb, sizeof(eb)));
		for (size_t j = 0; j < NKINDS; j++)
			cu.activity_disable(kinds[j]);
		cu.unsubscribe(sub);
		unload();
		return -EIO;
	}
	return 0;
}

static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static int gpu_deferred(void);
static int started; /* start_lock: tried in this process (once) */

/* A fork child: CUDA does not survive fork, and the parent's counts are not the child's. Its
 * locks may have been copied held (a CUPTI thread converting a buffer, a callback making a
 * site): reinitialised; what they guard is either published whole (sites) or dropped here
 * (the kernel names, the spare buffers: the parent's). Nothing here runs in the child before
 * this (callbacks need `active`). */
static void gpu_atfork_child(void)
{
	pthread_mutex_init(&sites_lock, NULL);
	pthread_mutex_init(&conv_lock, NULL);
	pthread_mutex_init(&spare_lock, NULL);
	pthread_mutex_init(&start_lock, NULL);
	nspare = 0;
	atomic_store(&active, 0);
	ntids = 0;
	names = NULL; /* the parent's table stays with the parent's memory */
	names_cap = names_n = 0;
}

/* ---- the source's face (collect/source.h) ---- */

static _Atomic int injected; /* InitializeInjection ran: CUDA asks for the collector now */

/* Loads CUPTI and starts recording (once per process): 0, or -errno with why in why. Where
 * CUDA_INJECTION64_PATH names this library, the trace's start leaves it to CUDA's driver
 * (WEFT_SOURCE_IDLE), which calls InitializeInjection at cuInit in the processes that use
 * CUDA only. */
static int gpu_open(char *why, size_t n)
{
	if (!atomic_load(&injected) && gpu_deferred())
		return WEFT_SOURCE_IDLE;
	pthread_mutex_lock(&start_lock);
	if (started) {
		pthread_mutex_unlock(&start_lock);
		return atomic_load(&active) ? 0 : -EALREADY;
	}
	started = 1;
	weft_in_runtime++;
	in_collector++;
	int rc = open_cupti(why, n);
	in_collector--;
	weft_in_runtime--;
	if (rc) {
		meta_state(0, why);
	} else {
		char text[1200];
		snprintf(text, sizeof(text), "%s (CUPTI API version %u): kernels, copies, memsets, CUDA calls, device memory",
			 lib_path, cupti_version);
		meta_state(1, text);
		clock_pair();
		atomic_store(&next_clock_ticks, weft__ticks() + clock_step());
		atomic_store(&active, 1);
	}
	pthread_mutex_unlock(&start_lock);
	return rc;
}

/* The last flush, from weft_stop before it stops the run and takes its lock (what CUPTI holds
 * becomes records while the run still takes them), and the totals. At a fatal signal only
 * when it did not come from inside CUPTI or a callback of this file on this thread (CUPTI's
 * locks may be held there). */
static _Atomic int drained;
static void gpu_drain(void)
{
	static _Atomic int stopping;
	if (!atomic_load(&active) || (weft_g.in_signal && in_collector) || atomic_exchange(&stopping, 1))
		return;
	in_collector++;
	cu.activity_flush_all(WEFT_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	clock_pair();
	char text[1200];
	snprintf(text, sizeof(text), "%s (CUPTI API version %u): kernels, copies, memsets, CUDA calls, device memory",
		 lib_path, cupti_version);
	pthread_mutex_lock(&conv_lock);
	meta_state(1, text);
	pthread_mutex_unlock(&conv_lock);
	atomic_store(&active, 0);
	atomic_store(&drained, 1);
	in_collector--;
}

/* Callbacks off, after the drain (a fatal signal's stop leaves them subscribed: CUPTI's own
 * state may be mid-change on another thread). */
static void gpu_stop(void)
{
	if (!atomic_exchange(&drained, 0) || weft_g.in_signal)
		return;
	in_collector++;
	cu.enable_domain(0, sub, WEFT_CUPTI_DOMAIN_RUNTIME_API);
	cu.enable_domain(0, sub, WEFT_CUPTI_DOMAIN_DRIVER_API);
	for (size_t j = 0; j < NKINDS; j++)
		cu.activity_disable(kinds[j]);
	cu.unsubscribe(sub);
	in_collector--;
}

/* Does CUDA_INJECTION64_PATH name this library? */
static int gpu_deferred(void)
{
	const char *inj = getenv("CUDA_INJECTION64_PATH");
	Dl_info di;
	char a[4096], b[4096];
	if (!inj || !*inj || !dladdr((void *)gpu_open, &di) || !di.dli_fname)
		return 0;
	if (!realpath(inj, a) || !realpath(di.dli_fname, b))
		return 0;
	return !strcmp(a, b);
}

static int gpu_wanted(void)
{
	return weft_cfg.gpu;
}

static void gpu_label(char *buf, size_t n)
{
	snprintf(buf, n, "gpu"); /* "gpu unavailable: why", as documented */
}

static void gpu_describe(char *buf, size_t n)
{
	snprintf(buf, n, "%s (CUPTI API version %u): kernels, copies, memsets, CUDA calls, device memory", lib_path,
		 cupti_version);
}

const struct weft_source weft_source_gpu = {
	.name = "gpu",
	.option = "gpu",
	.wanted = gpu_wanted,
	.label = gpu_label,
	.open = gpu_open,
	.drain = gpu_drain,
	.fork_child = gpu_atfork_child,
	.stop = gpu_stop,
	.describe = gpu_describe,
};

/* CUDA's injection entry (CUDA_INJECTION64_PATH names libweft-preload.so under `weft record
 * --gpu`): the driver calls it at cuInit. Starts the collector if weft runs with gpu=1 and
 * it has not started yet. */
WEFT_API int InitializeInjection(void)
{
	atomic_store(&injected, 1);
	if (weft_ensure_started() == 0)
		weft_sources_start_late(weft_sources(), "gpu");
	return 1;
}
