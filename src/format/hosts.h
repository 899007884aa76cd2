/*
 * hosts.h - one timeline for processes recorded on several hosts. Run once by the reader after
 * a trace is loaded (weft_hosts_align), so every converter and report sees the result:
 *
 * - Processes are grouped by host (their PROCESS record's host). The reference host is the
 *   host of world rank 0 (weft_proc_rank), else the first process's.
 * - Every other host gets a correction onto the reference host's CLOCK_BOOTTIME: from
 *   CLOCK_SYNC records (measured over MPI: the smallest round trip of each phase across the
 *   host's processes; both phases give a line, offset and drift, one a constant), else from
 *   the CLOCK records' REALTIME readings (NTP: the median of real - boot on each host).
 * - The correction is composed into each such process's tick -> ns map (base_ns, mult) and
 *   applied to every time held as CLOCK_BOOTTIME ns: the metadata's (start, end, clock and GPU
 *   clock points) here, the records' (COMPLETE, ACCESS, SCHED, SAMPLE) by weft_chunk_decode
 *   through the chunk's `fix`.
 * - A process whose REALTIME - BOOTTIME differs from its host's by over 1 s (a time namespace of
 *   its own: a container's, or a test's) is aligned on its own REALTIME readings.
 * - Pids and tids of every host but the reference are made unique: id | host index << 22
 *   (Linux pids are below 2^22), everywhere the trace names them (processes, parents,
 *   threads, the GPU and sampler threads, fork and signal tids, ACCESS records, GPU flow ids).
 *   SCHED records of other hosts keep their times aligned but name that host's CPUs and
 *   tasks as recorded: the .pftrace leaves them out (CPU tracks are the reference host's).
 * - Processes are named `NAME rank N` where the rank is known, and `NAME (HOST)` (or `NAME
 *   rank N (HOST)`) when the trace has several hosts.
 * Processes of the reference host are untouched: a single-host trace reads as before.
 */
#ifndef WEFT_HOSTS_H
#define WEFT_HOSTS_H

#include <stddef.h>
#include <stdint.h>

struct weft_trace;
struct weft_proc;
struct weft_clock_sync;
struct weft_clock_pt;

enum weft_align_method {
	WEFT_ALIGN_REFERENCE = 0, /* the reference host: untouched */
	WEFT_ALIGN_MPI = 1,       /* CLOCK_SYNC records (ping-pong over MPI) */
	WEFT_ALIGN_REALTIME = 2,  /* CLOCK records' REALTIME (NTP) */
	WEFT_ALIGN_NONE = 3,      /* nothing to align with: left as recorded */
};

/* A correction onto the reference clock: ns + off + drift * (ns - x0). */
struct weft_ns_fix {
	uint64_t x0;
	int64_t off;
	double drift;      /* ns per ns */
	uint32_t pid_from; /* the process's recorded pid, and its unique one (GPU flow ids) */
	uint32_t pid_to;
	uint32_t id_or;    /* or-ed into pids and tids: host index << 22 */
};

static inline uint64_t weft_ns_fix_apply(const struct weft_ns_fix *f, uint64_t ns)
{
	double d = f->drift * (double)(int64_t)(ns - f->x0);
	if (d > 9e18 || d < -9e18) /* a damaged trace's times: no overflow */
		d = 0;
	__int128 r = (__int128)ns + f->off + (int64_t)(d < 0 ? d - 0.5 : d + 0.5);
	return r < 0 ? 0 : r > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

struct weft_host {
	char *name;
	unsigned index;   /* 0: the reference host */
	int method;       /* enum weft_align_method */
	int64_t offset_ns; /* added to this host's BOOTTIME at `at_ns` (its own clock) */
	uint64_t at_ns;
	double drift_ns_s; /* ns per s */
	uint64_t rtt_ns;   /* MPI: the best round trip used (phase 0) */
	unsigned phases;   /* MPI: 1 or 2 phases measured */
	size_t npoints;    /* REALTIME: the clock points used */
	size_t nprocs;
	size_t apart; /* processes in a time namespace of their own: aligned on their own REALTIME */
};

struct weft_hosts {
	struct weft_host *h;
	size_t n;
};

/* Aligns the trace's hosts as above. Returns 1 when some process was changed (the caller
 * recomputes the trace's span), else 0. Records the hosts in t->hosts. */
int weft_hosts_align(struct weft_trace *t);
void weft_hosts_free(struct weft_hosts *h);

/* The pieces, for tests: a host's correction from CLOCK_SYNC records (the best round trip per
 * phase among n records; returns the phases used, 0 when none) and from clock points (the
 * median of real - boot minus ref_real_minus_boot; returns the points used). */
unsigned weft_hosts_sync_fix(const struct weft_clock_sync *const *recs, size_t n, int64_t *off,
			     uint64_t *x0, double *drift, uint64_t *rtt);
size_t weft_hosts_real_median(const struct weft_clock_pt *const *pts, size_t n, int64_t *median);

#endif
