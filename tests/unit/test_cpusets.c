/* test_cpusets.c - the scheduling readers' CPU sets (sched_threads=) on a fixture topology
 * (tests/data/topology: 2 packages x 2 cores x 2 threads, CPU 7 with pre-5.7 file names):
 * the exact sets of every spec, offline CPUs, explicit lists and the syntax check. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "collect/cpusets.h"

#ifndef WEFT_TEST_DATA
#define WEFT_TEST_DATA "tests/data"
#endif
#define SYS WEFT_TEST_DATA "/topology/sys"

/* The sets of spec over cpus, as "SET|SET|..." */
static const char *sets(const char *spec, const char *root, const int *cpus, int n)
{
	static char out[512];
	int owner[64];
	char why[160] = "", one[128];
	int k = weft_cpusets_split(spec, root, cpus, n, owner, why, sizeof(why));
	if (k < 0) {
		snprintf(out, sizeof(out), "error %d: %s", k, why);
		return out;
	}
	out[0] = 0;
	for (int s = 0; s < k; s++) {
		weft_cpusets_format(cpus, owner, n, s, one, sizeof(one));
		snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", s ? "|" : "", one);
	}
	return out;
}

static const int all8[8] = {0, 1, 2, 3, 4, 5, 6, 7};

static void topology_specs(void **s)
{
	(void)s;
	assert_string_equal(sets("cpu", SYS, all8, 8), "0|1|2|3|4|5|6|7");
	assert_string_equal(sets("core", SYS, all8, 8), "0,4|1,5|2,6|3,7");
	assert_string_equal(sets("package", SYS, all8, 8), "0-1,4-5|2-3,6-7");
	assert_string_equal(sets("numa", SYS, all8, 8), "0-1,4-5|2-3,6-7");
}

static void thread_counts(void **s)
{
	(void)s;
	assert_string_equal(sets("1", SYS, all8, 8), "0-7");
	assert_string_equal(sets("2", SYS, all8, 8), "0,2,4,6|1,3,5,7");
	assert_string_equal(sets("3", SYS, all8, 8), "0,3,6|1,4,7|2,5");
	assert_string_equal(sets("16", SYS, all8, 8), "0|1|2|3|4|5|6|7"); /* no more threads than CPUs */
}

static void explicit_lists(void **s)
{
	(void)s;
	assert_string_equal(sets("0-3/4-7", SYS, all8, 8), "0-3|4-7");
	assert_string_equal(sets("4-7/0-3", SYS, all8, 8), "4-7|0-3"); /* numbered as given */
	int owner[8];
	char why[160];
	assert_int_equal(weft_cpusets_split("4-7/0-3", SYS, all8, 8, owner, why, sizeof(why)), 2);
	assert_int_equal(owner[0], 1);
	assert_int_equal(owner[4], 0);
	/* unlisted CPUs join the first set; a CPU listed twice stays in the first; empty sets go */
	assert_string_equal(sets("0,4/4-5/100-200", SYS, all8, 8), "0-4,6-7|5");
	assert_string_equal(sets("100", SYS, all8, 8), "error -22: a thread count is 1 to 16");
	assert_string_equal(sets("100-100", SYS, all8, 8), "0-7"); /* none online: one set */
}

static void offline_cpus_and_missing_files(void **s)
{
	(void)s;
	static const int some[4] = {1, 2, 5, 7}; /* 0, 3, 4, 6 offline */
	assert_string_equal(sets("core", SYS, some, 4), "1,5|2|7");
	assert_string_equal(sets("package", SYS, some, 4), "1,5|2,7");
	assert_string_equal(sets("numa", SYS, some, 4), "1,5|2,7");
	/* no topology at all: each CPU alone; no node directory: one node */
	assert_string_equal(sets("core", WEFT_TEST_DATA "/nonexistent", all8, 4), "0|1|2|3");
	assert_string_equal(sets("numa", WEFT_TEST_DATA "/nonexistent", all8, 4), "0-3");
}

static void syntax(void **s)
{
	(void)s;
	char why[160];
	const char *good[] = {"1", "16", "cpu", "core", "package", "numa", "0-3", "0-3,8/4-7", "5-5", "0/1/2"};
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(weft_cpusets_check(good[i], why, sizeof(why)), 0);
	const char *bad[] = {"0", "17", "", "cores", "0-", "3-1", "0//1", "0/", "/0", "0,", "a", "0-3:4", "1024"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = 0;
		assert_int_equal(weft_cpusets_check(bad[i], why, sizeof(why)), -EINVAL);
		assert_true(why[0]);
	}
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(topology_specs), cmocka_unit_test(thread_counts), cmocka_unit_test(explicit_lists),
		cmocka_unit_test(offline_cpus_and_missing_files), cmocka_unit_test(syntax),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
