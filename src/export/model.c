/*
 * model.c - see model.h. One pass over a thread's records with a small stack per track.
 */
#include "export/model.h"
#include "format/format.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

struct stack {
	unsigned track;
	uint32_t *ids;
	size_t n, cap;
};

struct walker {
	const struct weft_proc *p;
	weft_ev_fn fn;
	void *ud;
	struct weft_walk_stats *st;
	struct stack *stacks;
	size_t nstacks;
	struct weft_ev ev; /* pending event (args and flows still attaching) */
	int pending;
	uint64_t last_ts;
};

static struct stack *stack_for(struct walker *w, unsigned track)
{
	for (size_t i = 0; i < w->nstacks; i++)
		if (w->stacks[i].track == track)
			return &w->stacks[i];
	struct stack *s = realloc(w->stacks, (w->nstacks + 1) * sizeof(*s));
	if (!s)
		abort();
	w->stacks = s;
	s = &w->stacks[w->nstacks++];
	memset(s, 0, sizeof(*s));
	s->track = track;
	return s;
}

static void push(struct stack *s, uint32_t id)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->ids = realloc(s->ids, s->cap * sizeof(*s->ids));
		if (!s->ids)
			abort();
	}
	s->ids[s->n++] = id;
}

static void flush(struct walker *w)
{
	if (!w->pending)
		return;
	w->pending = 0;
	w->st->events++;
	w->fn(w->ud, &w->ev);
}

static void emit_end(struct walker *w, uint64_t ts, uint32_t id, unsigned track, unsigned flags)
{
	struct weft_ev e;
	e.kind = WEFT_EV_END;
	e.flags = flags;
	e.ts = ts;
	e.end_ts = 0;
	e.id = id;
	e.track = track;
	e.value = 0;
	e.is_double = 0;
	e.nargs = e.nout = e.nin = 0;
	w->fn(w->ud, &e);
}

static void start(struct walker *w, unsigned kind, uint64_t ts, uint32_t id, unsigned track)
{
	flush(w);
	struct weft_ev *e = &w->ev;
	e->kind = kind;
	e->flags = 0;
	e->ts = ts;
	e->end_ts = 0;
	e->id = id;
	e->track = track;
	e->value = 0;
	e->is_double = 0;
	e->nargs = e->nout = e->nin = 0;
	w->pending = 1;
	w->last_ts = ts;
}

static int attachable(const struct walker *w)
{
	if (!w->pending)
		return 0;
	unsigned k = w->ev.kind;
	return k == WEFT_EV_BEGIN || k == WEFT_EV_INSTANT || k == WEFT_EV_COMPLETE ||
	       k == WEFT_EV_ASYNC_BEGIN || k == WEFT_EV_ASYNC_INSTANT;
}

static void on_end(struct walker *w, uint64_t ts, uint32_t id, unsigned track)
{
	flush(w);
	w->last_ts = ts;
	struct stack *s = stack_for(w, track);
	size_t i = s->n;
	while (i > 0 && s->ids[i - 1] != id)
		i--;
	if (i == 0) {
		w->st->unmatched_end++;
		return;
	}
	while (s->n > i) { /* inner slices whose ends never came */
		w->st->unwound++;
		emit_end(w, ts, s->ids[--s->n], track, WEFT_EVF_UNWOUND);
	}
	s->n--;
	w->st->events++;
	emit_end(w, ts, id, track, 0);
}

void weft_walk_thread(const struct weft_proc *p, const struct weft_thread_data *th,
		      uint64_t trace_end_ns, weft_ev_fn fn, void *ud, struct weft_walk_stats *st)
{
	struct walker w = {.p = p, .fn = fn, .ud = ud, .st = st};
	for (size_t c = 0; c < th->nchunks; c++) {
		const uint64_t *r = th->chunks[c].words;
		size_t n = th->chunks[c].nwords;
		for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1])) {
			uint64_t h = r[i + 1];
			unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
			if (i + 2 + extra > n)
				break; /* a record cut by the end of its chunk */
			uint32_t id = weft_rec_id(h);
			unsigned track = weft_rec_track(h);
			uint64_t x = extra ? r[i + 2] : 0;
			switch (type) {
			case WEFT_R_BEGIN:
				start(&w, WEFT_EV_BEGIN, weft_proc_ns(p, r[i]), id, track);
				push(stack_for(&w, track), id);
				break;
			case WEFT_R_END:
				on_end(&w, weft_proc_ns(p, r[i]), id, track);
				break;
			case WEFT_R_INSTANT:
				start(&w, WEFT_EV_INSTANT, weft_proc_ns(p, r[i]), id, track);
				break;
			case WEFT_R_COUNTER_I64:
			case WEFT_R_COUNTER_F64:
				start(&w, WEFT_EV_COUNTER, weft_proc_ns(p, r[i]), id, 0);
				w.ev.value = x;
				w.ev.is_double = type == WEFT_R_COUNTER_F64;
				break;
			case WEFT_R_ASYNC_BEGIN:
			case WEFT_R_ASYNC_END:
			case WEFT_R_ASYNC_INSTANT:
				start(&w, type == WEFT_R_ASYNC_BEGIN ? WEFT_EV_ASYNC_BEGIN :
					  type == WEFT_R_ASYNC_END ? WEFT_EV_ASYNC_END : WEFT_EV_ASYNC_INSTANT,
				      weft_proc_ns(p, r[i]), id, 0);
				w.ev.value = x;
				break;
			case WEFT_R_COMPLETE:
				start(&w, WEFT_EV_COMPLETE, r[i], id, track);
				w.ev.end_ts = x < r[i] ? r[i] : x;
				break;
			case WEFT_R_DROPPED:
				start(&w, WEFT_EV_DROPPED, weft_proc_ns(p, r[i]), 0, 0);
				w.ev.value = x;
				st->events--; /* not an event of the program's */
				break;
			case WEFT_R_ARG_I64: case WEFT_R_ARG_U64: case WEFT_R_ARG_F64:
			case WEFT_R_ARG_BOOL: case WEFT_R_ARG_PTR: case WEFT_R_ARG_STR:
				if (attachable(&w) && w.ev.nargs < WEFT_EV_MAX_ARGS) {
					struct weft_ev_arg *a = &w.ev.args[w.ev.nargs++];
					a->key = id;
					a->type = type;
					a->v = r[i];
					a->s = type == WEFT_R_ARG_STR ? (const char *)(r + i + 2) : NULL;
					a->slen = type == WEFT_R_ARG_STR ? (r[i] < (uint64_t)extra * 8 ? r[i] : (uint64_t)extra * 8) : 0;
				}
				break;
			case WEFT_R_FLOW_OUT:
			case WEFT_R_FLOW_IN:
				if (!attachable(&w)) { /* its event was filtered or dropped: so is the arrow */
					st->orphan_flows++;
					break;
				}
				if (type == WEFT_R_FLOW_OUT && w.ev.nout < WEFT_EV_MAX_FLOWS)
					w.ev.flows_out[w.ev.nout++] = r[i];
				if (type == WEFT_R_FLOW_IN && w.ev.nin < WEFT_EV_MAX_FLOWS)
					w.ev.flows_in[w.ev.nin++] = r[i];
				break;
			default:
				break; /* unknown record type of a newer minor version: skipped */
			}
		}
	}
	flush(&w);
	for (size_t s = 0; s < w.nstacks; s++) {
		struct stack *k = &w.stacks[s];
		while (k->n > 0) {
			st->unterminated++;
			emit_end(&w, trace_end_ns, k->ids[--k->n], k->track, WEFT_EVF_UNTERMINATED);
		}
		free(k->ids);
	}
	free(w.stacks);
}

struct pf {
	size_t n;
	void (*fn)(size_t, void *);
	void *ud;
	_Atomic size_t next;
};

static void *pf_main(void *arg)
{
	struct pf *j = arg;
	for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n;)
		j->fn(i, j->ud);
	return NULL;
}

void weft_parallel_for(size_t n, int jobs, void (*fn)(size_t i, void *ud), void *ud)
{
	struct pf j = {.n = n, .fn = fn, .ud = ud};
	pthread_t th[16];
	int started = 0;
	for (int k = 1; k < jobs && k < 16 && (size_t)k < n; k++)
		if (pthread_create(&th[started], NULL, pf_main, &j) == 0)
			started++;
	pf_main(&j);
	for (int k = 0; k < started; k++)
		pthread_join(th[k], NULL);
}
