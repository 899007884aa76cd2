/*
 * clockgap.h - CLOCK_BOOTTIME minus CLOCK_MONOTONIC: the time the machine spent suspended so
 * far, the offset that moves a perf ring's CLOCK_MONOTONIC times (tracepoints, breakpoints,
 * PEBS and IBS refuse CLOCK_BOOTTIME) onto weft's timeline (collect/access.c, collect/sched.c).
 */
#ifndef WEFT_COLLECT_CLOCKGAP_H
#define WEFT_COLLECT_CLOCKGAP_H

#include <stdint.h>
#include <time.h>

/* The offset in ns, read from the system's clocks. Async-signal-safe (clock_gettime only). */
int64_t weft_clock_gap(void);
/* The same, with the clocks read through now(clock, ud) in ns (tests give scripted clocks). */
int64_t weft_clock_gap_from(int64_t (*now)(clockid_t clock, void *ud), void *ud);

#endif
