/*
 * pftrace-system.c - the system sampler's part of a .pftrace (analysis/system.h has the
 * figures), in the layouts trace_processor v55 imports (shared/perfetto/layouts/syscounters):
 *   process counter tracks (TrackEvent counters under the process track): "cpu.user %" and
 *     "cpu.sys %" (CPU time used per wall time between two readings, in percent of one CPU,
 *     the value at the first of them), "mem.rss" (bytes);
 *   CPU frequency as ftrace cpu_frequency events (state = kHz), one FtraceEventBundle per CPU
 *     and batch, which trace_processor puts on its cpu_counter_track "cpufreq";
 *   global counter tracks (no parent): "cpuN idle %" (a CPU's idle us in a sampling period over
 *     the period, at the period's start, standing until the next change, at most 100; Perfetto's
 *     cpu_counter_track takes only ftrace cpu_idle state changes, which sysfs cannot give),
 *     "RAPL NAME power" in W (the energy between two readings
 *     over the time between them, a wrap at max_energy_range_uj counted once);
 *   per NVIDIA GPU a track "GPU N: NAME" (NVML's name; uuid weft_pf_gpu_uuid, the one the CUPTI
 *     streams go under; child_ordering EXPLICIT) with counter tracks as its children, ranked
 *     after the streams (1000 on): "GPU N power" in W (the energy between two readings over the
 *     time between them where the GPU reports its energy, else NVML's power readings), "GPU N
 *     SM clock" in MHz, "GPU N utilization" and "GPU N memory utilization" in %, "GPU N energy"
 *     in J (since the first reading);
 *   a slice's CPU time and RSS as args on its end: cpu.user_ns, cpu.sys_ns, mem.rss_bytes
 *     (the highest RSS during it), mem.rss_delta_bytes (end minus begin).
 * Several processes may carry readings of one global quantity (another took over when the first
 * ended): their tracks have the same uuid, so they are one track.
 */
#include "export/pftrace-system.h"
#include "export/pftrace-counter.h"
#include "export/pftrace-gpu-uuid.h"
#include "format/format.h"
#include <stdio.h>
#include <string.h>

enum {
	TRACE_PACKET = 1, TP_FTRACE_EVENTS = 1, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11,
	TP_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1, TD_NAME = 2, TD_PARENT = 5, TD_COUNTER = 8, TD_CHILD_ORDERING = 11, TD_SIBLING_RANK = 12,
	CD_UNIT = 3, CD_UNIT_NAME = 6, CD_Y_SHARE = 7, ORDERING_EXPLICIT = 3,
	TE_TYPE = 9, TE_TRACK_UUID = 11, TE_COUNTER = 30, TE_DCOUNTER = 44, TE_DEBUG = 4,
	DA_NAME = 10, DA_UINT = 3, DA_INT = 4,
	FB_CPU = 1, FB_EVENT = 2, FE_TIMESTAMP = 1, FE_PID = 2, FE_CPU_FREQUENCY = 11, CF_STATE = 1, CF_CPU_ID = 2,
	TYPE_COUNTER = 4, UNIT_BYTES = 3,
};

enum { K_USER, K_SYS, K_RSS, K_RAPL, K_GPU_POWER, K_GPU_ENERGY, K_IDLE }; /* K_GPU_*: unused since the GPU tracks */

/* A GPU's counter tracks, children of its track, in this order after the CUPTI streams. */
enum { G_POWER, G_CLOCK, G_UTIL, G_MEM_UTIL, G_ENERGY, G_N };
#define GPU_RANK 1000 /* sibling_order_rank of G_POWER; the streams rank below */
static const struct { const char *name, *unit, *share; } gpu_ctr[G_N] = {
	{"power", "W", "power"}, {"SM clock", "MHz", NULL}, {"utilization", "%", "gpu-util"},
	{"memory utilization", "%", "gpu-util"}, {"energy", "J", NULL},
};

static int gpu_slot(unsigned kind)
{
	switch (kind) {
	case WEFT_SYSK_GPU_POWER_MW: return G_POWER;
	case WEFT_SYSK_GPU_SM_CLOCK_MHZ: return G_CLOCK;
	case WEFT_SYSK_GPU_UTIL_PCT: return G_UTIL;
	case WEFT_SYSK_GPU_MEM_UTIL_PCT: return G_MEM_UTIL;
	case WEFT_SYSK_GPU_ENERGY_MJ: return G_ENERGY;
	default: return -1;
	}
}

static uint64_t gpu_child(uint64_t (*mix)(uint64_t, uint64_t), unsigned index, int g)
{
	return mix(weft_pf_gpu_uuid(mix, index), 1 + (uint64_t)g);
}

/* The process's energy series of GPU index with two readings or more (its power comes from
 * them), or NULL. */
static const struct weft_sys_series *gpu_energy(const struct weft_sys_proc *sp, unsigned index)
{
	for (size_t c = 0; c < sp->nseries; c++)
		if (sp->series[c].def->kind == WEFT_SYSK_GPU_ENERGY_MJ && sp->series[c].def->index == index &&
		    sp->series[c].n >= 2)
			return &sp->series[c];
	return NULL;
}

/* The GPU tracks (G_*) a series feeds: up to 2 in g; how many. */
static int gpu_tracks(const struct weft_sys_proc *sp, const struct weft_sys_series *se, int g[2])
{
	int k = gpu_slot(se->def->kind);
	if (k < 0 || !se->n)
		return 0;
	if (k == G_POWER)
		return gpu_energy(sp, se->def->index) ? 0 : (g[0] = G_POWER, 1);
	g[0] = k;
	if (k == G_ENERGY && se->n >= 2)
		return g[1] = G_POWER, 2;
	return 1;
}

/* NVML's name of the GPU of an NVML channel (its name is "GPU N NAME"), "" when it has none. */
static const char *gpu_name(const struct weft_sys_chan_def *d)
{
	const char *s = d->name ? d->name : "";
	if (strncmp(s, "GPU ", 4))
		return "";
	s += 4;
	while (*s >= '0' && *s <= '9')
		s++;
	return *s == ' ' ? s + 1 : "";
}

int weft_pf_sys_gpu(const struct weft_sys *s, unsigned index, const char **name)
{
	for (size_t i = 0; s && i < s->nprocs; i++)
		for (size_t c = 0; c < s->procs[i].nseries; c++) {
			const struct weft_sys_series *se = &s->procs[i].series[c];
			int g[2];
			if (se->def->index == index && gpu_tracks(&s->procs[i], se, g)) {
				if (name)
					*name = gpu_name(se->def);
				return 1;
			}
		}
	return 0;
}

void weft_pf_gpu_track(struct pb *b, uint64_t (*mix)(uint64_t, uint64_t), unsigned index, const char *name)
{
	char n[160];
	if (name && *name)
		snprintf(n, sizeof(n), "GPU %u: %s", index, name);
	else
		snprintf(n, sizeof(n), "GPU %u", index);
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, 1);
	size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
	pb_varint(b, TD_UUID, weft_pf_gpu_uuid(mix, index));
	pb_string(b, TD_NAME, n);
	pb_varint(b, TD_CHILD_ORDERING, ORDERING_EXPLICIT);
	pb_end(b, td);
	pb_end(b, pk);
}

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static uint64_t proc_track(uint64_t (*mix)(uint64_t, uint64_t), int pid, unsigned k)
{
	return mix(mix(9, (uint64_t)(uint32_t)pid), k);
}

/* A global track's uuid, 0 for a channel with none. */
static uint64_t global_track(uint64_t (*mix)(uint64_t, uint64_t), const struct weft_sys_chan_def *d)
{
	switch (d->kind) {
	case WEFT_SYSK_RAPL_UJ: return mix(mix(10, K_RAPL), name_hash(d->name));
	case WEFT_SYSK_CPUIDLE_US: return mix(mix(10, K_IDLE), d->index);
	default: return gpu_slot(d->kind) >= 0 ? gpu_child(mix, d->index, gpu_slot(d->kind)) : 0;
	}
}

/* A counter track; rank: its sibling_order_rank under a parent with EXPLICIT ordering, 0 none. */
static void track(struct pb *b, uint64_t uuid, uint64_t parent, const char *name, unsigned unit,
		  const char *unit_name, const char *share, int rank)
{
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, 1);
	size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
	pb_varint(b, TD_UUID, uuid);
	if (parent)
		pb_varint(b, TD_PARENT, parent);
	pb_string(b, TD_NAME, name);
	if (rank)
		pb_varint(b, TD_SIBLING_RANK, (uint64_t)rank);
	size_t cd = pb_begin(b, TD_COUNTER);
	if (unit)
		pb_varint(b, CD_UNIT, unit);
	if (unit_name)
		pb_string(b, CD_UNIT_NAME, unit_name);
	if (share)
		pb_string(b, CD_Y_SHARE, share);
	pb_end(b, cd);
	pb_end(b, td);
	pb_end(b, pk);
}

#define MAX_DESCRIBED 256 /* global tracks remembered as described (more: described again, harmless) */

/* 1 when uuid u was described already; else records it (when there is room). */
static int seen(uint64_t *done, size_t *ndone, uint64_t u)
{
	for (size_t k = 0; k < *ndone; k++)
		if (done[k] == u)
			return 1;
	if (*ndone < MAX_DESCRIBED)
		done[(*ndone)++] = u;
	return 0;
}

void weft_pf_sys_tracks(struct pb *b, const struct weft_sys *s, uint64_t (*mix)(uint64_t, uint64_t),
			uint64_t (*proc_uuid)(int pid))
{
	uint64_t done[MAX_DESCRIBED];
	size_t ndone = 0;
	for (size_t i = 0; s && i < s->nprocs; i++) {
		const struct weft_sys_proc *sp = &s->procs[i];
		int pid = sp->p->pid;
		if (sp->user && sp->user->n > 1)
			track(b, proc_track(mix, pid, K_USER), proc_uuid(pid), "cpu.user %", 0, "%", "cpu", 0);
		if (sp->sys && sp->sys->n > 1)
			track(b, proc_track(mix, pid, K_SYS), proc_uuid(pid), "cpu.sys %", 0, "%", "cpu", 0);
		if (sp->rss && sp->rss->n)
			track(b, proc_track(mix, pid, K_RSS), proc_uuid(pid), "mem.rss", UNIT_BYTES, NULL, NULL, 0);
		for (size_t c = 0; c < sp->nseries; c++) {
			const struct weft_sys_series *se = &sp->series[c];
			int g[2], ng = gpu_tracks(sp, se, g);
			if (ng) { /* the GPU's track once, then its counter tracks under it */
				unsigned gi = se->def->index;
				if (!seen(done, &ndone, weft_pf_gpu_uuid(mix, gi)))
					weft_pf_gpu_track(b, mix, gi, gpu_name(se->def));
				for (int k = 0; k < ng; k++) {
					uint64_t u = gpu_child(mix, gi, g[k]);
					if (seen(done, &ndone, u))
						continue;
					char name[200];
					snprintf(name, sizeof(name), "GPU %u %s", gi, gpu_ctr[g[k]].name);
					track(b, u, weft_pf_gpu_uuid(mix, gi), name, 0, gpu_ctr[g[k]].unit, gpu_ctr[g[k]].share,
					      GPU_RANK + g[k]);
				}
				continue;
			}
			uint64_t u = global_track(mix, se->def);
			if (!u || gpu_slot(se->def->kind) >= 0 || !se->n || (se->def->kind == WEFT_SYSK_RAPL_UJ && se->n < 2))
				continue;
			if (seen(done, &ndone, u))
				continue;
			char name[200];
			if (se->def->kind == WEFT_SYSK_RAPL_UJ) {
				snprintf(name, sizeof(name), "RAPL %s power", se->def->name);
				track(b, u, 0, name, 0, "W", "power", 0);
			} else {
				snprintf(name, sizeof(name), "cpu%u idle %%", se->def->index);
				track(b, u, 0, name, 0, "%", "cpuidle", 0);
			}
		}
	}
}

/* A CPU's idle us in one sampling period as percent of it, at most 100 (the kernel adds an idle
 * stretch when it ends, so a long one lands whole in one period). */
static double idle_pct(uint64_t us, uint64_t period_ns)
{
	double pct = (double)us * 1e5 / (double)period_ns;
	return pct < 100 ? pct : 100;
}

/* A CPU's frequency readings as ftrace cpu_frequency events, in bundles of up to 1024. */
static void cpufreq(struct pb *b, uint32_t seq, const struct weft_sys_series *se, void (*drain)(void *ctx),
		    void *ctx)
{
	for (size_t i = 0; i < se->n; i += 1024) {
		size_t pk = pb_begin(b, TRACE_PACKET);
		pb_varint(b, TP_SEQ_ID, seq);
		size_t fb = pb_begin(b, TP_FTRACE_EVENTS);
		pb_varint(b, FB_CPU, se->def->index);
		for (size_t k = i; k < se->n && k < i + 1024; k++) {
			size_t ev = pb_begin(b, FB_EVENT);
			pb_varint(b, FE_TIMESTAMP, se->pt[k].ts);
			pb_varint(b, FE_PID, 0);
			size_t cf = pb_begin(b, FE_CPU_FREQUENCY);
			pb_varint(b, CF_STATE, se->pt[k].v);
			pb_varint(b, CF_CPU_ID, se->def->index);
			pb_end(b, cf);
			pb_end(b, ev);
		}
		pb_end(b, fb);
		pb_end(b, pk);
		drain(ctx);
	}
}

void weft_pf_sys_counters(struct pb *b, const struct weft_sys_proc *sp, uint32_t seq,
			  uint64_t (*mix)(uint64_t, uint64_t), void (*drain)(void *ctx), void *ctx)
{
	int pid = sp->p->pid;
	uint64_t idle_period = sp->p->sys_sources[WEFT_SYS_CPUIDLE].period_ns;
	for (size_t c = 0; c < sp->nseries; c++) {
		const struct weft_sys_series *se = &sp->series[c];
		const struct weft_sys_chan_def *d = se->def;
		uint64_t u = global_track(mix, d);
		/* a GPU's power comes from its energy where it has two readings or more */
		int mw_power = d->kind == WEFT_SYSK_GPU_POWER_MW && !gpu_energy(sp, d->index);
		for (size_t i = 0; i < se->n; i++) {
			uint64_t ts = se->pt[i].ts;
			switch (d->kind) {
			case WEFT_SYSK_CPU_USER_NS:
			case WEFT_SYSK_CPU_SYS_NS:
				if (i + 1 < se->n && (se == sp->user || se == sp->sys))
					weft_pf_counter_point_d(b, seq, ts, proc_track(mix, pid, se == sp->user ? K_USER : K_SYS),
					      weft_sys_rate(se, i, 0) / 1e7); /* ns per s -> percent */
				break;
			case WEFT_SYSK_RSS_BYTES:
				if (se == sp->rss)
					weft_pf_counter_point(b, seq, ts, proc_track(mix, pid, K_RSS), se->pt[i].v);
				break;
			case WEFT_SYSK_RAPL_UJ:
				if (i + 1 < se->n)
					weft_pf_counter_point_d(b, seq, ts, u, weft_sys_rate(se, i, d->aux) / 1e6); /* uJ per s -> W */
				break;
			case WEFT_SYSK_GPU_POWER_MW:
				if (mw_power)
					weft_pf_counter_point_d(b, seq, ts, u, (double)se->pt[i].v / 1e3);
				break;
			case WEFT_SYSK_GPU_ENERGY_MJ:
				weft_pf_counter_point_d(b, seq, ts, u, (double)(se->pt[i].v - se->pt[0].v) / 1e3);
				if (i + 1 < se->n) /* mJ per s -> W, at the first of the two readings */
					weft_pf_counter_point_d(b, seq, ts, gpu_child(mix, d->index, G_POWER),
								weft_sys_rate(se, i, 0) / 1e3);
				break;
			case WEFT_SYSK_GPU_SM_CLOCK_MHZ:
			case WEFT_SYSK_GPU_UTIL_PCT:
			case WEFT_SYSK_GPU_MEM_UTIL_PCT:
				weft_pf_counter_point(b, seq, ts, u, se->pt[i].v);
				break;
			case WEFT_SYSK_CPUIDLE_US:
				if (idle_period) /* at the period's start: the step covers the periods it stands for */
					weft_pf_counter_point_d(b, seq, ts > idle_period ? ts - idle_period : ts, u,
								idle_pct(se->pt[i].v, idle_period));
				break;
			default:
				break;
			}
			if (!(i & 255))
				drain(ctx);
		}
		if (d->kind == WEFT_SYSK_CPUFREQ_KHZ)
			cpufreq(b, seq, se, drain, ctx);
	}
	drain(ctx);
}

static void annotation(struct pb *b, const char *name, int is_signed, uint64_t v)
{
	size_t m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, name);
	pb_varint(b, is_signed ? DA_INT : DA_UINT, v);
	pb_end(b, m);
}

void weft_pf_exact_slice_args(struct pb *b, uint64_t user_ns, uint64_t sys_ns, uint64_t rss_bytes)
{
	annotation(b, "cpu.user_ns", 0, user_ns);
	annotation(b, "cpu.sys_ns", 0, sys_ns);
	if (rss_bytes)
		annotation(b, "mem.rss_bytes", 0, rss_bytes);
}

void weft_pf_sys_slice_args(struct pb *b, const struct weft_sys_proc *sp, uint64_t begin, uint64_t end)
{
	struct weft_sys_slice s;
	if (!weft_sys_slice(sp, begin, end, &s))
		return;
	annotation(b, "cpu.user_ns", 0, s.user_ns);
	if (sp->sys)
		annotation(b, "cpu.sys_ns", 0, s.sys_ns);
	if (sp->rss && sp->rss->n) {
		annotation(b, "mem.rss_bytes", 0, s.rss_bytes);
		annotation(b, "mem.rss_delta_bytes", 1, (uint64_t)s.rss_delta);
	}
}
