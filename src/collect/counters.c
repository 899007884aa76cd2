/*
 * counters.c - per-slice counters (counters=LIST, `weft record --counters`): every thread of
 * the traced process gets one perf_event_open group (the first counter its leader, the others
 * members, all counting the thread itself from the open on, user and kernel work where
 * perf_event_paranoid allows, else user only), and every slice record of that thread - BEGIN
 * and END of weft.h, FUNC_ENTER and FUNC_EXIT of the preload runtime - carries the counters'
 * current values as extra words (docs/format.md, format 1.5); a reader takes the differences.
 *
 * Per-thread groups rather than one inherited group: an inherited counter read through the
 * parent's fd is the sum over every thread, and rdpmc reads only the event of the thread it
 * was opened for, so per-slice values need one group per thread anyway. The main thread's is
 * opened at start (its open), every later thread's by the preload runtime's
 * pthread_create wrapper (collect/access.c) before the thread's own code runs; threads the
 * wrapper did not see (made before start, or with clone) carry no counters. A fork child
 * opens its own for the forking thread.
 *
 * Reading: when every counter is a hardware one and its mmap page allows rdpmc, in user space
 * (counters-table.c, the page's seqlock); else, and whenever an event is not on the PMU at that
 * moment, one read() of the group (PERF_FORMAT_GROUP). A set with a software event is not a
 * group but one event per counter, each read in turn: a group led by task-clock with
 * page-faults in it counted no fault at all in about 1 run in 10 (Linux 6.18; the same
 * events ungrouped, 30 of 30 right), and software events are never multiplexed anyway. The
 * thread's state lives in TLS written only by the thread itself (and its key destructor, on
 * that thread, at its exit). errno is preserved: the program never sees the reads.
 */
#include "lib/internal.h"
#include "collect/counters.h"
#include "collect/source.h"
#include "format/format.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINST __attribute__((no_instrument_function))

/* Set once by counters_open (before any thread of the program but the caller can read
 * them: later threads are created after), read-only after. */
static const struct weft_ctr_def *defs[WEFT_CTR_MAX];
static int ndefs;
static int exclude_kernel; /* perf_event_paranoid refused kernel counting for the main thread */
static _Atomic int on;
static pthread_key_t key;

/* The calling thread's group: written by the thread when it opens and at its exit. */
struct ctr_thread {
	int n;     /* counters open (0: none) */
	int rdpmc; /* every counter may be read with rdpmc */
	int grouped; /* one group (hardware counters only), read at once */
	int fd[WEFT_CTR_MAX];
	struct perf_event_mmap_page *pg[WEFT_CTR_MAX];
};
static __thread struct ctr_thread ct WEFT_TLS;

static _Atomic uint64_t threads_failed; /* threads whose group could not be opened */

/* mapped: 0 in a fork child, whose inherited counter pages the kernel did not copy (perf
 * mappings are VM_DONTCOPY): another mapping may be at their addresses by then */
static void close_group(int mapped) NOINST;
static void close_group(int mapped)
{
	long ps = sysconf(_SC_PAGESIZE);
	weft__tls.nctr = 0;
	for (int i = 0; i < ct.n; i++) {
		if (ct.pg[i] && mapped)
			munmap(ct.pg[i], (size_t)ps);
		close(ct.fd[i]);
	}
	memset(&ct, 0, sizeof(ct));
}

static int open_group(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	int hw = 1;
	for (int i = 0; i < ndefs; i++)
		hw &= defs[i]->type == PERF_TYPE_HARDWARE;
	struct ctr_thread t;
	memset(&t, 0, sizeof(t));
	for (int i = 0; i < ndefs; i++) {
		struct perf_event_attr a;
		weft_ctr_attr(defs[i], hw && i == 0, exclude_kernel, &a);
		int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, hw && i ? t.fd[0] : -1, PERF_FLAG_FD_CLOEXEC);
		fd = weft_fd_high(fd); /* read at every slice: never one of the program's files */
		if (fd < 0) {
			int e = errno;
			for (int k = 0; k < t.n; k++) {
				if (t.pg[k])
					munmap(t.pg[k], (size_t)ps);
				close(t.fd[k]);
			}
			return -e;
		}
		t.fd[t.n] = fd;
		t.pg[t.n] = NULL;
		if (hw) { /* only hardware events can be read with rdpmc */
			void *m = mmap(NULL, (size_t)ps, PROT_READ, MAP_SHARED, fd, 0);
			t.pg[t.n] = m == MAP_FAILED ? NULL : m;
		}
		t.n++;
	}
	t.rdpmc = 0;
	t.grouped = hw;
#if defined(__x86_64__) || defined(__i386__)
	t.rdpmc = hw;
	for (int i = 0; i < t.n; i++)
		t.rdpmc &= weft_ctr_mmap_can_rdpmc(t.pg[i]);
#endif
	ct = t;
	weft__tls.nctr = t.n;
	return 0;
}

static int read_now(uint64_t *v) NOINST;
static int read_now(uint64_t *v)
{
	int n = ct.n;
	if (ct.rdpmc) {
		int i = 0;
		while (i < n && !weft_ctr_mmap_read(ct.pg[i], weft_ctr_rdpmc, &v[i]))
			i++;
		if (i == n)
			return 0;
	}
	if (!ct.grouped) {
		for (int i = 0; i < n; i++)
			if (read(ct.fd[i], &v[i], sizeof(v[i])) != (ssize_t)sizeof(v[i]))
				return -1;
		return 0;
	}
	uint64_t buf[1 + WEFT_CTR_MAX];
	ssize_t r = read(ct.fd[0], buf, sizeof(uint64_t) * (1 + (size_t)n));
	return r < 0 ? -1 : weft_ctr_group_parse(buf, (size_t)r, (unsigned)n, v);
}

void weft__slice_ctr(uint64_t hdr)
{
	unsigned type = (unsigned)(hdr >> 32) & 0xff;
	int n = weft__tls.nctr;
	uint64_t v[WEFT_CTR_MAX], t;
	int e = errno, ok;
	if (n <= 0 || n > WEFT_CTR_MAX || n != ct.n) { /* a stale nctr: never trust it past ct */
		weft__rec2(hdr);
		return;
	}
	/* the counters are read inside the slice's time span: after the begin's clock, before
	 * the end's */
	if (type == WEFT_R_BEGIN || type == WEFT_R_FUNC_ENTER) {
		t = weft__ticks();
		ok = !read_now(v);
	} else {
		ok = !read_now(v);
		t = weft__ticks();
	}
	errno = e;
	unsigned lead = type == WEFT_R_END; /* END's flags word comes first (format 1.4) */
	unsigned extra = ok ? lead + (unsigned)n : 0;
	uint64_t *p = weft__reserve(8 * (2 + (size_t)extra));
	if (__builtin_expect(p == 0, 0))
		return;
	p[0] = t;
	p[1] = (hdr & ~(0xffull << 40)) | (uint64_t)extra << 40;
	if (extra) {
		if (lead)
			p[2] = 0;
		memcpy(p + 2 + lead, v, 8 * (size_t)n);
	}
	weft__commit(p + 2 + extra);
}

int weft_counters_read(uint64_t *v)
{
	if (!weft__tls.nctr || ct.n != weft__tls.nctr)
		return 0;
	int e = errno;
	int rc = read_now(v);
	errno = e;
	return rc ? 0 : ct.n;
}

static void thread_gone(void *arg)
{
	(void)arg;
	close_group(1);
}

/* COUNTERS metadata (docs/format.md): u32 n, u32 flags, then the n names. */
static void write_meta(void)
{
	char names[WEFT_CTR_MAX * 32];
	size_t o = 0;
	for (int i = 0; i < ndefs; i++) {
		size_t l = strlen(defs[i]->name) + 1;
		memcpy(names + o, defs[i]->name, l);
		o += l;
	}
	uint32_t head[2] = {(uint32_t)ndefs, (exclude_kernel ? 1u : 0u) | (ct.rdpmc ? 2u : 0u)};
	weft_meta_write(WEFT_M_COUNTERS, head, sizeof(head), names, o);
}

void weft_counters_thread(void)
{
	if (!atomic_load_explicit(&on, memory_order_acquire) || ct.n)
		return;
	if (open_group()) {
		atomic_fetch_add(&threads_failed, 1);
		return;
	}
	pthread_setspecific(key, &ct);
}

static void atfork_child(void)
{
	if (!atomic_load(&on))
		return;
	/* the inherited fds count the parent's thread: this process counts its own */
	close_group(0);
	if (!open_group())
		pthread_setspecific(key, &ct);
	write_meta();
}

/* ---- the source's face (collect/source.h) ---- */

static int counters_wanted(void)
{
	return weft_cfg.counters[0] != 0;
}

static void counters_label(char *buf, size_t n)
{
	snprintf(buf, n, "counters=%s:", weft_cfg.counters);
}

/* The calling (main) thread's group and the COUNTERS record: 0, or -errno with the reason. */
static int counters_open(char *why, size_t n)
{
	int k = weft_ctr_parse(weft_cfg.counters, defs, why, n);
	if (k < 0)
		return k;
	ndefs = k;
	int rc = open_group();
	if (rc == -EACCES || rc == -EPERM) { /* perf_event_paranoid: user space only */
		exclude_kernel = 1;
		rc = open_group();
	}
	if (rc) {
		snprintf(why, n, "perf_event_open: %s", strerror(-rc));
		ndefs = 0;
		return rc;
	}
	pthread_key_create(&key, thread_gone);
	pthread_setspecific(key, &ct);
	write_meta();
	atomic_store_explicit(&on, 1, memory_order_release);
	return 0;
}

/* Threads the program creates from now on open no group (nothing of theirs is recorded). */
static void counters_stop(void)
{
	atomic_store(&on, 0);
}

static void counters_describe(char *buf, size_t n)
{
	snprintf(buf, n, "%s on every slice of each thread%s", weft_cfg.counters,
		 exclude_kernel ? " (user space only)" : "");
}

const struct weft_source weft_source_counters = {
	.name = "counters",
	.option = "counters",
	.wanted = counters_wanted,
	.label = counters_label,
	.open = counters_open,
	.fork_child = atfork_child, /* after the child's trace restarted */
	.stop = counters_stop,
	.describe = counters_describe,
};

int weft_counters_on(void)
{
	return atomic_load_explicit(&on, memory_order_relaxed);
}
