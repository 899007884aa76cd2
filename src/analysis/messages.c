/*
 * messages.c - pairs every thread's flow ends by id (see messages.h). One walk of every
 * thread collects the flow ends with the slice they belong to (process, thread, slice number)
 * and the begins and ends of those slices; sorting the slices gives each flow end its slice's
 * span; sorting the ends by id pairs them, the n-th out of an id with its n-th in in time
 * order (a program may reuse an id).
 */
#include "analysis/messages.h"

#include <stdlib.h>
#include <string.h>

#include "export/model.h"

struct fend {
	uint64_t id, key, serial;
	uint64_t t0, t1; /* the slice's begin and end (0: look it up) */
	int out;
	unsigned host;
};
struct sl {
	uint64_t key, serial, ts;
	int is_end;
};
struct walk {
	struct fend *f;
	size_t nf, fcap;
	struct sl *s;
	size_t ns, scap;
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

static void on_event(void *ud, const struct weft_ev *e)
{
	struct walk *w = ud;
	int slice = e->kind == WEFT_EV_BEGIN || e->kind == WEFT_EV_END;
	if (slice && e->serial) {
		w->s = grow(w->s, &w->scap, w->ns, sizeof(*w->s));
		w->s[w->ns++] = (struct sl){w->key, e->serial, e->ts, e->kind == WEFT_EV_END};
	}
	for (unsigned k = 0; k < e->nout + e->nin; k++) {
		uint64_t id = k < e->nout ? e->flows_out[k] : e->flows_in[k - e->nout];
		if (id >> 63) /* a CUDA call's arrow: its device end is no flow record */
			continue;
		w->f = grow(w->f, &w->fcap, w->nf, sizeof(*w->f));
		struct fend *f = &w->f[w->nf++];
		*f = (struct fend){.id = id, .key = w->key, .out = k < e->nout, .host = w->host};
		if (slice && e->serial) {
			f->serial = e->serial;
			f->t0 = e->kind == WEFT_EV_BEGIN ? e->ts : 0;
			f->t1 = e->kind == WEFT_EV_END ? e->ts : 0;
		} else {
			f->t0 = e->ts;
			f->t1 = e->kind == WEFT_EV_COMPLETE && e->end_ts > e->ts ? e->end_ts : e->ts;
		}
	}
}

static int cmp_sl(const void *a, const void *b)
{
	const struct sl *x = a, *y = b;
	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->serial != y->serial)
		return x->serial < y->serial ? -1 : 1;
	return x->is_end - y->is_end;
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

static uint64_t slice_time(const struct walk *w, uint64_t key, uint64_t serial, int is_end)
{
	struct sl k = {key, serial, 0, is_end};
	const struct sl *s = bsearch(&k, w->s, w->ns, sizeof(*w->s), cmp_sl);
	return s ? s->ts : 0;
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
			weft_walk_thread(p, &p->threads[k], t->last_ns, on_event, &w, &st, &buf, &cap);
		}
	}
	free(buf);
	if (w.ns)
		qsort(w.s, w.ns, sizeof(*w.s), cmp_sl);
	for (size_t i = 0; i < w.nf; i++) {
		struct fend *f = &w.f[i];
		if (!f->serial)
			continue;
		if (!f->t0)
			f->t0 = slice_time(&w, f->key, f->serial, 0);
		if (!f->t1)
			f->t1 = slice_time(&w, f->key, f->serial, 1);
	}
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
	free(w.s);
}
