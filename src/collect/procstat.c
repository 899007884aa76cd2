/*
 * procstat.c - the process's own CPU time and memory (cpu_mem=1), a source of the system
 * sampler (sampler.c): user and system CPU time from getrusage(RUSAGE_SELF) (every thread of
 * the process, microsecond resolution) and the resident set from PROC/self/statm (resident
 * pages times the page size; PROC is procfs_root=, /proc by default), every sample_period.
 * All three are cumulative or level readings written with WEFT_SYSCH_HOLD, so the converters
 * can interpolate them at any time of the run (per-slice CPU and RSS, docs/format.md).
 */
#include "lib/internal.h"
#include "collect/sampler.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Sampler thread only. */
static int statm_fd = -1;
static int ch_user, ch_sys, ch_rss;
static uint64_t page_size;

static int open_procstat(char *desc, size_t n)
{
	char path[600];
	weft_sys_path(path, sizeof(path), weft_cfg.procfs_root, "/self/statm");
	statm_fd = open(path, O_RDONLY | O_CLOEXEC);
	int e = errno;
	statm_fd = weft_fd_high(statm_fd);
	page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	ch_user = weft_sys_channel(WEFT_SYSK_CPU_USER_NS, 0, 0, "cpu.user", WEFT_SYSCH_HOLD);
	ch_sys = weft_sys_channel(WEFT_SYSK_CPU_SYS_NS, 0, 0, "cpu.sys", WEFT_SYSCH_HOLD);
	if (statm_fd >= 0)
		ch_rss = weft_sys_channel(WEFT_SYSK_RSS_BYTES, 0, 0, "mem.rss", WEFT_SYSCH_HOLD);
	snprintf(desc, n, "user and system CPU time (getrusage)%s%s%s%s, every %.6g ms",
		 statm_fd >= 0 ? " and RSS (" : "; RSS unavailable: ", path, statm_fd >= 0 ? ")" : ": ",
		 statm_fd >= 0 ? "" : strerror(e), (double)weft_cfg.sample_period_ns / 1e6);
	return 0;
}

static uint64_t tv_ns(struct timeval tv)
{
	return (uint64_t)tv.tv_sec * 1000000000ull + (uint64_t)tv.tv_usec * 1000ull;
}

static void sample_procstat(void)
{
	struct rusage ru;
	if (!getrusage(RUSAGE_SELF, &ru)) {
		weft_sys_emit(ch_user, tv_ns(ru.ru_utime));
		weft_sys_emit(ch_sys, tv_ns(ru.ru_stime));
	}
	if (statm_fd < 0)
		return;
	char buf[256];
	ssize_t r = pread(statm_fd, buf, sizeof(buf) - 1, 0);
	if (r <= 0)
		return;
	buf[r] = 0;
	unsigned long long size, resident;
	if (sscanf(buf, "%llu %llu", &size, &resident) == 2)
		weft_sys_emit(ch_rss, resident * page_size);
}

static void close_procstat(int after_fork)
{
	(void)after_fork;
	if (statm_fd >= 0)
		close(statm_fd);
	statm_fd = -1;
}

const struct weft_sys_ops weft_sys_procstat = {WEFT_SYS_CPU_MEM, 0, 0, open_procstat, sample_procstat, close_procstat};

/* ---- cpu_mem_exact=: a slice's own readings, on its thread ---- */

/* PROC/self/statm, opened at the first exact reading of this process (weft_g.pid: a fork child
 * opens its own); -2 when it cannot be opened (the RSS word is then 0). */
static _Atomic int exact_fd = -1;
static _Atomic int exact_pid;

static uint64_t exact_rss(void)
{
	int fd = atomic_load_explicit(&exact_fd, memory_order_acquire);
	if (fd == -1 || atomic_load_explicit(&exact_pid, memory_order_relaxed) != weft_g.pid) {
		char path[600];
		weft_sys_path(path, sizeof(path), weft_cfg.procfs_root, "/self/statm");
		int nfd = open(path, O_RDONLY | O_CLOEXEC);
		if (nfd < 0)
			nfd = -2;
		/* one open wins; a loser closes its own. A fork child's inherited copy of the
		 * parent's fd is its own to close. */
		if (atomic_compare_exchange_strong(&exact_fd, &fd, nfd)) {
			if (fd >= 0)
				close(fd);
			fd = nfd;
		} else {
			if (nfd >= 0)
				close(nfd);
			fd = atomic_load(&exact_fd);
		}
		atomic_store(&exact_pid, weft_g.pid);
	}
	if (fd < 0)
		return 0;
	char buf[128];
	ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);
	if (r <= 0)
		return 0;
	buf[r] = 0;
	/* "size resident ...": the second number, parsed by hand (no locale, no sscanf) */
	const char *s = buf;
	while (*s >= '0' && *s <= '9')
		s++;
	while (*s == ' ')
		s++;
	uint64_t pages = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		pages = pages * 10 + (uint64_t)(*s - '0');
	static uint64_t psize;
	if (!psize)
		psize = (uint64_t)sysconf(_SC_PAGESIZE);
	return pages * psize;
}

void weft__cpumem(uint32_t id, unsigned at_end)
{
	int e = errno;
	/* trigger= watches this site's slices (trigger.c): and where cpu_mem_exact= does not
	 * match it, that is all */
	if (__atomic_load_n(&weft_triggers_on, __ATOMIC_ACQUIRE) && !weft_trigger_slice(id, at_end)) {
		errno = e;
		return;
	}
	struct rusage ru;
	uint64_t user = 0, sys = 0;
	if (!getrusage(RUSAGE_THREAD, &ru)) {
		user = tv_ns(ru.ru_utime);
		sys = tv_ns(ru.ru_stime);
	}
	uint64_t rss = exact_rss();
	errno = e;
	uint64_t *p = weft__reserve(32);
	if (__builtin_expect(p == 0, 0))
		return;
	p[0] = rss;
	p[1] = weft__hdr(id, WEFT_R_CPUMEM, 2, at_end ? 1 : 0);
	p[2] = user;
	p[3] = sys;
	weft__commit(p + 4);
}
