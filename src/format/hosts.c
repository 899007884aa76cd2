/*
 * hosts.c - puts the processes of several hosts on one clock (see hosts.h for what and why).
 *
 * How: the hosts are listed in the order their first process appears, the reference host
 * moved to index 0. For each other host a correction ns -> ns + off + drift * (ns - x0) is
 * found: from CLOCK_SYNC records (offset_ns is the reference's BOOTTIME minus this process's
 * at at_ns; phase 0 is measured after MPI_Init, phase 1 before MPI_Finalize; per phase the
 * measurement with the smallest round trip among the host's processes wins, and two phases
 * give the line through both: Score-P's drift correction; two phases that agree within their
 * round trips give the better one as a constant), else from the CLOCK records (each
 * holds one BOOTTIME and one REALTIME reading: real - boot is the host's boot time on the
 * wall clock; the median over the host's points, minus the reference host's median, is the
 * offset). Each process of the host then gets that correction composed into its tick -> ns
 * map, so ticks convert straight onto the reference clock, and its chunks point at it, so
 * weft_chunk_decode corrects the records that hold BOOTTIME ns themselves.
 */
#include "format/hosts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/reader.h"

#define HOST_SHIFT 22 /* Linux pids and tids are below 2^22 (pid_max) */
#define NS_APART 1000000000 /* a process whose boot time differs from its host's by more */

static const char *host_of(const struct weft_proc *p)
{
	return p->host && *p->host ? p->host : "(unknown host)";
}

unsigned weft_hosts_sync_fix(const struct weft_clock_sync *const *recs, size_t n, int64_t *off,
			     uint64_t *x0, double *drift, uint64_t *rtt)
{
	const struct weft_clock_sync *best[2] = {NULL, NULL};
	for (size_t i = 0; i < n; i++) {
		const struct weft_clock_sync *c = recs[i];
		if (c->phase > 1)
			continue;
		if (!best[c->phase] || c->rtt_ns < best[c->phase]->rtt_ns)
			best[c->phase] = c;
	}
	const struct weft_clock_sync *a = best[0] ? best[0] : best[1], *b = best[0] ? best[1] : NULL;
	if (!a)
		return 0;
	*off = a->offset_ns;
	*x0 = a->at_ns;
	*rtt = a->rtt_ns;
	*drift = 0;
	if (b && b->at_ns > a->at_ns) {
		/* Each phase bounds the true offset within half its round trip. Where the two
		 * bounds overlap, no drift is measured (a ping-pong preempted for ms on an
		 * oversubscribed node would tilt the line by ms/s): the better phase's offset,
		 * brought within the other's bounds, is a constant. */
		__int128 d = (__int128)b->offset_ns - a->offset_ns;
		if ((d < 0 ? -d : d) * 2 <= (__int128)a->rtt_ns + b->rtt_ns) {
			const struct weft_clock_sync *g = b->rtt_ns < a->rtt_ns ? b : a, *o = g == a ? b : a;
			int64_t lo = o->offset_ns - (int64_t)(o->rtt_ns / 2), hi = o->offset_ns + (int64_t)(o->rtt_ns / 2);
			*off = g->offset_ns < lo ? lo : g->offset_ns > hi ? hi : g->offset_ns;
			*x0 = g->at_ns;
			*rtt = g->rtt_ns;
			return 2;
		}
		*drift = ((double)b->offset_ns - (double)a->offset_ns) / (double)(b->at_ns - a->at_ns);
		return 2;
	}
	return 1;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return x < y ? -1 : x > y;
}

size_t weft_hosts_real_median(const struct weft_clock_pt *const *pts, size_t n, int64_t *median)
{
	int64_t *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		weft_oom("aligning hosts");
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (pts[i]->real_ns && pts[i]->boot_ns)
			v[k++] = (int64_t)(pts[i]->real_ns - pts[i]->boot_ns);
	if (k) {
		qsort(v, k, sizeof(*v), cmp_i64);
		/* the lower middle for an even count: a value that was measured */
		*median = v[(k - 1) / 2];
	}
	free(v);
	return k;
}

/* The clock points, or the CLOCK_SYNC records measured against `ref`, of host h's processes. */
static size_t host_points(const struct weft_trace *t, unsigned h, const struct weft_clock_pt ***out)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].host_index == h)
			n += t->procs[i].nclock;
	const struct weft_clock_pt **v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		weft_oom("aligning hosts");
	n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].host_index == h)
			for (size_t k = 0; k < t->procs[i].nclock; k++)
				v[n++] = &t->procs[i].clock[k];
	*out = v;
	return n;
}

static size_t host_syncs(const struct weft_trace *t, unsigned h, const char *ref,
			 const struct weft_clock_sync ***out)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].host_index == h)
			n += t->procs[i].nclock_sync;
	const struct weft_clock_sync **v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		weft_oom("aligning hosts");
	n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].host_index == h)
			for (size_t k = 0; k < t->procs[i].nclock_sync; k++)
				if (!strcmp(t->procs[i].clock_sync[k].ref_host, ref))
					v[n++] = &t->procs[i].clock_sync[k];
	*out = v;
	return n;
}

static uint32_t unique_id(const struct weft_ns_fix *f, uint32_t id)
{
	return id && id < (1u << HOST_SHIFT) ? id | f->id_or : id;
}

/* Rewrites one process of a non-reference host: its clock map, its BOOTTIME ns, its ids. */
static void fix_proc(struct weft_proc *p, const struct weft_host *h, int64_t off)
{
	struct weft_ns_fix *f = &p->fix;
	f->x0 = h->at_ns;
	f->off = off;
	f->drift = h->drift_ns_s / 1e9;
	f->id_or = (uint32_t)h->index << HOST_SHIFT;
	f->pid_from = (uint32_t)p->orig_pid;
	p->pid = (int)unique_id(f, (uint32_t)p->pid);
	f->pid_to = (uint32_t)p->pid;
	p->ppid = (int)unique_id(f, (uint32_t)p->ppid);
	p->fixed = 1;
	/* ticks -> ns: anchor the map at a tick whose time is known, then add the line there */
	uint64_t anchor = p->nclock ? p->clock[0].ticks : p->clock_kind == 0 ? p->start_ns : p->base_ticks;
	uint64_t ns = weft_proc_ns(p, anchor);
	p->base_ticks = anchor;
	p->base_ns = weft_ns_fix_apply(f, ns);
	if (f->drift != 0)
		p->mult = (unsigned __int128)((long double)p->mult * (1.0L + (long double)f->drift) + 0.5L);
	/* the metadata's BOOTTIME ns */
	if (p->start_ns)
		p->start_ns = weft_ns_fix_apply(f, p->start_ns);
	if (p->fin[6])
		p->fin[6] = weft_ns_fix_apply(f, p->fin[6]);
	for (size_t i = 0; i < p->nclock; i++)
		p->clock[i].boot_ns = weft_ns_fix_apply(f, p->clock[i].boot_ns);
	for (size_t i = 0; i < p->ngpu_clock; i++)
		p->gpu_clock[i].boot_ns = weft_ns_fix_apply(f, p->gpu_clock[i].boot_ns);
	/* the ids */
	p->fork_tid = unique_id(f, p->fork_tid);
	p->end_signal_tid = unique_id(f, p->end_signal_tid);
	for (uint32_t i = 0; i < p->gpu_ntids && i < WEFT_GPU_MAX_TIDS; i++)
		p->gpu_tids[i] = unique_id(f, p->gpu_tids[i]);
	for (size_t i = 0; i < WEFT_SYS_NSOURCES; i++)
		p->sys_sources[i].tid = unique_id(f, p->sys_sources[i].tid);
	for (size_t k = 0; k < p->nthreads; k++) {
		struct weft_thread_data *th = &p->threads[k];
		th->tid = unique_id(f, th->tid);
		for (size_t c = 0; c < th->nchunks; c++)
			th->chunks[c].fix = f;
	}
}

/* The name the converters show: NAME, NAME rank N, NAME (HOST), NAME rank N (HOST). */
static void rename_proc(struct weft_proc *p, int several_hosts)
{
	uint32_t rank = weft_proc_rank(p);
	if (rank == WEFT_RANK_NONE && !several_hosts)
		return;
	const char *name = p->name ? p->name : "process";
	size_t n = strlen(name) + strlen(host_of(p)) + 32;
	char *s = malloc(n);
	if (!s)
		weft_oom("naming processes");
	int k = snprintf(s, n, "%s", name);
	if (rank != WEFT_RANK_NONE)
		k += snprintf(s + k, n - (size_t)k, " rank %u", rank);
	if (several_hosts)
		snprintf(s + k, n - (size_t)k, " (%s)", host_of(p));
	free(p->name);
	p->name = s;
}

int weft_hosts_align(struct weft_trace *t)
{
	struct weft_hosts *hs = &t->hosts;
	if (!t->nprocs)
		return 0;
	/* the reference: world rank 0's host, else the host where the run began (the process
	 * whose first clock reading has the earliest wall time: not the first in file order,
	 * which is by pid, and pids of different hosts say nothing), else the first process's */
	const char *ref = host_of(&t->procs[0]);
	uint64_t first = UINT64_MAX;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].nclock && t->procs[i].clock[0].real_ns && t->procs[i].clock[0].real_ns < first) {
			first = t->procs[i].clock[0].real_ns;
			ref = host_of(&t->procs[i]);
		}
	for (size_t i = 0; i < t->nprocs; i++)
		if (weft_proc_rank(&t->procs[i]) == 0) {
			ref = host_of(&t->procs[i]);
			break;
		}
	hs->h = calloc(t->nprocs + 1, sizeof(*hs->h));
	if (!hs->h)
		weft_oom("aligning hosts");
	hs->h[0].name = strdup(ref);
	hs->n = 1;
	for (size_t i = 0; i < t->nprocs; i++) {
		struct weft_proc *p = &t->procs[i];
		p->orig_pid = p->pid;
		size_t k = 0;
		while (k < hs->n && strcmp(hs->h[k].name, host_of(p)))
			k++;
		if (k == hs->n) {
			hs->h[k].name = strdup(host_of(p));
			hs->h[k].index = (unsigned)k;
			hs->n++;
		}
		if (!hs->h[k].name)
			weft_oom("aligning hosts");
		hs->h[k].nprocs++;
		p->host_index = (unsigned)k;
	}
	int changed = 0;
	const struct weft_clock_pt **pts;
	int64_t ref_med = 0;
	size_t nref = host_points(t, 0, &pts);
	size_t ref_used = weft_hosts_real_median(pts, nref, &ref_med);
	hs->h[0].npoints = ref_used;
	free(pts);
	for (size_t k = 1; k < hs->n; k++) {
		struct weft_host *h = &hs->h[k];
		const struct weft_clock_sync **sy;
		size_t ns = host_syncs(t, (unsigned)k, ref, &sy);
		int64_t off = 0;
		uint64_t x0 = 0, rtt = 0;
		double drift = 0;
		unsigned phases = weft_hosts_sync_fix(sy, ns, &off, &x0, &drift, &rtt);
		free(sy);
		if (phases) {
			h->method = WEFT_ALIGN_MPI;
			h->phases = phases;
			h->rtt_ns = rtt;
		} else {
			size_t np = host_points(t, (unsigned)k, &pts);
			int64_t med = 0;
			h->npoints = weft_hosts_real_median(pts, np, &med);
			free(pts);
			if (h->npoints && ref_used) {
				h->method = WEFT_ALIGN_REALTIME;
				off = (int64_t)((uint64_t)med - (uint64_t)ref_med);
			} else {
				h->method = WEFT_ALIGN_NONE;
				weft_trace_warn(t, "host %s: no clock readings to align it with host %s; its times "
					    "are as recorded", h->name, ref);
			}
		}
		h->offset_ns = off;
		h->at_ns = x0;
		h->drift_ns_s = drift * 1e9;
	}
	for (size_t i = 0; i < t->nprocs; i++) {
		struct weft_proc *p = &t->procs[i];
		struct weft_host *h = &hs->h[p->host_index];
		int64_t off = h->offset_ns;
		/* a process in a time namespace of its own (a container's, or a test's) has a boot
		 * clock apart from its host's: its own REALTIME readings align it */
		int64_t own, host_med = h->method == WEFT_ALIGN_REALTIME || !p->host_index
						? (int64_t)((uint64_t)ref_med + (uint64_t)off) : 0;
		const struct weft_clock_pt **pp = malloc((p->nclock ? p->nclock : 1) * sizeof(*pp));
		if (!pp)
			weft_oom("aligning hosts");
		for (size_t k = 0; k < p->nclock; k++)
			pp[k] = &p->clock[k];
		size_t np = weft_hosts_real_median(pp, p->nclock, &own);
		free(pp);
		int apart = np && ref_used && !p->nclock_sync &&
			    (h->method == WEFT_ALIGN_REALTIME || !p->host_index) &&
			    ((__int128)own - host_med > NS_APART || (__int128)host_med - own > NS_APART);
		if (apart) {
			off = (int64_t)((uint64_t)own - (uint64_t)ref_med);
			h->apart++;
		}
		if (p->host_index || apart) {
			fix_proc(p, h, off);
			changed = 1;
		}
	}
	for (size_t i = 0; i < t->nprocs; i++)
		rename_proc(&t->procs[i], hs->n > 1);
	return changed;
}

void weft_hosts_free(struct weft_hosts *h)
{
	for (size_t i = 0; i < h->n; i++)
		free(h->h[i].name);
	free(h->h);
	h->h = NULL;
	h->n = 0;
}
