/*
 * coll.c - collectives, blocking and nonblocking, and the calls that make and free
 * communicators. A collective's slice carries mpi.comm, mpi.comm_size, mpi.seq (its instance
 * number on the communicator: every member calls collectives in the same order, so the n-th
 * one is the same instance everywhere), mpi.root (world rank) for rooted ones and mpi.bytes:
 * what this rank contributes (count x type size of its send side; for the v-variants the
 * sum of its send counts). A nonblocking collective counts where it is started. Creation
 * calls are collective too: their n-th on a parent names the new communicator (comm.c).
 */
#include "mpi-internal.h"

void mpi_coll_begin(struct weft_site *s, struct mpi_comm *c, int root, uint64_t bytes)
{
	struct marg a[5];
	unsigned n = 0;
	a[n++] = (struct marg){K_COMM, c ? (int64_t)c->id : -1};
	a[n++] = (struct marg){K_COMM_SIZE, c ? c->size : 0};
	a[n++] = (struct marg){K_SEQ, c ? (int64_t)++c->coll_seq : 0};
	a[n++] = (struct marg){K_BYTES, (int64_t)bytes};
	if (root != -100)
		a[n++] = (struct marg){K_ROOT, comm_world_rank(c, root)};
	mpi_emit(s, WEFT_R_BEGIN, a, n, 0, 0);
}

static int64_t sum(const int *counts, int n)
{
	int64_t t = 0;
	for (int i = 0; counts && i < n; i++)
		t += counts[i];
	return t;
}

/* one wrapper: name, parameter list, argument list, root expression (-100: none), bytes
 * expression (with `c` the communicator entry) */
#define COLL(fn, params, args, rootx, bytesx)                                                 \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn params                                                                   \
	{                                                                                      \
		REAL(int, fn, params);                                                         \
		if (!mpi_enter(&site_##fn))                                                    \
			return real_##fn args;                                                 \
		struct mpi_comm *c = mpi_comm(comm);                                           \
		mpi_coll_begin(&site_##fn, c, rootx, bytesx);                                      \
		int rc = real_##fn args;                                                       \
		mpi_emit(&site_##fn, WEFT_R_END, NULL, 0, 0, 0);                               \
		mpi_leave();                                                                   \
		return rc;                                                                     \
	}
#define NOROOT -100
#define CSIZE (c ? c->size : 0)

COLL(MPI_Barrier, (mh comm), (comm), NOROOT, 0)
COLL(MPI_Bcast, (void *buf, int count, mh dt, int root, mh comm), (buf, count, dt, root, comm), root,
     mpi_type_bytes(dt, count))
COLL(MPI_Reduce, (const void *sb, void *rb, int count, mh dt, mh op, int root, mh comm),
     (sb, rb, count, dt, op, root, comm), root, mpi_type_bytes(dt, count))
COLL(MPI_Allreduce, (const void *sb, void *rb, int count, mh dt, mh op, mh comm), (sb, rb, count, dt, op, comm),
     NOROOT, mpi_type_bytes(dt, count))
COLL(MPI_Scan, (const void *sb, void *rb, int count, mh dt, mh op, mh comm), (sb, rb, count, dt, op, comm), NOROOT,
     mpi_type_bytes(dt, count))
COLL(MPI_Exscan, (const void *sb, void *rb, int count, mh dt, mh op, mh comm), (sb, rb, count, dt, op, comm),
     NOROOT, mpi_type_bytes(dt, count))
COLL(MPI_Reduce_scatter_block, (const void *sb, void *rb, int rcount, mh dt, mh op, mh comm),
     (sb, rb, rcount, dt, op, comm), NOROOT, mpi_type_bytes(dt, (int64_t)rcount * CSIZE))
COLL(MPI_Reduce_scatter, (const void *sb, void *rb, const int *rcounts, mh dt, mh op, mh comm),
     (sb, rb, rcounts, dt, op, comm), NOROOT, mpi_type_bytes(dt, sum(rcounts, CSIZE)))
COLL(MPI_Gather, (const void *sb, int sc, mh sdt, void *rb, int rc_, mh rdt, int root, mh comm),
     (sb, sc, sdt, rb, rc_, rdt, root, comm), root, mpi_type_bytes(sdt, sc))
COLL(MPI_Gatherv,
     (const void *sb, int sc, mh sdt, void *rb, const int *rcs, const int *displs, mh rdt, int root, mh comm),
     (sb, sc, sdt, rb, rcs, displs, rdt, root, comm), root, mpi_type_bytes(sdt, sc))
COLL(MPI_Scatter, (const void *sb, int sc, mh sdt, void *rb, int rc_, mh rdt, int root, mh comm),
     (sb, sc, sdt, rb, rc_, rdt, root, comm), root, c && c->rank == root ? mpi_type_bytes(sdt, (int64_t)sc * CSIZE) : 0)
COLL(MPI_Scatterv,
     (const void *sb, const int *scs, const int *displs, mh sdt, void *rb, int rc_, mh rdt, int root, mh comm),
     (sb, scs, displs, sdt, rb, rc_, rdt, root, comm), root,
     c && c->rank == root ? mpi_type_bytes(sdt, sum(scs, CSIZE)) : 0)
COLL(MPI_Allgather, (const void *sb, int sc, mh sdt, void *rb, int rc_, mh rdt, mh comm),
     (sb, sc, sdt, rb, rc_, rdt, comm), NOROOT, mpi_type_bytes(sdt, sc))
COLL(MPI_Allgatherv, (const void *sb, int sc, mh sdt, void *rb, const int *rcs, const int *displs, mh rdt, mh comm),
     (sb, sc, sdt, rb, rcs, displs, rdt, comm), NOROOT, mpi_type_bytes(sdt, sc))
COLL(MPI_Alltoall, (const void *sb, int sc, mh sdt, void *rb, int rc_, mh rdt, mh comm),
     (sb, sc, sdt, rb, rc_, rdt, comm), NOROOT, mpi_type_bytes(sdt, (int64_t)sc * CSIZE))
COLL(MPI_Alltoallv,
     (const void *sb, const int *scs, const int *sd, mh sdt, void *rb, const int *rcs, const int *rd, mh rdt, mh comm),
     (sb, scs, sd, sdt, rb, rcs, rd, rdt, comm), NOROOT, mpi_type_bytes(sdt, sum(scs, CSIZE)))

/* nonblocking: the same with a request at the end */
COLL(MPI_Ibarrier, (mh comm, void *req), (comm, req), NOROOT, 0)
COLL(MPI_Ibcast, (void *buf, int count, mh dt, int root, mh comm, void *req), (buf, count, dt, root, comm, req),
     root, mpi_type_bytes(dt, count))
COLL(MPI_Ireduce, (const void *sb, void *rb, int count, mh dt, mh op, int root, mh comm, void *req),
     (sb, rb, count, dt, op, root, comm, req), root, mpi_type_bytes(dt, count))
COLL(MPI_Iallreduce, (const void *sb, void *rb, int count, mh dt, mh op, mh comm, void *req),
     (sb, rb, count, dt, op, comm, req), NOROOT, mpi_type_bytes(dt, count))
COLL(MPI_Igather, (const void *sb, int sc, mh sdt, void *rb, int rc_, mh rdt, int root, mh comm, void *req),
     (sb, sc, sdt, rb, rc_, rdt, root, comm, req), root, mpi_type_bytes(sdt, sc))
COLL(MPI_Iscatter, (const void *sb, int sc, mh sdt, void *rb, int rc_, mh rdt, int root, mh comm, void *req),
     (sb, sc, sdt, rb, rc_, rdt, root, comm, req), root,
     c && c->rank == root ? mpi_type_bytes(sdt, (int64_t)sc * CSIZE) : 0)
COLL(MPI_Iallgather, (const void *sb, int sc, mh sdt, void *rb, int rc_, mh rdt, mh comm, void *req),
     (sb, sc, sdt, rb, rc_, rdt, comm, req), NOROOT, mpi_type_bytes(sdt, sc))
COLL(MPI_Ialltoall, (const void *sb, int sc, mh sdt, void *rb, int rc_, mh rdt, mh comm, void *req),
     (sb, sc, sdt, rb, rc_, rdt, comm, req), NOROOT, mpi_type_bytes(sdt, (int64_t)sc * CSIZE))

COLL(MPI_Igatherv,
     (const void *sb, int sc, mh sdt, void *rb, const int *rcs, const int *displs, mh rdt, int root, mh comm, void *req),
     (sb, sc, sdt, rb, rcs, displs, rdt, root, comm, req), root, mpi_type_bytes(sdt, sc))
COLL(MPI_Iscatterv,
     (const void *sb, const int *scs, const int *displs, mh sdt, void *rb, int rc_, mh rdt, int root, mh comm,
      void *req),
     (sb, scs, displs, sdt, rb, rc_, rdt, root, comm, req), root,
     c && c->rank == root ? mpi_type_bytes(sdt, sum(scs, CSIZE)) : 0)
COLL(MPI_Iallgatherv,
     (const void *sb, int sc, mh sdt, void *rb, const int *rcs, const int *displs, mh rdt, mh comm, void *req),
     (sb, sc, sdt, rb, rcs, displs, rdt, comm, req), NOROOT, mpi_type_bytes(sdt, sc))
COLL(MPI_Ialltoallv,
     (const void *sb, const int *scs, const int *sd, mh sdt, void *rb, const int *rcs, const int *rd, mh rdt, mh comm,
      void *req),
     (sb, scs, sd, sdt, rb, rcs, rd, rdt, comm, req), NOROOT, mpi_type_bytes(sdt, sum(scs, CSIZE)))
COLL(MPI_Iscan, (const void *sb, void *rb, int count, mh dt, mh op, mh comm, void *req),
     (sb, rb, count, dt, op, comm, req), NOROOT, mpi_type_bytes(dt, count))
COLL(MPI_Iexscan, (const void *sb, void *rb, int count, mh dt, mh op, mh comm, void *req),
     (sb, rb, count, dt, op, comm, req), NOROOT, mpi_type_bytes(dt, count))
COLL(MPI_Ireduce_scatter, (const void *sb, void *rb, const int *rcounts, mh dt, mh op, mh comm, void *req),
     (sb, rb, rcounts, dt, op, comm, req), NOROOT, mpi_type_bytes(dt, sum(rcounts, CSIZE)))
COLL(MPI_Ireduce_scatter_block, (const void *sb, void *rb, int rcount, mh dt, mh op, mh comm, void *req),
     (sb, rb, rcount, dt, op, comm, req), NOROOT, mpi_type_bytes(dt, (int64_t)rcount * CSIZE))

/* ---- communicators ---- */
#define MAKER(fn, params, args)                                                                \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn params                                                                   \
	{                                                                                      \
		REAL(int, fn, params);                                                         \
		if (!mpi_st.ready)                                                             \
			mpi_setup_slow();                                                      \
		int on = mpi_enter(&site_##fn);                                                \
		struct mpi_comm *c = mpi_st.on && !(mpi_depth - on) ? mpi_comm(comm) : NULL;   \
		if (on) {                                                                      \
			struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, CSIZE}}; \
			mpi_emit(&site_##fn, WEFT_R_BEGIN, a, 2, 0, 0);                        \
		}                                                                              \
		int rc = real_##fn args;                                                       \
		if (!rc && c)                                                                  \
			mpi_comm_created(c, mh_load(newcomm, 0));                              \
		if (on) {                                                                      \
			mpi_emit(&site_##fn, WEFT_R_END, NULL, 0, 0, 0);                       \
			mpi_leave();                                                           \
		}                                                                              \
		return rc;                                                                     \
	}
MAKER(MPI_Comm_dup, (mh comm, void *newcomm), (comm, newcomm))
MAKER(MPI_Comm_dup_with_info, (mh comm, mh info, void *newcomm), (comm, info, newcomm))
MAKER(MPI_Comm_split, (mh comm, int color, int key, void *newcomm), (comm, color, key, newcomm))
MAKER(MPI_Comm_split_type, (mh comm, int type, int key, mh info, void *newcomm), (comm, type, key, info, newcomm))
MAKER(MPI_Comm_create, (mh comm, mh group, void *newcomm), (comm, group, newcomm))

/* Collective over the group's members only: the parent's other members do not count it, so it
 * leaves the parent's count alone and is named by its tag (two made with the same group and
 * tag on one parent share an id). */
MPI_SITE(MPI_Comm_create_group);
EXPORT int MPI_Comm_create_group(mh comm, mh group, int tag, void *newcomm)
{
	REAL(int, MPI_Comm_create_group, (mh, mh, int, void *));
	if (!mpi_enter(&site_MPI_Comm_create_group))
		return real_MPI_Comm_create_group(comm, group, tag, newcomm);
	struct mpi_comm *c = mpi_comm(comm);
	struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, CSIZE}, {K_TAG, tag}};
	mpi_emit(&site_MPI_Comm_create_group, WEFT_R_BEGIN, a, 3, 0, 0);
	int rc = real_MPI_Comm_create_group(comm, group, tag, newcomm);
	if (!rc && c)
		mpi_comm_created_n(c, mh_load(newcomm, 0), (1ull << 40) | (uint32_t)tag);
	mpi_emit(&site_MPI_Comm_create_group, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}
MAKER(MPI_Cart_create, (mh comm, int ndims, const int *dims, const int *periods, int reorder, void *newcomm),
      (comm, ndims, dims, periods, reorder, newcomm))

MPI_SITE(MPI_Comm_free);
EXPORT int MPI_Comm_free(void *comm)
{
	REAL(int, MPI_Comm_free, (void *));
	int on = mpi_enter(&site_MPI_Comm_free);
	mh h = mh_load(comm, 0);
	if (on) {
		struct mpi_comm *c = mpi_comm(h);
		struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, CSIZE}};
		mpi_emit(&site_MPI_Comm_free, WEFT_R_BEGIN, a, 2, 0, 0);
	}
	int rc = real_MPI_Comm_free(comm);
	if (!rc && mpi_st.on && mpi_depth <= on)
		mpi_comm_forget(h);
	if (on) {
		mpi_emit(&site_MPI_Comm_free, WEFT_R_END, NULL, 0, 0, 0);
		mpi_leave();
	}
	return rc;
}
