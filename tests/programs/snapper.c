/* snapper: snapshot requests of every kind, for tests/integration/test_triggers.py.
 *   snapper api N REASON   weft_snapshot(REASON) N times; prints each return value
 *   snapper slices         run { slowish (no time), other (sleeps 50 ms), slow_a (sleeps 200 ms),
 *                          slow_b (no time), a WEFT_BEGIN/END slow_c (200 ms) on a thread }
 *   snapper wait FILE [own]  prints "ready", waits (a USR1 handler of its own counts; with own
 *                          a USR2 one too, and "got usr2" once it ran) until FILE exists,
 *                          prints "done usr1=N usr2=M", exits 3
 *   snapper segv | abort   crashes after a slice
 *   snapper nothing        one slice, exits 0
 *   snapper mksnap SRC DST...  at exit, copies the trace directory SRC into each DST
 *                          (snapshot-like directories for weft record's conversion) */
#include <weft.h>
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static volatile sig_atomic_t usr1, usr2;
static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}
static void on_usr2(int sig)
{
	(void)sig;
	usr2++;
}

static void *slow_c(void *arg)
{
	(void)arg;
	WEFT_BEGIN("slow_c");
	sleep_ms(200);
	WEFT_END("slow_c");
	return NULL;
}

static const char *mk_src;
static char **mk_dst;
static int mk_n;
static void mksnap(void)
{
	weft_stop(); /* the trace complete before it is copied */
	for (int i = 0; i < mk_n; i++) {
		char cmd[4096];
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp '%s'/*.wmeta '%s'/*.wevents '%s'/", mk_dst[i], mk_src, mk_src,
			 mk_dst[i]);
		if (system(cmd))
			fprintf(stderr, "snapper: cannot copy %s\n", mk_src);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "nothing";
	if (!strcmp(mode, "api") && argc > 3) {
		int n = atoi(argv[2]);
		for (int i = 0; i < n; i++)
			printf("%d\n", weft_snapshot(argv[3]));
		return 0;
	}
	if (!strcmp(mode, "slices")) {
		WEFT_SCOPE("run");
		{
			WEFT_SCOPE("slowish");
		}
		{
			WEFT_SCOPE("other");
			sleep_ms(50);
		}
		{
			WEFT_SCOPE("slow_a");
			sleep_ms(200);
		}
		{
			WEFT_SCOPE("slow_b");
		}
		pthread_t t;
		pthread_create(&t, NULL, slow_c, NULL);
		pthread_join(t, NULL);
		printf("slices done\n");
		return 0;
	}
	if (!strcmp(mode, "wait") && argc > 2) {
		int own = argc > 3 && !strcmp(argv[3], "own"); /* a USR2 handler of its own too */
		signal(SIGUSR1, on_usr1);
		if (own)
			signal(SIGUSR2, on_usr2);
		printf("ready\n");
		fflush(stdout);
		int said = 0;
		while (access(argv[2], F_OK)) {
			if (usr2 && !said) {
				printf("got usr2\n");
				fflush(stdout);
				said = 1;
			}
			sleep_ms(5);
		}
		printf("done usr1=%d usr2=%d\n", (int)usr1, (int)usr2);
		return 3;
	}
	if (!strcmp(mode, "segv") || !strcmp(mode, "abort")) {
		{
			WEFT_SCOPE("before");
		}
		if (mode[0] == 'a')
			abort();
		*(volatile int *)(uintptr_t)0 = 1;
		return 0;
	}
	if (!strcmp(mode, "mksnap") && argc > 3) {
		mk_src = argv[2];
		mk_dst = argv + 3;
		mk_n = argc - 3;
		atexit(mksnap);
	}
	WEFT_SCOPE("main");
	return 0;
}
