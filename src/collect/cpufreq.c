/*
 * cpufreq.c - per-CPU frequency (power=1), a source of the system sampler (sampler.c): each
 * CPU's SYS/devices/system/cpu/cpuN/cpufreq/scaling_cur_freq (kHz; SYS is sysfs_root=, /sys
 * by default), kept open and read with pread every sample_period, written only when it
 * changes. The converters show them as Perfetto's CPU frequency tracks. Idle time is cpuidle.c's
 * (per-state totals: sysfs does not say which state a CPU is in now).
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

/* Sampler thread only. */
static struct { int fd, ch; } cpus[MAX_CPUS];
static int ncpus;

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

static int open_cpufreq(char *desc, size_t n)
{
	char dir[600], path[700];
	weft_sys_path(dir, sizeof(dir), weft_cfg.sysfs_root, "/devices/system/cpu");
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		snprintf(desc, n, "cannot list %s: %s", dir, strerror(e));
		return -e;
	}
	static unsigned nums[MAX_CPUS];
	int k = 0;
	struct dirent *de;
	while ((de = readdir(d)) && k < MAX_CPUS) {
		const char *s = de->d_name;
		if (strncmp(s, "cpu", 3) || !s[3] || strspn(s + 3, "0123456789") != strlen(s + 3))
			continue;
		nums[k++] = (unsigned)strtoul(s + 3, NULL, 10);
	}
	closedir(d);
	qsort(nums, (size_t)k, sizeof(nums[0]), cmp_uint);
	int first_err = 0;
	ncpus = 0;
	int budget = weft_sys_fd_budget();
	for (int i = 0; i < k && ncpus < budget; i++) {
		weft_sys_path(path, sizeof(path), weft_cfg.sysfs_root, "/devices/system/cpu/cpu%u/cpufreq/scaling_cur_freq",
			      nums[i]);
		int fd = weft_fd_high(open(path, O_RDONLY | O_CLOEXEC));
		uint64_t v;
		if (fd >= 0 && weft_sys_read_u64(fd, &v)) {
			first_err = first_err ? first_err : EINVAL;
			close(fd);
			continue;
		}
		if (fd < 0) {
			first_err = first_err ? first_err : errno;
			continue;
		}
		char name[32];
		snprintf(name, sizeof(name), "cpu%u", nums[i]);
		int ch = weft_sys_channel(WEFT_SYSK_CPUFREQ_KHZ, nums[i], 0, name, 0);
		if (ch < 0) {
			close(fd);
			break;
		}
		cpus[ncpus].fd = fd;
		cpus[ncpus++].ch = ch;
	}
	if (!ncpus) {
		if (!k)
			snprintf(desc, n, "no CPUs listed in %s", dir);
		else if (first_err == ENOENT)
			snprintf(desc, n, "no %s/cpu%u/cpufreq/scaling_cur_freq (no cpufreq driver: a virtual machine?)", dir,
				 nums[0]);
		else
			snprintf(desc, n, "cannot read %s/cpu%u/cpufreq/scaling_cur_freq: %s", dir, nums[0],
				 strerror(first_err));
		return -(first_err ? first_err : ENOENT);
	}
	snprintf(desc, n, "scaling_cur_freq of %d CPU%s of %d (%s), every %.6g ms, on change", ncpus, ncpus == 1 ? "" : "s", k, dir,
		 (double)weft_cfg.sample_period_ns / 1e6);
	return 0;
}

static void sample_cpufreq(void)
{
	for (int i = 0; i < ncpus; i++) {
		uint64_t v;
		if (!weft_sys_read_u64(cpus[i].fd, &v))
			weft_sys_emit(cpus[i].ch, v);
	}
}

static void close_cpufreq(int after_fork)
{
	(void)after_fork;
	for (int i = 0; i < ncpus; i++)
		close(cpus[i].fd);
	ncpus = 0;
}

const struct weft_sys_ops weft_sys_cpufreq = {WEFT_SYS_CPUFREQ, 1, 0, open_cpufreq, sample_cpufreq, close_cpufreq};
