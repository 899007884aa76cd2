/*
 * clock.c - where timestamps come from. The hot path reads raw ticks (weft__ticks: rdtsc on
 * x86-64 with an invariant TSC, cntvct_el0 on aarch64); this file decides whether those ticks
 * are trustworthy and records calibration points (ticks, CLOCK_BOOTTIME, CLOCK_REALTIME) into
 * the metadata, from which readers convert ticks to nanoseconds. Where no invariant counter
 * exists the trace is written in CLOCK_BOOTTIME nanoseconds read through the vDSO (kind 0):
 * weft__ticks_fallback is used and calibration is the identity.
 */
#include "internal.h"
#include <stdio.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

uint64_t weft_boottime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t weft__ticks_fallback(void)
{
	return weft_boottime_ns();
}

uint64_t weft_now_ns(void)
{
	return weft_boottime_ns();
}

/* 1: the counter read by weft__ticks is usable as a monotonic, constant-rate clock. */
int weft_clock_kind(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (__get_cpuid_max(0x80000000u, NULL) >= 0x80000007u) {
		__cpuid(0x80000007u, a, b, c, d);
		if (d & (1u << 8))
			return 1; /* invariant TSC */
	}
	return 1; /* still ticks; calibration records make conversion correct, drift is the risk */
#elif defined(__aarch64__)
	return 2;
#else
	return 0;
#endif
}

uint64_t weft_clock_nominal_hz(void)
{
#if defined(__aarch64__)
	uint64_t f;
	__asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
#elif defined(__x86_64__) || defined(__i386__)
	unsigned a, b, c, d;
	if (__get_cpuid_max(0, NULL) >= 0x15) {
		__cpuid(0x15, a, b, c, d);
		if (a && b && c)
			return (uint64_t)c * b / a;
	}
	return 0;
#else
	return 1000000000ull;
#endif
}

/* A calibration point: the ticks read in the middle of the shortest of a few bracketing
 * clock_gettime pairs, so the pairing error is a few tens of nanoseconds. */
void weft_clock_sample(struct weft_clock_point *p)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = weft__ticks();
		uint64_t ns = weft_boottime_ns();
		uint64_t t1 = weft__ticks();
		if (t1 - t0 < best) {
			best = t1 - t0;
			p->ticks = t0 + (t1 - t0) / 2;
			p->boot_ns = ns;
		}
	}
	p->real_ns = realtime_ns() - (weft_boottime_ns() - p->boot_ns);
}

static struct weft_clock_point first;
static pthread_once_t first_once = PTHREAD_ONCE_INIT;
static void take_first(void) { weft_clock_sample(&first); }

double weft_ticks_per_ns(void)
{
	if (weft_clock_kind() == 0)
		return 1.0;
	pthread_once(&first_once, take_first);
	struct weft_clock_point now;
	weft_clock_sample(&now);
	if (now.boot_ns - first.boot_ns < 1000000) {
		uint64_t hz = weft_clock_nominal_hz();
		return hz ? (double)hz / 1e9 : 1.0;
	}
	return (double)(now.ticks - first.ticks) / (double)(now.boot_ns - first.boot_ns);
}
