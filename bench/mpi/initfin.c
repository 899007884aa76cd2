/* initfin.c - how long MPI_Init, the first collective and MPI_Finalize take as the program sees
 * them (CLOCK_MONOTONIC around each call), one line per rank: "rank R init MS first MS fin MS".
 * bench/mpi/initfin.sh runs it untraced and under weft record. */
#include <mpi.h>
#include <stdio.h>
#include <time.h>

static double ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double a = ms();
	MPI_Init(&argc, &argv);
	double b = ms();
	int r, x = 1, y;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	double c = ms();
	MPI_Finalize();
	double d = ms();
	printf("rank %d init %.1f first %.1f fin %.1f\n", r, b - a, c - b, d - c);
	return 0;
}
