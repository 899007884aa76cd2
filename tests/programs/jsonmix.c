/* jsonmix ROUNDS PLAIN: long runs of plain slices with, every round, the events that the JSON
 * writer's first pass must see wherever they fall (tests/integration/test_json_jobs.py): on
 * two threads, ROUNDS rounds of PLAIN "plain" slices on the thread's own track, then a slice
 * on a named track, an instant on another track, a complete slice, and an async slice begun
 * with an arrow to a "handle" slice (ended in the next round); recorded with small buffers,
 * most chunks hold plain slices only. */
#include <weft.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

static int rounds, plain;

static void *run(void *arg)
{
	uint64_t base = (uintptr_t)arg;
	unsigned lane = weft_track("lane"), marks = weft_track("marks");
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < plain; i++) {
			WEFT_SCOPE("plain");
		}
		{
			WEFT_SCOPE_ON(lane, "on lane");
		}
		WEFT_INSTANT_ON(marks, "mark");
		uint64_t t0 = weft_now_ns();
		WEFT_COMPLETE("given", t0, t0 + 1);
		if (r)
			WEFT_ASYNC_END("request", base + (uint64_t)r - 1);
		WEFT_ASYNC_BEGIN("request", base + (uint64_t)r);
		weft_flow_out(base + (uint64_t)r);
		{
			WEFT_SCOPE("handle");
			weft_flow_in(base + (uint64_t)r);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	rounds = argc > 1 ? atoi(argv[1]) : 20;
	plain = argc > 2 ? atoi(argv[2]) : 2000;
	pthread_t th;
	pthread_create(&th, NULL, run, (void *)(uintptr_t)1000000);
	run((void *)(uintptr_t)0);
	pthread_join(th, NULL);
	return 0;
}
