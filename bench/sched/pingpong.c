/* pingpong [N]: two threads pass one byte back and forth through two pipes N times (default
 * 200000): about 2N context switches and wakeups, the worst case for scheduling tracing.
 * Prints the wall time (bench/sched/run.sh compares weft record --sched, perf sched record
 * and no tracing, interleaved). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int ab[2], ba[2];
static long n = 200000;

static void *pong(void *a)
{
	(void)a;
	char c;
	for (long i = 0; i < n; i++)
		if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
			break;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc > 1)
		n = atol(argv[1]);
	if (pipe(ab) || pipe(ba))
		return 1;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pthread_t t;
	pthread_create(&t, NULL, pong, NULL);
	char c = 'x';
	for (long i = 0; i < n; i++)
		if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
			break;
	pthread_join(t, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.4f\n", (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
