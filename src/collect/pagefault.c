/*
 * pagefault.c - memory access sampling from page faults (mem_access=pagefault, `weft record
 * --mem-access`), part of libweft-preload.so. Every thread of the traced process gets a
 * perf_event_open software event PERF_COUNT_SW_PAGE_FAULTS, period 1, user space only, with the
 * faulting data address, the instruction, the tid and the time on CLOCK_BOOTTIME (weft's
 * timeline): the first touch of each page, when an allocation really becomes memory. Works
 * without a PMU (virtual machines). Per-thread events, because the kernel refuses to map the
 * buffer of an inherited per-task event: the main thread's is opened at start, every later
 * thread's by a wrapper of pthread_create before the thread's own code runs.
 *
 * One sampler thread drains every thread's ring every few milliseconds into its own weft stream
 * as ACCESS records (time, tid, address, instruction), counts PERF_RECORD_LOST and throttling,
 * and closes the rings of threads that ended after a last drain. It never blocks the program:
 * a full ring loses samples in the kernel, counted. At stop the sampler drains once more and
 * the totals go into an ACCESS metadata record; a fork child starts its own sampler.
 */
#include "lib/internal.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Sanitizer builds intercept pthread_create themselves: the wrapper stays hidden there, and
 * only the main thread is sampled. */
#ifdef WEFT_NO_MEMORY_INTERPOSER
#define EXPORT __attribute__((visibility("hidden")))
#else
#define EXPORT __attribute__((visibility("default")))
#endif
#define RING_PAGES 64 /* data pages per thread (256 KiB): ~5000 samples between drains */
#define DRAIN_NS 2000000 /* 2 ms */

struct ring {
	struct ring *next;
	int fd;
	uint32_t tid;
	void *base;
	size_t size; /* 1 + RING_PAGES pages */
	_Atomic int ended; /* the thread is gone: drain once more, then close */
};

/* Guarded by rings_lock; the sampler drains every ring on the list. */
static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ring *rings;
static _Atomic int on;        /* sampling runs in this process */
static _Atomic int quit;      /* the sampler should do a last drain and leave */
static pthread_t sampler;
static int have_sampler;
static _Atomic uint64_t samples, lost, throttled, open_failures;
static int first_errno;        /* why the first perf_event_open failed */
static pthread_key_t ring_key; /* a thread's ring, marked ended by the key's destructor */

static struct weft_site sampler_name = {0, WEFT_KIND_EVENT, 0, 0, 0, "weft: page-fault sampler", "", 0, 0};

static int open_ring(uint32_t tid)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_BOOTTIME;
	int fd = (int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		if (!atomic_fetch_add(&open_failures, 1))
			first_errno = errno;
		return -1;
	}
	size_t size = (size_t)(1 + RING_PAGES) * (size_t)sysconf(_SC_PAGESIZE);
	void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	struct ring *r = base == MAP_FAILED ? NULL : calloc(1, sizeof(*r));
	if (!r) {
		if (!atomic_fetch_add(&open_failures, 1))
			first_errno = errno ? errno : ENOMEM;
		if (base != MAP_FAILED)
			munmap(base, size);
		close(fd);
		return -1;
	}
	r->fd = fd;
	r->tid = tid;
	r->base = base;
	r->size = size;
	pthread_mutex_lock(&rings_lock);
	r->next = rings;
	rings = r;
	pthread_mutex_unlock(&rings_lock);
	pthread_setspecific(ring_key, r);
	return 0;
}

static void ring_done(void *arg)
{
	struct ring *r = arg;
	atomic_store(&r->ended, 1);
}

/* The current thread's ring (called on the thread itself). */
static void watch_this_thread(void)
{
	weft_in_runtime++; /* its allocations are weft's */
	open_ring((uint32_t)syscall(SYS_gettid));
	weft_in_runtime--;
}

/* ---- the sampler ---- */

struct sample { uint64_t ip; uint32_t pid, tid; uint64_t time, addr; };

static void emit(const struct sample *s)
{
	uint64_t *w = weft__reserve(32);
	if (!w)
		return; /* counted as dropped by the runtime */
	w[0] = s->time;
	w[1] = weft__hdr(s->tid, WEFT_R_ACCESS, 2, 1);
	w[2] = s->addr;
	w[3] = s->ip;
	weft__commit(w + 4);
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

static void drain(struct ring *r)
{
	struct perf_event_mmap_page *h = r->base;
	uint64_t head = __atomic_load_n(&h->data_head, __ATOMIC_ACQUIRE), tail = h->data_tail;
	while (tail + sizeof(struct perf_event_header) <= head) {
		struct perf_event_header eh;
		ring_copy(r, tail, &eh, sizeof(eh));
		if (eh.size < sizeof(eh) || tail + eh.size > head)
			break;
		if (eh.type == PERF_RECORD_SAMPLE && eh.size >= sizeof(eh) + sizeof(struct sample)) {
			struct sample s;
			ring_copy(r, tail + sizeof(eh), &s, sizeof(s));
			emit(&s);
			atomic_fetch_add_explicit(&samples, 1, memory_order_relaxed);
		} else if (eh.type == PERF_RECORD_LOST && eh.size >= sizeof(eh) + 16) {
			uint64_t v[2];
			ring_copy(r, tail + sizeof(eh), v, sizeof(v));
			atomic_fetch_add_explicit(&lost, v[1], memory_order_relaxed);
		} else if (eh.type == PERF_RECORD_THROTTLE) {
			atomic_fetch_add_explicit(&throttled, 1, memory_order_relaxed);
		}
		tail += eh.size;
	}
	__atomic_store_n(&h->data_tail, tail, __ATOMIC_RELEASE);
}

static void drain_all(void)
{
	pthread_mutex_lock(&rings_lock);
	for (struct ring **pp = &rings; *pp;) {
		struct ring *r = *pp;
		int ended = atomic_load(&r->ended);
		drain(r);
		if (ended) { /* its last samples are out: the ring goes */
			*pp = r->next;
			munmap(r->base, r->size);
			close(r->fd);
			free(r);
			continue;
		}
		pp = &r->next;
	}
	pthread_mutex_unlock(&rings_lock);
}

static void *sampler_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "weft-pagefault");
	if (weft__on(&sampler_name)) /* names this stream in the trace */
		weft__rec2(weft__hdr(sampler_name.id, WEFT_R_INSTANT, 0, 0));
	struct timespec ts = {0, DRAIN_NS};
	while (!atomic_load(&quit)) {
		nanosleep(&ts, NULL);
		drain_all();
	}
	drain_all();
	return NULL;
}

static void start_sampler(void)
{
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals are the program's */
	have_sampler = pthread_create(&sampler, NULL, sampler_main, NULL) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---- threads the program creates ---- */

struct tramp { void *(*fn)(void *); void *arg; };

static void *thread_start(void *p)
{
	struct tramp t = *(struct tramp *)p;
	weft_in_runtime++;
	free(p);
	weft_in_runtime--;
	if (atomic_load(&on))
		watch_this_thread();
	return t.fn(t.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT,
												     "pthread_create");
	if (!atomic_load(&on))
		return real(th, attr, fn, arg);
	weft_in_runtime++;
	struct tramp *t = malloc(sizeof(*t));
	weft_in_runtime--;
	if (!t)
		return real(th, attr, fn, arg);
	t->fn = fn;
	t->arg = arg;
	int rc = real(th, attr, thread_start, t);
	if (rc) {
		weft_in_runtime++;
		free(t);
		weft_in_runtime--;
	}
	return rc;
}

/* ---- start, stop, fork ---- */

static void write_totals(void)
{
	uint32_t head[2] = {1, 0};
	uint64_t v[3] = {atomic_load(&samples), atomic_load(&lost), atomic_load(&throttled)};
	weft_meta_write(WEFT_M_ACCESS, head, sizeof(head), v, sizeof(v));
}

/* Last drain while the trace still runs (an atexit handler that runs before weft's). */
static void stop_sampler(void)
{
	if (!atomic_exchange(&on, 0))
		return;
	atomic_store(&quit, 1);
	if (have_sampler && !weft_g.in_signal)
		pthread_join(sampler, NULL);
	have_sampler = 0;
	write_totals();
}

void weft_pagefault_stop(void) /* preload.c: before the trace stops */
{
	stop_sampler();
}

static void atfork_child(void)
{
	/* the parent's rings and sampler are the parent's: start over for this process */
	struct ring *r = rings;
	rings = NULL;
	while (r) {
		struct ring *n = r->next;
		munmap(r->base, r->size);
		close(r->fd);
		free(r);
		r = n;
	}
	pthread_mutex_init(&rings_lock, NULL);
	have_sampler = 0;
	if (!atomic_load(&on))
		return;
	atomic_store(&samples, 0);
	atomic_store(&lost, 0);
	atomic_store(&throttled, 0);
	atomic_store(&quit, 0);
	watch_this_thread();
	start_sampler();
}

/* Returns 0, or -errno with the reason in why. */
int weft_pagefault_start(char *why, size_t n)
{
	pthread_key_create(&ring_key, ring_done);
	atomic_store(&on, 1);
	watch_this_thread();
	if (atomic_load(&open_failures)) {
		atomic_store(&on, 0);
		int e = first_errno;
		snprintf(why, n, "perf_event_open of page faults failed: %s%s", strerror(e),
			 e == EACCES || e == EPERM ? " (kernel.perf_event_paranoid too high? run as root or lower it)" : "");
		return -e;
	}
	start_sampler();
	atexit(stop_sampler);
	pthread_atfork(NULL, NULL, atfork_child);
	return 0;
}
