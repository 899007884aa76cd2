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
 * sample, source 5 (writes) or 6 (reads and writes), after a self-test (watch.c). Per-thread
 * events (access-ring.c), because the kernel refuses to map the buffer of an inherited
 * per-task event: the main thread's is opened at start, every later thread's by a wrapper of
 * pthread_create before the thread's own code runs. The PEBS and
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
 *
 * This file: the sampler and its drain, the threads the program creates, start, stop, fork
 * and the mem_access source; the rings are access-ring.c's, the watch source watch.c's
 * (access-internal.h lists what they share).
 */
#include "collect/access-internal.h"
#include "collect/clockgap.h"
#include "collect/source.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
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
#define DRAIN_NS 2000000 /* 2 ms */

static _Atomic int on;        /* sampling runs in this process */
static _Atomic int quit;      /* the sampler should do a last drain and leave */
static pthread_t sampler;
static int have_sampler;
static _Atomic uint64_t samples, lost, throttled;

static struct weft_site sampler_name = {0, WEFT_KIND_EVENT, 0, 0, 0, "weft: access sampler", "", 0, 0};

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

static void drain_one(struct ring *r, const struct perf_event_header *eh, const unsigned char *body, size_t len,
		      void *ud)
{
	const int64_t *gap = ud;
	if (eh->type == PERF_RECORD_SAMPLE) {
		struct weft_perf_sample s;
		if (!weft_perf_decode_sample(r->sample_type, body, len, &s) && (r->watch >= 0 || !weft_acc__own_sample(&s))) {
			emit(r, &s, *gap);
			atomic_fetch_add_explicit(r->watch >= 0 ? &weft_acc__watch_hits[r->watch] : &samples, 1,
						  memory_order_relaxed);
		}
	} else if (eh->type == PERF_RECORD_LOST && len >= 16) {
		uint64_t v[2];
		memcpy(v, body, sizeof(v));
		atomic_fetch_add_explicit(r->watch >= 0 ? &weft_acc__watch_lost : &lost, v[1], memory_order_relaxed);
	} else if (eh->type == PERF_RECORD_THROTTLE) {
		atomic_fetch_add_explicit(&throttled, 1, memory_order_relaxed);
	}
}

static void drain(struct ring *r, int64_t gap)
{
	weft_acc__ring_walk(r, drain_one, &gap);
}

/* Every ring, under rings_lock (held by the caller); free: close the rings of threads that
 * ended (not from a signal handler: free() could find malloc's lock held). */
static void drain_locked(int free_ended)
{
	int64_t gap = weft_clock_gap(); /* the time suspended so far: monotonic rings' offset */
	for (struct ring **pp = &weft_acc__rings; *pp;) {
		struct ring *r = *pp;
		int ended = atomic_load(&r->ended);
		drain(r, gap);
		if (ended && free_ended) { /* its last samples are out: the ring goes */
			*pp = r->next;
			weft_acc__free_ring(r, 1);
			continue;
		}
		pp = &r->next;
	}
}

static void drain_all(void)
{
	pthread_mutex_lock(&weft_acc__rings_lock);
	drain_locked(1);
	pthread_mutex_unlock(&weft_acc__rings_lock);
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
		if (pthread_mutex_timedlock(&weft_acc__rings_lock, &until))
			return;
	} else {
		pthread_mutex_lock(&weft_acc__rings_lock);
	}
	drain_locked(!in_signal);
	pthread_mutex_unlock(&weft_acc__rings_lock);
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
		weft_acc__watch_this_thread();
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
	if (weft_in_runtime || (!atomic_load(&on) && !weft_counters_on()) ||
	    weft_acc__own_thread(__builtin_return_address(0)))
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
	if (weft_acc__sources[0]) {
		uint32_t head[2] = {(uint32_t)weft_acc__sources[0], (uint32_t)weft_acc__sources[1]};
		uint64_t v[4] = {atomic_load(&samples), atomic_load(&lost), atomic_load(&throttled),
				 atomic_load(&weft_acc__own_samples)};
		weft_meta_write(WEFT_M_ACCESS, head, sizeof(head), v, sizeof(v));
	}
	weft_acc__write_watch_totals(); /* watch.c */
}

/* Last drain while the trace still runs (an atexit handler that runs before weft's). */
void weft_acc__stop(void)
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
void weft_acc__fork_prepare(void)
{
	pthread_mutex_lock(&weft_acc__rings_lock);
}

void weft_acc__fork_parent(void)
{
	pthread_mutex_unlock(&weft_acc__rings_lock);
}

/* Runs after the child's trace restarted, inside the runtime; the threads started before it
 * (writers, the system sampler) are weft's and never take rings_lock. */
void weft_acc__fork_child(void)
{
	pthread_mutex_init(&weft_acc__rings_lock, NULL);
	/* the parent's rings and sampler are the parent's: start over for this process */
	struct ring *r = weft_acc__rings;
	weft_acc__rings = NULL;
	while (r) {
		struct ring *n = r->next;
		weft_acc__free_ring(r, 0);
		r = n;
	}
	pthread_setspecific(weft_acc__ring_key, NULL); /* (those were this thread's in the parent) */
	have_sampler = 0;
	if (!atomic_load(&on))
		return;
	atomic_store(&samples, 0);
	atomic_store(&lost, 0);
	atomic_store(&throttled, 0);
	atomic_store(&weft_acc__own_samples, 0);
	for (int i = 0; i < weft_acc__nwatches; i++)
		atomic_store(&weft_acc__watch_hits[i], 0);
	atomic_store(&weft_acc__watch_lost, 0);
	atomic_store(&quit, 0);
	weft_acc__watch_this_thread();
	start_sampler();
}

/* Sampling starts in this process (once, whichever source comes first). */
void weft_acc__begin(void)
{
	if (atomic_exchange(&on, 1))
		return;
	start_sampler();
	atexit(weft_acc__stop);
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
		weft_acc__sources[0] = WEFT_ACC_PEBS_LOAD;
		weft_acc__sources[1] = WEFT_ACC_PEBS_STORE;
	} else if (!strcmp(src, "ibs") || ((!strcmp(src, "auto") || !strcmp(src, "1")) && ibs)) {
		weft_acc__sources[0] = WEFT_ACC_IBS_OP;
	} else {
		weft_acc__sources[0] = WEFT_ACC_PAGEFAULT;
	}
	weft_acc__make_key();
	weft_in_runtime++;
	weft_acc__find_own_extent();
	weft_acc__open_sources((uint32_t)syscall(SYS_gettid));
	weft_in_runtime--;
	if (atomic_load(&weft_acc__open_failures)) {
		int e = weft_acc__first_errno;
		weft_acc__sources[0] = weft_acc__sources[1] = 0; /* (no ring opened: the first open is the one that failed) */
		snprintf(why, n, "perf_event_open failed: %s%s", strerror(e),
			 e == EACCES || e == EPERM ? " (kernel.perf_event_paranoid too high? run as root or lower it)" : "");
		return -e;
	}
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
	unsigned k = (unsigned)weft_acc__sources[0];
	snprintf(buf, n, "%s, every thread of the program", k < sizeof(names) / sizeof(names[0]) ? names[k] : "?");
}

const struct weft_source weft_source_mem_access = {
	.name = "mem_access",
	.option = "mem_access",
	.wanted = access_wanted,
	.label = access_label,
	.open = access_open,
	.start = weft_acc__begin,
	.drain = weft_access_drain,
	.fork_prepare = weft_acc__fork_prepare,
	.fork_parent = weft_acc__fork_parent,
	.fork_child = weft_acc__fork_child,
	.stop = weft_acc__stop,
	.describe = access_describe,
};
