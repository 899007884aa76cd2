/*
 * memory-fork.c - a fork child's inherited slices.
 * The child's main thread goes on from the forking thread's state: the slices open there at the
 * fork (FORK record: which thread, when) are open in the child too, and its allocations made in
 * them are theirs. The parent's stack at that moment is read from the parent's thread; the
 * child's walk of that thread begins with those slices begun (BEGIN records fed to the walker
 * first, with the child's site of the same name), so the child's own exits of them end them.
 * Their serials are far above the thread's own, which stay those every other walk gives.
 */
#include "analysis/memory-internal.h"
#include "format/format.h"
#include <stdlib.h>
#include <string.h>

#define INHERIT_MAX WEFT_MEM_INHERIT_MAX
#define INHERIT_SERIAL (UINT64_C(1) << 62)

struct inherit {
	const struct weft_proc *parent;
	uint64_t fork_ns;
	uint32_t ids[INHERIT_MAX];
	uint64_t serials[INHERIT_MAX];
	size_t n, deep; /* deep: levels beyond INHERIT_MAX */
	int past;       /* an event after the fork was seen: the rest of the walk is not needed */
};

static void on_parent_event(void *ud, const struct weft_ev *ev)
{
	struct inherit *in = ud;
	if (ev->ts > in->fork_ns)
		in->past = 1;
	if (in->past || ev->track)
		return;
	if (ev->kind == WEFT_EV_BEGIN) {
		if (in->n < INHERIT_MAX) {
			in->ids[in->n] = ev->id;
			in->serials[in->n++] = ev->serial;
		} else {
			in->deep++;
		}
	} else if (ev->kind == WEFT_EV_END) {
		if (in->deep) {
			in->deep--;
			return;
		}
		while (in->n && in->serials[in->n - 1] != ev->serial)
			in->n--;
		if (in->n)
			in->n--;
	}
}

/* The child's site for the parent's site `id` (by name; added when the child has none). */
static uint32_t child_site(struct weft_proc *child, const struct weft_proc *parent, uint32_t id)
{
	const char *name = weft_site_name(parent, id);
	if (!name)
		return 0;
	for (size_t i = 1; i < child->nsites; i++)
		if (child->sites[i].defined && child->sites[i].name && !strcmp(child->sites[i].name, name))
			return (uint32_t)i;
	return weft_proc_add_site(child, name, "");
}

/* The slices open on the forking thread at the fork, as the child's sites (outermost first);
 * 0 when p is not a fork child of a process in the trace, or nothing was open. */
size_t weft_mem__inherited(const struct weft_trace *t, const struct weft_proc *p, uint32_t *ids,
			   uint64_t *fork_ns)
{
	if (!p->fork_tid)
		return 0;
	struct inherit in = {.fork_ns = weft_proc_ns(p, p->fork_ticks)};
	for (size_t i = 0; i < t->nprocs; i++) { /* the parent: the latest image started before the fork */
		const struct weft_proc *q = &t->procs[i];
		if (q != p && q->pid == p->ppid && (!q->start_ns || q->start_ns <= in.fork_ns) &&
		    (!in.parent || q->gen > in.parent->gen))
			in.parent = q;
	}
	if (!in.parent)
		return 0;
	const struct weft_thread_data *th = NULL;
	for (size_t i = 0; i < in.parent->nthreads && !th; i++)
		if (in.parent->threads[i].tid == p->fork_tid)
			th = &in.parent->threads[i];
	if (!th)
		return 0;
	uint64_t *buf = NULL;
	size_t cap = 0, nw;
	const char *why;
	struct weft_walk_stats st = {0};
	struct weft_walker w;
	weft_walker_init(&w, in.parent, on_parent_event, &in, &st);
	for (size_t c = 0; c < th->nchunks && !in.past; c++) /* up to the fork only */
		if (!weft_chunk_decode_prepared(&th->chunks[c], in.parent, &buf, &cap, &nw, &why))
			weft_walker_feed_prepared(&w, buf, nw);
	weft_walker_finish(&w, t->last_ns);
	free(buf);
	for (size_t k = 0; k < in.n; k++)
		ids[k] = child_site((struct weft_proc *)p, in.parent, in.ids[k]); /* sites of the child, as symbols do */
	*fork_ns = in.fork_ns;
	return in.n;
}


void weft_mem__seed(struct weft_walker *w, const uint32_t *ids, size_t n, uint64_t ts)
{
	uint64_t seed[2 * INHERIT_MAX];
	size_t k = 0;
	for (size_t i = 0; i < n && i < INHERIT_MAX; i++)
		if (ids[i]) {
			seed[2 * k] = ts;
			seed[2 * k + 1] = (uint64_t)ids[i] | ((uint64_t)WEFT_R_BEGIN << 32);
			k++;
		}
	w->next_serial = INHERIT_SERIAL;
	weft_walker_feed_prepared(w, seed, 2 * k);
	w->next_serial = 0;
}
