/* sigalloc.c N [calls] - allocations in a signal handler that interrupts the program's own,
 * for tests/integration/test_signals.py. main makes N malloc(32)/free pairs while a timer's
 * SIGALRM handler (every 50 us) makes a malloc(1000)/free pair each time it runs (a size
 * glibc serves from the thread's cache, without a lock, once main has freed one: malloc is
 * not async-signal-safe, and a handler that took the arena lock could deadlock);
 * with "calls", main also calls step() (built with -finstrument-functions) between the two, so
 * the handler lands inside function records too. Prints "handler calls K" (its mallocs and
 * frees). Under weft record --memory every handler call is in the trace or counted as dropped:
 * the program makes N + 1 + K/2 allocations and as many frees, nothing else.
 *
 * It also prints "runs R over E": the longest run of handler calls with no step of main's loop
 * in between (R), and how many of the handler's malloc and free calls came beyond the 8th
 * handler call of such a run (E). weft queues a handler's records made inside one of main's
 * allocation records, 16 records (8 handler calls) at most (src/preload/memnested.c); a run
 * longer than that (the machine delivering SIGALRM as fast as the handler returns: a loaded
 * VM does, the program then making no progress at all, traced or not) is the only way one of
 * them can be lost, and at most E can. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

void *volatile sigalloc_sink;
static volatile long handler_calls;
static volatile long steps;              /* main's loop: iterations finished */
static long run_step = -1, run_len, run_max, over;
#define QUEUED_CALLS 8

__attribute__((no_instrument_function)) static void on_alarm(int sig)
{
	(void)sig;
	void *p = malloc(1000);
	sigalloc_sink = p;
	free(p);
	handler_calls += 2;
	if (steps != run_step) {
		run_step = steps;
		run_len = 0;
	}
	if (++run_len > run_max)
		run_max = run_len;
	if (run_len > QUEUED_CALLS)
		over += 2;
}

__attribute__((noinline)) void step(void)
{
	__asm__ volatile("" ::: "memory");
}

__attribute__((no_instrument_function)) int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int calls = argc > 2 && !strcmp(argv[2], "calls");
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	free(malloc(1000));
	struct itimerval it = {{0, 50}, {0, 50}};
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < n; i++) {
		void *p = malloc(32);
		sigalloc_sink = p;
		if (calls)
			step();
		free(p);
		steps = i + 1;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	char line[96]; /* not stdio: its buffer would be one more allocation */
	int l = snprintf(line, sizeof(line), "handler calls %ld runs %ld over %ld\n", handler_calls, run_max, over);
	return write(1, line, (size_t)l) == l ? 0 : 1;
}
