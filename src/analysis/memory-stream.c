/*
 * memory-stream.c - pass 2 of the memory analysis (memory-internal.h): the process's memory
 * records in time order, without holding them. Every thread has its own walker, fed one chunk
 * at a time; the records a chunk gives wait in the thread's queue. The threads' queues are
 * merged by a binary heap keyed by (time, thread index) of each queue's head: the smallest goes
 * to the replay, and a queue that runs dry reads its thread's next chunk (until one gives a
 * record, or the thread ends). Ties go to the lower thread, as a merge of the whole threads
 * would. Memory: one chunk's records per thread, the walkers' open slices.
 */
#include "analysis/memory-internal.h"
#include "format/minheap.h"
#include "format/format.h"
#include <stdlib.h>
#include <string.h>

#define GROW MEM_GROW

/* Pass 2's view of an event: slices followed, memory records queued with their stacks. */
static void on_stream_event(void *ud, const struct weft_ev *ev)
{
	struct mem_thread *th = ud;
	switch (ev->kind) {
	case WEFT_EV_BEGIN: case WEFT_EV_END:
		weft_mem__slice_event(th, ev);
		break;
	case WEFT_EV_ALLOC: case WEFT_EV_FREE: case WEFT_EV_REALLOC: case WEFT_EV_HEAP_USAGE: {
		if (weft_mem__bad_heap(th->mp->p, ev)) /* counted by the scan */
			break;
		struct mem_tstack_ent *se = weft_mem__open_slice(th, ev->serial);
		GROW(th->q, th->qn, th->qcap);
		struct mem_rec *r = &th->q[th->qn++];
		memset(r, 0, sizeof(*r));
		r->ts = ev->ts;
		r->addr = ev->addr;
		r->addr2 = ev->addr2;
		r->size = ev->size;
		r->heap = ev->id;
		r->type = (uint16_t)ev->kind;
		r->fn = (uint8_t)ev->mfn;
		r->stack = se ? se->stack : 0;
		r->slice = NO_SLICE;
		if (ev->stack_hash) { /* memory_stacks: named by its call stack (resolved by the scan) */
			const struct mem_frames *f = weft_mem__frames(th->frames, ev->stack_hash, 0);
			if (f && f->resolved)
				r->stack = f->stack;
		}
		if (se && ev->kind != WEFT_EV_HEAP_USAGE) {
			if (se->slice == NO_SLICE) {
				struct weft_mem_thread *mt = th->mt;
				GROW(mt->slices, mt->nslices, mt->scap);
				memset(&mt->slices[mt->nslices], 0, sizeof(mt->slices[0]));
				mt->slices[mt->nslices].serial = se->serial;
				se->slice = (uint32_t)mt->nslices++;
			}
			r->slice = se->slice;
		}
		break;
	}
	default:
		break;
	}
}

/* Reads thread th's chunks until its queue holds a record; 0 when the thread has no more. */
static int refill(struct mem_replay *rp, struct mem_thread *th)
{
	const struct weft_proc *p = rp->mp->p;
	const struct weft_thread_data *td = &p->threads[th->index];
	th->qhead = th->qn = 0;
	if (!th->walking && !th->done) {
		weft_walker_init(&th->w, p, on_stream_event, th, &th->st);
		if (th->index == rp->seeded_thread)
			weft_mem__seed(&th->w, rp->inherited, rp->ninherited, rp->fork_ns);
		th->walking = 1;
	}
	while (!th->qn && !th->done) {
		if (th->next_chunk < td->nchunks) {
			size_t nw;
			const char *why;
			int rc = weft_chunk_decode_prepared(&td->chunks[th->next_chunk++], p, &rp->buf, &rp->bufcap, &nw,
							    &why);
			if (rc)
				weft_walk_stats_refused(&th->st, rc, why);
			else
				weft_walker_feed_prepared(&th->w, rp->buf, nw);
		} else {
			weft_walker_finish(&th->w, rp->t->last_ns); /* what is pending comes out */
			th->walking = 0;
			th->done = 1;
		}
	}
	if (th->done) {
		weft_mem__tstacks_free(th);
		if (!th->qn) {
			free(th->q);
			th->q = NULL;
			th->qcap = 0;
		}
	}
	return th->qn > 0;
}

static int less(const void *ctx, size_t a, size_t b)
{
	const struct mem_replay *rp = ctx;
	uint64_t x = rp->threads[a].q[rp->threads[a].qhead].ts, y = rp->threads[b].q[rp->threads[b].qhead].ts;
	return x < y || (x == y && a < b);
}

void weft_mem__stream(struct mem_replay *rp)
{
	struct weft_mem_proc *mp = rp->mp;
	size_t *heap = calloc(rp->nthreads + 1, sizeof(*heap));
	if (!heap)
		weft_oom("the memory analysis");
	size_t hn = 0;
	for (uint32_t t = 0; t < rp->nthreads; t++) {
		if (!rp->threads[t].has_recs || !refill(rp, &rp->threads[t]))
			continue; /* (a thread without records only moves slices: nothing to replay) */
		size_t i = hn++;
		heap[i] = t;
		while (i && less(rp, heap[i], heap[(i - 1) / 2])) {
			size_t x = heap[i];
			heap[i] = heap[(i - 1) / 2];
			heap[(i - 1) / 2] = x;
			i = (i - 1) / 2;
		}
	}
	while (hn) {
		uint32_t t = (uint32_t)heap[0];
		struct mem_thread *th = &rp->threads[t];
		struct mem_rec *r = &th->q[th->qhead];
		while (r->ts >= rp->next_dump && rp->next_dump < mp->last_ts) {
			weft_mem__dump(mp, rp->next_dump, 0, NULL, NULL);
			rp->next_dump += rp->dump_every;
		}
		weft_mem__join_accesses(rp, r->ts, 0); /* an access at the time of a record comes after it */
		weft_mem__apply(rp, r, t, rp->norder++);
		if (th->npend && r->type != WEFT_EV_HEAP_USAGE)
			weft_mem__settle(rp, th, r);
		if (++th->qhead == th->qn && !refill(rp, th))
			heap[0] = heap[--hn];
		weft_heap_sift_down(heap, hn, 0, less, rp);
	}
	free(heap);
}
