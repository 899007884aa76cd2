/*
 * mpi_bench.c - libweft-mpi.so's cost per MPI call (bench/mpi/mpi_bench.py runs it):
 *   procnull N   N x MPI_Send to MPI_PROC_NULL on each rank: MPI returns at once, so this is
 *                the wrappers' own cost (a slice with five arguments and a flow check)
 *   pingpong N   ranks 0 and 1 bounce 8 bytes N times (MPI_Send + MPI_Recv on each side)
 *   allreduce N  N x MPI_Allreduce of one double
 * Rank 0 prints "ns/call WALL cpu/call CPU calls C": the loop's wall time and its thread's CPU
 * time divided by the MPI calls it made.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t c)
{
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int r;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	const char *mode = argc > 1 ? argv[1] : "procnull";
	long n = argc > 2 ? atol(argv[2]) : 1000000, calls = 0;
	double x = 1, y = 0, buf[1] = {0};
	MPI_Barrier(MPI_COMM_WORLD);
	double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
	if (!strcmp(mode, "procnull")) {
		for (long i = 0; i < n; i++)
			MPI_Send(buf, 1, MPI_DOUBLE, MPI_PROC_NULL, 0, MPI_COMM_WORLD);
		calls = n;
	} else if (!strcmp(mode, "pingpong")) {
		for (long i = 0; i < n; i++) {
			if (r == 0) {
				MPI_Send(buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
				MPI_Recv(buf, 1, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			} else if (r == 1) {
				MPI_Recv(buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				MPI_Send(buf, 1, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
			}
		}
		calls = 2 * n;
	} else {
		for (long i = 0; i < n; i++)
			MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		calls = n;
	}
	double w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_THREAD_CPUTIME_ID);
	if (r == 0)
		printf("ns/call %.1f cpu/call %.1f calls %ld\n", (w1 - w0) / calls, (c1 - c0) / calls, calls);
	MPI_Finalize();
	return 0;
}
