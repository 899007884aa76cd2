/*
 * access.c - memory access sampling (mem_access=, `weft record --mem-access[=SRC]`), part of
 * libweft-preload.so. Every thread of the traced process gets a perf_event_open event of the
 * chosen source (collect/perf_sample.c builds its attributes), user space only, with the data
 * address, the instruction, the tid and the time on CLOCK_BOOTTIME (weft's timeline):
 *   pagefault  PERF_COUNT_SW_PAGE_FAULTS, period 1: the first touch of each page, when an
 *              allocation really becomes memory; any Linux, no PMU needed (virtual machines);
 *   pebs       Intel PEBS load-latency loads (with the mem-loads-aux leader where the PMU has
 *              one) and, on a second event, stores: latency and data source per sample;
 *   ibs        AMD IBS op samples.
 * auto picks PEBS, then IBS, then page faults. Per-thread events, because the kernel refuses to
 * map the buffer of an inherited per-task event: the main thread's is opened at start, every
 * later thread's by a wrapper of pthread_create before the thread's own code runs. The PEBS and
 * IBS paths are built from the PMU's sysfs description and decoded by the tested decoder, but
 * have not run on such hardware here (this VM has no PMU).
 *
 * One sampler thread drains every thread's ring every few milliseconds into its own weft stream
 * as ACCESS records (time, tid, address, instruction), counts PERF_RECORD_LOST and throttling,
 * and closes the rings of threads that ended after a last drain. It never blocks the program:
 * a full ring loses samples in the kernel, counted. At stop the sampler drains once more and
 * the totals go into an ACCESS metadata record; a fork child starts its own sampler.
 */
#include "lib/internal.h"
#include "collect/perf_sample.h"
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
	int fd, aux_fd; /* aux_fd: the mem-loads-aux group leader, or -1 */
	int src;
	uint64_t sample_type;
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

static struct weft_site sampler_name = {0, WEFT_KIND_EVENT, 0, 0, 0, "weft: access sampler", "", 0, 0};

static int sources[2]; /* what each thread opens (0: none): page faults, or PEBS loads + stores, or IBS */

static int open_one(int src, uint32_t tid)
{
	struct perf_event_attr a, aux;
	int needs_aux = 0, aux_fd = -1;
	char why[160];
	if (weft_access_attr(src, "", 0, &a, &aux, &needs_aux, why, sizeof(why)))
		return -1;
	a.use_clockid = 1;
	a.clockid = CLOCK_BOOTTIME;
	if (needs_aux && (aux_fd = (int)syscall(SYS_perf_event_open, &aux, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC)) < 0) {
		if (!atomic_fetch_add(&open_failures, 1))
			first_errno = errno;
		return -1;
	}
	int fd = (int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, aux_fd, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0) {
		if (!atomic_fetch_add(&open_failures, 1))
			first_errno = errno;
		if (aux_fd >= 0)
			close(aux_fd);
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
		if (aux_fd >= 0)
			close(aux_fd);
		return -1;
	}
	r->fd = fd;
	r->aux_fd = aux_fd;
	r->src = src;
	r->sample_type = a.sample_type;
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

static int open_ring(uint32_t tid)
{
	int rc = 0;
	for (int i = 0; i < 2 && sources[i]; i++)
		rc |= open_one(sources[i], tid);
	return rc;
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

static void emit(const struct ring *r, const struct weft_perf_sample *s)
{
	int full = r->src != WEFT_ACC_PAGEFAULT; /* latency and data source too */
	uint64_t *w = weft__reserve(full ? 48 : 32);
	if (!w)
		return; /* counted as dropped by the runtime */
	w[0] = s->time;
	w[1] = weft__hdr(s->tid, WEFT_R_ACCESS, full ? 4 : 2, (unsigned)r->src);
	w[2] = s->addr;
	w[3] = s->ip;
	if (full) {
		w[4] = s->weight;
		w[5] = s->data_src;
	}
	weft__commit(w + (full ? 6 : 4));
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
		if (eh.type == PERF_RECORD_SAMPLE) {
			unsigned char body[512];
			size_t len = eh.size - sizeof(eh) < sizeof(body) ? eh.size - sizeof(eh) : sizeof(body);
			struct weft_perf_sample s;
			ring_copy(r, tail + sizeof(eh), body, len);
			if (!weft_perf_decode_sample(r->sample_type, body, len, &s)) {
				emit(r, &s);
				atomic_fetch_add_explicit(&samples, 1, memory_order_relaxed);
			}
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
			if (r->aux_fd >= 0)
				close(r->aux_fd);
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
	pthread_setname_np(pthread_self(), "weft-access");
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
	uint32_t head[2] = {(uint32_t)sources[0], (uint32_t)sources[1]};
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

void weft_access_stop(void) /* preload.c: before the trace stops */
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
		if (r->aux_fd >= 0)
			close(r->aux_fd);
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

/* src: auto, pagefault, pebs or ibs. Returns 0, or -errno with the reason in why ("unavailable"
 * follows in the caller's line). */
int weft_access_start(const char *src, char *why, size_t n)
{
	struct perf_event_attr a, aux;
	int needs_aux;
	char w1[160] = "", w2[160] = "";
	int pebs = weft_access_attr(WEFT_ACC_PEBS_LOAD, "", 0, &a, &aux, &needs_aux, w1, sizeof(w1)) == 0;
	int ibs = weft_access_attr(WEFT_ACC_IBS_OP, "", 0, &a, &aux, &needs_aux, w2, sizeof(w2)) == 0;
	if (!strcmp(src, "pebs") && !pebs) {
		snprintf(why, n, "%s", w1);
		return -ENOENT;
	}
	if (!strcmp(src, "ibs") && !ibs) {
		snprintf(why, n, "%s", w2);
		return -ENOENT;
	}
	if (!strcmp(src, "pebs") || ((!strcmp(src, "auto") || !strcmp(src, "1")) && pebs)) {
		sources[0] = WEFT_ACC_PEBS_LOAD;
		sources[1] = WEFT_ACC_PEBS_STORE;
	} else if (!strcmp(src, "ibs") || ((!strcmp(src, "auto") || !strcmp(src, "1")) && ibs)) {
		sources[0] = WEFT_ACC_IBS_OP;
	} else {
		sources[0] = WEFT_ACC_PAGEFAULT;
	}
	pthread_key_create(&ring_key, ring_done);
	atomic_store(&on, 1);
	watch_this_thread();
	if (atomic_load(&open_failures)) {
		atomic_store(&on, 0);
		int e = first_errno;
		snprintf(why, n, "perf_event_open failed: %s%s", strerror(e),
			 e == EACCES || e == EPERM ? " (kernel.perf_event_paranoid too high? run as root or lower it)" : "");
		return -e;
	}
	start_sampler();
	atexit(stop_sampler);
	pthread_atfork(NULL, NULL, atfork_child);
	return 0;
}
