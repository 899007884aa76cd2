/* Threads: 3 workers, each work() x500 (or argv[1] times), each work() calling leaf() twice. */
#include <pthread.h>
#include <stdlib.h>
#define NI __attribute__((noinline))
static __thread volatile long sink; /* each thread's: no race for TSan to see */
NI void leaf(long i) { sink += i; }
NI void work(long i) { leaf(i); leaf(-i); }
static long rounds = 500;
NI void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < rounds; i++)
		work(i);
	return 0;
}
int main(int argc, char **argv)
{
	pthread_t th[3];
	if (argc > 1)
		rounds = atol(argv[1]);
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], 0, worker, 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], 0);
	return 0;
}
