/*
 * cupti.c - the GPU collector (gpu=1, `weft record --gpu`): CUDA kernels, copies and memsets
 * with their device times and resources, the CUDA API calls that launched them, and device
 * memory, through NVIDIA's CUPTI loaded at run time with dlopen (cupti_lib=, else searched:
 * CUDA_HOME, /usr/local/cuda, the loader path). weft has no link-time dependency on CUDA; the
 * part of CUPTI's ABI used is declared in cupti_abi.h.
 *
 * Two halves, each in a file of its own (cupti-internal.h lists what they share):
 *   API callbacks (cupti-api.c) (cuptiSubscribe, DRIVER_API and RUNTIME_API domains) run on the program's
 *     thread at every CUDA call's entry and exit: the call becomes a slice of that thread (a
 *     site per function name, category "cuda"), on weft's own clock. A launch, copy or memset
 *     call also writes a FLOW out whose id (weft_gpu_flow_id) names the CUPTI correlation id,
 *     which the device activity it causes carries too. cudaMalloc / cudaFree and their
 *     driver, async and managed variants go into a named heap per GPU ("GPU N memory"), so
 *     device memory is attributed to the slice that allocated it like any heap.
 *     A driver call made while a runtime call is open on the thread (the runtime's own) is a
 *     slice too, but leaves flows and memory to the runtime call.
 *   Activity buffers (cupti-activity.c; cuptiActivityRegisterCallbacks) of CONCURRENT_KERNEL, MEMCPY, MEMSET
 *     and DEVICE records: CUPTI fills buffers weft gives it and hands them back full on a
 *     thread of its own (or, at a flush, on the flushing thread); each record becomes a GPU
 *     record (format 1.6) of the thread that handed the buffer back. Device times stay in
 *     CUPTI's clock: pairs (cuptiGetTimestamp, CLOCK_BOOTTIME) are written as GPU_CLOCK
 *     metadata at start, every 100 ms from the API callbacks, at each buffer and at stop, and
 *     the readers map device times through them (analysis/gpu.c).
 * Records CUPTI could not store (cuptiActivityGetNumDroppedRecords) are counted in the GPU
 * metadata record and shown as drops. Flushed (cuptiActivityFlushAll) at weft_stop, which
 * runs at exit too, and at a fatal signal when the signal did not come from inside CUPTI or
 * the collector's callbacks. This file: loading CUPTI, the clock map, start, drain, stop and
 * fork, the gpu source's face and CUDA's injection entry.
 */
#include "collect/cupti-internal.h"
#include "collect/source.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLOCK_EVERY_NS 100000000ull

/* The loaded library. Written by start (under weft_g.lock, before any callback is enabled),
 * read by the callbacks and stop. */
struct weft_cupti_api weft_cu;
static void *lib;
static weft_cupti_subscriber sub;
_Atomic int weft_cupti__active; /* 1 from start to stop: callbacks record */
static char lib_path[1024];
static uint32_t cupti_version;

__thread int weft_cupti__in_collector WEFT_TLS; /* inside a callback or a CUPTI call of ours */
_Atomic uint64_t weft_cupti__n_records, weft_cupti__n_dropped, weft_cupti__n_buffers, weft_cupti__n_api,
	weft_cupti__n_buffers_out;
static _Atomic uint64_t next_clock_ticks;

/* ---- the clock map ---- */

/* The narrowest of three tries: a thread preempted between the readings gives a wide pair. */
void weft_cupti__clock_pair(void)
{
	uint64_t best[3] = {0, 0, UINT64_MAX};
	for (int i = 0; i < 3; i++) {
		uint64_t g = 0, b0 = weft_boottime_ns();
		if (!weft_cu.get_timestamp || weft_cu.get_timestamp(&g) != WEFT_CUPTI_SUCCESS)
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
void weft_cupti__clock_pair_due(void)
{
	uint64_t now = weft__ticks(), due = atomic_load_explicit(&next_clock_ticks, memory_order_relaxed);
	if (now < due)
		return;
	uint64_t step = clock_step();
	if (atomic_compare_exchange_strong(&next_clock_ticks, &due, now + step))
		weft_cupti__clock_pair();
}

/* ---- loading, start, stop ---- */

static const char *result_string(weft_cupti_result r, char *buf, size_t n)
{
	const char *s = NULL;
	if (!weft_cu.get_result_string || weft_cu.get_result_string(r, &s) != WEFT_CUPTI_SUCCESS)
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

#define SYM(field, name) (*(void **)&weft_cu.field = dlsym(lib, name))

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
	if (!weft_cu.get_timestamp || !weft_cu.activity_enable || !weft_cu.activity_disable || !weft_cu.activity_register_callbacks ||
	    !weft_cu.activity_get_next_record || !weft_cu.activity_flush_all || !weft_cu.subscribe || !weft_cu.unsubscribe ||
	    !weft_cu.enable_domain) {
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
	uint32_t st = (uint32_t)state, nt = (uint32_t)weft_cupti__ntids;
	uint64_t c[4] = {atomic_load(&weft_cupti__n_records), atomic_load(&weft_cupti__n_dropped), atomic_load(&weft_cupti__n_buffers), atomic_load(&weft_cupti__n_api)};
	memcpy(h, &st, 4);
	memcpy(h + 4, &nt, 4);
	memcpy(h + 8, c, sizeof(c));
	memcpy(h + 40, &cupti_version, 4);
	memcpy(h + 48, weft_cupti__tids, 4 * (size_t)weft_cupti__ntids);
	weft_meta_write(WEFT_M_GPU, h, 48 + 4 * (size_t)weft_cupti__ntids, text, strlen(text) + 1);
}

static const unsigned kinds[] = {WEFT_CUPTI_ACT_DEVICE, WEFT_CUPTI_ACT_CONCURRENT_KERNEL, WEFT_CUPTI_ACT_MEMCPY,
				 WEFT_CUPTI_ACT_MEMSET};
#define NKINDS (sizeof(kinds) / sizeof(kinds[0]))

static void unload(void)
{
	/* the library stays mapped: CUPTI and the driver keep threads and exit handlers */
	memset(&weft_cu, 0, sizeof(weft_cu));
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
	if (weft_cu.get_version && (r = weft_cu.get_version(&cupti_version)) != WEFT_CUPTI_SUCCESS) {
		snprintf(why, n, "cuptiGetVersion failed: %s", result_string(r, eb, sizeof(eb)));
		unload();
		return -EIO;
	}
	if ((r = weft_cu.activity_register_callbacks(weft_cupti__buffer_requested, weft_cupti__buffer_completed)) !=
	    WEFT_CUPTI_SUCCESS) {
		snprintf(why, n, "cuptiActivityRegisterCallbacks failed: %s", result_string(r, eb, sizeof(eb)));
		unload();
		return -EIO;
	}
	if ((r = weft_cu.subscribe(&sub, weft_cupti__on_api, NULL)) != WEFT_CUPTI_SUCCESS) {
		snprintf(why, n, "cuptiSubscribe failed: %s%s", result_string(r, eb, sizeof(eb)),
			 r == WEFT_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS ? " (another CUPTI client, such as a profiler, is attached)"
			 : !driver_present() ? " (no NVIDIA driver: libcuda.so.1 cannot be loaded)" : "");
		unload();
		return -EBUSY;
	}
	for (size_t i = 0; i < NKINDS; i++) {
		if ((r = weft_cu.activity_enable(kinds[i])) != WEFT_CUPTI_SUCCESS) {
			snprintf(why, n, "cuptiActivityEnable(%u) failed: %s%s", kinds[i], result_string(r, eb, sizeof(eb)),
				 r == WEFT_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES
					 ? " (profiling needs NVreg_RestrictProfilingToAdminUsers=0 or root)" : "");
			for (size_t j = 0; j < i; j++)
				weft_cu.activity_disable(kinds[j]);
			weft_cu.unsubscribe(sub);
			unload();
			return -EPERM;
		}
	}
	if ((r = weft_cu.enable_domain(1, sub, WEFT_CUPTI_DOMAIN_RUNTIME_API)) != WEFT_CUPTI_SUCCESS ||
	    (r = weft_cu.enable_domain(1, sub, WEFT_CUPTI_DOMAIN_DRIVER_API)) != WEFT_CUPTI_SUCCESS) {
		snprintf(why, n, "cuptiEnableDomain failed: %s", result_string(r, eb, sizeof(eb)));
		for (size_t j = 0; j < NKINDS; j++)
			weft_cu.activity_disable(kinds[j]);
		weft_cu.unsubscribe(sub);
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
	weft_cupti__api_atfork_child();
	weft_cupti__activity_atfork_child();
	pthread_mutex_init(&start_lock, NULL);
	atomic_store(&weft_cupti__active, 0);
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
		return atomic_load(&weft_cupti__active) ? 0 : -EALREADY;
	}
	started = 1;
	weft_in_runtime++;
	weft_cupti__in_collector++;
	int rc = open_cupti(why, n);
	weft_cupti__in_collector--;
	weft_in_runtime--;
	if (rc) {
		meta_state(0, why);
	} else {
		char text[1200];
		snprintf(text, sizeof(text), "%s (CUPTI API version %u): kernels, copies, memsets, CUDA calls, device memory",
			 lib_path, cupti_version);
		meta_state(1, text);
		weft_cupti__clock_pair();
		atomic_store(&next_clock_ticks, weft__ticks() + clock_step());
		atomic_store(&weft_cupti__active, 1);
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
	if (!atomic_load(&weft_cupti__active) || (weft_g.in_signal && weft_cupti__in_collector) || atomic_exchange(&stopping, 1))
		return;
	weft_cupti__in_collector++;
	weft_cu.activity_flush_all(WEFT_CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	weft_cupti__clock_pair();
	char text[1200];
	snprintf(text, sizeof(text), "%s (CUPTI API version %u): kernels, copies, memsets, CUDA calls, device memory",
		 lib_path, cupti_version);
	pthread_mutex_lock(&weft_cupti__conv_lock);
	meta_state(1, text);
	pthread_mutex_unlock(&weft_cupti__conv_lock);
	atomic_store(&weft_cupti__active, 0);
	atomic_store(&drained, 1);
	weft_cupti__in_collector--;
}

/* Callbacks off, after the drain (a fatal signal's stop leaves them subscribed: CUPTI's own
 * state may be mid-change on another thread). */
static void gpu_stop(void)
{
	if (!atomic_exchange(&drained, 0) || weft_g.in_signal)
		return;
	weft_cupti__in_collector++;
	weft_cu.enable_domain(0, sub, WEFT_CUPTI_DOMAIN_RUNTIME_API);
	weft_cu.enable_domain(0, sub, WEFT_CUPTI_DOMAIN_DRIVER_API);
	for (size_t j = 0; j < NKINDS; j++)
		weft_cu.activity_disable(kinds[j]);
	weft_cu.unsubscribe(sub);
	weft_cupti__in_collector--;
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
