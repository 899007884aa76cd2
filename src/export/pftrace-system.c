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
 *     over the time between them, a wrap at max_energy_range_uj counted once), "GPU N power"
 *     in W (NVML's reading) and "GPU N energy" in J (since the first reading);
 *   a slice's CPU time and RSS as args on its end: cpu.user_ns, cpu.sys_ns, mem.rss_bytes
 *     (the highest RSS during it), mem.rss_delta_bytes (end minus begin).
 * Several processes may carry readings of one global quantity (another took over when the first
 * ended): their tracks have the same uuid, so they are one track.
 */
#include "export/pftrace-system.h"
#include "export/pftrace-counter.h"
#include "format/format.h"
#include <stdio.h>
#include <string.h>

enum {
	TRACE_PACKET = 1, TP_FTRACE_EVENTS = 1, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11,
	TP_TRACK_DESCRIPTOR = 60,
	TD_UUID = 1, TD_NAME = 2, TD_PARENT = 5, TD_COUNTER = 8, CD_UNIT = 3, CD_UNIT_NAME = 6, CD_Y_SHARE = 7,
	TE_TYPE = 9, TE_TRACK_UUID = 11, TE_COUNTER = 30, TE_DCOUNTER = 44, TE_DEBUG = 4,
	DA_NAME = 10, DA_UINT = 3, DA_INT = 4,
	FB_CPU = 1, FB_EVENT = 2, FE_TIMESTAMP = 1, FE_PID = 2, FE_CPU_FREQUENCY = 11, CF_STATE = 1, CF_CPU_ID = 2,
	TYPE_COUNTER = 4, UNIT_BYTES = 3,
};

enum { K_USER, K_SYS, K_RSS, K_RAPL, K_GPU_POWER, K_GPU_ENERGY, K_IDLE };

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
	case WEFT_SYSK_GPU_POWER_MW: return mix(mix(10, K_GPU_POWER), d->index);
	case WEFT_SYSK_GPU_ENERGY_MJ: return mix(mix(10, K_GPU_ENERGY), d->index);
	case WEFT_SYSK_CPUIDLE_US: return mix(mix(10, K_IDLE), d->index);
	default: return 0;
	}
}

static void track(struct pb *b, uint64_t uuid, uint64_t parent, const char *name, unsigned unit,
		  const char *unit_name, const char *share)
{
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, 1);
	size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
	pb_varint(b, TD_UUID, uuid);
	if (parent)
		pb_varint(b, TD_PARENT, parent);
	pb_string(b, TD_NAME, name);
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

void weft_pf_sys_tracks(struct pb *b, const struct weft_sys *s, uint64_t (*mix)(uint64_t, uint64_t),
			uint64_t (*proc_uuid)(int pid))
{
	uint64_t done[256];
	size_t ndone = 0;
	for (size_t i = 0; s && i < s->nprocs; i++) {
		const struct weft_sys_proc *sp = &s->procs[i];
		int pid = sp->p->pid;
		if (sp->user && sp->user->n > 1)
			track(b, proc_track(mix, pid, K_USER), proc_uuid(pid), "cpu.user %", 0, "%", "cpu");
		if (sp->sys && sp->sys->n > 1)
			track(b, proc_track(mix, pid, K_SYS), proc_uuid(pid), "cpu.sys %", 0, "%", "cpu");
		if (sp->rss && sp->rss->n)
			track(b, proc_track(mix, pid, K_RSS), proc_uuid(pid), "mem.rss", UNIT_BYTES, NULL, NULL);
		for (size_t c = 0; c < sp->nseries; c++) {
			const struct weft_sys_series *se = &sp->series[c];
			uint64_t u = global_track(mix, se->def);
			if (!u || !se->n || (se->def->kind == WEFT_SYSK_RAPL_UJ && se->n < 2))
				continue;
			int dup = 0;
			for (size_t k = 0; k < ndone && !dup; k++)
				dup = done[k] == u;
			if (dup)
				continue;
			if (ndone < sizeof(done) / sizeof(done[0]))
				done[ndone++] = u;
			char name[200];
			if (se->def->kind == WEFT_SYSK_RAPL_UJ) {
				snprintf(name, sizeof(name), "RAPL %s power", se->def->name);
				track(b, u, 0, name, 0, "W", "power");
			} else if (se->def->kind == WEFT_SYSK_CPUIDLE_US) {
				snprintf(name, sizeof(name), "cpu%u idle %%", se->def->index);
				track(b, u, 0, name, 0, "%", "cpuidle");
			} else if (se->def->kind == WEFT_SYSK_GPU_POWER_MW) {
				snprintf(name, sizeof(name), "GPU %u power", se->def->index);
				track(b, u, 0, name, 0, "W", "power");
			} else {
				snprintf(name, sizeof(name), "GPU %u energy", se->def->index);
				track(b, u, 0, name, 0, "J", NULL);
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
				weft_pf_counter_point_d(b, seq, ts, u, (double)se->pt[i].v / 1e3);
				break;
			case WEFT_SYSK_GPU_ENERGY_MJ:
				weft_pf_counter_point_d(b, seq, ts, u, (double)(se->pt[i].v - se->pt[0].v) / 1e3);
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
