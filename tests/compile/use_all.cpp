// Every public macro and function of weft.h, used from C++: in a function, a template, a
// lambda, a class method and a constructor, and two macros on one line. Built by
// tests/compile/CMakeLists.txt for each C++ standard with g++ and clang++ (warnings are errors),
// and run by test_compile.py, which checks the slices and arguments it records.
#include <weft.h>
#include <cstdio>
#include <string>

template <typename T> static T twice(T v)
{
	WEFT_FUNC();
	WEFT_SCOPE("twice body", WEFT_I("size", sizeof(T)), WEFT_D("v", static_cast<double>(v)));
	return v + v;
}

struct widget {
	int n;
	explicit widget(int k) : n(k) { WEFT_SCOPE("widget()", WEFT_I("k", k)); }
	int run() const
	{
		WEFT_FUNC();
		WEFT_INSTANT("ran", WEFT_B("odd", n & 1), WEFT_S("who", "widget"), WEFT_P("self", this));
		return n;
	}
};

int main()
{
	WEFT_SCOPE("main");
	int total = 0;
	for (int i = 0; i < 3; i++) {
		WEFT_SCOPE("a", WEFT_U("i", i)); WEFT_SCOPE("b"); // two macros on one line
		total += twice(i) + static_cast<int>(twice(0.5 * i));
		WEFT_COUNTER("total", total); WEFT_COUNTER_F("half", total / 2.0);
	}
	auto lam = [&](int k) {
		WEFT_SCOPE("lambda", WEFT_I("k", k));
		return widget(k).run();
	};
	total += lam(7);
	WEFT_COUNTER_UNIT("bytes", "bytes", 4096);
	WEFT_COUNTER_F_UNIT("load", "count", 0.25);
	WEFT_RATE("rate", 1);
	WEFT_BEGIN("explicit", WEFT_I("x", 1));
	WEFT_END("explicit");
	WEFT_BEGIN_C("cat", "explicit c");
	WEFT_END_C("cat", "explicit c");
	WEFT_SCOPE_C("cat", "scope c");
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
	struct weft_stats st;
	st.sz = sizeof(st);
	int rc = weft_stats_get(&st);
	std::string dir = weft_output_dir() ? weft_output_dir() : "(none)";
	(void)weft_option_set("categories", "*");
	(void)weft_configure("filter=*");
	(void)weft_strerror(-22);
	weft_set_log(nullptr, nullptr);
	(void)weft_start();
	std::printf("%d %d\n", total, rc);
	return weft_stop();
}
