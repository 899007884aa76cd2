/* asyncflow N: N requests, each an async slice whose begin sends an arrow to a "handle" slice
 * on a worker thread, which sends one on to a "receive" slice; plus a plain slice-to-slice
 * arrow per request. Checks that every converter keeps arrows with an async end. */
#include <weft.h>
#include <pthread.h>
#include <stdlib.h>

static int n;

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < n; i++) {
		WEFT_SCOPE("handle");
		weft_flow_in(1000 + (uint64_t)i);
		weft_flow_out(5000 + (uint64_t)i);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	n = argc > 1 ? atoi(argv[1]) : 100;
	for (int i = 0; i < n; i++) {
		WEFT_ASYNC_BEGIN("request", i);
		weft_flow_out(1000 + (uint64_t)i);
		{
			WEFT_SCOPE("send");
			weft_flow_out(9000 + (uint64_t)i);
		}
	}
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	pthread_join(th, NULL);
	for (int i = 0; i < n; i++) {
		WEFT_SCOPE("receive");
		weft_flow_in(9000 + (uint64_t)i);
		weft_flow_in(5000 + (uint64_t)i);
		WEFT_ASYNC_END("request", i);
	}
	return 0;
}
