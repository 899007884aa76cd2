/* features - one deterministic run through every kind of event weft records, for the
 * integration tests (tests/integration/test_features.py holds the expected trace):
 *   main thread: slice "outer" { "inner" (all six argument types), instant "mark" },
 *   explicit begin/end "explicit", an end with no begin ("orphan"), a slice left open
 *   ("left open"), "unwind" { "skipped" } closed by the outer end (like a longjmp),
 *   a complete slice "given" of exactly 1 ms, categories "alpha"/"beta"/"debug",
 *   counters (int "items", double "load" with unit "ns"), an async slice "job" begun here
 *   and ended on a second thread, a flow from "producer" (main) to "consumer" (thread),
 *   a named track "lane" used from both threads, and a forked child with slice "child work"
 *   (not under TSan, which cannot follow threads created in a forked child: the TSan test
 *   run sets WEFT_TEST_NO_FORK=1).
 */
#include <weft.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned lane;

static void *second(void *arg)
{
	(void)arg;
	weft_thread_name("second");
	{
		WEFT_SCOPE("consumer");
		weft_flow_in(42);
	}
	WEFT_ASYNC_END("job", 7);
	{
		WEFT_SCOPE_ON(lane, "lane work", WEFT_I("who", 2));
	}
	return NULL;
}

int main(void)
{
	weft_process_name("features");
	weft_thread_name("main");
	lane = weft_track("lane");
	{
		WEFT_SCOPE("outer");
		{
			WEFT_SCOPE("inner", WEFT_I("i", -5), WEFT_U("u", 7), WEFT_D("d", 2.5),
				   WEFT_B("b", 1), WEFT_S("s", "hello \"weft\""), WEFT_P("p", (void *)0x1234));
		}
		WEFT_INSTANT("mark");
	}
	WEFT_BEGIN("explicit");
	WEFT_END("explicit");
	WEFT_END("orphan");
	WEFT_BEGIN("unwind");
	WEFT_BEGIN("skipped");
	WEFT_END("unwind");
	uint64_t t0 = weft_now_ns();
	while (weft_now_ns() < t0 + 1000000) /* the given range lies in the past: it nests */
		;
	WEFT_COMPLETE("given", t0, t0 + 1000000);
	WEFT_INSTANT_C("alpha", "in alpha");
	WEFT_INSTANT_C("beta", "in beta");
	WEFT_INSTANT_C("debug", "in debug");
	WEFT_COUNTER("items", 3);
	WEFT_COUNTER("items", -4);
	WEFT_COUNTER_F_UNIT("load", "ns", 0.25);
	WEFT_ASYNC_BEGIN("job", 7);
	{
		WEFT_SCOPE("producer");
		weft_flow_out(42);
	}
	{
		WEFT_SCOPE_ON(lane, "lane work", WEFT_I("who", 1));
	}
	pthread_t th;
	pthread_create(&th, NULL, second, NULL);
	pthread_join(th, NULL);
	fflush(stdout);
	if (!getenv("WEFT_TEST_NO_FORK")) {
		pid_t pid = fork();
		if (pid == 0) {
			{
				WEFT_SCOPE("child work");
			}
			exit(0);
		}
		int status;
		waitpid(pid, &status, 0);
	}
	WEFT_BEGIN("left open");
	return 0;
}
