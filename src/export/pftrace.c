/*
 * pftrace.c - trace -> Perfetto protobuf (.pftrace). Layout of the output:
 *   sequence 1: a ClockSnapshot (BOOTTIME primary, REALTIME for wall time), then a
 *               TrackDescriptor per process, named track and counter track;
 *   one sequence per thread: its thread TrackDescriptor first (SEQ_INCREMENTAL_STATE_CLEARED,
 *               and TracePacketDefaults making the thread's track the default for its events),
 *               then its events with names, categories and argument keys interned per
 *               sequence (iid = the process's site id), lane and async track descriptors
 *               emitted just before their first use.
 * Named tracks: track -> one lane per (track, thread) under it, each lane named after its
 * thread. Async slices: one track per (name, id) under the process. Flows: flow_ids and
 * terminating_flow_ids, one tag per element (Perfetto ignores the packed form). Threads are
 * encoded in parallel, each streaming whole packets to the file in ~1 MiB batches, in the order
 * of the sequences whatever the timing (the same trace always gives the same bytes).
 */
#include "export/export.h"
#include "export/pb.h"
#include "export/pftrace-memory.h"
#include "export/pftrace-sched.h"
#include "export/pftrace-system.h"
#include "export/pftrace-gpu.h"
#include "export/pftrace-snapshot.h"
#include "export/pftrace-out.h"
#include "format/format.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
};

static uint64_t mix(uint64_t a, uint64_t b)
{
	uint64_t z = a * 0x9e3779b97f4a7c15ull ^ (b + 0x632be59bd9b4e019ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (z ^ (z >> 31)) | 1;
}
static uint64_t proc_uuid(int pid) { return mix(1, (uint64_t)(uint32_t)pid); }
/* a reused tid (another serial) is another thread: its own track */
static uint64_t thread_uuid(int pid, uint32_t tid, uint32_t serial)
{
	uint64_t u = mix(2, ((uint64_t)(uint32_t)pid << 32) | tid);
	return serial ? mix(u, serial) : u;
}
static uint64_t track_uuid(int pid, unsigned tr) { return mix(3, ((uint64_t)(uint32_t)pid << 32) | tr); }
static uint64_t lane_uuid(int pid, unsigned tr, uint32_t tid) { return mix(mix(4, ((uint64_t)(uint32_t)pid << 32) | tr), tid); }
static uint64_t counter_uuid(int pid, uint32_t id) { return mix(5, ((uint64_t)(uint32_t)pid << 32) | id); }
static uint64_t async_uuid(int pid, uint32_t id, uint64_t aid) { return mix(mix(6, ((uint64_t)(uint32_t)pid << 32) | id), aid); }
/* counters= (format 1.5): the k-th per-slice counter of a thread, a track under the thread's */
static uint64_t slice_ctr_uuid(uint64_t thread, unsigned k) { return mix(mix(9, thread), k); }

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
	const struct weft_thread_data *th;
	const struct proc_cats *cats;
	uint32_t seq;
	uint64_t tuuid;
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

static int seen(struct seq_enc *e, uint64_t uuid)
{
	for (size_t i = 0; i < e->nlanes; i++) /* few per thread; linear is fine */
		if (e->lanes_seen[i] == uuid)
			return 1;
	if (e->nlanes == e->lanes_cap) {
		e->lanes_cap = e->lanes_cap ? e->lanes_cap * 2 : 16;
		e->lanes_seen = realloc(e->lanes_seen, e->lanes_cap * sizeof(uint64_t));
		if (!e->lanes_seen)
			weft_oom("writing the .pftrace");
	}
	e->lanes_seen[e->nlanes++] = uuid;
	return 0;
}

static void describe(struct pb *b, uint32_t seq, uint64_t uuid, uint64_t parent, const char *name,
		     int no_merge)
{
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, seq);
	size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
	pb_varint(b, TD_UUID, uuid);
	if (parent)
		pb_varint(b, TD_PARENT, parent);
	pb_string(b, TD_NAME, name);
	if (no_merge)
		pb_varint(b, TD_SIBLING_MERGE, 2);
	pb_end(b, td);
	pb_end(b, pk);
}

static const char *name_or(const struct weft_proc *p, uint32_t id, char *buf, size_t n)
{
	const char *s = weft_site_name(p, id);
	if (s)
		return s;
	snprintf(buf, n, id ? "site#%u" : "(flow)", id);
	return buf;
}

static uint64_t track_for(struct seq_enc *e, const struct weft_ev *ev)
{
	const struct weft_proc *p = e->p;
	char buf[300];
	switch (ev->kind) {
	case WEFT_EV_COUNTER:
		return counter_uuid(p->pid, ev->id);
	case WEFT_EV_ASYNC_BEGIN: case WEFT_EV_ASYNC_END: case WEFT_EV_ASYNC_INSTANT: {
		uint64_t u = async_uuid(p->pid, ev->id, ev->value);
		if (!seen(e, u))
			describe(&e->out, e->seq, u, proc_uuid(p->pid), name_or(p, ev->id, buf, sizeof(buf)), 0);
		return u;
	}
	default:
		break;
	}
	if (!ev->track)
		return e->tuuid;
	uint64_t u = lane_uuid(p->pid, ev->track, e->th->tid);
	if (!seen(e, u)) {
		snprintf(buf, sizeof(buf), "%s (%u)", e->th->name, e->th->tid);
		describe(&e->out, e->seq, u, track_uuid(p->pid, ev->track), buf, 1);
	}
	return u;
}

static void intern(struct seq_enc *e, const struct weft_ev *ev)
{
	const struct weft_proc *p = e->p;
	struct pb *b = &e->out;
	size_t at = 0;
	int open = 0;
#define OPEN() do { if (!open) { at = pb_begin(b, TP_INTERNED); open = 1; } } while (0)
	uint32_t id = ev->id;
	if (id && id < p->nsites && p->sites[id].defined && !e->named[id] && ev->kind != WEFT_EV_END &&
	    ev->kind != WEFT_EV_COUNTER) {
		e->named[id] = 1;
		OPEN();
		size_t m = pb_begin(b, ID_EVENT_NAMES);
		pb_varint(b, 1, id);
		pb_string(b, 2, p->sites[id].name);
		pb_end(b, m);
	}
	uint32_t ci = (id && id < p->nsites) ? e->cats->iid[id] : 0;
	if (ci && !e->catted[ci] && ev->kind != WEFT_EV_END && ev->kind != WEFT_EV_COUNTER) {
		e->catted[ci] = 1;
		OPEN();
		size_t m = pb_begin(b, ID_CATEGORIES);
		pb_varint(b, 1, ci);
		pb_string(b, 2, e->cats->names[ci]);
		pb_end(b, m);
	}
	for (unsigned i = 0; i < ev->nargs; i++) {
		uint32_t k = ev->args[i].key;
		if (k && k < p->nsites && p->sites[k].defined && !e->keyed[k]) {
			e->keyed[k] = 1;
			OPEN();
			size_t m = pb_begin(b, ID_DEBUG_NAMES);
			pb_varint(b, 1, k);
			pb_string(b, 2, p->sites[k].name);
			pb_end(b, m);
		}
	}
	if (open)
		pb_end(b, at);
#undef OPEN
}

static void annotation_flag(struct pb *b, const char *name)
{
	size_t m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, name);
	pb_varint(b, DA_BOOL, 1);
	pb_end(b, m);
}

static void args(struct seq_enc *e, const struct weft_ev *ev)
{
	struct pb *b = &e->out;
	for (unsigned i = 0; i < ev->nargs; i++) {
		const struct weft_ev_arg *a = &ev->args[i];
		size_t m = pb_begin(b, TE_DEBUG);
		if (a->key && a->key < e->p->nsites && e->p->sites[a->key].defined)
			pb_varint(b, DA_NAME_IID, a->key);
		else
			pb_string(b, DA_NAME, "?");
		switch (a->type) {
		case WEFT_R_ARG_I64: pb_varint(b, DA_INT, a->v); break;
		case WEFT_R_ARG_U64: pb_varint(b, DA_UINT, a->v); break;
		case WEFT_R_ARG_BOOL: pb_varint(b, DA_BOOL, a->v ? 1 : 0); break;
		case WEFT_R_ARG_PTR: pb_varint(b, DA_POINTER, a->v); break;
		case WEFT_R_ARG_F64: { double d; memcpy(&d, &a->v, 8); pb_double(b, DA_DOUBLE, d); break; }
		case WEFT_R_ARG_STR: pb_bytes(b, DA_STRING, a->s, strnlen(a->s, a->slen)); break;
		default: break;
		}
		pb_end(b, m);
	}
}

static inline uint8_t *put_varint(uint8_t *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

/* The common case - a begin, end or instant on the thread's own track, its name already
 * interned, no arguments or flows - written straight, without per-field checks. Returns 0
 * when the event needs the general path. */
static int packet_fast(struct seq_enc *e, const struct weft_ev *ev, uint64_t ts, unsigned type,
		       uint64_t track)
{
	const struct weft_proc *p = e->p;
	if (track != e->tuuid || ev->nargs || ev->nout || ev->nin || ev->flags || ev->nctr ||
	    ev->kind == WEFT_EV_DROPPED || type == TYPE_COUNTER || (e->mem && type == TYPE_END) ||
	    (e->end_known && type == TYPE_END) || ev->has_cm)
		return 0;
	uint32_t id = ev->id, ci = 0;
	if (type != TYPE_END) {
		if (!id || id >= p->nsites || !e->named[id])
			return 0;
		ci = e->cats->iid[id];
		if (ci && !e->catted[ci])
			return 0;
	}
	uint8_t te[32], *t = te;
	*t++ = TE_TYPE << 3;
	*t++ = (uint8_t)type;
	if (type != TYPE_END) {
		*t++ = TE_NAME_IID << 3;
		t = put_varint(t, id);
		if (ci) {
			*t++ = TE_CATEGORY_IIDS << 3;
			t = put_varint(t, ci);
		}
	}
	struct pb *b = &e->out;
	pb_reserve(b, 64);
	uint8_t *o = b->p + b->n, *len = o + 1;
	o[0] = (TRACE_PACKET << 3) | 2;
	o += 2;
	*o++ = TP_TIMESTAMP << 3;
	o = put_varint(o, ts);
	*o++ = TP_SEQ_ID << 3;
	o = put_varint(o, e->seq);
	*o++ = TP_SEQ_FLAGS << 3;
	*o++ = SEQ_NEEDS;
	*o++ = (TP_TRACK_EVENT << 3) | 2;
	*o++ = (uint8_t)(t - te);
	memcpy(o, te, (size_t)(t - te));
	o += t - te;
	*len = (uint8_t)(o - len - 1);
	b->n = (size_t)(o - b->p);
	return 1;
}

/* counters=: the values at a slice's begin or end, on the thread's counter tracks (their uuids
 * are the sequence's default extra_counter_track_uuids, in the same order) */
static void slice_counters(struct pb *b, const struct weft_proc *p, const struct weft_ev *ev)
{
	if (!ev->nctr || ev->nctr != p->nctr)
		return;
	for (unsigned k = 0; k < ev->nctr; k++)
		pb_varint(b, TE_EXTRA_CTR_VALUES, ev->ctr[k]);
}

/* counters=: one counter track per counter under the thread's track; task-clock as Perfetto's
 * thread time (COUNTER_THREAD_TIME_NS), which fills slice.thread_ts and thread_dur */
static void describe_slice_counters(struct seq_enc *e)
{
	const struct weft_proc *p = e->p;
	struct pb *b = &e->out;
	for (unsigned k = 0; k < p->nctr; k++) {
		const char *n = p->ctr_names[k];
		size_t pk = pb_begin(b, TRACE_PACKET);
		pb_varint(b, TP_SEQ_ID, e->seq);
		pb_varint(b, TP_SEQ_FLAGS, SEQ_NEEDS);
		size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
		pb_varint(b, TD_UUID, slice_ctr_uuid(e->tuuid, k));
		pb_varint(b, TD_PARENT, e->tuuid);
		size_t cd;
		if (!strcmp(n, "task-clock")) {
			cd = pb_begin(b, TD_COUNTER);
			pb_varint(b, CD_TYPE, 1); /* COUNTER_THREAD_TIME_NS */
		} else {
			pb_string(b, TD_NAME, n);
			cd = pb_begin(b, TD_COUNTER);
			pb_varint(b, CD_UNIT, !strcmp(n, "cpu-clock") ? 1 : 2); /* UNIT_TIME_NS, UNIT_COUNT */
		}
		pb_end(b, cd);
		pb_end(b, td);
		pb_end(b, pk);
	}
}

/* An instant named `name` at ts on `track` (the thread's own: written as the default), its
 * TrackEvent left open (*te) for what it carries: returns the packet to close after it. */
static size_t instant_begin(struct seq_enc *e, uint64_t ts, uint64_t track, const char *name, size_t *te)
{
	struct pb *b = &e->out;
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_TIMESTAMP, ts);
	pb_varint(b, TP_SEQ_ID, e->seq);
	pb_varint(b, TP_SEQ_FLAGS, SEQ_NEEDS);
	*te = pb_begin(b, TP_TRACK_EVENT);
	pb_varint(b, TE_TYPE, TYPE_INSTANT);
	if (track != e->tuuid)
		pb_varint(b, TE_TRACK_UUID, track);
	pb_string(b, TE_NAME, name);
	return pk;
}

/* Flows that end on an END (a receive's completion: its message arrived as the call returned)
 * end on an instant `received` at that moment, inside the slice: trace_processor (v55) orients
 * an arrow by the start of the slices it links, so an arrow ending on the slice itself would
 * point backwards from a receive that began waiting before its message was sent. */
static void received(struct seq_enc *e, const struct weft_ev *ev, uint64_t track)
{
	struct pb *b = &e->out;
	size_t te, pk = instant_begin(e, ev->ts, track, "received", &te);
	for (unsigned i = 0; i < ev->nin; i++)
		pb_fixed64(b, TE_TERM_FLOW_IDS, ev->flows_in[i]);
	pb_end(b, te);
	pb_end(b, pk);
}

static void packet(struct seq_enc *e, const struct weft_ev *ev, uint64_t ts, unsigned type, uint64_t track)
{
	if (packet_fast(e, ev, ts, type, track))
		return;
	struct pb *b = &e->out;
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_TIMESTAMP, ts);
	pb_varint(b, TP_SEQ_ID, e->seq);
	if (type != TYPE_END || ev->nargs)
		intern(e, ev);
	pb_varint(b, TP_SEQ_FLAGS, SEQ_NEEDS);
	size_t te = pb_begin(b, TP_TRACK_EVENT);
	pb_varint(b, TE_TYPE, type);
	if (track != e->tuuid) /* the thread's own track is the sequence default */
		pb_varint(b, TE_TRACK_UUID, track);
	const struct weft_proc *p = e->p;
	if (type == TYPE_COUNTER) {
		if (ev->is_double) {
			double d;
			memcpy(&d, &ev->value, 8);
			pb_double(b, TE_DCOUNTER, d);
		} else {
			pb_varint(b, TE_COUNTER, ev->value);
		}
	} else if (type != TYPE_END) {
		uint32_t id = ev->id;
		if (id && id < p->nsites && p->sites[id].defined)
			pb_varint(b, TE_NAME_IID, id);
		else if (ev->kind == WEFT_EV_DROPPED)
			pb_string(b, TE_NAME, "weft: events dropped");
		else {
			char buf[32];
			pb_string(b, TE_NAME, name_or(p, id, buf, sizeof(buf)));
		}
		uint32_t ci = (id && id < p->nsites) ? e->cats->iid[id] : 0;
		if (ci)
			pb_varint(b, TE_CATEGORY_IIDS, ci);
		args(e, ev);
		if (ev->kind == WEFT_EV_DROPPED) {
			size_t m = pb_begin(b, TE_DEBUG);
			pb_string(b, DA_NAME, "dropped_events");
			pb_varint(b, DA_UINT, ev->value);
			pb_end(b, m);
		}
		for (unsigned i = 0; i < ev->nout; i++) {
			pb_fixed64(b, TE_FLOW_IDS, ev->flows_out[i]);
			if (ev->flows_out[i] >> 63) { /* a CUDA call's arrow to its device work */
				size_t m = pb_begin(b, TE_DEBUG);
				pb_string(b, DA_NAME, "correlation_id");
				pb_varint(b, DA_UINT, (uint32_t)ev->flows_out[i]);
				pb_end(b, m);
			}
		}
		for (unsigned i = 0; i < ev->nin; i++)
			pb_fixed64(b, TE_TERM_FLOW_IDS, ev->flows_in[i]);
		slice_counters(b, p, ev);
	} else {
		slice_counters(b, p, ev);
		/* what the call learnt when it returned (format 1.7): trace_processor adds an END's
		 * arguments to its slice and links its flows from and to that slice */
		args(e, ev);
		for (unsigned i = 0; i < ev->nout; i++)
			pb_fixed64(b, TE_FLOW_IDS, ev->flows_out[i]);
		for (unsigned i = 0; i < ev->nin; i++)
			pb_fixed64(b, TE_TERM_FLOW_IDS, ev->flows_in[i]);
		if (ev->flags & WEFT_EVF_UNTERMINATED)
			annotation_flag(b, "weft_unterminated");
		if (ev->flags & WEFT_EVF_UNWOUND)
			annotation_flag(b, "weft_unwound");
		if (ev->flags & WEFT_EVF_EXCEPTION)
			annotation_flag(b, "exception");
		const struct weft_mem_slice *ms =
			e->mem && ev->kind == WEFT_EV_END ? weft_mem_slice(e->mem, (size_t)(e->th - p->threads), ev->serial) : NULL;
		if (ms)
			weft_pf_mem_slice_args(b, ms);
		if (e->end_known && e->end_exact)
			weft_pf_exact_slice_args(b, e->exact_user, e->exact_sys, e->exact_rss);
		else if (e->end_known && e->sys)
			weft_pf_sys_slice_args(b, e->sys, e->end_begin, ts);
	}
	pb_end(b, te);
	pb_end(b, pk);
}

/* --machines: every packet in b from `from` on gets TracePacket.machine_id (appended: a
 * field's place in a message is free), so trace_processor keeps each host's processes,
 * threads and tracks in a machine of its own (their times stay aligned: it assumes offset 0
 * for a machine without RemoteClockSync, and that is what weft made true). */
static void add_machine(struct pb *b, size_t from, uint32_t machine)
{
	if (!machine || b->n <= from)
		return;
	size_t n = b->n - from;
	uint8_t *old = malloc(n);
	if (!old)
		weft_oom("writing the .pftrace");
	memcpy(old, b->p + from, n);
	b->n = from;
	for (size_t i = 0; i < n;) {
		uint64_t tag = 0, len = 0;
		unsigned sh = 0;
		while (i < n && (old[i] & 0x80))
			tag |= (uint64_t)(old[i++] & 0x7f) << sh, sh += 7;
		if (i < n)
			tag |= (uint64_t)old[i++] << sh;
		for (sh = 0; i < n && (old[i] & 0x80); sh += 7)
			len |= (uint64_t)(old[i++] & 0x7f) << sh;
		if (i < n)
			len |= (uint64_t)old[i++] << sh;
		if (tag != ((TRACE_PACKET << 3) | 2) || len > n - i)
			break; /* only packets are written here */
		size_t pk = pb_begin(b, TRACE_PACKET);
		pb_reserve(b, len);
		memcpy(b->p + b->n, old + i, len);
		b->n += len;
		pb_varint(b, TP_MACHINE_ID, machine);
		pb_end(b, pk);
		i += len;
	}
	free(old);
}

/* Whole packets go to the output in batches of about 1 MiB, so memory stays bounded whatever
 * the trace size; in the order of the sequences, whatever the threads' timing (pftrace-out.h). */
static void drain(struct seq_enc *e, size_t threshold)
{
	if (e->out.n < threshold || !e->out.n)
		return;
	add_machine(&e->out, 0, e->machine);
	weft_pf_out_batch(e->file, &e->so, &e->out);
	atomic_fetch_add_explicit(&weft_export_progress, e->st.events - e->reported, memory_order_relaxed);
	e->reported = e->st.events;
}

/* An allocation of at least big_alloc bytes: an instant on its thread, with its size, address
 * and function. */
static void big_alloc(struct seq_enc *e, const struct weft_ev *ev)
{
	struct pb *b = &e->out;
	size_t te, pk = instant_begin(e, ev->ts, e->tuuid, "large allocation", &te);
	size_t m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, "size");
	pb_varint(b, DA_UINT, ev->size);
	pb_end(b, m);
	m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, "ptr");
	pb_varint(b, DA_POINTER, ev->kind == WEFT_EV_REALLOC ? ev->addr2 : ev->addr);
	pb_end(b, m);
	m = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, "function");
	pb_string(b, DA_STRING, ev->id ? weft_site_name(e->p, ev->id) ? weft_site_name(e->p, ev->id) : "heap"
				       : weft_mem_fn_name(ev->mfn));
	pb_end(b, m);
	pb_end(b, te);
	pb_end(b, pk);
}

static void thread_descriptor(struct seq_enc *e, uint64_t ts);
/* With sampler readings: slices' begin times, for their CPU and RSS args at the end. */
static void note_slice(struct seq_enc *e, const struct weft_ev *ev)
{
	e->end_known = 0;
	e->end_exact = 0;
	if (ev->kind == WEFT_EV_BEGIN) {
		if (e->nopen == e->opencap) {
			e->opencap = e->opencap ? e->opencap * 2 : 64;
			e->open = realloc(e->open, e->opencap * sizeof(*e->open));
			if (!e->open)
				weft_oom("writing the .pftrace");
		}
		e->open[e->nopen].serial = ev->serial;
		e->open[e->nopen].has_cm = ev->has_cm;
		e->open[e->nopen].user = ev->cm_user_ns;
		e->open[e->nopen].sys = ev->cm_sys_ns;
		e->open[e->nopen++].ts = ev->ts;
	} else if (ev->kind == WEFT_EV_END) {
		for (size_t i = e->nopen; i-- > 0;) { /* the innermost, nearly always */
			if (e->open[i].serial != ev->serial)
				continue;
			e->end_begin = e->open[i].ts;
			e->end_known = 1;
			if (e->open[i].has_cm && ev->has_cm) {
				e->end_exact = 1;
				e->exact_user = ev->cm_user_ns - e->open[i].user;
				e->exact_sys = ev->cm_sys_ns - e->open[i].sys;
				e->exact_rss = ev->cm_rss;
			}
			memmove(&e->open[i], &e->open[i + 1], (e->nopen - i - 1) * sizeof(*e->open));
			e->nopen--;
			break;
		}
	}
}

static void on_event(void *ud, const struct weft_ev *ev)
{
	struct seq_enc *e = ud;
	if (ev->kind == WEFT_EV_SCHED) { /* on a sequence of its own: no interning there */
		if (e->p->host_index) /* another host's CPUs and tasks: left out (format/hosts.h) */
			return;
		if (e->out.n >= (1u << 20)) {
			weft_pf_sched_close(e->sched, &e->out);
			drain(e, 1u << 20);
		}
		weft_pf_sched_event(&e->sched, &e->out, e->seq | 0x80000000u, ev);
		return;
	}
	weft_pf_sched_close(e->sched, &e->out);
	if (!e->described) /* at the thread's first event: after it was created (a tid's utid) */
		thread_descriptor(e, ev->ts);
	drain(e, 1u << 20);
	uint64_t track = track_for(e, ev);
	/* with sampler readings, or exact ones (cpu_mem_exact=: the slices begun since the first) */
	if (e->sys || ev->has_cm || e->nopen)
		note_slice(e, ev);
	else
		e->end_known = e->end_exact = 0;
	switch (ev->kind) {
	case WEFT_EV_BEGIN: case WEFT_EV_ASYNC_BEGIN:
		packet(e, ev, ev->ts, TYPE_BEGIN, track);
		break;
	case WEFT_EV_END: case WEFT_EV_ASYNC_END:
		if (ev->kind == WEFT_EV_END && ev->nin) { /* the arrows' ends: an instant inside the slice */
			received(e, ev, track);
			struct weft_ev rest = *ev;
			rest.nin = 0;
			packet(e, &rest, ev->ts, TYPE_END, track);
			break;
		}
		packet(e, ev, ev->ts, TYPE_END, track);
		break;
	case WEFT_EV_INSTANT: case WEFT_EV_ASYNC_INSTANT: case WEFT_EV_DROPPED:
		packet(e, ev, ev->ts, TYPE_INSTANT, track);
		break;
	case WEFT_EV_COUNTER:
		packet(e, ev, ev->ts, TYPE_COUNTER, track);
		break;
	case WEFT_EV_ALLOC: case WEFT_EV_REALLOC:
		if (ev->size >= e->big_alloc && e->mem)
			big_alloc(e, ev);
		break;
	case WEFT_EV_COMPLETE: {
		packet(e, ev, ev->ts, TYPE_BEGIN, track);
		struct weft_ev end = *ev;
		end.kind = WEFT_EV_END;
		end.nargs = end.nout = end.nin = 0;
		end.flags = 0;
		e->end_begin = ev->ts;
		e->end_known = e->sys != NULL;
		packet(e, &end, ev->end_ts, TYPE_END, track);
		e->end_known = 0;
		break;
	}
	default:
		break;
	}
}

struct job {
	const struct weft_trace *t;
	struct seq_enc *encs;
	const struct weft_pf_sched_ends *sched_ends; /* the switch chains between streams, or NULL */
};

/* The images of one process (pid): exec starts a new one (gen 1, 2, ...), the same process. */
static const struct weft_proc *last_image(const struct weft_trace *t, const struct weft_proc *p)
{
	const struct weft_proc *l = p;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].pid == p->pid && t->procs[i].gen > l->gen)
			l = &t->procs[i];
	return l;
}


/* The thread's first packet: its track descriptor, made the sequence's default track, with
 * the time of its first event: trace_processor gives a tid that a sched event saw created
 * (task_newtask) before a descriptor's time a new utid, so the time must not be earlier. */
static void thread_descriptor(struct seq_enc *e, uint64_t ts)
{
	const struct weft_proc *p = e->p;
	struct pb *b = &e->out;
	e->described = 1;
	size_t pk = pb_begin(b, TRACE_PACKET);
	if (ts)
		pb_varint(b, TP_TIMESTAMP, ts);
	pb_varint(b, TP_SEQ_ID, e->seq);
	pb_varint(b, TP_SEQ_FLAGS, SEQ_CLEARED);
	pb_varint(b, TP_FIRST_ON_SEQ, 1);
	size_t defs = pb_begin(b, TP_DEFAULTS);
	size_t ted = pb_begin(b, TPD_TRACK_EVENT);
	pb_varint(b, TED_TRACK_UUID, e->tuuid);
	for (unsigned k = 0; k < p->nctr; k++)
		pb_varint(b, TED_EXTRA_CTR_UUIDS, slice_ctr_uuid(e->tuuid, k));
	pb_end(b, ted);
	pb_end(b, defs);
	size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
	pb_varint(b, TD_UUID, e->tuuid);
	size_t thd = pb_begin(b, TD_THREAD);
	pb_varint(b, THD_PID, (uint64_t)(uint32_t)p->pid);
	pb_varint(b, THD_TID, e->th->tid);
	/* a thread has one name in the UI: the main thread of a process that exec'd is named
	 * after its last image, like the process */
	const struct weft_proc *last = last_image(e->t, p);
	if (last != p && e->th->tid == (uint32_t)p->pid) {
		const char *name = last->name;
		for (size_t k = 0; k < last->nthreads; k++)
			if (last->threads[k].tid == e->th->tid)
				name = last->threads[k].name;
		pb_string(b, THD_NAME, name);
	} else {
		pb_string(b, THD_NAME, e->th->name);
	}
	pb_end(b, thd);
	pb_end(b, td);
	pb_end(b, pk);
	describe_slice_counters(e);
}

static void encode_thread(size_t i, void *ud)
{
	struct job *j = ud;
	struct seq_enc *e = &j->encs[i];
	const struct weft_proc *p = e->p;
	e->named = calloc(p->nsites + 1, 1);
	e->keyed = calloc(p->nsites + 1, 1);
	e->catted = calloc(e->cats->n + 1, 1);
	if (!e->named || !e->keyed || !e->catted)
		weft_oom("writing the .pftrace");
	e->t = j->t;
	weft_pf_sched_join(&e->sched, j->sched_ends, p, e->th);
	weft_walk_thread(p, e->th, j->t->last_ns, on_event, e, &e->st, &e->buf, &e->cap);
	weft_pf_sched_close(e->sched, &e->out);
	if (!e->described) /* no event of its own (a sched reader): the end of the trace is after its start */
		thread_descriptor(e, j->t->last_ns);
	weft_pf_sched_finish(e->sched, &e->out, e->seq | 0x80000000u, p, proc_uuid(p->pid), j->t->last_ns, mix);
	e->sched = NULL;
	drain(e, 1);
	weft_pf_out_seq_done(e->file, &e->so);
	free(e->out.p);
	free(e->buf);
	free(e->named);
	free(e->keyed);
	free(e->catted);
	free(e->lanes_seen);
	free(e->open);
}

static void build_cats(const struct weft_proc *p, struct proc_cats *c)
{
	c->iid = calloc(p->nsites + 1, sizeof(uint32_t));
	c->names = calloc(p->nsites + 2, sizeof(char *));
	if (!c->iid || !c->names)
		weft_oom("writing the .pftrace");
	c->n = 0;
	for (size_t id = 0; id < p->nsites; id++) {
		const struct weft_site_def *s = &p->sites[id];
		if (!s->defined || !s->cat || !*s->cat)
			continue;
		size_t k;
		for (k = 1; k <= c->n; k++)
			if (!strcmp(c->names[k], s->cat))
				break;
		if (k > c->n)
			c->names[++c->n] = s->cat;
		c->iid[id] = (uint32_t)k;
	}
}

static void header(const struct weft_trace *t, const struct weft_mem *mem, const struct weft_sys *sys,
		   const struct weft_gpu *gpu, struct pb *b)
{
	/* Clock snapshot: BOOTTIME is the trace clock; REALTIME lets the UI show wall time. */
	uint64_t boot = t->first_ns, real = 0;
	for (size_t i = 0; i < t->nprocs && !real; i++)
		if (t->procs[i].nclock)
			real = t->procs[i].clock[0].real_ns + (boot - t->procs[i].clock[0].boot_ns);
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_TIMESTAMP, boot);
	pb_varint(b, TP_SEQ_ID, 1);
	size_t cs = pb_begin(b, TP_CLOCK_SNAPSHOT);
	size_t c1 = pb_begin(b, 1);
	pb_varint(b, 1, 6);
	pb_varint(b, 2, boot);
	pb_end(b, c1);
	/* MONOTONIC_COARSE, the clock trace_processor reads heap-profile dumps on: the same
	 * timeline (without it every dump is dropped) */
	c1 = pb_begin(b, 1);
	pb_varint(b, 1, 4);
	pb_varint(b, 2, boot);
	pb_end(b, c1);
	if (real) {
		size_t c2 = pb_begin(b, 1);
		pb_varint(b, 1, 1);
		pb_varint(b, 2, real);
		pb_end(b, c2);
	}
	pb_varint(b, 2, 6);
	pb_end(b, cs);
	pb_end(b, pk);
	weft_pf_sched_system_info(b, t);

	/* the ranks of a job in rank order: the root track (uuid 0) asks the UI to order the
	 * processes by their tracks' sibling_order_rank, which is the rank (others after them) */
	int ranked = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		ranked |= weft_proc_rank(&t->procs[i]) != WEFT_RANK_NONE;
	if (ranked) {
		pk = pb_begin(b, TRACE_PACKET);
		pb_varint(b, TP_SEQ_ID, 1);
		size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
		pb_varint(b, TD_UUID, 0);
		pb_varint(b, TD_PROCESS_ORDERING, 1);
		pb_end(b, td);
		pb_end(b, pk);
	}
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		size_t from = b->n; /* this process's packets (--machines) */
		if (last_image(t, p) == p) { /* one descriptor per pid: its last image's name */
			pk = pb_begin(b, TRACE_PACKET);
			pb_varint(b, TP_SEQ_ID, 1);
			size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
			pb_varint(b, TD_UUID, proc_uuid(p->pid));
			if (ranked) {
				uint32_t r = weft_proc_rank(p);
				pb_varint(b, TD_SIBLING_ORDER_RANK, r == WEFT_RANK_NONE ? 0x7fffffffu : r);
			}
			size_t pd = pb_begin(b, TD_PROCESS);
			pb_varint(b, PD_PID, (uint64_t)(uint32_t)p->pid);
			for (int a = 0; a < p->argc; a++)
				pb_string(b, PD_CMDLINE, p->argv[a]);
			pb_string(b, PD_NAME, p->name);
			if (ranked || t->hosts.n > 1) /* a job's or several hosts' processes: the host, as a label */
				pb_string(b, PD_LABELS, p->host && *p->host ? p->host : "(unknown host)");
			pb_end(b, pd);
			pb_end(b, td);
			pb_end(b, pk);
		}
		for (size_t tr = 1; tr < p->ntracks; tr++)
			if (p->tracks[tr])
				describe(b, 1, track_uuid(p->pid, (unsigned)tr), proc_uuid(p->pid), p->tracks[tr], 0);
		for (size_t id = 0; id < p->nsites; id++) {
			const struct weft_site_def *s = &p->sites[id];
			if (!s->defined || s->kind != WEFT_KIND_COUNTER)
				continue;
			pk = pb_begin(b, TRACE_PACKET);
			pb_varint(b, TP_SEQ_ID, 1);
			size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
			pb_varint(b, TD_UUID, counter_uuid(p->pid, (uint32_t)id));
			pb_varint(b, TD_PARENT, proc_uuid(p->pid));
			pb_string(b, TD_NAME, s->name);
			size_t cd = pb_begin(b, TD_COUNTER);
			const char *u = s->unit ? s->unit : "";
			if (!strcmp(u, "ns"))
				pb_varint(b, CD_UNIT, 1);
			else if (!strcmp(u, "count"))
				pb_varint(b, CD_UNIT, 2);
			else if (!strcmp(u, "bytes"))
				pb_varint(b, CD_UNIT, 3);
			else if (*u)
				pb_string(b, CD_UNIT_NAME, u);
			pb_end(b, cd);
			pb_end(b, td);
			pb_end(b, pk);
		}
		const struct weft_mem_proc *mp = weft_mem_for(mem, p);
		if (mp)
			weft_pf_mem_tracks(b, mp, proc_uuid(p->pid), mix);
		weft_pf_snapshots(b, p, proc_uuid(p->pid)); /* snapshot requests (format 1.8) */
		add_machine(b, from, t->machines ? p->host_index : 0);
	}
	weft_pf_sys_tracks(b, sys, mix, proc_uuid);
	weft_pf_gpu_tracks(b, gpu, sys, mix);
}

static void drain_cb(void *ctx)
{
	drain(ctx, 1u << 20);
}

int weft_export_pftrace(const struct weft_trace *t, FILE *out, int jobs, int deflate,
			struct weft_export_summary *sum, char *err, size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].nthreads;
	struct seq_enc *encs = calloc(n + 1, sizeof(*encs));
	struct proc_cats *cats = calloc(t->nprocs + 1, sizeof(*cats));
	if (!encs || !cats)
		weft_oom("writing the .pftrace");

	struct weft_mem *mem = NULL;
	int rc = weft_mem_analyze(t, &mem, err, errlen);
	if (rc) {
		free(encs);
		free(cats);
		return rc;
	}
	struct weft_sys *sys = NULL;
	if ((rc = weft_sys_analyze(t, &sys, err, errlen))) {
		weft_mem_free(mem);
		free(encs);
		free(cats);
		return rc;
	}
	struct weft_gpu *gpu = NULL;
	if ((rc = weft_gpu_analyze(t, 0, &gpu, err, errlen))) {
		weft_sys_free(sys);
		weft_mem_free(mem);
		free(encs);
		free(cats);
		return rc;
	}
	jobs = weft_jobs(jobs);
	struct weft_pf_out *file = weft_pf_out_open(out, deflate, n, jobs > 1 ? jobs : 0);
	if (!file)
		weft_oom("writing the .pftrace");
	size_t k = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		const struct weft_sys_proc *sp = weft_sys_for(sys, p);
		build_cats(p, &cats[i]);
		for (size_t h = 0; h < p->nthreads; h++, k++) {
			encs[k].p = p;
			encs[k].th = &p->threads[h];
			encs[k].cats = &cats[i];
			encs[k].file = file;
			encs[k].seq = (uint32_t)(k + 2);
			encs[k].so.order = k;
			encs[k].tuuid = thread_uuid(p->pid, p->threads[h].tid, p->threads[h].serial);
			encs[k].mem = weft_mem_for(mem, p);
			encs[k].big_alloc = mem->big_alloc;
			encs[k].sys = sp && sp->slice_min_ns ? sp : NULL;
			encs[k].machine = t->machines ? p->host_index : 0;

		}
	}
	for (size_t i = 0; i < t->nprocs; i++) /* drops not attributed to a thread count too */
		sum->dropped += weft_proc_dropped(&t->procs[i]);
	/* descriptors of processes, named tracks and counters first, then the threads */
	struct seq_enc head = {.file = file, .so.order = SIZE_MAX};
	header(t, mem, sys, gpu, &head.out);
	drain(&head, 1);
	weft_pf_out_flush(file, &head.so); /* in the file before the first thread's sequence */
	struct job j = {t, encs, weft_pf_sched_scan(t)};
	weft_parallel_for(n, jobs, encode_thread, &j);
	weft_pf_sched_ends_free((struct weft_pf_sched_ends *)j.sched_ends);
	/* memory counters and heap profiles, each on sequences of their own after the threads' */
	uint32_t seq = (uint32_t)n + 2;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_mem_proc *mp = weft_mem_for(mem, &t->procs[i]);
		if (!mp)
			continue;
		head.machine = t->machines ? t->procs[i].host_index : 0;
		weft_pf_mem_counters(&head.out, mp, seq++, mix, drain_cb, &head);
		seq += weft_pf_mem_profiles(&head.out, mp, seq, drain_cb, &head);
		drain(&head, 1);
	}
	head.machine = 0;
	for (size_t i = 0; sys && i < sys->nprocs; i++) /* the sampler's readings, a sequence per process */
		weft_pf_sys_counters(&head.out, &sys->procs[i], seq++, mix, drain_cb, &head);
	for (size_t i = 0; gpu && i < gpu->nprocs; i++) /* kernels, copies, memsets: a sequence per process */
		weft_pf_gpu_events(&head.out, gpu, &gpu->procs[i], seq++, mix, drain_cb, &head);
	drain(&head, 1);
	weft_pf_out_seq_done(file, &head.so);
	weft_gpu_free(gpu);
	free(head.out.p);
	weft_mem_free(mem);
	weft_sys_free(sys);
	for (size_t i = 0; i < n; i++)
		weft_export_summary_add(sum, &encs[i].st);
	for (size_t i = 0; i < t->nprocs; i++) {
		free(cats[i].iid);
		free(cats[i].names);
	}
	free(cats);
	free(encs);
	rc = weft_pf_out_close(file, &sum->bytes);
	if (!rc && fflush(out))
		rc = -errno;
	if (rc)
		snprintf(err, errlen, "writing the trace failed: %s", strerror(-rc));
	return weft_export_result(sum, rc, err, errlen);
}
