/* Every public macro and function of weft.h, used from C, with two macros on one line.
 * Compiled by test_compile.py with gcc and clang for several C standards (warnings are
 * errors), linked with and without -DWEFT_DISABLE (then without -lweft), and built with
 * -finstrument-functions to check that weft's own inline helpers are not instrumented. */
#include <weft.h>
#include <stdio.h>

static int work(int n)
{
	WEFT_FUNC();
	WEFT_SCOPE("work body", WEFT_I("n", n), WEFT_U("u", (unsigned)n), WEFT_D("d", n / 2.0),
		   WEFT_B("odd", n & 1), WEFT_S("s", "text"), WEFT_P("p", &n));
	WEFT_INSTANT("tick", WEFT_I("n", n)); WEFT_COUNTER("n", n);
	return n * 2;
}

int main(void)
{
	WEFT_SCOPE("main");
	int total = 0;
	for (int i = 0; i < 3; i++) {
		WEFT_SCOPE("a", WEFT_I("i", i)); WEFT_SCOPE("b");
		total += work(i);
	}
	WEFT_COUNTER_F("half", total / 2.0);
	WEFT_COUNTER_UNIT("bytes", "bytes", 4096);
	WEFT_COUNTER_F_UNIT("load", "count", 0.25);
	WEFT_RATE("rate", 1);
	WEFT_BEGIN("explicit", WEFT_I("x", 1));
	WEFT_END("explicit");
	WEFT_BEGIN_C("cat", "explicit c");
	WEFT_END_C("cat", "explicit c");
	{
		WEFT_SCOPE_C("cat", "scope c");
	}
	uint64_t t0 = weft_now_ns();
	WEFT_COMPLETE("complete", t0, t0 + 10);
	WEFT_INSTANT_C("cat", "instant c");
	unsigned tr = weft_track("track one");
	{
		WEFT_SCOPE_ON(tr, "on track", WEFT_I("t", tr));
		WEFT_INSTANT_ON(tr, "instant on track");
	}
	WEFT_BEGIN_ON(tr, "begin on track");
	WEFT_END_ON(tr, "begin on track");
	WEFT_ASYNC_BEGIN("async", 42);
	weft_flow_out(9);
	WEFT_ASYNC_END("async", 42);
	weft_flow_in(9);
	weft_heap_t *heap = weft_heap("pool");
	static char pool[64];
	weft_heap_alloc(heap, pool, sizeof(pool));
	weft_heap_usage(heap, sizeof(pool), 0, sizeof(pool));
	weft_heap_free(heap, pool);
	weft_process_name("use_all");
	weft_note("a note on the recording");
	weft_thread_name("main thread");
	weft_flush();
	struct weft_stats st = {sizeof(st), 0, 0, 0, 0, 0, 0};
	int rc = weft_stats_get(&st);
	const char *dir = weft_output_dir();
	(void)dir;
	(void)weft_option_set("categories", "*");
	(void)weft_configure("filter=*");
	(void)weft_strerror(-22);
	(void)weft_start();
	printf("%d %d %llu\n", total, rc, (unsigned long long)st.events);
	return weft_stop();
}
