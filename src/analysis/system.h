/*
 * system.h - what the system sampler's records mean (analysis/system.c): every channel's
 * readings in time order per process, and from them the figures the converters show - CPU
 * percentages, watts from energy counters (with their wrap), and a slice's own CPU time and
 * RSS, interpolated between the readings around its begin and its end.
 */
#ifndef WEFT_ANALYSIS_SYSTEM_H
#define WEFT_ANALYSIS_SYSTEM_H

#include "format/reader.h"
#include <stddef.h>
#include <stdint.h>

struct weft_sys_point { uint64_t ts, v; };
struct weft_sys_series {
	const struct weft_sys_chan_def *def;
	struct weft_sys_point *pt; /* in time order */
	size_t n, cap;
};
struct weft_sys_proc {
	const struct weft_proc *p;
	struct weft_sys_series *series; /* one per SYS_CHANNEL of the process, in its order */
	size_t nseries;
	const struct weft_sys_series *user, *sys, *rss; /* cpu_mem's, or NULL */
	uint64_t slice_min_ns; /* slices longer than this get CPU and RSS args (cpu_mem's period); 0: none */
};
struct weft_sys {
	struct weft_sys_proc *procs;
	size_t nprocs;
};

/* Reads every process's SAMPLE records (only the sampler threads' chunks are decoded). *out is
 * NULL when no process has a sampler channel. 0, or -errno with the reason in err. */
int weft_sys_analyze(const struct weft_trace *t, struct weft_sys **out, char *err, size_t errlen);
const struct weft_sys_proc *weft_sys_for(const struct weft_sys *s, const struct weft_proc *p);
void weft_sys_free(struct weft_sys *s);

/* A series' value at time t: linear between the readings around t, the first or last
 * reading outside them. */
double weft_sys_at(const struct weft_sys_series *s, uint64_t t);
/* The rate between readings i and i+1, per second, counting a smaller reading as one wrap at
 * wrap (0: no wrap, a smaller reading then gives 0): energy in uJ gives uW, CPU ns gives ns/s. */
double weft_sys_rate(const struct weft_sys_series *s, size_t i, uint64_t wrap);

/* A slice's share of the process's CPU and its RSS: CPU time used by the whole process
 * between begin and end (every thread; interpolated), the highest RSS seen (the readings
 * inside and the interpolated values at both ends) and its change. */
struct weft_sys_slice {
	uint64_t user_ns, sys_ns, rss_bytes;
	int64_t rss_delta;
};
/* 1 with *out filled when the slice is longer than slice_min_ns, else 0. */
int weft_sys_slice(const struct weft_sys_proc *sp, uint64_t begin, uint64_t end, struct weft_sys_slice *out);

#endif
