/*
 * pftrace-event.c - one weft event as Perfetto TracePackets on its thread's sequence: a
 * TrackEvent (begin, end, instant, counter) with its name, category and argument keys interned
 * on the sequence as first used, its arguments, flows and per-slice counters; lane and async
 * track descriptors just before their first use. The common event (a begin or end on the
 * thread's own track, already interned, nothing attached) is written in one pass without
 * per-field checks (packet_fast; pftrace.c offers most function events to it directly:
 * on_plain).
 */
#include "export/pftrace-enc.h"
#include "export/pftrace-memory.h"
#include "export/pftrace-system.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void weft_pfe_describe(struct pb *b, uint32_t seq, uint64_t uuid, uint64_t parent, const char *name,
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

void weft_pfe_describe_counter(struct pb *b, uint32_t seq, uint64_t uuid, uint64_t parent, const char *name,
			       const char *unit)
{
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, seq);
	size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
	pb_varint(b, TD_UUID, uuid);
	pb_varint(b, TD_PARENT, parent);
	pb_string(b, TD_NAME, name);
	size_t cd = pb_begin(b, TD_COUNTER);
	const char *u = unit ? unit : "";
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

static const char *name_or(const struct weft_proc *p, uint32_t id, char *buf, size_t n)
{
	const char *s = weft_site_name(p, id);
	if (s)
		return s;
	snprintf(buf, n, id ? "site#%u" : "(flow)", id);
	return buf;
}

uint64_t weft_pfe_track_for(struct seq_enc *e, const struct weft_ev *ev)
{
	const struct weft_proc *p = e->p;
	char buf[300];
	switch (ev->kind) {
	case WEFT_EV_COUNTER: {
		uint64_t u = counter_uuid(p->pid, ev->id);
		/* the header describes the counters the metadata defines; one it lost (cut, damaged)
		 * is described here, before its first value, as site#N */
		int known = ev->id < p->nsites && p->sites[ev->id].defined && p->sites[ev->id].kind == WEFT_KIND_COUNTER;
		if (!known && !seen(e, u))
			weft_pfe_describe_counter(&e->out, e->seq, u, proc_uuid(p->pid), name_or(p, ev->id, buf, sizeof(buf)),
						  NULL);
		return u;
	}
	case WEFT_EV_ASYNC_BEGIN: case WEFT_EV_ASYNC_END: case WEFT_EV_ASYNC_INSTANT: {
		uint64_t u = async_uuid(p->pid, ev->id, ev->value);
		if (!seen(e, u))
			weft_pfe_describe(&e->out, e->seq, u, proc_uuid(p->pid), name_or(p, ev->id, buf, sizeof(buf)), 0);
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
		weft_pfe_describe(&e->out, e->seq, u, track_uuid(p->pid, ev->track), buf, 1);
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
		pb_interned_string(b, ID_EVENT_NAMES, id, p->sites[id].name);
	}
	uint32_t ci = (id && id < p->nsites) ? e->cats->iid[id] : 0;
	if (ci && !e->catted[ci] && ev->kind != WEFT_EV_END && ev->kind != WEFT_EV_COUNTER) {
		e->catted[ci] = 1;
		OPEN();
		pb_interned_string(b, ID_CATEGORIES, ci, e->cats->names[ci]);
	}
	for (unsigned i = 0; i < ev->nargs; i++) {
		uint32_t k = ev->args[i].key;
		if (k && k < p->nsites && p->sites[k].defined && !e->keyed[k]) {
			e->keyed[k] = 1;
			OPEN();
			pb_interned_string(b, ID_DEBUG_NAMES, k, p->sites[k].name);
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

/* The common case - a begin, end or instant on the thread's own track, its name already
 * interned, no arguments or flows - written straight, without per-field checks
 * (pfe_plain_packet). Returns 0 when the event needs the general path. */
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
	pfe_plain_packet(e, ts, type, id, ci);
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
void weft_pfe_describe_slice_counters(struct seq_enc *e)
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
	pfe_ts_pb(e, b, ts);
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
void weft_pfe_received(struct seq_enc *e, const struct weft_ev *ev, uint64_t track)
{
	struct pb *b = &e->out;
	size_t te, pk = instant_begin(e, ev->ts, track, "received", &te);
	for (unsigned i = 0; i < ev->nin; i++)
		pb_fixed64(b, TE_TERM_FLOW_IDS, ev->flows_in[i]);
	pb_end(b, te);
	pb_end(b, pk);
}

void weft_pfe_packet(struct seq_enc *e, const struct weft_ev *ev, uint64_t ts, unsigned type, uint64_t track)
{
	if (packet_fast(e, ev, ts, type, track))
		return;
	struct pb *b = &e->out;
	size_t pk = pb_begin(b, TRACE_PACKET);
	pfe_ts_pb(e, b, ts);
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

/* An allocation of at least big_alloc bytes: an instant on its thread, with its size, address
 * and function. */
void weft_pfe_big_alloc(struct seq_enc *e, const struct weft_ev *ev)
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
