/* flight_bench MODE N: the flight recorder's costs (bench/flight/run.sh runs it).
 *   hot N    N begin/end pairs in a tight loop: prints the wall ns per event of the loop, then
 *            (once the writer took every event) the writer thread's CPU ns per event
 *            (/proc/self/task/TID/schedstat of weft-writer-0) and the drops
 *   snap N   N instants (with two arguments, ~100 bytes) to fill the ring, then times weft_snapshot(): the
 *            trigger to the snapshot's files written, in ms */
#include <weft.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* CPU ns of the writer thread (its schedstat's first field), 0 if not found */
static double writer_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	double ns = 0;
	while (d && (e = readdir(d))) {
		char p[300], comm[64] = "";
		snprintf(p, sizeof(p), "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(p, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strncmp(comm, "weft-writer-0", 13))
			continue;
		snprintf(p, sizeof(p), "/proc/self/task/%s/schedstat", e->d_name);
		f = fopen(p, "r");
		unsigned long long v = 0;
		if (f && fscanf(f, "%llu", &v) == 1)
			ns = (double)v;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return ns;
}

static void wait_written(uint64_t events)
{
	struct weft_stats st = {.sz = sizeof(st)};
	for (int i = 0; i < 20000; i++) {
		weft_stats_get(&st);
		if (st.events + st.dropped >= events)
			return;
		usleep(1000);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	long n = atol(argv[2]);
	weft_start();
	if (!strcmp(argv[1], "hot")) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++) {
			WEFT_BEGIN("op");
			WEFT_END("op");
		}
		double t1 = now_ns();
		weft_flush();
		wait_written((uint64_t)n * 2);
		struct weft_stats st = {.sz = sizeof(st)};
		weft_stats_get(&st);
		printf("ns/event %.2f writer_ns/event %.2f dropped %llu\n", (t1 - t0) / (2.0 * n),
		       writer_cpu_ns() / (2.0 * n), (unsigned long long)st.dropped);
	} else if (!strcmp(argv[1], "snap")) {
		char text[96];
		for (long i = 0; i < n; i++) {
			snprintf(text, sizeof(text), "%ld fills the ring with a record of about a hundred bytes", i * 7919);
			WEFT_INSTANT("fill", WEFT_I("i", i), WEFT_S("s", text));
		}
		weft_flush();
		wait_written((uint64_t)n);
		double t0 = now_ns();
		int rc = weft_snapshot("bench");
		double t1 = now_ns();
		printf("snapshot_ms %.1f rc %d\n", (t1 - t0) / 1e6, rc);
	}
	return 0;
}
