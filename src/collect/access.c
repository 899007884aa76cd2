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
 * auto picks PEBS, then IBS, then page faults. Beside them, or alone, watch= (`weft record
 * --watch`) puts up to 4 hardware watchpoints (PERF_TYPE_BREAKPOINT, x86's debug registers) on
 * variables of the program or addresses: every write (or read and write) of those bytes is one
 * sample, source 5 (writes) or 6 (reads and writes). Only after a self-test: a write watchpoint
 * on a variable of weft's own, written SELFTEST_WRITES times, must give exactly that many
 * samples; some virtual machines open breakpoint events that never fire, and a source that
 * records nothing would read as "the program never wrote it". Per-thread events, because the kernel refuses to
 * map the buffer of an inherited per-task event: the main thread's is opened at start, every
 * later thread's by a wrapper of pthread_create before the thread's own code runs. The PEBS and
 * IBS paths are built from the PMU's sysfs description and decoded by the tested decoder, but
 * have not run on such hardware here (this VM has no PMU).
 *
 * One sampler thread drains every thread's ring every few milliseconds into its own weft stream
 * as ACCESS records (time, tid, address, instruction), counts PERF_RECORD_LOST and throttling,
 * and closes the rings of threads that ended after a last drain. It never blocks the program:
 * a full ring loses samples in the kernel, counted. The thread that finishes the trace drains
 * every ring itself first, while the run still takes events (weft_access_drain: at _exit, exec
 * and a fatal signal the sampler is not there to), then the sampler drains once more and the
 * totals go into an ACCESS metadata record. Threads weft creates get no ring. Fork: the
 * forking thread holds rings_lock across it (session.c's fork order); the child closes the
 * parent's rings, opens its own thread's (sources and watchpoints) and starts its sampler.
 */
#include "lib/internal.h"
#include "collect/perf_sample.h"
#include "collect/source.h"
#include <dlfcn.h>
#include <link.h>
#include <linux/hw_breakpoint.h>
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
	int watch;      /* the watchpoint's index, or -1 for a sampling source */
	int monotonic;  /* its times are CLOCK_MONOTONIC (breakpoint events refuse CLOCK_BOOTTIME) */
	struct ring *thread_next; /* the same thread's other rings (ring_key holds the newest) */
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
static pthread_key_t ring_key; /* a thread's rings, marked ended by the key's destructor */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* watch=: set at start by watch_open (before any ring of theirs exists), read-only after */
static struct { uint64_t addr; unsigned len; int src; char name[128]; } watches[WEFT_MAX_WATCH];
static int nwatches;
static _Atomic uint64_t watch_hits[WEFT_MAX_WATCH], watch_lost;

/* weft's own memory (own_sample, own_thread): the preload's mapped extent (code, data, bss),
 * found at start before any other thread samples; read-only after. */
static uint64_t own_lo, own_hi;
static _Atomic uint64_t own_samples; /* samples left out as weft's own */

static struct weft_site sampler_name = {0, WEFT_KIND_EVENT, 0, 0, 0, "weft: access sampler", "", 0, 0};

static int sources[2]; /* what each thread opens (0: none): page faults, or PEBS loads + stores, or IBS */
static _Atomic uint64_t watch_open_failures; /* a thread's watchpoint that could not be opened */
static int watch_first_errno; /* why the first of them failed */

static void note_failure(int watch, int e)
{
	if (!atomic_fetch_add(watch >= 0 ? &watch_open_failures : &open_failures, 1))
		*(watch >= 0 ? &watch_first_errno : &first_errno) = e;
}

static int64_t clock_gap(void)
{
	struct timespec b, m;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_BOOTTIME, &b);
	return ((int64_t)b.tv_sec - (int64_t)m.tv_sec) * 1000000000 + ((int64_t)b.tv_nsec - (int64_t)m.tv_nsec);
}

static void link_ring(struct ring *r)
{
	pthread_mutex_lock(&rings_lock);
	r->next = rings;
	rings = r;
	pthread_mutex_unlock(&rings_lock);
	r->thread_next = pthread_getspecific(ring_key);
	pthread_setspecific(ring_key, r);
}

/* Source src's event for thread tid, or (watch >= 0) that watchpoint's. */
static int open_one(int src, int watch, uint32_t tid)
{
	struct perf_event_attr a, aux;
	int needs_aux = 0, aux_fd = -1;
	char why[160];
	if (watch >= 0) {
		if (weft_watch_attr(watches[watch].addr, watches[watch].len, src == WEFT_ACC_WATCH_RW, &a, why, sizeof(why)))
			return -1;
	} else {
		if (weft_access_attr(src, "", weft_cfg.mem_access_period, &a, &aux, &needs_aux, why, sizeof(why)))
			return -1;
	}
	if (needs_aux && (aux_fd = (int)syscall(SYS_perf_event_open, &aux, (pid_t)tid, -1, -1, PERF_FLAG_FD_CLOEXEC)) < 0) {
		note_failure(watch, errno);
		return -1;
	}
	int fd = (int)syscall(SYS_perf_event_open, &a, (pid_t)tid, -1, aux_fd, PERF_FLAG_FD_CLOEXEC);
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

static void open_sources(uint32_t tid)
{
	for (int i = 0; i < 2 && sources[i]; i++)
		open_one(sources[i], -1, tid);
}

static void open_watches(uint32_t tid)
{
	for (int i = 0; i < nwatches; i++)
		open_one(watches[i].src, i, tid);
}

static void free_ring(struct ring *r)
{
	munmap(r->base, r->size);
	close(r->fd);
	if (r->aux_fd >= 0)
		close(r->aux_fd);
	weft_in_runtime++; /* weft's block (open_one), not a free of the program's */
	free(r);
	weft_in_runtime--;
}

/* Closes this thread's watchpoint rings (at start, when one of them could not be opened). */
static void drop_watch_rings(void)
{
	struct ring *keep = NULL, **tail = &keep;
	pthread_mutex_lock(&rings_lock);
	for (struct ring **pp = &rings; *pp;) {
		if ((*pp)->watch >= 0)
			*pp = (*pp)->next;
		else
			pp = &(*pp)->next;
	}
	pthread_mutex_unlock(&rings_lock);
	for (struct ring *r = pthread_getspecific(ring_key), *nx; r; r = nx) {
		nx = r->thread_next;
		if (r->watch >= 0) {
			free_ring(r);
		} else {
			*tail = r;
			tail = &r->thread_next;
		}
	}
	*tail = NULL;
	pthread_setspecific(ring_key, keep);
}

static void ring_done(void *arg)
{
	for (struct ring *r = arg; r; r = r->thread_next)
		atomic_store(&r->ended, 1);
}

static void make_key(void)
{
	pthread_key_create(&ring_key, ring_done);
}

/* The current thread's rings (called on the thread itself). */
static void watch_this_thread(void)
{
	weft_in_runtime++; /* its allocations are weft's */
	uint32_t tid = (uint32_t)syscall(SYS_gettid);
	open_sources(tid);
	open_watches(tid);
	weft_in_runtime--;
}

/* ---- the sampler ---- */

static void emit(const struct ring *r, const struct weft_perf_sample *s, int64_t gap)
{
	/* latency and data source too */
	int full = r->src == WEFT_ACC_PEBS_LOAD || r->src == WEFT_ACC_PEBS_STORE || r->src == WEFT_ACC_IBS_OP;
	uint64_t *w = weft__reserve(full ? 48 : 32);
	if (!w)
		return; /* counted as dropped by the runtime */
	w[0] = r->monotonic ? (uint64_t)((int64_t)s->time + gap) : s->time;
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

/* Walks the ring's records from its tail to its head, each with its body (up to 512 bytes)
 * copied out, and gives the space back. */
static void ring_walk(struct ring *r, void (*on)(struct ring *r, const struct perf_event_header *eh,
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

static void find_own_extent(void)
{
	if (!own_hi)
		dl_iterate_phdr(find_self, (void *)(uintptr_t)&find_self);
}

/* Is a thread created from there one of weft's own? */
static int own_thread(const void *creator)
{
	uint64_t a = (uint64_t)(uintptr_t)creator;
	return a >= own_lo && a < own_hi;
}

static int own_sample(const struct weft_perf_sample *s)
{
	if ((s->ip >= own_lo && s->ip < own_hi) || (s->addr >= own_lo && s->addr < own_hi)) {
		atomic_fetch_add_explicit(&own_samples, 1, memory_order_relaxed);
		return 1;
	}
	return 0;
}

static void drain_one(struct ring *r, const struct perf_event_header *eh, const unsigned char *body, size_t len,
		      void *ud)
{
	const int64_t *gap = ud;
	if (eh->type == PERF_RECORD_SAMPLE) {
		struct weft_perf_sample s;
		if (!weft_perf_decode_sample(r->sample_type, body, len, &s) && (r->watch >= 0 || !own_sample(&s))) {
			emit(r, &s, *gap);
			atomic_fetch_add_explicit(r->watch >= 0 ? &watch_hits[r->watch] : &samples, 1,
						  memory_order_relaxed);
		}
	} else if (eh->type == PERF_RECORD_LOST && len >= 16) {
		uint64_t v[2];
		memcpy(v, body, sizeof(v));
		atomic_fetch_add_explicit(r->watch >= 0 ? &watch_lost : &lost, v[1], memory_order_relaxed);
	} else if (eh->type == PERF_RECORD_THROTTLE) {
		atomic_fetch_add_explicit(&throttled, 1, memory_order_relaxed);
	}
}

static void drain(struct ring *r, int64_t gap)
{
	ring_walk(r, drain_one, &gap);
}

/* Every ring, under rings_lock (held by the caller); free: close the rings of threads that
 * ended (not from a signal handler: free() could find malloc's lock held). */
static void drain_locked(int free_ended)
{
	int64_t gap = clock_gap(); /* the time suspended so far: monotonic rings' offset */
	for (struct ring **pp = &rings; *pp;) {
		struct ring *r = *pp;
		int ended = atomic_load(&r->ended);
		drain(r, gap);
		if (ended && free_ended) { /* its last samples are out: the ring goes */
			*pp = r->next;
			free_ring(r);
			continue;
		}
		pp = &r->next;
	}
}

static void drain_all(void)
{
	pthread_mutex_lock(&rings_lock);
	drain_locked(1);
	pthread_mutex_unlock(&rings_lock);
}

/* The last drain, on the thread that finishes the trace, while the run still takes events
 * (weft_stop calls it through the sources' drain, on every path: exit, _exit, exec, a fatal
 * signal). The sampler's own last drain comes only after the run stopped, and at _exit or a
 * fatal signal not at all (it is not joined there): without this, what the rings held since
 * its last pass (up to DRAIN_NS of samples) was lost uncounted. From a signal handler or
 * _exit (weft_g.in_signal) nothing is freed, and the lock is waited for 100 ms at most: its
 * holder (the sampler, or a thread starting) may be blocked in malloc behind the interrupted
 * code; those samples are then neither written nor counted. This thread holds no lock of
 * this file here: weft_stop runs only outside the runtime, a program's thread takes the lock
 * only inside it, and the sampler blocks every signal. */
void weft_access_drain(void)
{
	if (!atomic_load(&on))
		return;
	int in_signal = weft_g.in_signal;
	if (in_signal) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 100000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		if (pthread_mutex_timedlock(&rings_lock, &until))
			return;
	} else {
		pthread_mutex_lock(&rings_lock);
	}
	drain_locked(!in_signal);
	pthread_mutex_unlock(&rings_lock);
}

static void *sampler_main(void *arg)
{
	(void)arg;
	weft_thread_own("weft-access");
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
	weft_in_runtime++; /* weft's thread: the pthread_create wrapper gives it no ring */
	have_sampler = pthread_create(&sampler, NULL, sampler_main, NULL) == 0;
	weft_in_runtime--;
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
	weft_counters_thread(); /* counters= (collect/counters.c) */
	return t.fn(t.arg);
}

EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	if (!real)
		real = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))dlsym(RTLD_NEXT,
												     "pthread_create");
	/* weft's own threads (writers, samplers, readers: created inside the runtime) are not
	 * the program's: no rings, no counters. The fork child's writers are started before this
	 * file's fork handler has reinitialised rings_lock (session.c orders them so). */
	if (weft_in_runtime || (!atomic_load(&on) && !weft_counters_on()) || own_thread(__builtin_return_address(0)))
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
	if (sources[0]) {
		uint32_t head[2] = {(uint32_t)sources[0], (uint32_t)sources[1]};
		uint64_t v[4] = {atomic_load(&samples), atomic_load(&lost), atomic_load(&throttled),
				 atomic_load(&own_samples)};
		weft_meta_write(WEFT_M_ACCESS, head, sizeof(head), v, sizeof(v));
	}
	if (nwatches) { /* docs/format.md, WATCH */
		unsigned char buf[16 + WEFT_MAX_WATCH * (24 + sizeof(watches[0].name))];
		size_t o = 0;
		uint32_t head[2] = {(uint32_t)nwatches, (uint32_t)atomic_load(&watch_open_failures)};
		uint64_t wl = atomic_load(&watch_lost);
		memcpy(buf, head, 8);
		memcpy(buf + 8, &wl, 8);
		o = 16;
		for (int i = 0; i < nwatches; i++) {
			uint32_t lt[2] = {watches[i].len, (uint32_t)watches[i].src};
			uint64_t hits = atomic_load(&watch_hits[i]);
			memcpy(buf + o, &watches[i].addr, 8);
			memcpy(buf + o + 8, lt, 8);
			memcpy(buf + o + 16, &hits, 8);
			o += 24;
		}
		for (int i = 0; i < nwatches; i++) {
			size_t l = strlen(watches[i].name) + 1;
			memcpy(buf + o, watches[i].name, l);
			o += l;
		}
		weft_meta_write(WEFT_M_WATCH, buf, o, NULL, 0);
	}
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

/* Fork (session.c runs these among the runtime's own handlers): the forking thread holds
 * rings_lock across the fork, so the child's list is whole - not copied while the sampler
 * was unlinking a ring, nor with the lock held for good. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&rings_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&rings_lock);
}

/* Runs after the child's trace restarted, inside the runtime; the threads started before it
 * (writers, the system sampler) are weft's and never take rings_lock. */
static void atfork_child(void)
{
	pthread_mutex_init(&rings_lock, NULL);
	/* the parent's rings and sampler are the parent's: start over for this process */
	struct ring *r = rings;
	rings = NULL;
	while (r) {
		struct ring *n = r->next;
		free_ring(r);
		r = n;
	}
	pthread_setspecific(ring_key, NULL); /* (those were this thread's in the parent) */
	have_sampler = 0;
	if (!atomic_load(&on))
		return;
	atomic_store(&samples, 0);
	atomic_store(&lost, 0);
	atomic_store(&throttled, 0);
	atomic_store(&own_samples, 0);
	for (int i = 0; i < nwatches; i++)
		atomic_store(&watch_hits[i], 0);
	atomic_store(&watch_lost, 0);
	atomic_store(&quit, 0);
	watch_this_thread();
	start_sampler();
}

/* Sampling starts in this process (once, whichever source comes first). */
static void begin(void)
{
	if (atomic_exchange(&on, 1))
		return;
	start_sampler();
	atexit(stop_sampler);
}

/* mem_access=: auto, pagefault, pebs or ibs: the best source this machine has (page faults
 * everywhere). Returns 0, or -errno with the reason in why. */
static int access_open(char *why, size_t n)
{
	const char *src = weft_cfg.mem_access;
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
	pthread_once(&key_once, make_key);
	weft_in_runtime++;
	find_own_extent();
	open_sources((uint32_t)syscall(SYS_gettid));
	weft_in_runtime--;
	if (atomic_load(&open_failures)) {
		int e = first_errno;
		sources[0] = sources[1] = 0; /* (no ring opened: the first open is the one that failed) */
		snprintf(why, n, "perf_event_open failed: %s%s", strerror(e),
			 e == EACCES || e == EPERM ? " (kernel.perf_event_paranoid too high? run as root or lower it)" : "");
		return -e;
	}
	return 0;
}

/* ---- watch= ---- */

#define SELFTEST_WRITES 4
/* The self-test's variable: written only by watch_open's self-test, on the starting thread. */
static volatile _Alignas(8) uint64_t selftest_var;

struct selftest_count { uint64_t addr, got; };
static void selftest_one(struct ring *r, const struct perf_event_header *eh, const unsigned char *body, size_t len,
			 void *ud)
{
	struct selftest_count *c = ud;
	struct weft_perf_sample s;
	if (eh->type == PERF_RECORD_SAMPLE && !weft_perf_decode_sample(r->sample_type, body, len, &s) && s.addr == c->addr)
		c->got++;
}

/* A write watchpoint on selftest_var, SELFTEST_WRITES writes: 0 when each gave its sample,
 * else -errno with the reason. */
static int selftest(char *why, size_t n)
{
	struct perf_event_attr a;
	uint64_t addr = (uint64_t)(uintptr_t)&selftest_var;
	if (weft_watch_attr(addr, 8, 0, &a, why, n))
		return -EINVAL;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return weft_watch_selftest_verdict(errno, SELFTEST_WRITES, 0, why, n);
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct ring r = {.fd = fd, .size = 2 * page, .sample_type = a.sample_type, .watch = -1};
	r.base = mmap(NULL, r.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r.base == MAP_FAILED) {
		int e = errno;
		close(fd);
		return weft_watch_selftest_verdict(e, SELFTEST_WRITES, 0, why, n);
	}
	for (int i = 0; i < SELFTEST_WRITES; i++)
		selftest_var = (uint64_t)i + 1;
	/* the debug trap is taken as each write retires, so its sample is in the ring now */
	struct selftest_count c = {addr, 0};
	ring_walk(&r, selftest_one, &c);
	uint64_t got = c.got;
	munmap(r.base, r.size);
	close(fd);
	return weft_watch_selftest_verdict(0, SELFTEST_WRITES, got, why, n);
}

/* Specs from watch=: the self-test (which a machine whose watchpoints do not fire fails),
 * then each symbol's address; then every thread watches them. Returns 0, or -errno with the
 * reason in why (nothing is watched then). */
static int watch_open(char *why, size_t n)
{
	const struct weft_watch_spec *spec = weft_cfg.watch;
	int nspec = weft_cfg.nwatch;
	weft_in_runtime++;
	int rc = selftest(why, n);
	for (int i = 0; !rc && i < nspec && i < WEFT_MAX_WATCH; i++) {
		uint64_t addr = spec[i].addr, size = 0;
		unsigned len = spec[i].len;
		if (spec[i].symbol[0]) {
			rc = weft_exe_symbol(spec[i].symbol, &addr, &size);
			if (rc) {
				snprintf(why, n, "no variable '%s' in the program's symbol table%s", spec[i].symbol,
					 rc == -ENOENT ? "" : " (cannot read it)");
				break;
			}
			if (!len) /* a smaller variable: its own bytes */
				len = size >= 8 || !size ? 8 : size >= 4 ? 4 : size >= 2 ? 2 : 1;
		}
		if (!len)
			len = 8;
		struct perf_event_attr a;
		char w[160];
		if (weft_watch_attr(addr, len, spec[i].rw, &a, w, sizeof(w))) {
			snprintf(why, n, "%s: %s", spec[i].symbol[0] ? spec[i].symbol : "address", w);
			rc = -EINVAL;
			break;
		}
		watches[i].addr = addr;
		watches[i].len = len;
		watches[i].src = spec[i].rw ? WEFT_ACC_WATCH_RW : WEFT_ACC_WATCH_W;
		snprintf(watches[i].name, sizeof(watches[i].name), "%s", spec[i].symbol);
	}
	if (rc) {
		weft_in_runtime--;
		return rc;
	}
	nwatches = nspec < WEFT_MAX_WATCH ? nspec : WEFT_MAX_WATCH;
	pthread_once(&key_once, make_key);
	open_watches((uint32_t)syscall(SYS_gettid));
	if (atomic_load(&watch_open_failures)) {
		/* the self-test's opened: these may not (every debug register taken, a bad address) */
		nwatches = 0;
		drop_watch_rings();
		weft_in_runtime--;
		snprintf(why, n, "perf_event_open of a watchpoint failed after the self-test passed: %s",
			 strerror(watch_first_errno));
		return -EBUSY;
	}
	weft_in_runtime--;
	return 0;
}

/* ---- the sources' faces (collect/source.h) ---- */

/* mem_access and watch share the sampler thread, the rings, the drain, the fork handlers and
 * the stop: the watch row runs them only when mem_access did not open (sources[0] is set
 * from mem_access's open on, and only then). */
static int access_wanted(void)
{
	return weft_cfg.mem_access[0] != 0;
}

static void access_label(char *buf, size_t n)
{
	snprintf(buf, n, "mem-access=%s:", weft_cfg.mem_access);
}

static void access_describe(char *buf, size_t n)
{
	static const char *const names[] = {"", "page faults (first touch of each page)", "PEBS loads (latency) and stores",
					    "PEBS stores", "IBS ops"};
	unsigned k = (unsigned)sources[0];
	snprintf(buf, n, "%s, every thread of the program", k < sizeof(names) / sizeof(names[0]) ? names[k] : "?");
}

const struct weft_source weft_source_mem_access = {
	.name = "mem_access",
	.option = "mem_access",
	.wanted = access_wanted,
	.label = access_label,
	.open = access_open,
	.start = begin,
	.drain = weft_access_drain,
	.fork_prepare = atfork_prepare,
	.fork_parent = atfork_parent,
	.fork_child = atfork_child,
	.stop = stop_sampler,
	.describe = access_describe,
};

static int watch_wanted(void)
{
	return weft_cfg.nwatch > 0;
}

static void watch_drain(void)
{
	if (!sources[0])
		weft_access_drain();
}

static void watch_fork_prepare(void)
{
	if (!sources[0])
		atfork_prepare();
}

static void watch_fork_parent(void)
{
	if (!sources[0])
		atfork_parent();
}

static void watch_fork_child(void)
{
	if (!sources[0])
		atfork_child();
}

static void watch_describe(char *buf, size_t n)
{
	size_t o = (size_t)snprintf(buf, n, "%d hardware watchpoint%s:", nwatches, nwatches == 1 ? "" : "s");
	for (int i = 0; i < nwatches && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, " %s%s", watches[i].name[0] ? watches[i].name : "address",
				      watches[i].src == WEFT_ACC_WATCH_RW ? "/rw" : "/w");
}

const struct weft_source weft_source_watch = {
	.name = "watch",
	.option = "watch",
	.wanted = watch_wanted,
	.open = watch_open,
	.start = begin,
	.drain = watch_drain,
	.fork_prepare = watch_fork_prepare,
	.fork_parent = watch_fork_parent,
	.fork_child = watch_fork_child,
	.stop = stop_sampler,
	.describe = watch_describe,
};
