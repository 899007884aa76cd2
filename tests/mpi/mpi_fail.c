/* A job that goes wrong (test_mpi_failing.py):
 *   mpi_fail fail R   every rank joins an Allreduce; rank R then exits with status 3 without
 *                     MPI_Finalize while the others wait for it in a Barrier (the launcher
 *                     ends them);
 *   mpi_fail spin     rank 0 prints "ready" once every rank is past MPI_Init, then all loop
 *                     in Barriers for about 20 s: a job to interrupt. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	double x = rank, y = 0;
	MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (argc > 2 && !strcmp(argv[1], "fail")) {
		if (rank == atoi(argv[2])) {
			fprintf(stderr, "rank %d: failing\n", rank);
			exit(3);
		}
		MPI_Barrier(MPI_COMM_WORLD);
	} else {
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0) {
			printf("ready\n");
			fflush(stdout);
		}
		for (int i = 0; i < 2000; i++) {
			MPI_Barrier(MPI_COMM_WORLD);
			usleep(10000);
		}
	}
	MPI_Finalize();
	return 0;
}
