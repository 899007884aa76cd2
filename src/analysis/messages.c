/*
 * messages.c - pairs every thread's flow ends by id (see messages.h). One walk of every
 * thread collects the flow ends with the span of the slice they belong to: the walk keeps the
 * thread's open slices (a flow at an end takes its slice's begin from there, a flow at a begin
 * waits there for the end), so memory follows the flows and the open depth, not the slices;
 * sorting the ends by id pairs them, the n-th out of an id with its n-th in in time order (a
 * program may reuse an id).
 */
#include "analysis/messages.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "export/model.h"

struct fend {
	uint64_t id, key;
	uint64_t t0, t1; /* the slice's begin and end (0: unknown) */
	size_t next;     /* while its slice is open: the next flow end waiting for its end, + 1 */
	int out;
	unsigned host;
};
/* A slice open on the thread walked: its begin, and the flow ends that wait for its end. */
struct open {
	uint64_t serial, ts;
	size_t waiting; /* index + 1 in f, 0: none */
};
struct walk {
	struct fend *f;
	size_t nf, fcap;
	struct open *o; /* the thread's open slices, in the order they began */
	size_t no, ocap;
	uint64_t key;
	unsigned host;
};

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	*cap = *cap ? *cap * 2 : 256;
	p = realloc(p, *cap * size);
	if (!p)
		weft_oom("checking messages");
	return p;
}

/* The open slice of this serial, searched from the innermost: -1 when none. */
static ptrdiff_t find_open(const struct walk *w, uint64_t serial)
{
	for (size_t i = w->no; i-- > 0;)
		if (w->o[i].serial == serial)
			return (ptrdiff_t)i;
	return -1;
}

static void on_event(void *ud, const struct weft_ev *e)
{
	struct walk *w = ud;
	int slice = (e->kind == WEFT_EV_BEGIN || e->kind == WEFT_EV_END) && e->serial;
	ptrdiff_t at = -1;
	if (slice && e->kind == WEFT_EV_BEGIN) {
		w->o = grow(w->o, &w->ocap, w->no, sizeof(*w->o));
		at = (ptrdiff_t)w->no;
		w->o[w->no++] = (struct open){e->serial, e->ts, 0};
	} else if (slice) {
		at = find_open(w, e->serial);
	}
	for (unsigned k = 0; k < e->nout + e->nin; k++) {
		uint64_t id = k < e->nout ? e->flows_out[k] : e->flows_in[k - e->nout];
		if (id >> 63) /* a CUDA call's arrow: its device end is no flow record */
			continue;
		w->f = grow(w->f, &w->fcap, w->nf, sizeof(*w->f));
		struct fend *f = &w->f[w->nf++];
		*f = (struct fend){.id = id, .key = w->key, .out = k < e->nout, .host = w->host};
		if (slice && e->kind == WEFT_EV_BEGIN) { /* its end is still to come */
			f->t0 = e->ts;
			f->next = w->o[at].waiting;
			w->o[at].waiting = w->nf;
		} else if (slice) {
			f->t0 = at >= 0 ? w->o[at].ts : 0;
			f->t1 = e->ts;
		} else {
			f->t0 = e->ts;
			f->t1 = e->kind == WEFT_EV_COMPLETE && e->end_ts > e->ts ? e->end_ts : e->ts;
		}
	}
	if (slice && e->kind == WEFT_EV_END && at >= 0) { /* it ends: so do the flows waiting for it */
		for (size_t i = w->o[at].waiting; i; i = w->f[i - 1].next)
			w->f[i - 1].t1 = e->ts;
		memmove(w->o + at, w->o + at + 1, (w->no - (size_t)at - 1) * sizeof(*w->o));
		w->no--;
	}
}

static int cmp_f(const void *a, const void *b)
{
	const struct fend *x = a, *y = b;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	if (x->out != y->out)
		return y->out - x->out; /* outs first */
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

void weft_messages_check(const struct weft_trace *t, struct weft_msg_stats *out)
{
	memset(out, 0, sizeof(*out));
	struct walk w = {0};
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		for (size_t k = 0; k < p->nthreads; k++) {
			struct weft_walk_stats st = {0};
			w.key = (uint64_t)i << 32 | k;
			w.host = p->host_index;
			w.no = 0; /* (slices left open: their flows keep an unknown end) */
			weft_walk_thread(p, &p->threads[k], t->last_ns, on_event, &w, &st, &buf, &cap);
		}
	}
	free(buf);
	free(w.o);
	if (w.nf)
		qsort(w.f, w.nf, sizeof(*w.f), cmp_f);
	for (size_t a = 0; a < w.nf;) {
		size_t b = a, nout = 0;
		while (b < w.nf && w.f[b].id == w.f[a].id)
			nout += w.f[b++].out;
		size_t nin = b - a - nout;
		if (!nout || !nin)
			out->unpaired++;
		for (size_t k = 0; k < nout && k < nin; k++) {
			const struct fend *o = &w.f[a + k], *r = &w.f[a + nout + k];
			if (o->key >> 32 == r->key >> 32)
				continue; /* within a process: not a message */
			out->messages++;
			out->across_hosts += o->host != r->host;
			if (r->t1 < o->t0) {
				out->backwards++;
				int64_t d = (int64_t)(r->t1 - o->t0);
				if (d < out->worst_ns)
					out->worst_ns = d;
			}
		}
		a = b;
	}
	free(w.f);
}
