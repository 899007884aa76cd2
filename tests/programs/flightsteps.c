/* flightsteps MODE [ARGS]: programs for the flight recorder's tests (test_flight.py).
 *   steps STEPS INSTANTS SLOW SNAPS  one `run` slice around STEPS `step` slices of INSTANTS
 *                                    instants each; step SLOW sleeps 30 ms inside a `slow`
 *                                    slice, and weft_snapshot() follows it; SNAPS > 1: another
 *                                    snapshot every 1000 steps after it, SNAPS in all
 *   threads N STEPS                  N threads of `work` slices inside `worker` slices, main
 *                                    inside `run`; a snapshot once all ran STEPS steps
 *   fork STEPS                       steps in the parent and in a fork child, each with its own
 *                                    snapshot after its steps
 *   memory EVENTS                    EVENTS instants in a tight loop, then prints the peak RSS
 *                                    (VmHWM) in KiB
 *   counter STEPS                    a counter set at step 0 only, then STEPS steps; a snapshot
 *   crash STEPS                      STEPS steps inside `run`, then a segmentation fault
 *   quickexit STEPS                  STEPS steps inside `run`, then _exit(3)
 *   snaploop N                       one `run` slice of steps, a weft_snapshot() after every N
 *                                    steps for ever (prints "ready" after the first): a signal
 *                                    sent to it lands inside a snapshot most of the time
 *   spin N                           N threads besides main, each inside `run` doing `step`
 *                                    slices of 20 instants for ever (more than any writer keeps
 *                                    up with); prints "ready TID TID ..." (main first) once each
 *                                    thread did 1000 steps, and waits for a signal to end it
 *   deep N                           one `run` slice around N trees of `lvl` slices (args id, d),
 *                                    up to 12 deep, shaped by a fixed pseudo-random sequence,
 *                                    with `leaf` instants; some levels setjmp, and some leaves
 *                                    longjmp to the nearest of them (discarding the levels in
 *                                    between): every run records the same slices, each id once
 * Prints the return value of each weft_snapshot() as "snapshot N". */
#include <weft.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void steps(long from, long to, int instants, long slow)
{
	for (long i = from; i < to; i++) {
		WEFT_SCOPE("step", WEFT_I("i", i));
		for (int j = 0; j < instants; j++)
			WEFT_INSTANT("tick", WEFT_I("j", i * 1000 + j));
		if (i == slow) {
			WEFT_SCOPE("slow");
			usleep(30000);
		}
	}
}

static void snap(const char *why)
{
	printf("snapshot %d\n", weft_snapshot(why));
	fflush(stdout);
}

static long ids;
static unsigned rng = 12345;

static unsigned next_rand(void)
{
	rng = rng * 1103515245u + 12345u;
	return (rng >> 16) & 0x7fff;
}

/* One level of a tree: its slice, then a leaf, or 1-3 children (a longjmp from below may end
 * it early: then the levels between are discarded, and this one returns). */
static void node(int depth, jmp_buf *catcher)
{
	WEFT_SCOPE("lvl", WEFT_I("id", ++ids), WEFT_I("d", depth));
	unsigned r = next_rand();
	if (depth == 12 || r % 7 == 0) {
		WEFT_INSTANT("leaf", WEFT_I("id", ++ids));
		if (catcher && r % 5 == 0)
			longjmp(*catcher, 1);
		return;
	}
	jmp_buf here;
	jmp_buf *volatile c = catcher;
	if (r % 3 == 0) {
		if (setjmp(here))
			return;
		c = &here;
	}
	for (unsigned k = 0; k <= r % 3; k++)
		node(depth + 1, c);
}

static long nsteps;
static pthread_barrier_t bar;

static void *worker(void *arg)
{
	(void)arg;
	WEFT_BEGIN("worker");
	for (long i = 0; i < nsteps; i++) {
		WEFT_SCOPE("work", WEFT_I("i", i));
		for (int j = 0; j < 20; j++)
			WEFT_INSTANT("w");
	}
	pthread_barrier_wait(&bar); /* main snapshots */
	pthread_barrier_wait(&bar);
	WEFT_END("worker");
	return NULL;
}

static pthread_barrier_t spun;
static long spin_tids[65];
static int spin_n;

/* Thread k's loop (0: main, which says "ready" once every thread did 1000 steps). */
static void *spinner(void *arg)
{
	long k = (long)arg;
	spin_tids[k] = gettid();
	WEFT_BEGIN("run");
	for (long i = 0;; i++) {
		WEFT_SCOPE("step", WEFT_I("i", i));
		for (int j = 0; j < 20; j++)
			WEFT_INSTANT("tick", WEFT_I("j", j));
		if (i != 1000)
			continue;
		pthread_barrier_wait(&spun);
		if (k)
			continue;
		printf("ready");
		for (int t = 0; t <= spin_n; t++)
			printf(" %ld", spin_tids[t]);
		printf("\n");
		fflush(stdout);
	}
	return NULL;
}

static void spin(int n)
{
	pthread_t th;
	spin_n = n > 64 ? 64 : n;
	pthread_barrier_init(&spun, NULL, (unsigned)spin_n + 1);
	for (long i = 1; i <= spin_n; i++)
		pthread_create(&th, NULL, spinner, (void *)i);
	spinner(NULL);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *mode = argv[1];
	if (!strcmp(mode, "steps") && argc >= 6) {
		long n = atol(argv[2]), slow = atol(argv[4]);
		int inst = atoi(argv[3]), snaps = atoi(argv[5]);
		WEFT_BEGIN("run");
		steps(0, slow + 1, inst, slow);
		snap("after the slow step");
		long at = slow + 1;
		for (int k = 1; k < snaps; k++) {
			steps(at, at + 1000, inst, -1);
			at += 1000;
			snap("again");
		}
		steps(at, n, inst, -1);
		WEFT_END("run");
	} else if (!strcmp(mode, "snaploop")) {
		long every = atol(argv[2]), at = 0;
		WEFT_BEGIN("run");
		for (int k = 0;; k++) {
			steps(at, at + every, 1, -1);
			at += every;
			weft_snapshot("loop");
			if (!k) {
				printf("ready\n");
				fflush(stdout);
			}
		}
	} else if (!strcmp(mode, "deep")) {
		long n = atol(argv[2]);
		WEFT_BEGIN("run");
		for (long i = 0; i < n; i++)
			node(0, NULL);
		WEFT_END("run");
	} else if (!strcmp(mode, "spin")) {
		spin(atoi(argv[2]));
	} else if (!strcmp(mode, "threads") && argc >= 4) {
		int n = atoi(argv[2]);
		nsteps = atol(argv[3]);
		pthread_t th[64];
		pthread_barrier_init(&bar, NULL, (unsigned)n + 1);
		WEFT_BEGIN("run");
		for (int i = 0; i < n && i < 64; i++)
			pthread_create(&th[i], NULL, worker, NULL);
		pthread_barrier_wait(&bar);
		snap("threads");
		pthread_barrier_wait(&bar);
		for (int i = 0; i < n && i < 64; i++)
			pthread_join(th[i], NULL);
		WEFT_END("run");
	} else if (!strcmp(mode, "fork")) {
		long n = atol(argv[2]);
		WEFT_BEGIN("run");
		steps(0, n, 50, -1);
		fflush(stdout);
		pid_t p = fork();
		if (p == 0) {
			WEFT_BEGIN("child");
			steps(0, n, 50, -1);
			snap("child");
			WEFT_END("child");
			_exit(0);
		}
		int st;
		waitpid(p, &st, 0);
		steps(n, 2 * n, 50, -1);
		snap("parent");
		WEFT_END("run");
	} else if (!strcmp(mode, "memory")) {
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			WEFT_INSTANT("m");
		weft_flush();
		FILE *f = fopen("/proc/self/status", "r");
		char line[256];
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "VmHWM:", 6))
				printf("hwm %ld\n", atol(line + 6));
		if (f)
			fclose(f);
	} else if (!strcmp(mode, "crash")) {
		long n = atol(argv[2]);
		WEFT_BEGIN("run");
		steps(0, n, 50, -1);
		volatile int *volatile bad = NULL;
		*bad = 1;
	} else if (!strcmp(mode, "quickexit")) {
		WEFT_BEGIN("run");
		steps(0, atol(argv[2]), 50, -1);
		_exit(3);
	} else if (!strcmp(mode, "counter")) {
		long n = atol(argv[2]);
		WEFT_COUNTER("level", 42);
		WEFT_BEGIN("run");
		steps(0, n, 50, -1);
		snap("counter");
		WEFT_END("run");
	} else {
		return 2;
	}
	return 0;
}
