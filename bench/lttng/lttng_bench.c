/* lttng_bench.c - the begin+end pair of bench.c, as LTTng-UST tracepoints (best of 7 blocks
 * of 2M, the same method). Run inside an LTTng session to measure recording cost; outside
 * one it measures LTTng's disabled-tracepoint cost. */
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "weftbench_tp.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	const long n = 2000000;
	double ns[7];
	for (long i = 0; i < n / 4; i++) {
		lttng_ust_tracepoint(weftbench, begin, 1);
		lttng_ust_tracepoint(weftbench, end, 1);
	}
	for (int b = 0; b < 7; b++) {
		double t0 = now_s();
		for (long i = 0; i < n; i++) {
			lttng_ust_tracepoint(weftbench, begin, 1);
			lttng_ust_tracepoint(weftbench, end, 1);
		}
		ns[b] = (now_s() - t0) * 1e9 / n;
		struct timespec ts = {0, 200 * 1000000};
		nanosleep(&ts, NULL); /* let the consumer drain, as weft's bench does */
	}
	qsort(ns, 7, sizeof(double), cmp_d);
	printf("%.2f\n", ns[0]); /* best block, as bench.c */
	return 0;
}
