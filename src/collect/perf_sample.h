/*
 * perf_sample.h - the perf_event_open side of memory access sampling, kept apart from the
 * runtime so it can be tested without the hardware: the attributes of each access source (read
 * from the PMU's sysfs description, as perf does, under a root that tests point at a fixture)
 * and the decoder of PERF_RECORD_SAMPLE bodies.
 */
#ifndef WEFT_PERF_SAMPLE_H
#define WEFT_PERF_SAMPLE_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

enum weft_access_source {
	WEFT_ACC_PAGEFAULT = 1, /* software page faults: the first touch of each page, any Linux */
	WEFT_ACC_PEBS_LOAD = 2, /* Intel PEBS MEM_TRANS_RETIRED.LOAD_LATENCY (mem-loads) */
	WEFT_ACC_PEBS_STORE = 3, /* Intel PEBS MEM_INST_RETIRED.ALL_STORES (mem-stores) */
	WEFT_ACC_IBS_OP = 4,    /* AMD IBS op */
	WEFT_ACC_WATCH_W = 5,   /* a hardware watchpoint on writes: every write to the watched bytes */
	WEFT_ACC_WATCH_RW = 6,  /* a hardware watchpoint on reads and writes */
};

/* The attributes of source `src` for one thread, its sampling period `period` (0: the source's
 * default), read from the PMU descriptions under sysfs_root ("" for the machine's own
 * /sys/bus/event_source/devices). Returns 0, or -ENOENT with a one-line reason ("no cpu PMU
 * with mem-loads events (virtual machine?)"). For PEBS loads on a PMU that has mem-loads-aux
 * (Sapphire Rapids and later), *needs_aux is set and aux holds the group leader to open first.
 * Page faults carry CLOCK_BOOTTIME; PEBS and IBS CLOCK_MONOTONIC (NMI-safe, as the kernel
 * requires of a hardware PMU's clock), to be moved onto weft's timeline by the reader of the ring. */
int weft_access_attr(int src, const char *sysfs_root, uint64_t period, struct perf_event_attr *attr,
		     struct perf_event_attr *aux, int *needs_aux, char *why, size_t n);

/* The attributes of a hardware watchpoint (PERF_TYPE_BREAKPOINT) on the len bytes at addr
 * (len 1, 2, 4 or 8, addr a multiple of len, as x86's debug registers require), on writes or
 * (rw) on reads and writes, one sample per hit, user space only. Breakpoint events refuse
 * CLOCK_BOOTTIME (the kernel takes only NMI-safe clocks for a PMU that can fire in NMI-like
 * context: EINVAL), so the samples carry CLOCK_MONOTONIC, which the runtime moves onto weft's
 * timeline. Returns 0, or -EINVAL with a one-line reason. */
int weft_watch_attr(uint64_t addr, unsigned len, int rw, struct perf_event_attr *attr, char *why, size_t n);

/* The self-test's verdict: a write watchpoint opened (open_errno 0) or refused (open_errno,
 * positive), and how many samples `writes` writes to its variable gave. Returns 0 when every
 * write was seen, else -ENODEV (opened, never fired), -EIO (fired a wrong number of times) or
 * -open_errno, with the reason, one line, in why. */
int weft_watch_selftest_verdict(int open_errno, uint64_t writes, uint64_t samples, char *why, size_t n);

/* What a sample carries (fields its sample_type lacks are 0). */
struct weft_perf_sample {
	uint64_t ip, time, addr, weight, data_src, phys_addr;
	uint32_t pid, tid, cpu;
};

/* Decodes a PERF_RECORD_SAMPLE body (after the perf_event_header) laid out by sample_type.
 * Returns 0, or -1 when the body is shorter than the layout or holds a field it cannot skip
 * (PERF_SAMPLE_READ, BRANCH_STACK, REGS_*, STACK_USER). */
int weft_perf_decode_sample(uint64_t sample_type, const void *body, size_t len, struct weft_perf_sample *out);

/* data_src (union perf_mem_data_src): 1 for a store, 0 for a load, -1 unknown. */
int weft_perf_data_src_is_write(uint64_t data_src);

#endif
