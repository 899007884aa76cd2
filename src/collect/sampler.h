/*
 * sampler.h - the face every periodic source of the system sampler shows (collect/sampler.c
 * runs them all on one thread): open (or say "unavailable: why"), sample (read and emit into
 * the sampler's weft stream), close. What a source says at open is its description for
 * `weft info` (a SYS_SOURCE metadata record). Sources: procstat.c (the process's CPU time and
 * RSS), cpufreq.c (per-CPU frequency), cpuidle.c (per-CPU idle
 * time), rapl.c (powercap energy), nvml.c (NVIDIA GPU power, SM clock and
 * utilization).
 */
#ifndef WEFT_COLLECT_SAMPLER_H
#define WEFT_COLLECT_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

struct weft_sys_ops {
	unsigned source;    /* enum weft_sys_source */
	int system_wide;    /* one process of a trace samples it (the others stand by) */
	int power_clock;    /* sampled every power_period (else every sample_period) */
	/* 0 with what it samples in desc, or -errno with why it cannot in desc; channels are
	 * declared here (weft_sys_channel). Runs on the sampler thread. */
	int (*open)(char *desc, size_t n);
	void (*sample)(void);       /* reads its channels and emits them (weft_sys_emit) */
	void (*close)(int after_fork); /* after_fork: the parent's handles, forget them only */
};

extern const struct weft_sys_ops weft_sys_procstat, weft_sys_cpufreq, weft_sys_cpuidle, weft_sys_rapl, weft_sys_nvml;

/* Channel flags. */
#define WEFT_SYSCH_HOLD 1 /* after a stretch without change, the old value is repeated at the last
			   * sample that saw it, so readers see the flat stretch (cumulative
			   * counters, RSS, energy); without it a value is written on change only */

/* Declares a channel (SYS_CHANNEL record); returns its id (> 0), or -1 when the table is full. */
int weft_sys_channel(unsigned kind, unsigned index, uint64_t aux, const char *name, int flags);
/* A reading of channel ch now (CLOCK_BOOTTIME), written if it changed (see the flags). */
void weft_sys_emit(int ch, uint64_t value);
/* path = root + the rest, printf-style; returns path ("" when too long). */
char *weft_sys_path(char *path, size_t n, const char *root, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* The first unsigned decimal of the file at fd (read from offset 0). 0 or -errno. */
int weft_sys_read_u64(int fd, uint64_t *v);
/* How many sysfs files one source may keep open: a sixteenth of the process's descriptor
 * limit (64 of the usual 1024), so the traced program keeps the descriptors it counts on; a
 * machine with more CPUs than that has its first ones sampled (weft info says how many). */
int weft_sys_fd_budget(void);
/* The first line of a small file, without its newline. 0 or -errno. */
int weft_sys_read_line(const char *path, char *buf, size_t n);

#endif
