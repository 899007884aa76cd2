/* stress THREADS EVENTS [PAUSE_US]: every thread emits EVENTS instants as fast as it can
 * (or pausing PAUSE_US after every 1000), then prints "emitted N written W dropped D" so a
 * test can check written + dropped == emitted. */
#include <weft.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long per_thread;
static int pause_us;

static void *run(void *arg)
{
	(void)arg;
	for (long i = 0; i < per_thread; i++) {
		WEFT_INSTANT("tick");
		if (pause_us && i % 1000 == 999)
			usleep((useconds_t)pause_us);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	per_thread = argc > 2 ? atol(argv[2]) : 1000000;
	pause_us = argc > 3 ? atoi(argv[3]) : 0;
	pthread_t th[64];
	for (int i = 0; i < n && i < 64; i++)
		pthread_create(&th[i], NULL, run, NULL);
	for (int i = 0; i < n && i < 64; i++)
		pthread_join(th[i], NULL);
	weft_stop();
	struct weft_stats st = {.sz = sizeof(st)};
	weft_stats_get(&st);
	printf("emitted %ld written %llu dropped %llu\n", (long)n * per_thread,
	       (unsigned long long)st.events, (unsigned long long)st.dropped);
	return 0;
}
