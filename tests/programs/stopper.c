/* stopper THREADS: THREADS threads emit instants, a counter and a scope in a loop; main calls
 * weft_stop() while they run, lets every thread emit 4000 more events, joins them and prints
 * "emitted E events D dropped A after_stop" from its own count and weft_stats_get(), so the test
 * can check written + dropped + after_stop == emitted (nothing lost uncounted across a stop). */
#include <weft.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

static _Atomic int stopped;
struct worker {
	pthread_t th;
	_Atomic unsigned long emitted;
	unsigned long after;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	unsigned long after = 0;
	for (;;) {
		int s = atomic_load(&stopped);
		if (s && after >= 4000)
			break;
		WEFT_INSTANT("tick");
		WEFT_COUNTER("n", (int64_t)w->emitted);
		{
			WEFT_SCOPE("c"); /* two events: its begin and its end */
		}
		atomic_fetch_add(&w->emitted, 4);
		if (s)
			after += 4;
	}
	w->after = after;
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	struct worker *ws = calloc((size_t)n, sizeof(*ws));
	for (int i = 0; i < n; i++)
		pthread_create(&ws[i].th, NULL, work, &ws[i]);
	for (int i = 0; i < n; i++) /* every thread well under way */
		while (atomic_load(&ws[i].emitted) < 20000)
			;
	weft_stop();
	atomic_store(&stopped, 1);
	unsigned long total = 0;
	for (int i = 0; i < n; i++) {
		pthread_join(ws[i].th, NULL);
		total += atomic_load(&ws[i].emitted);
	}
	struct weft_stats st = {.sz = sizeof(st)};
	weft_stats_get(&st);
	printf("emitted %lu events %llu dropped %llu after_stop %llu\n", total, (unsigned long long)st.events,
	       (unsigned long long)st.dropped, (unsigned long long)st.after_stop);
	free(ws);
	return 0;
}
