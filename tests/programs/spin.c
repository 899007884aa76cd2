/* spin MS [SLEEP_MS [LOG]]: burns MS milliseconds of CPU (a busy loop in user space until this
 * thread's CPU clock says so), then sleeps SLEEP_MS milliseconds, so a test knows what user and
 * wall time to expect. With LOG it appends one line saying how it was run: "dry", "functions" or "memory"
 * (from LD_PRELOAD and WEFT_OPTIONS), for the tests of `weft overhead`'s run order.
 * SPIN_TRACED_EXTRA=PCT: when traced (weft's preload library loaded), burn PCT % more CPU - a
 * known slowdown for checking what `weft overhead` measures (bench/overhead/run.sh). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(clockid_t clock)
{
	struct timespec t;
	clock_gettime(clock, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: spin MS [SLEEP_MS [LOG]]\n");
		return 2;
	}
	const char *ld = getenv("LD_PRELOAD"), *opts = getenv("WEFT_OPTIONS"), *extra = getenv("SPIN_TRACED_EXTRA");
	int traced = ld && strstr(ld, "libweft-preload");
	double ms = atof(argv[1]) * (traced && extra ? 1 + atof(extra) / 100 : 1);
	double end = now(CLOCK_THREAD_CPUTIME_ID) + ms / 1e3;
	volatile unsigned long n = 0;
	/* the CPU clock is read with a system call: reading it seldom keeps the time user time */
	while (now(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 1 << 16; i++)
			n++;
	long sleep_ms = argc > 2 ? atol(argv[2]) : 0;
	struct timespec d = {sleep_ms / 1000, sleep_ms % 1000 * 1000000L};
	while (nanosleep(&d, &d) && errno == EINTR)
		;
	if (argc > 3) {
		const char *how = !traced ? "dry"
				  : opts && strstr(opts, "memory=1") ? "memory" : "functions";
		FILE *f = fopen(argv[3], "a");
		if (!f)
			return 1;
		fprintf(f, "%s\n", how);
		fclose(f);
	}
	return 0;
}
