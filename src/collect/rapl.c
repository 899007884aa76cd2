/*
 * rapl.c - CPU package and DRAM energy from the powercap RAPL interface (power=1), a source of
 * the system sampler (sampler.c): every SYS/class/powercap/intel-rapl:N zone and its
 * intel-rapl:N:M subzones (SYS is sysfs_root=, /sys by default), their energy_uj counters kept
 * open and read every power_period. The records hold the counter as read; the converters turn
 * two readings into watts (the energy between them over the time between them), counting a
 * smaller reading as a wrap at the zone's max_energy_range_uj (in the SYS_CHANNEL record).
 * Since Linux 5.10 energy_uj is readable by root only: then this says so and records nothing.
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

#define MAX_ZONES 64

/* Sampler thread only. */
static struct { int fd, ch; } zones[MAX_ZONES];
static int nzones;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int open_rapl(char *desc, size_t n)
{
	char dir[600], path[800];
	weft_sys_path(dir, sizeof(dir), weft_cfg.sysfs_root, "/class/powercap");
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		snprintf(desc, n, "no %s (%s): no RAPL powercap driver (a virtual machine, or not Intel/AMD?)", dir,
			 strerror(e));
		return -e;
	}
	static char names[MAX_ZONES][64];
	char *sorted[MAX_ZONES];
	int k = 0;
	struct dirent *de;
	while ((de = readdir(d)) && k < MAX_ZONES) {
		if (strncmp(de->d_name, "intel-rapl:", 11) || strlen(de->d_name) >= sizeof(names[0]))
			continue;
		memcpy(names[k], de->d_name, strlen(de->d_name) + 1); /* fits: checked above */
		sorted[k] = names[k];
		k++;
	}
	closedir(d);
	qsort(sorted, (size_t)k, sizeof(sorted[0]), cmp_str);
	int first_err = 0;
	const char *first_path = "";
	static char err_path[800];
	nzones = 0;
	for (int i = 0; i < k; i++) {
		char zname[64] = "", parent[64] = "", label[140];
		weft_sys_path(path, sizeof(path), dir, "/%s/name", sorted[i]);
		if (weft_sys_read_line(path, zname, sizeof(zname)) || !zname[0])
			snprintf(zname, sizeof(zname), "%s", sorted[i]);
		const char *colon2 = strchr(sorted[i] + 11, ':');
		if (colon2) { /* a subzone: named after its zone too, "package-0:core" */
			char pz[64];
			snprintf(pz, sizeof(pz), "%.*s", (int)(colon2 - sorted[i]), sorted[i]);
			weft_sys_path(path, sizeof(path), dir, "/%s/name", pz);
			if (weft_sys_read_line(path, parent, sizeof(parent)))
				snprintf(parent, sizeof(parent), "%s", pz);
		}
		snprintf(label, sizeof(label), "%s%s%s", parent, parent[0] ? ":" : "", zname);
		uint64_t max = 0;
		char line[64];
		weft_sys_path(path, sizeof(path), dir, "/%s/max_energy_range_uj", sorted[i]);
		if (!weft_sys_read_line(path, line, sizeof(line)))
			max = strtoull(line, NULL, 10);
		weft_sys_path(path, sizeof(path), dir, "/%s/energy_uj", sorted[i]);
		int fd = weft_fd_high(open(path, O_RDONLY | O_CLOEXEC));
		uint64_t v;
		int e = fd < 0 ? errno : -weft_sys_read_u64(fd, &v);
		if (e) {
			if (fd >= 0)
				close(fd);
			if (!first_err) {
				first_err = e;
				snprintf(err_path, sizeof(err_path), "%s", path);
				first_path = err_path;
			}
			continue;
		}
		int ch = weft_sys_channel(WEFT_SYSK_RAPL_UJ, (unsigned)i, max, label, WEFT_SYSCH_HOLD);
		if (ch < 0) {
			close(fd);
			break;
		}
		zones[nzones].fd = fd;
		zones[nzones++].ch = ch;
	}
	if (!nzones) {
		if (!k)
			snprintf(desc, n, "no intel-rapl zones in %s", dir);
		else
			snprintf(desc, n, "cannot read %s: %s%s", first_path, strerror(first_err),
				 first_err == EACCES ? " (root only since Linux 5.10: run as root, or make energy_uj readable)"
						     : "");
		return -(first_err ? first_err : ENOENT);
	}
	snprintf(desc, n, "energy_uj of %d RAPL zone%s (%s), every %.6g ms", nzones, nzones == 1 ? "" : "s", dir,
		 (double)weft_cfg.power_period_ns / 1e6);
	return 0;
}

static void sample_rapl(void)
{
	for (int i = 0; i < nzones; i++) {
		uint64_t v;
		if (!weft_sys_read_u64(zones[i].fd, &v))
			weft_sys_emit(zones[i].ch, v);
	}
}

static void close_rapl(int after_fork)
{
	(void)after_fork;
	for (int i = 0; i < nzones; i++)
		close(zones[i].fd);
	nzones = 0;
}

const struct weft_sys_ops weft_sys_rapl = {WEFT_SYS_RAPL, 1, 1, open_rapl, sample_rapl, close_rapl};
