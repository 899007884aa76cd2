/*
 * memory-scan.c - pass 1 of the memory analysis (memory-internal.h): each thread of a process
 * walked once, in thread order, for what the replay must know before it starts and nothing
 * more. Every slice stack is interned (so stack ids are those of the threads' order, whatever
 * order pass 2 meets them in), every call stack (memory_stacks) kept once by hash, the time
 * span of the memory records noted (the counters' resolution and the dumps' spacing depend on
 * it), and the sampled accesses collected. No memory record is kept.
 * The slice stack bookkeeping (one stack of open slices per track) is shared with pass 2.
 */
#include "analysis/memory-internal.h"
#include "format/format.h"
#include <stdlib.h>
#include <string.h>

#define GROW MEM_GROW

static struct mem_tstack *tstack_for(struct mem_thread *th, unsigned track)
{
	for (size_t i = 0; i < th->nstacks; i++)
		if (th->stacks[i].track == track)
			return &th->stacks[i];
	th->stacks = weft_mem__realloc(th->stacks, (th->nstacks + 1) * sizeof(*th->stacks));
	struct mem_tstack *s = &th->stacks[th->nstacks++];
	memset(s, 0, sizeof(*s));
	s->track = track;
	return s;
}

void weft_mem__tstacks_free(struct mem_thread *th)
{
	for (size_t s = 0; s < th->nstacks; s++)
		free(th->stacks[s].e);
	free(th->stacks);
	th->stacks = NULL;
	th->nstacks = 0;
}

struct mem_tstack_ent *weft_mem__open_slice(struct mem_thread *th, uint64_t serial)
{
	if (!serial)
		return NULL;
	for (size_t i = 0; i < th->nstacks; i++) {
		struct mem_tstack *s = &th->stacks[i];
		if (s->n && s->e[s->n - 1].serial == serial)
			return &s->e[s->n - 1];
	}
	return NULL;
}

/* A BEGIN or END: the track's stack of open slices follows it. */
void weft_mem__slice_event(struct mem_thread *th, const struct weft_ev *ev)
{
	struct mem_tstack *s = tstack_for(th, ev->track);
	if (ev->kind == WEFT_EV_BEGIN) {
		uint32_t parent = s->n ? s->e[s->n - 1].stack : 0;
		GROW(s->e, s->n, s->cap);
		s->e[s->n].serial = ev->serial;
		s->e[s->n].stack = weft_mem__intern(th->mp, parent, ev->id);
		s->e[s->n].slice = NO_SLICE;
		s->n++;
		return;
	}
	while (s->n && s->e[s->n - 1].serial != ev->serial)
		s->n--;
	if (s->n)
		s->n--;
}

/* A record of a heap that was never defined (a damaged trace). */
int weft_mem__bad_heap(const struct weft_proc *p, const struct weft_ev *ev)
{
	return ev->id && (ev->id >= p->nsites || !p->sites[ev->id].defined || p->sites[ev->id].kind != WEFT_KIND_HEAP);
}

static void on_scan_event(void *ud, const struct weft_ev *ev)
{
	struct mem_thread *th = ud;
	if (!th->started) {
		th->started = 1;
		th->first_ts = ev->ts;
	}
	switch (ev->kind) {
	case WEFT_EV_BEGIN: case WEFT_EV_END:
		weft_mem__slice_event(th, ev);
		break;
	case WEFT_EV_ACCESS: {
		struct weft_mem_proc *mp = th->mp;
		if (ev->mfn >= 5) /* a watchpoint's hits are every access of a few bytes, not a sample */
			break;
		GROW(mp->accesses, mp->naccesses, mp->acap);
		mp->accesses[mp->naccesses++] = (struct weft_mem_point){ev->ts, 0, 0};
		GROW(th->acc->a, th->acc->n, th->acc->cap);
		th->acc->a[th->acc->n++] = (struct mem_access){ev->ts, ev->addr, ev->id, 0, 0};
		break;
	}
	case WEFT_EV_ALLOC: case WEFT_EV_FREE: case WEFT_EV_REALLOC: case WEFT_EV_HEAP_USAGE:
		if (weft_mem__bad_heap(th->mp->p, ev)) {
			th->mp->bad_records++;
			break;
		}
		if (!th->has_recs)
			th->first_rec = ev->ts;
		th->has_recs = 1;
		th->last_rec = ev->ts;
		if (ev->stack_hash && ev->nframes) {
			struct mem_frames *f = weft_mem__frames(th->frames, ev->stack_hash, 1);
			if (!f->pcs && !f->n) {
				f->pcs = weft_mem__realloc(NULL, ev->nframes * sizeof(uint64_t));
				memcpy(f->pcs, ev->frames, ev->nframes * sizeof(uint64_t));
				f->n = ev->nframes;
			}
		}
		break;
	default:
		break;
	}
}

void weft_mem__scan_thread(struct mem_replay *rp, struct mem_thread *th)
{
	const struct weft_proc *p = rp->mp->p;
	const struct weft_thread_data *td = &p->threads[th->index];
	th->scan = 1;
	if (th->index == rp->seeded_thread) { /* the forking thread's continuation */
		struct weft_walker w;
		weft_walker_init(&w, p, on_scan_event, th, &th->st);
		weft_mem__seed(&w, rp->inherited, rp->ninherited, rp->fork_ns);
		for (size_t c = 0; c < td->nchunks; c++) {
			size_t nw;
			const char *why;
			int rc = weft_chunk_decode_prepared(&td->chunks[c], p, &rp->buf, &rp->bufcap, &nw, &why);
			if (rc)
				weft_walk_stats_refused(&th->st, rc, why);
			else
				weft_walker_feed_prepared(&w, rp->buf, nw);
		}
		weft_walker_finish(&w, rp->t->last_ns);
	} else {
		weft_walk_thread(p, td, rp->t->last_ns, on_scan_event, th, &th->st, &rp->buf, &rp->bufcap);
	}
	weft_mem__tstacks_free(th);
	th->scan = 0;
}
