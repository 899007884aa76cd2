/*
 * otf2.c - trace -> OTF2 archive (Debian's libotf2: Vampir, Scalasca's scout, otf2-print), the
 * mapping of docs/otf2.md. Built only where libotf2 was found (WEFT_HAVE_OTF2).
 *
 * Layout. A system tree node per host under one root; a location group per process (its name,
 * and in a job its rank: "app rank 2"); a location per thread, and one more per named track a
 * thread recorded slices on (the lanes the .pftrace draws under the track), so that every
 * location's Enter and Leave nest exactly. A region per distinct (name, category) as the
 * .pftrace names slices (symbolized functions, annotations, Python functions). Times are the
 * reader's aligned nanoseconds (the hosts of a job on rank 0's clock, as convert puts them):
 * timer resolution 1e9, global offset the trace's first event.
 *
 * Order. Each thread is walked once (model.c) and its events go through a small buffer per
 * location before they are written: a complete slice (WEFT_COMPLETE) is recorded after its
 * range, so its Enter and Leave are inserted where their times fall among the buffered events,
 * moved inward where that would not nest (counted in `clamped`); one reaching back past what was
 * already written starts at that point. Slices open at the end are closed where the walker
 * closes them (the trace's end, as convert does); instants are zero-length regions.
 *
 * MPI. A first pass over the processes that called MPI (libweft-mpi.so's slices, category `mpi`)
 * collects each message by its arrow id (the sender's rank, peer, tag, bytes and communicator
 * from the sending call; the receiver's rank, and tag and bytes where the receiving call names
 * one message) and the world ranks seen on each communicator. The second pass writes, for each
 * arrow, MpiSend or MpiIsend in the sending call and MpiRecv or MpiIrecv in the call that
 * completed the receive (an MpiIrecvRequest in the thread's oldest open MPI_Irecv on that
 * communicator, else just before), and MpiCollectiveBegin/End around blocking collectives and
 * communicator creation. Ranks in a communicator other than WORLD are its members' positions in
 * world-rank order (weft does not record MPI's own numbering there).
 */
#include "export/export.h"
#include "format/format.h"
#include "mpi/mpi-ids.h"
#include <errno.h>
#include <ftw.h>
#include <otf2/otf2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define OOM() weft_oom("writing OTF2")
#define GROW(arr, n, cap)                                                     \
	do {                                                                  \
		if ((n) >= (cap)) {                                           \
			size_t c_ = (cap) ? (cap) * 2 : 16;                   \
			while (c_ <= (n))                                     \
				c_ *= 2;                                      \
			void *p_ = realloc((arr), c_ * sizeof(*(arr)));       \
			if (!p_)                                              \
				OOM();                                        \
			(arr) = p_;                                           \
			(cap) = c_;                                           \
		}                                                             \
	} while (0)

#define BUF_RECS 65536 /* records held per location (3 MiB): how far back a complete slice may reach */

static uint64_t hmix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* ---- interned strings: text -> OTF2 string id ---- */

struct strtab {
	char **s;
	size_t n, cap;
	uint32_t *h; /* open addressing: id + 1, 0 empty */
	size_t hcap;
};

static uint64_t shash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static uint32_t str_id(struct strtab *t, const char *s)
{
	if (!s)
		s = "";
	if ((t->n + 1) * 2 > t->hcap) {
		size_t cap = t->hcap ? t->hcap * 2 : 1024;
		uint32_t *h = calloc(cap, sizeof(*h));
		if (!h)
			OOM();
		for (size_t i = 0; i < t->n; i++) {
			size_t k = shash(t->s[i]) & (cap - 1);
			while (h[k])
				k = (k + 1) & (cap - 1);
			h[k] = (uint32_t)i + 1;
		}
		free(t->h);
		t->h = h;
		t->hcap = cap;
	}
	size_t k = shash(s) & (t->hcap - 1);
	while (t->h[k]) {
		if (!strcmp(t->s[t->h[k] - 1], s))
			return t->h[k] - 1;
		k = (k + 1) & (t->hcap - 1);
	}
	GROW(t->s, t->n, t->cap);
	if (!(t->s[t->n] = strdup(s)))
		OOM();
	t->h[k] = (uint32_t)++t->n;
	return (uint32_t)t->n - 1;
}

static uint32_t str_idf(struct strtab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static uint32_t str_idf(struct strtab *t, const char *fmt, ...)
{
	char b[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	return str_id(t, b);
}

/* ---- MPI: what the first pass learns ---- */

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

/* ---- locations ---- */

enum { R_ENTER, R_LEAVE, R_SEND, R_ISEND, R_IRECVREQ, R_RECV, R_IRECV, R_CBEGIN, R_CEND, R_METRIC };
struct rec {
	uint64_t ts;
	uint8_t kind;
	uint8_t dbl;  /* R_METRIC: a double */
	uint32_t a;   /* region; peer; metric; collective op */
	uint32_t b;   /* communicator */
	uint32_t c;   /* tag; root */
	uint64_t d;   /* bytes; metric value bits */
	uint64_t e;   /* request id */
};

struct ireq { uint64_t id; int64_t comm; };
struct mopen { uint64_t serial; int op; int64_t comm, root, bytes; };

struct loc {
	uint64_t id;
	unsigned track;
	OTF2_EvtWriter *w;
	struct rec *buf;
	size_t n;
	uint64_t written_ts; /* the last time written (the buffer's floor) */
	uint32_t *stack;     /* open regions */
	size_t depth, scap;
	struct ireq *irq;    /* MPI_Irecv requests not completed yet */
	size_t nirq, irqcap;
	struct mopen *mo;    /* open MPI calls */
	size_t nmo, mocap;
};

struct locdef { uint64_t id; uint32_t name, group; uint64_t events; };

struct region { uint32_t name, cat; int role, paradigm; uint32_t file, line; };

struct metric { uint32_t name, unit; int dbl; };

struct ox {
	const struct weft_trace *t;
	OTF2_Archive *ar;
	struct strtab str;
	struct region *reg;
	size_t nreg, regcap;
	uint32_t *reg_h; /* open addressing on (name, cat, paradigm): region + 1 */
	size_t reg_hcap;
	struct metric *met;
	size_t nmet, metcap;
	struct locdef *locs;
	size_t nlocs, loccap;
	/* MPI */
	struct msg *msgs; /* open addressing on id (0 empty) */
	size_t msgcap, nmsgs;
	struct comm *comms;
	size_t ncomms, commcap;
	struct initcomm *inits;
	size_t ninits, initcap;
	uint32_t *world;  /* ranks present, sorted: a rank's place here is its WORLD rank in the archive */
	size_t nworld;
	uint64_t *world_loc; /* the location of each of them */
	int mpi;
	uint64_t next_req, clamped, unmapped, max_ts;
	int failed;
	char *err;
	size_t errlen;
	/* the process being walked */
	const struct weft_proc *p;
	uint32_t group;
	int64_t rank;
	uint32_t *site_reg;  /* site id -> region + 1 */
	uint32_t *site_met;  /* site id -> metric + 1 */
	uint8_t *is_func;    /* sites that are symbolized functions */
	struct loc *lanes;   /* the thread's locations: [0] its own, then one per named track */
	size_t nlanes, lanecap;
	const struct weft_thread_data *th;
};

static void fail(struct ox *x, OTF2_ErrorCode rc, const char *what)
{
	if (x->failed)
		return;
	x->failed = 1;
	snprintf(x->err, x->errlen, "OTF2: %s: %s (%s)", what, OTF2_Error_GetName(rc), OTF2_Error_GetDescription(rc));
}
#define CHECK(x, call, what)                                    \
	do {                                                    \
		OTF2_ErrorCode rc_ = (call);                    \
		if (rc_ != OTF2_SUCCESS)                        \
			fail((x), rc_, (what));                 \
	} while (0)

/* ---- regions and metrics ---- */

static const char *site_cat(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat ? p->sites[id].cat : "";
}

static int mpi_role(const char *n)
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

static uint32_t region_of(struct ox *x, uint32_t id)
{
	const struct weft_proc *p = x->p;
	if (id < p->nsites && x->site_reg[id])
		return x->site_reg[id] - 1;
	const char *name = weft_site_name(p, id), *cat = site_cat(p, id);
	if (!name)
		name = id ? "?" : "weft: events dropped";
	struct region r = {str_id(&x->str, name), str_id(&x->str, cat), OTF2_REGION_ROLE_FUNCTION, OTF2_PARADIGM_USER,
			   str_id(&x->str, ""), 0};
	if (!strcmp(cat, "mpi")) {
		r.paradigm = OTF2_PARADIGM_MPI;
		r.role = mpi_role(name);
	} else if (id < p->nsites && x->is_func[id]) {
		r.paradigm = OTF2_PARADIGM_COMPILER;
	}
	if (id < p->nsites && p->sites[id].defined && p->sites[id].file) {
		r.file = str_id(&x->str, p->sites[id].file);
		r.line = p->sites[id].line;
	}
	if ((x->nreg + 1) * 2 > x->reg_hcap) {
		size_t cap = x->reg_hcap ? x->reg_hcap * 2 : 1024;
		uint32_t *h = calloc(cap, sizeof(*h));
		if (!h)
			OOM();
		for (size_t i = 0; i < x->nreg; i++) {
			size_t k = hmix(((uint64_t)x->reg[i].name << 32) ^ x->reg[i].cat ^ ((uint64_t)x->reg[i].paradigm << 24)) &
				   (cap - 1);
			while (h[k])
				k = (k + 1) & (cap - 1);
			h[k] = (uint32_t)i + 1;
		}
		free(x->reg_h);
		x->reg_h = h;
		x->reg_hcap = cap;
	}
	size_t k = hmix(((uint64_t)r.name << 32) ^ r.cat ^ ((uint64_t)r.paradigm << 24)) & (x->reg_hcap - 1);
	uint32_t found = 0;
	while (x->reg_h[k]) {
		const struct region *o = &x->reg[x->reg_h[k] - 1];
		if (o->name == r.name && o->cat == r.cat && o->paradigm == r.paradigm) {
			found = x->reg_h[k];
			break;
		}
		k = (k + 1) & (x->reg_hcap - 1);
	}
	if (!found) {
		GROW(x->reg, x->nreg, x->regcap);
		x->reg[x->nreg++] = r;
		found = x->reg_h[k] = (uint32_t)x->nreg;
	}
	if (id < p->nsites)
		x->site_reg[id] = found;
	return found - 1;
}

static uint32_t metric_of(struct ox *x, uint32_t id, int dbl)
{
	const struct weft_proc *p = x->p;
	if (id < p->nsites && x->site_met[id])
		return x->site_met[id] - 1;
	const char *name = weft_site_name(p, id);
	const char *unit = id < p->nsites && p->sites[id].defined && p->sites[id].unit ? p->sites[id].unit : "";
	struct metric m = {str_id(&x->str, name ? name : "?"), str_id(&x->str, unit), dbl};
	size_t i;
	for (i = 0; i < x->nmet; i++) /* a trace has a few dozen counters */
		if (x->met[i].name == m.name && x->met[i].unit == m.unit && x->met[i].dbl == m.dbl)
			break;
	if (i == x->nmet) {
		GROW(x->met, x->nmet, x->metcap);
		x->met[x->nmet++] = m;
	}
	if (id < p->nsites)
		x->site_met[id] = (uint32_t)i + 1;
	return (uint32_t)i;
}

/* ---- MPI tables ---- */

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
			size_t k = hmix(x->msgs[i].id) & (cap - 1);
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
	size_t k = hmix(id) & (x->msgcap - 1);
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
	for (int k = 0; k < A_N; k++)
		v[k] = -1;
	for (unsigned i = 0; i < e->nargs; i++) {
		const struct weft_ev_arg *a = &e->args[i];
		if (a->type != WEFT_R_ARG_I64 && a->type != WEFT_R_ARG_U64)
			continue;
		const char *kn = weft_site_name(p, a->key);
		if (!kn || strncmp(kn, "mpi.", 4))
			continue;
		for (int k = 0; k < A_N; k++)
			if (!strcmp(kn, arg_names[k]))
				v[k] = (int64_t)a->v;
	}
}

static int is_mpi(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat && !strcmp(p->sites[id].cat, "mpi");
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
	if ((e->kind != WEFT_EV_BEGIN && e->kind != WEFT_EV_END) || !is_mpi(s->p, e->id))
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
		if (is_mpi(p, (uint32_t)i))
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

/* ---- writing a location's events ---- */

static void write_rec(struct ox *x, struct loc *l, struct rec *r)
{
	if (r->ts < l->written_ts) /* never back in time on a location */
		r->ts = l->written_ts;
	l->written_ts = r->ts;
	if (r->ts > x->max_ts)
		x->max_ts = r->ts;
	if (x->failed)
		return;
	OTF2_ErrorCode rc = OTF2_SUCCESS;
	switch (r->kind) {
	case R_ENTER: rc = OTF2_EvtWriter_Enter(l->w, NULL, r->ts, r->a); break;
	case R_LEAVE: rc = OTF2_EvtWriter_Leave(l->w, NULL, r->ts, r->a); break;
	case R_SEND: rc = OTF2_EvtWriter_MpiSend(l->w, NULL, r->ts, r->a, r->b, r->c, r->d); break;
	case R_ISEND: rc = OTF2_EvtWriter_MpiIsend(l->w, NULL, r->ts, r->a, r->b, r->c, r->d, r->e); break;
	case R_IRECVREQ: rc = OTF2_EvtWriter_MpiIrecvRequest(l->w, NULL, r->ts, r->e); break;
	case R_RECV: rc = OTF2_EvtWriter_MpiRecv(l->w, NULL, r->ts, r->a, r->b, r->c, r->d); break;
	case R_IRECV: rc = OTF2_EvtWriter_MpiIrecv(l->w, NULL, r->ts, r->a, r->b, r->c, r->d, r->e); break;
	case R_CBEGIN: rc = OTF2_EvtWriter_MpiCollectiveBegin(l->w, NULL, r->ts); break;
	case R_CEND: rc = OTF2_EvtWriter_MpiCollectiveEnd(l->w, NULL, r->ts, (OTF2_CollectiveOp)r->a, r->b, r->c, r->d, 0); break;
	case R_METRIC: {
		OTF2_Type type = r->dbl ? OTF2_TYPE_DOUBLE : OTF2_TYPE_INT64;
		OTF2_MetricValue v;
		if (r->dbl)
			memcpy(&v.floating_point, &r->d, sizeof(double));
		else
			v.signed_int = (int64_t)r->d;
		rc = OTF2_EvtWriter_Metric(l->w, NULL, r->ts, r->a, 1, &type, &v);
		break;
	}
	}
	if (rc != OTF2_SUCCESS)
		fail(x, rc, "writing an event");
}

static void flush_recs(struct ox *x, struct loc *l, size_t n)
{
	for (size_t i = 0; i < n; i++)
		write_rec(x, l, &l->buf[i]);
	memmove(l->buf, l->buf + n, (l->n - n) * sizeof(*l->buf));
	l->n -= n;
}

static struct rec *push(struct ox *x, struct loc *l, uint64_t ts, int kind)
{
	if (l->n == BUF_RECS)
		flush_recs(x, l, BUF_RECS / 2);
	struct rec *r = &l->buf[l->n++];
	memset(r, 0, sizeof(*r));
	r->ts = ts;
	r->kind = (uint8_t)kind;
	return r;
}

static void insert_at(struct loc *l, size_t at, struct rec r)
{
	memmove(l->buf + at + 1, l->buf + at, (l->n - at) * sizeof(*l->buf));
	l->buf[at] = r;
	l->n++;
}

/* A complete slice [from, to] recorded after its range: its Enter and Leave go where their times
 * fall among the buffered events, moved inward until what lies between them nests. */
static void complete(struct ox *x, struct loc *l, uint32_t region, uint64_t from, uint64_t to)
{
	if (l->n + 2 > BUF_RECS)
		flush_recs(x, l, BUF_RECS / 2);
	int moved = from < l->written_ts;
	if (from < l->written_ts)
		from = l->written_ts;
	if (to < from)
		to = from;
	size_t a = 0, b;
	while (a < l->n && (l->buf[a].ts < from || (l->buf[a].ts == from && l->buf[a].kind != R_ENTER)))
		a++;
	for (b = a; b < l->n && (l->buf[b].ts < to || (l->buf[b].ts == to && l->buf[b].kind != R_ENTER));)
		b++;
	/* the Enter after the last point where the depth is lowest, if it goes below its start */
	long d = 0, m = 0;
	size_t a2 = a;
	for (size_t i = a; i < b; i++) {
		d += l->buf[i].kind == R_ENTER ? 1 : l->buf[i].kind == R_LEAVE ? -1 : 0;
		if (d < m || (d == m && m < 0)) {
			m = d < m ? d : m;
			a2 = i + 1;
		}
	}
	/* the Leave before the first Enter that is not left before it */
	size_t b2 = a2;
	d = 0;
	for (size_t i = a2; i < b; i++) {
		d += l->buf[i].kind == R_ENTER ? 1 : l->buf[i].kind == R_LEAVE ? -1 : 0;
		if (d == 0)
			b2 = i + 1;
	}
	if (d == 0)
		b2 = b;
	uint64_t ts_in = from, ts_out = to;
	if (a2 > a)
		ts_in = l->buf[a2 - 1].ts > from ? l->buf[a2 - 1].ts : from;
	if (b2 < b && l->buf[b2].ts < to)
		ts_out = l->buf[b2].ts;
	if (ts_out < ts_in)
		ts_out = ts_in;
	if (moved || a2 != a || b2 != b)
		x->clamped++;
	insert_at(l, b2, (struct rec){.ts = ts_out, .kind = R_LEAVE, .a = region});
	insert_at(l, a2, (struct rec){.ts = ts_in, .kind = R_ENTER, .a = region});
}

static void loc_define(struct ox *x, uint64_t id, const char *name)
{
	GROW(x->locs, x->nlocs, x->loccap);
	x->locs[x->nlocs++] = (struct locdef){id, str_id(&x->str, name), x->group, 0};
}

static struct loc *lane(struct ox *x, unsigned track)
{
	for (size_t i = 0; i < x->nlanes; i++)
		if (x->lanes[i].track == track)
			return &x->lanes[i];
	GROW(x->lanes, x->nlanes, x->lanecap);
	struct loc *l = &x->lanes[x->nlanes++];
	memset(l, 0, sizeof(*l));
	l->track = track;
	l->id = x->nlocs;
	if (!(l->buf = malloc(BUF_RECS * sizeof(*l->buf))))
		OOM();
	char name[512], tn[300];
	if (x->th->name && *x->th->name) /* threads often share their process's name: the tid tells them apart */
		snprintf(tn, sizeof(tn), "%s tid %u", x->th->name, x->th->tid);
	else
		snprintf(tn, sizeof(tn), "tid %u", x->th->tid);
	const char *track_name = track ? weft_track_name(x->p, track) : NULL;
	if (track)
		snprintf(name, sizeof(name), "%s (%s)", track_name ? track_name : "track", tn);
	else
		snprintf(name, sizeof(name), "%s", tn);
	loc_define(x, l->id, name);
	l->w = OTF2_Archive_GetEvtWriter(x->ar, l->id);
	if (!l->w && !x->failed) {
		x->failed = 1;
		snprintf(x->err, x->errlen, "OTF2: cannot open the event writer of location %llu", (unsigned long long)l->id);
	}
	return l;
}

/* ---- MPI events of the second pass ---- */

static void mpi_begin(struct ox *x, struct loc *l, const struct weft_ev *e)
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
		struct rec *r = push(x, l, e->ts, name_in(name, nonblocking_sends) ? R_ISEND : R_SEND);
		r->a = (uint32_t)peer;
		r->b = comm_ref(x, comm);
		r->c = tag >= 0 ? (uint32_t)tag : OTF2_UNDEFINED_UINT32;
		r->d = bytes >= 0 ? (uint64_t)bytes : 0;
		r->e = ++x->next_req;
	}
	if (name && !strcmp(name, "MPI_Irecv")) {
		struct rec *r = push(x, l, e->ts, R_IRECVREQ);
		r->e = ++x->next_req;
		GROW(l->irq, l->nirq, l->irqcap);
		l->irq[l->nirq++] = (struct ireq){r->e, v[A_COMM]};
	}
	GROW(l->mo, l->nmo, l->mocap);
	struct mopen *o = &l->mo[l->nmo++];
	*o = (struct mopen){e->serial, v[A_SEQ] >= 0 ? coll_op(name) : -1, v[A_COMM], v[A_ROOT], v[A_BYTES]};
	if (o->op >= 0 && comm_ref(x, o->comm) != OTF2_UNDEFINED_COMM)
		push(x, l, e->ts, R_CBEGIN);
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
	struct rec *r = push(x, l, ts, R_IRECVREQ); /* a receive posted by Start, Imrecv, or unrecorded */
	return r->e = ++x->next_req;
}

static void mpi_end(struct ox *x, struct loc *l, const struct weft_ev *e)
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
		struct rec *r = push(x, l, e->ts, blocking ? R_RECV : R_IRECV);
		r->a = (uint32_t)peer;
		r->b = comm_ref(x, comm);
		r->c = tag >= 0 ? (uint32_t)tag : OTF2_UNDEFINED_UINT32;
		r->d = bytes >= 0 ? (uint64_t)bytes : 0;
		r->e = req;
	}
	if (o.op >= 0) {
		struct rec *r = push(x, l, e->ts, R_CEND);
		int64_t root = rank_in(x, o.comm, o.root);
		r->a = (uint32_t)o.op;
		r->b = comm_ref(x, o.comm);
		r->c = root >= 0 ? (uint32_t)root : OTF2_UNDEFINED_UINT32;
		r->d = o.bytes > 0 ? (uint64_t)o.bytes : 0;
	}
}

/* ---- the second pass: a thread's events ---- */

static void on_event(void *ud, const struct weft_ev *e)
{
	struct ox *x = ud;
	switch (e->kind) {
	case WEFT_EV_BEGIN: {
		struct loc *l = lane(x, e->track);
		uint32_t reg = region_of(x, e->id);
		push(x, l, e->ts, R_ENTER)->a = reg;
		GROW(l->stack, l->depth, l->scap);
		l->stack[l->depth++] = reg;
		if (x->mpi && !e->track && is_mpi(x->p, e->id))
			mpi_begin(x, l, e);
		break;
	}
	case WEFT_EV_END: {
		struct loc *l = lane(x, e->track);
		if (!l->depth)
			break; /* the walker balances: not reached */
		if (l->nmo && l->mo[l->nmo - 1].serial == e->serial)
			mpi_end(x, l, e);
		push(x, l, e->ts, R_LEAVE)->a = l->stack[--l->depth];
		break;
	}
	case WEFT_EV_COMPLETE:
		complete(x, lane(x, e->track), region_of(x, e->id), e->ts, e->end_ts > e->ts ? e->end_ts : e->ts);
		break;
	case WEFT_EV_INSTANT:
	case WEFT_EV_DROPPED: {
		struct loc *l = lane(x, e->kind == WEFT_EV_INSTANT ? e->track : 0);
		uint32_t reg = region_of(x, e->kind == WEFT_EV_INSTANT ? e->id : 0);
		push(x, l, e->ts, R_ENTER)->a = reg;
		push(x, l, e->ts, R_LEAVE)->a = reg;
		break;
	}
	case WEFT_EV_COUNTER: {
		struct loc *l = lane(x, 0);
		struct rec *r = push(x, l, e->ts, R_METRIC);
		r->a = metric_of(x, e->id, e->is_double);
		r->dbl = (uint8_t)(e->is_double != 0);
		r->d = e->value;
		break;
	}
	default:
		break;
	}
}

/* Plain function begins and ends (model.h), the bulk of a function trace, without a weft_ev. */
static size_t on_plain(void *ud, const struct weft_plain_ev *ev, size_t n)
{
	struct ox *x = ud;
	struct loc *l = lane(x, 0);
	for (size_t i = 0; i < n; i++) {
		if (ev[i].kind == WEFT_EV_BEGIN) {
			if (is_mpi(x->p, ev[i].id))
				return i;
			uint32_t reg = region_of(x, ev[i].id);
			push(x, l, ev[i].ts, R_ENTER)->a = reg;
			GROW(l->stack, l->depth, l->scap);
			l->stack[l->depth++] = reg;
		} else {
			if (!l->depth || (l->nmo && l->mo[l->nmo - 1].serial == ev[i].serial))
				return i;
			push(x, l, ev[i].ts, R_LEAVE)->a = l->stack[--l->depth];
		}
	}
	return n;
}

static void close_lanes(struct ox *x)
{
	for (size_t i = 0; i < x->nlanes; i++) {
		struct loc *l = &x->lanes[i];
		flush_recs(x, l, l->n);
		uint64_t n = 0;
		if (l->w) {
			if (OTF2_EvtWriter_GetNumberOfEvents(l->w, &n) != OTF2_SUCCESS)
				n = 0;
			CHECK(x, OTF2_Archive_CloseEvtWriter(x->ar, l->w), "closing an event writer");
		}
		x->locs[l->id].events = n;
		free(l->buf);
		free(l->stack);
		free(l->irq);
		free(l->mo);
	}
	x->nlanes = 0;
}

static void walk_proc(struct ox *x, size_t pi, struct weft_export_summary *sum)
{
	const struct weft_proc *p = &x->t->procs[pi];
	x->p = p;
	x->group = (uint32_t)pi;
	x->site_reg = calloc(p->nsites + 1, sizeof(*x->site_reg));
	x->site_met = calloc(p->nsites + 1, sizeof(*x->site_met));
	x->is_func = calloc(p->nsites + 1, 1);
	if (!x->site_reg || !x->site_met || !x->is_func)
		OOM();
	for (size_t i = 0; i < p->func_cap; i++)
		if (p->func_id && p->func_id[i] && p->func_id[i] < p->nsites)
			x->is_func[p->func_id[i]] = 1;
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t k = 0; k < p->nthreads && !x->failed; k++) {
		struct weft_walk_stats st;
		memset(&st, 0, sizeof(st));
		x->th = &p->threads[k];
		lane(x, 0); /* every thread has its location, events or not */
		weft_walk_thread_plain(p, x->th, x->t->last_ns, on_event, on_plain, x, &st, &buf, &cap);
		close_lanes(x);
		weft_export_summary_add(sum, &st);
	}
	sum->dropped += weft_proc_dropped(p);
	free(buf);
	free(x->site_reg);
	free(x->site_met);
	free(x->is_func);
}

/* ---- definitions ---- */

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

static void write_defs(struct ox *x, const uint64_t *first_loc)
{
	const struct weft_trace *t = x->t;
	/* every string first: ids for what the definitions below name */
	uint32_t s_root = str_id(&x->str, "weft trace"), s_machine = str_id(&x->str, "machine"),
		 s_node = str_id(&x->str, "node");
	uint32_t *host_node = calloc(t->nprocs + 1, sizeof(*host_node)), *group_name = calloc(t->nprocs + 1, sizeof(uint32_t));
	uint32_t *hosts = calloc(t->nprocs + 1, sizeof(*hosts));
	size_t nhosts = 0;
	if (!host_node || !group_name || !hosts)
		OOM();
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		uint32_t h = str_id(&x->str, p->host && *p->host ? p->host : "(unknown host)");
		size_t k;
		for (k = 0; k < nhosts && hosts[k] != h; k++)
			;
		if (k == nhosts)
			hosts[nhosts++] = h;
		host_node[i] = (uint32_t)k + 1;
		uint32_t r = weft_proc_rank(p);
		const char *pn = p->name ? p->name : "?";
		char suffix[32];
		snprintf(suffix, sizeof(suffix), " rank %u", r);
		size_t ln = strlen(pn), ls = strlen(suffix);
		int named = ln >= ls && !strcmp(pn + ln - ls, suffix); /* the reader names ranks so already */
		if (r != WEFT_RANK_NONE && !p->rank_carrier && !named)
			group_name[i] = str_idf(&x->str, "%s%s", pn, suffix);
		else
			group_name[i] = str_id(&x->str, pn);
	}
	uint32_t s_world = 0, s_self = 0, s_wlocs = 0, s_mpi = 0;
	uint32_t *comm_name = calloc(x->ncomms + 1, sizeof(*comm_name));
	if (!comm_name)
		OOM();
	if (x->mpi) {
		s_world = str_id(&x->str, "MPI_COMM_WORLD");
		s_self = str_id(&x->str, "MPI_COMM_SELF");
		s_wlocs = str_id(&x->str, "MPI_COMM_WORLD locations");
		s_mpi = str_id(&x->str, "MPI");
		for (size_t i = 0; i < x->ncomms; i++)
			comm_name[i] = x->comms[i].id == WEFT_MPI_COMM_WORLD_ID ? s_world
				       : x->comms[i].id == WEFT_MPI_COMM_SELF_ID ? s_self
				       : str_idf(&x->str, "comm 0x%llx", (unsigned long long)x->comms[i].id);
	}
	uint32_t s_count = str_id(&x->str, "weft counter");
	OTF2_GlobalDefWriter *w = OTF2_Archive_GetGlobalDefWriter(x->ar);
	if (!w) {
		fail(x, OTF2_ERROR_INVALID, "the global definition writer");
		goto out;
	}
	/* clock: the reader's aligned nanoseconds; wall time at the offset where recorded */
	uint64_t real = OTF2_UNDEFINED_TIMESTAMP;
	for (size_t i = 0; i < t->nprocs && real == OTF2_UNDEFINED_TIMESTAMP; i++)
		if (t->procs[i].nclock && !t->procs[i].host_index)
			real = t->procs[i].clock[0].real_ns + (t->first_ns - t->procs[i].clock[0].boot_ns);
	CHECK(x, OTF2_GlobalDefWriter_WriteClockProperties(w, 1000000000ull, t->first_ns,
							       x->max_ts > t->first_ns ? x->max_ts - t->first_ns : 0, real),
	      "clock properties");
	for (size_t i = 0; i < x->str.n; i++)
		CHECK(x, OTF2_GlobalDefWriter_WriteString(w, (uint32_t)i, x->str.s[i]), "a string");
	if (x->mpi)
		CHECK(x, OTF2_GlobalDefWriter_WriteParadigm(w, OTF2_PARADIGM_MPI, s_mpi, OTF2_PARADIGM_CLASS_PROCESS),
		      "the MPI paradigm");
	CHECK(x, OTF2_GlobalDefWriter_WriteSystemTreeNode(w, 0, s_root, s_machine, OTF2_UNDEFINED_SYSTEM_TREE_NODE),
	      "the system tree");
	for (size_t k = 0; k < nhosts; k++)
		CHECK(x, OTF2_GlobalDefWriter_WriteSystemTreeNode(w, (uint32_t)k + 1, hosts[k], s_node, 0), "a host");
	for (size_t i = 0; i < t->nprocs; i++)
		CHECK(x, OTF2_GlobalDefWriter_WriteLocationGroup(w, (uint32_t)i, group_name[i], OTF2_LOCATION_GROUP_TYPE_PROCESS,
								 host_node[i], OTF2_UNDEFINED_LOCATION_GROUP),
		      "a location group");
	for (size_t i = 0; i < x->nlocs; i++)
		CHECK(x, OTF2_GlobalDefWriter_WriteLocation(w, x->locs[i].id, x->locs[i].name, OTF2_LOCATION_TYPE_CPU_THREAD,
							    x->locs[i].events, x->locs[i].group),
		      "a location");
	for (size_t i = 0; i < x->nreg; i++) {
		const struct region *r = &x->reg[i];
		CHECK(x, OTF2_GlobalDefWriter_WriteRegion(w, (uint32_t)i, r->name, r->name, r->cat, (OTF2_RegionRole)r->role,
							  (OTF2_Paradigm)r->paradigm, OTF2_REGION_FLAG_NONE, r->file, r->line,
							  r->line),
		      "a region");
	}
	if (x->mpi) {
		/* group 0: each present rank's first location, in rank order; each communicator a
		 * group of indices into it */
		uint64_t *m = calloc(x->nworld + 1, sizeof(*m));
		if (!m)
			OOM();
		for (size_t i = 0; i < x->nworld; i++)
			m[i] = first_loc[x->world_loc[i]];
		CHECK(x, OTF2_GlobalDefWriter_WriteGroup(w, 0, s_wlocs, OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
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
				mm[k] = c->id == WEFT_MPI_COMM_WORLD_ID ? k : (uint64_t)index_in(x->world, x->nworld, c->ranks[k]);
			CHECK(x, OTF2_GlobalDefWriter_WriteGroup(w, (uint32_t)ref + 1, comm_name[i],
								 c->id == WEFT_MPI_COMM_SELF_ID ? OTF2_GROUP_TYPE_COMM_SELF
											   : OTF2_GROUP_TYPE_COMM_GROUP,
								 OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, (uint32_t)n, mm),
			      "a communicator's group");
			free(mm);
			CHECK(x, OTF2_GlobalDefWriter_WriteComm(w, c->ref, comm_name[i], (uint32_t)ref + 1,
								OTF2_UNDEFINED_COMM,
								OTF2_COMM_FLAG_NONE),
			      "a communicator");
		}
		free(m);
	}
	for (size_t i = 0; i < x->nmet; i++) {
		const struct metric *mt = &x->met[i];
		OTF2_MetricMemberRef ref = (uint32_t)i;
		CHECK(x, OTF2_GlobalDefWriter_WriteMetricMember(w, (uint32_t)i, mt->name, s_count, OTF2_METRIC_TYPE_USER,
								OTF2_METRIC_ABSOLUTE_POINT, mt->dbl ? OTF2_TYPE_DOUBLE : OTF2_TYPE_INT64,
								OTF2_BASE_DECIMAL, 0, mt->unit),
		      "a metric member");
		CHECK(x, OTF2_GlobalDefWriter_WriteMetricClass(w, (uint32_t)i, 1, &ref, OTF2_METRIC_ASYNCHRONOUS,
							       OTF2_RECORDER_KIND_ABSTRACT),
		      "a metric class");
	}
	CHECK(x, OTF2_Archive_CloseGlobalDefWriter(x->ar, w), "closing the definitions");
out:
	free(host_node);
	free(group_name);
	free(hosts);
	free(comm_name);
}

static OTF2_FlushType pre_flush(void *ud, OTF2_FileType ft, OTF2_LocationRef loc, void *cb, bool final)
{
	(void)ud, (void)ft, (void)loc, (void)cb, (void)final;
	return OTF2_FLUSH;
}
static const OTF2_FlushCallbacks flush_cbs = {.otf2_pre_flush = pre_flush, .otf2_post_flush = NULL};

/* libotf2 prints its errors unless told otherwise: the library stays silent (the calls'
 * return codes say what failed) */
static OTF2_ErrorCode quiet(void *ud, const char *file, uint64_t line, const char *fn, OTF2_ErrorCode code,
			    const char *fmt, va_list va)
{
	(void)ud, (void)file, (void)line, (void)fn, (void)fmt, (void)va;
	return code;
}

static uint64_t archive_bytes;
static int add_size(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path, (void)f;
	if (flag == FTW_F)
		archive_bytes += (uint64_t)st->st_size;
	return 0;
}

int weft_export_otf2(const struct weft_trace *t, const char *dir, struct weft_export_summary *sum, char *err,
		     size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	struct ox x;
	memset(&x, 0, sizeof(x));
	x.t = t;
	x.err = err;
	x.errlen = errlen;
	x.max_ts = t->first_ns;
	OTF2_Error_RegisterCallback(quiet, NULL);
	str_id(&x.str, ""); /* string 0 */
	scan_mpi(&x, sum);
	if (x.mpi) {
		world_ranks(&x);
		/* WORLD and SELF first (refs 0 and 1), then the others in the order met */
		comm_of(&x, WEFT_MPI_COMM_WORLD_ID, 1)->ref = 0;
		comm_of(&x, WEFT_MPI_COMM_SELF_ID, 1)->ref = 1;
		uint32_t next = 2;
		for (size_t i = 0; i < x.ncomms; i++)
			if (x.comms[i].id > WEFT_MPI_COMM_SELF_ID)
				x.comms[i].ref = next++;
	}
	x.ar = OTF2_Archive_Open(dir, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024, OTF2_SUBSTRATE_POSIX,
				 OTF2_COMPRESSION_NONE);
	if (!x.ar) {
		snprintf(err, errlen, "OTF2: cannot create the archive in %s", dir);
		return -EIO;
	}
	CHECK(&x, OTF2_Archive_SetFlushCallbacks(x.ar, &flush_cbs, NULL), "flush callbacks");
	CHECK(&x, OTF2_Archive_SetSerialCollectiveCallbacks(x.ar), "collective callbacks");
	CHECK(&x, OTF2_Archive_SetCreator(x.ar, "weft"), "the creator");
	CHECK(&x, OTF2_Archive_SetDescription(x.ar, t->dir ? t->dir : ""), "the description");
	CHECK(&x, OTF2_Archive_OpenEvtFiles(x.ar), "opening the event files");
	uint64_t *first_loc = calloc(t->nprocs + 1, sizeof(*first_loc));
	if (!first_loc)
		OOM();
	for (size_t i = 0; i < t->nprocs && !x.failed; i++) {
		first_loc[i] = x.nlocs;
		walk_proc(&x, i, sum);
	}
	if (!x.failed)
		CHECK(&x, OTF2_Archive_CloseEvtFiles(x.ar), "closing the event files");
	if (!x.failed) { /* local definitions: none, but readers expect each location's file */
		CHECK(&x, OTF2_Archive_OpenDefFiles(x.ar), "opening the definition files");
		for (size_t i = 0; i < x.nlocs && !x.failed; i++) {
			OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(x.ar, x.locs[i].id);
			if (dw)
				CHECK(&x, OTF2_Archive_CloseDefWriter(x.ar, dw), "a location's definitions");
		}
		CHECK(&x, OTF2_Archive_CloseDefFiles(x.ar), "closing the definition files");
	}
	if (!x.failed)
		write_defs(&x, first_loc);
	OTF2_ErrorCode crc = OTF2_Archive_Close(x.ar);
	if (crc != OTF2_SUCCESS)
		fail(&x, crc, "closing the archive");
	int rc = x.failed ? -EIO : 0;
	if (!rc) {
		uint64_t n = 0;
		for (size_t i = 0; i < x.nlocs; i++)
			n += x.locs[i].events;
		sum->records = n;
		sum->locations = x.nlocs;
		sum->clamped = x.clamped;
		sum->unmapped = x.unmapped;
		archive_bytes = 0;
		nftw(dir, add_size, 16, FTW_PHYS);
		sum->bytes = archive_bytes;
	}
	for (size_t i = 0; i < x.str.n; i++)
		free(x.str.s[i]);
	free(x.str.s);
	free(x.str.h);
	free(x.reg);
	free(x.reg_h);
	free(x.met);
	free(x.locs);
	free(x.lanes);
	free(x.msgs);
	for (size_t i = 0; i < x.ncomms; i++)
		free(x.comms[i].ranks);
	free(x.comms);
	free(x.inits);
	free(x.world);
	free(x.world_loc);
	free(first_loc);
	return weft_export_result(sum, rc, err, errlen);
}
