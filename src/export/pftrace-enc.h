/*
 * pftrace-enc.h - what the .pftrace writer's files share (pftrace.c: sequences, threads, the
 * header and the output's order; pftrace-event.c: one TrackEvent packet per event): the
 * Perfetto field numbers, the track uuids (stable hashes, so the same trace gives the same
 * uuids), and a thread's sequence encoder.
 */
#ifndef WEFT_PFTRACE_ENC_H
#define WEFT_PFTRACE_ENC_H

#include "export/export.h"
#include "export/pb.h"
#include "export/pftrace-out.h"
#include "analysis/memory.h"
#include "analysis/system.h"
#include <stdint.h>

struct weft_pf_sched;

enum {
	TRACE_PACKET = 1,
	TP_CLOCK_SNAPSHOT = 6, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11,
	TP_INTERNED = 12, TP_SEQ_FLAGS = 13, TP_TRACK_DESCRIPTOR = 60, TP_FIRST_ON_SEQ = 87,
	TP_COMPRESSED_PACKETS = 50, TP_MACHINE_ID = 98,
	TD_UUID = 1, TD_NAME = 2, TD_PROCESS = 3, TD_THREAD = 4, TD_PARENT = 5, TD_COUNTER = 8,
	TD_SIBLING_MERGE = 15, TD_SIBLING_ORDER_RANK = 12, TD_PROCESS_ORDERING = 19, TP_DEFAULTS = 59, TPD_TRACK_EVENT = 11, TED_TRACK_UUID = 11,
	PD_PID = 1, PD_CMDLINE = 2, PD_NAME = 6, PD_LABELS = 8,
	THD_PID = 1, THD_TID = 2, THD_NAME = 5,
	CD_TYPE = 1, CD_UNIT = 3, CD_UNIT_NAME = 6, TED_EXTRA_CTR_UUIDS = 31, TE_EXTRA_CTR_VALUES = 12,
	TE_CATEGORY_IIDS = 3, TE_DEBUG = 4, TE_TYPE = 9, TE_NAME_IID = 10, TE_TRACK_UUID = 11,
	TE_NAME = 23, TE_COUNTER = 30, TE_DCOUNTER = 44, TE_FLOW_IDS = 47, TE_TERM_FLOW_IDS = 48,
	ID_CATEGORIES = 1, ID_EVENT_NAMES = 2, ID_DEBUG_NAMES = 3,
	DA_NAME_IID = 1, DA_BOOL = 2, DA_UINT = 3, DA_INT = 4, DA_DOUBLE = 5, DA_STRING = 6,
	DA_POINTER = 7, DA_NAME = 10,
	TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4,
	SEQ_CLEARED = 1, SEQ_NEEDS = 2,
	/* timestamps: TracePacket.timestamp_clock_id and TracePacketDefaults.timestamp_clock_id;
	 * BOOTTIME (the trace's clock) and a thread sequence's own incremental clock (64..127:
	 * sequence-scoped) */
	TP_CLOCK_ID = 58, TPD_CLOCK_ID = 58, PF_CLOCK_BOOT = 6, PF_CLOCK_SEQ = 64,
	CS_CLOCKS = 1, CSC_ID = 1, CSC_TS = 2, CSC_INCREMENTAL = 3,
};

static inline uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t z = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31)) | 1;
}
static inline uint64_t proc_uuid(int pid) { return mix(1, (uint64_t)(uint32_t)pid); }
/* a reused tid (another serial) is another thread: its own track */
static inline uint64_t thread_uuid(int pid, uint32_t tid, uint32_t serial)
{
	uint64_t u = mix(2, ((uint64_t)(uint32_t)pid << 32) | tid);
	return serial ? mix(u, serial) : u;
}
static inline uint64_t track_uuid(int pid, unsigned tr) { return mix(3, ((uint64_t)(uint32_t)pid << 32) | tr); }
static inline uint64_t lane_uuid(int pid, unsigned tr, uint32_t tid) { return mix(mix(4, ((uint64_t)(uint32_t)pid << 32) | tr), tid); }
static inline uint64_t counter_uuid(int pid, uint32_t id) { return mix(5, ((uint64_t)(uint32_t)pid << 32) | id); }
static inline uint64_t async_uuid(int pid, uint32_t id, uint64_t aid) { return mix(mix(6, ((uint64_t)(uint32_t)pid << 32) | id), aid); }
/* counters= (format 1.5): the k-th per-slice counter of a thread, a track under the thread's */
static inline uint64_t slice_ctr_uuid(uint64_t thread, unsigned k) { return mix(mix(9, thread), k); }

/* Per-process category interning: site id -> category iid (0 = none). */
struct proc_cats {
	uint32_t *iid;
	char **names; /* by iid */
	size_t n;
};

struct seq_enc {
	struct pb out;
	struct weft_pf_out *file;
	struct weft_pf_seqout so;      /* its place in the output and batches in flight */
	uint64_t reported;                /* st.events added to weft_export_progress */
	uint64_t *buf; /* decoded chunk, reused */
	size_t cap;
	const struct weft_proc *p;
	const struct weft_proc *last;     /* the last image of its pid (exec), maybe p */
	const struct weft_thread_data *th;
	const struct proc_cats *cats;
	uint32_t seq;
	uint64_t tuuid;
	uint64_t clk;                     /* the sequence's incremental clock: the last time written */
	uint8_t *named, *keyed, *catted; /* interned on this sequence, by id */
	uint64_t *lanes_seen;            /* lane/async uuids already described here */
	size_t nlanes, lanes_cap;
	struct weft_walk_stats st;
	const struct weft_mem_proc *mem;  /* the process's memory analysis, or NULL */
	uint64_t big_alloc;               /* allocations at least this big are instants too */
	uint32_t machine;                 /* --machines: its host's index (0: the reference, none) */
	const struct weft_trace *t;
	int described;                    /* the thread's descriptor is out */
	struct weft_pf_sched *sched;      /* SCHED records of this stream (a sched reader's) */
	const struct weft_sys_proc *sys;  /* the process's sampler readings, when slices get CPU/RSS args */
	/* slices open on this thread: their begin times, and (cpu_mem_exact=) readings */
	struct { uint64_t serial, ts; int has_cm; uint64_t user, sys; } *open;
	size_t nopen, opencap;
	uint64_t end_begin;               /* the slice being ended began then (end_known) */
	int end_known;
	int end_exact;                    /* ... and has exact readings at both ends: */
	uint64_t exact_user, exact_sys, exact_rss; /* its deltas and the RSS at its end */
};

static inline uint8_t *pfe_varint(uint8_t *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

/* A packet's time on a thread's sequence (at most 13 bytes at o): the delta from the last
 * one, on the sequence's incremental clock (the default, pftrace.c: thread_descriptor); a
 * time before the last (a complete event's end, followed by events inside it) is written
 * whole, on BOOTTIME, which leaves the incremental clock where it was. */
static inline uint8_t *pfe_ts(struct seq_enc *e, uint8_t *o, uint64_t ts)
{
	*o++ = TP_TIMESTAMP << 3;
	if (ts >= e->clk) {
		o = pfe_varint(o, ts - e->clk);
		e->clk = ts;
		return o;
	}
	o = pfe_varint(o, ts);
	*o++ = (uint8_t)(((TP_CLOCK_ID << 3) & 0x7f) | 0x80);
	*o++ = TP_CLOCK_ID >> 4;
	*o++ = PF_CLOCK_BOOT;
	return o;
}

static inline void pfe_ts_pb(struct seq_enc *e, struct pb *b, uint64_t ts)
{
	pb_reserve(b, 16);
	b->n = (size_t)(pfe_ts(e, b->p + b->n, ts) - b->p);
}

/* The common event's packet - a begin, end or instant on the thread's own track, its name
 * (id) and category (ci, 0: none) interned, nothing attached - written straight: 11-14 bytes
 * for a function's (the time a delta, pfe_ts). Without SEQ_NEEDS_INCREMENTAL_STATE (2 bytes of
 * them), which only asks a reader to skip the packet once the sequence's state is lost: a file
 * written whole, each sequence starting with its state cleared, never loses it. */
static inline void pfe_plain_packet(struct seq_enc *e, uint64_t ts, unsigned type, uint32_t id, uint32_t ci)
{
	struct pb *b = &e->out;
	pb_reserve(b, 64); /* at most 2 + 13 + 6 + 2 + 2 + 6 + 6 */
	uint8_t *o = b->p + b->n, *len = o + 1, *te;
	o[0] = (TRACE_PACKET << 3) | 2;
	o += 2;
	o = pfe_ts(e, o, ts);
	*o++ = TP_SEQ_ID << 3;
	o = pfe_varint(o, e->seq);
	*o++ = (TP_TRACK_EVENT << 3) | 2;
	te = o++;
	*o++ = TE_TYPE << 3;
	*o++ = (uint8_t)type;
	if (type != TYPE_END) {
		*o++ = TE_NAME_IID << 3;
		o = pfe_varint(o, id);
		if (ci) {
			*o++ = TE_CATEGORY_IIDS << 3;
			o = pfe_varint(o, ci);
		}
	}
	*te = (uint8_t)(o - te - 1);
	*len = (uint8_t)(o - len - 1);
	b->n = (size_t)(o - b->p);
}

/* The track of an event (a lane or async track described on first use), its TrackEvent packet,
 * the `received` instant ending arrows on an END, and the instant of a large allocation. */
uint64_t weft_pfe_track_for(struct seq_enc *e, const struct weft_ev *ev);
void weft_pfe_packet(struct seq_enc *e, const struct weft_ev *ev, uint64_t ts, unsigned type, uint64_t track);
void weft_pfe_received(struct seq_enc *e, const struct weft_ev *ev, uint64_t track);
void weft_pfe_big_alloc(struct seq_enc *e, const struct weft_ev *ev);
/* A TrackDescriptor packet on sequence seq (no_merge: a lane kept apart from its siblings). */
void weft_pfe_describe(struct pb *b, uint32_t seq, uint64_t uuid, uint64_t parent, const char *name,
		       int no_merge);
/* A counter track's TrackDescriptor packet on sequence seq, with its unit (ns, count, bytes,
 * another name, or NULL: none). */
void weft_pfe_describe_counter(struct pb *b, uint32_t seq, uint64_t uuid, uint64_t parent, const char *name,
			       const char *unit);
/* counters=: the thread's counter tracks, under its own. */
void weft_pfe_describe_slice_counters(struct seq_enc *e);

#endif
