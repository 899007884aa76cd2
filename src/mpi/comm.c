/*
 * comm.c - communicators: the job-wide id of each one (docs/mpi.md), its size, this process's
 * rank in it and the world rank of each of its ranks (to name a message's partner by world
 * rank). WORLD and SELF are known at MPI_Init; a communicator made by a wrapped creation call
 * gets its id from its parent (mpi_comm_created); one met first in a call (made by a function
 * weft does not wrap) is entered then, from its group, with an id from its members' world
 * ranks (equal on all members, but two such communicators with the same members share it:
 * `inexact`).
 *
 * The table is open-addressed on the normalised handle. It is written by creation and free
 * calls and on first sight; the wrappers read it. MPI forbids using a communicator while it
 * is being freed, so a reader never meets an entry being removed by another thread.
 */
#include "mpi-internal.h"
#include <stdlib.h>

#define NCOMM 1024
static struct mpi_comm comms[NCOMM];
static struct mpi_comm world_c, self_c; /* written at MPI_Init */

static size_t slot_of(mh h)
{
	return (size_t)(weft_mpi_fmix(h) & (NCOMM - 1));
}

static struct mpi_comm *find(mh h)
{
	for (size_t i = slot_of(h), k = 0; k < NCOMM; i = (i + 1) & (NCOMM - 1), k++) {
		if (comms[i].handle == h)
			return &comms[i];
		if (!comms[i].handle)
			return NULL;
	}
	return NULL;
}

static struct mpi_comm *insert(mh h)
{
	for (size_t i = slot_of(h), k = 0; k < NCOMM; i = (i + 1) & (NCOMM - 1), k++) {
		if (comms[i].handle == h || !comms[i].handle) {
			struct mpi_comm *c = &comms[i];
			free(c->world);
			memset(c, 0, sizeof(*c));
			c->handle = h;
			return c;
		}
	}
	return NULL;
}

/* size, rank and world ranks of communicator h into c; 0 or -1 */
static int describe(struct mpi_comm *c, mh h)
{
	typedef int (*size_t_)(mh, int *);
	typedef int (*group_t)(mh, void *);
	typedef int (*translate_t)(mh, int, const int *, mh, int *);
	typedef int (*gfree_t)(void *);
	static size_t_ csize, crank;
	static group_t cgroup;
	static translate_t translate;
	static gfree_t gfree;
	if (!csize) {
		crank = (size_t_)mpi_sym("PMPI_Comm_rank");
		cgroup = (group_t)mpi_sym("PMPI_Comm_group");
		translate = (translate_t)mpi_sym("PMPI_Group_translate_ranks");
		gfree = (gfree_t)mpi_sym("PMPI_Group_free");
		csize = (size_t_)mpi_sym("PMPI_Comm_size");
	}
	if (!csize || !crank || !cgroup || !translate || !gfree)
		return -1;
	int n = 0, r = -1;
	if (csize(h, &n) || crank(h, &r) || n <= 0)
		return -1;
	c->size = n;
	c->rank = r;
	if (h == mpi_abi.comm_world)
		return 0;
	uintptr_t g = 0, wg = 0;
	int *in = malloc(sizeof(int) * (size_t)n), *out = malloc(sizeof(int) * (size_t)n);
	int rc = -1;
	if (in && out && !cgroup(h, &g) && !cgroup(mpi_abi.comm_world, &wg)) {
		for (int i = 0; i < n; i++)
			in[i] = i;
		if (!translate(mh_load(&g, 0), n, in, mh_load(&wg, 0), out)) {
			c->world = out;
			out = NULL;
			rc = 0;
		}
	}
	if (g)
		gfree(&g);
	if (wg)
		gfree(&wg);
	free(in);
	free(out);
	return rc;
}

void mpi_comm_init_world(void)
{
	world_c.handle = mh_norm(mpi_abi.comm_world);
	world_c.id = WEFT_MPI_COMM_WORLD_ID;
	describe(&world_c, mpi_abi.comm_world);
	self_c.handle = mh_norm(mpi_abi.comm_self);
	self_c.id = WEFT_MPI_COMM_SELF_ID;
	self_c.size = 1;
	self_c.rank = 0;
	self_c.world = malloc(sizeof(int));
	if (self_c.world)
		self_c.world[0] = world_c.rank;
}

struct mpi_comm *mpi_comm(mh c)
{
	c = mh_norm(c);
	if (__builtin_expect(c == world_c.handle && c, 1))
		return &world_c;
	if (c == self_c.handle && c)
		return &self_c;
	if (c == mh_norm(mpi_abi.comm_null))
		return NULL;
	struct mpi_comm *e = find(c);
	if (e && e->id != (uint64_t)-1)
		return e;
	/* first sight: made by a call weft does not wrap */
	e = insert(c);
	if (!e || describe(e, c)) {
		if (e)
			e->handle = 0;
		return NULL;
	}
	uint64_t h = 0x6d7069;
	for (int i = 0; i < e->size; i++)
		h = weft_mpi_mix(h, (uint64_t)comm_world_rank(e, i), (uint64_t)i);
	e->id = (h & WEFT_MPI_COMM_ID_MASK) | 2; /* never WORLD's or SELF's */
	e->inexact = 1;
	return e;
}

void mpi_comm_created(struct mpi_comm *parent, mh newcomm)
{
	if (!parent)
		return;
	mpi_comm_created_n(parent, newcomm, ++parent->created);
}

void mpi_comm_created_n(struct mpi_comm *parent, mh newcomm, uint64_t n)
{
	mh h = mh_norm(newcomm);
	if (h == mh_norm(mpi_abi.comm_null))
		return;
	struct mpi_comm *e = insert(h);
	if (!e)
		return;
	if (describe(e, newcomm)) {
		e->handle = 0;
		return;
	}
	e->id = weft_mpi_comm_id(parent->id, n, (uint64_t)comm_world_rank(e, 0));
}

void mpi_comm_forget(mh c)
{
	/* The slot keeps its handle (a tombstone the probe walks past), with nothing else: a new
	 * communicator with the same handle takes it over. */
	struct mpi_comm *e = find(mh_norm(c));
	if (!e || e == &world_c || e == &self_c)
		return;
	free(e->world);
	mh h = e->handle;
	memset(e, 0, sizeof(*e));
	e->handle = h;
	e->id = (uint64_t)-1;
}
