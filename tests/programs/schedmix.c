/* schedmix: four threads whose scheduling is known, each inside one weft slice (test_sched.py):
 *   sleeper   sleeps 50 ms            (slice "sleep": state S for most of it)
 *   spinner   spins 50 ms of wall time (slice "spin": Running for most of it)
 *   contend1/2  take one mutex in turn, 4 times each, holding it 10 ms asleep (slice
 *             "contend": S while the other holds it, R when woken)
 * Threads are named with weft_thread_name and pthread_setname_np (the kernel's comm). */
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "weft.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void name(const char *n)
{
	weft_thread_name(n);
	pthread_setname_np(pthread_self(), n);
}

static void *sleeper(void *a)
{
	(void)a;
	name("sleeper");
	WEFT_SCOPE("sleep");
	struct timespec d = {0, 50 * 1000000L};
	while (nanosleep(&d, &d))
		;
	return NULL;
}

static void *spinner(void *a)
{
	(void)a;
	name("spinner");
	WEFT_SCOPE("spin");
	volatile unsigned long n = 0;
	double end = now() + 0.050;
	while (now() < end)
		for (int i = 0; i < 1000; i++)
			n++;
	return NULL;
}

static void *contender(void *a)
{
	name(a);
	WEFT_SCOPE("contend");
	for (int i = 0; i < 4; i++) {
		pthread_mutex_lock(&mu);
		struct timespec d = {0, 10 * 1000000L};
		while (nanosleep(&d, &d))
			;
		pthread_mutex_unlock(&mu);
		sched_yield();
	}
	return NULL;
}

int main(void)
{
	weft_process_name("schedmix");
	pthread_t t[4];
	pthread_create(&t[0], NULL, sleeper, NULL);
	pthread_create(&t[1], NULL, spinner, NULL);
	pthread_create(&t[2], NULL, contender, "contend1");
	pthread_create(&t[3], NULL, contender, "contend2");
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	printf("schedmix done\n");
	return 0;
}
