/*
 * otf2-mpi.c - the MPI half of `weft export --otf2` (otf2.c writes the archive): the messages,
 * collectives and communicators of the processes that called MPI, as docs/otf2.md maps them.
 *
 * A first pass over the processes that called MPI (libweft-mpi.so's slices, category `mpi`)
 * collects each message by its arrow id (the sender's rank, peer, tag, bytes and communicator
 * from the sending call; the receiver's rank, and tag and bytes where the receiving call names
 * one message) and the world ranks seen on each communicator. In otf2.c's walk (the second pass),
 * weft_otf2_mpi_begin and _end write, for each arrow, MpiSend or MpiIsend in the sending call
 * and MpiRecv or MpiIrecv in the call that completed the receive (an MpiIrecvRequest in the
 * thread's oldest open MPI_Irecv on that communicator, else just before), and
 * MpiCollectiveBegin/End around blocking collectives and communicator creation. The definitions
 * follow: a group of each present rank's first location in rank order (WORLD), and per
 * communicator a group of indices into it and the communicator itself, WORLD and SELF first
 * (refs 0 and 1), the others in the order met. Ranks in a communicator other than WORLD are its
 * members' positions in world-rank order (weft does not record MPI's own numbering there).
 */
#include "analysis/mpi.h"
#include "export/otf2-internal.h"
#include "format/format.h"
#include "mpi/mpi-ids.h"
#include <stdlib.h>
#include <string.h>

/* ---- what the first pass learns ---- */

enum { A_PEER, A_TAG, A_BYTES, A_COMM, A_COMM_SIZE, A_ROOT, A_SEQ, A_N };
static const char *const arg_names[A_N] = {"mpi.peer", "mpi.tag", "mpi.bytes", "mpi.comm",
					   "mpi.comm_size", "mpi.root", "mpi.seq"};

/* A message, by its arrow id: -1 where unknown. */
struct msg {
	uint64_t id;
	int64_t src, dst, tag, bytes, comm;
	int64_t rtag, rbytes; /* the receiving call's, when it completed this one message */
};

/* The communicator of a process's persistent sends (Send_init and its kin): -1 none yet, -2
 * several (MPI_Start's slice names no communicator: its message takes this one, when one). */
struct initcomm { uint32_t rank; int64_t comm; };

struct comm {
	uint64_t id;      /* weft's (docs/mpi.md) */
	uint32_t ref;     /* OTF2's */
	uint32_t *ranks;  /* world ranks seen on it, sorted */
	size_t n, cap;
	int64_t size;     /* mpi.comm_size */
};

/* An MPI_Irecv not completed yet: its request id and communicator. */
struct ireq { uint64_t id; int64_t comm; };

/* ---- tables ---- */

int weft_otf2_mpi_role(const char *n)
{
	static const struct { const char *name; int role; } t[] = {
		{"MPI_Barrier", OTF2_REGION_ROLE_BARRIER},         {"MPI_Bcast", OTF2_REGION_ROLE_COLL_ONE2ALL},
		{"MPI_Scatter", OTF2_REGION_ROLE_COLL_ONE2ALL},    {"MPI_Scatterv", OTF2_REGION_ROLE_COLL_ONE2ALL},
		{"MPI_Reduce", OTF2_REGION_ROLE_COLL_ALL2ONE},     {"MPI_Gather", OTF2_REGION_ROLE_COLL_ALL2ONE},
		{"MPI_Gatherv", OTF2_REGION_ROLE_COLL_ALL2ONE},    {"MPI_Allreduce", OTF2_REGION_ROLE_COLL_ALL2ALL},
		{"MPI_Allgather", OTF2_REGION_ROLE_COLL_ALL2ALL},  {"MPI_Allgatherv", OTF2_REGION_ROLE_COLL_ALL2ALL},
		{"MPI_Alltoall", OTF2_REGION_ROLE_COLL_ALL2ALL},   {"MPI_Alltoallv", OTF2_REGION_ROLE_COLL_ALL2ALL},
		{"MPI_Reduce_scatter", OTF2_REGION_ROLE_COLL_ALL2ALL},
		{"MPI_Reduce_scatter_block", OTF2_REGION_ROLE_COLL_ALL2ALL},
		{"MPI_Scan", OTF2_REGION_ROLE_COLL_OTHER},         {"MPI_Exscan", OTF2_REGION_ROLE_COLL_OTHER},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(*t); i++)
		if (!strcmp(n, t[i].name))
			return t[i].role;
	static const char *const p2p[] = {"MPI_Send", "MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Isend",
					  "MPI_Issend", "MPI_Ibsend", "MPI_Irsend", "MPI_Recv", "MPI_Irecv",
					  "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Mrecv", "MPI_Imrecv",
					  "MPI_Probe", "MPI_Iprobe", "MPI_Mprobe", "MPI_Improbe", "MPI_Start",
					  "MPI_Startall", "MPI_Wait", "MPI_Waitall", "MPI_Waitany", "MPI_Waitsome",
					  "MPI_Test", "MPI_Testall", "MPI_Testany", "MPI_Testsome"};
	for (size_t i = 0; i < sizeof(p2p) / sizeof(*p2p); i++)
		if (!strcmp(n, p2p[i]))
			return OTF2_REGION_ROLE_POINT2POINT;
	if (!strncmp(n, "MPI_I", 5)) /* nonblocking collectives */
		return OTF2_REGION_ROLE_COLL_OTHER;
	return OTF2_REGION_ROLE_FUNCTION;
}

static struct msg *msg_slot(struct ox *x, uint64_t id, int add)
{
	if (add && (x->nmsgs + 1) * 2 > x->msgcap) {
		size_t cap = x->msgcap ? x->msgcap * 2 : 1024;
		struct msg *m = calloc(cap, sizeof(*m));
		if (!m)
			OOM();
		for (size_t i = 0; i < x->msgcap; i++) {
			if (!x->msgs[i].id)
				continue;
			size_t k = weft_otf2_hmix(x->msgs[i].id) & (cap - 1);
			while (m[k].id)
				k = (k + 1) & (cap - 1);
			m[k] = x->msgs[i];
		}
		free(x->msgs);
		x->msgs = m;
		x->msgcap = cap;
	}
	if (!x->msgcap || !id)
		return NULL;
	size_t k = weft_otf2_hmix(id) & (x->msgcap - 1);
	while (x->msgs[k].id && x->msgs[k].id != id)
		k = (k + 1) & (x->msgcap - 1);
	if (x->msgs[k].id)
		return &x->msgs[k];
	if (!add)
		return NULL;
	x->msgs[k] = (struct msg){id, -1, -1, -1, -1, -1, -1, -1};
	x->nmsgs++;
	return &x->msgs[k];
}

static struct comm *comm_of(struct ox *x, uint64_t id, int add)
{
	for (size_t i = 0; i < x->ncomms; i++)
		if (x->comms[i].id == id)
			return &x->comms[i];
	if (!add)
		return NULL;
	GROW(x->comms, x->ncomms, x->commcap);
	struct comm *c = &x->comms[x->ncomms++];
	memset(c, 0, sizeof(*c));
	c->id = id;
	c->size = -1;
	return c;
}

static void comm_add(struct comm *c, uint32_t rank)
{
	size_t lo = 0, hi = c->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->ranks[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < c->n && c->ranks[lo] == rank)
		return;
	GROW(c->ranks, c->n, c->cap);
	memmove(c->ranks + lo + 1, c->ranks + lo, (c->n - lo) * sizeof(*c->ranks));
	c->ranks[lo] = rank;
	c->n++;
}

static int64_t index_in(const uint32_t *ranks, size_t n, int64_t rank)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if ((int64_t)ranks[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && (int64_t)ranks[lo] == rank ? (int64_t)lo : -1;
}

/* A world rank's rank in communicator comm (weft's id) as the archive numbers it; -1: none. */
static int64_t rank_in(struct ox *x, int64_t comm, int64_t world)
{
	if (world < 0)
		return -1;
	if (comm == WEFT_MPI_COMM_WORLD_ID)
		return index_in(x->world, x->nworld, world);
	if (comm == WEFT_MPI_COMM_SELF_ID)
		return 0;
	struct comm *c = comm < 0 ? NULL : comm_of(x, (uint64_t)comm, 0);
	return c ? index_in(c->ranks, c->n, world) : -1;
}

static uint32_t comm_ref(struct ox *x, int64_t comm)
{
	struct comm *c = comm < 0 ? NULL : comm_of(x, (uint64_t)comm, 0);
	return c ? c->ref : OTF2_UNDEFINED_COMM;
}

static void args_of(const struct weft_proc *p, const struct weft_ev *e, int64_t v[A_N])
{
	weft_mpi_args(p, e, arg_names, A_N, v);
}

static int name_in(const char *n, const char *const *set)
{
	for (; n && *set; set++)
		if (!strcmp(n, *set))
			return 1;
	return 0;
}
static const char *const nonblocking_sends[] = {"MPI_Isend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend",
						"MPI_Start", "MPI_Startall", NULL};
static const char *const blocking_recvs[] = {"MPI_Recv", "MPI_Mrecv", "MPI_Sendrecv", "MPI_Sendrecv_replace", NULL};

/* The collective operation of a blocking collective or communicator call; -1: none. */
static int coll_op(const char *n)
{
	static const struct { const char *name; int op; } t[] = {
		{"MPI_Barrier", OTF2_COLLECTIVE_OP_BARRIER},     {"MPI_Bcast", OTF2_COLLECTIVE_OP_BCAST},
		{"MPI_Gather", OTF2_COLLECTIVE_OP_GATHER},       {"MPI_Gatherv", OTF2_COLLECTIVE_OP_GATHERV},
		{"MPI_Scatter", OTF2_COLLECTIVE_OP_SCATTER},     {"MPI_Scatterv", OTF2_COLLECTIVE_OP_SCATTERV},
		{"MPI_Allgather", OTF2_COLLECTIVE_OP_ALLGATHER}, {"MPI_Allgatherv", OTF2_COLLECTIVE_OP_ALLGATHERV},
		{"MPI_Alltoall", OTF2_COLLECTIVE_OP_ALLTOALL},   {"MPI_Alltoallv", OTF2_COLLECTIVE_OP_ALLTOALLV},
		{"MPI_Allreduce", OTF2_COLLECTIVE_OP_ALLREDUCE}, {"MPI_Reduce", OTF2_COLLECTIVE_OP_REDUCE},
		{"MPI_Reduce_scatter", OTF2_COLLECTIVE_OP_REDUCE_SCATTER},
		{"MPI_Reduce_scatter_block", OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK},
		{"MPI_Scan", OTF2_COLLECTIVE_OP_SCAN},           {"MPI_Exscan", OTF2_COLLECTIVE_OP_EXSCAN},
		{"MPI_Comm_dup", OTF2_COLLECTIVE_OP_CREATE_HANDLE},
		{"MPI_Comm_dup_with_info", OTF2_COLLECTIVE_OP_CREATE_HANDLE},
		{"MPI_Comm_split", OTF2_COLLECTIVE_OP_CREATE_HANDLE},
		{"MPI_Comm_split_type", OTF2_COLLECTIVE_OP_CREATE_HANDLE},
		{"MPI_Comm_create", OTF2_COLLECTIVE_OP_CREATE_HANDLE},
		{"MPI_Comm_create_group", OTF2_COLLECTIVE_OP_CREATE_HANDLE},
		{"MPI_Cart_create", OTF2_COLLECTIVE_OP_CREATE_HANDLE},
		{"MPI_Comm_free", OTF2_COLLECTIVE_OP_DESTROY_HANDLE},
	};
	for (size_t i = 0; n && i < sizeof(t) / sizeof(*t); i++)
		if (!strcmp(n, t[i].name))
			return t[i].op;
	return -1;
}

/* ---- the first pass: messages and communicators ---- */

struct scan {
	struct ox *x;
	const struct weft_proc *p;
	uint32_t rank;
	struct { uint64_t serial; int64_t comm; } *open;
	size_t nopen, opencap;
};

static void scan_ev(void *ud, const struct weft_ev *e)
{
	struct scan *s = ud;
	if ((e->kind != WEFT_EV_BEGIN && e->kind != WEFT_EV_END) || !weft_otf2_is_mpi(s->p, e->id))
		return;
	int64_t v[A_N];
	args_of(s->p, e, v);
	if (v[A_COMM] > WEFT_MPI_COMM_SELF_ID) {
		struct comm *c = comm_of(s->x, (uint64_t)v[A_COMM], 1);
		comm_add(c, s->rank);
		if (v[A_COMM_SIZE] > 0)
			c->size = v[A_COMM_SIZE];
	}
	const char *name = weft_site_name(s->p, e->id);
	if (e->kind == WEFT_EV_BEGIN && name && v[A_COMM] >= 0 && strstr(name, "end_init")) {
		size_t i;
		for (i = 0; i < s->x->ninits && s->x->inits[i].rank != s->rank; i++)
			;
		if (i == s->x->ninits) {
			GROW(s->x->inits, s->x->ninits, s->x->initcap);
			s->x->inits[s->x->ninits++] = (struct initcomm){s->rank, v[A_COMM]};
		} else if (s->x->inits[i].comm != v[A_COMM]) {
			s->x->inits[i].comm = -2;
		}
	}
	if (e->kind == WEFT_EV_BEGIN) {
		GROW(s->open, s->nopen, s->opencap);
		s->open[s->nopen].serial = e->serial;
		s->open[s->nopen++].comm = v[A_COMM];
		for (unsigned i = 0; i < e->nout; i++) {
			struct msg *m = msg_slot(s->x, e->flows_out[i], 1);
			m->src = s->rank;
			if (v[A_PEER] >= 0)
				m->dst = v[A_PEER], m->tag = v[A_TAG], m->bytes = v[A_BYTES];
			if (v[A_COMM] >= 0)
				m->comm = v[A_COMM];
		}
		return;
	}
	int64_t comm = -1;
	if (s->nopen && s->open[s->nopen - 1].serial == e->serial)
		comm = s->open[--s->nopen].comm;
	for (unsigned i = 0; i < e->nin; i++) {
		struct msg *m = msg_slot(s->x, e->flows_in[i], 1);
		m->dst = s->rank;
		if (m->comm < 0 && comm >= 0)
			m->comm = comm;
		if (e->nin == 1 && v[A_TAG] >= 0)
			m->rtag = v[A_TAG], m->rbytes = v[A_BYTES];
	}
}

static int proc_has_mpi(const struct weft_proc *p)
{
	if (p->has_mpi)
		return 1;
	for (size_t i = 0; i < p->nsites; i++)
		if (weft_otf2_is_mpi(p, (uint32_t)i))
			return 1;
	return 0;
}

static void scan_mpi(struct ox *x, struct weft_export_summary *sum)
{
	struct scan s = {.x = x};
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < x->t->nprocs; i++) {
		const struct weft_proc *p = &x->t->procs[i];
		uint32_t r = weft_proc_rank(p);
		if (!proc_has_mpi(p) || r == WEFT_RANK_NONE)
			continue;
		x->mpi = 1;
		s.p = p;
		s.rank = r;
		for (size_t k = 0; k < p->nthreads; k++) {
			struct weft_walk_stats st;
			memset(&st, 0, sizeof(st));
			s.nopen = 0;
			weft_walk_thread(p, &p->threads[k], x->t->last_ns, scan_ev, &s, &st, &buf, &cap);
			sum->oom += st.oom;
		}
	}
	free(buf);
	free(s.open);
	/* messages of persistent sends: their process's one Send_init communicator */
	for (size_t i = 0; i < x->msgcap; i++) {
		struct msg *m = &x->msgs[i];
		for (size_t k = 0; m->id && m->comm < 0 && k < x->ninits; k++)
			if ((int64_t)x->inits[k].rank == m->src && x->inits[k].comm >= 0)
				m->comm = x->inits[k].comm;
	}
}

static void world_ranks(struct ox *x)
{
	x->world = calloc(x->t->nprocs + 1, sizeof(*x->world));
	x->world_loc = calloc(x->t->nprocs + 1, sizeof(*x->world_loc));
	if (!x->world || !x->world_loc)
		OOM();
	for (size_t i = 0; i < x->t->nprocs; i++) {
		const struct weft_proc *p = &x->t->procs[i];
		uint32_t r = weft_proc_rank(p);
		if (r == WEFT_RANK_NONE || !proc_has_mpi(p) || index_in(x->world, x->nworld, r) >= 0)
			continue;
		size_t at = 0;
		while (at < x->nworld && x->world[at] < r)
			at++;
		memmove(x->world + at + 1, x->world + at, (x->nworld - at) * sizeof(*x->world));
		memmove(x->world_loc + at + 1, x->world_loc + at, (x->nworld - at) * sizeof(*x->world_loc));
		x->world[at] = r;
		x->world_loc[at] = i; /* the process for now; its first location once walked */
		x->nworld++;
	}
}

void weft_otf2_mpi_scan(struct ox *x, struct weft_export_summary *sum)
{
	scan_mpi(x, sum);
	if (!x->mpi)
		return;
	world_ranks(x);
	/* WORLD and SELF first (refs 0 and 1), then the others in the order met */
	comm_of(x, WEFT_MPI_COMM_WORLD_ID, 1)->ref = 0;
	comm_of(x, WEFT_MPI_COMM_SELF_ID, 1)->ref = 1;
	uint32_t next = 2;
	for (size_t i = 0; i < x->ncomms; i++)
		if (x->comms[i].id > WEFT_MPI_COMM_SELF_ID)
			x->comms[i].ref = next++;
}

/* ---- MPI events of the second pass ---- */

void weft_otf2_mpi_begin(struct ox *x, struct loc *l, const struct weft_ev *e)
{
	const char *name = weft_site_name(x->p, e->id);
	int64_t v[A_N];
	args_of(x->p, e, v);
	for (unsigned i = 0; i < e->nout; i++) {
		const struct msg *m = msg_slot(x, e->flows_out[i], 0);
		int64_t comm = m ? m->comm : -1, peer = m ? rank_in(x, comm, m->dst) : -1;
		if (!m || peer < 0 || comm < 0 || comm_ref(x, comm) == OTF2_UNDEFINED_COMM) {
			x->unmapped++;
			continue;
		}
		int64_t tag = m->tag >= 0 ? m->tag : m->rtag, bytes = m->bytes >= 0 ? m->bytes : m->rbytes;
		struct rec *r = weft_otf2_push(x, l, e->ts, name_in(name, nonblocking_sends) ? R_ISEND : R_SEND);
		r->a = (uint32_t)peer;
		r->b = comm_ref(x, comm);
		r->c = tag >= 0 ? (uint32_t)tag : OTF2_UNDEFINED_UINT32;
		r->d = bytes >= 0 ? (uint64_t)bytes : 0;
		r->e = ++x->next_req;
	}
	if (name && !strcmp(name, "MPI_Irecv")) {
		struct rec *r = weft_otf2_push(x, l, e->ts, R_IRECVREQ);
		r->e = ++x->next_req;
		GROW(l->irq, l->nirq, l->irqcap);
		l->irq[l->nirq++] = (struct ireq){r->e, v[A_COMM]};
	}
	GROW(l->mo, l->nmo, l->mocap);
	struct mopen *o = &l->mo[l->nmo++];
	*o = (struct mopen){e->serial, v[A_SEQ] >= 0 ? coll_op(name) : -1, v[A_COMM], v[A_ROOT], v[A_BYTES]};
	if (o->op >= 0 && comm_ref(x, o->comm) != OTF2_UNDEFINED_COMM)
		weft_otf2_push(x, l, e->ts, R_CBEGIN);
	else
		o->op = -1;
}

static uint64_t irecv_request(struct ox *x, struct loc *l, int64_t comm, uint64_t ts)
{
	for (size_t i = 0; i < l->nirq; i++)
		if (l->irq[i].comm == comm || l->irq[i].comm < 0 || comm < 0) {
			uint64_t id = l->irq[i].id;
			memmove(l->irq + i, l->irq + i + 1, (l->nirq - i - 1) * sizeof(*l->irq));
			l->nirq--;
			return id;
		}
	struct rec *r = weft_otf2_push(x, l, ts, R_IRECVREQ); /* a receive posted by Start, Imrecv, or unrecorded */
	return r->e = ++x->next_req;
}

void weft_otf2_mpi_end(struct ox *x, struct loc *l, const struct weft_ev *e)
{
	struct mopen o = l->mo[--l->nmo];
	const char *name = weft_site_name(x->p, e->id);
	int64_t v[A_N];
	args_of(x->p, e, v);
	for (unsigned i = 0; i < e->nin; i++) {
		const struct msg *m = msg_slot(x, e->flows_in[i], 0);
		int64_t comm = m ? m->comm : -1, peer = m ? rank_in(x, comm, m->src) : -1;
		if (!m || peer < 0 || comm < 0 || comm_ref(x, comm) == OTF2_UNDEFINED_COMM) {
			x->unmapped++;
			continue;
		}
		int64_t tag = m->tag >= 0 ? m->tag : m->rtag, bytes = m->bytes >= 0 ? m->bytes : m->rbytes;
		int blocking = name_in(name, blocking_recvs);
		uint64_t req = blocking ? 0 : irecv_request(x, l, comm, e->ts);
		struct rec *r = weft_otf2_push(x, l, e->ts, blocking ? R_RECV : R_IRECV);
		r->a = (uint32_t)peer;
		r->b = comm_ref(x, comm);
		r->c = tag >= 0 ? (uint32_t)tag : OTF2_UNDEFINED_UINT32;
		r->d = bytes >= 0 ? (uint64_t)bytes : 0;
		r->e = req;
	}
	if (o.op >= 0) {
		struct rec *r = weft_otf2_push(x, l, e->ts, R_CEND);
		int64_t root = rank_in(x, o.comm, o.root);
		r->a = (uint32_t)o.op;
		r->b = comm_ref(x, o.comm);
		r->c = root >= 0 ? (uint32_t)root : OTF2_UNDEFINED_UINT32;
		r->d = o.bytes > 0 ? (uint64_t)o.bytes : 0;
	}
}

/* ---- definitions ---- */

void weft_otf2_mpi_names(struct ox *x)
{
	x->comm_name = calloc(x->ncomms + 1, sizeof(*x->comm_name));
	if (!x->comm_name)
		OOM();
	if (!x->mpi)
		return;
	uint32_t s_world = weft_otf2_str(&x->str, "MPI_COMM_WORLD");
	uint32_t s_self = weft_otf2_str(&x->str, "MPI_COMM_SELF");
	x->s_wlocs = weft_otf2_str(&x->str, "MPI_COMM_WORLD locations");
	x->s_mpi = weft_otf2_str(&x->str, "MPI");
	for (size_t i = 0; i < x->ncomms; i++)
		x->comm_name[i] = x->comms[i].id == WEFT_MPI_COMM_WORLD_ID ? s_world
				  : x->comms[i].id == WEFT_MPI_COMM_SELF_ID ? s_self
				  : weft_otf2_strf(&x->str, "comm 0x%llx", (unsigned long long)x->comms[i].id);
}

void weft_otf2_mpi_defs(struct ox *x, OTF2_GlobalDefWriter *w, const uint64_t *first_loc)
{
	/* group 0: each present rank's first location, in rank order; each communicator a group of
	 * indices into it */
	uint64_t *m = calloc(x->nworld + 1, sizeof(*m));
	if (!m)
		OOM();
	for (size_t i = 0; i < x->nworld; i++)
		m[i] = first_loc[x->world_loc[i]];
	CHECK(x, OTF2_GlobalDefWriter_WriteGroup(w, 0, x->s_wlocs, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
						 OTF2_GROUP_FLAG_NONE, (uint32_t)x->nworld, m),
	      "the MPI locations");
	for (size_t ref = 0; ref < x->ncomms; ref++) { /* in ref order: readers want them so */
		size_t i = 0;
		while (x->comms[i].ref != ref)
			i++;
		const struct comm *c = &x->comms[i];
		size_t n = c->id == WEFT_MPI_COMM_WORLD_ID ? x->nworld : c->id == WEFT_MPI_COMM_SELF_ID ? 0 : c->n;
		uint64_t *mm = calloc(n + 1, sizeof(*mm));
		if (!mm)
			OOM();
		for (size_t k = 0; k < n; k++)
			mm[k] = c->id == WEFT_MPI_COMM_WORLD_ID ? k
								: (uint64_t)index_in(x->world, x->nworld, c->ranks[k]);
		OTF2_GroupType type =
			c->id == WEFT_MPI_COMM_SELF_ID ? OTF2_GROUP_TYPE_COMM_SELF : OTF2_GROUP_TYPE_COMM_GROUP;
		CHECK(x,
		      OTF2_GlobalDefWriter_WriteGroup(w, (uint32_t)ref + 1, x->comm_name[i], type, OTF2_PARADIGM_MPI,
						      OTF2_GROUP_FLAG_NONE, (uint32_t)n, mm),
		      "a communicator's group");
		free(mm);
		CHECK(x,
		      OTF2_GlobalDefWriter_WriteComm(w, c->ref, x->comm_name[i], (uint32_t)ref + 1, OTF2_UNDEFINED_COMM,
						     OTF2_COMM_FLAG_NONE),
		      "a communicator");
	}
	free(m);
}

void weft_otf2_mpi_free(struct ox *x)
{
	free(x->msgs);
	for (size_t i = 0; i < x->ncomms; i++)
		free(x->comms[i].ranks);
	free(x->comms);
	free(x->inits);
	free(x->world);
	free(x->world_loc);
	free(x->comm_name);
}
