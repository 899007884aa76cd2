/*
 * access-ring.c - the perf rings of memory access sampling and watchpoints (mem_access=,
 * watch=; collect/access.c has the overview). Each thread of the program gets one ring per
 * sampling source (page faults; PEBS loads and stores; IBS ops) and one per watchpoint, each a
 * perf_event_open event of that thread (the kernel refuses to map the buffer of an inherited
 * per-task event) with 1 + RING_PAGES pages mapped. The rings are on one list, which the
 * sampler drains, and on their thread's key, whose destructor marks them ended when the
 * thread exits (the sampler closes them after a last drain). A failed open is counted, with
 * the first errno kept for the message. Here too: weft's own extent, so that the runtime's
 * page faults and the threads weft creates are not taken for the program's.
 */
#include "collect/access-internal.h"
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

pthread_mutex_t weft_acc__rings_lock = PTHREAD_MUTEX_INITIALIZER;
struct ring *weft_acc__rings;
pthread_key_t weft_acc__ring_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
int weft_acc__sources[2];
_Atomic uint64_t weft_acc__open_failures, weft_acc__watch_open_failures;
int weft_acc__first_errno, weft_acc__watch_first_errno;

/* weft's own memory (own_sample, own_thread): the preload's mapped extent (code, data, bss),
 * found at start before any other thread samples; read-only after. */
static uint64_t own_lo, own_hi;
_Atomic uint64_t weft_acc__own_samples;

static void note_failure(int watch, int e)
{
	if (!atomic_fetch_add(watch >= 0 ? &weft_acc__watch_open_failures : &weft_acc__open_failures, 1))
		*(watch >= 0 ? &weft_acc__watch_first_errno : &weft_acc__first_errno) = e;
}

static void link_ring(struct ring *r)
{
	pthread_mutex_lock(&weft_acc__rings_lock);
	r->next = weft_acc__rings;
	weft_acc__rings = r;
	pthread_mutex_unlock(&weft_acc__rings_lock);
	r->thread_next = pthread_getspecific(weft_acc__ring_key);
	pthread_setspecific(weft_acc__ring_key, r);
}

/* Source src's event for thread tid, or (watch >= 0) that watchpoint's. */
static int open_one(int src, int watch, uint32_t tid)
{
	struct perf_event_attr a, aux;
	int needs_aux = 0, aux_fd = -1;
	char why[160];
	if (watch >= 0) {
		const struct weft_acc_watch *w = &weft_acc__watches[watch];
		if (weft_watch_attr(w->addr, w->len, src == WEFT_ACC_WATCH_RW, &a, why, sizeof(why)))
			return -1;
	} else {
		if (weft_access_attr(src, "", weft_cfg.mem_access_period, &a, &aux, &needs_aux, why, sizeof(why)))
			return -1;
	}
	if (needs_aux && (aux_fd = (int)syscall(SYS_perf_event_open, &aux, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC)) < 0) {
		note_failure(watch, errno);
		return -1;
	}
	int fd = weft_fd_high((int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, aux_fd, PERF_FLAG_FD_CLOEXEC));
	if (fd < 0) {
		note_failure(watch, errno);
		if (aux_fd >= 0)
			close(aux_fd);
		return -1;
	}
	size_t size = (size_t)(1 + RING_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct ring *r = base == MAP_FAILED ? NULL : calloc(1, sizeof(*r));
	if (!r) {
		note_failure(watch, errno ? errno : ENOMEM);
		if (base != MAP_FAILED)
			munmap(base, size);
		close(fd);
		if (aux_fd >= 0)
			close(aux_fd);
		return -1;
	}
	r->fd = fd;
	r->aux_fd = aux_fd;
	r->src = src;
	r->watch = watch;
	r->monotonic = a.clockid == CLOCK_MONOTONIC;
	r->sample_type = a.sample_type;
	r->tid = tid;
	r->base = base;
	r->size = size;
	link_ring(r);
	return 0;
}

void weft_acc__open_sources(uint32_t tid)
{
	for (int i = 0; i < 2 && weft_acc__sources[i]; i++)
		open_one(weft_acc__sources[i], -1, tid);
}

void weft_acc__open_watches(uint32_t tid)
{
	for (int i = 0; i < weft_acc__nwatches; i++)
		open_one(weft_acc__watches[i].src, i, tid);
}

void weft_acc__free_ring(struct ring *r, int mapped)
{
	if (mapped)
		munmap(r->base, r->size);
	close(r->fd);
	if (r->aux_fd >= 0)
		close(r->aux_fd);
	weft_in_runtime++; /* weft's block (open_one), not a free of the program's */
	free(r);
	weft_in_runtime--;
}

void weft_acc__drop_watch_rings(void)
{
	struct ring *keep = NULL, **tail = &keep;
	pthread_mutex_lock(&weft_acc__rings_lock);
	for (struct ring **pp = &weft_acc__rings; *pp;) {
		if ((*pp)->watch >= 0)
			*pp = (*pp)->next;
		else
			pp = &(*pp)->next;
	}
	pthread_mutex_unlock(&weft_acc__rings_lock);
	for (struct ring *r = pthread_getspecific(weft_acc__ring_key), *nx; r; r = nx) {
		nx = r->thread_next;
		if (r->watch >= 0) {
			weft_acc__free_ring(r, 1);
		} else {
			*tail = r;
			tail = &r->thread_next;
		}
	}
	*tail = NULL;
	pthread_setspecific(weft_acc__ring_key, keep);
}

static void ring_done(void *arg)
{
	for (struct ring *r = arg; r; r = r->thread_next)
		atomic_store(&r->ended, 1);
}

static void make_key(void)
{
	pthread_key_create(&weft_acc__ring_key, ring_done);
}

void weft_acc__make_key(void)
{
	pthread_once(&key_once, make_key);
}

void weft_acc__watch_this_thread(void)
{
	weft_in_runtime++; /* its allocations are weft's */
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	weft_acc__open_sources(tid);
	weft_acc__open_watches(tid);
	weft_in_runtime--;
}

/* Copies len bytes at offset off of the ring's data area (it wraps). */
static void ring_copy(const struct ring *r, uint64_t off, void *out, size_t len)
{
	const struct perf_event_mmap_page *h = r->base;
	const char *data = (const char *)r->base + h->data_offset;
	uint64_t size = h->data_size;
	for (size_t i = 0; i < len; i++)
		((char *)out)[i] = data[(off + i) % size];
}

void weft_acc__ring_walk(struct ring *r, void (*on)(struct ring *r, const struct perf_event_header *eh,
						    const unsigned char *body, size_t len, void *ud),
			 void *ud)
{
	struct perf_event_mmap_page *h = r->base;
	uint64_t head = __atomic_load_n(&h->data_head, __ATOMIC_ACQUIRE), tail = h->data_tail;
	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header eh;
		ring_copy(r, tail, &eh, sizeof(eh));
		if (eh.size < sizeof(eh) || tail + eh.size > head)
			break;
		unsigned char body[512];
		size_t len = eh.size - sizeof(eh) < sizeof(body) ? eh.size - sizeof(eh) : sizeof(body);
		ring_copy(r, tail + sizeof(eh), body, len);
		on(r, &eh, body, len, ud);
		tail += eh.size;
	}
	__atomic_store_n(&h->data_tail, tail, __ATOMIC_RELEASE);
}

/* ---- weft's own accesses ----
 * The runtime's faults are not the program's: the first touch of an event buffer's page by
 * the thread that fills it (its ip in weft's code: the function hooks, the allocation recorder),
 * the work of weft's own threads. Chunks are pre-faulted as they are allocated (lib/thread.c),
 * which the kernel does without a fault event; threads weft creates (the sampler, the
 * scheduling readers: their pthread_create is called from the preload's code) get no rings; what
 * is left is recognised here, left out and counted: a sample whose instruction or address is in
 * the preload's own mapping. */

static int find_self(struct dl_phdr_info *info, size_t size, void *ud)
{
	(void)size;
	uint64_t me = (uint64_t)(uintptr_t)ud, lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr, b = a + ph->p_memsz;
		if (a < lo)
			lo = a;
		if (b > hi)
			hi = b;
	}
	if (me < lo || me >= hi)
		return 0;
	own_lo = lo;
	own_hi = hi;
	return 1;
}

void weft_acc__find_own_extent(void)
{
	if (!own_hi)
		dl_iterate_phdr(find_self, (void *)(uintptr_t)&find_self);
}

int weft_acc__own_thread(const void *creator)
{
	uint64_t a = (uint64_t)(uintptr_t)creator;
	return a >= own_lo && a < own_hi;
}

int weft_acc__own_sample(const struct weft_perf_sample *s)
{
	if ((s->ip >= own_lo && s->ip < own_hi) || (s->addr >= own_lo && s->addr < own_hi)) {
		atomic_fetch_add_explicit(&weft_acc__own_samples, 1, memory_order_relaxed);
		return 1;
	}
	return 0;
}
