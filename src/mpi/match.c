/*
 * match.c - message numbers and request bookkeeping. MPI does not overtake: the n-th message
 * sent on (communicator, source, destination, tag) is the n-th one received on it, so sender
 * and receiver each count their side and name the message by the same flow id without
 * exchanging anything (docs/mpi.md). A sender counts at each send it posts; a receiver counts
 * at the post of a receive with a specific source and tag (matching follows the posting order)
 * and at the completion of a wildcard receive (only then is its source and tag known). A
 * specific receive posted while a wildcard one is pending on the same communicator may be
 * matched either way: both get no arrow and are counted as not drawn.
 *
 * The counters and the request table are fixed-size open-addressed arrays (no allocation in
 * a call); a full table leaves the message undrawn. They are not locked: with several threads
 * calling MPI on one communicator at once, numbers can be wrong (MPI_THREAD_MULTIPLE programs
 * that do so get the arrows of a best effort).
 */
#include "mpi-internal.h"

#define NCOUNT 16384
struct counter {
	uint64_t key; /* 0 free */
	uint64_t comm;
	int src, dst, tag, side; /* side: 0 sent, 1 received (a message to oneself is both) */
	uint64_t n;
	uint64_t base; /* weft_mpi_flow_base(comm, src, dst, tag): computed once */
};
static struct counter counters[NCOUNT];

uint64_t mpi_next_n(uint64_t comm, int src, int dst, int tag, int side, uint64_t *base)
{
	/* the slot: one mixing round over the fields (the flow id, computed once per message, is
	 * the contract's slower mix5) */
	uint64_t key = weft_mpi_fmix(comm * 0x9e3779b97f4a7c15ull +
				     (((uint64_t)(uint32_t)src << 32) | (uint32_t)dst) * 0xc2b2ae3d27d4eb4full +
				     (((uint64_t)(uint32_t)tag << 1) | (unsigned)side)) | 1;
	for (size_t i = key & (NCOUNT - 1), k = 0; k < 64; i = (i + 1) & (NCOUNT - 1), k++) {
		struct counter *c = &counters[i];
		if (c->key == key && c->comm == comm && c->src == src && c->dst == dst && c->tag == tag &&
		    c->side == side) {
			*base = c->base;
			return ++c->n;
		}
		if (!c->key) {
			c->key = key;
			c->comm = comm, c->src = src, c->dst = dst, c->tag = tag, c->side = side;
			c->base = *base = weft_mpi_flow_base(comm, (uint32_t)src, (uint32_t)dst, tag);
			return c->n = 1;
		}
	}
	return 0;
}

/* weft_mpi_flow_id(comm, src, dst, tag, n) from the quadruple's base */
static uint64_t flow_id(uint64_t base, uint64_t n)
{
	return WEFT_MPI_FLOW_TAG | ((base + n) & WEFT_MPI_FLOW_MASK);
}

uint64_t mpi_send_flow(struct mpi_comm *c, int dst_world, int tag)
{
	if (!c || dst_world < 0)
		return 0;
	uint64_t pre, n = mpi_next_n(c->id, mpi_st.world_rank, dst_world, tag, 0, &pre);
	if (!n) {
		mpi_st.undrawn++;
		return 0;
	}
	mpi_st.sent++;
	return flow_id(pre, n);
}

void mpi_recv_post(struct mpi_req *r, struct mpi_comm *c, int src_rank, int tag)
{
	r->kind = RQ_RECV;
	r->comm = c;
	r->active = 1;
	r->flow = 0;
	r->undrawn = 0;
	r->tag = tag;
	r->peer = comm_world_rank(c, src_rank);
	if (!c || src_rank == mpi_abi.proc_null) {
		r->wild = 0;
		r->kind = RQ_OTHER;
		return;
	}
	r->wild = src_rank == mpi_abi.any_source || tag == -1 /* MPI_ANY_TAG, both MPIs */;
	if (r->wild) {
		c->pending_wild++;
		return;
	}
	if (c->pending_wild)
		c->conflict = 1, r->undrawn = 1;
	uint64_t pre, n = mpi_next_n(c->id, r->peer, mpi_st.world_rank, tag, 1, &pre);
	if (!n)
		r->undrawn = 1;
	else
		r->flow = flow_id(pre, n);
}

uint64_t mpi_recv_done(struct mpi_req *r, const void *st, int *peer, int *tag, uint64_t *bytes)
{
	struct mpi_comm *c = r->comm;
	int src = st_int(st, mpi_abi.off_source), t = st_int(st, mpi_abi.off_tag);
	*peer = comm_world_rank(c, src);
	*tag = t;
	*bytes = st_bytes(st);
	r->active = 0;
	if (r->kind != RQ_RECV || !c)
		return 0;
	uint64_t flow = r->flow;
	int undrawn = r->undrawn;
	if (r->wild) {
		undrawn = c->conflict;
		if (--c->pending_wild <= 0)
			c->pending_wild = 0, c->conflict = 0;
		flow = 0;
		if (src >= 0 && *peer >= 0) {
			uint64_t pre, n = mpi_next_n(c->id, *peer, mpi_st.world_rank, t, 1, &pre);
			if (n)
				flow = flow_id(pre, n);
		} else {
			return 0; /* MPI_PROC_NULL's empty status, or a cancelled receive */
		}
	}
	if (undrawn || !flow) {
		mpi_st.undrawn++;
		return 0;
	}
	mpi_st.received++;
	return flow;
}

/* ---- requests ---- */
#define NREQ 8192
static struct mpi_req reqs[NREQ];

static size_t rslot(mh h)
{
	return (size_t)(weft_mpi_fmix(h) & (NREQ - 1));
}

struct mpi_req *mpi_req_find(mh h)
{
	h = mh_norm(h);
	if (!h || h == mh_norm(mpi_abi.request_null))
		return NULL;
	for (size_t i = rslot(h), k = 0; k < NREQ; i = (i + 1) & (NREQ - 1), k++) {
		if (reqs[i].handle == h)
			return &reqs[i];
		if (!reqs[i].handle)
			return NULL;
	}
	return NULL;
}

struct mpi_req *mpi_req_add(mh h)
{
	h = mh_norm(h);
	if (!h || h == mh_norm(mpi_abi.request_null))
		return NULL;
	for (size_t i = rslot(h), k = 0; k < NREQ / 2; i = (i + 1) & (NREQ - 1), k++) {
		if (reqs[i].handle == h || !reqs[i].handle) {
			memset(&reqs[i], 0, sizeof(reqs[i]));
			reqs[i].handle = h;
			return &reqs[i];
		}
	}
	return NULL;
}

/* backward-shift deletion: later entries of the probe run move up into the hole */
void mpi_req_del(struct mpi_req *r)
{
	size_t i = (size_t)(r - reqs);
	for (size_t j = (i + 1) & (NREQ - 1);; j = (j + 1) & (NREQ - 1)) {
		if (!reqs[j].handle)
			break;
		size_t home = rslot(reqs[j].handle);
		/* may entry j fill hole i? only if its home is not in (i, j] cyclically */
		if (i <= j ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		reqs[i] = reqs[j];
		i = j;
	}
	memset(&reqs[i], 0, sizeof(reqs[i]));
}
