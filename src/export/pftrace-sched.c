/*
 * pftrace-sched.c - SCHED records (docs/format.md) into a .pftrace. Tracepoint records go
 * out as FtraceEventBundle packets, one per run of records of one CPU (a reader drains one
 * CPU's ring after another, so runs are long), with the fields of
 * ../shared/perfetto/layouts/sched_minimal.txtpb: sched_switch, sched_waking, task_newtask,
 * task_rename. Task names come from the stream's COMM records (a tid -> name table per
 * sequence; pid 0 is "swapper/CPU"). The own-switch records of the fallback (no root) are
 * collected, sorted per thread, and written at the end as slices "on CPU" (argument cpu)
 * and "off CPU" (argument reason: preempted or blocked) on a track per thread under its
 * process, named after the thread.
 *
 * A CPU's switches form a chain: each one's previous task is the one the switch before put on
 * the CPU, and trace_processor counts a break as an error (mismatched_sched_switch_tids) and
 * gives the broken turn a negative length. Some kernels leave switches out (collect/sched.c
 * counts them at recording: a VM's kernel that never reports a switch out of its agent's
 * threads, now and then one out of idle), so a break is closed here with the switch that is
 * missing: from the task the chain had on the CPU to the one the next switch takes off it, at
 * the first record on that CPU made by that task (a waking, new task or rename it did), else
 * at the next switch. Its previous state is 0 (runnable): the kernel did not say.
 */
#include "export/pftrace-sched.h"
#include "collect/sched_tp.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
	TRACE_PACKET = 1, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11, TP_FTRACE = 1,
	TP_SYSTEM_INFO = 45, TP_TRACK_DESCRIPTOR = 60,
	SI_UTSNAME = 1, UTS_SYSNAME = 1, UTS_RELEASE = 3, UTS_MACHINE = 4,
	FB_CPU = 1, FB_EVENT = 2,
	FE_TIMESTAMP = 1, FE_PID = 2, FE_SWITCH = 4, FE_WAKING = 20, FE_NEWTASK = 235, FE_RENAME = 236,
	TD_UUID = 1, TD_NAME = 2, TD_PARENT = 5,
	TE_DEBUG = 4, TE_TYPE = 9, TE_TRACK_UUID = 11, TE_NAME = 23,
	DA_UINT = 3, DA_STRING = 6, DA_NAME = 10,
	TYPE_BEGIN = 1, TYPE_END = 2,
};

struct own { uint64_t ts; uint32_t tid, cpu; uint8_t in, preempt; };

/* One CPU's switch chain (see the top). */
struct chain {
	uint32_t on_cpu;  /* the task the last switch put on the CPU */
	int16_t prio;     /* ... its priority then */
	uint8_t known;    /* a switch was seen (or the stream before left one: gap) */
	uint8_t has_sign; /* a record since then was made by another task: */
	uint32_t sign;    /* that task */
	uint64_t sign_ts; /* and when */
	uint8_t gap;      /* the switch was another stream's, whose recording ended at gap_from */
	uint64_t gap_from;
};

#define MAX_CHAIN_CPUS 65536 /* beyond: a damaged record; no chain kept */
#define IDLE_PRIO 120        /* the idle task's, as sched_switch gives it */

struct weft_pf_sched {
	/* the tid -> name table: open addressing, key tid + 1 */
	uint32_t *key;
	char (*name)[16];
	size_t cap, n;
	/* the open bundle */
	int open;
	size_t pk, bundle;
	uint32_t cpu;
	/* the CPUs' switch chains, by CPU */
	struct chain *chain;
	size_t nchain;
	/* own switches, written at the end */
	struct own *own;
	size_t nown, owncap;
};

static void oom(void)
{
	weft_oom("writing the .pftrace");
}

static size_t slot(const struct weft_pf_sched *s, uint32_t tid)
{
	size_t i = (tid * 2654435761u) & (s->cap - 1);
	while (s->key[i] && s->key[i] != tid + 1)
		i = (i + 1) & (s->cap - 1);
	return i;
}

static void set_name(struct weft_pf_sched *s, uint32_t tid, const char *name)
{
	if ((s->n + 1) * 2 > s->cap) {
		struct weft_pf_sched old = *s;
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->key = calloc(s->cap, sizeof(*s->key));
		s->name = calloc(s->cap, sizeof(*s->name));
		if (!s->key || !s->name)
			oom();
		s->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.key[i]) {
				size_t k = slot(s, old.key[i] - 1);
				s->key[k] = old.key[i];
				memcpy(s->name[k], old.name[i], 16);
				s->n++;
			}
		free(old.key);
		free(old.name);
	}
	size_t k = slot(s, tid);
	if (!s->key[k]) {
		s->key[k] = tid + 1;
		s->n++;
	}
	memset(s->name[k], 0, 16);
	memcpy(s->name[k], name, strnlen(name, 15));
}

static const char *get_name(const struct weft_pf_sched *s, uint32_t tid, uint32_t cpu, char buf[32])
{
	if (!tid) {
		snprintf(buf, 32, "swapper/%u", cpu);
		return buf;
	}
	if (s->cap) {
		size_t k = slot(s, tid);
		if (s->key[k]) {
			memcpy(buf, s->name[k], 16);
			buf[16] = 0;
			return buf;
		}
	}
	return "";
}

void weft_pf_sched_close(struct weft_pf_sched *s, struct pb *b)
{
	if (!s || !s->open)
		return;
	pb_end(b, s->bundle);
	pb_end(b, s->pk);
	s->open = 0;
}

static void bundle_for(struct weft_pf_sched *s, struct pb *b, uint32_t seq, uint32_t cpu)
{
	if (s->open && (s->cpu != cpu || b->n - s->pk > (256u << 10)))
		weft_pf_sched_close(s, b);
	if (s->open)
		return;
	s->pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, seq);
	s->bundle = pb_begin(b, TP_FTRACE);
	pb_varint(b, FB_CPU, cpu);
	s->cpu = cpu;
	s->open = 1;
}

static int64_t s16(uint64_t v) { return (int16_t)(uint16_t)v; }

static struct chain *chain_of(struct weft_pf_sched *s, uint32_t cpu)
{
	if (cpu >= MAX_CHAIN_CPUS)
		return NULL;
	if (cpu >= s->nchain) {
		size_t n = s->nchain ? s->nchain : 16;
		while (n <= cpu)
			n *= 2;
		struct chain *c = realloc(s->chain, n * sizeof(*c));
		if (!c)
			oom();
		memset(c + s->nchain, 0, (n - s->nchain) * sizeof(*c));
		s->chain = c;
		s->nchain = n;
	}
	return &s->chain[cpu];
}

/* A record made by task `by` on the CPU (not a switch): a sign that it runs there. */
static void chain_sign(struct weft_pf_sched *s, uint32_t cpu, uint32_t by, uint64_t ts)
{
	struct chain *c = chain_of(s, cpu);
	if (c && c->known && !c->has_sign && by != c->on_cpu) {
		c->has_sign = 1;
		c->sign = by;
		c->sign_ts = ts;
	}
}

static void switch_fields(struct pb *b, const char *prev_comm, uint32_t prev, int64_t prev_prio, uint64_t prev_state,
			  const char *next_comm, uint32_t next, int64_t next_prio)
{
	size_t m = pb_begin(b, FE_SWITCH);
	pb_string(b, 1, prev_comm);
	pb_varint(b, 2, prev);
	pb_varint(b, 3, (uint64_t)prev_prio);
	pb_varint(b, 4, prev_state);
	pb_string(b, 5, next_comm);
	pb_varint(b, 6, next);
	pb_varint(b, 7, (uint64_t)next_prio);
	pb_end(b, m);
}

/* A switch weft puts in (previous state 0, runnable: the kernel did not say). */
static void put_switch(struct weft_pf_sched *s, struct pb *b, uint32_t cpu, uint64_t at, uint32_t from,
		       int64_t from_prio, uint32_t to, int64_t to_prio)
{
	char a[32], n[32];
	size_t fe = pb_begin(b, FB_EVENT);
	pb_varint(b, FE_TIMESTAMP, at);
	pb_varint(b, FE_PID, from);
	switch_fields(b, get_name(s, from, cpu, a), from, from_prio, 0, get_name(s, to, cpu, n), to, to_prio);
	pb_end(b, fe);
}

/* Before the switch at ts that takes `prev` (priority prio) off the CPU: the switch that put
 * it there, when the kernel did not report it. Into the open bundle of that CPU. After a gap
 * between two streams (nothing recorded), the CPU is idle in the gap instead. */
static void chain_close(struct weft_pf_sched *s, struct pb *b, uint32_t cpu, uint64_t ts, uint32_t prev, int64_t prio)
{
	struct chain *c = chain_of(s, cpu);
	if (!c || !c->known || c->on_cpu == prev)
		return;
	uint64_t at = c->has_sign && c->sign == prev && c->sign_ts < ts ? c->sign_ts : ts;
	if (c->gap && c->gap_from < at) {
		if (c->on_cpu)
			put_switch(s, b, cpu, c->gap_from, c->on_cpu, c->prio, 0, IDLE_PRIO);
		if (prev)
			put_switch(s, b, cpu, at, 0, IDLE_PRIO, prev, prio);
		return;
	}
	put_switch(s, b, cpu, at, c->on_cpu, c->prio, prev, prio);
}

/* ---- the chains across streams ---- */

struct cpu_end {
	uint64_t first_ts, last_ts; /* the stream's first and last record on the CPU (0: none) */
	uint64_t switch_ts;         /* its last switch there (0: none), */
	uint32_t next;              /* the task that put on the CPU, */
	int16_t prio;               /* its priority */
	char name[16];              /* and name */
};

struct stream_end {
	const struct weft_thread_data *th;
	uint64_t end;                /* its last record on any CPU: its readers stopped after it */
	struct cpu_end *cpu;         /* by CPU */
	size_t ncpu;
	struct weft_pf_sched *names; /* (while scanning: the stream's COMM records) */
};

struct weft_pf_sched_ends {
	struct stream_end *s;
	size_t n;
};

static int is_tp_stream(const struct weft_proc *p, const struct weft_thread_data *th)
{
	/* only the reference host's: another host's CPUs would land on this one's (format/hosts.h) */
	return p->has_sched && p->sched_mode == 1 && !p->host_index && th->name && !strncmp(th->name, "weft-sched", 10);
}

static void scan_event(void *ud, const struct weft_ev *ev)
{
	struct stream_end *se = ud;
	const uint64_t *x = ev->frames;
	if (ev->kind != WEFT_EV_SCHED || ev->id >= MAX_CHAIN_CPUS)
		return;
	if (ev->mfn == WEFT_SCHED_COMM || ev->mfn == WEFT_SCHED_RENAME) {
		if (ev->nframes >= 3) {
			char name[17] = "";
			memcpy(name, &x[1], 16);
			set_name(se->names, (uint32_t)x[0], name);
		}
		if (ev->mfn == WEFT_SCHED_COMM)
			return;
	}
	if (ev->mfn < WEFT_SCHED_SWITCH || ev->mfn > WEFT_SCHED_RENAME || ev->nframes < 2)
		return;
	if (ev->id >= se->ncpu) {
		size_t n = se->ncpu ? se->ncpu : 16;
		while (n <= ev->id)
			n *= 2;
		struct cpu_end *c = realloc(se->cpu, n * sizeof(*c));
		if (!c)
			oom();
		memset(c + se->ncpu, 0, (n - se->ncpu) * sizeof(*c));
		se->cpu = c;
		se->ncpu = n;
	}
	struct cpu_end *c = &se->cpu[ev->id];
	if (!c->first_ts || ev->ts < c->first_ts)
		c->first_ts = ev->ts;
	if (ev->ts > c->last_ts)
		c->last_ts = ev->ts;
	if (ev->ts > se->end)
		se->end = ev->ts;
	if (ev->mfn == WEFT_SCHED_SWITCH && ev->ts >= c->switch_ts) {
		char buf[32];
		c->switch_ts = ev->ts;
		c->next = (uint32_t)(x[0] >> 32);
		c->prio = (int16_t)s16(x[1] >> 48);
		memcpy(c->name, get_name(se->names, c->next, ev->id, buf), 16);
	}
}

struct weft_pf_sched_ends *weft_pf_sched_scan(const struct weft_trace *t)
{
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t k = 0; k < t->procs[i].nthreads; k++)
			n += (size_t)is_tp_stream(&t->procs[i], &t->procs[i].threads[k]);
	if (n < 2)
		return NULL;
	struct weft_pf_sched_ends *e = calloc(1, sizeof(*e));
	if (!e || !(e->s = calloc(n, sizeof(*e->s))))
		oom();
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t k = 0; k < t->procs[i].nthreads; k++) {
			const struct weft_proc *p = &t->procs[i];
			if (!is_tp_stream(p, &p->threads[k]))
				continue;
			struct stream_end *se = &e->s[e->n++];
			struct weft_walk_stats st;
			memset(&st, 0, sizeof(st));
			se->th = &p->threads[k];
			if (!(se->names = calloc(1, sizeof(*se->names))))
				oom();
			weft_walk_thread(p, se->th, t->last_ns, scan_event, se, &st, &buf, &cap);
			free(se->names->key);
			free(se->names->name);
			free(se->names);
			se->names = NULL;
		}
	free(buf);
	return e;
}

void weft_pf_sched_ends_free(struct weft_pf_sched_ends *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n; i++)
		free(e->s[i].cpu);
	free(e->s);
	free(e);
}

void weft_pf_sched_join(struct weft_pf_sched **sp, const struct weft_pf_sched_ends *e, const struct weft_proc *p,
			const struct weft_thread_data *th)
{
	const struct stream_end *me = NULL;
	for (size_t i = 0; e && i < e->n && !me; i++)
		if (e->s[i].th == th)
			me = &e->s[i];
	if (!me || !is_tp_stream(p, th))
		return;
	for (size_t cpu = 0; cpu < me->ncpu; cpu++) {
		uint64_t first = me->cpu[cpu].first_ts;
		const struct cpu_end *before = NULL; /* the last switch on this CPU of the stream before */
		const struct stream_end *from = NULL;
		for (size_t i = 0; first && i < e->n; i++) {
			const struct stream_end *o = &e->s[i];
			if (o == me || cpu >= o->ncpu || !o->cpu[cpu].switch_ts || o->cpu[cpu].last_ts >= first)
				continue;
			if (!before || o->cpu[cpu].last_ts > before->last_ts) {
				before = &o->cpu[cpu];
				from = o;
			}
		}
		if (!before)
			continue;
		if (!*sp && !(*sp = calloc(1, sizeof(**sp))))
			oom();
		struct weft_pf_sched *s = *sp;
		struct chain *c = chain_of(s, (uint32_t)cpu);
		if (!c)
			continue;
		*c = (struct chain){.on_cpu = before->next, .prio = before->prio, .known = 1, .gap = 1,
				    .gap_from = from->end + 1}; /* (after its last record, not at it: a tie
								  * between sequences has no order) */
		char name[17] = "";
		memcpy(name, before->name, 16);
		if (before->next && name[0])
			set_name(s, before->next, name);
	}
}

void weft_pf_sched_event(struct weft_pf_sched **sp, struct pb *b, uint32_t seq, const struct weft_ev *ev)
{
	if (!*sp && !(*sp = calloc(1, sizeof(**sp))))
		oom();
	struct weft_pf_sched *s = *sp;
	const uint64_t *x = ev->frames;
	unsigned nx = ev->nframes;
	uint32_t cpu = ev->id;
	char a[32], c[32];
	switch (ev->mfn) {
	case WEFT_SCHED_COMM:
		if (nx >= 3) {
			char name[17] = "";
			memcpy(name, &x[1], 16);
			set_name(s, (uint32_t)x[0], name);
		}
		return;
	case WEFT_SCHED_OUT:
	case WEFT_SCHED_IN:
		if (nx < 1)
			return;
		if (s->nown == s->owncap) {
			s->owncap = s->owncap ? s->owncap * 2 : 1024;
			if (!(s->own = realloc(s->own, s->owncap * sizeof(*s->own))))
				oom();
		}
		s->own[s->nown++] = (struct own){ev->ts, (uint32_t)x[0], cpu, ev->mfn == WEFT_SCHED_IN,
						 (uint8_t)((x[0] >> 32) & 1)};
		return;
	case WEFT_SCHED_SWITCH: case WEFT_SCHED_WAKING: case WEFT_SCHED_NEWTASK:
		if (nx < 2)
			return;
		break;
	case WEFT_SCHED_RENAME:
		if (nx < 3)
			return;
		break;
	default:
		return; /* a kind of a newer minor version */
	}
	bundle_for(s, b, seq, cpu);
	uint32_t lo = (uint32_t)x[0], hi = (uint32_t)(x[0] >> 32);
	if (ev->mfn == WEFT_SCHED_SWITCH) /* a missing switch before it (at one time, trace_processor keeps the order) */
		chain_close(s, b, cpu, ev->ts, lo, s16(x[1] >> 32));
	size_t fe = pb_begin(b, FB_EVENT);
	pb_varint(b, FE_TIMESTAMP, ev->ts);
	size_t m;
	switch (ev->mfn) {
	case WEFT_SCHED_SWITCH: {
		pb_varint(b, FE_PID, lo);
		switch_fields(b, get_name(s, lo, cpu, a), lo, s16(x[1] >> 32), (uint32_t)x[1], get_name(s, hi, cpu, c), hi,
			      s16(x[1] >> 48));
		struct chain *ch = chain_of(s, cpu);
		if (ch)
			*ch = (struct chain){.on_cpu = hi, .prio = (int16_t)s16(x[1] >> 48), .known = 1};
		break;
	}
	case WEFT_SCHED_WAKING:
		chain_sign(s, cpu, (uint32_t)(x[1] >> 32), ev->ts);
		pb_varint(b, FE_PID, (uint32_t)(x[1] >> 32));
		m = pb_begin(b, FE_WAKING);
		pb_string(b, 1, get_name(s, lo, cpu, a));
		pb_varint(b, 2, lo);
		pb_varint(b, 3, (uint64_t)s16(x[1]));
		pb_varint(b, 4, 1);
		pb_varint(b, 5, hi);
		pb_end(b, m);
		break;
	case WEFT_SCHED_NEWTASK:
		chain_sign(s, cpu, hi, ev->ts);
		pb_varint(b, FE_PID, hi);
		m = pb_begin(b, FE_NEWTASK);
		pb_varint(b, 1, lo);
		pb_string(b, 2, get_name(s, lo, cpu, a));
		pb_varint(b, 3, x[1]);
		pb_varint(b, 4, 0);
		pb_end(b, m);
		break;
	case WEFT_SCHED_RENAME: {
		char name[17] = "";
		memcpy(name, &x[1], 16);
		chain_sign(s, cpu, hi, ev->ts);
		pb_varint(b, FE_PID, hi);
		m = pb_begin(b, FE_RENAME);
		pb_varint(b, 1, lo);
		pb_string(b, 2, get_name(s, lo, cpu, a));
		pb_string(b, 3, name);
		pb_varint(b, 4, 0);
		pb_end(b, m);
		set_name(s, lo, name);
		break;
	}
	}
	pb_end(b, fe);
}

static int by_tid_ts(const void *pa, const void *pb_)
{
	const struct own *a = pa, *b = pb_;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return (int)a->in - (int)b->in; /* an out and an in at once: the out first */
}

static void slice(struct pb *b, uint32_t seq, uint64_t ts, uint64_t track, int type, const char *name,
		  const char *key, uint64_t num, const char *str)
{
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_TIMESTAMP, ts);
	pb_varint(b, TP_SEQ_ID, seq);
	size_t te = pb_begin(b, TP_TRACK_EVENT);
	pb_varint(b, TE_TYPE, (uint64_t)type);
	pb_varint(b, TE_TRACK_UUID, track);
	if (name)
		pb_string(b, TE_NAME, name);
	if (key) {
		size_t m = pb_begin(b, TE_DEBUG);
		pb_string(b, DA_NAME, key);
		if (str)
			pb_string(b, DA_STRING, str);
		else
			pb_varint(b, DA_UINT, num);
		pb_end(b, m);
	}
	pb_end(b, te);
	pb_end(b, pk);
}

static int by_cpu_ts(const void *pa, const void *pb_)
{
	const struct own *a = pa, *b = pb_;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu ? -1 : 1;
	return a->ts < b->ts ? -1 : a->ts > b->ts;
}

/* A thread that exits is never switched out (its event goes first): its last time on the CPU
 * ends at the next record of another of the program's threads on that CPU, else at the end. */
static uint64_t left_cpu(const struct own *bycpu, size_t n, const struct own *o, uint64_t last_ns)
{
	size_t lo = 0, hi = n;
	while (lo < hi) { /* the first record on o's CPU after o */
		size_t mid = (lo + hi) / 2;
		if (bycpu[mid].cpu < o->cpu || (bycpu[mid].cpu == o->cpu && bycpu[mid].ts <= o->ts))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && bycpu[lo].cpu == o->cpu ? bycpu[lo].ts : last_ns > o->ts ? last_ns : o->ts;
}

void weft_pf_sched_finish(struct weft_pf_sched *s, struct pb *b, uint32_t seq, const struct weft_proc *p,
			  uint64_t proc_uuid, uint64_t last_ns, uint64_t (*mix)(uint64_t, uint64_t))
{
	if (!s)
		return;
	weft_pf_sched_close(s, b);
	struct own *bycpu = s->nown ? malloc(s->nown * sizeof(*bycpu)) : NULL;
	if (s->nown && !bycpu)
		oom();
	if (s->nown) { /* (qsort and memcpy of NULL: undefined even for 0) */
		memcpy(bycpu, s->own, s->nown * sizeof(*bycpu));
		qsort(bycpu, s->nown, sizeof(*bycpu), by_cpu_ts);
		qsort(s->own, s->nown, sizeof(*s->own), by_tid_ts);
	}
	for (size_t i = 0; i < s->nown;) {
		uint32_t tid = s->own[i].tid;
		uint64_t track = mix(mix(7, (uint64_t)(uint32_t)p->pid), tid);
		const char *tn = tid == (uint32_t)p->pid && p->name ? p->name : "";
		for (size_t k = 0; k < p->nthreads; k++)
			if (p->threads[k].tid == tid && p->threads[k].name)
				tn = p->threads[k].name;
		char name[300];
		if (*tn)
			snprintf(name, sizeof(name), "%s %u: on/off CPU", tn, tid);
		else /* a thread that wrote no event and has no name: said as one */
			snprintf(name, sizeof(name), "thread %u: on/off CPU", tid);
		size_t pk = pb_begin(b, TRACE_PACKET);
		pb_varint(b, TP_SEQ_ID, seq);
		size_t td = pb_begin(b, TP_TRACK_DESCRIPTOR);
		pb_varint(b, TD_UUID, track);
		pb_varint(b, TD_PARENT, proc_uuid);
		pb_string(b, TD_NAME, name);
		pb_end(b, td);
		pb_end(b, pk);
		int open = 0; /* 0 none, 1 on CPU, 2 off CPU */
		uint64_t ts = 0;
		const struct own *last_in = NULL;
		for (; i < s->nown && s->own[i].tid == tid; i++) {
			const struct own *o = &s->own[i];
			ts = o->ts;
			if (o->in)
				last_in = o;
			if (o->in && open == 1)
				continue; /* two ins in a row: a lost out */
			if (!o->in && open == 2)
				continue;
			if (open)
				slice(b, seq, o->ts, track, TYPE_END, NULL, NULL, 0, NULL);
			if (o->in) {
				slice(b, seq, o->ts, track, TYPE_BEGIN, "on CPU", "cpu", o->cpu, NULL);
				open = 1;
			} else if (i + 1 < s->nown && s->own[i + 1].tid == tid) { /* the last out: nothing after */
				slice(b, seq, o->ts, track, TYPE_BEGIN, "off CPU", "reason", 0,
				      o->preempt ? "preempted" : "blocked");
				open = 2;
			} else {
				open = 0;
			}
		}
		if (open == 1 && last_in)
			slice(b, seq, left_cpu(bycpu, s->nown, last_in, last_ns), track, TYPE_END, NULL, NULL, 0, NULL);
		else if (open)
			slice(b, seq, last_ns > ts ? last_ns : ts, track, TYPE_END, NULL, NULL, 0, NULL);
	}
	free(bycpu);
	free(s->own);
	free(s->chain);
	free(s->key);
	free(s->name);
	free(s);
}

void weft_pf_sched_system_info(struct pb *b, const struct weft_trace *t)
{
	const struct weft_proc *p = NULL;
	for (size_t i = 0; i < t->nprocs && !p; i++)
		if (t->procs[i].has_sched && t->procs[i].sched_mode == 1 && !t->procs[i].host_index)
			p = &t->procs[i];
	if (!p)
		return;
	size_t pk = pb_begin(b, TRACE_PACKET);
	pb_varint(b, TP_SEQ_ID, 1);
	size_t si = pb_begin(b, TP_SYSTEM_INFO);
	size_t u = pb_begin(b, SI_UTSNAME);
	pb_string(b, UTS_SYSNAME, "Linux");
	pb_string(b, UTS_RELEASE, p->sched_release);
	pb_string(b, UTS_MACHINE, p->sched_machine);
	pb_end(b, u);
	pb_end(b, si);
	pb_end(b, pk);
}
