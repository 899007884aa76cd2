/*
 * onesided.c - one-sided communication: windows (Win_create, Win_allocate, Win_free), their
 * synchronisation (Win_fence, Win_lock, Win_unlock, Win_lock_all, Win_unlock_all, Win_flush)
 * and the transfers (Put, Get, Accumulate). Each is a slice with the window's communicator
 * (mpi.comm, mpi.comm_size) and, for transfers and per-target locks, the target's world rank
 * (mpi.peer) and this side's bytes. No arrows: a one-sided transfer has no receive call to
 * end at. A window remembers its communicator's id and world ranks (a copy: the program may
 * free the communicator while the window lives).
 */
#include "mpi-internal.h"
#include <stdlib.h>

#define NWIN 256
static struct win {
	mh handle; /* normalised; 0 free */
	struct mpi_comm c;
} wins[NWIN];

static struct win *win_find(mh h)
{
	h = mh_norm(h);
	for (int i = 0; i < NWIN; i++)
		if (wins[i].handle == h && h)
			return &wins[i];
	return NULL;
}

static void win_made(mh comm, mh w)
{
	struct mpi_comm *c = mpi_comm(comm);
	if (!c)
		return;
	for (int i = 0; i < NWIN; i++) {
		if (wins[i].handle)
			continue;
		wins[i].c = *c;
		wins[i].c.world = NULL;
		if (c->world && c->size > 0) {
			wins[i].c.world = malloc(sizeof(int) * (size_t)c->size);
			if (!wins[i].c.world)
				return;
			memcpy(wins[i].c.world, c->world, sizeof(int) * (size_t)c->size);
		}
		wins[i].handle = mh_norm(w);
		return;
	}
}

static void win_begin(struct weft_site *s, struct win *w, int target, uint64_t bytes, int with_target)
{
	struct marg a[4];
	unsigned n = 0;
	a[n++] = (struct marg){K_COMM, w ? (int64_t)w->c.id : -1};
	a[n++] = (struct marg){K_COMM_SIZE, w ? w->c.size : 0};
	if (with_target) {
		a[n++] = (struct marg){K_PEER, w ? comm_world_rank(&w->c, target) : -1};
		a[n++] = (struct marg){K_BYTES, (int64_t)bytes};
	}
	mpi_emit(s, WEFT_R_BEGIN, a, n, 0, 0);
}

#define WIN_MAKER(fn, params, args)                                                            \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn params                                                                   \
	{                                                                                      \
		REAL(int, fn, params);                                                         \
		if (!mpi_enter(&site_##fn))                                                    \
			return real_##fn args;                                                 \
		struct mpi_comm *c = mpi_comm(comm);                                           \
		struct marg a[] = {{K_COMM, c ? (int64_t)c->id : -1}, {K_COMM_SIZE, c ? c->size : 0}}; \
		mpi_emit(&site_##fn, WEFT_R_BEGIN, a, 2, 0, 0);                                \
		int rc = real_##fn args;                                                       \
		if (!rc)                                                                       \
			win_made(comm, mh_load(win, 0));                                       \
		mpi_emit(&site_##fn, WEFT_R_END, NULL, 0, 0, 0);                               \
		mpi_leave();                                                                   \
		return rc;                                                                     \
	}
WIN_MAKER(MPI_Win_create, (void *base, intptr_t size, int disp_unit, mh info, mh comm, void *win),
	  (base, size, disp_unit, info, comm, win))
WIN_MAKER(MPI_Win_allocate, (intptr_t size, int disp_unit, mh info, mh comm, void *baseptr, void *win),
	  (size, disp_unit, info, comm, baseptr, win))

MPI_SITE(MPI_Win_free);
EXPORT int MPI_Win_free(void *win)
{
	REAL(int, MPI_Win_free, (void *));
	if (!mpi_enter(&site_MPI_Win_free))
		return real_MPI_Win_free(win);
	struct win *w = win_find(mh_load(win, 0));
	win_begin(&site_MPI_Win_free, w, 0, 0, 0);
	int rc = real_MPI_Win_free(win);
	if (!rc && w) {
		free(w->c.world);
		memset(w, 0, sizeof(*w));
	}
	mpi_emit(&site_MPI_Win_free, WEFT_R_END, NULL, 0, 0, 0);
	mpi_leave();
	return rc;
}

/* a call on a window: name, params, args, the target expression (or -1) and the bytes */
#define WIN_CALL(fn, params, args, targetx, bytesx, with_target)                               \
	MPI_SITE(fn);                                                                          \
	EXPORT int fn params                                                                   \
	{                                                                                      \
		REAL(int, fn, params);                                                         \
		if (!mpi_enter(&site_##fn))                                                    \
			return real_##fn args;                                                 \
		win_begin(&site_##fn, win_find(win), targetx, bytesx, with_target);            \
		int rc = real_##fn args;                                                       \
		mpi_emit(&site_##fn, WEFT_R_END, NULL, 0, 0, 0);                               \
		mpi_leave();                                                                   \
		return rc;                                                                     \
	}
WIN_CALL(MPI_Put, (const void *oa, int oc, mh odt, int tr, intptr_t td, int tc, mh tdt, mh win),
	 (oa, oc, odt, tr, td, tc, tdt, win), tr, mpi_type_bytes(odt, oc), 1)
WIN_CALL(MPI_Get, (void *oa, int oc, mh odt, int tr, intptr_t td, int tc, mh tdt, mh win),
	 (oa, oc, odt, tr, td, tc, tdt, win), tr, mpi_type_bytes(odt, oc), 1)
WIN_CALL(MPI_Accumulate, (const void *oa, int oc, mh odt, int tr, intptr_t td, int tc, mh tdt, mh op, mh win),
	 (oa, oc, odt, tr, td, tc, tdt, op, win), tr, mpi_type_bytes(odt, oc), 1)
WIN_CALL(MPI_Get_accumulate,
	 (const void *oa, int oc, mh odt, void *ra, int rc_, mh rdt, int tr, intptr_t td, int tc, mh tdt, mh op, mh win),
	 (oa, oc, odt, ra, rc_, rdt, tr, td, tc, tdt, op, win), tr, mpi_type_bytes(odt, oc), 1)
WIN_CALL(MPI_Fetch_and_op, (const void *oa, void *ra, mh dt, int tr, intptr_t td, mh op, mh win),
	 (oa, ra, dt, tr, td, op, win), tr, mpi_type_bytes(dt, 1), 1)
WIN_CALL(MPI_Compare_and_swap, (const void *oa, const void *ca, void *ra, mh dt, int tr, intptr_t td, mh win),
	 (oa, ca, ra, dt, tr, td, win), tr, mpi_type_bytes(dt, 1), 1)
WIN_CALL(MPI_Win_fence, (int assert_, mh win), (assert_, win), -1, 0, 0)
WIN_CALL(MPI_Win_lock, (int type, int rank, int assert_, mh win), (type, rank, assert_, win), rank, 0, 1)
WIN_CALL(MPI_Win_unlock, (int rank, mh win), (rank, win), rank, 0, 1)
WIN_CALL(MPI_Win_lock_all, (int assert_, mh win), (assert_, win), -1, 0, 0)
WIN_CALL(MPI_Win_unlock_all, (mh win), (win), -1, 0, 0)
WIN_CALL(MPI_Win_flush, (int rank, mh win), (rank, win), rank, 0, 1)
