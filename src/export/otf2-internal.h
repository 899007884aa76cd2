/*
 * otf2-internal.h - what otf2.c (the archive, its definitions, the walk of each thread's slices)
 * shares with otf2-mpi.c (the MPI half: messages, collectives, communicators). Built only where
 * libotf2 was found (WEFT_HAVE_OTF2).
 */
#ifndef WEFT_EXPORT_OTF2_INTERNAL_H
#define WEFT_EXPORT_OTF2_INTERNAL_H

#include "export/export.h"
#include <otf2/otf2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

static inline uint64_t weft_otf2_hmix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	return x ^ (x >> 33);
}

/* interned strings: text -> OTF2 string id */
struct strtab {
	char **s;
	size_t n, cap;
	uint32_t *h; /* open addressing: id + 1, 0 empty */
	size_t hcap;
};

/* A location's events, buffered before they are written (otf2.c's push, flush and complete). */
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

/* An open MPI call of a location (otf2-mpi.c pushes it at the call's begin and pops it at its
 * end; otf2.c's walk asks whether an end is this call's). */
struct mopen { uint64_t serial; int op; int64_t comm, root, bytes; };
struct ireq; /* otf2-mpi.c's */

struct loc {
	uint64_t id;
	unsigned track;
	OTF2_EvtWriter *w;
	struct rec *buf;
	size_t n;
	uint64_t written_ts; /* the last time written (the buffer's floor) */
	uint32_t *stack;     /* open regions */
	size_t depth, scap;
	struct ireq *irq;    /* MPI_Irecv requests not completed yet (otf2-mpi.c) */
	size_t nirq, irqcap;
	struct mopen *mo;    /* open MPI calls */
	size_t nmo, mocap;
};

/* defined in otf2.c (the first three) and in otf2-mpi.c (the others) */
struct locdef;
struct region;
struct metric;
struct msg;
struct comm;
struct initcomm;

/* The export of one trace: written by weft_export_otf2's thread only. */
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
	/* MPI (otf2-mpi.c) */
	struct msg *msgs; /* open addressing on id (0 empty) */
	size_t msgcap, nmsgs;
	struct comm *comms;
	size_t ncomms, commcap;
	struct initcomm *inits;
	size_t ninits, initcap;
	uint32_t *world;  /* ranks present, sorted: a rank's place here is its WORLD rank in the archive */
	size_t nworld;
	uint64_t *world_loc; /* the location of each of them */
	uint32_t *comm_name; /* each communicator's name (a string id), by its index in comms */
	uint32_t s_mpi, s_wlocs; /* the names of the MPI paradigm and of the group of its locations */
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

/* ---- otf2.c ---- */

/* The id of string s ("" for NULL), interned on first use. */
uint32_t weft_otf2_str(struct strtab *t, const char *s);
uint32_t weft_otf2_strf(struct strtab *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Notes the first failure in x->err; later ones are dropped. */
void weft_otf2_fail(struct ox *x, OTF2_ErrorCode rc, const char *what);
#define CHECK(x, call, what)                                    \
	do {                                                    \
		OTF2_ErrorCode rc_ = (call);                    \
		if (rc_ != OTF2_SUCCESS)                        \
			weft_otf2_fail((x), rc_, (what));       \
	} while (0)
/* A new record at the end of l's buffer, zeroed but for its time and kind. */
struct rec *weft_otf2_push(struct ox *x, struct loc *l, uint64_t ts, int kind);

/* Whether site id is one of libweft-mpi.so's (category `mpi`). */
static inline int weft_otf2_is_mpi(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat && !strcmp(p->sites[id].cat, "mpi");
}

/* ---- otf2-mpi.c ---- */

/* The first pass: each message and each communicator's ranks, the WORLD ranks present and the
 * communicators' refs; sets x->mpi where a process called MPI. */
void weft_otf2_mpi_scan(struct ox *x, struct weft_export_summary *sum);
/* The OTF2 region role of MPI function `name`. */
int weft_otf2_mpi_role(const char *name);
/* The MPI events at the begin and at the end of an MPI call on location l (its own thread's). */
void weft_otf2_mpi_begin(struct ox *x, struct loc *l, const struct weft_ev *e);
void weft_otf2_mpi_end(struct ox *x, struct loc *l, const struct weft_ev *e);
/* The strings the MPI definitions name, interned (x->comm_name, x->s_mpi, x->s_wlocs). */
void weft_otf2_mpi_names(struct ox *x);
/* The MPI locations' group, each communicator's group and the communicators; first_loc: each
 * process's first location. */
void weft_otf2_mpi_defs(struct ox *x, OTF2_GlobalDefWriter *w, const uint64_t *first_loc);
void weft_otf2_mpi_free(struct ox *x);

#endif
