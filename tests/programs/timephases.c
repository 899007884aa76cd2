/* timephases STEPS INSTANTS SLEEP_US: known phases for the time-window tests (test_time_window.py):
 * the main thread runs one `run` slice holding STEPS `step` slices (argument i), each holding a
 * `compute` slice with INSTANTS `tick` instants and a `progress` counter set to the step, then a
 * sleep of SLEEP_US. A worker thread holds one `wait` slice from before the first step to after
 * the last, with no event inside it, and does a `job` slice every 8 steps. */
#include <weft.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static atomic_int step_now = -1, done;

static void *worker(void *arg)
{
	(void)arg;
	weft_thread_name("worker");
	WEFT_BEGIN("wait");
	while (atomic_load(&step_now) < 0)
		usleep(100);
	WEFT_END("wait");
	int last = -1;
	while (!atomic_load(&done)) {
		int s = atomic_load(&step_now);
		if (s / 8 != last / 8) {
			WEFT_BEGIN("job", WEFT_I("n", s / 8));
			usleep(200);
			WEFT_END("job");
			last = s;
		}
		usleep(100);
	}
	WEFT_BEGIN("linger"); /* open across the window: begins during the run, ends after it */
	usleep(1000);
	WEFT_END("linger");
	return NULL;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 300, instants = argc > 2 ? atoi(argv[2]) : 40;
	int sleep_us = argc > 3 ? atoi(argv[3]) : 1000;
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	usleep(2000);
	WEFT_BEGIN("run");
	for (int i = 0; i < steps; i++) {
		WEFT_BEGIN("step", WEFT_I("i", i));
		atomic_store(&step_now, i);
		WEFT_BEGIN("compute");
		for (int k = 0; k < instants; k++)
			WEFT_INSTANT("tick", WEFT_I("k", k));
		WEFT_COUNTER("progress", i);
		WEFT_END("compute");
		usleep((useconds_t)sleep_us);
		WEFT_END("step");
	}
	WEFT_END("run");
	atomic_store(&done, 1);
	pthread_join(th, NULL);
	return 0;
}
