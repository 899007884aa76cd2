/*
 * complete.c - requests: persistent ones (Send_init, Recv_init, Start, Startall), their end
 * (Request_free, Cancel) and completion (Wait, Waitall, Waitany, Waitsome and the Test
 * family). A completion call's END carries, for the receives it completed, mpi.messages and
 * mpi.bytes (mpi.peer and mpi.tag when it was exactly one) and one FLOW in per message.
 * MPI overwrites completed requests with MPI_REQUEST_NULL, so the handles are copied before
 * the call; where the program ignores the statuses, weft passes its own array to read the
 * actual source, tag and size from. A handle repeated in the array (MPI_REQUEST_NULL, or a
 * program's mistake) is looked up once per occurrence; the second finds nothing.
 */
#include "mpi-internal.h"
#include <stdlib.h>

#define LOCAL_N 32 /* handles and statuses on the stack up to this many; a thread's heap
		      buffer beyond (allocated once, grown when needed: rare) */

struct scratch {
	mh *h;
	char *st;
	size_t cap;
};
static __thread struct scratch scr MPI_TLS;

static int scratch_for(size_t n)
{
	if (n <= scr.cap)
		return 0;
	mh *h = realloc(scr.h, n * sizeof(mh));
	if (!h)
		return -1;
	scr.h = h;
	char *st = realloc(scr.st, n * 32);
	if (!st)
		return -1;
	scr.st = st;
	scr.cap = n;
	return 0;
}


/* request handle h (copied before the call) completed with status st */
void mpi_completed(struct done *d, mh h, const void *st)
{
	struct mpi_req *r = mpi_req_find(h);
	if (!r || !r->active)
		return;
	if (r->kind == RQ_RECV) {
		int peer, tag;
		uint64_t bytes;
		uint64_t flow = mpi_recv_done(r, st, &peer, &tag, &bytes);
		d->msgs++;
		d->peer = peer, d->tag = tag;
		d->bytes += bytes;
		if (flow) {
			if (d->nflows < MPI_DONE_FLOWS)
				d->flows[d->nflows++] = flow;
			else
				mpi_st.received--, mpi_st.undrawn++;
		}
	}
	r->active = 0;
	if (!r->persistent)
		mpi_req_del(r);
}

void mpi_done_end(struct weft_site *s, const struct done *d)
{
	struct marg a[4];
	unsigned n = 0;
	if (d->msgs) {
		a[n++] = (struct marg){K_MESSAGES, d->msgs};
		a[n++] = (struct marg){K_BYTES, (int64_t)d->bytes};
		if (d->msgs == 1) {
			a[n++] = (struct marg){K_PEER, d->peer};
			a[n++] = (struct marg){K_TAG, d->tag};
		}
	}
	mpi_emit(s, WEFT_R_END, a, n, d->nflows ? WEFT_R_FLOW_IN : 0, d->nflows ? d->flows[0] : 0);
	for (unsigned i = 1; i < d->nflows; i++)
		mpi_emit(NULL, 0, NULL, 0, WEFT_R_FLOW_IN, d->flows[i]);
}

MPI_SITE(MPI_Wait);
EXPORT int MPI_Wait(void *req, void *status)
{
	REAL(int, MPI_Wait, (void *, void *));
	if (!mpi_enter(&site_MPI_Wait))
		return real_MPI_Wait(req, status);
	mh h = mh_load(req, 0);
	mpi_emit(&site_MPI_Wait, WEFT_R_BEGIN, NULL, 0, 0, 0);
	char mine[32];
	void *st = status_ignored(status) ? mine : status;
	int rc = real_MPI_Wait(req, st);
	struct done d = {0};
	if (!rc)
		mpi_completed(&d, h, st);
	mpi_done_end(&site_MPI_Wait, &d);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Test);
EXPORT int MPI_Test(void *req, int *flag, void *status)
{
	REAL(int, MPI_Test, (void *, int *, void *));
	if (!mpi_enter(&site_MPI_Test))
		return real_MPI_Test(req, flag, status);
	mh h = mh_load(req, 0);
	mpi_emit(&site_MPI_Test, WEFT_R_BEGIN, NULL, 0, 0, 0);
	char mine[32];
	void *st = status_ignored(status) ? mine : status;
	int rc = real_MPI_Test(req, flag, st);
	struct done d = {0};
	if (!rc && *flag)
		mpi_completed(&d, h, st);
	mpi_done_end(&site_MPI_Test, &d);
	mpi_leave();
	return rc;
}

/* the handles of reqs[0..n) into a copy, and a status array to pass */
struct many {
	mh *h;
	char *st;
	int own_st;
	mh hl[LOCAL_N];
	char stl[LOCAL_N * 32];
};
static int many_prepare(struct many *m, int n, const void *reqs, void *statuses)
{
	if (n <= LOCAL_N) {
		m->h = m->hl, m->st = m->stl;
	} else {
		if (scratch_for((size_t)n))
			return -1;
		m->h = scr.h, m->st = scr.st;
	}
	for (int i = 0; i < n; i++)
		m->h[i] = mh_load(reqs, (size_t)i);
	m->own_st = status_ignored(statuses);
	if (!m->own_st)
		m->st = statuses;
	return 0;
}
#define ST(m, i) ((m)->st + (size_t)(i) * (size_t)mpi_abi.status_size)

MPI_SITE(MPI_Waitall);
EXPORT int MPI_Waitall(int n, void *reqs, void *statuses)
{
	REAL(int, MPI_Waitall, (int, void *, void *));
	if (!mpi_enter(&site_MPI_Waitall))
		return real_MPI_Waitall(n, reqs, statuses);
	struct many m;
	if (n < 0 || many_prepare(&m, n, reqs, statuses)) {
		mpi_leave();
		return real_MPI_Waitall(n, reqs, statuses);
	}
	mpi_emit(&site_MPI_Waitall, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Waitall(n, reqs, m.st);
	struct done d = {0};
	if (!rc)
		for (int i = 0; i < n; i++)
			mpi_completed(&d, m.h[i], ST(&m, i));
	mpi_done_end(&site_MPI_Waitall, &d);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Testall);
EXPORT int MPI_Testall(int n, void *reqs, int *flag, void *statuses)
{
	REAL(int, MPI_Testall, (int, void *, int *, void *));
	if (!mpi_enter(&site_MPI_Testall))
		return real_MPI_Testall(n, reqs, flag, statuses);
	struct many m;
	if (n < 0 || many_prepare(&m, n, reqs, statuses)) {
		mpi_leave();
		return real_MPI_Testall(n, reqs, flag, statuses);
	}
	mpi_emit(&site_MPI_Testall, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Testall(n, reqs, flag, m.st);
	struct done d = {0};
	if (!rc && *flag)
		for (int i = 0; i < n; i++)
			mpi_completed(&d, m.h[i], ST(&m, i));
	mpi_done_end(&site_MPI_Testall, &d);
	mpi_leave();
	return rc;
}

/* Waitany / Testany: one index (MPI_UNDEFINED when none was active) */
#define ANY_LIKE(fn, FLAGP, FLAGARG, FLAGTEST)                                                 \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn(int n, void *reqs, int *idx FLAGP, void *status)                         \
	{                                                                                      \
		REAL(int, fn, (int, void *, int * FLAGP, void *));                             \
		if (!mpi_enter(&site_##fn))                                                    \
			return real_##fn(n, reqs, idx FLAGARG, status);                        \
		struct many m;                                                                 \
		if (n < 0 || many_prepare(&m, n, reqs, (void *)mpi_abi.status_ignore)) {       \
			mpi_leave();                                                           \
			return real_##fn(n, reqs, idx FLAGARG, status);                        \
		}                                                                              \
		mpi_emit(&site_##fn, WEFT_R_BEGIN, NULL, 0, 0, 0);                             \
		void *st = status_ignored(status) ? m.st : status;                             \
		int rc = real_##fn(n, reqs, idx FLAGARG, st);                                  \
		struct done d = {0};                                                           \
		if (!rc && FLAGTEST && *idx >= 0 && *idx < n)                                  \
			mpi_completed(&d, m.h[*idx], st);                                          \
		mpi_done_end(&site_##fn, &d);                                                      \
		mpi_leave();                                                                   \
		return rc;                                                                     \
	}
#define COMMA ,
ANY_LIKE(MPI_Waitany, , , 1)
ANY_LIKE(MPI_Testany, COMMA int *flag, COMMA flag, *flag)

/* Waitsome / Testsome: outcount indices */
#define SOME_LIKE(fn)                                                                          \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn(int n, void *reqs, int *outcount, int *indices, void *statuses)          \
	{                                                                                      \
		REAL(int, fn, (int, void *, int *, int *, void *));                            \
		if (!mpi_enter(&site_##fn))                                                    \
			return real_##fn(n, reqs, outcount, indices, statuses);                \
		struct many m;                                                                 \
		if (n < 0 || many_prepare(&m, n, reqs, statuses)) {                            \
			mpi_leave();                                                           \
			return real_##fn(n, reqs, outcount, indices, statuses);                \
		}                                                                              \
		mpi_emit(&site_##fn, WEFT_R_BEGIN, NULL, 0, 0, 0);                             \
		int rc = real_##fn(n, reqs, outcount, indices, m.st);                          \
		struct done d = {0};                                                           \
		if (!rc && *outcount > 0)                                                      \
			for (int k = 0; k < *outcount && k < n; k++)                           \
				if (indices[k] >= 0 && indices[k] < n)                         \
					mpi_completed(&d, m.h[indices[k]], ST(&m, k));             \
		mpi_done_end(&site_##fn, &d);                                                      \
		mpi_leave();                                                                   \
		return rc;                                                                     \
	}
SOME_LIKE(MPI_Waitsome)
SOME_LIKE(MPI_Testsome)

/* ---- persistent requests ---- */
#define SEND_INIT_LIKE(fn)                                                                     \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn(const void *buf, int count, mh dt, int dest, int tag, mh comm, void *req) \
	{                                                                                      \
		REAL(int, fn, (const void *, int, mh, int, int, mh, void *));                  \
		if (!mpi_enter(&site_##fn))                                                    \
			return real_##fn(buf, count, dt, dest, tag, comm, req);                \
		struct mpi_comm *c = mpi_comm(comm);                                           \
		struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, c ? c->size : 0}}; \
		mpi_emit(&site_##fn, WEFT_R_BEGIN, a, 2, 0, 0);                                \
		int rc = real_##fn(buf, count, dt, dest, tag, comm, req);                      \
		struct mpi_req *r = rc ? NULL : mpi_req_add(mh_load(req, 0));                  \
		if (r) {                                                                       \
			r->kind = RQ_SEND, r->persistent = 1, r->comm = c, r->tag = tag;       \
			r->peer = comm_world_rank(c, dest);                                    \
			r->bytes = mpi_type_bytes(dt, count);                                  \
		}                                                                              \
		mpi_emit(&site_##fn, WEFT_R_END, NULL, 0, 0, 0);                               \
		mpi_leave();                                                                   \
		return rc;                                                                     \
	}
SEND_INIT_LIKE(MPI_Send_init)
SEND_INIT_LIKE(MPI_Ssend_init)
SEND_INIT_LIKE(MPI_Bsend_init)
SEND_INIT_LIKE(MPI_Rsend_init)

MPI_SITE(MPI_Recv_init);
EXPORT int MPI_Recv_init(void *buf, int count, mh dt, int source, int tag, mh comm, void *req)
{
	REAL(int, MPI_Recv_init, (void *, int, mh, int, int, mh, void *));
	if (!mpi_enter(&site_MPI_Recv_init))
		return real_MPI_Recv_init(buf, count, dt, source, tag, comm, req);
	struct mpi_comm *c = mpi_comm(comm);
	struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, c ? c->size : 0}};
	mpi_emit(&site_MPI_Recv_init, WEFT_R_BEGIN, a, 2, 0, 0);
	int rc = real_MPI_Recv_init(buf, count, dt, source, tag, comm, req);
	struct mpi_req *r = rc ? NULL : mpi_req_add(mh_load(req, 0));
	if (r) {
		r->kind = RQ_RECV, r->persistent = 1, r->comm = c, r->tag = tag;
		r->peer = source; /* a rank in comm, translated at each Start */
	}
	mpi_emit(&site_MPI_Recv_init, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}

/* a persistent request started: a send's number and arrow, or a receive's post */
static uint64_t started(mh h, struct marg *a, unsigned *na)
{
	struct mpi_req *r = mpi_req_find(h);
	if (!r || !r->persistent)
		return 0;
	if (r->kind == RQ_SEND) {
		r->active = 1;
		a[0] = (struct marg){K_PEER, r->peer}, a[1] = (struct marg){K_TAG, r->tag};
		a[2] = (struct marg){K_BYTES, (int64_t)r->bytes};
		*na = 3;
		return mpi_send_flow(r->comm, r->peer, r->tag);
	}
	int src = r->peer, tag = r->tag; /* the template: rank in comm, tag */
	struct mpi_req t;
	mpi_recv_post(&t, r->comm, src, tag);
	r->active = 1, r->wild = t.wild, r->flow = t.flow, r->undrawn = t.undrawn, r->kind = t.kind;
	if (t.kind != RQ_RECV)
		r->kind = RQ_RECV, r->active = 0; /* MPI_PROC_NULL: completes with nothing */
	r->peer = src, r->tag = tag;
	return 0;
}

MPI_SITE(MPI_Start);
EXPORT int MPI_Start(void *req)
{
	REAL(int, MPI_Start, (void *));
	if (!mpi_enter(&site_MPI_Start))
		return real_MPI_Start(req);
	struct marg a[3];
	unsigned na = 0;
	uint64_t flow = started(mh_load(req, 0), a, &na);
	mpi_emit(&site_MPI_Start, WEFT_R_BEGIN, a, na, flow ? WEFT_R_FLOW_OUT : 0, flow);
	int rc = real_MPI_Start(req);
	mpi_emit(&site_MPI_Start, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Startall);
EXPORT int MPI_Startall(int n, void *reqs)
{
	REAL(int, MPI_Startall, (int, void *));
	if (!mpi_enter(&site_MPI_Startall))
		return real_MPI_Startall(n, reqs);
	mpi_emit(&site_MPI_Startall, WEFT_R_BEGIN, NULL, 0, 0, 0);
	for (int i = 0; i < n; i++) {
		struct marg a[3];
		unsigned na = 0;
		uint64_t flow = started(mh_load(reqs, (size_t)i), a, &na);
		if (flow)
			mpi_emit(NULL, 0, NULL, 0, WEFT_R_FLOW_OUT, flow);
	}
	int rc = real_MPI_Startall(n, reqs);
	mpi_emit(&site_MPI_Startall, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Request_free);
EXPORT int MPI_Request_free(void *req)
{
	REAL(int, MPI_Request_free, (void *));
	struct mpi_req *r = mpi_st.ready && mpi_st.on ? mpi_req_find(mh_load(req, 0)) : NULL;
	if (r) {
		if (r->active && r->kind == RQ_RECV && r->wild && r->comm && r->comm->pending_wild > 0)
			r->comm->pending_wild--;
		mpi_req_del(r);
	}
	if (!mpi_enter(&site_MPI_Request_free))
		return real_MPI_Request_free(req);
	mpi_emit(&site_MPI_Request_free, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Request_free(req);
	mpi_emit(&site_MPI_Request_free, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}

/* A cancelled receive took a number that no message will use: the numbers on its quadruple
 * are unsure from here, so its flow is dropped and counted; a cancelled send likewise. */
MPI_SITE(MPI_Cancel);
EXPORT int MPI_Cancel(void *req)
{
	REAL(int, MPI_Cancel, (void *));
	struct mpi_req *r = mpi_st.ready && mpi_st.on ? mpi_req_find(mh_load(req, 0)) : NULL;
	if (r && r->active) {
		if (r->kind == RQ_RECV && r->wild && r->comm && r->comm->pending_wild > 0)
			r->comm->pending_wild--;
		if (r->kind == RQ_RECV)
			r->kind = RQ_OTHER;
		r->undrawn = 1, r->flow = 0;
		mpi_st.undrawn++;
	}
	if (!mpi_enter(&site_MPI_Cancel))
		return real_MPI_Cancel(req);
	mpi_emit(&site_MPI_Cancel, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Cancel(req);
	mpi_emit(&site_MPI_Cancel, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}
