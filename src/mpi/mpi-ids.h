/*
 * mpi-ids.h - how libweft-mpi.so names communicators and messages, written once so that tests
 * and analyses can compute the same ids (docs/mpi.md). A communicator id is equal on all of
 * its members and distinct between communicators; a message's flow id is computed by its
 * sender and its receiver alone, from what both know: (communicator, source, destination,
 * tag, n), n the 1-based number of the message on that quadruple (MPI's non-overtaking rule
 * makes the n-th send meet the n-th receive).
 */
#ifndef WEFT_MPI_IDS_H
#define WEFT_MPI_IDS_H

#include <stdint.h>

#define WEFT_MPI_COMM_WORLD_ID 0u
#define WEFT_MPI_COMM_SELF_ID 1u
#define WEFT_MPI_COMM_ID_MASK 0x7fffffffffffull   /* 48 bits, positive */
#define WEFT_MPI_FLOW_TAG 0x4000000000000000ull    /* bit 62 set, bit 63 clear (GPU flows) */
#define WEFT_MPI_FLOW_MASK 0x3fffffffffffffffull

/* splitmix64's finaliser: every input bit moves every output bit */
static inline uint64_t weft_mpi_fmix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

static inline uint64_t weft_mpi_mix(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t h = weft_mpi_fmix(a + 0x9e3779b97f4a7c15ull);
	h = weft_mpi_fmix(h ^ b);
	return weft_mpi_fmix(h ^ c);
}

static inline uint64_t weft_mpi_mix5(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	return weft_mpi_mix(weft_mpi_mix(a, b, c), d, e);
}

/* a derived communicator: the n-th creation call on its parent, rank 0 of the new one */
static inline uint64_t weft_mpi_comm_id(uint64_t parent, uint64_t n, uint64_t root_world)
{
	return weft_mpi_mix(parent, n, root_world) & WEFT_MPI_COMM_ID_MASK;
}

/* The flows of the messages from src to dst (world ranks) with tag on communicator comm are
 * consecutive numbers: the quadruple's base, a hash computed once, plus n. So a rank's flow
 * words differ from one message to the next in their low bits only, and compress to a byte or
 * two (a hash per message took 8 bytes on disk on each side: issue 30). */
static inline uint64_t weft_mpi_flow_base(uint64_t comm, uint32_t src, uint32_t dst, int32_t tag)
{
	return weft_mpi_mix5(comm, src, dst, (uint64_t)(uint32_t)tag, 0);
}

/* the flow of the n-th message from src to dst (world ranks) with tag on communicator comm */
static inline uint64_t weft_mpi_flow_id(uint64_t comm, uint32_t src, uint32_t dst, int32_t tag, uint64_t n)
{
	return WEFT_MPI_FLOW_TAG | ((weft_mpi_flow_base(comm, src, dst, tag) + n) & WEFT_MPI_FLOW_MASK);
}

#endif
