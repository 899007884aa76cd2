/* stress THREADS EVENTS [PAUSE_US [MODE]]: every thread emits EVENTS instants as fast as it
 * can (or pausing PAUSE_US after every 1000), then prints "emitted N written W dropped D" so a
 * test can check written + dropped == emitted. MODE "heap": each event is a weft_heap_alloc or
 * weft_heap_free on a named heap instead; "malloc": a malloc or free (recorded by weft record
 * --memory; the runtime also sees libc's own allocations, so it counts a few more). */
#include <weft.h>
#include <pthread.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long per_thread;
static int pause_us;
static int mode; /* 0 instants, 1 heap API, 2 malloc */
static weft_heap_t *heap;
__thread void *volatile stress_sink; /* per thread (TSan: the workers all store to it) */

static void *run(void *arg)
{
	uintptr_t base = (uintptr_t)arg << 32;
	void *block = NULL;
	for (long i = 0; i < per_thread; i++) {
		if (mode == 0) {
			WEFT_INSTANT("tick");
		} else if (mode == 1) {
			void *p = (void *)(base + (uintptr_t)(i / 2) * 16);
			if (i % 2 == 0)
				weft_heap_alloc(heap, p, 16);
			else
				weft_heap_free(heap, p);
		} else if (i % 2 == 0) {
			stress_sink = block = malloc(16);
		} else {
			free(block);
		}
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
	mode = argc > 4 ? (!strcmp(argv[4], "heap") ? 1 : !strcmp(argv[4], "malloc") ? 2 : 0) : 0;
	if (mode == 2)
		per_thread &= ~1L; /* whole malloc/free pairs */
	if (mode == 1)
		heap = weft_heap("stress");
	pthread_t th[64];
	for (int i = 0; i < n && i < 64; i++)
		pthread_create(&th[i], NULL, run, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < n && i < 64; i++)
		pthread_join(th[i], NULL);
	weft_stop();
	struct weft_stats st = {.sz = sizeof(st)};
	weft_stats_get(&st);
	printf("emitted %ld written %llu dropped %llu\n", (long)n * per_thread,
	       (unsigned long long)st.events, (unsigned long long)st.dropped);
	return 0;
}
