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
};

/* The attributes of source `src` for one thread, its sampling period `period` (0: the source's
 * default), read from the PMU descriptions under sysfs_root ("" for the machine's own
 * /sys/bus/event_source/devices). Returns 0, or -ENOENT with a one-line reason ("no cpu PMU
 * with mem-loads events (virtual machine?)"). For PEBS loads on a PMU that has mem-loads-aux
 * (Sapphire Rapids and later), *needs_aux is set and aux holds the group leader to open first. */
int weft_access_attr(int src, const char *sysfs_root, uint64_t period, struct perf_event_attr *attr,
		     struct perf_event_attr *aux, int *needs_aux, char *why, size_t n);

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
