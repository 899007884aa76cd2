/*
 * model.c - see model.h. One pass over a thread's records with a small stack per track.
 */
#include "export/model.h"
#include "export/export.h"
#include "format/format.h"
#include "format/symbols.h"
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct weft_walk_stack {
	unsigned track;
	uint32_t *ids;
	uint64_t *serials; /* of the open slices, as ids */
	size_t n, cap;
};

static struct weft_walk_stack *stack_for_slow(struct weft_walker *w, unsigned track);

/* The thread's own track (functions, most slices) is looked up first. NULL when memory ran
 * out (counted in oom). */
static inline struct weft_walk_stack *stack_for(struct weft_walker *w, unsigned track)
{
	if (__builtin_expect(w->nstacks && w->stacks[0].track == track, 1))
		return &w->stacks[0];
	return stack_for_slow(w, track);
}

static struct weft_walk_stack *stack_for_slow(struct weft_walker *w, unsigned track)
{
	for (size_t i = 0; i < w->nstacks; i++)
		if (w->stacks[i].track == track)
			return &w->stacks[i];
	struct weft_walk_stack *s = realloc(w->stacks, (w->nstacks + 1) * sizeof(*s));
	if (!s) {
		w->st->oom++; /* the caller leaves out what needed the stack */
		return NULL;
	}
	w->stacks = s;
	s = &w->stacks[w->nstacks++];
	memset(s, 0, sizeof(*s));
	s->track = track;
	return s;
}

/* The track's stack with room for one more id, or NULL when memory ran out (counted). */
static struct weft_walk_stack *room_on(struct weft_walker *w, unsigned track)
{
	struct weft_walk_stack *s = stack_for(w, track);
	if (s && s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64; /* (64 << k: passes WEFT_UI_LEVELS from it) */
		if (s->cap == WEFT_UI_LEVELS) /* level 513 opens: counted once a stack, off the hot path */
			w->st->deep++;
		uint32_t *ids = realloc(s->ids, cap * sizeof(*ids));
		if (ids)
			s->ids = ids;
		uint64_t *ser = ids ? realloc(s->serials, cap * sizeof(*ser)) : NULL;
		if (!ser) {
			w->st->oom++;
			return NULL;
		}
		s->serials = ser;
		s->cap = cap;
	}
	return s;
}

void weft_export_summary_add(struct weft_export_summary *sum, const struct weft_walk_stats *st)
{
	sum->events += st->events;
	sum->unmatched_end += st->unmatched_end;
	sum->unterminated += st->unterminated;
	sum->deep += st->deep;
	sum->unwound += st->unwound;
	sum->bad_chunks += st->bad_chunks;
	if (!sum->bad_why)
		sum->bad_why = st->bad_why;
	sum->oom += st->oom;
}

int weft_export_result(const struct weft_export_summary *sum, int rc, char *err, size_t errlen)
{
	if (rc || !sum->oom)
		return rc;
	snprintf(err, errlen, "out of memory: some chunks or events could not be read; the output is incomplete");
	return -ENOMEM;
}

void weft_walk_stats_refused(struct weft_walk_stats *st, int rc, const char *why)
{
	if (rc == -ENOMEM) {
		st->oom++;
		return;
	}
	st->bad_chunks++;
	if (!st->bad_why)
		st->bad_why = why;
}

/* The fields of a light pending event that start() or emit_end() would have set: what a plain
 * event has none of. */
static void fill_light(struct weft_walker *w)
{
	struct weft_ev *e = &w->ev;
	w->light = 0;
	e->flags = 0;
	e->end_ts = 0;
	e->value = 0;
	e->is_double = 0;
	e->nctr = 0;
	e->has_cm = 0;
	e->cm_user_ns = e->cm_sys_ns = e->cm_rss = 0;
	e->nargs = e->nout = e->nin = 0;
	e->stack_hash = 0;
	e->nframes = 0;
	e->frames = NULL;
}

/* Before the pending event gets something attached (or is looked at beyond kind and id). */
static inline void unlight(struct weft_walker *w)
{
	if (w->light)
		fill_light(w);
}

/* The batch of plain events to plain; each one it leaves goes to fn in full. */
static void batch_out(struct weft_walker *w)
{
	size_t n = w->nbatch, i = 0;
	w->nbatch = 0;
	while (i < n) {
		i += w->plain(w->ud, w->batch + i, n - i);
		if (i == n)
			break;
		const struct weft_plain_ev *b = &w->batch[i++];
		struct weft_ev e;
		e.kind = b->kind;
		e.ts = b->ts;
		e.id = b->id;
		e.track = 0;
		e.serial = b->serial;
		e.flags = 0;
		e.end_ts = 0;
		e.value = 0;
		e.is_double = 0;
		e.nctr = 0;
		e.has_cm = 0;
		e.cm_user_ns = e.cm_sys_ns = e.cm_rss = 0;
		e.nargs = e.nout = e.nin = 0;
		e.stack_hash = 0;
		e.nframes = 0;
		e.frames = NULL;
		w->fn(w->ud, &e);
	}
}

/* An event to fn, after the plain ones before it. */
static inline void deliver(struct weft_walker *w, const struct weft_ev *e)
{
	if (w->nbatch)
		batch_out(w);
	w->fn(w->ud, e);
}

static inline void flush(struct weft_walker *w)
{
	if (!w->pending)
		return;
	if (w->pending == 1) /* an END (2) was counted when it closed its slice */
		w->st->events++;
	w->pending = 0;
	if (w->light) { /* plain: into the batch for plain */
		w->light = 0;
		if (w->plain) {
			struct weft_plain_ev *b = &w->batch[w->nbatch++];
			/* each field read as it was written, 8 or 4 bytes: a wider load made of two
			 * fields (GCC pairs ts with its neighbour) waits for the stores just made to
			 * reach the cache instead of taking them from the store buffer (~5 ns an event) */
			uint64_t ts = w->ev.ts, serial = w->ev.serial;
			__asm__("" : "+r"(ts), "+r"(serial));
			b->ts = ts;
			b->serial = serial;
			b->id = w->ev.id;
			b->kind = w->ev.kind;
			if (w->nbatch == WEFT_PLAIN_BATCH)
				batch_out(w);
			return;
		}
		fill_light(w);
	}
	deliver(w, &w->ev);
}

/* Everything pending out, plain or not (the end of a chunk: the callbacks see each chunk's
 * events before the walker returns). */
static void flush_all(struct weft_walker *w)
{
	flush(w);
	if (w->nbatch)
		batch_out(w);
}

/* An END closes its slice at once; where it is the end the records asked for (not an unwound
 * inner slice's), it stays pending like a BEGIN, so that the arguments and flows after it (format
 * 1.7: what a call learnt when it returned, such as an MPI receive's source) belong to the slice. */
static void emit_end(struct weft_walker *w, uint64_t ts, uint32_t id, uint64_t serial, unsigned track,
		     unsigned flags, const uint64_t *ctr, unsigned nctr, int keep)
{
	struct weft_ev tmp, *e = keep ? &w->ev : &tmp;
	if (keep && !flags && !nctr && !track && w->cm_end.valid != 2) { /* plain so far: light */
		e->kind = WEFT_EV_END;
		e->ts = ts;
		e->id = id;
		e->track = 0;
		e->serial = serial;
		w->pending = 2;
		w->light = 1;
		return;
	}
	e->has_cm = 0;
	e->cm_user_ns = e->cm_sys_ns = e->cm_rss = 0;
	e->nctr = nctr;
	if (nctr)
		memcpy(e->ctr, ctr, 8 * (size_t)nctr);
	e->serial = serial;
	e->stack_hash = 0;
	e->nframes = 0;
	e->frames = NULL;
	e->kind = WEFT_EV_END;
	e->flags = flags;
	e->ts = ts;
	e->end_ts = 0;
	e->id = id;
	e->track = track;
	e->value = 0;
	e->is_double = 0;
	e->nargs = e->nout = e->nin = 0;
	if (w->cm_end.valid == 2 && !(flags & WEFT_EVF_UNWOUND)) {
		e->has_cm = 1;
		e->cm_user_ns = w->cm_end.user;
		e->cm_sys_ns = w->cm_end.sys;
		e->cm_rss = w->cm_end.rss;
	}
	if (keep)
		w->pending = 2;
	else
		deliver(w, &tmp);
}

/* A BEGIN on the thread's own track, light (its serial the caller's to set). */
static inline void start_light(struct weft_walker *w, uint64_t ts, uint32_t id)
{
	flush(w);
	struct weft_ev *e = &w->ev;
	e->kind = WEFT_EV_BEGIN;
	e->ts = ts;
	e->id = id;
	e->track = 0;
	w->pending = 1;
	w->light = 1;
	if (ts > w->last_ts)
		w->last_ts = ts;
}

static void start(struct weft_walker *w, unsigned kind, uint64_t ts, uint32_t id, unsigned track)
{
	flush(w);
	w->light = 0;
	struct weft_ev *e = &w->ev;
	e->kind = kind;
	e->flags = 0;
	e->ts = ts;
	e->end_ts = 0;
	e->id = id;
	e->track = track;
	e->value = 0;
	e->is_double = 0;
	e->nctr = 0;
	e->has_cm = 0;
	e->nargs = e->nout = e->nin = 0;
	e->serial = 0;
	e->stack_hash = 0;
	e->nframes = 0;
	e->frames = NULL;
	w->pending = 1;
	if (ts > w->last_ts)
		w->last_ts = ts;
}

static int attachable(const struct weft_walker *w)
{
	if (!w->pending)
		return 0;
	unsigned k = w->ev.kind;
	return k == WEFT_EV_BEGIN || k == WEFT_EV_END || k == WEFT_EV_INSTANT || k == WEFT_EV_COMPLETE ||
	       k == WEFT_EV_ASYNC_BEGIN || k == WEFT_EV_ASYNC_INSTANT;
}

static void on_end(struct weft_walker *w, uint64_t ts, uint32_t id, unsigned track, unsigned flags,
		   const uint64_t *ctr, unsigned nctr)
{
	flush(w);
	if (ts > w->last_ts)
		w->last_ts = ts;
	int cm = w->cm_end.valid && w->cm_end.id == id; /* the CPUMEM record right before it */
	w->cm_end.valid = 0;
	struct weft_walk_stack *s = stack_for(w, track);
	if (!s)
		return;
	size_t i = s->n;
	while (i > 0 && s->ids[i - 1] != id)
		i--;
	if (i == 0) {
		w->st->unmatched_end++;
		return;
	}
	while (s->n > i) { /* inner slices whose ends never came */
		w->st->unwound++;
		s->n--;
		emit_end(w, ts, s->ids[s->n], s->serials[s->n], track, WEFT_EVF_UNWOUND, NULL, 0, 0);
	}
	s->n--;
	w->st->events++;
	if (!cm) {
		emit_end(w, ts, id, s->serials[s->n], track, flags, ctr, nctr, 1);
		return;
	}
	w->cm_end.valid = 2; /* emit_end attaches it */
	emit_end(w, ts, id, s->serials[s->n], track, flags, ctr, nctr, 1);
	w->cm_end.valid = 0;
}

/* on_end's common case, inline: an end on the thread's own track with nothing of its own (no
 * flags, counters or CPUMEM before it) that closes the innermost open slice. 0: not that case
 * (nothing done: on_end handles it). */
static inline int end_plain(struct weft_walker *w, uint64_t ts, uint32_t id)
{
	if (w->cm_end.valid || !w->nstacks || w->stacks[0].track != 0)
		return 0;
	struct weft_walk_stack *s = &w->stacks[0];
	if (!s->n || s->ids[s->n - 1] != id)
		return 0;
	flush(w);
	if (ts > w->last_ts)
		w->last_ts = ts;
	s->n--;
	w->st->events++;
	struct weft_ev *e = &w->ev; /* emit_end's light END */
	e->kind = WEFT_EV_END;
	e->ts = ts;
	e->id = id;
	e->track = 0;
	e->serial = s->serials[s->n];
	w->pending = 2;
	w->light = 1;
	return 1;
}

/* setjmp: remember how deep the thread's own track was; longjmp to that jmp_buf closes what
 * lies above (the calls it skips never exit). */
static void note_setjmp(struct weft_walker *w, uint64_t env)
{
	struct weft_walk_stack *s = stack_for(w, 0);
	if (!s)
		return;
	size_t depth = s->n;
	for (size_t i = 0; i < w->njmps; i++)
		if (w->jmps[i].env == env) {
			w->jmps[i].depth = depth;
			return;
		}
	if (w->njmps == w->jcap) {
		size_t cap = w->jcap ? w->jcap * 2 : 8;
		void *j = realloc(w->jmps, cap * sizeof(*w->jmps));
		if (!j) { /* the longjmp will find no setjmp: its skipped calls close later */
			w->st->oom++;
			return;
		}
		w->jmps = j;
		w->jcap = cap;
	}
	w->jmps[w->njmps].env = env;
	w->jmps[w->njmps++].depth = depth;
}

static void on_longjmp(struct weft_walker *w, uint64_t ts, uint64_t env)
{
	flush(w);
	struct weft_walk_stack *s = stack_for(w, 0);
	if (!s)
		return;
	for (size_t i = 0; i < w->njmps; i++)
		if (w->jmps[i].env == env) {
			while (s->n > w->jmps[i].depth) {
				w->st->unwound++;
				s->n--;
				emit_end(w, ts, s->ids[s->n], s->serials[s->n], 0, WEFT_EVF_UNWOUND, NULL, 0, 0);
			}
			return;
		}
}

void weft_walker_init(struct weft_walker *w, const struct weft_proc *p, weft_ev_fn fn, void *ud,
		      struct weft_walk_stats *st)
{
	memset(w, 0, sizeof(*w));
	w->p = p;
	w->fn = fn;
	w->ud = ud;
	w->st = st;
}

static void walk(struct weft_walker *wk, const uint64_t *r, size_t n);

/* A site with a source location (SOURCE, 1.4): its file and line as the pending event's first
 * arguments. */
static void source_args(struct weft_walker *w, uint32_t id)
{
	const struct weft_proc *p = w->p;
	if (id >= p->nsites || !p->sites[id].file)
		return;
	struct weft_ev_arg *a = &w->ev.args[w->ev.nargs++];
	a->key = p->key_file;
	a->type = WEFT_R_ARG_STR;
	a->s = p->sites[id].file;
	a->slen = strlen(a->s);
	a->v = a->slen;
	a = &w->ev.args[w->ev.nargs++];
	a->key = p->key_line;
	a->type = WEFT_R_ARG_I64;
	a->v = p->sites[id].line;
	a->s = NULL;
	a->slen = 0;
}

/* The serial of the innermost slice open on any track of the thread (the latest begun of the
 * stacks' tops), 0 when none is. */
static uint64_t innermost(const struct weft_walker *w)
{
	uint64_t best = 0;
	for (size_t i = 0; i < w->nstacks; i++) {
		const struct weft_walk_stack *s = &w->stacks[i];
		if (s->n && s->serials[s->n - 1] > best)
			best = s->serials[s->n - 1];
	}
	return best;
}

void weft_walker_skip(struct weft_walker *w)
{
	flush_all(w);
}

void weft_walker_feed(struct weft_walker *wk, uint64_t *r, size_t n)
{
	weft_records_prepare(wk->p, r, n);
	walk(wk, r, n);
}

void weft_walker_feed_prepared(struct weft_walker *wk, uint64_t *r, size_t n)
{
	walk(wk, r, n);
}

/* A run of function entries and exits with nothing of their own (the bulk of a trace of
 * -finstrument-functions code) for a walker with a plain hook: what the general loop below does
 * with them, without its dispatch. Stops at the first record that needs more (another type,
 * extra words, a stack to grow, an exit that is not the innermost's); returns its index. */
static size_t plain_run(struct weft_walker *wk, const uint64_t *r, size_t i, size_t n)
{
	struct weft_walk_stack *s = &wk->stacks[0]; /* the thread's own track's (the caller checked) */
	for (; i + 2 <= n; i += 2) {
		uint64_t h = r[i + 1];
		uint32_t id = weft_rec_id(h);
		__builtin_prefetch(r + i + 128);
		if ((h >> 32) == WEFT_R_FUNC_ENTER) { /* (type, no extra words, track 0) */
			if (s->n == s->cap)
				break;
			start_light(wk, r[i], id);
			wk->ev.serial = ++wk->next_serial;
			s->serials[s->n] = wk->next_serial;
			s->ids[s->n++] = id;
		} else if ((h >> 32) != WEFT_R_FUNC_EXIT || !end_plain(wk, r[i], id)) {
			break;
		}
	}
	return i;
}

static void walk(struct weft_walker *wk, const uint64_t *r, size_t n)
{
	struct weft_walk_stats *st = wk->st;
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1])) {
		if (wk->plain && !wk->p->key_file && wk->nstacks && !wk->stacks[0].track &&
		    (i = plain_run(wk, r, i, n)) + 2 > n)
			break;
		uint64_t h = r[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (i + 2 + extra > n)
			break; /* a record cut by the end of its chunk */
		__builtin_prefetch(r + i + 128); /* decoded on another core (weft_walk_thread) */
		uint32_t id = weft_rec_id(h);
		unsigned track = weft_rec_track(h);
		uint64_t x = extra ? r[i + 2] : 0;
		switch (type) {
		case WEFT_R_BEGIN:
		case WEFT_R_FUNC_ENTER: { /* prepared: a function's id is its site's, track 0 */
			unsigned tr = type == WEFT_R_BEGIN ? track : 0;
			struct weft_walk_stack *s = room_on(wk, tr);
			if (!s) { /* left out (counted); its arguments must not go to the event before */
				flush(wk);
				break;
			}
			if (tr == 0)
				start_light(wk, r[i], id);
			else
				start(wk, WEFT_EV_BEGIN, r[i], id, tr);
			if (extra && extra == wk->p->nctr) { /* counters= (1.5) */
				unlight(wk);
				wk->ev.nctr = extra;
				memcpy(wk->ev.ctr, r + i + 2, 8 * (size_t)extra);
			}
			wk->ev.serial = ++wk->next_serial;
			s->serials[s->n] = wk->next_serial;
			s->ids[s->n++] = id;
			if (__builtin_expect(wk->p->key_file != 0, 0)) {
				unlight(wk);
				source_args(wk, id);
			}
			break;
		}
		case WEFT_R_END: /* 1.4: an extra word of flags (WEFT_END_*) */
			/* 1.5: the counters after the flags */
			if (!extra && !track && end_plain(wk, r[i], id))
				break;
			on_end(wk, r[i], id, track, (extra && (x & WEFT_END_EXCEPTION)) ? WEFT_EVF_EXCEPTION : 0,
			       r + i + 3, extra == 1 + wk->p->nctr && wk->p->nctr ? wk->p->nctr : 0);
			break;
		case WEFT_R_FUNC_EXIT:
			if (!extra && end_plain(wk, r[i], id))
				break;
			on_end(wk, r[i], id, 0, 0, r + i + 2, extra && extra == wk->p->nctr ? extra : 0);
			break;
		case WEFT_R_SETJMP:
			flush(wk);
			note_setjmp(wk, weft_rec_addr(h));
			break;
		case WEFT_R_LONGJMP:
			on_longjmp(wk, r[i], weft_rec_addr(h));
			break;
		case WEFT_R_INSTANT:
			start(wk, WEFT_EV_INSTANT, r[i], id, track);
			if (__builtin_expect(wk->p->key_file != 0, 0))
				source_args(wk, id);
			break;
		case WEFT_R_COUNTER_I64:
		case WEFT_R_COUNTER_F64:
			start(wk, WEFT_EV_COUNTER, r[i], id, 0);
			wk->ev.value = x;
			wk->ev.is_double = type == WEFT_R_COUNTER_F64;
			break;
		case WEFT_R_ASYNC_BEGIN:
		case WEFT_R_ASYNC_END:
		case WEFT_R_ASYNC_INSTANT:
			start(wk, type == WEFT_R_ASYNC_BEGIN ? WEFT_EV_ASYNC_BEGIN :
				  type == WEFT_R_ASYNC_END ? WEFT_EV_ASYNC_END : WEFT_EV_ASYNC_INSTANT,
			      r[i], id, 0);
			wk->ev.value = x;
			break;
		case WEFT_R_COMPLETE:
			start(wk, WEFT_EV_COMPLETE, r[i], id, track);
			wk->ev.end_ts = x < r[i] ? r[i] : x;
			break;
		case WEFT_R_DROPPED:
			start(wk, WEFT_EV_DROPPED, r[i], 0, 0);
			wk->ev.value = x;
			st->events--; /* not an event of the program's */
			break;
		case WEFT_R_ARG_I64: case WEFT_R_ARG_U64: case WEFT_R_ARG_F64:
		case WEFT_R_ARG_BOOL: case WEFT_R_ARG_PTR: case WEFT_R_ARG_STR:
			if (!attachable(wk))
				break;
			unlight(wk);
			if (wk->ev.nargs < WEFT_EV_MAX_ARGS) {
				struct weft_ev_arg *a = &wk->ev.args[wk->ev.nargs++];
				a->key = id;
				a->type = type;
				a->v = r[i];
				a->s = type == WEFT_R_ARG_STR ? (const char *)(r + i + 2) : NULL;
				a->slen = type == WEFT_R_ARG_STR ? (r[i] < (uint64_t)extra * 8 ? r[i] : (uint64_t)extra * 8) : 0;
			}
			break;
		case WEFT_R_FLOW_OUT:
		case WEFT_R_FLOW_IN:
			if (!attachable(wk)) { /* its event was filtered or dropped: so is the arrow */
				st->orphan_flows++;
				break;
			}
			unlight(wk);
			if (type == WEFT_R_FLOW_OUT && wk->ev.nout < WEFT_EV_MAX_FLOWS)
				wk->ev.flows_out[wk->ev.nout++] = r[i];
			if (type == WEFT_R_FLOW_IN && wk->ev.nin < WEFT_EV_MAX_FLOWS)
				wk->ev.flows_in[wk->ev.nin++] = r[i];
			break;
		case WEFT_R_ALLOC:
		case WEFT_R_FREE:
		case WEFT_R_REALLOC:
		case WEFT_R_HEAP_USAGE: {
			static const unsigned kinds[] = {WEFT_EV_ALLOC, WEFT_EV_FREE, WEFT_EV_REALLOC,
							 WEFT_EV_HEAP_USAGE};
			start(wk, kinds[type - WEFT_R_ALLOC], r[i], id, 0);
			struct weft_ev *e = &wk->ev;
			e->mfn = track;
			e->serial = innermost(wk);
			e->addr = x;
			e->addr2 = extra > 1 ? r[i + 3] : 0;
			e->size = extra > 2 ? r[i + 4] : 0;
			if (type == WEFT_R_ALLOC) {
				e->size = e->addr2;
				e->addr2 = 0;
			}
			break;
		}
		case WEFT_R_ACCESS:
			start(wk, WEFT_EV_ACCESS, r[i], id, 0);
			wk->ev.mfn = track;
			wk->ev.addr = x;
			wk->ev.addr2 = extra > 1 ? r[i + 3] : 0;
			wk->ev.size = extra > 2 ? r[i + 4] : 0;  /* latency (PEBS/IBS) */
			wk->ev.value = extra > 3 ? r[i + 5] : 0; /* data source */
			break;
		case WEFT_R_SCHED:
			start(wk, WEFT_EV_SCHED, r[i], id, 0);
			wk->ev.mfn = track;
			wk->ev.nframes = extra;
			wk->ev.frames = r + i + 2;
			break;
		case WEFT_R_CPUMEM: /* 1.5: at a slice's begin (track 0, after it) or end (1, before it) */
			if (extra < 2)
				break;
			if (track == 0 && wk->pending && wk->ev.kind == WEFT_EV_BEGIN && wk->ev.id == id) {
				unlight(wk);
				wk->ev.has_cm = 1;
				wk->ev.cm_rss = r[i];
				wk->ev.cm_user_ns = r[i + 2];
				wk->ev.cm_sys_ns = r[i + 3];
			} else if (track == 1) {
				wk->cm_end.valid = 1;
				wk->cm_end.id = id;
				wk->cm_end.rss = r[i];
				wk->cm_end.user = r[i + 2];
				wk->cm_end.sys = r[i + 3];
			}
			break;
		case WEFT_R_STACK:
			if (wk->pending && (wk->ev.kind == WEFT_EV_ALLOC || wk->ev.kind == WEFT_EV_REALLOC)) {
				wk->ev.stack_hash = r[i];
				wk->ev.nframes = extra;
				wk->ev.frames = r + i + 2;
			}
			break;
		default:
			break; /* unknown record type of a newer minor version: skipped */
		}
	}
	/* arguments never cross a chunk: what is pending is complete, and must go before the
	 * chunk's memory is reused */
	flush_all(wk);
}

void weft_walker_finish(struct weft_walker *w, uint64_t end_ns)
{
	flush(w);
	/* strictly after the thread's last event, so an end never ties with its begin */
	if (end_ns <= w->last_ts)
		end_ns = w->last_ts + 1;
	for (size_t s = 0; s < w->nstacks; s++) {
		struct weft_walk_stack *k = &w->stacks[s];
		while (k->n > 0) {
			w->st->unterminated++;
			k->n--;
			emit_end(w, end_ns, k->ids[k->n], k->serials[k->n], k->track, WEFT_EVF_UNTERMINATED, NULL, 0, 0);
		}
		free(k->ids);
		free(k->serials);
	}
	flush_all(w);
	free(w->stacks);
	w->stacks = NULL;
	w->nstacks = 0;
	free(w->jmps);
	w->jmps = NULL;
	w->njmps = w->jcap = 0;
}

/* Decoding and preparing run one chunk ahead of the walk on a helper thread (two slots), so a
 * trace of one busy thread still uses both cores. */
struct prefetch {
	const struct weft_proc *p;
	const struct weft_thread_data *th;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	uint64_t *buf[2];
	size_t cap[2], n[2];
	int state[2]; /* 0 free, 1 decoded, 2 refused (rc, why) */
	int rc[2];
	const char *why[2];
	size_t next;  /* next chunk to decode */
	int quit;
};

static void *prefetch_main(void *arg)
{
	struct prefetch *f = arg;
	for (size_t c = 0; c < f->th->nchunks; c++) {
		int slot = (int)(c & 1);
		pthread_mutex_lock(&f->lock);
		while (f->state[slot] != 0 && !f->quit)
			pthread_cond_wait(&f->cond, &f->lock);
		int quit = f->quit;
		pthread_mutex_unlock(&f->lock);
		if (quit)
			break;
		const char *why = NULL;
		int rc = weft_chunk_decode_prepared(&f->th->chunks[c], f->p, &f->buf[slot], &f->cap[slot],
						    &f->n[slot], &why);
		pthread_mutex_lock(&f->lock);
		f->state[slot] = rc ? 2 : 1;
		f->rc[slot] = rc;
		f->why[slot] = why;
		pthread_cond_broadcast(&f->cond);
		pthread_mutex_unlock(&f->lock);
	}
	return NULL;
}

void weft_walk_thread(const struct weft_proc *p, const struct weft_thread_data *th,
		      uint64_t trace_end_ns, weft_ev_fn fn, void *ud, struct weft_walk_stats *st,
		      uint64_t **buf, size_t *cap)
{
	weft_walk_thread_plain(p, th, trace_end_ns, fn, NULL, ud, st, buf, cap);
}

void weft_walk_thread_plain(const struct weft_proc *p, const struct weft_thread_data *th,
			    uint64_t trace_end_ns, weft_ev_fn fn, weft_plain_fn plain, void *ud,
			    struct weft_walk_stats *st, uint64_t **buf, size_t *cap)
{
	struct weft_walker w;
	weft_walker_init(&w, p, fn, ud, st);
	w.plain = plain;
	struct prefetch f = {.p = p, .th = th, .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};
	pthread_t helper;
	int ahead = th->nchunks >= 3 && pthread_create(&helper, NULL, prefetch_main, &f) == 0;
	for (size_t c = 0; c < th->nchunks; c++) {
		size_t n;
		const char *why;
		if (!ahead) {
			int rc = weft_chunk_decode_prepared(&th->chunks[c], p, buf, cap, &n, &why);
			if (rc) {
				weft_walk_stats_refused(st, rc, why);
				continue;
			}
			walk(&w, *buf, n);
			continue;
		}
		int slot = (int)(c & 1);
		pthread_mutex_lock(&f.lock);
		while (f.state[slot] == 0)
			pthread_cond_wait(&f.cond, &f.lock);
		int state = f.state[slot];
		pthread_mutex_unlock(&f.lock);
		if (state == 2)
			weft_walk_stats_refused(st, f.rc[slot], f.why[slot]);
		else
			walk(&w, f.buf[slot], f.n[slot]);
		pthread_mutex_lock(&f.lock);
		f.state[slot] = 0;
		pthread_cond_broadcast(&f.cond);
		pthread_mutex_unlock(&f.lock);
	}
	if (ahead) {
		pthread_mutex_lock(&f.lock);
		f.quit = 1;
		pthread_cond_broadcast(&f.cond);
		pthread_mutex_unlock(&f.lock);
		pthread_join(helper, NULL);
		free(f.buf[0]);
		free(f.buf[1]);
	}
	weft_walker_finish(&w, trace_end_ns);
}

_Atomic uint64_t weft_export_progress;

int weft_jobs(int jobs)
{
	if (jobs <= 0) {
		long cores = sysconf(_SC_NPROCESSORS_ONLN);
		jobs = cores < 1 ? 1 : (int)(cores > 16 ? 16 : cores);
	}
	return jobs > 16 ? 16 : jobs;
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
