/* job_mpi.c - a small MPI program for the job-recording tests: each rank sends its rank to
 * the next one around a ring and prints "rank R of N got P" once the ring closed. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	int rank, size, got = -1;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Sendrecv(&rank, 1, MPI_INT, (rank + 1) % size, 7, &got, 1, MPI_INT, (rank + size - 1) % size, 7,
		     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	printf("rank %d of %d got %d\n", rank, size, got);
	MPI_Finalize();
	return 0;
}
