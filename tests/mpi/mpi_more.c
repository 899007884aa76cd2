/*
 * mpi_more.c - the rest of libweft-mpi.so's cases for tests/integration/test_mpi.py, on 4 ranks:
 *   MPI_Init_thread instead of MPI_Init;
 *   one-sided: MPI_Win_create on WORLD, MPI_Win_fence, MPI_Put of 2 ints to the right,
 *   MPI_Win_fence, MPI_Win_lock / MPI_Get of 1 int from the left / MPI_Win_unlock, MPI_Accumulate
 *   of 1 int to rank 0 between two fences, MPI_Win_free;
 *   an ambiguous match: rank 1 posts MPI_Irecv(ANY_SOURCE, tag 6) and then MPI_Irecv(0, tag 6),
 *   rank 0 sends it two messages with tag 6: which receive got which cannot be known from the
 *   calls alone, so neither gets an arrow and both are counted as not drawn;
 *   MPI_Comm_dup of WORLD and an MPI_Barrier on the copy, MPI_Comm_free.
 */
#include <mpi.h>

int main(int argc, char **argv)
{
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	int right = (r + 1) % n, left = (r + n - 1) % n;
	int mem[4] = {0}, two[2] = {r, r}, got = 0, one = 1;
	MPI_Win win;
	MPI_Win_create(mem, sizeof(mem), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
	MPI_Win_fence(0, win);
	MPI_Put(two, 2, MPI_INT, right, 0, 2, MPI_INT, win);
	MPI_Win_fence(0, win);
	MPI_Win_lock(MPI_LOCK_SHARED, left, 0, win);
	MPI_Get(&got, 1, MPI_INT, left, 0, 1, MPI_INT, win);
	MPI_Win_unlock(left, win);
	MPI_Win_fence(0, win);
	MPI_Accumulate(&one, 1, MPI_INT, 0, 3, 1, MPI_INT, MPI_SUM, win);
	MPI_Win_fence(0, win);
	MPI_Win_free(&win);

	int a = 0, b = 0, m1 = 1, m2 = 2;
	if (r == 1) {
		MPI_Request rq[2];
		MPI_Irecv(&a, 1, MPI_INT, MPI_ANY_SOURCE, 6, MPI_COMM_WORLD, &rq[0]);
		MPI_Irecv(&b, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &rq[1]);
		MPI_Barrier(MPI_COMM_WORLD);
		MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		if (r == 0) {
			MPI_Send(&m1, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
			MPI_Send(&m2, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
		}
	}
	MPI_Comm dup;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup);
	MPI_Barrier(dup);
	MPI_Comm_free(&dup);
	MPI_Finalize();
	return 0;
}
