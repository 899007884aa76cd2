/* libweft-mpi.so's bookkeeping without MPI (src/mpi/match.c): the request table under a long
 * random run of adds and deletes (its deletion moves entries back into the hole: every entry
 * left must still be found), the per-quadruple message numbers, and the matching rules: a
 * specific receive names the same flow as its send, a wildcard one takes its number at
 * completion from the status, and a specific receive posted while a wildcard one is pending is
 * not drawn (nor is the wildcard). Sender and receiver are the same process here, as for a
 * message a rank sends itself: each side must count apart. Runs under both ABIs (status
 * layouts). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>
#include "mpi/mpi-internal.h"

/* what init.c would provide (it needs the weft runtime) */
struct mpi_state mpi_st;
__thread int mpi_depth;
__thread int mpi_rec;
struct weft_site mpi_keys[K_N];
void mpi_setup_slow(void) {}

static void request_table(void **s)
{
	(void)s;
	mpi_abi.handle_size = 8;
	mpi_abi.request_null = 0xdead;
	enum { N = 3000 };
	static mh h[N];
	static int live[N];
	srand(7);
	for (int i = 0; i < N; i++) {
		h[i] = ((mh)rand() << 20) ^ (mh)rand() ^ 0x10000;
		assert_non_null(mpi_req_add(h[i]));
		mpi_req_find(h[i])->tag = i;
		live[i] = 1;
	}
	for (int round = 0; round < 4 * N; round++) {
		int i = rand() % N;
		struct mpi_req *r = mpi_req_find(h[i]);
		if (live[i]) {
			assert_non_null(r);
			assert_int_equal(r->tag, i);
			mpi_req_del(r);
			live[i] = 0;
		} else {
			assert_null(r);
			assert_non_null(mpi_req_add(h[i]));
			mpi_req_find(h[i])->tag = i;
			live[i] = 1;
		}
	}
	for (int i = 0; i < N; i++) {
		struct mpi_req *r = mpi_req_find(h[i]);
		if (live[i]) {
			assert_non_null(r);
			assert_int_equal(r->tag, i);
			mpi_req_del(r);
		} else {
			assert_null(r);
		}
	}
	assert_null(mpi_req_find(0xdead)); /* MPI_REQUEST_NULL is never entered */
	assert_null(mpi_req_add(0xdead));
}

static void numbers(void **s)
{
	(void)s;
	uint64_t base;
#define mpi_next_n(c, a, b, t, side) mpi_next_n(c, a, b, t, side, &base)
	assert_int_equal(mpi_next_n(0, 1, 2, 5, 0), 1);
	assert_int_equal(mpi_next_n(0, 1, 2, 5, 0), 2);
	assert_int_equal(mpi_next_n(0, 2, 1, 5, 0), 1); /* the other direction */
	assert_int_equal(mpi_next_n(7, 1, 2, 5, 0), 1); /* another communicator */
	assert_int_equal(mpi_next_n(0, 1, 2, 6, 0), 1); /* another tag */
	assert_int_equal(mpi_next_n(0, 1, 2, 5, 1), 1); /* the receiving side counts apart */
	assert_int_equal(mpi_next_n(0, 1, 2, 5, 0), 3);
	assert_int_equal(base, weft_mpi_flow_base(0, 1, 2, 5));
	/* a quadruple's flows are consecutive numbers above its base (compressible), its own */
	assert_int_equal(weft_mpi_flow_id(0, 1, 2, 5, 3), WEFT_MPI_FLOW_TAG | ((base + 3) & WEFT_MPI_FLOW_MASK));
	assert_int_not_equal(weft_mpi_flow_base(0, 1, 2, 5), weft_mpi_flow_base(0, 2, 1, 5));
	assert_int_not_equal(weft_mpi_flow_base(0, 1, 2, 5), weft_mpi_flow_base(0, 1, 2, 6));
	assert_int_not_equal(weft_mpi_flow_base(0, 1, 2, 5), weft_mpi_flow_base(7, 1, 2, 5));
#undef mpi_next_n
}

/* a status as the flavor lays it out */
static void status(char *st, int src, int tag, uint64_t bytes)
{
	memset(st, 0, 32);
	memcpy(st + mpi_abi.off_source, &src, 4);
	memcpy(st + mpi_abi.off_tag, &tag, 4);
	if (mpi_abi.flavor == WEFT_MPI_OPENMPI) {
		memcpy(st + 16, &bytes, 8);
	} else {
		uint32_t lo = (uint32_t)bytes;
		memcpy(st, &lo, 4);
	}
}

static void matching(int flavor)
{
	mpi_abi.flavor = flavor;
	mpi_abi.off_source = flavor == WEFT_MPI_OPENMPI ? 0 : 8;
	mpi_abi.off_tag = flavor == WEFT_MPI_OPENMPI ? 4 : 12;
	mpi_abi.any_source = flavor == WEFT_MPI_OPENMPI ? -1 : -2;
	mpi_abi.proc_null = flavor == WEFT_MPI_OPENMPI ? -2 : -1;
	struct mpi_comm c = {.handle = 1, .id = 100 + (uint64_t)flavor, .size = 4, .rank = 1};
	memset(&mpi_st, 0, sizeof(mpi_st));
	/* rank 3 sends twice to rank 1 with tag 9: the sender's ids */
	mpi_st.world_rank = 3;
	uint64_t s1 = mpi_send_flow(&c, 1, 9), s2 = mpi_send_flow(&c, 1, 9);
	assert_int_equal(s1, weft_mpi_flow_id(c.id, 3, 1, 9, 1));
	assert_int_equal(s2, weft_mpi_flow_id(c.id, 3, 1, 9, 2));
	assert_true(s1 >> 62 == 1); /* bit 62 set, 63 clear */
	/* rank 1: a specific receive, then a wildcard one */
	mpi_st.world_rank = 1;
	char st[32];
	int peer, tag;
	uint64_t bytes;
	struct mpi_req a, b;
	mpi_recv_post(&a, &c, 3, 9);
	status(st, 3, 9, 40);
	assert_int_equal(mpi_recv_done(&a, st, &peer, &tag, &bytes), s1);
	assert_int_equal(peer, 3);
	assert_int_equal(tag, 9);
	assert_int_equal(bytes, 40);
	mpi_recv_post(&b, &c, mpi_abi.any_source, 9);
	assert_int_equal(c.pending_wild, 1);
	assert_int_equal(mpi_recv_done(&b, st, &peer, &tag, &bytes), s2);
	assert_int_equal(c.pending_wild, 0);
	assert_int_equal(mpi_st.received, 2);
	/* MPI_PROC_NULL: nothing to match */
	mpi_recv_post(&a, &c, mpi_abi.proc_null, 9);
	status(st, mpi_abi.proc_null, -1, 0);
	assert_int_equal(mpi_recv_done(&a, st, &peer, &tag, &bytes), 0);
	assert_int_equal(mpi_st.undrawn, 0);
	/* a wildcard pending, then a specific one: neither can be drawn for sure */
	mpi_recv_post(&b, &c, mpi_abi.any_source, 9);
	mpi_recv_post(&a, &c, 3, 9);
	status(st, 3, 9, 8);
	assert_int_equal(mpi_recv_done(&b, st, &peer, &tag, &bytes), 0);
	assert_int_equal(mpi_recv_done(&a, st, &peer, &tag, &bytes), 0);
	assert_int_equal(mpi_st.undrawn, 2);
	assert_int_equal(c.conflict, 0); /* cleared once no wildcard is pending */
	/* the next ones are drawn again, numbered on: messages 5 and 6 of the quadruple */
	mpi_st.world_rank = 3;
	mpi_send_flow(&c, 1, 9);
	mpi_send_flow(&c, 1, 9);
	mpi_send_flow(&c, 1, 9);
	uint64_t s6 = mpi_send_flow(&c, 1, 9);
	mpi_st.world_rank = 1;
	mpi_recv_post(&a, &c, 3, 9);
	assert_int_equal(mpi_recv_done(&a, st, &peer, &tag, &bytes), weft_mpi_flow_id(c.id, 3, 1, 9, 5));
	mpi_recv_post(&a, &c, 3, 9);
	assert_int_equal(mpi_recv_done(&a, st, &peer, &tag, &bytes), s6);
}

static void matching_openmpi(void **s)
{
	(void)s;
	matching(WEFT_MPI_OPENMPI);
}

static void matching_mpich(void **s)
{
	(void)s;
	matching(WEFT_MPI_MPICH);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_table),
		cmocka_unit_test(numbers),
		cmocka_unit_test(matching_openmpi),
		cmocka_unit_test(matching_mpich),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
