/* watched.c - known writes and reads of two globals, for hardware watchpoints (weft record
 * --watch): watched_counter (8 bytes) is written MAIN_WRITES times by the main thread and
 * THREAD_WRITES times by a second thread; watched_flag (4 bytes) is read FLAG_READS times and
 * written FLAG_WRITES times by the main thread after the join. Nothing else touches them (both
 * start zeroed in .bss). Prints each thread's tid and both addresses:
 *   main TID COUNTER_ADDR FLAG_ADDR
 *   thread TID
 * Built with -finstrument-functions, so both threads are in the trace. */
#include <pthread.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAIN_WRITES 10
#define THREAD_WRITES 7
#define FLAG_READS 5
#define FLAG_WRITES 3

volatile long watched_counter;
volatile int watched_flag;
static long thread_tid;
volatile long sink;

__attribute__((noinline)) static void *second(void *arg)
{
	(void)arg;
	thread_tid = (long)syscall(SYS_gettid);
	for (long i = 0; i < THREAD_WRITES; i++)
		watched_counter = 1000 + i; /* one store each (volatile) */
	return NULL;
}

int main(void)
{
	for (long i = 0; i < MAIN_WRITES; i++)
		watched_counter = i;
	pthread_t t;
	if (pthread_create(&t, NULL, second, NULL) || pthread_join(t, NULL))
		return 1;
	for (int i = 0; i < FLAG_READS; i++)
		sink += watched_flag; /* one load each */
	for (int i = 0; i < FLAG_WRITES; i++)
		watched_flag = i;
	printf("main %ld %p %p\nthread %ld\n", (long)syscall(SYS_gettid), (void *)&watched_counter,
	       (void *)&watched_flag, thread_tid);
	return 0;
}
