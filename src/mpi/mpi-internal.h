/*
 * mpi-internal.h - what the files of libweft-mpi.so share: the MPI library's ABI as learnt at
 * the first call (abi.c), the communicator and request tables (comm.c, request.c), the
 * message counters (match.c) and the recording helpers (below, inline: the wrappers' hot path).
 *
 * No mpi.h: every handle travels as a `mh` (a machine word). Open MPI's handles are pointers,
 * MPICH's are ints; an int argument arrives in the low half of a register, so passing the word
 * on unchanged is right for both, and comparing uses mh_norm() (the low 32 bits under MPICH).
 * Handles stored in the program's memory (request arrays, out-parameters) are read and written
 * through mh_load()/mh_store() with the flavor's size.
 */
#ifndef WEFT_MPI_INTERNAL_H
#define WEFT_MPI_INTERNAL_H

#include "weft.h"
#include "format/format.h"
#include "mpi-ids.h"
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define HIDDEN __attribute__((visibility("hidden")))
#define EXPORT __attribute__((visibility("default")))
#define MPI_TLS __attribute__((tls_model("initial-exec")))

typedef uintptr_t mh; /* an MPI handle of any kind */

/* ---- abi.c: what differs between Open MPI and MPICH ---- */
struct mpi_abi {
	int flavor;            /* enum weft_mpi_flavor; 0 until the first call */
	int handle_size;       /* 8 (Open MPI) or 4 (MPICH) */
	int status_size;       /* 24 or 20 */
	int off_source, off_tag, off_error;
	int any_source, proc_null, root;
	int err_other;
	mh comm_world, comm_self, comm_null, request_null, message_null, message_no_proc, byte;
	uintptr_t status_ignore; /* 0 (Open MPI) or 1 (MPICH); STATUSES_IGNORE likewise */
	uintptr_t in_place;
};
HIDDEN extern struct mpi_abi mpi_abi;
HIDDEN void *mpi_sym(const char *name); /* dlsym(RTLD_NEXT), then the global scope */
HIDDEN void mpi_abi_detect(void);

static inline mh mh_norm(mh h)
{
	return mpi_abi.handle_size == 4 ? (mh)(uint32_t)h : h;
}
static inline mh mh_load(const void *p, size_t i)
{
	if (mpi_abi.handle_size == 4)
		return ((const uint32_t *)p)[i];
	return ((const uintptr_t *)p)[i];
}
static inline void mh_store(void *p, size_t i, mh v)
{
	if (mpi_abi.handle_size == 4)
		((uint32_t *)p)[i] = (uint32_t)v;
	else
		((uintptr_t *)p)[i] = v;
}
static inline int st_int(const void *st, int off)
{
	int v;
	memcpy(&v, (const char *)st + off, sizeof(v));
	return v;
}
/* bytes received, as the status holds them (Open MPI: size_t _ucount at 16; MPICH: count_lo
 * and the high bits above the cancelled bit) */
static inline uint64_t st_bytes(const void *st)
{
	if (mpi_abi.flavor == WEFT_MPI_OPENMPI) {
		uint64_t v;
		memcpy(&v, (const char *)st + 16, sizeof(v));
		return v;
	}
	uint32_t lo = (uint32_t)st_int(st, 0), hi = (uint32_t)st_int(st, 4);
	return (uint64_t)lo | ((uint64_t)(hi >> 1) << 32);
}
static inline int status_ignored(const void *st)
{
	return (uintptr_t)st == mpi_abi.status_ignore;
}

/* ---- state.c: switches and totals ---- */
struct mpi_state {
	int ready;      /* 1 once the first call has set things up */
	int on;         /* record (1) or pass through (0: mpi=0, or no weft runtime) */
	int fortran;    /* a Fortran binding was called */
	int world_rank, world_size; /* -1 / 0 before MPI_Init */
	/* totals (plain counters: approximate if several threads call MPI at once) */
	uint64_t calls, sent, received, undrawn;
};
HIDDEN extern struct mpi_state mpi_st;
HIDDEN extern __thread int mpi_depth MPI_TLS; /* >0 inside a wrapped MPI call of this thread */
/* the current call of this thread is recorded (its site is on); when it is not (filtered out by
 * name or category, or after weft_stop), its messages are still counted, so that the numbers
 * of the recorded ones stay right, and mpi_emit writes nothing */
HIDDEN extern __thread int mpi_rec MPI_TLS;
HIDDEN void mpi_setup_slow(void);
HIDDEN void mpi_write_record(void);   /* WEFT_M_MPI */
HIDDEN int mpi_runtime(void); /* the weft runtime is in the process */
HIDDEN void mpi_meta_put(unsigned type, const void *a, size_t alen, const void *b, size_t blen);
HIDDEN uint64_t mpi_type_bytes(mh dt, int64_t count); /* count * size of dt (0 if unknown) */

/* ---- comm.c: communicators ---- */
struct mpi_comm {
	mh handle;            /* normalised; 0 = free slot */
	uint64_t id;
	int size, rank;       /* size and this process's rank in it */
	int *world;           /* world rank of each rank (NULL: identity, WORLD) */
	uint64_t coll_seq;    /* collectives called on it */
	uint64_t created;     /* communicator creation calls on it (the next id's n) */
	int pending_wild;     /* wildcard receives posted, not completed */
	int conflict;         /* a specific receive was posted while a wildcard one was pending */
	int inexact;          /* id not from a creation call seen here (ids may collide) */
};
HIDDEN struct mpi_comm *mpi_comm(mh c); /* the entry of c, made on first sight; NULL: none */
HIDDEN void mpi_comm_init_world(void);
HIDDEN void mpi_comm_created(struct mpi_comm *parent, mh newcomm);
/* the same with n given (a creation that not every member of the parent takes part in) */
HIDDEN void mpi_comm_created_n(struct mpi_comm *parent, mh newcomm, uint64_t n);
HIDDEN void mpi_comm_forget(mh c);
static inline int comm_world_rank(const struct mpi_comm *c, int r)
{
	if (r < 0 || !c)
		return r;
	if (!c->world)
		return r;
	return r < c->size ? c->world[r] : -1;
}

/* ---- match.c: message numbers ---- */
/* the next number on (comm, src, dst, tag) for side 0 (sends) or 1 (receives), and in *base
 * weft_mpi_flow_base(comm, src, dst, tag); 0: table full */
HIDDEN uint64_t mpi_next_n(uint64_t comm, int src, int dst, int tag, int side, uint64_t *base);

/* ---- request.c: pending requests ---- */
enum { RQ_SEND = 1, RQ_RECV = 2, RQ_OTHER = 3 };
struct mpi_req {
	mh handle;            /* normalised; 0 = free */
	uint8_t kind, persistent, active, wild;
	int peer;             /* world rank (sends: destination; receives: source, -1 any) */
	int tag;
	int tag_any;
	struct mpi_comm *comm;
	uint64_t bytes;
	uint64_t flow;        /* receives: flow id taken at post (0: at completion, or none) */
	int undrawn;          /* receive known not drawable */
};
HIDDEN struct mpi_req *mpi_req_add(mh h);
HIDDEN struct mpi_req *mpi_req_find(mh h);
HIDDEN void mpi_req_del(struct mpi_req *r);
/* a receive posted (blocking or not): fills the receive's flow (specific) or marks it wild */
HIDDEN void mpi_recv_post(struct mpi_req *r, struct mpi_comm *c, int src_rank, int tag);
/* a receive completed with status st: its flow id (0: none, counted as not drawn) */
HIDDEN uint64_t mpi_recv_done(struct mpi_req *r, const void *st, int *peer, int *tag, uint64_t *bytes);
HIDDEN uint64_t mpi_send_flow(struct mpi_comm *c, int dst_world, int tag);

/* ---- shared parts of the C and Fortran wrappers (p2p.c, complete.c, coll.c, init.c) ---- */
struct weft_site;
HIDDEN void mpi_send_begin(struct weft_site *s, const struct mpi_comm *c, int dst, int tag, uint64_t bytes,
			   uint64_t flow);
HIDDEN void mpi_comm_begin(struct weft_site *s, const struct mpi_comm *c);
HIDDEN void mpi_recv_end(struct weft_site *s, struct mpi_req *r, const void *st, int rc);
HIDDEN void mpi_coll_begin(struct weft_site *s, struct mpi_comm *c, int root, uint64_t bytes);
#define MPI_DONE_FLOWS 256 /* arrows a completion call draws; more are counted not drawn */
struct done {
	unsigned msgs;
	int peer, tag;
	uint64_t bytes;
	unsigned nflows;
	uint64_t flows[MPI_DONE_FLOWS];
};
HIDDEN void mpi_completed(struct done *d, mh h, const void *st);
HIDDEN void mpi_done_end(struct weft_site *s, const struct done *d);
HIDDEN void mpi_after_init(void);
/* MPI_Init's parts (init.c): WORLD's rank and size, inside its slice; then a clock sync phase
 * (0 after Init, 1 before Finalize: clocksync.c) in its own slice, `weft: clock sync`, and the
 * MPI record */
HIDDEN void mpi_init_world(void);
HIDDEN void mpi_sync_phase(int phase);
HIDDEN void mpi_clock_sync(int phase);

/* ---- recording (inline) ---- */
enum mpi_key { K_PEER, K_TAG, K_BYTES, K_COMM, K_COMM_SIZE, K_ROOT, K_SEQ, K_MESSAGES, K_N };
HIDDEN extern struct weft_site mpi_keys[K_N];
struct marg {
	unsigned key;
	int64_t v;
};
#define MAX_MARGS 8

/* BEGIN or END of `s` (NULL: none) with args and an optional flow, in one reservation (with counters=, the
 * slice record first through weft__slice). */
static inline void mpi_emit(struct weft_site *s, unsigned type, const struct marg *a, unsigned n,
			    unsigned flow_type, uint64_t flow)
{
	if (!mpi_rec)
		return;
	unsigned slice = s != NULL; /* NULL: only the flow */
	if (slice && __builtin_expect(weft__tls.nctr != 0, 0)) {
		weft__slice(weft__hdr(s->id, type, 0, 0));
		slice = 0;
	}
	size_t words = 2 * (slice + n + (flow_type != 0));
	uint64_t t = weft__ticks();
	uint64_t *p = weft__reserve(words * 8);
	if (__builtin_expect(p == 0, 0))
		return;
	uint64_t *w = p;
	if (slice) {
		w[0] = t;
		w[1] = weft__hdr(s->id, type, 0, 0);
		w += 2;
	}
	for (unsigned i = 0; i < n; i++) {
		w[0] = (uint64_t)a[i].v;
		w[1] = weft__hdr(mpi_keys[a[i].key].id, WEFT_R_ARG_I64, 0, 0);
		w += 2;
	}
	if (flow_type) {
		w[0] = flow;
		w[1] = weft__hdr(0, flow_type, 0, 0);
		w += 2;
	}
	weft__commit(w);
}

/* Does this call go through the wrappers (mpi on, not inside another wrapped call)? Then it
 * raises the depth guard (mpi_leave() lowers it) and notes whether it is recorded (mpi_rec). */
static inline int mpi_enter(struct weft_site *s)
{
	if (__builtin_expect(!mpi_st.ready, 0))
		mpi_setup_slow();
	if (!mpi_st.on || mpi_depth)
		return 0;
	mpi_rec = weft__on_n(s, 2) != 0;
	mpi_st.calls += (uint64_t)mpi_rec;
	mpi_depth++;
	return 1;
}
static inline void mpi_leave(void)
{
	mpi_depth--;
}

#define MPI_SITE(fn) static struct weft_site site_##fn = WEFT__SITE_INIT(WEFT_KIND_EVENT, "mpi", #fn)
/* the real function: PMPI_X, looked up once; a program without it gets an MPI error back */
#define REAL(ret, fn, params)                                                       \
	typedef ret(*fn##_t) params;                                                \
	static fn##_t real_##fn;                                                    \
	if (__builtin_expect(!real_##fn, 0)) {                                      \
		real_##fn = (fn##_t)mpi_sym("P" #fn);                                \
		if (!real_##fn) {                                                   \
			if (!mpi_st.ready)                                          \
				mpi_setup_slow();                                   \
			return mpi_abi.err_other;                                   \
		}                                                                   \
	}

#endif
