/*
 * cupti-activity.c - the GPU collector's activity buffers (cuptiActivityRegisterCallbacks;
 * collect/cupti.c has the overview): CUPTI fills buffers weft gives it with CONCURRENT_KERNEL,
 * MEMCPY, MEMSET and DEVICE records and hands them back full on a thread of its own (or, at a
 * flush, on the flushing thread); each record becomes a GPU record (format 1.6) of the thread
 * that handed the buffer back, a kernel named by a site per kernel name, a device one
 * GPU_DEVICE metadata record. Device times stay in CUPTI's clock (the GPU_CLOCK pairs map
 * them). Records CUPTI could not store are counted after each buffer.
 */
#include "collect/cupti-internal.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_DEVICES 64
#define MAX_BUFFERS 64    /* activity buffers out at once: beyond, CUPTI drops (and counts) */

/* Buffer conversion: under conv_lock (CUPTI may hand buffers back on several threads). */
pthread_mutex_t weft_cupti__conv_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { const char *key; struct weft_site *site; } *names; /* kernel name pointer -> site */
static size_t names_cap, names_n;
uint32_t weft_cupti__tids[MAX_TIDS];
int weft_cupti__ntids;
static int devices_seen[MAX_DEVICES];

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

void weft_cupti__buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	*buffer = NULL;
	*size = 0;
	*max_records = 0; /* as many as fit */
	if (atomic_fetch_add(&weft_cupti__n_buffers_out, 1) >= MAX_BUFFERS) {
		atomic_fetch_sub(&weft_cupti__n_buffers_out, 1);
		return; /* CUPTI drops what it cannot store, and counts it */
	}
	void *b = buffer_get();
	if (!b) {
		atomic_fetch_sub(&weft_cupti__n_buffers_out, 1);
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
	atomic_fetch_add_explicit(&weft_cupti__n_records, 1, memory_order_relaxed);
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
	for (int i = 0; i < weft_cupti__ntids; i++)
		if (weft_cupti__tids[i] == tid)
			return;
	if (weft_cupti__ntids < MAX_TIDS)
		weft_cupti__tids[weft_cupti__ntids++] = tid;
}

void weft_cupti__buffer_completed(void *ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
	(void)size;
	weft_cupti__in_collector++;
	int saved = errno;
	if (buffer && valid) {
		pthread_mutex_lock(&weft_cupti__conv_lock);
		note_tid();
		struct weft_cupti_activity *r = NULL;
		while (weft_cu.activity_get_next_record(buffer, valid, &r) == WEFT_CUPTI_SUCCESS && r)
			convert(r);
		pthread_mutex_unlock(&weft_cupti__conv_lock);
		atomic_fetch_add(&weft_cupti__n_buffers, 1);
	}
	size_t dropped = 0;
	if (weft_cu.activity_get_num_dropped_records && weft_cu.activity_get_num_dropped_records(ctx, stream, &dropped) ==
	    WEFT_CUPTI_SUCCESS && dropped)
		atomic_fetch_add(&weft_cupti__n_dropped, dropped);
	weft_cupti__clock_pair();
	if (buffer) {
		buffer_put(buffer);
		atomic_fetch_sub(&weft_cupti__n_buffers_out, 1);
	}
	errno = saved;
	weft_cupti__in_collector--;
}

/* A fork child: the locks may have been copied held (a CUPTI thread converting a buffer);
 * the kernel names and the spare buffers are the parent's, dropped here. */
void weft_cupti__activity_atfork_child(void)
{
	pthread_mutex_init(&weft_cupti__conv_lock, NULL);
	pthread_mutex_init(&spare_lock, NULL);
	nspare = 0;
	weft_cupti__ntids = 0;
	names = NULL; /* the parent's table stays with the parent's memory */
	names_cap = names_n = 0;
}
