/*
 * cupti-api.c - the GPU collector's API callbacks (cuptiSubscribe, DRIVER_API and RUNTIME_API
 * domains; collect/cupti.c has the overview). They run on the program's thread at every CUDA
 * call's entry and exit: the call becomes a slice of that thread (a site per function name,
 * category "cuda"), on weft's own clock. A launch, copy or memset call also writes a FLOW out
 * whose id (weft_gpu_flow_id) names the CUPTI correlation id, which the device activity it
 * causes carries too. cudaMalloc / cudaFree and their driver, async and managed variants go
 * into a named heap per GPU ("GPU N memory"), so device memory is attributed to the slice that
 * allocated it like any heap. A driver call made while a runtime call is open on the thread
 * (the runtime's own) is a slice too, but leaves flows and memory to the runtime call.
 */
#include "collect/cupti-internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CBID 4096     /* callback ids per domain (CUDA 12: under 1000) */
#define MAX_DEVICES 64

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

/* Per callback id, made on first sight under sites_lock, then read without it (published with
 * a release store). */
static pthread_mutex_t sites_lock = PTHREAD_MUTEX_INITIALIZER;
static struct api_site *_Atomic api_sites[2][MAX_CBID];
static struct weft_site *_Atomic heaps[MAX_DEVICES];

/* Per thread: how many runtime calls are open, the last correlation id given a flow. */
static __thread int rt_depth WEFT_TLS;
static __thread uint32_t last_flow WEFT_TLS;

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
	if (!weft_cu.get_device_id || weft_cu.get_device_id(ctx, &dev) != WEFT_CUPTI_SUCCESS || dev >= MAX_DEVICES)
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

void weft_cupti__on_api(void *ud, int domain, uint32_t cbid, const void *data)
{
	(void)ud;
	if (domain != WEFT_CUPTI_DOMAIN_RUNTIME_API && domain != WEFT_CUPTI_DOMAIN_DRIVER_API)
		return;
	if (!atomic_load_explicit(&weft_cupti__active, memory_order_relaxed) || weft_in_runtime)
		return;
	const struct weft_cupti_callback_data *cb = data;
	int rt = domain == WEFT_CUPTI_DOMAIN_RUNTIME_API;
	struct api_site *s = api_site(domain, cbid, cb->function_name);
	if (!s)
		return;
	int saved = errno;
	weft_cupti__in_collector++;
	if (cb->callback_site == WEFT_CUPTI_API_ENTER) {
		int own = rt || rt_depth == 0; /* a runtime call's own driver calls: a slice only */
		rt_depth += rt;
		atomic_fetch_add_explicit(&weft_cupti__n_api, 1, memory_order_relaxed);
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
		weft_cupti__clock_pair_due();
	} else {
		rt_depth -= rt && rt_depth > 0;
		int own = rt || rt_depth == 0;
		if (weft__on(&s->site))
			weft__slice(weft__hdr(s->site.id, WEFT_R_END, 0, 0));
		if (own && (s->role == ROLE_MALLOC || s->role == ROLE_MALLOC_PITCH))
			memory_op(s, cb, 1);
	}
	weft_cupti__in_collector--;
	errno = saved;
}

/* A fork child: the lock may have been copied held (a callback making a site); what it
 * guards is published whole. */
void weft_cupti__api_atfork_child(void)
{
	pthread_mutex_init(&sites_lock, NULL);
}
