/*
 * json.c - trace -> Chrome JSON ({"traceEvents":[...]}), as read by chrome://tracing, Perfetto
 * and speedscope. The output is always complete JSON, sorted by timestamp, with "M" events
 * naming processes and threads. --json-style=be writes B/E pairs, x writes complete "X"
 * events. Slices still open at the end of the trace are closed there with
 * args.weft_unterminated = true. Named-track lanes become pseudo-threads (tid 0x40000000 +
 * track<<12 + thread index) named "track / thread".
 *
 * Two passes, memory bounded by a chunk per thread. Pass 1 (threads in parallel) walks each
 * thread to learn what the streaming pass cannot know in time: the duration of every slice
 * (for X events, written at their begin), the lanes used (their names come first), and the
 * complete slices, whose times lie in the past of the stream - those are formatted right away
 * into a side list. Pass 2 formats each thread one chunk at a time and merges the threads
 * (and side lists) by timestamp through a heap. GPU activities (json-gpu.c) are one more side
 * list in that merge, on rows of their own.
 */
#include "export/export.h"
#include "export/pb.h"
#include "export/json-gpu.h"
#include "analysis/memory.h"
#include "format/format.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#define JF_X 1u        /* text is an open X event; dur and closing come at output */
#define JF_ARGS 2u     /* the X event's args object is non-empty */
#define JF_UNTERM 4u

struct jent {
	uint64_t ts;
	uint64_t off;
	uint32_t len, flags;
	uint64_t dur;
};

struct jstack {
	unsigned track;
	size_t *idx;
	size_t n, cap;
};

struct jlist { /* formatted entries and their text */
	struct pb text;
	struct jent *ents;
	size_t nents, cap, pos;
	int unsorted;
};

struct jthread {
	const struct weft_proc *p;
	const struct weft_thread_data *th;
	size_t thread_index;
	int style, pass;
	uint64_t end_ns; /* closes slices left open */
	struct jlist out;  /* pass 2: the current chunk's entries */
	struct jlist side; /* pass 1: complete slices */
	struct jstack *stacks;
	size_t nstacks;
	uint64_t *durs; /* pass 1: per begin, in order: duration | JD_UNTERM */
	size_t ndurs, dcap, dnext;
	/* X style, pass 1: the arguments that followed a slice's END (an MPI receive's actual
	 * source, say), formatted into etext, by the slice's begin index; pass 2 adds them to the
	 * X event (sorted by begin: enext walks them as dnext walks durs) */
	struct jendargs { size_t begin, off, len; } *eargs;
	size_t neargs, ecap, enext;
	struct pb etext;
	unsigned *lanes; /* named tracks used by this thread */
	size_t nlanes;
	struct weft_walker walker;
	uint64_t *buf;
	size_t bufcap, chunk;
	int finished;
	struct weft_walk_stats st;
	uint64_t *aflows; /* pass 1: ids of arrows that leave or reach an async slice */
	size_t naflows, acap;
	const uint64_t *aset; /* pass 2: every thread's aflows, sorted */
	size_t naset;
	const struct weft_mem_proc *mem; /* the process's memory analysis, or NULL */
};
#define JD_UNTERM (1ull << 63)
#define JD_EXC (1ull << 62) /* left by an exception */

static void put(struct pb *b, const char *s, size_t n)
{
	pb_reserve(b, n);
	memcpy(b->p + b->n, s, n);
	b->n += n;
}
#define PUTS(b, lit) put(b, lit, sizeof(lit) - 1)

static void put_u64(struct pb *b, uint64_t v)
{
	char tmp[24];
	int i = 24;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	put(b, tmp + i, (size_t)(24 - i));
}

static void put_i64(struct pb *b, int64_t v)
{
	if (v < 0) {
		PUTS(b, "-");
		put_u64(b, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(b, (uint64_t)v);
	}
}

/* ns -> microseconds with three decimals */
static void put_us(struct pb *b, uint64_t ns)
{
	put_u64(b, ns / 1000);
	char f[4] = {'.', (char)('0' + ns / 100 % 10), (char)('0' + ns / 10 % 10), (char)('0' + ns % 10)};
	put(b, f, 4);
}

static void put_double(struct pb *b, double d)
{
	char tmp[40];
	if (d != d || d - d != 0) { /* NaN or infinity: JSON has no such number */
		PUTS(b, "null");
		return;
	}
	int n = snprintf(tmp, sizeof(tmp), "%.17g", d);
	put(b, tmp, (size_t)n);
}

static void put_str(struct pb *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	pb_reserve(b, n * 6 + 2);
	uint8_t *o = b->p + b->n;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\') {
			*o++ = '\\';
			*o++ = c;
		} else if (c < 0x20 || c == 0x7f) {
			*o++ = '\\';
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = (uint8_t)hex[c >> 4];
			*o++ = (uint8_t)hex[c & 15];
		} else if (c >= 0x80) {
			/* pass valid UTF-8 through; replace invalid bytes with U+FFFD */
			size_t len = (c >= 0xf0 && c < 0xf5) ? 4 : (c >= 0xe0) ? 3 : (c >= 0xc2 && c < 0xe0) ? 2 : 0;
			int ok = len && i + len <= n;
			for (size_t k = 1; ok && k < len; k++)
				ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
			if (ok) {
				memcpy(o, s + i, len);
				o += len;
				i += len - 1;
			} else {
				memcpy(o, "\xef\xbf\xbd", 3);
				o += 3;
			}
		} else {
			*o++ = c;
		}
	}
	*o++ = '"';
	b->n = (size_t)(o - b->p);
}

static void put_cstr(struct pb *b, const char *s)
{
	put_str(b, s, strlen(s));
}

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
	e->dur = 0;
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

static uint64_t lane_tid(const struct jthread *j, unsigned track)
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

static void head(struct jthread *j, struct pb *b, const char *ph, uint64_t ts, unsigned track, int with_tid)
{
	PUTS(b, "{\"ph\":\"");
	put(b, ph, strlen(ph));
	PUTS(b, "\",\"pid\":");
	put_u64(b, (uint64_t)(uint32_t)j->p->pid);
	if (with_tid) {
		PUTS(b, ",\"tid\":");
		put_u64(b, lane_tid(j, track));
	}
	PUTS(b, ",\"ts\":");
	put_us(b, ts);
}

static int has_cat(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat[0];
}

static void name_cat(struct jthread *j, struct pb *b, const struct weft_ev *ev)
{
	const struct weft_proc *p = j->p;
	PUTS(b, ",\"name\":");
	if (ev->kind == WEFT_EV_DROPPED)
		PUTS(b, "\"weft: events dropped\"");
	else if (ev->id < p->nsites && p->sites[ev->id].defined)
		put_cstr(b, p->sites[ev->id].name);
	else {
		char name[32];
		snprintf(name, sizeof(name), "site#%u", ev->id);
		put_cstr(b, name);
	}
	if (has_cat(p, ev->id)) {
		PUTS(b, ",\"cat\":");
		put_cstr(b, p->sites[ev->id].cat);
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

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Which of the event's arrows goes on the event itself (v2), or -1. */
static int inline_flow(const struct jthread *j, const struct weft_ev *ev, int async)
{
	for (unsigned k = 0; k < ev->nout + ev->nin; k++) {
		uint64_t id = flow_id(ev, k);
		if (async || (j->naset && bsearch(&id, j->aset, j->naset, sizeof(id), cmp_u64)))
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
	struct jent *e = add(L, ev->ts, JF_X);
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
	if (any)
		e->flags |= JF_ARGS;
	close_entry(L, e);
	e->dur = dur & ~(JD_UNTERM | JD_EXC);
	if (dur & JD_UNTERM)
		e->flags |= JF_UNTERM;
}

/* Pass 1: durations of slices (X style), lanes, and complete slices into the side list. */
static void pass1_event(void *ud, const struct weft_ev *ev)
{
	struct jthread *j = ud;
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
static void pass2_event(void *ud, const struct weft_ev *ev)
{
	struct jthread *j = ud;
	struct jlist *L = &j->out;
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

static int cmp_ent(const void *a, const void *b);

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

static void mem_counters(struct jthread *j)
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
		qsort(j->side.ents, j->side.nents, sizeof(struct jent), cmp_ent);
}

static int cmp_ent(const void *a, const void *b)
{
	const struct jent *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The processes' snapshot requests (SNAPSHOT records, format 1.8): process-scoped instants
 * `weft: snapshot` (or `weft: snapshot refused`) with their reason and origin, in a list of
 * their own sorted by time (merged with the threads' like the GPU's). */
static void snapshot_marks(const struct weft_trace *t, struct jlist *L)
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
		qsort(L->ents, L->nents, sizeof(struct jent), cmp_ent);
}

static int cmp_endargs(const void *a, const void *b)
{
	const struct jendargs *x = a, *y = b;
	return x->begin < y->begin ? -1 : x->begin > y->begin;
}

static void pass1(size_t i, void *ud)
{
	struct jthread *j = &((struct jthread *)ud)[i];
	weft_walk_thread(j->p, j->th, j->end_ns, pass1_event, j, &j->st, &j->buf, &j->bufcap);
	if (j->neargs)
		qsort(j->eargs, j->neargs, sizeof(*j->eargs), cmp_endargs);
	if (j->side.unsorted)
		qsort(j->side.ents, j->side.nents, sizeof(struct jent), cmp_ent);
	for (size_t s = 0; s < j->nstacks; s++)
		free(j->stacks[s].idx);
	free(j->stacks);
	j->stacks = NULL;
	j->nstacks = 0;
}

/* Pass 2: format the thread's next chunk; 0 when the thread has nothing more. */
static int refill(struct jthread *j)
{
	struct jlist *L = &j->out;
	L->text.n = L->nents = L->pos = 0;
	L->unsorted = 0;
	while (!L->nents && !j->finished) {
		if (j->chunk < j->th->nchunks) {
			size_t n;
			const char *why;
			int rc = weft_chunk_decode(&j->th->chunks[j->chunk++], &j->buf, &j->bufcap, &n, &why);
			if (!rc)
				weft_walker_feed(&j->walker, j->buf, n);
			else if (rc == -ENOMEM) /* other refusals were counted by pass 1 */
				j->st.oom++;
		} else {
			weft_walker_finish(&j->walker, j->end_ns);
			j->finished = 1;
		}
	}
	if (L->unsorted)
		qsort(L->ents, L->nents, sizeof(struct jent), cmp_ent);
	return L->nents > 0;
}

struct ctx {
	FILE *out;
	struct pb buf;
	int err, first;
};

static void out_flush(struct ctx *c, int force)
{
	if (c->buf.n >= (1u << 20) || (force && c->buf.n)) {
		if (!c->err && fwrite(c->buf.p, 1, c->buf.n, c->out) != c->buf.n)
			c->err = errno ? errno : EIO;
		c->buf.n = 0;
	}
}

static void emit_ent(struct ctx *c, const struct jlist *L, const struct jent *e)
{
	struct pb *b = &c->buf;
	if (!c->first)
		PUTS(b, ",\n");
	c->first = 0;
	put(b, (const char *)L->text.p + e->off, e->len);
	if (e->flags & JF_X) {
		if (e->flags & JF_UNTERM)
			put(b, (e->flags & JF_ARGS) ? ",\"weft_unterminated\":true" : "\"weft_unterminated\":true",
			    (e->flags & JF_ARGS) ? 25 : 24);
		PUTS(b, "},\"dur\":");
		put_us(b, e->dur);
		PUTS(b, "}");
	}
	out_flush(c, 0);
}

static void meta_event(struct ctx *c, int pid, uint64_t tid, const char *what, const char *name)
{
	struct pb *b = &c->buf;
	if (!c->first)
		PUTS(b, ",\n");
	c->first = 0;
	PUTS(b, "{\"ph\":\"M\",\"pid\":");
	put_u64(b, (uint64_t)(uint32_t)pid);
	if (tid != UINT64_MAX) {
		PUTS(b, ",\"tid\":");
		put_u64(b, tid);
	}
	PUTS(b, ",\"ts\":0,\"name\":");
	put_cstr(b, what);
	PUTS(b, ",\"args\":{\"name\":");
	put_cstr(b, name);
	PUTS(b, "}}");
}

/* Merge streams: 2 per thread, s = 2i (its chunks) and 2i+1 (its side list). */
static struct jlist *stream_list(struct jthread *js, size_t s)
{
	return s & 1 ? &js[s / 2].side : &js[s / 2].out;
}

static int stream_next(struct jthread *js, size_t s)
{
	struct jlist *L = stream_list(js, s);
	if (++L->pos < L->nents)
		return 1;
	return (s & 1) ? 0 : refill(&js[s / 2]);
}

int weft_export_json(const struct weft_trace *t, FILE *out, int style, int jobs,
		     struct weft_export_summary *sum, char *err, size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].nthreads;
	struct jthread *js = calloc(n + 1, sizeof(*js));
	if (!js)
		weft_oom("writing JSON");
	size_t k = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t h = 0; h < t->procs[i].nthreads; h++, k++) {
			js[k].p = &t->procs[i];
			js[k].th = &t->procs[i].threads[h];
			js[k].thread_index = h;
			js[k].style = style;
			js[k].end_ns = t->last_ns;
		}
	struct weft_mem *mem = NULL;
	int mrc = weft_mem_analyze(t, &mem, err, errlen);
	if (mrc) {
		free(js);
		return mrc;
	}
	for (size_t i = 0; i < n; i++)
		js[i].mem = weft_mem_for(mem, js[i].p);
	struct weft_json_gpu gpu; /* its events: the side list of js[n], a thread of no process */
	if ((mrc = weft_json_gpu_build(t, &gpu, err, errlen))) {
		weft_mem_free(mem);
		free(js);
		return mrc;
	}
	if (gpu.n > gpu.nmeta) {
		struct jlist *G = &js[n].side;
		G->text = gpu.text;
		G->nents = G->cap = gpu.n - gpu.nmeta;
		G->ents = malloc(G->nents * sizeof(*G->ents));
		if (!G->ents)
			weft_oom("writing JSON");
		for (size_t i = 0; i < G->nents; i++) {
			const struct weft_json_gpu_ent *e = &gpu.ents[gpu.nmeta + i];
			G->ents[i] = (struct jent){e->ts, e->off, e->len, 0, 0};
		}
	}
	snapshot_marks(t, &js[n].out); /* stream 2n: no thread's (js[n] has none: finished) */
	js[n].finished = 1;
	weft_parallel_for(n, weft_jobs(jobs), pass1, js);
	for (size_t i = 0; i < n; i++)
		if (js[i].mem && js[i].thread_index == 0)
			mem_counters(&js[i]);
	size_t naset = 0;
	for (size_t i = 0; i < n; i++)
		naset += js[i].naflows;
	uint64_t *aset = naset ? malloc(naset * sizeof(*aset)) : NULL;
	if (naset && !aset) {
		sum->oom++;
		naset = 0;
	}
	for (size_t i = 0, at = 0; i < n && aset; i++) {
		memcpy(aset + at, js[i].aflows, js[i].naflows * sizeof(*aset));
		at += js[i].naflows;
		free(js[i].aflows);
		js[i].aflows = NULL;
	}
	if (naset)
		qsort(aset, naset, sizeof(*aset), cmp_u64);
	for (size_t i = 0; i < n; i++) {
		js[i].aset = aset;
		js[i].naset = naset;
	}

	struct ctx c = {.out = out, .first = 1};
	PUTS(&c.buf, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	k = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		meta_event(&c, p->pid, UINT64_MAX, "process_name", p->name);
		if (weft_proc_rank(p) != WEFT_RANK_NONE) { /* a job's ranks in rank order */
			PUTS(&c.buf, ",\n{\"ph\":\"M\",\"pid\":");
			put_u64(&c.buf, (uint64_t)(uint32_t)p->pid);
			PUTS(&c.buf, ",\"ts\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":");
			put_u64(&c.buf, weft_proc_rank(p));
			PUTS(&c.buf, "}}");
		}
		for (size_t h = 0; h < p->nthreads; h++, k++) {
			struct jthread *j = &js[k];
			meta_event(&c, p->pid, j->th->tid, "thread_name", j->th->name);
			for (size_t l = 0; l < j->nlanes; l++) {
				char name[600];
				const char *tn = weft_track_name(p, j->lanes[l]);
				snprintf(name, sizeof(name), "%s / %s (%u)", tn ? tn : "track", j->th->name, j->th->tid);
				meta_event(&c, p->pid, lane_tid(j, j->lanes[l]), "thread_name", name);
			}
		}
	}
	for (size_t i = 0; i < gpu.nmeta; i++) {
		if (!c.first)
			PUTS(&c.buf, ",\n");
		c.first = 0;
		put(&c.buf, (const char *)gpu.text.p + gpu.ents[i].off, gpu.ents[i].len);
	}
	uint64_t pass1_events = 0;
	for (size_t i = 0; i < n; i++) {
		struct jthread *j = &js[i];
		pass1_events += j->st.events;
		sum->bad_chunks += j->st.bad_chunks; /* pass 2 decodes the same chunks */
		if (!sum->bad_why)
			sum->bad_why = j->st.bad_why;
		sum->oom += j->st.oom;
		memset(&j->st, 0, sizeof(j->st));
		weft_walker_init(&j->walker, j->p, pass2_event, j, &j->st);
	}
	/* the heap of streams, keyed by the timestamp of each stream's current entry */
	size_t *heap = calloc(2 * n + 2, sizeof(size_t)), hn = 0;
	if (!heap)
		weft_oom("writing JSON");
#define KEY(s) (stream_list(js, s)->ents[stream_list(js, s)->pos].ts)
#define SIFT_DOWN(at0)                                                                   \
	do {                                                                             \
		size_t at_ = (at0);                                                      \
		for (;;) {                                                               \
			size_t l_ = 2 * at_ + 1, r_ = l_ + 1, m_ = at_;                  \
			if (l_ < hn && KEY(heap[l_]) < KEY(heap[m_]))                    \
				m_ = l_;                                                 \
			if (r_ < hn && KEY(heap[r_]) < KEY(heap[m_]))                    \
				m_ = r_;                                                 \
			if (m_ == at_)                                                   \
				break;                                                   \
			size_t tmp_ = heap[m_];                                          \
			heap[m_] = heap[at_];                                            \
			heap[at_] = tmp_;                                                \
			at_ = m_;                                                        \
		}                                                                        \
	} while (0)
	for (size_t s = 0; s < 2 * n + 2; s++) { /* 2n + 1: the GPU's list, 2n: the snapshots' */
		int has = (s & 1) ? js[s / 2].side.nents > 0 : s < 2 * n ? refill(&js[s / 2]) : js[n].out.nents > 0;
		if (has)
			heap[hn++] = s;
	}
	for (size_t i = hn / 2 + 1; i-- > 0;)
		SIFT_DOWN(i);
	for (uint64_t emitted = 1; hn; emitted++) {
		size_t s = heap[0];
		struct jlist *L = stream_list(js, s);
		emit_ent(&c, L, &L->ents[L->pos]);
		if (!(emitted & 0xffff)) /* the progress line's count */
			atomic_fetch_add_explicit(&weft_export_progress, 0x10000, memory_order_relaxed);
		if (!stream_next(js, s))
			heap[0] = heap[--hn];
		SIFT_DOWN(0);
	}
#undef SIFT_DOWN
#undef KEY
	uint64_t dropped = 0; /* the process totals: drops not attributed to a thread count too */
	for (size_t i = 0; i < t->nprocs; i++)
		dropped += weft_proc_dropped(&t->procs[i]);
	for (size_t i = 0; i < n; i++) {
		struct jthread *j = &js[i];
		sum->unmatched_end += j->st.unmatched_end;
		sum->unterminated += j->st.unterminated;
		sum->unwound += j->st.unwound;
		sum->oom += j->st.oom;
		free(j->out.text.p);
		free(j->out.ents);
		free(j->side.text.p);
		free(j->side.ents);
		free(j->durs);
		free(j->eargs);
		free(j->etext.p);
		free(j->lanes);
		free(j->buf);
	}
	PUTS(&c.buf, "\n],\"metadata\":{\"weft-dropped-events\":");
	put_u64(&c.buf, dropped);
	PUTS(&c.buf, ",\"weft-unterminated-slices\":");
	put_u64(&c.buf, sum->unterminated);
	PUTS(&c.buf, "}}\n");
	out_flush(&c, 1);
	free(c.buf.p);
	free(heap);
	free(aset);
	free(js[n].side.text.p); /* gpu.text, when it had events */
	if (js[n].side.text.p != gpu.text.p)
		free(gpu.text.p);
	free(js[n].side.ents);
	free(js[n].out.text.p); /* the snapshots' list */
	free(js[n].out.ents);
	free(gpu.ents);
	for (size_t i = 0; i < n; i++)
		free(js[i].aflows); /* where the merge ran out of memory */
	free(js);
	weft_mem_free(mem);
	sum->events = pass1_events;
	sum->dropped = dropped;
	if (!c.err && fflush(out))
		c.err = errno;
	if (c.err) {
		snprintf(err, errlen, "writing the trace failed: %s", strerror(c.err));
		return -c.err;
	}
	return weft_export_result(sum, 0, err, errlen);
}
