/*
 * mpi.c - `weft report --mpi` and `weft plot mpi`'s numbers, in one pass over every thread's
 * records (the model walker), keeping per rank and function a few counters, the matrix's
 * (sender, receiver) pairs, and only the MPI slices whose other end has not been seen yet.
 *
 * Ranks. A process's rank is weft_proc_rank() (MPI's world rank, else the launcher's).
 * Processes with no rank that hold MPI call sites are numbered after the highest known rank,
 * in pid order (said in the output). Processes with the same rank (the images a rank exec'd)
 * are one rank. A rank's span runs from its processes' first event to their last.
 *
 * Slices. A slice whose site has category `mpi` is an MPI call named like its function.
 * Per function: calls, total time, bytes (the mpi.bytes written after the END, else the one
 * after the BEGIN) and wait. A rank's time in MPI adds up its outermost MPI slices only
 * (an MPI call made inside another one is in it); outside = span - in MPI - weft's own clock
 * sync (its `weft: clock sync` slices, category weft; at least 0), and is the rank's compute
 * time for the imbalance: max / mean across ranks.
 *
 * Wait. A call that completed receives (FLOW in ids after its END) waited for the latest of
 * their sends: wait = (the latest matching send call's begin - its own begin), clipped to
 * [0, its duration]; the send is the MPI slice whose FLOW out (after its BEGIN) has the same id,
 * in any process. A collective instance is its communicator and number (mpi.comm, mpi.seq),
 * the same on every member: each member waited for the last to arrive: wait = (the latest
 * begin of the instance's mpi.comm_size members - its own begin), clipped the same way. A
 * flow end or an instance is held until its other ends are seen, then freed; what is left at
 * the end counts as unmatched (a receive's wait then uses the sends that were found).
 *
 * The matrix. A sending call (one with a FLOW out, or MPI_Send/Isend/Ssend/Bsend/Rsend/
 * Issend/Ibsend/Irsend/Sendrecv/Sendrecv_replace) with mpi.peer and mpi.bytes after its BEGIN
 * adds those bytes to (its rank, that peer). A FLOW out of a call without them (Sendrecv,
 * Start and Startall of persistent sends: libweft-mpi.so gives their destination by the arrow
 * only) counts once matched: (its rank, the receiving rank), with the receiving call's
 * mpi.bytes divided by the messages it completed (exact when it completed one).
 */
#include "analysis/mpi.h"
#include "export/model.h"
#include "format/format.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small chained hash map u64 -> node (nodes are the caller's, first member `next`) ---- */

struct hnode {
	struct hnode *next;
	uint64_t key;
};
struct hmap {
	struct hnode **b;
	size_t cap, n;
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

static struct hnode **hslot(struct hmap *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	struct hnode **s = &m->b[mix(key) & (m->cap - 1)];
	while (*s && (*s)->key != key)
		s = &(*s)->next;
	return s;
}

static struct hnode *hget(struct hmap *m, uint64_t key)
{
	struct hnode **s = hslot(m, key);
	return s ? *s : NULL;
}

static void hput(struct hmap *m, struct hnode *nd)
{
	if (m->n + 1 > m->cap / 2) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct hnode **b = calloc(cap, sizeof(*b));
		if (!b)
			weft_oom("the MPI report");
		for (size_t i = 0; i < m->cap; i++)
			for (struct hnode *x = m->b[i], *nx; x; x = nx) {
				nx = x->next;
				struct hnode **s = &b[mix(x->key) & (cap - 1)];
				x->next = *s;
				*s = x;
			}
		free(m->b);
		m->b = b;
		m->cap = cap;
	}
	struct hnode **s = &m->b[mix(nd->key) & (m->cap - 1)];
	nd->next = *s;
	*s = nd;
	m->n++;
}

static void hdel(struct hmap *m, struct hnode *nd)
{
	struct hnode **s = &m->b[mix(nd->key) & (m->cap - 1)];
	while (*s != nd)
		s = &(*s)->next;
	*s = nd->next;
	m->n--;
}

/* ---- state ---- */

/* A call that completed receives, waiting for its sends to be seen. */
struct rslice {
	uint32_t rank, fn;
	uint64_t begin, end, latest_send;
	unsigned unresolved;
	uint64_t share; /* its bytes per message received (mpi.bytes / flows in) */
	size_t saved;   /* weft_mpi_save: its number + 1 in the part */
};
/* A flow id seen at one end. */
struct flow {
	struct hnode h;
	int is_send;
	uint64_t send_begin; /* is_send */
	int unsized;         /* is_send: a send without peer and bytes at entry (Sendrecv, Start*) */
	uint32_t src;        /* unsized: the sending rank */
	struct rslice *r;    /* else */
};
/* A collective instance, until all its members are seen. */
struct member {
	uint32_t rank, fn;
	uint64_t begin, end;
};
struct coll {
	struct hnode h;
	uint64_t comm, seq, size, latest;
	struct member *m;
	size_t n, cap;
};

/* An MPI slice open on the thread being walked. */
struct open_call {
	uint64_t serial, begin;
	uint32_t fn;
	int64_t peer, bytes, comm, seq, size; /* after the BEGIN; -1: none */
	int sends;
};

enum { K_PEER, K_BYTES, K_COMM, K_COMM_SIZE, K_SEQ, K_N };
static const char *const key_names[K_N] = {"mpi.peer", "mpi.bytes", "mpi.comm", "mpi.comm_size", "mpi.seq"};

struct ctx {
	struct weft_mpi *m;
	const struct weft_proc *p;
	uint32_t rank;
	struct open_call *open;
	size_t nopen, opencap;
	struct hmap flows, colls, pairs;
	size_t pending;
	uint64_t sync_at; /* the open `weft: clock sync` slice's begin (0: none) */
};

struct pairnode {
	struct hnode h;
	size_t idx;
};

static void *grow(void *p, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return p;
	size_t c = *cap ? *cap * 2 : 16;
	while (c <= n)
		c *= 2;
	p = realloc(p, c * size);
	if (!p)
		weft_oom("the MPI report");
	memset((char *)p + *cap * size, 0, (c - *cap) * size);
	*cap = c;
	return p;
}

static uint32_t fn_of(struct weft_mpi *m, const char *name, size_t *cap)
{
	for (size_t i = 0; i < m->nfns; i++) /* a program calls a few dozen MPI functions */
		if (!strcmp(m->fns[i], name))
			return (uint32_t)i;
	m->fns = grow(m->fns, cap, m->nfns, sizeof(*m->fns));
	if (!(m->fns[m->nfns] = strdup(name)))
		weft_oom("the MPI report");
	return (uint32_t)m->nfns++;
}

static struct weft_mpi_fstat *fstat_of(struct weft_mpi *m, uint32_t rank, uint32_t fn)
{
	struct weft_mpi_rank *r = &m->ranks[rank];
	if (fn >= r->nfn) {
		size_t n = m->nfns > fn ? m->nfns : fn + 1;
		r->fn = realloc(r->fn, n * sizeof(*r->fn));
		if (!r->fn)
			weft_oom("the MPI report");
		memset(r->fn + r->nfn, 0, (n - r->nfn) * sizeof(*r->fn));
		r->nfn = n;
	}
	return &r->fn[fn];
}

static uint64_t clipped_wait(uint64_t latest, uint64_t begin, uint64_t end)
{
	if (latest <= begin)
		return 0;
	uint64_t w = latest - begin, d = end > begin ? end - begin : 0;
	return w < d ? w : d;
}

static void add_wait(struct weft_mpi *m, uint32_t rank, uint32_t fn, uint64_t w)
{
	fstat_of(m, rank, fn)->wait_ns += w;
	m->ranks[rank].wait_ns += w;
}

static void rslice_done(struct weft_mpi *m, struct rslice *r)
{
	add_wait(m, r->rank, r->fn, clipped_wait(r->latest_send, r->begin, r->end));
	free(r);
}

static void note_pending(struct ctx *c, long d)
{
	c->pending += (size_t)d;
	if (c->pending > c->m->pending_peak)
		c->m->pending_peak = c->pending;
}

static void add_pair(struct ctx *c, uint32_t src, uint32_t dst, uint64_t bytes);

static void send_flow(struct ctx *c, uint64_t id, uint64_t begin, int unsized)
{
	struct flow *f = (struct flow *)hget(&c->flows, id);
	if (!f) {
		if (!(f = calloc(1, sizeof(*f))))
			weft_oom("the MPI report");
		f->h.key = id;
		f->is_send = 1;
		f->send_begin = begin;
		f->unsized = unsized;
		f->src = c->rank;
		hput(&c->flows, &f->h);
		note_pending(c, 1);
		return;
	}
	if (f->is_send)
		return; /* the same id sent twice: the first counts */
	struct rslice *r = f->r;
	if (begin > r->latest_send)
		r->latest_send = begin;
	if (unsized)
		add_pair(c, c->rank, r->rank, r->share);
	c->m->messages++;
	hdel(&c->flows, &f->h);
	free(f);
	note_pending(c, -1);
	if (!--r->unresolved)
		rslice_done(c->m, r);
}

/* Flow id received by r (held: unresolved counts it while it waits): matched with its send if
 * that was seen, else held until it is. */
static void recv_flow(struct ctx *c, struct rslice *r, uint64_t id)
{
	struct flow *f = (struct flow *)hget(&c->flows, id);
	if (f && f->is_send) {
		if (f->send_begin > r->latest_send)
			r->latest_send = f->send_begin;
		if (f->unsized)
			add_pair(c, f->src, r->rank, r->share);
		c->m->messages++;
		hdel(&c->flows, &f->h);
		free(f);
		note_pending(c, -1);
	} else if (!f) {
		if (!(f = calloc(1, sizeof(*f))))
			weft_oom("the MPI report");
		f->h.key = id;
		f->r = r;
		r->unresolved++;
		hput(&c->flows, &f->h);
		note_pending(c, 1);
	} /* else the same id received twice: the first counts */
}

static void recv_flows(struct ctx *c, const struct weft_ev *e, uint32_t fn, uint64_t begin, int64_t bytes)
{
	struct rslice *r = calloc(1, sizeof(*r));
	if (!r)
		weft_oom("the MPI report");
	/* unresolved 1: held while its flows are looked up */
	*r = (struct rslice){c->rank, fn, begin, e->ts, 0, 1, bytes > 0 ? (uint64_t)bytes / e->nin : 0, 0};
	for (unsigned i = 0; i < e->nin; i++)
		recv_flow(c, r, e->flows_in[i]);
	if (!--r->unresolved)
		rslice_done(c->m, r);
}

static void coll_done(struct weft_mpi *m, struct coll *k)
{
	for (size_t i = 0; i < k->n; i++)
		add_wait(m, k->m[i].rank, k->m[i].fn, clipped_wait(k->latest, k->m[i].begin, k->m[i].end));
	free(k->m);
	free(k);
}

static void collective(struct ctx *c, uint32_t fn, uint64_t comm, uint64_t seq, uint64_t size, uint64_t begin,
		       uint64_t end)
{
	uint64_t key = mix(comm) ^ seq;
	struct coll *k = NULL;
	if (c->colls.cap) /* the chain of its bucket: another instance may share the key */
		for (struct hnode *x = c->colls.b[mix(key) & (c->colls.cap - 1)]; x && !k; x = x->next)
			if (x->key == key && ((struct coll *)x)->comm == comm && ((struct coll *)x)->seq == seq)
				k = (struct coll *)x;
	if (!k) {
		if (!(k = calloc(1, sizeof(*k))))
			weft_oom("the MPI report");
		k->h.key = key;
		k->comm = comm;
		k->seq = seq;
		k->size = size;
		hput(&c->colls, &k->h);
		c->m->collectives++;
		note_pending(c, 1);
	}
	k->m = grow(k->m, &k->cap, k->n, sizeof(*k->m));
	k->m[k->n++] = (struct member){c->rank, fn, begin, end};
	if (begin > k->latest)
		k->latest = begin;
	if (k->size && k->n >= k->size) {
		hdel(&c->colls, &k->h);
		note_pending(c, -1);
		coll_done(c->m, k);
	}
}

static size_t paircap;
/* bytes in msgs messages from src to dst */
static void add_pairs(struct ctx *c, uint32_t src, uint32_t dst, uint64_t bytes, uint64_t msgs)
{
	size_t *cap = &paircap;
	struct weft_mpi *m = c->m;
	uint64_t key = (uint64_t)src << 32 | dst;
	struct pairnode *pn = (struct pairnode *)hget(&c->pairs, key);
	if (!pn) {
		if (!(pn = calloc(1, sizeof(*pn))))
			weft_oom("the MPI report");
		pn->h.key = key;
		m->pairs = grow(m->pairs, cap, m->npairs, sizeof(*m->pairs));
		pn->idx = m->npairs;
		m->pairs[m->npairs++] = (struct weft_mpi_pair){src, dst, 0, 0};
		hput(&c->pairs, &pn->h);
	}
	m->pairs[pn->idx].bytes += bytes;
	m->pairs[pn->idx].messages += msgs;
}

static void add_pair(struct ctx *c, uint32_t src, uint32_t dst, uint64_t bytes)
{
	add_pairs(c, src, dst, bytes, 1);
}

static int is_send_fn(const char *n)
{
	static const char *const s[] = {"MPI_Send", "MPI_Isend", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend",
					 "MPI_Issend", "MPI_Ibsend", "MPI_Irsend", "MPI_Sendrecv",
					 "MPI_Sendrecv_replace"};
	for (size_t i = 0; i < sizeof(s) / sizeof(*s); i++)
		if (!strcmp(n, s[i]))
			return 1;
	return 0;
}

void weft_mpi_args(const struct weft_proc *p, const struct weft_ev *e, const char *const *names, int n, int64_t *v)
{
	for (int k = 0; k < n; k++)
		v[k] = -1;
	for (unsigned i = 0; i < e->nargs; i++) {
		const struct weft_ev_arg *a = &e->args[i];
		if (a->type != WEFT_R_ARG_I64 && a->type != WEFT_R_ARG_U64)
			continue;
		const char *kn = weft_site_name(p, a->key);
		if (!kn || strncmp(kn, "mpi.", 4))
			continue;
		for (int k = 0; k < n; k++)
			if (!strcmp(kn, names[k]))
				v[k] = (int64_t)a->v;
	}
}

static void args_of(const struct weft_proc *p, const struct weft_ev *e, int64_t v[K_N])
{
	weft_mpi_args(p, e, key_names, K_N, v);
}

static size_t fncap;

/* weft's clock sync between MPI_Init and the program, and before MPI_Finalize (mpi/init.c) */
static int is_sync_site(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat && !strcmp(p->sites[id].cat, "weft") &&
	       p->sites[id].name && !strcmp(p->sites[id].name, "weft: clock sync");
}

static int is_mpi_site(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat && !strcmp(p->sites[id].cat, "mpi");
}

static void on_ev(void *ud, const struct weft_ev *e)
{
	struct ctx *c = ud;
	struct weft_mpi_rank *rk = &c->m->ranks[c->rank];
	uint64_t last = e->kind == WEFT_EV_COMPLETE ? e->end_ts : e->ts;
	if (e->kind != WEFT_EV_DROPPED) {
		if (!rk->first_ns || e->ts < rk->first_ns)
			rk->first_ns = e->ts;
		if (last > rk->last_ns)
			rk->last_ns = last;
	}
	if ((e->kind == WEFT_EV_BEGIN || e->kind == WEFT_EV_END) && is_sync_site(c->p, e->id)) {
		if (e->kind == WEFT_EV_BEGIN)
			c->sync_at = e->ts;
		else if (c->sync_at && e->ts >= c->sync_at)
			rk->weft_ns += e->ts - c->sync_at;
		if (e->kind == WEFT_EV_END)
			c->sync_at = 0;
		return;
	}
	if (e->kind == WEFT_EV_BEGIN && is_mpi_site(c->p, e->id)) {
		c->open = grow(c->open, &c->opencap, c->nopen, sizeof(*c->open));
		struct open_call *o = &c->open[c->nopen++];
		int64_t v[K_N];
		args_of(c->p, e, v);
		const char *name = weft_site_name(c->p, e->id);
		*o = (struct open_call){e->serial, e->ts, fn_of(c->m, name ? name : "?", &fncap), v[K_PEER], v[K_BYTES],
					v[K_COMM], v[K_SEQ], v[K_COMM_SIZE], e->nout > 0 || (name && is_send_fn(name))};
		for (unsigned i = 0; i < e->nout; i++)
			send_flow(c, e->flows_out[i], e->ts, o->peer < 0 || o->bytes < 0);
		return;
	}
	if (e->kind != WEFT_EV_END || !c->nopen || c->open[c->nopen - 1].serial != e->serial)
		return;
	struct open_call o = c->open[--c->nopen];
	int64_t v[K_N];
	args_of(c->p, e, v);
	uint64_t d = e->ts > o.begin ? e->ts - o.begin : 0;
	struct weft_mpi_fstat *f = fstat_of(c->m, c->rank, o.fn);
	f->calls++;
	f->total_ns += d;
	int64_t bytes = v[K_BYTES] >= 0 ? v[K_BYTES] : o.bytes;
	if (bytes > 0)
		f->bytes += (uint64_t)bytes;
	rk->calls++;
	c->m->calls++;
	if (!c->nopen)
		rk->mpi_ns += d;
	if (o.sends && o.peer >= 0 && o.peer <= UINT32_MAX && o.bytes >= 0)
		add_pair(c, c->rank, (uint32_t)o.peer, o.bytes > 0 ? (uint64_t)o.bytes : 0);
	if (e->nin)
		recv_flows(c, e, o.fn, o.begin, bytes);
	/* a collective's comm, seq and size: the BEGIN's, else the END's */
	int64_t comm = o.comm >= 0 ? o.comm : v[K_COMM], seq = o.seq >= 0 ? o.seq : v[K_SEQ];
	int64_t size = o.size >= 0 ? o.size : v[K_COMM_SIZE];
	if (seq >= 0 && comm >= 0)
		collective(c, o.fn, (uint64_t)comm, (uint64_t)seq, size > 0 ? (uint64_t)size : 0, o.begin, e->ts);
}

static int has_mpi_sites(const struct weft_proc *p)
{
	for (size_t i = 0; i < p->nsites; i++)
		if (is_mpi_site(p, (uint32_t)i))
			return 1;
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct weft_proc *x = *(const struct weft_proc *const *)a, *y = *(const struct weft_proc *const *)b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->gen < y->gen ? -1 : x->gen > y->gen;
}

struct ranked {
	const struct weft_proc *p;
	uint32_t rank;
	size_t pid_order;
};
static int cmp_ranked(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->pid_order < y->pid_order ? -1 : x->pid_order > y->pid_order;
}

static int cmp_pair(const void *a, const void *b)
{
	const struct weft_mpi_pair *x = a, *y = b;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return x->dst < y->dst ? -1 : x->dst > y->dst;
}

/* What is still held at the end: receives' waits from the sends found, collectives' from
 * the members found; counted as unmatched / incomplete. */
static void finish(struct ctx *c)
{
	struct weft_mpi *m = c->m;
	m->pending_end = c->pending;
	for (size_t i = 0; i < c->flows.cap; i++)
		for (struct hnode *x = c->flows.b[i], *nx; x; x = nx) {
			nx = x->next;
			struct flow *f = (struct flow *)x;
			m->unmatched_flows++;
			if (!f->is_send && !--f->r->unresolved)
				rslice_done(m, f->r);
			free(f);
		}
	for (size_t i = 0; i < c->colls.cap; i++)
		for (struct hnode *x = c->colls.b[i], *nx; x; x = nx) {
			nx = x->next;
			struct coll *k = (struct coll *)x;
			if (k->size && k->n < k->size)
				m->incomplete_collectives++;
			coll_done(m, k);
		}
	for (size_t i = 0; i < c->pairs.cap; i++)
		for (struct hnode *x = c->pairs.b[i], *nx; x; x = nx) {
			nx = x->next;
			free(x);
		}
	free(c->flows.b);
	free(c->colls.b);
	free(c->pairs.b);
	free(c->open);
}

/* An analysis in progress (mpi.h): the ranks of the whole trace, the share walked, the state. */
struct weft_mpi_acc {
	struct weft_mpi *m;
	const struct weft_proc **procs; /* MPI processes in rank order (a rank's images in pid order) */
	uint32_t *rank_of;
	size_t np;
	struct ctx c;
};

/* The processes of MPI ranks (the trace's, then those without one numbered after the highest,
 * by pid) into a->procs and a->rank_of, in rank order; m->ranks sized. 0 or -ENOMEM. */
static int rank_procs(const struct weft_trace *t, struct weft_mpi_acc *a)
{
	struct weft_mpi *m = a->m;
	const struct weft_proc **procs = a->procs = malloc((t->nprocs + 1) * sizeof(*procs));
	uint32_t *rank_of = a->rank_of = malloc((t->nprocs + 1) * sizeof(*rank_of));
	if (!procs || !rank_of)
		return -ENOMEM;
	size_t np = 0;
	uint64_t next = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		uint32_t r = weft_proc_rank(p);
		if (r == WEFT_RANK_NONE && !has_mpi_sites(p))
			continue;
		procs[np++] = p;
		if (r != WEFT_RANK_NONE && (uint64_t)r + 1 > next)
			next = (uint64_t)r + 1;
	}
	qsort(procs, np, sizeof(*procs), cmp_pid);
	const struct weft_proc *prev_unranked = NULL;
	for (size_t i = 0; i < np; i++) {
		uint32_t r = weft_proc_rank(procs[i]);
		if (r == WEFT_RANK_NONE) {
			/* an image exec'd by the previous unranked process is the same task */
			if (prev_unranked && prev_unranked->pid == procs[i]->pid)
				r = rank_of[i - 1];
			else
				r = (uint32_t)next++;
			prev_unranked = procs[i];
			m->any_by_pid = 1;
		}
		rank_of[i] = r;
	}
	/* walk in rank order (a rank's images in pid order): pairs of neighbours meet early */
	struct ranked *order = malloc((np + 1) * sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < np; i++)
		order[i] = (struct ranked){procs[i], rank_of[i], i};
	qsort(order, np, sizeof(*order), cmp_ranked);
	for (size_t i = 0; i < np; i++) {
		procs[i] = order[i].p;
		rank_of[i] = order[i].rank;
	}
	free(order);
	a->np = np;
	for (size_t i = 0; i < np; i++)
		if (rank_of[i] + (size_t)1 > m->nranks)
			m->nranks = rank_of[i] + (size_t)1;
	if (np && !(m->ranks = calloc(m->nranks, sizeof(*m->ranks))))
		return -ENOMEM;
	return 0;
}

/* Rank r present, from its (first) process p. */
static void present(struct weft_mpi *m, uint32_t r, const struct weft_proc *p)
{
	struct weft_mpi_rank *rk = &m->ranks[r];
	if (rk->present)
		return;
	rk->present = 1;
	rk->pid = p->pid;
	rk->host = p->host;
	rk->name = p->name;
	rk->by_pid = weft_proc_rank(p) == WEFT_RANK_NONE;
	m->npresent++;
}

/* The first process index of share k of n: whole ranks, about as many processes each. */
static size_t share_start(const struct weft_mpi_acc *a, unsigned k, unsigned n)
{
	if (k >= n)
		return a->np;
	size_t i = (size_t)((unsigned long long)a->np * k / n);
	while (i > 0 && i < a->np && a->rank_of[i] == a->rank_of[i - 1])
		i++;
	return i;
}

struct weft_mpi_acc *weft_mpi_begin(const struct weft_trace *t, unsigned part, unsigned nparts, char *err,
				    size_t errlen)
{
	struct weft_mpi_acc *a = calloc(1, sizeof(*a));
	if (!a || !(a->m = calloc(1, sizeof(*a->m))) || rank_procs(t, a)) {
		snprintf(err, errlen, "out of memory for the MPI report");
		weft_mpi_acc_free(a);
		return NULL;
	}
	struct weft_mpi *m = a->m;
	struct ctx *c = &a->c;
	c->m = m;
	fncap = paircap = 0;
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = share_start(a, part, nparts), e = share_start(a, part + 1, nparts); i < e; i++) {
		const struct weft_proc *p = a->procs[i];
		present(m, a->rank_of[i], p);
		c->p = p;
		c->rank = a->rank_of[i];
		for (size_t j = 0; j < p->nthreads; j++) {
			struct weft_walk_stats st;
			memset(&st, 0, sizeof(st));
			c->nopen = 0;
			weft_walk_thread(p, &p->threads[j], t->last_ns, on_ev, c, &st, &buf, &cap);
			m->st.bad_chunks += st.bad_chunks;
			m->st.oom += st.oom;
			if (st.bad_why && !m->st.bad_why)
				m->st.bad_why = st.bad_why;
		}
	}
	free(buf);
	return a;
}

struct weft_mpi *weft_mpi_end(struct weft_mpi_acc *a)
{
	struct weft_mpi *m = a->m;
	finish(&a->c);
	a->m = NULL;
	weft_mpi_acc_free(a);
	for (size_t r = 0; r < m->nranks; r++) /* every present rank has every function's row */
		if (m->ranks[r].present && m->nfns)
			fstat_of(m, (uint32_t)r, (uint32_t)m->nfns - 1);
	if (m->npairs)
		qsort(m->pairs, m->npairs, sizeof(*m->pairs), cmp_pair);
	return m;
}

void weft_mpi_acc_free(struct weft_mpi_acc *a)
{
	if (!a)
		return;
	if (a->m) { /* not ended: the state goes unreported */
		a->c.m = a->m;
		finish(&a->c);
		weft_mpi_free(a->m);
	}
	free(a->procs);
	free(a->rank_of);
	free(a);
}

/* ---- a share's state, from one process of a job to another (weft_mpi_save, weft_mpi_load) ----
 *
 * Written and read by the same build: native words after a magic line. What one share cannot
 * finish goes along for the merge: the sends whose receive it did not see, the receiving calls
 * still waiting for sends (a table, and each waiting flow id with its call's index), and the
 * collective instances with the members it saw. Its counters count what it finished: an
 * instance it saw but did not complete is counted by the merge, once. */

#define PART_MAGIC "weft mpi part 1\n"

struct wbuf {
	FILE *f;
	int bad;
};

static void w64(struct wbuf *w, uint64_t v)
{
	w->bad |= fwrite(&v, 8, 1, w->f) != 1;
}

static void wn(struct wbuf *w, const uint64_t *v, size_t n)
{
	w->bad |= n && fwrite(v, 8, n, w->f) != n;
}
#define WN(w, ...) wn(w, (const uint64_t[]){__VA_ARGS__}, sizeof((const uint64_t[]){__VA_ARGS__}) / 8)

static void wstr(struct wbuf *w, const char *s)
{
	size_t l = s ? strlen(s) : 0;
	w64(w, l);
	w->bad |= l && fwrite(s, 1, l, w->f) != l;
}

struct rbuf {
	FILE *f;
	int bad;
};

static uint64_t r64(struct rbuf *r)
{
	uint64_t v = 0;
	if (!r->bad && fread(&v, 8, 1, r->f) != 1)
		r->bad = 1;
	return r->bad ? 0 : v;
}

/* A count of items of at least `item` bytes each: no more than the file can hold. */
static uint64_t rcount(struct rbuf *r, uint64_t item)
{
	uint64_t n = r64(r);
	if (n > (1ull << 40) / (item ? item : 1))
		r->bad = 1;
	return r->bad ? 0 : n;
}

static char *rstr(struct rbuf *r)
{
	uint64_t l = rcount(r, 1);
	char *s = r->bad ? NULL : malloc(l + 1);
	if (!s) {
		r->bad = 1;
		return NULL;
	}
	if (l && fread(s, 1, l, r->f) != l) {
		r->bad = 1;
		free(s);
		return NULL;
	}
	s[l] = 0;
	return s;
}

int weft_mpi_save(struct weft_mpi_acc *a, FILE *f)
{
	struct weft_mpi *m = a->m;
	struct ctx *c = &a->c;
	struct wbuf w = {f, fputs(PART_MAGIC, f) < 0};
	size_t open_colls = 0, sends = 0, recvs = 0, rslices = 0;
	for (size_t i = 0; i < c->colls.cap; i++)
		for (struct hnode *x = c->colls.b[i]; x; x = x->next)
			open_colls++;
	/* the waiting receiving calls, numbered in the order their first flow is met */
	struct rslice **rs = NULL;
	size_t rscap = 0;
	for (size_t i = 0; i < c->flows.cap; i++)
		for (struct hnode *x = c->flows.b[i]; x; x = x->next) {
			struct flow *fl = (struct flow *)x;
			if (fl->is_send) {
				sends++;
				continue;
			}
			recvs++;
			if (!fl->r->saved) {
				rs = grow(rs, &rscap, rslices, sizeof(*rs));
				rs[rslices++] = fl->r;
				fl->r->saved = rslices;
			}
		}
	w64(&w, m->nranks);
	w64(&w, m->nfns);
	for (size_t i = 0; i < m->nfns; i++)
		wstr(&w, m->fns[i]);
	WN(&w, m->calls, m->messages, m->collectives - open_colls, m->pending_peak, m->st.bad_chunks, m->st.oom);
	wstr(&w, m->st.bad_why);
	uint64_t npres = 0;
	for (size_t r = 0; r < m->nranks; r++)
		npres += m->ranks[r].present;
	w64(&w, npres);
	for (size_t r = 0; r < m->nranks; r++) {
		const struct weft_mpi_rank *k = &m->ranks[r];
		if (!k->present)
			continue;
		WN(&w, r, k->first_ns, k->last_ns, k->mpi_ns, k->weft_ns, k->wait_ns, k->calls, k->nfn);
		for (size_t i = 0; i < k->nfn; i++)
			WN(&w, k->fn[i].calls, k->fn[i].total_ns, k->fn[i].bytes, k->fn[i].wait_ns);
	}
	w64(&w, m->npairs);
	for (size_t i = 0; i < m->npairs; i++)
		WN(&w, m->pairs[i].src, m->pairs[i].dst, m->pairs[i].bytes, m->pairs[i].messages);
	WN(&w, sends, rslices, recvs);
	for (size_t i = 0; i < c->flows.cap; i++)
		for (struct hnode *x = c->flows.b[i]; x; x = x->next) {
			struct flow *fl = (struct flow *)x;
			if (fl->is_send)
				WN(&w, fl->h.key, fl->send_begin, (uint64_t)fl->unsized, fl->src);
		}
	for (size_t i = 0; i < rslices; i++) {
		const struct rslice *r = rs[i];
		WN(&w, r->rank, r->fn, r->begin, r->end, r->latest_send, r->share);
	}
	for (size_t i = 0; i < c->flows.cap; i++)
		for (struct hnode *x = c->flows.b[i]; x; x = x->next) {
			struct flow *fl = (struct flow *)x;
			if (!fl->is_send)
				WN(&w, fl->h.key, fl->r->saved - 1);
		}
	free(rs);
	w64(&w, open_colls);
	for (size_t i = 0; i < c->colls.cap; i++)
		for (struct hnode *x = c->colls.b[i]; x; x = x->next) {
			const struct coll *k = (const struct coll *)x;
			WN(&w, k->comm, k->seq, k->size, k->n);
			for (size_t j = 0; j < k->n; j++)
				WN(&w, k->m[j].rank, k->m[j].fn, k->m[j].begin, k->m[j].end);
		}
	return w.bad ? -EIO : 0;
}

/* A rank or a function index of the part: in range, else the part is bad (0). */
static uint32_t rank_in(struct rbuf *r, const struct weft_mpi *m, uint64_t x)
{
	if (x < m->nranks)
		return (uint32_t)x;
	r->bad = 1;
	return 0;
}

static uint32_t fn_in(struct rbuf *r, const uint32_t *fmap, uint64_t nf, uint64_t x)
{
	if (x < nf)
		return fmap[x];
	r->bad = 1;
	return 0;
}

static void bad_part(char *err, size_t n, const char *what)
{
	snprintf(err, n, "another rank's MPI report part is not one of this build's (%s)", what);
}

int weft_mpi_load(struct weft_mpi_acc *a, FILE *f, char *err, size_t errlen)
{
	struct weft_mpi *m = a->m;
	struct ctx *c = &a->c;
	struct rbuf r = {f, 0};
	char magic[sizeof(PART_MAGIC)] = "";
	if (!fgets(magic, sizeof(magic), f) || strcmp(magic, PART_MAGIC)) {
		bad_part(err, errlen, "its first line");
		return -EINVAL;
	}
	if (r64(&r) != m->nranks) {
		bad_part(err, errlen, "another number of ranks");
		return -EINVAL;
	}
	uint64_t nf = rcount(&r, 8);
	uint32_t *fmap = calloc(nf + 1, sizeof(*fmap));
	struct rslice **rs = NULL;
	uint64_t nrs = 0;
	int rc = -EINVAL;
	if (!fmap)
		goto oom;
	for (uint64_t i = 0; i < nf && !r.bad; i++) {
		char *name = rstr(&r);
		if (name)
			fmap[i] = fn_of(m, name, &fncap);
		free(name);
	}
	m->calls += r64(&r);
	m->messages += r64(&r);
	m->collectives += r64(&r);
	uint64_t peak = r64(&r);
	if (peak > m->pending_peak)
		m->pending_peak = peak;
	m->st.bad_chunks += r64(&r);
	m->st.oom += r64(&r);
	char *why = rstr(&r);
	if (why && *why && !m->st.bad_why && !m->why_owned)
		m->st.bad_why = m->why_owned = why;
	else
		free(why);
	uint64_t npres = rcount(&r, 64);
	for (uint64_t i = 0; i < npres && !r.bad; i++) {
		uint32_t rank = rank_in(&r, m, r64(&r));
		uint64_t first = r64(&r), last = r64(&r);
		struct weft_mpi_rank *k = &m->ranks[rank];
		if (first && (!k->first_ns || first < k->first_ns))
			k->first_ns = first;
		if (last > k->last_ns)
			k->last_ns = last;
		k->mpi_ns += r64(&r);
		k->weft_ns += r64(&r);
		k->wait_ns += r64(&r);
		k->calls += r64(&r);
		uint64_t n = rcount(&r, 32);
		for (uint64_t j = 0; j < n && !r.bad; j++) {
			uint32_t fn = fn_in(&r, fmap, nf, j);
			uint64_t v[4] = {r64(&r), r64(&r), r64(&r), r64(&r)};
			if (r.bad)
				break;
			struct weft_mpi_fstat *s = fstat_of(m, rank, fn);
			s->calls += v[0];
			s->total_ns += v[1];
			s->bytes += v[2];
			s->wait_ns += v[3];
		}
		for (size_t p = 0; p < a->np && !r.bad; p++) /* its process, as the part saw it */
			if (a->rank_of[p] == rank) {
				present(m, rank, a->procs[p]);
				break;
			}
	}
	uint64_t npairs = rcount(&r, 32);
	for (uint64_t i = 0; i < npairs && !r.bad; i++) {
		uint64_t src = r64(&r), dst = r64(&r), bytes = r64(&r), msgs = r64(&r);
		if (r.bad || src > UINT32_MAX || dst > UINT32_MAX)
			break;
		add_pairs(c, (uint32_t)src, (uint32_t)dst, bytes, msgs);
	}
	uint64_t sends = rcount(&r, 32);
	nrs = rcount(&r, 48);
	uint64_t recvs = rcount(&r, 16);
	for (uint64_t i = 0; i < sends && !r.bad; i++) {
		uint64_t id = r64(&r), begin = r64(&r), unsized = r64(&r);
		uint32_t src = rank_in(&r, m, r64(&r));
		if (r.bad)
			break;
		c->rank = src;
		send_flow(c, id, begin, unsized != 0);
	}
	if (!r.bad && nrs && !(rs = calloc(nrs, sizeof(*rs))))
		goto oom;
	for (uint64_t i = 0; i < nrs && !r.bad; i++) {
		uint32_t rank = rank_in(&r, m, r64(&r));
		uint32_t fn = fn_in(&r, fmap, nf, r64(&r));
		uint64_t v[4] = {r64(&r), r64(&r), r64(&r), r64(&r)};
		if (r.bad)
			break;
		if (!(rs[i] = calloc(1, sizeof(*rs[i]))))
			goto oom;
		/* unresolved 1: held while its flows are looked up */
		*rs[i] = (struct rslice){rank, fn, v[0], v[1], v[2], 1, v[3], 0};
	}
	for (uint64_t i = 0; i < recvs && !r.bad; i++) {
		uint64_t id = r64(&r), idx = r64(&r);
		if (r.bad || idx >= nrs) {
			r.bad = 1;
			break;
		}
		recv_flow(c, rs[idx], id);
	}
	uint64_t ncolls = rcount(&r, 32);
	for (uint64_t i = 0; i < ncolls && !r.bad; i++) {
		uint64_t comm = r64(&r), seq = r64(&r), size = r64(&r), n = rcount(&r, 32);
		for (uint64_t j = 0; j < n && !r.bad; j++) {
			uint32_t rank = rank_in(&r, m, r64(&r));
			uint32_t fn = fn_in(&r, fmap, nf, r64(&r));
			uint64_t begin = r64(&r), end = r64(&r);
			if (r.bad)
				break;
			c->rank = rank;
			collective(c, fn, comm, seq, size, begin, end);
		}
	}
	if (r.bad)
		bad_part(err, errlen, "cut short, or other numbers");
	else
		rc = 0;
	goto done;
oom:
	snprintf(err, errlen, "out of memory for the MPI report");
	rc = -ENOMEM;
done:
	for (uint64_t i = 0; rs && i < nrs; i++) /* release the holds: those with nothing to wait for end */
		if (rs[i] && !--rs[i]->unresolved)
			rslice_done(m, rs[i]);
	free(rs);
	free(fmap);
	return rc;
}

int weft_mpi_analyze(const struct weft_trace *t, struct weft_mpi **out, char *err, size_t errlen)
{
	struct weft_mpi_acc *a = weft_mpi_begin(t, 0, 1, err, errlen);
	if (!a) {
		*out = calloc(1, sizeof(**out));
		return -ENOMEM;
	}
	*out = weft_mpi_end(a);
	return 0;
}

void weft_mpi_free(struct weft_mpi *m)
{
	if (!m)
		return;
	for (size_t r = 0; r < m->nranks; r++)
		free(m->ranks[r].fn);
	free(m->ranks);
	for (size_t i = 0; i < m->nfns; i++)
		free(m->fns[i]);
	free(m->fns);
	free(m->pairs);
	free(m->why_owned);
	free(m);
}

uint64_t weft_mpi_compute_ns(const struct weft_mpi_rank *r)
{
	uint64_t span = r->last_ns > r->first_ns ? r->last_ns - r->first_ns : 0;
	return span > r->mpi_ns + r->weft_ns ? span - r->mpi_ns - r->weft_ns : 0;
}

struct weft_mpi_imbalance weft_mpi_imbalance(const struct weft_mpi *m)
{
	struct weft_mpi_imbalance im;
	memset(&im, 0, sizeof(im));
	uint64_t sum = 0, n = 0;
	for (size_t r = 0; r < m->nranks; r++) {
		if (!m->ranks[r].present)
			continue;
		uint64_t x = weft_mpi_compute_ns(&m->ranks[r]);
		if (!n || x > im.max_ns) {
			im.max_ns = x;
			im.slowest = (uint32_t)r;
		}
		if (!n || x < im.min_ns) {
			im.min_ns = x;
			im.fastest = (uint32_t)r;
		}
		sum += x;
		n++;
	}
	if (n) {
		im.mean_ns = sum / n;
		im.ratio = sum ? (double)im.max_ns * (double)n / (double)sum : 0;
	}
	return im;
}
