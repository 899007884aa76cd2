/* Unit tests of collect/counters-table.c: the counter names (perf's, with aliases), list
 * parsing and its one-line errors, the group attributes, the parse of a PERF_FORMAT_GROUP
 * read, and the rdpmc-or-read() decision on fake perf_event_mmap_pages with a fake rdpmc. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include "collect/counters.h"

static void test_names(void **state)
{
	(void)state;
	const struct weft_ctr_def *d = weft_ctr_find("instructions");
	assert_non_null(d);
	assert_int_equal(d->type, PERF_TYPE_HARDWARE);
	assert_int_equal(d->config, PERF_COUNT_HW_INSTRUCTIONS);
	assert_ptr_equal(weft_ctr_find("cpu-cycles"), weft_ctr_find("cycles"));
	assert_ptr_equal(weft_ctr_find("cs"), weft_ctr_find("context-switches"));
	assert_ptr_equal(weft_ctr_find("faults"), weft_ctr_find("page-faults"));
	d = weft_ctr_find("task-clock");
	assert_int_equal(d->type, PERF_TYPE_SOFTWARE);
	assert_int_equal(d->config, PERF_COUNT_SW_TASK_CLOCK);
	assert_string_equal(d->unit, "ns");
	assert_null(weft_ctr_find("cycle"));
	assert_null(weft_ctr_find(""));
	for (const struct weft_ctr_def *a = weft_ctr_defs; a->name; a++) /* no name twice */
		for (const struct weft_ctr_def *b = a + 1; b->name; b++) {
			assert_string_not_equal(a->name, b->name);
			assert_true(!b->alias || strcmp(a->name, b->alias));
		}
}

static void test_parse(void **state)
{
	(void)state;
	const struct weft_ctr_def *d[WEFT_CTR_MAX];
	char why[600];
	assert_int_equal(weft_ctr_parse("instructions,cycles,task-clock", d, why, sizeof(why)), 3);
	assert_string_equal(d[0]->name, "instructions");
	assert_string_equal(d[1]->name, "cycles");
	assert_string_equal(d[2]->name, "task-clock");
	assert_int_equal(weft_ctr_parse("cs", d, why, sizeof(why)), 1);
	assert_string_equal(d[0]->name, "context-switches");
	assert_int_equal(weft_ctr_parse("task-clock,bogus", d, why, sizeof(why)), -EINVAL);
	assert_true(!strncmp(why, "unknown counter 'bogus'; known: instructions, cycles,", 52));
	assert_non_null(strstr(why, "task-clock, cpu-clock, page-faults"));
	assert_int_equal(weft_ctr_parse("cycles,cpu-cycles", d, why, sizeof(why)), -EINVAL);
	assert_string_equal(why, "counter 'cpu-cycles' named twice");
	assert_int_equal(weft_ctr_parse("task-clock,,cycles", d, why, sizeof(why)), -EINVAL);
	assert_int_equal(weft_ctr_parse("", d, why, sizeof(why)), -EINVAL);
	assert_int_equal(weft_ctr_parse("instructions,cycles,cache-references,cache-misses,branches,"
					 "branch-misses,task-clock,page-faults,context-switches",
					 d, why, sizeof(why)),
			 -E2BIG);
}

static void test_attr(void **state)
{
	(void)state;
	struct perf_event_attr a;
	weft_ctr_attr(weft_ctr_find("page-faults"), 1, 0, &a);
	assert_int_equal(a.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(a.config, PERF_COUNT_SW_PAGE_FAULTS);
	assert_int_equal(a.read_format, PERF_FORMAT_GROUP);
	assert_int_equal(a.disabled, 0);
	assert_int_equal(a.exclude_kernel, 0);
	assert_int_equal(a.inherit, 0); /* one group per thread */
	weft_ctr_attr(weft_ctr_find("cycles"), 0, 1, &a);
	assert_int_equal(a.read_format, 0); /* members: the leader reads the group */
	assert_int_equal(a.exclude_kernel, 1);
}

static void test_group_parse(void **state)
{
	(void)state;
	uint64_t buf[4] = {3, 10, 20, 30}, v[3];
	assert_int_equal(weft_ctr_group_parse(buf, sizeof(buf), 3, v), 0);
	assert_int_equal(v[0], 10);
	assert_int_equal(v[2], 30);
	assert_int_equal(weft_ctr_group_parse(buf, 16, 3, v), -1); /* short */
	assert_int_equal(weft_ctr_group_parse(buf, sizeof(buf), 2, v), -1); /* other count */
}

static uint64_t fake_pmc;
static uint32_t fake_idx_seen;
static int fake_calls;
static struct perf_event_mmap_page *bump_page; /* a writer that moves lock once mid-read */
static uint64_t fake_rdpmc(uint32_t idx)
{
	fake_idx_seen = idx;
	fake_calls++;
	if (bump_page && fake_calls == 1)
		bump_page->lock += 2;
	return fake_pmc;
}

static void test_mmap_decision(void **state)
{
	(void)state;
	static struct perf_event_mmap_page pg;
	uint64_t v = 0;
	memset(&pg, 0, sizeof(pg));
	/* software events: no rdpmc */
	assert_false(weft_ctr_mmap_can_rdpmc(&pg));
	assert_false(weft_ctr_mmap_can_rdpmc(NULL));
	assert_int_equal(weft_ctr_mmap_read(&pg, fake_rdpmc, &v), -1);
	assert_int_equal(fake_calls, 0);
	/* rdpmc allowed, but the event is not on a counter now (index 0): read() */
	pg.cap_user_rdpmc = 1;
	pg.pmc_width = 48;
	assert_true(weft_ctr_mmap_can_rdpmc(&pg));
	assert_int_equal(weft_ctr_mmap_read(&pg, fake_rdpmc, &v), -1);
	assert_int_equal(fake_calls, 0);
	/* on counter 3 (index 4): offset + the pmc's 48 bits, sign-extended */
	pg.index = 4;
	pg.offset = 1000;
	fake_pmc = 234;
	assert_int_equal(weft_ctr_mmap_read(&pg, fake_rdpmc, &v), 0);
	assert_int_equal(v, 1234);
	assert_int_equal(fake_idx_seen, 3);
	pg.offset = 1000;
	fake_pmc = 0xffffffffff9cull; /* -100 in 48 bits, garbage above */
	fake_pmc |= 0xabcd000000000000ull;
	assert_int_equal(weft_ctr_mmap_read(&pg, fake_rdpmc, &v), 0);
	assert_int_equal(v, 900);
	/* the kernel rewrote the page during the read: read again */
	fake_calls = 0;
	bump_page = &pg;
	fake_pmc = 5;
	assert_int_equal(weft_ctr_mmap_read(&pg, fake_rdpmc, &v), 0);
	assert_int_equal(fake_calls, 2);
	assert_int_equal(v, 1005);
	bump_page = NULL;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names), cmocka_unit_test(test_parse), cmocka_unit_test(test_attr),
		cmocka_unit_test(test_group_parse), cmocka_unit_test(test_mmap_decision),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
