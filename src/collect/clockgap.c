/*
 * clockgap.c - CLOCK_BOOTTIME minus CLOCK_MONOTONIC, read as a pair (clockgap.h). Two clocks
 * cannot be read at one instant: a thread preempted between the two reads would pair a boot
 * time with a monotonic time taken milliseconds apart, and every sample of that drain would be
 * shifted by as much. So the boot time is read between two monotonic readings and paired with
 * their middle, and of a few such tries the one with the narrowest bracket is kept, as
 * lib/clock.c's weft_clock_sample pairs the ticks with the boot time: a preempted try is wide
 * and loses to any that was not. The error is at most half the narrowest bracket (tens of ns).
 */
#include "collect/clockgap.h"

#define TRIES 5

int64_t weft_clock_gap_from(int64_t (*now)(clockid_t clock, void *ud), void *ud)
{
	int64_t best = INT64_MAX, gap = 0;
	for (int i = 0; i < TRIES; i++) {
		int64_t m0 = now(CLOCK_MONOTONIC, ud);
		int64_t b = now(CLOCK_BOOTTIME, ud);
		int64_t m1 = now(CLOCK_MONOTONIC, ud);
		if (m1 - m0 < best) {
			best = m1 - m0;
			gap = b - (m0 + (m1 - m0) / 2);
		}
	}
	return gap;
}

static int64_t system_ns(clockid_t clock, void *ud)
{
	(void)ud;
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t weft_clock_gap(void)
{
	return weft_clock_gap_from(system_ns, NULL);
}
