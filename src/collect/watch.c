/*
 * watch.c - hardware watchpoints (watch=, `weft record --watch`), part of libweft-preload.so:
 * up to 4 PERF_TYPE_BREAKPOINT events (x86's debug registers) on variables of the program or
 * addresses, in every thread; every write (or read and write) of those bytes is one sample,
 * an ACCESS record of source 5 (writes) or 6 (reads and writes). Only after a self-test: a
 * write watchpoint on a variable of weft's own, written SELFTEST_WRITES times, must give
 * exactly that many samples; some virtual machines open breakpoint events that never fire,
 * and a source that records nothing would read as "the program never wrote it".
 *
 * The rings, the sampler that drains them, the pthread_create wrapper and the fork handlers
 * are memory access sampling's (access-ring.c, access.c): this source runs them only when
 * mem_access did not open (then its drain and fork steps are the sampler's). At stop the
 * WATCH metadata record holds each watchpoint and its hits.
 */
#include "collect/access-internal.h"
#include "collect/source.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct weft_acc_watch weft_acc__watches[WEFT_MAX_WATCH];
int weft_acc__nwatches;
_Atomic uint64_t weft_acc__watch_hits[WEFT_MAX_WATCH], weft_acc__watch_lost;

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
	weft_acc__ring_walk(&r, selftest_one, &c);
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
	struct weft_acc_watch *watches = weft_acc__watches;
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
	weft_acc__nwatches = nspec < WEFT_MAX_WATCH ? nspec : WEFT_MAX_WATCH;
	weft_acc__make_key();
	weft_acc__open_watches((uint32_t)syscall(SYS_gettid));
	if (atomic_load(&weft_acc__watch_open_failures)) {
		/* the self-test's opened: these may not (every debug register taken, a bad address) */
		weft_acc__nwatches = 0;
		weft_acc__drop_watch_rings();
		weft_in_runtime--;
		snprintf(why, n, "perf_event_open of a watchpoint failed after the self-test passed: %s",
			 strerror(weft_acc__watch_first_errno));
		return -EBUSY;
	}
	weft_in_runtime--;
	return 0;
}

void weft_acc__write_watch_totals(void)
{
	const struct weft_acc_watch *watches = weft_acc__watches;
	int nwatches = weft_acc__nwatches;
	if (!nwatches)
		return;
	/* docs/format.md, WATCH */
	unsigned char buf[16 + WEFT_MAX_WATCH * (24 + sizeof(watches[0].name))];
	size_t o = 0;
	uint32_t head[2] = {(uint32_t)nwatches, (uint32_t)atomic_load(&weft_acc__watch_open_failures)};
	uint64_t wl = atomic_load(&weft_acc__watch_lost);
	memcpy(buf, head, 8);
	memcpy(buf + 8, &wl, 8);
	o = 16;
	for (int i = 0; i < nwatches; i++) {
		uint32_t lt[2] = {watches[i].len, (uint32_t)watches[i].src};
		uint64_t hits = atomic_load(&weft_acc__watch_hits[i]);
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

/* ---- the source's face (collect/source.h) ---- */

/* mem_access and watch share the sampler thread, the rings, the drain, the fork handlers and
 * the stop: the watch row runs them only when mem_access did not open (sources[0] is set
 * from mem_access's open on, and only then). */
static int watch_wanted(void)
{
	return weft_cfg.nwatch > 0;
}

static void watch_drain(void)
{
	if (!weft_acc__sources[0])
		weft_access_drain();
}

static void watch_fork_prepare(void)
{
	if (!weft_acc__sources[0])
		weft_acc__fork_prepare();
}

static void watch_fork_parent(void)
{
	if (!weft_acc__sources[0])
		weft_acc__fork_parent();
}

static void watch_fork_child(void)
{
	if (!weft_acc__sources[0])
		weft_acc__fork_child();
}

static void watch_describe(char *buf, size_t n)
{
	const struct weft_acc_watch *watches = weft_acc__watches;
	int nwatches = weft_acc__nwatches;
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
	.start = weft_acc__begin,
	.drain = watch_drain,
	.fork_prepare = watch_fork_prepare,
	.fork_parent = watch_fork_parent,
	.fork_child = watch_fork_child,
	.stop = weft_acc__stop,
	.describe = watch_describe,
};
