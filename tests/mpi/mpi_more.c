/*
 * mpi_more.c - the rest of libweft-mpi.so's cases for tests/integration/test_mpi.py, on 4 ranks:
 *   MPI_Init_thread instead of MPI_Init;
 *   one-sided: MPI_Win_create on WORLD, MPI_Win_fence, MPI_Put of 2 ints to the right,
 *   MPI_Win_fence, MPI_Win_lock / MPI_Get of 1 int from the left / MPI_Win_unlock, MPI_Accumulate
 *   of 1 int to rank 0 between two fences, MPI_Win_free;
 *   an ambiguous match: rank 1 posts MPI_Irecv(ANY_SOURCE, tag 6) and then MPI_Irecv(0, tag 6),
 *   rank 0 sends it two messages with tag 6: which receive got which cannot be known from the
 *   calls alone, so neither gets an arrow and both are counted as not drawn;
 *   MPI_Comm_dup of WORLD and an MPI_Barrier on the copy, MPI_Comm_free;
 *   then one message to the right neighbour per rank for each of: MPI_Sendrecv_replace with
 *   rank ^ 1 (tag 11, 2 ints); Irecv from both neighbours and Isend to both, completed by 4
 *   MPI_Waitany (tag 12, 1 int); MPI_Iprobe until found, then MPI_Recv (tag 13, 1 int);
 *   MPI_Improbe until found, MPI_Imrecv, MPI_Wait (tag 14, 2 ints); a persistent send
 *   (MPI_Send_init, MPI_Start, MPI_Wait, MPI_Request_free) received by MPI_Recv (tag 15,
 *   1 int); MPI_Irecv + MPI_Isend completed by MPI_Waitsome calls (tag 16, 1 int);
 *   ranks 0 and 1 make a communicator with MPI_Comm_create_group (tag 5) and meet in an
 *   MPI_Barrier on it; then every rank duplicates WORLD again (its second creation call on
 *   WORLD everywhere), MPI_Barrier on the copy, frees both; MPI_Iallreduce + MPI_Wait on WORLD;
 *   last, an MPI_Isend and then an MPI_Send to the right with tag 20 (1 int), received by two
 *   MPI_Recv from the left and an MPI_Wait on the Isend: one quadruple, two kinds of sends
 *   (test_mpi leaves MPI_Isend out with -N: the Send's arrow must still end at the second Recv).
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

	int rep[2] = {r, r};
	MPI_Sendrecv_replace(rep, 2, MPI_INT, r ^ 1, 11, r ^ 1, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Request q[4];
	int in[2], out = r, idx, flag = 0;
	MPI_Irecv(&in[0], 1, MPI_INT, left, 12, MPI_COMM_WORLD, &q[0]);
	MPI_Irecv(&in[1], 1, MPI_INT, right, 12, MPI_COMM_WORLD, &q[1]);
	MPI_Isend(&out, 1, MPI_INT, left, 12, MPI_COMM_WORLD, &q[2]);
	MPI_Isend(&out, 1, MPI_INT, right, 12, MPI_COMM_WORLD, &q[3]);
	for (int i = 0; i < 4; i++)
		MPI_Waitany(4, q, &idx, MPI_STATUS_IGNORE);
	MPI_Send(&out, 1, MPI_INT, right, 13, MPI_COMM_WORLD);
	while (!flag)
		MPI_Iprobe(left, 13, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
	MPI_Recv(&in[0], 1, MPI_INT, left, 13, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Request sq, rq2;
	MPI_Isend(two, 2, MPI_INT, right, 14, MPI_COMM_WORLD, &sq);
	MPI_Message msg;
	flag = 0;
	while (!flag)
		MPI_Improbe(left, 14, MPI_COMM_WORLD, &flag, &msg, MPI_STATUS_IGNORE);
	MPI_Imrecv(in, 2, MPI_INT, &msg, &rq2);
	MPI_Wait(&rq2, MPI_STATUS_IGNORE);
	MPI_Wait(&sq, MPI_STATUS_IGNORE);
	MPI_Request ps;
	MPI_Send_init(&out, 1, MPI_INT, right, 15, MPI_COMM_WORLD, &ps);
	MPI_Start(&ps);
	MPI_Recv(&in[0], 1, MPI_INT, left, 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Wait(&ps, MPI_STATUS_IGNORE);
	MPI_Request_free(&ps);
	MPI_Request ws[2];
	int done = 0, outc, ind[2];
	MPI_Irecv(&in[0], 1, MPI_INT, left, 16, MPI_COMM_WORLD, &ws[0]);
	MPI_Isend(&out, 1, MPI_INT, right, 16, MPI_COMM_WORLD, &ws[1]);
	while (done < 2) {
		MPI_Waitsome(2, ws, &outc, ind, MPI_STATUSES_IGNORE);
		done += outc;
	}
	if (r < 2) {
		MPI_Group wg, g2;
		int first[2] = {0, 1};
		MPI_Comm_group(MPI_COMM_WORLD, &wg);
		MPI_Group_incl(wg, 2, first, &g2);
		MPI_Comm c2;
		MPI_Comm_create_group(MPI_COMM_WORLD, g2, 5, &c2);
		MPI_Barrier(c2);
		MPI_Comm_free(&c2);
		MPI_Group_free(&g2);
		MPI_Group_free(&wg);
	}
	MPI_Comm dup2;
	MPI_Comm_dup(MPI_COMM_WORLD, &dup2);
	MPI_Barrier(dup2);
	MPI_Comm_free(&dup2);
	double dx = r, dy;
	MPI_Request ir;
	MPI_Iallreduce(&dx, &dy, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &ir);
	MPI_Wait(&ir, MPI_STATUS_IGNORE);
	MPI_Request iq;
	MPI_Isend(&out, 1, MPI_INT, right, 20, MPI_COMM_WORLD, &iq);
	MPI_Send(&out, 1, MPI_INT, right, 20, MPI_COMM_WORLD);
	MPI_Recv(&in[0], 1, MPI_INT, left, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Recv(&in[1], 1, MPI_INT, left, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Wait(&iq, MPI_STATUS_IGNORE);
	MPI_Finalize();
	return 0;
}
