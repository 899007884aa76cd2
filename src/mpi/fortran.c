/*
 * fortran.c - the Fortran bindings (`use mpi` and mpif.h; mpi_f08 is not wrapped): mpi_x_,
 * mpi_x__, mpi_x and MPI_X for each function below. Open MPI's Fortran library calls PMPI_X
 * directly, so its programs are seen only here; MPICH's calls MPI_X, which the depth guard keeps
 * from being recorded twice. Each wrapper records the same slice as the C one (named like the
 * C function) from the Fortran arguments - handles turned into C ones with PMPI_X_f2c (Open MPI;
 * MPICH's are the same integers) - and calls the library's own Fortran binding, pmpi_x_, with
 * the arguments untouched (MPI_IN_PLACE, MPI_BOTTOM and the ignore sentinels stay the
 * library's business). A Fortran status is the C status as integers in both MPIs, so it is
 * read the same way; where the program ignores it, weft passes its own.
 * Wrapped: Init, Init_thread, Finalize, Send, Ssend, Recv, Isend, Irecv, Sendrecv, Wait,
 * Waitall, Barrier, Bcast, Reduce, Allreduce, Comm_split, Comm_dup, Comm_free.
 */
#include "mpi-internal.h"

typedef int fint;

/* Open MPI's handle conversions and the ignore sentinels, looked up once (the first Fortran
 * call, before any other thread can call MPI); MPICH's Fortran handles are its C ones. */
static mh (*conv[3])(fint);
static void **ignore[2];
enum { F_COMM, F_TYPE, F_REQ };

static mh f2c(int which, fint h)
{
	if (mpi_abi.handle_size == 4)
		return (mh)(uint32_t)h; /* MPICH: the same integer */
	if (!conv[which]) {
		static const char *const names[] = {"PMPI_Comm_f2c", "PMPI_Type_f2c", "PMPI_Request_f2c"};
		conv[which] = (mh (*)(fint))mpi_sym(names[which]);
		if (!conv[which])
			return 0;
	}
	return conv[which](h);
}
#define COMM(h) f2c(F_COMM, h)
#define TYPE(h) f2c(F_TYPE, h)
#define REQ(h) f2c(F_REQ, h)

/* MPI_F_STATUS_IGNORE (which 0) or MPI_F_STATUSES_IGNORE (1): variables that hold the
 * sentinel's address (set by the library, possibly at MPI_Init) */
static int f_ignored(const void *st, int which)
{
	if (!ignore[which])
		ignore[which] = (void **)mpi_sym(which ? "MPI_F_STATUSES_IGNORE" : "MPI_F_STATUS_IGNORE");
	return ignore[which] && *ignore[which] == st;
}

/* the library's Fortran binding; a program without it gets an error in ierr */
#define FREAL(name, params)                                                                   \
	typedef void(*name##_t) params;                                                       \
	static name##_t real;                                                                 \
	if (!mpi_st.ready)                                                                    \
		mpi_setup_slow();                                                             \
	mpi_st.fortran = 1;                                                                   \
	if (__builtin_expect(!real, 0)) {                                                     \
		real = (name##_t)mpi_sym("p" #name "_");                                      \
		if (!real) {                                                                  \
			*ierr = mpi_abi.err_other;                                            \
			return;                                                               \
		}                                                                             \
	}
/* the four names a Fortran compiler may call f by */
#define FNAMES(f, lower, upper)                                                               \
	EXPORT __attribute__((alias(#f))) void lower##_();                                    \
	EXPORT __attribute__((alias(#f))) void lower##__();                                   \
	EXPORT __attribute__((alias(#f))) void lower();                                       \
	EXPORT __attribute__((alias(#f))) void upper();

MPI_SITE(MPI_Init);
static void f_init(fint *ierr)
{
	FREAL(mpi_init, (fint *));
	int on = mpi_enter(&site_MPI_Init);
	if (on)
		mpi_emit(&site_MPI_Init, WEFT_R_BEGIN, NULL, 0, 0, 0);
	real(ierr);
	int go = !*ierr && (on || !mpi_depth);
	if (go)
		mpi_init_world();
	if (on) {
		struct marg a[] = {{K_COMM, 0}, {K_COMM_SIZE, mpi_st.world_size}};
		mpi_emit(&site_MPI_Init, WEFT_R_END, a, *ierr ? 0 : 2, 0, 0);
		mpi_leave();
	}
	if (go)
		mpi_sync_phase(0); /* after its slice: weft's time */
}
FNAMES(f_init, mpi_init, MPI_INIT)

MPI_SITE(MPI_Init_thread);
static void f_init_thread(fint *required, fint *provided, fint *ierr)
{
	FREAL(mpi_init_thread, (fint *, fint *, fint *));
	int on = mpi_enter(&site_MPI_Init_thread);
	if (on)
		mpi_emit(&site_MPI_Init_thread, WEFT_R_BEGIN, NULL, 0, 0, 0);
	real(required, provided, ierr);
	int go = !*ierr && (on || !mpi_depth);
	if (go)
		mpi_init_world();
	if (on) {
		struct marg a[] = {{K_COMM, 0}, {K_COMM_SIZE, mpi_st.world_size}};
		mpi_emit(&site_MPI_Init_thread, WEFT_R_END, a, *ierr ? 0 : 2, 0, 0);
		mpi_leave();
	}
	if (go)
		mpi_sync_phase(0); /* after its slice: weft's time */
}
FNAMES(f_init_thread, mpi_init_thread, MPI_INIT_THREAD)

MPI_SITE(MPI_Finalize);
static void f_finalize(fint *ierr)
{
	FREAL(mpi_finalize, (fint *));
	int on = mpi_enter(&site_MPI_Finalize);
	if (mpi_st.world_rank >= 0 && (on || !mpi_depth))
		mpi_sync_phase(1); /* before its slice: weft's time */
	if (on)
		mpi_emit(&site_MPI_Finalize, WEFT_R_BEGIN, NULL, 0, 0, 0);
	real(ierr);
	if (on) {
		mpi_emit(&site_MPI_Finalize, WEFT_R_END, NULL, 0, 0, 0);
		mpi_leave();
	}
}
FNAMES(f_finalize, mpi_finalize, MPI_FINALIZE)

#define F_SEND(fname, site, lower, upper)                                                     \
	MPI_SITE(site);                                                                        \
	static void fname(void *buf, fint *count, fint *dt, fint *dest, fint *tag, fint *comm, fint *ierr) \
	{                                                                                      \
		FREAL(lower, (void *, fint *, fint *, fint *, fint *, fint *, fint *));         \
		if (!mpi_enter(&site_##site)) {                                                \
			real(buf, count, dt, dest, tag, comm, ierr);                           \
			return;                                                                \
		}                                                                              \
		struct mpi_comm *c = mpi_comm(COMM(*comm));                                    \
		int w = comm_world_rank(c, *dest);                                             \
		mpi_send_begin(&site_##site, c, w, *tag, mpi_type_bytes(TYPE(*dt), *count),    \
			       mpi_send_flow(c, w, *tag));                                     \
		real(buf, count, dt, dest, tag, comm, ierr);                                   \
		mpi_emit(&site_##site, WEFT_R_END, NULL, 0, 0, 0);                             \
		mpi_leave();                                                                   \
	}                                                                                      \
	FNAMES(fname, lower, upper)
F_SEND(f_send, MPI_Send, mpi_send, MPI_SEND)
F_SEND(f_ssend, MPI_Ssend, mpi_ssend, MPI_SSEND)

MPI_SITE(MPI_Isend);
static void f_isend(void *buf, fint *count, fint *dt, fint *dest, fint *tag, fint *comm, fint *req, fint *ierr)
{
	FREAL(mpi_isend, (void *, fint *, fint *, fint *, fint *, fint *, fint *, fint *));
	if (!mpi_enter(&site_MPI_Isend)) {
		real(buf, count, dt, dest, tag, comm, req, ierr);
		return;
	}
	struct mpi_comm *c = mpi_comm(COMM(*comm));
	int w = comm_world_rank(c, *dest);
	mpi_send_begin(&site_MPI_Isend, c, w, *tag, mpi_type_bytes(TYPE(*dt), *count), mpi_send_flow(c, w, *tag));
	real(buf, count, dt, dest, tag, comm, req, ierr);
	struct mpi_req *r = *ierr ? NULL : mpi_req_add(REQ(*req));
	if (r)
		r->kind = RQ_SEND, r->active = 1, r->comm = c, r->peer = w, r->tag = *tag;
	mpi_emit(&site_MPI_Isend, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
}
FNAMES(f_isend, mpi_isend, MPI_ISEND)

MPI_SITE(MPI_Recv);
static void f_recv(void *buf, fint *count, fint *dt, fint *source, fint *tag, fint *comm, fint *status, fint *ierr)
{
	FREAL(mpi_recv, (void *, fint *, fint *, fint *, fint *, fint *, fint *, fint *));
	if (!mpi_enter(&site_MPI_Recv)) {
		real(buf, count, dt, source, tag, comm, status, ierr);
		return;
	}
	struct mpi_comm *c = mpi_comm(COMM(*comm));
	mpi_comm_begin(&site_MPI_Recv, c);
	struct mpi_req r;
	mpi_recv_post(&r, c, *source, *tag);
	fint mine[8];
	fint *st = f_ignored(status, 0) ? mine : status;
	real(buf, count, dt, source, tag, comm, st, ierr);
	mpi_recv_end(&site_MPI_Recv, &r, st, *ierr);
	mpi_leave();
}
FNAMES(f_recv, mpi_recv, MPI_RECV)

MPI_SITE(MPI_Irecv);
static void f_irecv(void *buf, fint *count, fint *dt, fint *source, fint *tag, fint *comm, fint *req, fint *ierr)
{
	FREAL(mpi_irecv, (void *, fint *, fint *, fint *, fint *, fint *, fint *, fint *));
	if (!mpi_enter(&site_MPI_Irecv)) {
		real(buf, count, dt, source, tag, comm, req, ierr);
		return;
	}
	struct mpi_comm *c = mpi_comm(COMM(*comm));
	mpi_comm_begin(&site_MPI_Irecv, c);
	real(buf, count, dt, source, tag, comm, req, ierr);
	struct mpi_req *r = *ierr ? NULL : mpi_req_add(REQ(*req));
	if (r)
		mpi_recv_post(r, c, *source, *tag);
	mpi_emit(&site_MPI_Irecv, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
}
FNAMES(f_irecv, mpi_irecv, MPI_IRECV)

MPI_SITE(MPI_Sendrecv);
static void f_sendrecv(void *sbuf, fint *scount, fint *sdt, fint *dest, fint *stag, void *rbuf, fint *rcount,
		       fint *rdt, fint *source, fint *rtag, fint *comm, fint *status, fint *ierr)
{
	FREAL(mpi_sendrecv, (void *, fint *, fint *, fint *, fint *, void *, fint *, fint *, fint *, fint *, fint *,
			     fint *, fint *));
	if (!mpi_enter(&site_MPI_Sendrecv)) {
		real(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, status, ierr);
		return;
	}
	struct mpi_comm *c = mpi_comm(COMM(*comm));
	int w = comm_world_rank(c, *dest);
	uint64_t flow = mpi_send_flow(c, w, *stag);
	struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, c ? c->size : 0}};
	mpi_emit(&site_MPI_Sendrecv, WEFT_R_BEGIN, a, 2, flow ? WEFT_R_FLOW_OUT : 0, flow);
	struct mpi_req r;
	mpi_recv_post(&r, c, *source, *rtag);
	fint mine[8];
	fint *st = f_ignored(status, 0) ? mine : status;
	real(sbuf, scount, sdt, dest, stag, rbuf, rcount, rdt, source, rtag, comm, st, ierr);
	mpi_recv_end(&site_MPI_Sendrecv, &r, st, *ierr);
	mpi_leave();
}
FNAMES(f_sendrecv, mpi_sendrecv, MPI_SENDRECV)

MPI_SITE(MPI_Wait);
static void f_wait(fint *req, fint *status, fint *ierr)
{
	FREAL(mpi_wait, (fint *, fint *, fint *));
	if (!mpi_enter(&site_MPI_Wait)) {
		real(req, status, ierr);
		return;
	}
	mh h = REQ(*req);
	mpi_emit(&site_MPI_Wait, WEFT_R_BEGIN, NULL, 0, 0, 0);
	fint mine[8];
	fint *st = f_ignored(status, 0) ? mine : status;
	real(req, st, ierr);
	struct done d = {0};
	if (!*ierr)
		mpi_completed(&d, h, st);
	mpi_done_end(&site_MPI_Wait, &d);
	mpi_leave();
}
FNAMES(f_wait, mpi_wait, MPI_WAIT)

MPI_SITE(MPI_Waitall);
static void f_waitall(fint *count, fint *reqs, fint *statuses, fint *ierr)
{
	FREAL(mpi_waitall, (fint *, fint *, fint *, fint *));
	int n = *count;
	if (n < 0 || n > 64 || !mpi_enter(&site_MPI_Waitall)) {
		real(count, reqs, statuses, ierr);
		return;
	}
	mh h[64];
	fint mine[64 * 8];
	for (int i = 0; i < n; i++)
		h[i] = REQ(reqs[i]);
	fint *st = f_ignored(statuses, 1) ? mine : statuses;
	mpi_emit(&site_MPI_Waitall, WEFT_R_BEGIN, NULL, 0, 0, 0);
	real(count, reqs, st, ierr);
	struct done d = {0};
	if (!*ierr)
		for (int i = 0; i < n; i++)
			mpi_completed(&d, h[i], (char *)st + (size_t)i * (size_t)mpi_abi.status_size);
	mpi_done_end(&site_MPI_Waitall, &d);
	mpi_leave();
}
FNAMES(f_waitall, mpi_waitall, MPI_WAITALL)

/* collectives: the Fortran arguments as they are, to the library's binding */
#define NOROOT -100
MPI_SITE(MPI_Barrier);
static void f_barrier(fint *comm, fint *ierr)
{
	FREAL(mpi_barrier, (fint *, fint *));
	if (!mpi_enter(&site_MPI_Barrier)) {
		real(comm, ierr);
		return;
	}
	mpi_coll_begin(&site_MPI_Barrier, mpi_comm(COMM(*comm)), NOROOT, 0);
	real(comm, ierr);
	mpi_emit(&site_MPI_Barrier, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
}
FNAMES(f_barrier, mpi_barrier, MPI_BARRIER)

MPI_SITE(MPI_Bcast);
static void f_bcast(void *buf, fint *count, fint *dt, fint *root, fint *comm, fint *ierr)
{
	FREAL(mpi_bcast, (void *, fint *, fint *, fint *, fint *, fint *));
	if (!mpi_enter(&site_MPI_Bcast)) {
		real(buf, count, dt, root, comm, ierr);
		return;
	}
	mpi_coll_begin(&site_MPI_Bcast, mpi_comm(COMM(*comm)), *root, mpi_type_bytes(TYPE(*dt), *count));
	real(buf, count, dt, root, comm, ierr);
	mpi_emit(&site_MPI_Bcast, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
}
FNAMES(f_bcast, mpi_bcast, MPI_BCAST)

MPI_SITE(MPI_Reduce);
static void f_reduce(void *sb, void *rb, fint *count, fint *dt, fint *op, fint *root, fint *comm, fint *ierr)
{
	FREAL(mpi_reduce, (void *, void *, fint *, fint *, fint *, fint *, fint *, fint *));
	if (!mpi_enter(&site_MPI_Reduce)) {
		real(sb, rb, count, dt, op, root, comm, ierr);
		return;
	}
	mpi_coll_begin(&site_MPI_Reduce, mpi_comm(COMM(*comm)), *root, mpi_type_bytes(TYPE(*dt), *count));
	real(sb, rb, count, dt, op, root, comm, ierr);
	mpi_emit(&site_MPI_Reduce, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
}
FNAMES(f_reduce, mpi_reduce, MPI_REDUCE)

MPI_SITE(MPI_Allreduce);
static void f_allreduce(void *sb, void *rb, fint *count, fint *dt, fint *op, fint *comm, fint *ierr)
{
	FREAL(mpi_allreduce, (void *, void *, fint *, fint *, fint *, fint *, fint *));
	if (!mpi_enter(&site_MPI_Allreduce)) {
		real(sb, rb, count, dt, op, comm, ierr);
		return;
	}
	mpi_coll_begin(&site_MPI_Allreduce, mpi_comm(COMM(*comm)), NOROOT, mpi_type_bytes(TYPE(*dt), *count));
	real(sb, rb, count, dt, op, comm, ierr);
	mpi_emit(&site_MPI_Allreduce, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
}
FNAMES(f_allreduce, mpi_allreduce, MPI_ALLREDUCE)

/* communicators: the new one's id from its parent, as in coll.c */
static void comm_made(int on, struct weft_site *s, struct mpi_comm *c, fint *newcomm, fint *ierr)
{
	if (!*ierr && c)
		mpi_comm_created(c, COMM(*newcomm));
	if (on) {
		mpi_emit(s, WEFT_R_END, NULL, 0, 0, 0);
		mpi_leave();
	}
}

MPI_SITE(MPI_Comm_split);
static void f_comm_split(fint *comm, fint *color, fint *key, fint *newcomm, fint *ierr)
{
	FREAL(mpi_comm_split, (fint *, fint *, fint *, fint *, fint *));
	int on = mpi_enter(&site_MPI_Comm_split);
	struct mpi_comm *c = mpi_st.on && !(mpi_depth - on) ? mpi_comm(COMM(*comm)) : NULL;
	if (on)
		mpi_comm_begin(&site_MPI_Comm_split, c);
	real(comm, color, key, newcomm, ierr);
	comm_made(on, &site_MPI_Comm_split, c, newcomm, ierr);
}
FNAMES(f_comm_split, mpi_comm_split, MPI_COMM_SPLIT)

MPI_SITE(MPI_Comm_dup);
static void f_comm_dup(fint *comm, fint *newcomm, fint *ierr)
{
	FREAL(mpi_comm_dup, (fint *, fint *, fint *));
	int on = mpi_enter(&site_MPI_Comm_dup);
	struct mpi_comm *c = mpi_st.on && !(mpi_depth - on) ? mpi_comm(COMM(*comm)) : NULL;
	if (on)
		mpi_comm_begin(&site_MPI_Comm_dup, c);
	real(comm, newcomm, ierr);
	comm_made(on, &site_MPI_Comm_dup, c, newcomm, ierr);
}
FNAMES(f_comm_dup, mpi_comm_dup, MPI_COMM_DUP)

MPI_SITE(MPI_Comm_free);
static void f_comm_free(fint *comm, fint *ierr)
{
	FREAL(mpi_comm_free, (fint *, fint *));
	int on = mpi_enter(&site_MPI_Comm_free);
	mh h = mpi_st.on ? COMM(*comm) : 0;
	if (on)
		mpi_comm_begin(&site_MPI_Comm_free, mpi_comm(h));
	real(comm, ierr);
	if (!*ierr && mpi_st.on && mpi_depth <= on)
		mpi_comm_forget(h);
	if (on) {
		mpi_emit(&site_MPI_Comm_free, WEFT_R_END, NULL, 0, 0, 0);
		mpi_leave();
	}
}
FNAMES(f_comm_free, mpi_comm_free, MPI_COMM_FREE)
