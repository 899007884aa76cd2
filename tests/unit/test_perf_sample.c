/* test_perf_sample.c - the access sources' perf_event_attr, read from fixture sysfs roots
 * (tests/data/sysfs: Ice Lake, Sapphire Rapids with mem-loads-aux, a hybrid Alder Lake, an
 * AMD with IBS, a VM without a PMU), and the sample decoder on real page-fault records
 * recorded on a VM (tests/data/perf/pagefault-samples.bin: 16 first touches of the pages at
 * 0x7f0000000000, tid 23948) and on PEBS-shaped records built to the ABI; the hardware
 * watchpoint's attr and the verdicts of its self-test. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <linux/hw_breakpoint.h>
#include "collect/perf_sample.h"

#ifndef WEFT_TEST_DATA
#define WEFT_TEST_DATA "tests/data"
#endif

static int attr_of(const char *machine, int src, struct perf_event_attr *a, struct perf_event_attr *aux,
		   int *needs_aux, char *why)
{
	char root[512];
	snprintf(root, sizeof(root), "%s/sysfs/%s", WEFT_TEST_DATA, machine);
	return weft_access_attr(src, root, 0, a, aux, needs_aux, why, 200);
}

static void pebs_loads_from_the_pmu_description(void **s)
{
	(void)s;
	struct perf_event_attr a, aux;
	int needs_aux = -1;
	char why[200] = "";
	assert_int_equal(attr_of("icx", WEFT_ACC_PEBS_LOAD, &a, &aux, &needs_aux, why), 0);
	assert_int_equal(a.type, 4);
	assert_int_equal(a.config, 0x1cd); /* event 0xcd umask 0x01 */
	assert_int_equal(a.config1, 3);    /* ldlat */
	assert_int_equal(a.precise_ip, 3);
	assert_int_equal(needs_aux, 0);
	assert_true(a.exclude_kernel);
	uint64_t want = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_WEIGHT |
			PERF_SAMPLE_DATA_SRC;
	assert_int_equal(a.sample_type, want);
	/* a hardware PMU's samples: an NMI-safe clock (the kernel refuses CLOCK_BOOTTIME there) */
	assert_int_equal(a.use_clockid, 1);
	assert_int_equal(a.clockid, CLOCK_MONOTONIC);
	assert_int_equal(attr_of("icx", WEFT_ACC_PEBS_STORE, &a, &aux, &needs_aux, why), 0);
	assert_int_equal(a.config, 0x82d0);
	/* Sapphire Rapids: the mem-loads-aux leader */
	assert_int_equal(attr_of("spr", WEFT_ACC_PEBS_LOAD, &a, &aux, &needs_aux, why), 0);
	assert_int_equal(needs_aux, 1);
	assert_int_equal(aux.type, 4);
	assert_int_equal(aux.config, 0x8203);
	assert_int_equal(a.config, 0x1cd);
	/* hybrid: the big cores' PMU */
	assert_int_equal(attr_of("adl", WEFT_ACC_PEBS_LOAD, &a, &aux, &needs_aux, why), 0);
	assert_int_equal(a.type, 8);
}

static void ibs_and_unavailable(void **s)
{
	(void)s;
	struct perf_event_attr a, aux;
	int needs_aux;
	char why[200] = "";
	assert_int_equal(attr_of("amd", WEFT_ACC_IBS_OP, &a, &aux, &needs_aux, why), 0);
	assert_int_equal(a.type, 11);
	assert_int_equal(a.sample_period, 0x10000);
	assert_int_equal(a.clockid, CLOCK_MONOTONIC);
	assert_int_equal(attr_of("amd", WEFT_ACC_PEBS_LOAD, &a, &aux, &needs_aux, why), -ENOENT);
	assert_string_equal(why, "no cpu PMU with mem-loads events (virtual machine, or not Intel?)");
	assert_int_equal(attr_of("vm", WEFT_ACC_IBS_OP, &a, &aux, &needs_aux, why), -ENOENT);
	assert_string_equal(why, "no AMD IBS op PMU (ibs_op)");
	/* page faults need no PMU */
	assert_int_equal(attr_of("vm", WEFT_ACC_PAGEFAULT, &a, &aux, &needs_aux, why), 0);
	assert_int_equal(a.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(a.config, PERF_COUNT_SW_PAGE_FAULTS);
	assert_int_equal(a.sample_period, 1);
	assert_int_equal(a.use_clockid, 1);
	assert_int_equal(a.clockid, CLOCK_BOOTTIME); /* a software event: weft's own clock */
}

static void recorded_page_faults_decode(void **s)
{
	(void)s;
	char path[512];
	snprintf(path, sizeof(path), "%s/perf/pagefault-samples.bin", WEFT_TEST_DATA);
	FILE *f = fopen(path, "rb");
	assert_non_null(f);
	unsigned char buf[4096];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	struct perf_event_attr a, aux;
	int needs_aux;
	char why[200];
	assert_int_equal(attr_of("vm", WEFT_ACC_PAGEFAULT, &a, &aux, &needs_aux, why), 0);
	size_t off = 0, got = 0;
	uint64_t last_time = 0;
	while (off + sizeof(struct perf_event_header) <= n) {
		struct perf_event_header h;
		memcpy(&h, buf + off, sizeof(h));
		assert_true(h.size >= sizeof(h) && off + h.size <= n);
		if (h.type == PERF_RECORD_SAMPLE) {
			struct weft_perf_sample smp;
			assert_int_equal(weft_perf_decode_sample(a.sample_type, buf + off + sizeof(h), h.size - sizeof(h), &smp), 0);
			assert_int_equal(smp.addr, 0x7f0000000000ull + got * 4096);
			assert_int_equal(smp.tid, 23948);
			assert_true(smp.time > last_time);
			assert_true(smp.ip != 0);
			last_time = smp.time;
			got++;
			/* a record cut short is refused */
			assert_int_equal(weft_perf_decode_sample(a.sample_type, buf + off + sizeof(h), h.size - sizeof(h) - 1, &smp), -1);
		}
		off += h.size;
	}
	assert_int_equal(got, 16);
}

static void pebs_shaped_records_decode(void **s)
{
	(void)s;
	/* IP TID TIME ADDR CALLCHAIN(2) RAW(12 bytes) WEIGHT_STRUCT DATA_SRC, in ABI order */
	uint64_t t = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_CALLCHAIN |
		     PERF_SAMPLE_RAW | PERF_SAMPLE_WEIGHT_STRUCT | PERF_SAMPLE_DATA_SRC;
	unsigned char b[256];
	size_t o = 0;
#define PUT(v, k) do { uint64_t v_ = (v); memcpy(b + o, &v_, k); o += k; } while (0)
	PUT(0x401000, 8);                         /* ip */
	PUT(100, 4);                              /* pid */
	PUT(101, 4);                              /* tid */
	PUT(123456789, 8);                        /* time */
	PUT(0x7fffdeadbe00ull, 8);                /* addr */
	PUT(2, 8);                                /* callchain nr */
	PUT(1, 8);
	PUT(2, 8);
	PUT(12, 4);                               /* raw size, then 12 bytes (u64-aligned) */
	memset(b + o, 0xaa, 12);
	o += 12;
	PUT(0x0005000700000123ull, 8);            /* weight struct: latency 0x123 */
	PUT((uint64_t)PERF_MEM_OP_STORE, 8);      /* data_src: a store */
#undef PUT
	struct weft_perf_sample smp;
	assert_int_equal(weft_perf_decode_sample(t, b, o, &smp), 0);
	assert_int_equal(smp.ip, 0x401000);
	assert_int_equal(smp.pid, 100);
	assert_int_equal(smp.tid, 101);
	assert_int_equal(smp.time, 123456789);
	assert_int_equal(smp.addr, 0x7fffdeadbe00ull);
	assert_int_equal(smp.weight, 0x123);
	assert_int_equal(weft_perf_data_src_is_write(smp.data_src), 1);
	assert_int_equal(weft_perf_data_src_is_write(PERF_MEM_OP_LOAD), 0);
	assert_int_equal(weft_perf_data_src_is_write(PERF_MEM_OP_NA), -1);
	for (size_t cut = 0; cut < o; cut++) /* every shorter body is refused */
		assert_int_equal(weft_perf_decode_sample(t, b, cut, &smp), -1);
	assert_int_equal(weft_perf_decode_sample(t | PERF_SAMPLE_READ, b, o, &smp), -1);
}

/* watchpoints: the breakpoint attr, its refusals, and the self-test's verdicts */
static void watchpoint_attr(void **s)
{
	(void)s;
	struct perf_event_attr a;
	char why[200];
	assert_int_equal(weft_watch_attr(0x7ffc0010, 8, 0, &a, why, sizeof(why)), 0);
	assert_int_equal(a.size, sizeof(a));
	assert_int_equal(a.type, PERF_TYPE_BREAKPOINT);
	assert_int_equal(a.bp_type, HW_BREAKPOINT_W);
	assert_int_equal(a.bp_addr, 0x7ffc0010);
	assert_int_equal(a.bp_len, HW_BREAKPOINT_LEN_8);
	assert_int_equal(a.sample_period, 1);
	assert_int_equal(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR);
	assert_int_equal(a.exclude_kernel, 1);
	assert_int_equal(a.exclude_hv, 1);
	assert_int_equal(a.exclude_user, 0);
	assert_int_equal(a.inherit, 0);
	assert_int_equal(a.disabled, 0);
	/* the kernel refuses CLOCK_BOOTTIME (EINVAL) for breakpoints: an NMI-safe clock */
	assert_int_equal(a.use_clockid, 1);
	assert_int_equal(a.clockid, CLOCK_MONOTONIC);
	assert_int_equal(weft_watch_attr(0x7ffc0012, 2, 1, &a, why, sizeof(why)), 0);
	assert_int_equal(a.bp_type, HW_BREAKPOINT_RW);
	assert_int_equal(a.bp_len, HW_BREAKPOINT_LEN_2);
	assert_int_equal(weft_watch_attr(0x7ffc0013, 1, 0, &a, why, sizeof(why)), 0);
	assert_int_equal(a.bp_len, HW_BREAKPOINT_LEN_1);
	assert_int_equal(weft_watch_attr(0x7ffc0014, 4, 0, &a, why, sizeof(why)), 0);
	assert_int_equal(a.bp_len, HW_BREAKPOINT_LEN_4);
	assert_int_equal(weft_watch_attr(0x7ffc0014, 8, 0, &a, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "a 8-byte watchpoint needs an address that is a multiple of 8, not 0x7ffc0014");
	assert_int_equal(weft_watch_attr(0x7ffc0010, 3, 0, &a, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "a watchpoint covers 1, 2, 4 or 8 bytes, not 3");
	assert_int_equal(weft_watch_attr(0, 8, 0, &a, why, sizeof(why)), -EINVAL);

	assert_int_equal(weft_watch_selftest_verdict(0, 4, 4, why, sizeof(why)), 0);
	assert_int_equal(weft_watch_selftest_verdict(0, 4, 0, why, sizeof(why)), -ENODEV);
	assert_string_equal(why, "hardware watchpoints open but do not fire here (virtual machine?)");
	assert_int_equal(weft_watch_selftest_verdict(0, 4, 2, why, sizeof(why)), -EIO);
	assert_string_equal(why, "hardware watchpoints fire 2 times for 4 writes here");
	assert_int_equal(weft_watch_selftest_verdict(EACCES, 4, 0, why, sizeof(why)), -EACCES);
	assert_string_equal(why, "perf_event_open of a hardware watchpoint failed: Permission denied "
				 "(kernel.perf_event_paranoid too high? run as root or lower it)");
	assert_int_equal(weft_watch_selftest_verdict(ENOENT, 4, 0, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "perf_event_open of a hardware watchpoint failed: No such file or directory "
				 "(no breakpoint PMU in this kernel)");
	assert_int_equal(weft_watch_selftest_verdict(EINVAL, 4, 0, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "perf_event_open of a hardware watchpoint failed: Invalid argument");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(pebs_loads_from_the_pmu_description), cmocka_unit_test(ibs_and_unavailable),
		cmocka_unit_test(recorded_page_faults_decode), cmocka_unit_test(pebs_shaped_records_decode),
		cmocka_unit_test(watchpoint_attr),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
