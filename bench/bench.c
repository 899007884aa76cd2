/*
 * bench.c - weft's benchmarks. Subcommands (bench/run.sh runs them all and prints one table):
 *   micro            ns per operation, best of 7 blocks of 2M, and the ratio to the floor as
 *                    the median of 7 rounds alternating floor and weft blocks: the floor (two rdtsc + two
 *                    16-byte thread-local stores; one rdtsc + one store; one clock_gettime),
 *                    weft begin+end pair on 1 and 2 threads, instant, counter, disabled
 *                    category, name-filtered, compiled out
 *   sustain SECONDS [RATE]  one thread emitting instants as fast as it can (or paced at RATE
 *                    events/s) for SECONDS with default settings; prints events/s and drops
 *   gen PAIRS [THREADS]  PAIRS begin/end pairs (nested, some with an argument) split over
 *                    THREADS threads, for the converter benchmark
 */
#include <weft.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void bench_compiled_out(long n); /* bench_off.c, built with -DWEFT_DISABLE */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The floor: what any tracer must do at least. */
static __thread uint64_t floor_buf[1 << 17] __attribute__((aligned(64))); /* 1 MiB */
static __thread uint64_t *floor_pos;

static inline void floor_rec(uint64_t hdr)
{
	uint64_t *p = floor_pos;
	p[0] = weft__ticks();
	p[1] = hdr;
	floor_pos = p + 2;
}

typedef void (*loop_fn)(long n);

static void loop_floor_pair(long n)
{
	for (long i = 0; i < n; i++) {
		if (floor_pos >= floor_buf + (1 << 17) - 4)
			floor_pos = floor_buf;
		floor_rec(1);
		floor_rec(2);
	}
	__asm__ __volatile__("" ::"r"(floor_pos) : "memory");
}

static void loop_floor_one(long n)
{
	for (long i = 0; i < n; i++) {
		if (floor_pos >= floor_buf + (1 << 17) - 4)
			floor_pos = floor_buf;
		floor_rec(1);
	}
	__asm__ __volatile__("" ::"r"(floor_pos) : "memory");
}

static void loop_clock_gettime(long n)
{
	struct timespec ts;
	for (long i = 0; i < n; i++)
		clock_gettime(CLOCK_BOOTTIME, &ts);
}

static void loop_pair(long n)
{
	for (long i = 0; i < n; i++) {
		WEFT_SCOPE("pair");
	}
}

static void loop_instant(long n)
{
	for (long i = 0; i < n; i++)
		WEFT_INSTANT("instant");
}

static void loop_counter(long n)
{
	for (long i = 0; i < n; i++)
		WEFT_COUNTER("counter", i);
}

static void loop_disabled(long n)
{
	for (long i = 0; i < n; i++) {
		WEFT_SCOPE_C("off", "disabled");
	}
}

static void loop_filtered(long n)
{
	for (long i = 0; i < n; i++) {
		WEFT_SCOPE("filtered out");
	}
}

#define BLOCK 2000000L
#define BLOCKS 7

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Blocks are bursts: between two, the writer drains what the block buffered, so the numbers
 * are the cost the program sees, not the writer's throughput (that is `sustain`). */
static void drain(void)
{
	weft_flush();
	struct weft_stats a = {.sz = sizeof(a)}, b = {.sz = sizeof(b)};
	weft_stats_get(&a);
	for (int i = 0; i < 200; i++) {
		struct timespec ts = {0, 20 * 1000000};
		nanosleep(&ts, NULL);
		weft_stats_get(&b);
		if (b.bytes_raw == a.bytes_raw)
			break;
		a = b;
	}
}

static double measure(loop_fn fn)
{
	double ns[BLOCKS];
	fn(BLOCK / 4); /* warm up: registration, first chunks */
	drain();
	for (int b = 0; b < BLOCKS; b++) {
		double t0 = now_s();
		fn(BLOCK);
		ns[b] = (now_s() - t0) * 1e9 / BLOCK;
		drain();
	}
	qsort(ns, BLOCKS, sizeof(double), cmp_d);
	return ns[0]; /* the least disturbed block: a VM's noise only ever adds */
}

/* Floor and weft alternate block by block, so both see the same machine at the same
 * moment; the ratio reported is the median of the per-round ratios. */
static double ratio(loop_fn base, loop_fn fn)
{
	double r[BLOCKS];
	base(BLOCK / 4);
	fn(BLOCK / 4);
	drain();
	for (int b = 0; b < BLOCKS; b++) {
		double t0 = now_s();
		base(BLOCK);
		double t1 = now_s();
		fn(BLOCK);
		double t2 = now_s();
		r[b] = (t2 - t1) / (t1 - t0);
		drain();
	}
	qsort(r, BLOCKS, sizeof(double), cmp_d);
	return r[BLOCKS / 2];
}

static double two_thread_result;
static void *two_thread_main(void *arg)
{
	double *out = arg;
	*out = measure(loop_pair);
	return NULL;
}

static void row(const char *name, double ns, double r, const char *floor_name)
{
	if (r > 0)
		printf("| %-44s | %8.2f | %5.2fx %-12s |\n", name, ns, r, floor_name);
	else
		printf("| %-44s | %8.2f | %-19s |\n", name, ns, "");
}

static int micro(void)
{
	/* large buffers so the writer, not the pool size, sets the pace; drops are reported */
	weft_configure("categories=-off:filter=pair,instant,counter:buffer_size=256M");
	weft_start();
	floor_pos = floor_buf;
	double fpair = measure(loop_floor_pair), fone = measure(loop_floor_one);
	double cg = measure(loop_clock_gettime);
	double pair = measure(loop_pair);
	double r2[2];
	pthread_t th;
	pthread_create(&th, NULL, two_thread_main, &r2[1]);
	two_thread_main(&r2[0]);
	pthread_join(th, NULL);
	two_thread_result = (r2[0] + r2[1]) / 2;
	double inst = measure(loop_instant), ctr = measure(loop_counter);
	double dis = measure(loop_disabled), filt = measure(loop_filtered);
	double off = measure(bench_compiled_out);
	printf("| %-44s | %8s | %-19s |\n", "operation", "ns/op", "vs floor");
	printf("|%s|%s|%s|\n", "----------------------------------------------", "----------",
	       "---------------------");
	double rpair = ratio(loop_floor_pair, loop_pair), rinst = ratio(loop_floor_one, loop_instant);
	double rctr = ratio(loop_floor_one, loop_counter);
	row("floor: 2x (rdtsc + 16-byte TLS store)", fpair, 0, "");
	row("floor: 1x (rdtsc + 16-byte TLS store)", fone, 0, "");
	row("clock_gettime(CLOCK_BOOTTIME) (vDSO)", cg, 0, "");
	row("weft begin+end pair (WEFT_SCOPE), 1 thread", pair, rpair, "2x floor");
	row("weft begin+end pair, 2 threads at once", two_thread_result, two_thread_result / fpair, "2x floor");
	row("weft instant", inst, rinst, "1x floor");
	row("weft counter (int64)", ctr, rctr, "1x floor");
	row("weft disabled category (WEFT_SCOPE_C)", dis, 0, "");
	row("weft name filtered out (filter=)", filt, 0, "");
	row("weft compiled out (-DWEFT_DISABLE)", off, 0, "");
	weft_stop();
	struct weft_stats st = {.sz = sizeof(st)};
	weft_stats_get(&st);
	printf("\nmicro run: %llu events written, %llu dropped\n", (unsigned long long)st.events,
	       (unsigned long long)st.dropped);
	return 0;
}

static int sustain(double seconds, double rate)
{
	weft_start();
	double t0 = now_s(), end = t0 + seconds;
	uint64_t n = 0;
	if (rate <= 0) {
		while (now_s() < end) {
			for (int i = 0; i < 10000; i++)
				WEFT_INSTANT("tick");
			n += 10000;
		}
	} else {
		for (;;) {
			double t = now_s();
			if (t >= end)
				break;
			uint64_t due = (uint64_t)((t - t0) * rate);
			while (n < due) {
				for (int i = 0; i < 1000; i++)
					WEFT_INSTANT("tick");
				n += 1000;
			}
		}
	}
	double el = now_s() - t0;
	weft_stop();
	struct weft_stats st = {.sz = sizeof(st)};
	weft_stats_get(&st);
	printf("sustain %.0f s: %llu emitted, %.1f M events/s, %llu written, %llu dropped, "
	       "%.2f B/event raw, %.2f B/event on disk\n",
	       el, (unsigned long long)n, (double)n / el / 1e6, (unsigned long long)st.events,
	       (unsigned long long)st.dropped, (double)st.bytes_raw / (double)(st.events ? st.events : 1),
	       (double)st.bytes_written / (double)(st.events ? st.events : 1));
	return st.dropped ? 3 : 0;
}

/* The converter workload: nested slices, every 8th with an argument, a counter every 64. */
static long gen_pairs;
static void *gen_thread(void *arg)
{
	(void)arg;
	for (long i = 0; i < gen_pairs; i += 2) {
		WEFT_SCOPE("outer step");
		if (i % 16 == 0) {
			WEFT_SCOPE("inner step", WEFT_I("i", i));
		} else {
			WEFT_SCOPE("inner step");
		}
		if (i % 64 == 0)
			WEFT_COUNTER("progress", i);
	}
	return NULL;
}

static int gen(long pairs, int threads)
{
	weft_configure("overflow=block");
	gen_pairs = pairs / threads;
	pthread_t th[16];
	for (int i = 0; i < threads && i < 16; i++)
		pthread_create(&th[i], NULL, gen_thread, NULL);
	for (int i = 0; i < threads && i < 16; i++)
		pthread_join(th[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "micro"))
		return micro();
	if (argc >= 3 && !strcmp(argv[1], "sustain"))
		return sustain(atof(argv[2]), argc > 3 ? atof(argv[3]) : 0);
	if (argc >= 3 && !strcmp(argv[1], "gen"))
		return gen(atol(argv[2]), argc > 3 ? atoi(argv[3]) : 1);
	fprintf(stderr, "usage: bench micro | sustain SECONDS [RATE] | gen PAIRS [THREADS]\n");
	return 2;
}
