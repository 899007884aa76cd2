/*
 * p2p.c - point-to-point calls: blocking and nonblocking sends and receives, Sendrecv,
 * probes, matched probes and receives, persistent requests. A send's slice carries the
 * message's FLOW out right after its BEGIN; a receive's FLOW in follows the END of the call
 * that completed it (here for blocking calls, in complete.c for requests). Arguments: the
 * partner's world rank, tag, bytes, communicator id and size; for receives the actual source,
 * tag and size, from the status, after the END.
 */
#include "mpi-internal.h"

/* the last datatype's size, per thread: most programs send one or two types */
static __thread mh last_dt MPI_TLS;
static __thread int64_t last_size MPI_TLS;

uint64_t mpi_type_bytes(mh dt, int64_t count)
{
	if (count <= 0)
		return 0;
	if (dt != last_dt || !last_dt) {
		static int (*tsize)(mh, int *);
		if (!tsize)
			tsize = (int (*)(mh, int *))mpi_sym("PMPI_Type_size");
		int n = 0;
		if (!tsize || tsize(dt, &n))
			return 0;
		last_dt = dt;
		last_size = n;
	}
	return (uint64_t)(count * last_size);
}

/* a status to read when the program passes MPI_STATUS_IGNORE */
typedef struct {
	char b[32];
} any_status;

void mpi_send_begin(struct weft_site *s, const struct mpi_comm *c, int dst, int tag, uint64_t bytes,
		       uint64_t flow)
{
	struct marg a[] = {{K_PEER, dst}, {K_TAG, tag}, {K_BYTES, (int64_t)bytes},
			   {K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, c ? c->size : 0}};
	mpi_emit(s, WEFT_R_BEGIN, a, 5, flow ? WEFT_R_FLOW_OUT : 0, flow);
}

void mpi_comm_begin(struct weft_site *s, const struct mpi_comm *c)
{
	struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, c ? c->size : 0}};
	mpi_emit(s, WEFT_R_BEGIN, a, 2, 0, 0);
}

/* the END of a call that completed receive r with status st */
void mpi_recv_end(struct weft_site *s, struct mpi_req *r, const void *st, int rc)
{
	int peer = -1, tag = -1;
	uint64_t bytes = 0, flow = 0;
	if (!rc)
		flow = mpi_recv_done(r, st, &peer, &tag, &bytes);
	else if (r->wild && r->comm && r->comm->pending_wild > 0)
		r->comm->pending_wild--;
	struct marg a[] = {{K_PEER, peer}, {K_TAG, tag}, {K_BYTES, (int64_t)bytes}};
	mpi_emit(s, WEFT_R_END, a, rc ? 0 : 3, flow ? WEFT_R_FLOW_IN : 0, flow);
}

#define SEND_LIKE(fn)                                                                          \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn(const void *buf, int count, mh dt, int dest, int tag, mh comm)           \
	{                                                                                      \
		REAL(int, fn, (const void *, int, mh, int, int, mh));                          \
		if (!mpi_enter(&site_##fn))                                                    \
			return real_##fn(buf, count, dt, dest, tag, comm);                     \
		struct mpi_comm *c = mpi_comm(comm);                                           \
		int w = comm_world_rank(c, dest);                                              \
		mpi_send_begin(&site_##fn, c, w, tag, mpi_type_bytes(dt, count), mpi_send_flow(c, w, tag)); \
		int rc = real_##fn(buf, count, dt, dest, tag, comm);                           \
		mpi_emit(&site_##fn, WEFT_R_END, NULL, 0, 0, 0);                               \
		mpi_leave();                                                                   \
		return rc;                                                                     \
	}
SEND_LIKE(MPI_Send)
SEND_LIKE(MPI_Ssend)
SEND_LIKE(MPI_Bsend)
SEND_LIKE(MPI_Rsend)

#define ISEND_LIKE(fn)                                                                         \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn(const void *buf, int count, mh dt, int dest, int tag, mh comm, void *req) \
	{                                                                                      \
		REAL(int, fn, (const void *, int, mh, int, int, mh, void *));                  \
		if (!mpi_enter(&site_##fn))                                                    \
			return real_##fn(buf, count, dt, dest, tag, comm, req);                \
		struct mpi_comm *c = mpi_comm(comm);                                           \
		int w = comm_world_rank(c, dest);                                              \
		mpi_send_begin(&site_##fn, c, w, tag, mpi_type_bytes(dt, count), mpi_send_flow(c, w, tag)); \
		int rc = real_##fn(buf, count, dt, dest, tag, comm, req);                      \
		struct mpi_req *r = rc ? NULL : mpi_req_add(mh_load(req, 0));                  \
		if (r)                                                                         \
			r->kind = RQ_SEND, r->active = 1, r->comm = c, r->peer = w, r->tag = tag; \
		mpi_emit(&site_##fn, WEFT_R_END, NULL, 0, 0, 0);                               \
		mpi_leave();                                                                   \
		return rc;                                                                     \
	}
ISEND_LIKE(MPI_Isend)
ISEND_LIKE(MPI_Issend)
ISEND_LIKE(MPI_Ibsend)
ISEND_LIKE(MPI_Irsend)

MPI_SITE(MPI_Recv);
EXPORT int MPI_Recv(void *buf, int count, mh dt, int source, int tag, mh comm, void *status)
{
	REAL(int, MPI_Recv, (void *, int, mh, int, int, mh, void *));
	if (!mpi_enter(&site_MPI_Recv))
		return real_MPI_Recv(buf, count, dt, source, tag, comm, status);
	struct mpi_comm *c = mpi_comm(comm);
	mpi_comm_begin(&site_MPI_Recv, c);
	struct mpi_req r;
	mpi_recv_post(&r, c, source, tag);
	any_status mine;
	void *st = status_ignored(status) ? &mine : status;
	int rc = real_MPI_Recv(buf, count, dt, source, tag, comm, st);
	mpi_recv_end(&site_MPI_Recv, &r, st, rc);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Irecv);
EXPORT int MPI_Irecv(void *buf, int count, mh dt, int source, int tag, mh comm, void *req)
{
	REAL(int, MPI_Irecv, (void *, int, mh, int, int, mh, void *));
	if (!mpi_enter(&site_MPI_Irecv))
		return real_MPI_Irecv(buf, count, dt, source, tag, comm, req);
	struct mpi_comm *c = mpi_comm(comm);
	mpi_comm_begin(&site_MPI_Irecv, c);
	int rc = real_MPI_Irecv(buf, count, dt, source, tag, comm, req);
	struct mpi_req *r = rc ? NULL : mpi_req_add(mh_load(req, 0));
	if (r)
		mpi_recv_post(r, c, source, tag);
	else if (!rc)
		mpi_st.undrawn++;
	mpi_emit(&site_MPI_Irecv, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Sendrecv);
EXPORT int MPI_Sendrecv(const void *sbuf, int scount, mh sdt, int dest, int stag, void *rbuf, int rcount,
			mh rdt, int source, int rtag, mh comm, void *status)
{
	REAL(int, MPI_Sendrecv, (const void *, int, mh, int, int, void *, int, mh, int, int, mh, void *));
	if (!mpi_enter(&site_MPI_Sendrecv))
		return real_MPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm,
					 status);
	struct mpi_comm *c = mpi_comm(comm);
	int w = comm_world_rank(c, dest);
	uint64_t flow = mpi_send_flow(c, w, stag);
	struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, c ? c->size : 0}};
	mpi_emit(&site_MPI_Sendrecv, WEFT_R_BEGIN, a, 2, flow ? WEFT_R_FLOW_OUT : 0, flow);
	struct mpi_req r;
	mpi_recv_post(&r, c, source, rtag);
	any_status mine;
	void *st = status_ignored(status) ? &mine : status;
	int rc = real_MPI_Sendrecv(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, st);
	mpi_recv_end(&site_MPI_Sendrecv, &r, st, rc);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Sendrecv_replace);
EXPORT int MPI_Sendrecv_replace(void *buf, int count, mh dt, int dest, int stag, int source, int rtag, mh comm,
				void *status)
{
	REAL(int, MPI_Sendrecv_replace, (void *, int, mh, int, int, int, int, mh, void *));
	if (!mpi_enter(&site_MPI_Sendrecv_replace))
		return real_MPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, status);
	struct mpi_comm *c = mpi_comm(comm);
	int w = comm_world_rank(c, dest);
	uint64_t flow = mpi_send_flow(c, w, stag);
	struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, c ? c->size : 0}};
	mpi_emit(&site_MPI_Sendrecv_replace, WEFT_R_BEGIN, a, 2, flow ? WEFT_R_FLOW_OUT : 0, flow);
	struct mpi_req r;
	mpi_recv_post(&r, c, source, rtag);
	any_status mine;
	void *st = status_ignored(status) ? &mine : status;
	int rc = real_MPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, st);
	mpi_recv_end(&site_MPI_Sendrecv_replace, &r, st, rc);
	mpi_leave();
	return rc;
}

/* probes: no message is taken; the slice says what was found */
static void probe_end(struct weft_site *s, struct mpi_comm *c, const void *st, int found)
{
	struct marg a[] = {{K_PEER, found ? comm_world_rank(c, st_int(st, mpi_abi.off_source)) : -1},
			   {K_TAG, found ? st_int(st, mpi_abi.off_tag) : -1},
			   {K_BYTES, found ? (int64_t)st_bytes(st) : 0}};
	mpi_emit(s, WEFT_R_END, a, found ? 3 : 0, 0, 0);
}

MPI_SITE(MPI_Probe);
EXPORT int MPI_Probe(int source, int tag, mh comm, void *status)
{
	REAL(int, MPI_Probe, (int, int, mh, void *));
	if (!mpi_enter(&site_MPI_Probe))
		return real_MPI_Probe(source, tag, comm, status);
	struct mpi_comm *c = mpi_comm(comm);
	mpi_comm_begin(&site_MPI_Probe, c);
	any_status mine;
	void *st = status_ignored(status) ? &mine : status;
	int rc = real_MPI_Probe(source, tag, comm, st);
	probe_end(&site_MPI_Probe, c, st, !rc);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Iprobe);
EXPORT int MPI_Iprobe(int source, int tag, mh comm, int *flag, void *status)
{
	REAL(int, MPI_Iprobe, (int, int, mh, int *, void *));
	if (!mpi_enter(&site_MPI_Iprobe))
		return real_MPI_Iprobe(source, tag, comm, flag, status);
	struct mpi_comm *c = mpi_comm(comm);
	mpi_comm_begin(&site_MPI_Iprobe, c);
	any_status mine;
	void *st = status_ignored(status) ? &mine : status;
	int rc = real_MPI_Iprobe(source, tag, comm, flag, st);
	probe_end(&site_MPI_Iprobe, c, st, !rc && *flag);
	mpi_leave();
	return rc;
}

/* A matched probe takes the message: its number is taken now, as at a wildcard receive's
 * completion, and kept with the message handle until Mrecv or Imrecv receives it. */
static void mprobe_matched(struct mpi_comm *c, mh message, const void *st)
{
	struct mpi_req t;
	mpi_recv_post(&t, c, mpi_abi.any_source, -1);
	int peer, tag;
	uint64_t bytes;
	uint64_t flow = mpi_recv_done(&t, st, &peer, &tag, &bytes);
	if (flow) /* counted when the message is received */
		mpi_st.received--;
	else if (t.kind == RQ_RECV && peer >= 0)
		mpi_st.undrawn--;
	if (mh_norm(message) == mh_norm(mpi_abi.message_no_proc))
		return;
	struct mpi_req *r = mpi_req_add(message);
	if (!r) {
		mpi_st.undrawn++;
		return;
	}
	r->kind = RQ_RECV, r->comm = c, r->active = 1, r->flow = flow, r->undrawn = !flow;
	r->peer = peer, r->tag = tag, r->bytes = bytes;
	r->persistent = 2; /* a message, not a request */
}

MPI_SITE(MPI_Mprobe);
EXPORT int MPI_Mprobe(int source, int tag, mh comm, void *message, void *status)
{
	REAL(int, MPI_Mprobe, (int, int, mh, void *, void *));
	if (!mpi_enter(&site_MPI_Mprobe))
		return real_MPI_Mprobe(source, tag, comm, message, status);
	struct mpi_comm *c = mpi_comm(comm);
	mpi_comm_begin(&site_MPI_Mprobe, c);
	any_status mine;
	void *st = status_ignored(status) ? &mine : status;
	int rc = real_MPI_Mprobe(source, tag, comm, message, st);
	if (!rc)
		mprobe_matched(c, mh_load(message, 0), st);
	probe_end(&site_MPI_Mprobe, c, st, !rc);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Improbe);
EXPORT int MPI_Improbe(int source, int tag, mh comm, int *flag, void *message, void *status)
{
	REAL(int, MPI_Improbe, (int, int, mh, int *, void *, void *));
	if (!mpi_enter(&site_MPI_Improbe))
		return real_MPI_Improbe(source, tag, comm, flag, message, status);
	struct mpi_comm *c = mpi_comm(comm);
	mpi_comm_begin(&site_MPI_Improbe, c);
	any_status mine;
	void *st = status_ignored(status) ? &mine : status;
	int rc = real_MPI_Improbe(source, tag, comm, flag, message, st);
	if (!rc && *flag)
		mprobe_matched(c, mh_load(message, 0), st);
	probe_end(&site_MPI_Improbe, c, st, !rc && *flag);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Mrecv);
EXPORT int MPI_Mrecv(void *buf, int count, mh dt, void *message, void *status)
{
	REAL(int, MPI_Mrecv, (void *, int, mh, void *, void *));
	if (!mpi_enter(&site_MPI_Mrecv))
		return real_MPI_Mrecv(buf, count, dt, message, status);
	struct mpi_req *m = mpi_req_find(mh_load(message, 0));
	struct mpi_req copy = {0}; /* (read only where m was found: gcc 14 cannot tell) */
	if (m)
		copy = *m, mpi_req_del(m);
	mpi_emit(&site_MPI_Mrecv, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Mrecv(buf, count, dt, message, status);
	struct marg a[] = {{K_PEER, m ? copy.peer : -1}, {K_TAG, m ? copy.tag : -1},
			   {K_BYTES, m ? (int64_t)copy.bytes : 0}};
	uint64_t flow = m && !rc ? copy.flow : 0;
	if (flow)
		mpi_st.received++;
	else if (m && !rc)
		mpi_st.undrawn++;
	mpi_emit(&site_MPI_Mrecv, WEFT_R_END, a, m && !rc ? 3 : 0, flow ? WEFT_R_FLOW_IN : 0, flow);
	mpi_leave();
	return rc;
}

MPI_SITE(MPI_Imrecv);
EXPORT int MPI_Imrecv(void *buf, int count, mh dt, void *message, void *req)
{
	REAL(int, MPI_Imrecv, (void *, int, mh, void *, void *));
	if (!mpi_enter(&site_MPI_Imrecv))
		return real_MPI_Imrecv(buf, count, dt, message, req);
	struct mpi_req *m = mpi_req_find(mh_load(message, 0));
	struct mpi_req copy;
	if (m)
		copy = *m, mpi_req_del(m);
	mpi_emit(&site_MPI_Imrecv, WEFT_R_BEGIN, NULL, 0, 0, 0);
	int rc = real_MPI_Imrecv(buf, count, dt, message, req);
	struct mpi_req *r = m && !rc ? mpi_req_add(mh_load(req, 0)) : NULL;
	if (r) {
		mh h = r->handle;
		*r = copy;
		r->handle = h, r->persistent = 0, r->wild = 0;
	}
	mpi_emit(&site_MPI_Imrecv, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}
