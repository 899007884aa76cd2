/* mem_bench THREADS ITERS [SEED] - allocation load for comparing memory tracers (no weft headers).
 * Each thread does ITERS times: size = 16..4096 (xorshift64, seeded per thread), p = malloc(size),
 * write p[0] and p[size-1], free(p). Each thread times its loop with CLOCK_THREAD_CPUTIME_ID; main
 * times creation..join with CLOCK_MONOTONIC. One line out:
 *   threads=N events=E cpu_ns_per_event=X wall_ns_per_event=Y
 * events = 2*ITERS*THREADS (malloc + free); cpu = sum of thread CPU ns / events; wall = wall ns /
 * (events/THREADS), the wall time per event of one thread.
 * Build: gcc -O2 -pthread mem_bench.c -o mem_bench (no -finstrument-functions). */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct worker {
	pthread_t th;
	uint64_t seed;
	long iters;
	uint64_t cpu_ns;
	int failed;
};

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *run(void *arg)
{
	struct worker *w = arg;
	uint64_t x = w->seed ? w->seed : 0x9e3779b97f4a7c15u;
	uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	for (long i = 0; i < w->iters; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		size_t size = 16 + (size_t)(x % 4081); /* 16..4096 */
		char *p = malloc(size);
		if (!p) {
			w->failed = 1;
			break;
		}
		p[0] = (char)i;
		p[size - 1] = (char)x;
		/* the compiler may not drop the malloc/free pair as unused */
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
	}
	w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: mem_bench THREADS ITERS [SEED]\n");
		return 2;
	}
	long threads = strtol(argv[1], NULL, 10), iters = strtol(argv[2], NULL, 10);
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
	if (threads < 1 || threads > 1024 || iters < 1) {
		fprintf(stderr, "mem_bench: THREADS 1..1024, ITERS >= 1\n");
		return 2;
	}
	struct worker *w = calloc((size_t)threads, sizeof(*w));
	if (!w)
		return 1;
	for (long t = 0; t < threads; t++) {
		w[t].seed = (seed + (uint64_t)t + 1) * 0x9e3779b97f4a7c15u;
		w[t].iters = iters;
	}
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	for (long t = 0; t < threads; t++)
		if (pthread_create(&w[t].th, NULL, run, &w[t])) {
			fprintf(stderr, "mem_bench: pthread_create failed\n");
			return 1;
		}
	for (long t = 0; t < threads; t++)
		pthread_join(w[t].th, NULL);
	uint64_t wall = now_ns(CLOCK_MONOTONIC) - t0;
	uint64_t cpu = 0;
	for (long t = 0; t < threads; t++) {
		if (w[t].failed) {
			fprintf(stderr, "mem_bench: malloc failed\n");
			return 1;
		}
		cpu += w[t].cpu_ns;
	}
	double events = 2.0 * (double)iters * (double)threads;
	printf("threads=%ld events=%.0f cpu_ns_per_event=%.2f wall_ns_per_event=%.2f\n", threads, events,
	       (double)cpu / events, (double)wall / (events / (double)threads));
	free(w);
	return 0;
}
