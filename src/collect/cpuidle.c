/*
 * cpuidle.c - per-CPU idle residency (power=1), a source of the system sampler (sampler.c):
 * each CPU's SYS/devices/system/cpu/cpuN/cpuidle/stateK/time (microseconds spent in state K
 * so far; SYS is sysfs_root=, /sys by default), every state's file kept open and read with
 * pread every sample_period. A CPU's reading is the sum over its states' growth since the
 * previous sample: the microseconds it was idle in that sampling period (scaled to one
 * sample_period when the sampler was late by half a period or more), written only when it
 * changes. The first sample sets the base and writes nothing. The converters show it as
 * "cpuN idle %" (the reading over the period). The kernel adds a state's residency when the
 * CPU leaves it, so an idle stretch longer than a period is counted in the period it ends.
 * System-wide: one process of a trace samples it.
 */
#include "lib/internal.h"
#include "collect/sampler.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CPUS 1024
#define MAX_FDS 4096 /* every state of every CPU, kept open */

/* Sampler thread only. */
static struct {
	int ch, first, n; /* channel; its states' fds are fds[first .. first + n) */
	int have;         /* last is set */
	uint64_t last;    /* the sum at the previous sample */
} cpus[MAX_CPUS];
static int fds[MAX_FDS];
static int ncpus, nfds;
static uint64_t last_ts; /* the previous sample (CLOCK_BOOTTIME ns), 0 before the first */

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

/* The numbers N of the entries PREFIXN of dir, sorted; -errno when it cannot be listed. */
static int list_numbered(const char *dir, const char *prefix, unsigned *nums, int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	size_t pl = strlen(prefix);
	int k = 0;
	struct dirent *de;
	while ((de = readdir(d)) && k < max) {
		const char *s = de->d_name;
		if (strncmp(s, prefix, pl) || !s[pl] || strspn(s + pl, "0123456789") != strlen(s + pl))
			continue;
		nums[k++] = (unsigned)strtoul(s + pl, NULL, 10);
	}
	closedir(d);
	qsort(nums, (size_t)k, sizeof(nums[0]), cmp_uint);
	return k;
}

/* Opens CPU cpu's states into fds[]; the number opened, or -errno (none). */
static int open_states(const char *dir, unsigned cpu)
{
	char sdir[700], path[800];
	unsigned st[64];
	snprintf(sdir, sizeof(sdir), "%s/cpu%u/cpuidle", dir, cpu);
	int k = list_numbered(sdir, "state", st, 64);
	if (k <= 0)
		return k ? k : -ENOENT;
	int n = 0, err = 0;
	int budget = weft_sys_fd_budget() < MAX_FDS ? weft_sys_fd_budget() : MAX_FDS;
	if (nfds + k > budget) /* all of a CPU's states or none: a part would under-count its idle time */
		return -EMFILE;
	for (int i = 0; i < k; i++) {
		snprintf(path, sizeof(path), "%s/state%u/time", sdir, st[i]);
		int fd = weft_fd_high(open(path, O_RDONLY | O_CLOEXEC));
		uint64_t v;
		if (fd < 0 || weft_sys_read_u64(fd, &v)) {
			err = fd < 0 ? errno : EINVAL;
			if (fd >= 0)
				close(fd);
			continue;
		}
		fds[nfds++] = fd;
		n++;
	}
	return n ? n : -err;
}

static int open_cpuidle(char *desc, size_t n)
{
	char dir[600];
	weft_sys_path(dir, sizeof(dir), weft_cfg.sysfs_root, "/devices/system/cpu");
	static unsigned nums[MAX_CPUS];
	int k = list_numbered(dir, "cpu", nums, MAX_CPUS);
	if (k < 0) {
		snprintf(desc, n, "cannot list %s: %s", dir, strerror(-k));
		return k;
	}
	int first_err = 0;
	ncpus = nfds = 0;
	last_ts = 0;
	for (int i = 0; i < k; i++) {
		int first = nfds, got = open_states(dir, nums[i]);
		if (got == -EMFILE) /* the descriptor budget: the CPUs so far */
			break;
		if (got < 0) {
			first_err = first_err ? first_err : -got;
			continue;
		}
		char name[32];
		snprintf(name, sizeof(name), "cpu%u", nums[i]);
		int ch = weft_sys_channel(WEFT_SYSK_CPUIDLE_US, nums[i], 0, name, 0);
		if (ch < 0) {
			while (nfds > first)
				close(fds[--nfds]);
			break;
		}
		cpus[ncpus].ch = ch;
		cpus[ncpus].first = first;
		cpus[ncpus].n = got;
		cpus[ncpus++].have = 0;
	}
	if (!ncpus) {
		if (!k)
			snprintf(desc, n, "no CPUs listed in %s", dir);
		else if (first_err == ENOENT)
			snprintf(desc, n, "no %s/cpu%u/cpuidle/state*/time (no cpuidle driver: a virtual machine?)", dir,
				 nums[0]);
		else
			snprintf(desc, n, "cannot read %s/cpu%u/cpuidle/state*/time: %s", dir, nums[0],
				 strerror(first_err));
		return -(first_err ? first_err : ENOENT);
	}
	snprintf(desc, n, "idle time of %d CPU%s of %d (%d states, %s/cpuN/cpuidle/stateK/time), every %.6g ms, "
		 "idle us per period, on change", ncpus, ncpus == 1 ? "" : "s", k, nfds, dir,
		 (double)weft_cfg.sample_period_ns / 1e6);
	return 0;
}

static void sample_cpuidle(void)
{
	uint64_t now = weft_boottime_ns(), period = weft_cfg.sample_period_ns;
	uint64_t elapsed = last_ts && now > last_ts ? now - last_ts : 0;
	for (int i = 0; i < ncpus; i++) {
		uint64_t sum = 0, v;
		int ok = 1;
		for (int s = 0; s < cpus[i].n && ok; s++) {
			ok = !weft_sys_read_u64(fds[cpus[i].first + s], &v);
			sum += v;
		}
		if (!ok) {
			cpus[i].have = 0; /* a file being rewritten: start over from the next sample */
			continue;
		}
		if (cpus[i].have && elapsed) {
			uint64_t d = sum >= cpus[i].last ? sum - cpus[i].last : 0;
			if (period && elapsed >= period + period / 2) /* late: rounds were skipped */
				d = (uint64_t)((double)d * (double)period / (double)elapsed + 0.5);
			weft_sys_emit(cpus[i].ch, d);
		}
		cpus[i].last = sum;
		cpus[i].have = 1;
	}
	last_ts = now;
}

static void close_cpuidle(int after_fork)
{
	(void)after_fork;
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	ncpus = nfds = 0;
	last_ts = 0;
}

const struct weft_sys_ops weft_sys_cpuidle = {WEFT_SYS_CPUIDLE, 1, 0, open_cpuidle, sample_cpuidle, close_cpuidle};
