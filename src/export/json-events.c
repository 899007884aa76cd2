/*
 * json-events.c - one weft event as Chrome JSON text: B/E or X events with name, category and
 * args, instants, counters, flows (inline "bind" ids or separate s/f events), memory counters
 * and snapshot marks. Pass 1 learns every slice's duration and the lanes and formats what lies
 * in the stream's past (complete slices) into a side list; pass 2 formats the rest, chunk by
 * chunk (json.c merges them).
 */
#include "export/json-internal.h"
#include "export/json-gpu.h"
#include "format/format.h"
#include "format/pack.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct jent *add(struct jlist *L, uint64_t ts, unsigned flags)
{
	if (L->nents == L->cap) {
		L->cap = L->cap ? L->cap * 2 : 1024;
		L->ents = realloc(L->ents, L->cap * sizeof(*L->ents));
		if (!L->ents)
			weft_oom("writing JSON");
	}
	if (L->nents && ts < L->ents[L->nents - 1].ts)
		L->unsorted = 1;
	struct jent *e = &L->ents[L->nents++];
	e->ts = ts;
	e->off = L->text.n;
	e->len = 0;
	e->flags = flags;
	PUTS(&L->text, ",\n");
	return e;
}

static void close_entry(struct jlist *L, struct jent *e)
{
	e->len = (uint32_t)(L->text.n - e->off);
}

static struct jstack *stack_for(struct jthread *j, unsigned track)
{
	for (size_t i = 0; i < j->nstacks; i++)
		if (j->stacks[i].track == track)
			return &j->stacks[i];
	j->stacks = realloc(j->stacks, (j->nstacks + 1) * sizeof(*j->stacks));
	if (!j->stacks)
		weft_oom("writing JSON");
	struct jstack *s = &j->stacks[j->nstacks++];
	memset(s, 0, sizeof(*s));
	s->track = track;
	return s;
}

uint64_t weft_json_lane_tid(const struct jthread *j, unsigned track)
{
	return track ? 0x40000000u + ((uint64_t)track << 12) + (j->thread_index & 0xfff) : j->th->tid;
}

static void note_lane(struct jthread *j, unsigned track)
{
	for (size_t i = 0; i < j->nlanes; i++)
		if (j->lanes[i] == track)
			return;
	j->lanes = realloc(j->lanes, (j->nlanes + 1) * sizeof(unsigned));
	if (!j->lanes)
		weft_oom("writing JSON");
	j->lanes[j->nlanes++] = track;
}

/* put_us for the thread's events: the whole seconds' digits made once per second */
static inline void put_ts(struct jthread *j, struct pb *b, uint64_t ns)
{
	static const char pairs[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				       "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				       "8081828384858687888990919293949596979899";
	uint64_t us = ns / 1000, hi = us / 1000000;
	if (!hi) {
		put_us(b, ns);
		return;
	}
	if (hi != j->ts_hi || !j->ts_n) {
		struct pb t = {.p = (uint8_t *)j->ts_digits, .n = 0, .cap = sizeof(j->ts_digits)};
		put_u64(&t, hi); /* at most 20 digits: no growth */
		j->ts_n = (unsigned)t.n;
		j->ts_hi = hi;
	}
	unsigned lo = (unsigned)(us - hi * 1000000), r = (unsigned)(ns - us * 1000);
	pb_reserve(b, 40);
	uint8_t *o = b->p + b->n;
	memcpy(o, j->ts_digits, 16);
	if (j->ts_n > 16)
		memcpy(o + 16, j->ts_digits + 16, 8);
	o += j->ts_n;
	memcpy(o, pairs + (lo / 10000) * 2, 2);
	memcpy(o + 2, pairs + (lo / 100 % 100) * 2, 2);
	memcpy(o + 4, pairs + (lo % 100) * 2, 2);
	o[6] = '.';
	o[7] = (uint8_t)('0' + r / 100);
	memcpy(o + 8, pairs + (r % 100) * 2, 2);
	b->n = (size_t)(o + 10 - b->p);
}

/* `{"ph":"P","pid":..,"tid":..,"ts":..` (no tid for counters): on the thread's own row from the
 * prefix made once (weft_json_thread_prefix), on a lane in full */
static void head(struct jthread *j, struct pb *b, const char *ph, uint64_t ts, unsigned track, int with_tid)
{
	if (with_tid && !track && j->npre) {
		pb_reserve(b, 8 + sizeof(j->pre));
		uint8_t *o = b->p + b->n;
		memcpy(o, "{\"ph\":\"", 7);
		o[7] = (uint8_t)ph[0];
		memcpy(o + 8, j->pre, sizeof(j->pre));
		b->n += 8 + j->npre;
		put_ts(j, b, ts);
		return;
	}
	PUTS(b, "{\"ph\":\"");
	put(b, ph, strlen(ph));
	PUTS(b, "\",\"pid\":");
	put_u64(b, (uint64_t)(uint32_t)j->p->pid);
	if (with_tid) {
		PUTS(b, ",\"tid\":");
		put_u64(b, weft_json_lane_tid(j, track));
	}
	PUTS(b, ",\"ts\":");
	put_us(b, ts);
}

void weft_json_thread_prefix(struct jthread *j)
{
	struct pb b = {0};
	PUTS(&b, "\",\"pid\":");
	put_u64(&b, (uint64_t)(uint32_t)j->p->pid);
	PUTS(&b, ",\"tid\":");
	put_u64(&b, weft_json_lane_tid(j, 0));
	PUTS(&b, ",\"ts\":");
	memcpy(j->pre, b.p, b.n); /* at most 2 + 7 + 10 + 7 + 20 + 6 bytes */
	j->npre = (unsigned)b.n;
	free(b.p);
}

static int has_cat(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat[0];
}

static void put_cat(const struct weft_proc *p, struct pb *b, uint32_t id)
{
	if (has_cat(p, id)) {
		PUTS(b, ",\"cat\":");
		put_cstr(b, p->sites[id].cat);
	}
}

/* One site's `,"name":..` and `,"cat":..` as an event of it has them. */
static void site_name(const struct weft_proc *p, struct pb *b, uint32_t id)
{
	PUTS(b, ",\"name\":");
	if (id < p->nsites && p->sites[id].defined)
		put_cstr(b, p->sites[id].name);
	else {
		char name[32];
		snprintf(name, sizeof(name), "site#%u", id);
		put_cstr(b, name);
	}
	put_cat(p, b, id);
}

void weft_json_names_build(const struct weft_proc *p, struct jnames *N)
{
	memset(N, 0, sizeof(*N));
	N->off = malloc((p->nsites + 1) * sizeof(*N->off));
	if (!N->off)
		weft_oom("writing JSON");
	size_t i = 0;
	for (; i < p->nsites && N->text.n < UINT32_MAX / 2; i++) { /* past 2 GB (absurd): per event */
		N->off[i] = (uint32_t)N->text.n;
		site_name(p, &N->text, (uint32_t)i);
	}
	N->off[i] = (uint32_t)N->text.n;
	N->n = i;
	pb_reserve(&N->text, 16); /* put_padded reads past the last */
}

static void name_cat(struct jthread *j, struct pb *b, const struct weft_ev *ev)
{
	const struct jnames *N = j->names;
	if (ev->kind == WEFT_EV_DROPPED) {
		PUTS(b, ",\"name\":\"weft: events dropped\"");
		put_cat(j->p, b, ev->id);
	} else if (N && ev->id < N->n) {
		put_padded(b, N->text.p + N->off[ev->id], N->off[ev->id + 1] - N->off[ev->id]);
	} else {
		site_name(j->p, b, ev->id);
	}
}

/* Writes "key":value pairs; returns how many. */
static unsigned arg_pairs(struct jthread *j, struct pb *b, const struct weft_ev *ev)
{
	const struct weft_proc *p = j->p;
	unsigned n = 0;
	for (unsigned i = 0; i < ev->nargs; i++) {
		const struct weft_ev_arg *a = &ev->args[i];
		if (n++)
			PUTS(b, ",");
		put_cstr(b, a->key < p->nsites && p->sites[a->key].defined ? p->sites[a->key].name : "?");
		PUTS(b, ":");
		switch (a->type) {
		case WEFT_R_ARG_I64: put_i64(b, (int64_t)a->v); break;
		case WEFT_R_ARG_U64: put_u64(b, a->v); break;
		case WEFT_R_ARG_BOOL: if (a->v) PUTS(b, "true"); else PUTS(b, "false"); break;
		case WEFT_R_ARG_F64: { double d; memcpy(&d, &a->v, 8); put_double(b, d); break; }
		case WEFT_R_ARG_PTR: {
			char tmp[24];
			int k = snprintf(tmp, sizeof(tmp), "\"0x%llx\"", (unsigned long long)a->v);
			put(b, tmp, (size_t)k);
			break;
		}
		case WEFT_R_ARG_STR: put_str(b, a->s, strnlen(a->s, a->slen)); break;
		default: PUTS(b, "null"); break;
		}
	}
	if (ev->kind == WEFT_EV_DROPPED) {
		if (n++)
			PUTS(b, ",");
		PUTS(b, "\"dropped_events\":");
		put_u64(b, ev->value);
	}
	return n;
}

/* Arrows. A v1 flow event ("s"/"f") binds to the slice enclosing it on its thread; an async
 * slice is on no thread, so an arrow with an async end is written on the events themselves at
 * both ends (flow v2: bind_id with flow_out/flow_in), one such arrow per event. Pass 1 collects
 * the ids of arrows that touch an async slice; pass 2 looks them up. */
static uint64_t flow_id(const struct weft_ev *ev, unsigned k)
{
	return k < ev->nout ? ev->flows_out[k] : ev->flows_in[k - ev->nout];
}

int weft_json_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Which of the event's arrows goes on the event itself (v2), or -1. */
static int inline_flow(const struct jthread *j, const struct weft_ev *ev, int async)
{
	for (unsigned k = 0; k < ev->nout + ev->nin; k++) {
		uint64_t id = flow_id(ev, k);
		if (async || (j->naset && bsearch(&id, j->aset, j->naset, sizeof(id), weft_json_cmp_u64)))
			return (int)k;
	}
	return -1;
}

static void put_bind(struct pb *b, const struct weft_ev *ev, int k)
{
	if (k < 0)
		return;
	PUTS(b, ",\"bind_id\":");
	put_u64(b, flow_id(ev, (unsigned)k));
	if ((unsigned)k < ev->nout)
		PUTS(b, ",\"flow_out\":true");
	else
		PUTS(b, ",\"flow_in\":true");
}

/* v1 flow events for the event's arrows but the one written on the event (skip). */
static void flows_but(struct jthread *j, struct jlist *L, const struct weft_ev *ev, int skip)
{
	struct pb *b = &L->text;
	for (unsigned k = 0; k < ev->nout + ev->nin; k++) {
		if ((int)k == skip)
			continue;
		int out = k < ev->nout;
		struct jent *e = add(L, ev->ts, 0);
		head(j, b, out ? "s" : "f", ev->ts, ev->track, 1);
		PUTS(b, ",\"name\":\"flow\",\"cat\":\"flow\",\"id\":");
		weft_json_put_flow_id(b, flow_id(ev, k));
		if (!out)
			PUTS(b, ",\"bp\":\"e\"");
		PUTS(b, "}");
		close_entry(L, e);
	}
}

static void flows(struct jthread *j, struct jlist *L, const struct weft_ev *ev)
{
	flows_but(j, L, ev, -1);
}

static void simple_bind(struct jthread *j, struct jlist *L, const struct weft_ev *ev, const char *ph,
			uint64_t ts, int bind)
{
	struct pb *b = &L->text;
	struct jent *e = add(L, ts, 0);
	head(j, b, ph, ts, ev->track, 1);
	name_cat(j, b, ev);
	put_bind(b, ev, bind);
	if (ph[0] == 'i')
		PUTS(b, ",\"s\":\"t\"");
	if (ev->nargs || ev->kind == WEFT_EV_DROPPED) {
		PUTS(b, ",\"args\":{");
		arg_pairs(j, b, ev);
		PUTS(b, "}");
	}
	PUTS(b, "}");
	close_entry(L, e);
}

static void simple(struct jthread *j, struct jlist *L, const struct weft_ev *ev, const char *ph, uint64_t ts)
{
	simple_bind(j, L, ev, ph, ts, -1);
}

/* An X event up to its open args object; dur and the closing come when it is written out. */
/* A slice's own memory figures as args ("mem.alloc_count":N, ...), after a comma when `comma`;
 * returns whether it wrote any. */
static int mem_pairs(struct jthread *j, struct pb *b, const struct weft_ev *ev, int comma)
{
	const struct weft_mem_slice *s = j->mem ? weft_mem_slice(j->mem, j->thread_index, ev->serial) : NULL;
	if (!s)
		return 0;
	const char *keys[4] = {"mem.alloc_count", "mem.alloc_bytes", "mem.free_count", "mem.freed_bytes"};
	uint64_t v[4] = {s->alloc_count, s->alloc_bytes, s->free_count, s->freed_bytes};
	int wrote = 0;
	for (int k = 0; k < 4; k++) {
		if (!v[k])
			continue;
		if (comma || wrote)
			PUTS(b, ",");
		PUTS(b, "\"");
		put(b, keys[k], strlen(keys[k]));
		PUTS(b, "\":");
		put_u64(b, v[k]);
		wrote = 1;
	}
	return wrote;
}

static void x_event(struct jthread *j, struct jlist *L, const struct weft_ev *ev, uint64_t dur, int bind,
		    const struct jendargs *more)
{
	struct pb *b = &L->text;
	struct jent *e = add(L, ev->ts, 0);
	head(j, b, "X", ev->ts, ev->track, 1);
	name_cat(j, b, ev);
	put_bind(b, ev, bind);
	PUTS(b, ",\"args\":{");
	int any = arg_pairs(j, b, ev) != 0;
	if (ev->kind == WEFT_EV_BEGIN && mem_pairs(j, b, ev, any))
		any = 1;
	if (dur & JD_EXC) {
		if (any)
			PUTS(b, ",");
		PUTS(b, "\"exception\":true");
		any = 1;
	}
	if (more) {
		if (any)
			PUTS(b, ",");
		put(b, (const char *)j->etext.p + more->off, more->len);
		any = 1;
	}
	if (dur & JD_UNTERM)
		put(b, any ? ",\"weft_unterminated\":true" : "\"weft_unterminated\":true", any ? 25 : 24);
	PUTS(b, "},\"dur\":");
	put_us(b, dur & ~(JD_UNTERM | JD_EXC));
	PUTS(b, "}");
	close_entry(L, e);
}

static void x_durations(struct jthread *j, const struct weft_ev *ev);

/* Pass 1: durations of slices (X style), lanes, and complete slices into the side list. */
static void pass1_event(void *ud, const struct weft_ev *ev)
{
	struct jthread *j = ud;
	if (!(j->p1 & JP1_REST)) { /* (the X style's durations alone, a group at a time) */
		if (ev->kind != WEFT_EV_COMPLETE)
			x_durations(j, ev);
		return;
	}
	if ((ev->kind == WEFT_EV_ASYNC_BEGIN || ev->kind == WEFT_EV_ASYNC_END || ev->kind == WEFT_EV_ASYNC_INSTANT) &&
	    ev->nout + ev->nin) {
		if (j->naflows == j->acap) {
			size_t cap = j->acap ? j->acap * 2 : 64;
			uint64_t *a = realloc(j->aflows, cap * sizeof(*a));
			if (!a) {
				j->st.oom++;
				return;
			}
			j->aflows = a;
			j->acap = cap;
		}
		j->aflows[j->naflows++] = flow_id(ev, 0);
	}
	if (ev->track)
		note_lane(j, ev->track);
	if (ev->kind == WEFT_EV_COMPLETE) {
		if (j->style == WEFT_JSON_X) {
			x_event(j, &j->side, ev, ev->end_ts - ev->ts, -1, NULL);
		} else {
			simple(j, &j->side, ev, "B", ev->ts);
			struct jent *e = add(&j->side, ev->end_ts, 0);
			head(j, &j->side.text, "E", ev->end_ts, ev->track, 1);
			PUTS(&j->side.text, "}");
			close_entry(&j->side, e);
		}
		flows(j, &j->side, ev);
		return;
	}
	if (j->p1 & JP1_DURS)
		x_durations(j, ev);
}

/* The X style's pass 1 proper: every slice's duration (and the arguments after its END), by
 * begin. */
static void x_durations(struct jthread *j, const struct weft_ev *ev)
{
	if (j->style != WEFT_JSON_X || (ev->kind != WEFT_EV_BEGIN && ev->kind != WEFT_EV_END))
		return;
	struct jstack *s = stack_for(j, ev->track);
	if (ev->kind == WEFT_EV_BEGIN) {
		if (j->ndurs == j->dcap) {
			j->dcap = j->dcap ? j->dcap * 2 : 1024;
			j->durs = realloc(j->durs, j->dcap * sizeof(uint64_t));
			if (!j->durs)
				weft_oom("writing JSON");
		}
		j->durs[j->ndurs] = ev->ts; /* start, until the end comes */
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 64;
			s->idx = realloc(s->idx, s->cap * sizeof(size_t));
			if (!s->idx)
				weft_oom("writing JSON");
		}
		s->idx[s->n++] = j->ndurs++;
	} else if (s->n) { /* the walker balances: an end always has its begin */
		size_t i = s->idx[--s->n];
		if (ev->nargs) {
			if (j->neargs == j->ecap) {
				j->ecap = j->ecap ? j->ecap * 2 : 64;
				j->eargs = realloc(j->eargs, j->ecap * sizeof(*j->eargs));
				if (!j->eargs)
					weft_oom("writing JSON");
			}
			struct jendargs *a = &j->eargs[j->neargs++];
			a->begin = i;
			a->off = j->etext.n;
			arg_pairs(j, &j->etext, ev);
			a->len = j->etext.n - a->off;
		}
		j->durs[i] = (ev->ts - j->durs[i]) | ((ev->flags & WEFT_EVF_UNTERMINATED) ? JD_UNTERM : 0) |
			     ((ev->flags & WEFT_EVF_EXCEPTION) ? JD_EXC : 0);
	}
}

/* Pass 2: everything but complete slices, one chunk at a time. */
void weft_json_pass2_event(void *ud, const struct weft_ev *ev)
{
	struct jthread *j = ud;
	struct jlist *L = j->fill;
	struct pb *b = &L->text;
	switch (ev->kind) {
	case WEFT_EV_BEGIN: {
		int bind = inline_flow(j, ev, 0);
		if (j->style == WEFT_JSON_X) {
			const struct jendargs *more = NULL;
			if (j->enext < j->neargs && j->eargs[j->enext].begin == j->dnext)
				more = &j->eargs[j->enext++];
			x_event(j, L, ev, j->dnext < j->ndurs ? j->durs[j->dnext++] : 0, bind, more);
		}
		else
			simple_bind(j, L, ev, "B", ev->ts, bind);
		flows_but(j, L, ev, bind);
		break;
	}
	case WEFT_EV_END:
		/* the arrows that followed the END leave or reach the slice it ends: v1 flow events
		 * bind to the slice enclosing them, so they come before the E (same time, earlier
		 * in the file; an X event encloses its end time) */
		flows(j, L, ev);
		if (j->style == WEFT_JSON_X)
			break;
		{
			struct jent *e = add(L, ev->ts, 0);
			head(j, b, "E", ev->ts, ev->track, 1);
			size_t at = b->n;
			PUTS(b, ",\"args\":{");
			int any = arg_pairs(j, b, ev) != 0;
			if (any && (ev->flags & (WEFT_EVF_UNTERMINATED | WEFT_EVF_UNWOUND | WEFT_EVF_EXCEPTION)))
				PUTS(b, ",");
			if (ev->flags & WEFT_EVF_UNTERMINATED)
				PUTS(b, "\"weft_unterminated\":true");
			else if (ev->flags & WEFT_EVF_UNWOUND)
				PUTS(b, "\"weft_unwound\":true");
			else if (ev->flags & WEFT_EVF_EXCEPTION)
				PUTS(b, "\"exception\":true");
			if (ev->flags & (WEFT_EVF_UNTERMINATED | WEFT_EVF_UNWOUND | WEFT_EVF_EXCEPTION))
				any = 1;
			if (mem_pairs(j, b, ev, any) || any)
				PUTS(b, "}");
			else
				b->n = at; /* no args */
			PUTS(b, "}");
			close_entry(L, e);
		}
		break;
	case WEFT_EV_INSTANT:
	case WEFT_EV_DROPPED: {
		int bind = inline_flow(j, ev, 0);
		simple_bind(j, L, ev, "i", ev->ts, bind);
		flows_but(j, L, ev, bind);
		break;
	}
	case WEFT_EV_COUNTER: {
		struct jent *e = add(L, ev->ts, 0);
		head(j, b, "C", ev->ts, 0, 0);
		name_cat(j, b, ev);
		PUTS(b, ",\"args\":{\"value\":");
		if (ev->is_double) {
			double d;
			memcpy(&d, &ev->value, 8);
			put_double(b, d);
		} else {
			put_i64(b, (int64_t)ev->value);
		}
		PUTS(b, "}}");
		close_entry(L, e);
		break;
	}
	case WEFT_EV_ASYNC_BEGIN:
	case WEFT_EV_ASYNC_END:
	case WEFT_EV_ASYNC_INSTANT: {
		const char *ph = ev->kind == WEFT_EV_ASYNC_BEGIN ? "b" : ev->kind == WEFT_EV_ASYNC_END ? "e" : "n";
		struct jent *e = add(L, ev->ts, 0);
		head(j, b, ph, ev->ts, 0, 1);
		name_cat(j, b, ev);
		if (!has_cat(j->p, ev->id))
			PUTS(b, ",\"cat\":\"async\"");
		char tmp[40];
		int k = snprintf(tmp, sizeof(tmp), ",\"id\":\"0x%llx\"", (unsigned long long)ev->value);
		put(b, tmp, (size_t)k);
		if (ev->nargs) {
			PUTS(b, ",\"args\":{");
			arg_pairs(j, b, ev);
			PUTS(b, "}");
		}
		int bind = inline_flow(j, ev, 1);
		put_bind(b, ev, bind);
		PUTS(b, "}");
		close_entry(L, e);
		flows_but(j, L, ev, bind);
		break;
	}
	default: /* complete slices: the side list of pass 1 */
		break;
	}
}

int weft_json_cmp_ent(const void *a, const void *b);

/* The heaps' counters ("heap live bytes", "heap peak bytes", per named heap too) as "C" events
 * in the side list of the process's first thread. */
static void mem_counter(struct jthread *j, uint64_t ts, const char *name, uint64_t v)
{
	struct jlist *L = &j->side;
	struct pb *b = &L->text;
	struct jent *e = add(L, ts, 0);
	head(j, b, "C", ts, 0, 0);
	PUTS(b, ",\"name\":\"");
	put(b, name, strlen(name)); /* heap names come from the program: escaped below */
	PUTS(b, "\",\"args\":{\"value\":");
	put_u64(b, v);
	PUTS(b, "}}");
	close_entry(L, e);
}

void weft_json_mem_counters(struct jthread *j)
{
	const struct weft_mem_proc *mp = j->mem;
	for (size_t i = 0; i < mp->nheaps; i++) {
		const struct weft_mem_heap *h = &mp->heaps[i];
		char live[300], peak[300], safe[200];
		size_t k = 0;
		for (const char *c = h->name; *c && k + 1 < sizeof(safe); c++) /* no quoting needed */
			safe[k++] = (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) ? '_' : *c;
		safe[k] = 0;
		snprintf(live, sizeof(live), h->id ? "heap live bytes: %s" : "heap live bytes", safe);
		snprintf(peak, sizeof(peak), h->id ? "heap peak bytes: %s" : "heap peak bytes", safe);
		for (size_t p = 0; p < h->npoints; p++) {
			mem_counter(j, h->points[p].ts, live, h->points[p].live);
			mem_counter(j, h->points[p].ts, peak, h->points[p].peak);
		}
		static const char *const what[] = {"live", "cached", "requested"};
		char use[3][300];
		for (int k = 0; k < 3; k++)
			snprintf(use[k], sizeof(use[k]), "%s reported %s bytes", safe, what[k]);
		for (size_t u = 0; u < h->nusage; u++) {
			const struct weft_mem_usage *x = &h->usage[u];
			mem_counter(j, x->ts, use[0], x->live);
			mem_counter(j, x->ts, use[1], x->cached);
			mem_counter(j, x->ts, use[2], x->requested);
		}
	}
	if (j->side.unsorted)
		qsort(j->side.ents, j->side.nents, sizeof(struct jent), weft_json_cmp_ent);
}

int weft_json_cmp_ent(const void *a, const void *b)
{
	const struct jent *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The processes' snapshot requests (SNAPSHOT records, format 1.8): process-scoped instants
 * `weft: snapshot` (or `weft: snapshot refused`) with their reason and origin, in a list of
 * their own sorted by time (merged with the threads' like the GPU's). */
void weft_json_snapshot_marks(const struct weft_trace *t, struct jlist *L)
{
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		for (size_t k = 0; k < p->nsnaps; k++) {
			const struct weft_snap_mark *m = &p->snaps[k];
			uint64_t ts = weft_proc_ns(p, m->ticks);
			struct jent *e = add(L, ts, 0);
			struct pb *b = &L->text;
			PUTS(b, "{\"ph\":\"i\",\"s\":\"p\",\"pid\":");
			put_u64(b, (uint64_t)(uint32_t)p->pid);
			PUTS(b, ",\"tid\":");
			put_u64(b, (uint64_t)(uint32_t)p->pid);
			PUTS(b, ",\"ts\":");
			put_us(b, ts);
			PUTS(b, ",\"name\":");
			put_cstr(b, m->refused ? "weft: snapshot refused" : "weft: snapshot");
			PUTS(b, ",\"args\":{\"reason\":");
			put_cstr(b, m->reason ? m->reason : "");
			PUTS(b, ",\"origin\":");
			put_cstr(b, weft_snap_origin_name(m->origin));
			if (m->refused) {
				PUTS(b, ",\"why\":");
				put_cstr(b, weft_snap_refusal_name(m->refused));
			} else if (m->number) {
				PUTS(b, ",\"snapshot\":");
				put_u64(b, m->number);
			}
			PUTS(b, "}}");
			close_entry(L, e);
		}
	}
	if (L->unsorted)
		qsort(L->ents, L->nents, sizeof(struct jent), weft_json_cmp_ent);
}

static int cmp_endargs(const void *a, const void *b)
{
	const struct jendargs *x = a, *y = b;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* Does a chunk hold anything pass 1 of the B/E style wants (complete slices, async slices and
 * their arrows, lanes)? Function entries and exits and slices and instants on the thread's own
 * row are what it skips: pass 2 formats those. */
static void hdr_wanted(uint64_t h, void *ud)
{
	unsigned type = weft_rec_type(h);
	if (type == WEFT_R_FUNC_ENTER || type == WEFT_R_FUNC_EXIT ||
	    ((type == WEFT_R_BEGIN || type == WEFT_R_END || type == WEFT_R_INSTANT || type == WEFT_R_LEAF) &&
	     !weft_rec_track(h)))
		return;
	*(int *)ud = 1;
}

/* The scan: the chunks of every thread as one sequence cut into pieces, a piece per call. */
struct scan {
	struct jthread *js;
	size_t n, total, pieces;
};

static void scan_piece(size_t piece, void *ud)
{
	struct scan *sc = ud;
	size_t from = piece * sc->total / sc->pieces, to = (piece + 1) * sc->total / sc->pieces;
	uint64_t *buf = NULL;
	size_t cap = 0, i = 0, base = 0;
	while (i < sc->n && base + sc->js[i].th->nchunks <= from)
		base += sc->js[i++].th->nchunks;
	for (size_t f = from; f < to; f++) {
		while (f - base >= sc->js[i].th->nchunks)
			base += sc->js[i++].th->nchunks;
		struct jthread *j = &sc->js[i];
		size_t c = f - base;
		const struct weft_chunk_view *cv = &j->th->chunks[c];
		int wanted = !weft_chunk_packing(cv->flags);
		if (!wanted) {
			const char *why = NULL;
			int rc = weft_chunk_headers(cv, &buf, &cap, hdr_wanted, &wanted, &why);
			if (rc) {
				wanted = rc;
				j->want_why[c] = why;
			}
		}
		j->want[c] = wanted;
	}
	free(buf);
}

void weft_json_scan(struct jthread *js, size_t n, int jobs)
{
	struct scan sc = {.js = js, .n = n};
	for (size_t i = 0; i < n; i++) {
		js[i].want = malloc((js[i].th->nchunks + 1) * sizeof(*js[i].want));
		js[i].want_why = calloc(js[i].th->nchunks + 1, sizeof(*js[i].want_why));
		if (!js[i].want || !js[i].want_why)
			weft_oom("writing JSON");
		sc.total += js[i].th->nchunks;
	}
	sc.pieces = (size_t)jobs * 4 < sc.total ? (size_t)jobs * 4 : sc.total;
	if (sc.pieces)
		weft_parallel_for(sc.pieces, jobs, scan_piece, &sc);
}

/* Pass 1 of the B/E style: only the chunks that hold something it wants are decoded and walked
 * (where the chunk is packed, its headers told weft_json_scan without unpacking the records). */
static void pass1_be(struct jthread *j)
{
	struct weft_walker w;
	weft_walker_init(&w, j->p, pass1_event, j, &j->st);
	for (size_t c = 0; c < j->th->nchunks; c++) {
		const struct weft_chunk_view *cv = &j->th->chunks[c];
		const char *why = j->want_why[c];
		size_t n = 0;
		int wanted = j->want[c], rc = wanted < 0 ? wanted : 0;
		if (!rc && !wanted) {
			weft_walker_skip(&w);
			continue;
		}
		if (!rc)
			rc = weft_chunk_decode_prepared(cv, j->p, &j->buf, &j->bufcap, &n, &why);
		if (rc) {
			weft_walk_stats_refused(&j->st, rc, why);
			continue;
		}
		weft_walker_feed_prepared(&w, j->buf, n);
	}
	weft_walker_finish(&w, j->end_ns);
}

void weft_json_pass1(size_t i, void *ud)
{
	struct jthread *j = &((struct jthread *)ud)[i];
	if (j->p1 & JP1_DURS) { /* every slice's duration: the whole walk */
		struct weft_walk_stats st = {0}, *sp = j->p1 & JP1_REST ? &j->st : &st;
		weft_walk_thread(j->p, j->th, j->end_ns, pass1_event, j, sp, &j->buf, &j->bufcap);
		j->st.oom += sp == &st ? st.oom : 0; /* (pass 2's counts: it walks the same) */
	} else {
		pass1_be(j);
	}
	if (j->neargs)
		qsort(j->eargs, j->neargs, sizeof(*j->eargs), cmp_endargs);
	if (j->side.unsorted)
		qsort(j->side.ents, j->side.nents, sizeof(struct jent), weft_json_cmp_ent);
	for (size_t s = 0; s < j->nstacks; s++)
		free(j->stacks[s].idx);
	free(j->stacks);
	j->stacks = NULL;
	j->nstacks = 0;
	free(j->buf); /* a chunk's worth: pass 2 takes the threads a few at a time */
	j->buf = NULL;
	j->bufcap = 0;
}
