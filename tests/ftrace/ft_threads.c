/* Threads: 3 workers, each work() x500, each work() calling leaf() twice. */
#include <pthread.h>
#define NI __attribute__((noinline))
static __thread volatile long sink; /* each thread's: no race for TSan to see */
NI void leaf(long i) { sink += i; }
NI void work(long i) { leaf(i); leaf(-i); }
NI void *worker(void *arg)
{
	(void)arg;
	for (long i = 0; i < 500; i++)
		work(i);
	return 0;
}
int main(void)
{
	pthread_t th[3];
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], 0, worker, 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], 0);
	return 0;
}
