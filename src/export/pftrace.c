/*
 * pftrace.c - trace -> Perfetto protobuf (.pftrace). Layout of the output:
 *   sequence 1: a ClockSnapshot (BOOTTIME primary, REALTIME for wall time), then a
 *               TrackDescriptor per process, named track and counter track;
 *   one sequence per thread: its thread TrackDescriptor first (SEQ_INCREMENTAL_STATE_CLEARED,
 *               and TracePacketDefaults making the thread's track the default for its events
 *               and the sequence's incremental clock the default for their times), a
 *               ClockSnapshot starting that clock, then its events, each time the delta from
 *               the previous one (pftrace-enc.h: pfe_ts), with names, categories and argument keys interned per
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
#include "format/symbols.h"
#include "export/pftrace-enc.h"
#include "format/format.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Whether the message in p[0, n) has field `field` at its top level. */
static int has_field(const uint8_t *p, size_t n, unsigned field)
{
	for (size_t i = 0; i < n;) {
		uint64_t tag = 0, v = 0;
		unsigned sh;
		for (sh = 0; i < n && (p[i] & 0x80) && sh < 63; sh += 7)
			tag |= (uint64_t)(p[i++] & 0x7f) << sh;
		if (i >= n)
			return 0;
		tag |= (uint64_t)p[i++] << sh;
		if (tag >> 3 == field)
			return 1;
		switch (tag & 7) {
		case 0:
			while (i < n && (p[i] & 0x80))
				i++;
			i++;
			break;
		case 1:
			i += 8;
			break;
		case 5:
			i += 4;
			break;
		case 2:
			for (sh = 0; i < n && (p[i] & 0x80) && sh < 63; sh += 7)
				v |= (uint64_t)(p[i++] & 0x7f) << sh;
			if (i >= n)
				return 0;
			v |= (uint64_t)p[i++] << sh;
			if (v > n - i)
				return 0;
			i += v;
			break;
		default:
			return 0;
		}
	}
	return 0;
}

/* Every packet in b from `from` on gets, appended (a field's place in a message is free):
 *  - ts (when not 0) as its timestamp, where it has none: trace_processor handles a
 *    descriptor at its packet's time, and one without a time gets the time of the packets
 *    before it (the header's: the trace's start). A process descriptor handled before the
 *    sched stream's task_newtask of its pid makes a process that the fork then replaces: the
 *    process's weft tracks on one upid, its scheduling on another (a pid twice in the process
 *    table). So a process's descriptors say when it started;
 *  - machine (--machines, when not 0) as TracePacket.machine_id, so trace_processor keeps each
 *    host's processes, threads and tracks in a machine of its own (their times stay aligned:
 *    it assumes offset 0 for a machine without RemoteClockSync, and that is what weft made
 *    true). */
static void amend_packets(struct pb *b, size_t from, uint64_t ts, uint32_t machine)
{
	if ((!machine && !ts) || b->n <= from)
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
		if (ts && !has_field(old + i, len, TP_TIMESTAMP))
			pb_varint(b, TP_TIMESTAMP, ts);
		if (machine)
			pb_varint(b, TP_MACHINE_ID, machine);
		pb_end(b, pk);
		i += len;
	}
	free(old);
}

static void add_machine(struct pb *b, size_t from, uint32_t machine)
{
	amend_packets(b, from, 0, machine);
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
	uint64_t track = weft_pfe_track_for(e, ev);
	/* with sampler readings, or exact ones (cpu_mem_exact=: the slices begun since the first) */
	if (e->sys || ev->has_cm || e->nopen)
		note_slice(e, ev);
	else
		e->end_known = e->end_exact = 0;
	switch (ev->kind) {
	case WEFT_EV_BEGIN: case WEFT_EV_ASYNC_BEGIN:
		weft_pfe_packet(e, ev, ev->ts, TYPE_BEGIN, track);
		break;
	case WEFT_EV_END: case WEFT_EV_ASYNC_END:
		if (ev->kind == WEFT_EV_END && ev->nin) { /* the arrows' ends: an instant inside the slice */
			weft_pfe_received(e, ev, track);
			struct weft_ev rest = *ev;
			rest.nin = 0;
			weft_pfe_packet(e, &rest, ev->ts, TYPE_END, track);
			break;
		}
		weft_pfe_packet(e, ev, ev->ts, TYPE_END, track);
		break;
	case WEFT_EV_INSTANT: case WEFT_EV_ASYNC_INSTANT: case WEFT_EV_DROPPED:
		weft_pfe_packet(e, ev, ev->ts, TYPE_INSTANT, track);
		break;
	case WEFT_EV_COUNTER:
		weft_pfe_packet(e, ev, ev->ts, TYPE_COUNTER, track);
		break;
	case WEFT_EV_ALLOC: case WEFT_EV_REALLOC:
		if (ev->size >= e->big_alloc && e->mem)
			weft_pfe_big_alloc(e, ev);
		break;
	case WEFT_EV_COMPLETE: {
		weft_pfe_packet(e, ev, ev->ts, TYPE_BEGIN, track);
		struct weft_ev end = *ev;
		end.kind = WEFT_EV_END;
		end.nargs = end.nout = end.nin = 0;
		end.flags = 0;
		e->end_begin = ev->ts;
		e->end_known = e->sys != NULL;
		weft_pfe_packet(e, &end, ev->end_ts, TYPE_END, track);
		e->end_known = 0;
		break;
	}
	default:
		break;
	}
}

/* Plain begins and ends (model.h: weft_plain_fn), before the walker fills in a weft_ev for
 * them: where on_event would write one with packet_fast (the thread described, no sched bundle,
 * no readings or open slices to note, the name interned, an end with no memory args), it is
 * written here without the event; at the first that is not, on_event gets it. */
static size_t on_plain(void *ud, const struct weft_plain_ev *ev, size_t n)
{
	struct seq_enc *e = ud;
	if (__builtin_expect(!e->described || e->sched || e->sys || e->nopen, 0))
		return 0;
	const struct weft_proc *p = e->p;
	e->end_known = e->end_exact = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t id = ev[i].id, ci = 0;
		if (ev[i].kind == WEFT_EV_END) {
			if (e->mem)
				return i;
		} else {
			if (!id || id >= p->nsites || !e->named[id])
				return i;
			ci = e->cats->iid[id];
			if (ci && !e->catted[ci])
				return i;
		}
		drain(e, 1u << 20);
		pfe_plain_packet(e, ev[i].ts, ev[i].kind == WEFT_EV_END ? TYPE_END : TYPE_BEGIN, id, ci);
	}
	return n;
}

struct job {
	const struct weft_trace *t;
	struct seq_enc *encs;
	const struct weft_pf_sched_ends *sched_ends; /* the switch chains between streams, or NULL */
};

/* Per process of the trace (procs[i]): the last image of its pid (exec starts a new one: gen
 * 1, 2, ..., the same process) and when the process (pid, host) started: its first image's
 * start, not before the trace's (0: not known); its descriptors carry this time
 * (amend_packets). Computed once, in O(n log n): a job has thousands of processes. */
struct proc_images {
	const struct weft_proc **last;
	uint64_t *start;
};

struct image_key {
	int64_t pid;
	uint32_t host;
	size_t i;
};

static int by_pid_host(const void *a, const void *b)
{
	const struct image_key *p = a, *q = b;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	if (p->host != q->host)
		return p->host < q->host ? -1 : 1;
	return p->i < q->i ? -1 : p->i > q->i;
}

static void proc_images_build(const struct weft_trace *t, struct proc_images *im)
{
	size_t n = t->nprocs;
	struct image_key *ix = malloc((n + 1) * sizeof(*ix));
	im->last = calloc(n + 1, sizeof(*im->last));
	im->start = calloc(n + 1, sizeof(*im->start));
	if (!ix || !im->last || !im->start)
		weft_oom("writing the .pftrace");
	for (size_t i = 0; i < n; i++)
		ix[i] = (struct image_key){t->procs[i].pid, t->procs[i].host_index, i};
	qsort(ix, n, sizeof(*ix), by_pid_host);
	for (size_t a = 0, b; a < n; a = b) { /* one pid: its last image, the first of the highest gen */
		const struct weft_proc *top = &t->procs[ix[a].i];
		for (b = a; b < n && ix[b].pid == ix[a].pid; b++) {
			const struct weft_proc *q = &t->procs[ix[b].i];
			if (q->gen > top->gen || (q->gen == top->gen && q < top))
				top = q;
		}
		for (size_t k = a; k < b; k++) {
			const struct weft_proc *p = &t->procs[ix[k].i];
			im->last[ix[k].i] = p->gen == top->gen ? p : top;
		}
	}
	for (size_t a = 0, b; a < n; a = b) { /* one (pid, host): its earliest start */
		uint64_t s = 0;
		for (b = a; b < n && ix[b].pid == ix[a].pid && ix[b].host == ix[a].host; b++) {
			uint64_t q = t->procs[ix[b].i].start_ns;
			if (q && (!s || q < s))
				s = q;
		}
		for (size_t k = a; k < b; k++)
			im->start[ix[k].i] = s && s < t->first_ns ? t->first_ns : s;
	}
	free(ix);
}

static void proc_images_free(struct proc_images *im)
{
	free(im->last);
	free(im->start);
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
	if (ts) {
		pb_varint(b, TP_TIMESTAMP, ts);
		pb_varint(b, TP_CLOCK_ID, PF_CLOCK_BOOT); /* before the sequence's clock starts */
	}
	pb_varint(b, TP_SEQ_ID, e->seq);
	pb_varint(b, TP_SEQ_FLAGS, SEQ_CLEARED);
	pb_varint(b, TP_FIRST_ON_SEQ, 1);
	size_t defs = pb_begin(b, TP_DEFAULTS);
	pb_varint(b, TPD_CLOCK_ID, PF_CLOCK_SEQ);
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
	const struct weft_proc *last = e->last;
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
	/* The sequence's incremental clock, at the trace's start on BOOTTIME: every snapshot gives
	 * BOOTTIME the header's value (trace_processor refuses a snapshot that takes the trace's
	 * clock back), and its events give deltas from there (pftrace-enc.h: pfe_ts). */
	e->clk = e->t->first_ns;
	pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, e->seq);
	size_t cs = pb_begin(b, TP_CLOCK_SNAPSHOT);
	size_t c = pb_begin(b, CS_CLOCKS);
	pb_varint(b, CSC_ID, PF_CLOCK_BOOT);
	pb_varint(b, CSC_TS, e->clk);
	pb_end(b, c);
	c = pb_begin(b, CS_CLOCKS);
	pb_varint(b, CSC_ID, PF_CLOCK_SEQ);
	pb_varint(b, CSC_TS, e->clk);
	pb_varint(b, CSC_INCREMENTAL, 1);
	pb_end(b, c);
	pb_end(b, cs);
	pb_end(b, pk);
	weft_pfe_describe_slice_counters(e);
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
	weft_walk_thread_plain(p, e->th, j->t->last_ns, on_event, on_plain, e, &e->st, &e->buf, &e->cap);
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

static void header(const struct weft_trace *t, const struct proc_images *im, const struct weft_mem *mem,
		   const struct weft_sys *sys, const struct weft_gpu *gpu, struct pb *b)
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
	uint64_t latest = 0; /* the last start of a process */
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		size_t from = b->n; /* this process's packets (their start; --machines) */
		if (im->last[i] == p) { /* one descriptor per pid: its last image's name */
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
				weft_pfe_describe(b, 1, track_uuid(p->pid, (unsigned)tr), proc_uuid(p->pid), p->tracks[tr], 0);
		for (size_t id = 0; id < p->nsites; id++) {
			const struct weft_site_def *s = &p->sites[id];
			if (!s->defined || s->kind != WEFT_KIND_COUNTER)
				continue;
			weft_pfe_describe_counter(b, 1, counter_uuid(p->pid, (uint32_t)id), proc_uuid(p->pid), s->name,
						  s->unit);
		}
		const struct weft_mem_proc *mp = weft_mem_for(mem, p);
		if (mp)
			weft_pf_mem_tracks(b, mp, proc_uuid(p->pid), mix);
		weft_pf_snapshots(b, p, proc_uuid(p->pid)); /* snapshot requests (format 1.8) */
		uint64_t start = im->start[i];
		if (start > latest)
			latest = start;
		amend_packets(b, from, start, t->machines ? p->host_index : 0);
	}
	/* (the tracks of processes' samplers and GPUs: after every process's start) */
	size_t from = b->n;
	weft_pf_sys_tracks(b, sys, mix, proc_uuid);
	weft_pf_gpu_tracks(b, gpu, sys, mix);
	amend_packets(b, from, latest, 0);
}

static void drain_cb(void *ctx)
{
	drain(ctx, 1u << 20);
}

/* Part `part` of nparts: the threads of a run of whole processes, cut where the events before
 * them reach part/nparts of the trace's (the first part also has the header, the last the
 * sequences after the threads'). [*k0, *k1) in the order of every thread of every process. */
static void part_range(const struct weft_trace *t, unsigned part, unsigned nparts, size_t *k0, size_t *k1,
		       size_t *p0, size_t *p1)
{
	uint64_t total = 0, before = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		total += weft_proc_events(&t->procs[i]);
	size_t k = 0;
	*k0 = *k1 = *p0 = *p1 = 0;
	int in = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		/* the process goes to the part its first event falls in */
		unsigned owner = total ? (unsigned)((unsigned __int128)before * nparts / total) : 0;
		if (owner >= nparts)
			owner = nparts - 1;
		if (owner == part && !in) {
			*k0 = k;
			*p0 = i;
			in = 1;
		}
		if (owner > part) {
			if (!in) {
				*k0 = k;
				*p0 = i;
			}
			*k1 = k;
			*p1 = i;
			return;
		}
		before += weft_proc_events(&t->procs[i]);
		k += t->procs[i].nthreads;
	}
	if (!in) {
		*k0 = k;
		*p0 = t->nprocs;
	}
	*k1 = k;
	*p1 = t->nprocs;
}

/* A trace opened with weft_trace_defer_symbols (a rank of a conversion run as a job): the
 * function addresses of its processes named; of every process where the analyses read other
 * processes' slices (memory, the system sampler, the GPU). */
static void symbolize_part(struct weft_trace *t, size_t p0, size_t p1)
{
	int all = 0;
	for (size_t i = 0; i < t->nprocs && !all; i++)
		all = t->procs[i].mem_recorded || t->procs[i].nsys_chans || t->procs[i].has_gpu;
	for (size_t i = all ? 0 : p0; i < (all ? t->nprocs : p1); i++)
		if (t->procs[i].maps_len && !t->procs[i].symbolized)
			weft_symbolize(t, &t->procs[i]);
}

int weft_export_pftrace(const struct weft_trace *t, FILE *out, int jobs, int deflate,
			struct weft_export_summary *sum, char *err, size_t errlen)
{
	return weft_export_pftrace_part(t, out, jobs, deflate, 0, 1, sum, err, errlen);
}

int weft_export_pftrace_part(const struct weft_trace *t, FILE *out, int jobs, int deflate, unsigned part,
			     unsigned nparts, struct weft_export_summary *sum, char *err, size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].nthreads;
	size_t k0, k1, p0, p1;
	part_range(t, part, nparts ? nparts : 1, &k0, &k1, &p0, &p1);
	symbolize_part((struct weft_trace *)t, p0, p1);
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
	int first = part == 0, last = part + 1 >= nparts;
	struct weft_pf_out *file = weft_pf_out_open(out, deflate, k1 - k0, jobs > 1 ? jobs : 0);
	if (!file)
		weft_oom("writing the .pftrace");
	struct proc_images im;
	proc_images_build(t, &im);
	size_t k = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		const struct weft_sys_proc *sp = weft_sys_for(sys, p);
		build_cats(p, &cats[i]);
		for (size_t h = 0; h < p->nthreads; h++, k++) {
			encs[k].p = p;
			encs[k].last = im.last[i];
			encs[k].th = &p->threads[h];
			encs[k].cats = &cats[i];
			encs[k].file = file;
			encs[k].seq = (uint32_t)(k + 2); /* (the whole trace's numbering, whatever the part) */
			encs[k].so.order = k - k0;
			encs[k].tuuid = thread_uuid(p->pid, p->threads[h].tid, p->threads[h].serial);
			encs[k].mem = weft_mem_for(mem, p);
			encs[k].big_alloc = mem->big_alloc;
			encs[k].sys = sp && sp->slice_min_ns ? sp : NULL;
			encs[k].machine = t->machines ? p->host_index : 0;

		}
	}
	for (size_t i = p0; i < p1; i++) /* drops not attributed to a thread count too */
		sum->dropped += weft_proc_dropped(&t->procs[i]);
	/* descriptors of processes, named tracks and counters first, then the threads */
	struct seq_enc head = {.file = file, .so.order = SIZE_MAX};
	if (first) {
		header(t, &im, mem, sys, gpu, &head.out);
		drain(&head, 1);
		weft_pf_out_flush(file, &head.so); /* in the file before the first thread's sequence */
	}
	struct job j = {t, encs + k0, weft_pf_sched_scan(t)};
	weft_parallel_for(k1 - k0, jobs, encode_thread, &j);
	weft_pf_sched_ends_free((struct weft_pf_sched_ends *)j.sched_ends);
	/* memory counters and heap profiles, each on sequences of their own after the threads' */
	uint32_t seq = (uint32_t)n + 2;
	for (size_t i = 0; last && i < t->nprocs; i++) {
		const struct weft_mem_proc *mp = weft_mem_for(mem, &t->procs[i]);
		if (!mp)
			continue;
		head.machine = t->machines ? t->procs[i].host_index : 0;
		weft_pf_mem_counters(&head.out, mp, seq++, mix, drain_cb, &head);
		seq += weft_pf_mem_profiles(&head.out, mp, seq, drain_cb, &head);
		drain(&head, 1);
	}
	head.machine = 0;
	for (size_t i = 0; last && sys && i < sys->nprocs; i++) /* the sampler's readings, a sequence per process */
		weft_pf_sys_counters(&head.out, &sys->procs[i], seq++, mix, drain_cb, &head);
	for (size_t i = 0; last && gpu && i < gpu->nprocs; i++) /* kernels, copies, memsets: a sequence per process */
		weft_pf_gpu_events(&head.out, gpu, &gpu->procs[i], seq++, mix, drain_cb, &head);
	drain(&head, 1);
	weft_pf_out_seq_done(file, &head.so);
	weft_gpu_free(gpu);
	free(head.out.p);
	weft_mem_free(mem);
	weft_sys_free(sys);
	for (size_t i = k0; i < k1; i++)
		weft_export_summary_add(sum, &encs[i].st);
	for (size_t i = 0; i < t->nprocs; i++) {
		free(cats[i].iid);
		free(cats[i].names);
	}
	free(cats);
	free(encs);
	proc_images_free(&im);
	rc = weft_pf_out_close(file, &sum->bytes);
	if (!rc && fflush(out))
		rc = -errno;
	if (rc)
		snprintf(err, errlen, "writing the trace failed: %s", strerror(-rc));
	return weft_export_result(sum, rc, err, errlen);
}
