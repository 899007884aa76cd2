/* mpi_top GATE: weft top's job test (tests/integration/test_top.py). Every rank prints
 * "ready RANK PID" after MPI_Init; rank 2 then runs slow_compute() until the file GATE.go
 * exists, while the other ranks wait for it in MPI_Barrier (a rank sleeping in MPI: weft top
 * must show it, and which rank they wait for). Then all ranks finalize and exit 0. Gated by a
 * file: nothing depends on timing. Rank 2 stops computing too if GATE's directory goes away. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void slow_compute(const char *go, const char *dir)
{
	for (unsigned long i = 0;; i++) {
		sink += i * i;
		if (!(i & 0xfffff) && (access(go, F_OK) == 0 || access(dir, F_OK)))
			return;
	}
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	printf("ready %d %d\n", rank, (int)getpid());
	fflush(stdout);
	char go[4096];
	snprintf(go, sizeof(go), "%s.go", argc > 1 ? argv[1] : "gate");
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", go);
	char *slash = strrchr(dir, '/');
	snprintf(slash ? slash + 1 : dir, 2, ".");
	if (rank == 2)
		slow_compute(go, dir);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	return 0;
}
