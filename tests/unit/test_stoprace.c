/* weft_stop() against a thread that fills its chunk in the window between the run turning
 * STOPPED and the stop's flush reaching that thread (the window is held open by the internal
 * before_stop hook): the thread's full chunk must still be written, and every event it emits
 * is written, dropped or counted after_stop. This is the race that once lost one whole chunk
 * (~52k events) uncounted in tests/integration/test_stop.py under TSan. */
#include "reexec.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include <weft.h>
#include "lib/internal.h"

#define CHUNK (64 * 1024)

static _Atomic int phase; /* 0 warm-up, 1 go (inside the stop window), 2 done */
static _Atomic unsigned long emitted;

static void tick(void) /* one call site, registered (ON) during the warm-up */
{
	WEFT_INSTANT("tick");
	atomic_fetch_add(&emitted, 1);
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 100; i++)
		tick();
	atomic_store(&phase, 0);
	while (atomic_load(&phase) != 1)
		;
	/* sites are still ON (the registry is re-evaluated after the hook): these fill the rest
	 * of the chunk and then cross into the slow path with the run already stopped */
	for (int i = 0; i < 2 * CHUNK / 16; i++)
		tick();
	atomic_store(&phase, 2);
	return NULL;
}

static void hold_window(void)
{
	atomic_store(&phase, 1);
	while (atomic_load(&phase) != 2)
		;
}

static void stop_window(void **s)
{
	(void)s;
	atomic_store(&phase, -1);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, worker, NULL), 0);
	while (atomic_load(&phase) != 0)
		;
	weft_g.before_stop = hold_window;
	weft_stop();
	pthread_join(th, NULL);
	struct weft_stats st = {.sz = sizeof(st)};
	assert_int_equal(weft_stats_get(&st), 0);
	assert_int_equal(st.events + st.dropped + st.after_stop, atomic_load(&emitted));
	/* nothing was dropped (64 MiB of buffer): the full chunk reached the disk */
	assert_int_equal(st.dropped, 0);
	assert_true(st.events >= CHUNK / 16 - 2);
}

/* The options are read when the library loads: set them, in a fresh directory, and start
 * over; the directory is removed after the run. */
int main(int argc, char **argv)
{
	(void)argc;
	const char *dir = getenv("WEFT_STOPRACE_DIR");
	if (!dir) {
		static char tmp[] = "/tmp/weft-stoprace-XXXXXX";
		if (!mkdtemp(tmp))
			return 1;
		char opts[256];
		snprintf(opts, sizeof(opts), "output=%s/t.data:chunk_size=64K:buffer_size=64M", tmp);
		setenv("WEFT_OPTIONS", opts, 1);
		setenv("WEFT_STOPRACE_DIR", tmp, 1);
		return weft_test_reexec(argv, tmp);
	}
	const struct CMUnitTest tests[] = {cmocka_unit_test(stop_window)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
