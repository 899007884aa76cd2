/*
 * fake_cupti.so - a stand-in for NVIDIA's libcupti with the real exported names, signatures,
 * callback ids and activity record layouts (those weft declares in src/collect/cupti_abi.h,
 * checked against CUDA 13's headers by tests/gpu/layout_check.c), driven by the fake CUDA calls
 * of fake_cuda.h, so the whole path from the collector to the .pftrace runs in every `make
 * test` without a GPU. It behaves as CUPTI does where weft depends on it:
 *   - one subscriber; API callbacks at entry and exit, on the calling thread, for enabled
 *     domains only, with a process-wide correlation id per call that the activity record of
 *     the device work carries too; runtime function names as CUPTI gives them ("..._v3020");
 *   - activity records only for enabled kinds, each written at its newest full size (CUDA 13:
 *     kernel 216 bytes, memcpy 96, memset 88, device 184; the tail zero) into buffers asked of
 *     the client's bufferRequested on the thread that needs one; a full buffer goes back through
 *     bufferCompleted on a thread of the fake's own, cuptiActivityFlushAll hands back every
 *     buffer (partly filled ones too) on the calling thread; no buffer from the client: the
 *     record is dropped and counted (cuptiActivityGetNumDroppedRecords: since its last call);
 *   - a device clock 40 ppm fast and 3000 s ahead of CLOCK_MONOTONIC_RAW (cuptiGetTimestamp);
 *   - the first fake call plays the driver's cuInit: InitializeInjection of the library named by
 *     CUDA_INJECTION64_PATH.
 * FAKE_CUPTI_FAIL=enable|subscribe|init makes cuptiActivityEnable (INSUFFICIENT_PRIVILEGES),
 * cuptiSubscribe (MULTIPLE_SUBSCRIBERS) or cuptiGetVersion (NOT_INITIALIZED) fail.
 */

#include "fake_cuda.h"
#include "collect/cupti_abi.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REC_KERNEL 216
#define REC_MEMCPY 96
#define REC_MEMSET 88
#define REC_DEVICE 184
#define MAX_STREAMS 256
#define CTX ((void *)0x1000)

/* Everything below is guarded by lock, except the callback pointers, set once by the client
 * before it calls anything else. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t have_full = PTHREAD_COND_INITIALIZER;
static weft_cupti_callback_fn api_fn;
static void *api_ud;
static int subscribed, domains[3];
static weft_cupti_buffer_requested_fn requested;
static weft_cupti_buffer_completed_fn completed;
static int kinds[64];
static uint8_t *buf;
static size_t buf_size, buf_used;
static struct full { uint8_t *p; size_t size, used; struct full *next; } *fulls;
static pthread_t worker;
static int have_worker;
static uint64_t dropped, drop_next, launches;
static uint32_t next_corr;
static uint64_t stream_end[MAX_STREAMS];
static int device_sent;
static uint64_t next_addr = 0x7f1000000000ull;
static const char *names[64];
static int nnames;

static const char *fail(void)
{
	const char *f = getenv("FAKE_CUPTI_FAIL");
	return f ? f : "";
}

static uint64_t raw_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC_RAW, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static uint64_t dev_now(void)
{
	uint64_t n = raw_ns();
	return n + n / 25000 + 3000000000000ull; /* 40 ppm fast, 3000 s ahead */
}

/* ---- CUPTI's exported functions ---- */

int cuptiGetVersion(uint32_t *v)
{
	if (!strcmp(fail(), "init"))
		return WEFT_CUPTI_ERROR_NOT_INITIALIZED;
	*v = 130001;
	return 0;
}

int cuptiGetResultString(int r, const char **s)
{
	*s = r == WEFT_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
	     : r == WEFT_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
	     : r == WEFT_CUPTI_ERROR_NOT_INITIALIZED ? "CUPTI_ERROR_NOT_INITIALIZED"
	     : r ? "CUPTI_ERROR_UNKNOWN" : "CUPTI_SUCCESS";
	return 0;
}

int cuptiGetTimestamp(uint64_t *ns)
{
	*ns = dev_now();
	return 0;
}

static void queue_device(void);

int cuptiActivityEnable(uint32_t k)
{
	if (!strcmp(fail(), "enable"))
		return WEFT_CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
	if (k >= 64)
		return WEFT_CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&lock);
	kinds[k] = 1;
	pthread_mutex_unlock(&lock);
	return 0;
}

int cuptiActivityDisable(uint32_t k)
{
	if (k >= 64)
		return WEFT_CUPTI_ERROR_INVALID_KIND;
	pthread_mutex_lock(&lock);
	kinds[k] = 0;
	pthread_mutex_unlock(&lock);
	return 0;
}

static void *worker_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		while (!fulls)
			pthread_cond_wait(&have_full, &lock);
		struct full *f = fulls;
		fulls = f->next;
		pthread_mutex_unlock(&lock);
		completed(CTX, 0, f->p, f->size, f->used);
		free(f);
		pthread_mutex_lock(&lock);
	}
	return NULL;
}

int cuptiActivityRegisterCallbacks(weft_cupti_buffer_requested_fn a, weft_cupti_buffer_completed_fn b)
{
	if (!a || !b)
		return 1;
	pthread_mutex_lock(&lock);
	requested = a;
	completed = b;
	if (!have_worker)
		have_worker = pthread_create(&worker, NULL, worker_main, NULL) == 0;
	pthread_mutex_unlock(&lock);
	return 0;
}

int cuptiActivityGetNextRecord(uint8_t *b, size_t valid, struct weft_cupti_activity **r)
{
	size_t off = 0;
	if (*r) {
		uint32_t k = (*r)->kind;
		size_t sz = k == WEFT_CUPTI_ACT_MEMCPY ? REC_MEMCPY : k == WEFT_CUPTI_ACT_MEMSET ? REC_MEMSET
			    : k == WEFT_CUPTI_ACT_DEVICE ? REC_DEVICE : REC_KERNEL;
		off = (size_t)((uint8_t *)*r - b) + sz;
	}
	if (off + sizeof(uint32_t) > valid)
		return WEFT_CUPTI_ERROR_MAX_LIMIT_REACHED;
	*r = (struct weft_cupti_activity *)(b + off);
	return 0;
}

int cuptiActivityGetNumDroppedRecords(void *ctx, uint32_t stream, size_t *d)
{
	(void)ctx;
	(void)stream;
	pthread_mutex_lock(&lock);
	*d = dropped;
	dropped = 0;
	pthread_mutex_unlock(&lock);
	return 0;
}

int cuptiActivityFlushAll(uint32_t flag)
{
	(void)flag;
	pthread_mutex_lock(&lock);
	struct full *list = fulls;
	fulls = NULL;
	uint8_t *p = buf;
	size_t size = buf_size, used = buf_used;
	buf = NULL;
	buf_used = 0;
	pthread_mutex_unlock(&lock);
	/* in order: the full ones first */
	struct full *rev = NULL;
	while (list) {
		struct full *n = list->next;
		list->next = rev;
		rev = list;
		list = n;
	}
	while (rev) {
		struct full *n = rev->next;
		completed(CTX, 0, rev->p, rev->size, rev->used);
		free(rev);
		rev = n;
	}
	if (p)
		completed(CTX, 0, p, size, used);
	return 0;
}

int cuptiSubscribe(weft_cupti_subscriber *s, weft_cupti_callback_fn f, void *u)
{
	pthread_mutex_lock(&lock);
	int busy = subscribed || !strcmp(fail(), "subscribe");
	if (!busy) {
		subscribed = 1;
		api_fn = f;
		api_ud = u;
		*s = (weft_cupti_subscriber)(uintptr_t)1;
	}
	pthread_mutex_unlock(&lock);
	return busy ? WEFT_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS : 0;
}

int cuptiUnsubscribe(weft_cupti_subscriber s)
{
	(void)s;
	pthread_mutex_lock(&lock);
	subscribed = 0;
	domains[1] = domains[2] = 0;
	pthread_mutex_unlock(&lock);
	return 0;
}

int cuptiEnableDomain(uint32_t enable, weft_cupti_subscriber s, int d)
{
	(void)s;
	if (d < 1 || d > 2)
		return 1;
	pthread_mutex_lock(&lock);
	domains[d] = enable != 0;
	pthread_mutex_unlock(&lock);
	return 0;
}

int cuptiGetDeviceId(void *ctx, uint32_t *dev)
{
	(void)ctx;
	*dev = 0;
	return 0;
}

/* ---- the fake driver ---- */

/* Room for one record of `size` bytes in the current buffer (lock held), or NULL: dropped. */
static uint8_t *room(size_t size)
{
	if (drop_next) {
		drop_next--;
		dropped++;
		return NULL;
	}
	if (buf && buf_used + size > buf_size) {
		struct full *f = malloc(sizeof(*f));
		if (f) {
			*f = (struct full){buf, buf_size, buf_used, fulls};
			fulls = f;
			pthread_cond_signal(&have_full);
		}
		buf = NULL;
	}
	if (!buf) {
		size_t max = 0;
		requested(&buf, &buf_size, &max);
		buf_used = 0;
		if (!buf || buf_size < size) {
			buf = NULL;
			dropped++;
			return NULL;
		}
	}
	uint8_t *r = buf + buf_used;
	memset(r, 0, size);
	buf_used += size;
	return r;
}

static void queue_device(void)
{
	if (device_sent || !kinds[WEFT_CUPTI_ACT_DEVICE])
		return;
	device_sent = 1;
	uint8_t *r = room(REC_DEVICE);
	if (!r)
		return;
	struct weft_cupti_device d;
	memset(&d, 0, sizeof(d));
	d.kind = WEFT_CUPTI_ACT_DEVICE;
	d.global_memory_size = 80ull << 30;
	d.num_threads_per_warp = 32;
	d.core_clock_rate = 1980000;
	d.num_multiprocessors = 132;
	d.max_warps_per_multiprocessor = 64;
	d.max_blocks_per_multiprocessor = 32;
	d.max_shared_memory_per_multiprocessor = 233472;
	d.max_registers_per_multiprocessor = 65536;
	d.max_registers_per_block = 65536;
	d.max_shared_memory_per_block = 49152;
	d.max_threads_per_block = 1024;
	d.max_block_dim_x = d.max_block_dim_y = 1024;
	d.max_block_dim_z = 64;
	d.compute_capability_major = 9;
	d.compute_capability_minor = 0;
	d.id = 0;
	d.name = "Fake GPU H100";
	memcpy(r, &d, sizeof(d));
}

/* cuInit, once: the driver loads CUDA_INJECTION64_PATH and calls its InitializeInjection. */
static void inject(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	void *h = path && *path ? dlopen(path, RTLD_NOW) : NULL;
	int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
	if (init)
		init();
}

static void cuinit(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, inject);
}

struct call {
	int domain;
	uint32_t cbid;
	struct weft_cupti_callback_data cb;
	int ret;
};

static void enter(struct call *c, int domain, uint32_t cbid, const char *name, const void *params)
{
	cuinit();
	memset(c, 0, sizeof(*c));
	c->domain = domain;
	c->cbid = cbid;
	c->cb.function_name = name;
	c->cb.function_params = params;
	c->cb.function_return_value = &c->ret;
	c->cb.context = CTX;
	c->cb.context_uid = 1;
	pthread_mutex_lock(&lock);
	c->cb.correlation_id = ++next_corr;
	int on = subscribed && domains[domain];
	weft_cupti_callback_fn f = api_fn;
	pthread_mutex_unlock(&lock);
	c->cb.callback_site = WEFT_CUPTI_API_ENTER;
	if (on)
		f(api_ud, domain, cbid, &c->cb);
}

static void leave(struct call *c)
{
	pthread_mutex_lock(&lock);
	int on = subscribed && domains[c->domain];
	weft_cupti_callback_fn f = api_fn;
	pthread_mutex_unlock(&lock);
	c->cb.callback_site = WEFT_CUPTI_API_EXIT;
	if (on)
		f(api_ud, c->domain, c->cbid, &c->cb);
}

/* The device interval of new work on a stream (lock held). */
static void schedule(uint32_t stream, uint64_t dur, uint64_t *start, uint64_t *end)
{
	uint64_t s = dev_now() + 3000, *last = &stream_end[stream % MAX_STREAMS];
	if (s < *last)
		s = *last;
	*start = s;
	*end = s + dur;
	*last = *end;
}

static const char *intern(const char *name)
{
	for (int i = 0; i < nnames; i++)
		if (!strcmp(names[i], name))
			return names[i];
	if (nnames == 64)
		return "(too many kernels)";
	return names[nnames++] = strdup(name);
}

static void kernel(const struct call *c, uint32_t stream, const char *mangled, const uint32_t grid[3],
		   const uint32_t block[3], uint16_t regs, uint32_t ss, uint32_t ds, uint32_t local, uint64_t dur)
{
	pthread_mutex_lock(&lock);
	launches++;
	queue_device();
	if (kinds[WEFT_CUPTI_ACT_CONCURRENT_KERNEL] || kinds[WEFT_CUPTI_ACT_KERNEL]) {
		struct weft_cupti_kernel k;
		memset(&k, 0, sizeof(k));
		k.kind = kinds[WEFT_CUPTI_ACT_CONCURRENT_KERNEL] ? WEFT_CUPTI_ACT_CONCURRENT_KERNEL : WEFT_CUPTI_ACT_KERNEL;
		k.registers_per_thread = regs;
		schedule(stream, dur, &k.start, &k.end);
		k.completed = k.end;
		k.device_id = 0;
		k.context_id = 1;
		k.stream_id = stream;
		k.grid_x = (int32_t)grid[0];
		k.grid_y = (int32_t)grid[1];
		k.grid_z = (int32_t)grid[2];
		k.block_x = (int32_t)block[0];
		k.block_y = (int32_t)block[1];
		k.block_z = (int32_t)block[2];
		k.static_shared_memory = (int32_t)ss;
		k.dynamic_shared_memory = (int32_t)ds;
		k.local_memory_per_thread = local;
		k.local_memory_total = local * 132 * 2048;
		k.correlation_id = c->cb.correlation_id;
		k.grid_id = (int64_t)launches;
		k.name = intern(mangled);
		k.shared_memory_executed = 233472;
		uint8_t *r = room(REC_KERNEL);
		if (r)
			memcpy(r, &k, sizeof(k));
	}
	pthread_mutex_unlock(&lock);
}

void fakecuda_launch(uint32_t stream, const char *mangled, const uint32_t grid[3], const uint32_t block[3],
		     uint16_t regs, uint32_t static_shared, uint32_t dynamic_shared, uint32_t local_per_thread,
		     uint64_t duration_ns)
{
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_RUNTIME_API, 211, "cudaLaunchKernel_v7000", NULL);
	kernel(&c, stream, mangled, grid, block, regs, static_shared, dynamic_shared, local_per_thread, duration_ns);
	leave(&c);
}

void fakecuda_graph_launch(uint32_t stream, const char *mangled, unsigned nodes, uint64_t duration_ns)
{
	static const uint32_t g[3] = {1024, 1, 1}, bl[3] = {128, 1, 1};
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_RUNTIME_API, 311, "cudaGraphLaunch_v10000", NULL);
	for (unsigned i = 0; i < nodes; i++) /* every node's record carries the launch's id */
		kernel(&c, stream, mangled, g, bl, 32, 0, 0, 0, duration_ns);
	leave(&c);
}

void fakecuda_driver_launch(uint32_t stream, const char *mangled, const uint32_t grid[3], const uint32_t block[3],
			    uint16_t regs, uint64_t duration_ns)
{
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_DRIVER_API, 307, "cuLaunchKernel", NULL);
	kernel(&c, stream, mangled, grid, block, regs, 0, 0, 0, duration_ns);
	leave(&c);
}

void fakecuda_memcpy(unsigned copy_kind, uint64_t bytes, uint32_t stream, int async)
{
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_RUNTIME_API, async ? 41 : 31, async ? "cudaMemcpyAsync_v3020" : "cudaMemcpy_v3020",
	      NULL);
	pthread_mutex_lock(&lock);
	queue_device();
	uint64_t end = 0;
	if (kinds[WEFT_CUPTI_ACT_MEMCPY]) {
		struct weft_cupti_memcpy m;
		memset(&m, 0, sizeof(m));
		m.kind = WEFT_CUPTI_ACT_MEMCPY;
		m.copy_kind = (uint8_t)copy_kind;
		m.src_kind = copy_kind == WEFT_CUPTI_MEMCPY_HTOD ? 2 : 3; /* pinned host, or device */
		m.dst_kind = copy_kind == WEFT_CUPTI_MEMCPY_DTOH ? 1 : 3; /* pageable host, or device */
		m.flags = async ? 1 : 0;
		m.bytes = bytes;
		schedule(stream, bytes / 20 + 1000, &m.start, &m.end); /* 20 GB/s */
		m.device_id = 0;
		m.context_id = 1;
		m.stream_id = stream;
		m.correlation_id = c.cb.correlation_id;
		end = m.end;
		uint8_t *r = room(REC_MEMCPY);
		if (r)
			memcpy(r, &m, sizeof(m));
	}
	pthread_mutex_unlock(&lock);
	while (!async && dev_now() < end)
		; /* a synchronous copy returns when it is done */
	leave(&c);
}

void fakecuda_memset(uint64_t bytes, uint32_t value, uint32_t stream)
{
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_RUNTIME_API, 49, "cudaMemset_v3020", NULL);
	pthread_mutex_lock(&lock);
	queue_device();
	if (kinds[WEFT_CUPTI_ACT_MEMSET]) {
		struct weft_cupti_memset m;
		memset(&m, 0, sizeof(m));
		m.kind = WEFT_CUPTI_ACT_MEMSET;
		m.value = value;
		m.bytes = bytes;
		schedule(stream, bytes / 100 + 1000, &m.start, &m.end);
		m.device_id = 0;
		m.context_id = 1;
		m.stream_id = stream;
		m.correlation_id = c.cb.correlation_id;
		m.memory_kind = 3;
		uint8_t *r = room(REC_MEMSET);
		if (r)
			memcpy(r, &m, sizeof(m));
	}
	pthread_mutex_unlock(&lock);
	leave(&c);
}

void fakecuda_synchronize(void)
{
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_RUNTIME_API, 165, "cudaDeviceSynchronize_v3020", NULL);
	uint64_t last = 0;
	pthread_mutex_lock(&lock);
	for (int i = 0; i < MAX_STREAMS; i++)
		if (stream_end[i] > last)
			last = stream_end[i];
	pthread_mutex_unlock(&lock);
	while (dev_now() < last)
		;
	leave(&c);
}

int fakecuda_malloc(void **p, size_t n)
{
	struct { void **devPtr; size_t size; } params = {p, n}; /* cudaMalloc_v3020_params */
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_RUNTIME_API, 20, "cudaMalloc_v3020", &params);
	pthread_mutex_lock(&lock);
	*p = (void *)(uintptr_t)next_addr;
	next_addr += (n + 0xfffff) & ~(uint64_t)0xfffff;
	pthread_mutex_unlock(&lock);
	leave(&c);
	return 0;
}

int fakecuda_free(void *p)
{
	struct { void *devPtr; } params = {p}; /* cudaFree_v3020_params */
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_RUNTIME_API, 22, "cudaFree_v3020", &params);
	leave(&c);
	return 0;
}

int fakecuda_cu_mem_alloc(uint64_t *p, size_t n)
{
	struct { uint64_t *dptr; size_t bytesize; } params = {p, n}; /* cuMemAlloc_v2_params */
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_DRIVER_API, 243, "cuMemAlloc_v2", &params);
	pthread_mutex_lock(&lock);
	*p = next_addr;
	next_addr += (n + 0xfffff) & ~(uint64_t)0xfffff;
	pthread_mutex_unlock(&lock);
	leave(&c);
	return 0;
}

int fakecuda_cu_mem_free(uint64_t p)
{
	struct { uint64_t dptr; } params = {p}; /* cuMemFree_v2_params */
	struct call c;
	enter(&c, WEFT_CUPTI_DOMAIN_DRIVER_API, 245, "cuMemFree_v2", &params);
	leave(&c);
	return 0;
}

void fakecuda_drop_next(unsigned n)
{
	pthread_mutex_lock(&lock);
	drop_next += n;
	pthread_mutex_unlock(&lock);
}

int fakecuda_enabled_kind(uint32_t kind)
{
	pthread_mutex_lock(&lock);
	int on = kind < 64 && kinds[kind];
	pthread_mutex_unlock(&lock);
	return on;
}

uint64_t fakecuda_launches(void)
{
	pthread_mutex_lock(&lock);
	uint64_t n = launches;
	pthread_mutex_unlock(&lock);
	return n;
}
