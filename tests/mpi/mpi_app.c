/*
 * mpi_app.c - an MPI program whose every message is known, for tests/integration/test_mpi.py
 * (built with mpicc.openmpi and mpicc.mpich; run on exactly 4 ranks). Its phases, each with
 * distinct tags so that the test can recompute them:
 *   1 blocking ring          MPI_Send right / MPI_Recv left, tag 1, 1 int
 *   2 nonblocking exchange   MPI_Irecv from left and right, MPI_Isend to both, tag 2, 8 ints,
 *                            one MPI_Waitall (statuses ignored)
 *   3 Sendrecv               with rank ^ 1, tag 3, 4 doubles
 *   4 split communicator     color rank % 2: its rank 0 sends its rank 1 2 ints (tag 4), then
 *                            MPI_Allreduce on it; MPI_Comm_free
 *   5 ANY_SOURCE after probe ranks 1..3 send rank ints to 0 (tag 5); rank 0 MPI_Probe then
 *                            MPI_Recv both with MPI_ANY_SOURCE, 3 times
 *   6 collectives            MPI_Bcast root 1 (1 int), MPI_Reduce root 2 (1 int), MPI_Allreduce
 *                            (2 ints), MPI_Gather root 0 (1 int)
 *   7 persistent             MPI_Send_init right, MPI_Recv_init left, tag 7, 1 int; 2 x
 *                            (MPI_Startall, MPI_Waitall); MPI_Request_free x 2
 *   8 matched probe          MPI_Isend right tag 8 (3 ints); MPI_Mprobe left + MPI_Mrecv; MPI_Wait
 *   9 test loop              MPI_Irecv left tag 9, MPI_Isend right, MPI_Test until the receive is
 *                            done, MPI_Wait on the send
 *  10 imbalance              rank r busy for (r + 1) x 30 ms, then MPI_Barrier
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static void busy_ms(int ms)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do
		clock_gettime(CLOCK_MONOTONIC, &t);
	while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (n != 4) {
		if (!r)
			fprintf(stderr, "mpi_app: run on 4 ranks\n");
		MPI_Finalize();
		return 2;
	}
	int right = (r + 1) % n, left = (r + n - 1) % n;
	int a = r, b = -1, v8[2][8] = {{0}}, w8[2][8] = {{0}};

	/* 1 */
	if (r % 2 == 0) {
		MPI_Send(&a, 1, MPI_INT, right, 1, MPI_COMM_WORLD);
		MPI_Recv(&b, 1, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else {
		MPI_Recv(&b, 1, MPI_INT, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(&a, 1, MPI_INT, right, 1, MPI_COMM_WORLD);
	}
	/* 2 */
	MPI_Request rq[4];
	MPI_Irecv(v8[0], 8, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[0]);
	MPI_Irecv(v8[1], 8, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[1]);
	MPI_Isend(w8[0], 8, MPI_INT, left, 2, MPI_COMM_WORLD, &rq[2]);
	MPI_Isend(w8[1], 8, MPI_INT, right, 2, MPI_COMM_WORLD, &rq[3]);
	MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
	/* 3 */
	double d[4] = {r, r, r, r}, e[4];
	MPI_Sendrecv(d, 4, MPI_DOUBLE, r ^ 1, 3, e, 4, MPI_DOUBLE, r ^ 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	/* 4 */
	MPI_Comm sub;
	MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &sub);
	int sr, two[2] = {r, r}, sum = 0;
	MPI_Comm_rank(sub, &sr);
	if (sr == 0)
		MPI_Send(two, 2, MPI_INT, 1, 4, sub);
	else
		MPI_Recv(two, 2, MPI_INT, 0, 4, sub, MPI_STATUS_IGNORE);
	MPI_Allreduce(&a, &sum, 1, MPI_INT, MPI_SUM, sub);
	MPI_Comm_free(&sub);
	/* 5 */
	int buf[4];
	if (r == 0) {
		for (int i = 1; i < n; i++) {
			MPI_Status st;
			int cnt;
			MPI_Probe(MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_INT, &cnt);
			MPI_Recv(buf, 4, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &st);
		}
	} else {
		int m[3] = {r, r, r};
		MPI_Send(m, r, MPI_INT, 0, 5, MPI_COMM_WORLD);
	}
	/* 6 */
	int x = r, y = 0, g[4], two_in[2] = {r, r}, two_out[2];
	MPI_Bcast(&x, 1, MPI_INT, 1, MPI_COMM_WORLD);
	MPI_Reduce(&a, &y, 1, MPI_INT, MPI_SUM, 2, MPI_COMM_WORLD);
	MPI_Allreduce(two_in, two_out, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Gather(&a, 1, MPI_INT, g, 1, MPI_INT, 0, MPI_COMM_WORLD);
	/* 7 */
	MPI_Request pr[2];
	int ps = r, pv = -1;
	MPI_Send_init(&ps, 1, MPI_INT, right, 7, MPI_COMM_WORLD, &pr[0]);
	MPI_Recv_init(&pv, 1, MPI_INT, left, 7, MPI_COMM_WORLD, &pr[1]);
	for (int i = 0; i < 2; i++) {
		MPI_Startall(2, pr);
		MPI_Waitall(2, pr, MPI_STATUSES_IGNORE);
	}
	MPI_Request_free(&pr[0]);
	MPI_Request_free(&pr[1]);
	/* 8 */
	int t3[3] = {r, r, r}, u3[3];
	MPI_Request sq;
	MPI_Message msg;
	MPI_Isend(t3, 3, MPI_INT, right, 8, MPI_COMM_WORLD, &sq);
	MPI_Mprobe(left, 8, MPI_COMM_WORLD, &msg, MPI_STATUS_IGNORE);
	MPI_Mrecv(u3, 3, MPI_INT, &msg, MPI_STATUS_IGNORE);
	MPI_Wait(&sq, MPI_STATUS_IGNORE);
	/* 9 */
	MPI_Request tr[2];
	int flag = 0, tv = -1;
	MPI_Irecv(&tv, 1, MPI_INT, left, 9, MPI_COMM_WORLD, &tr[0]);
	MPI_Isend(&a, 1, MPI_INT, right, 9, MPI_COMM_WORLD, &tr[1]);
	while (!flag)
		MPI_Test(&tr[0], &flag, MPI_STATUS_IGNORE);
	MPI_Wait(&tr[1], MPI_STATUS_IGNORE);
	/* 10 */
	busy_ms((r + 1) * 30);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
