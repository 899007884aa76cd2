/* test_clockgap.c - collect/clockgap.c: CLOCK_BOOTTIME minus CLOCK_MONOTONIC read as a
 * bracketed pair. Scripted clocks stand for a thread preempted between two reads (the try
 * it spoils is wide, and the narrowest try is the one used), then the system's own clocks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <time.h>
#include "collect/clockgap.h"

#define GAP 7000000000ll /* 7 s suspended */

/* Each try reads monotonic, boot, monotonic; the script gives the true monotonic time of
 * each read (boot = that + GAP). */
struct script {
	int64_t at[15];
	int i;
};

static int64_t scripted(clockid_t clock, void *ud)
{
	struct script *s = ud;
	assert_true(s->i < 15);
	int64_t t = s->at[s->i++];
	assert_int_equal(clock, (s->i % 3 == 2) ? CLOCK_BOOTTIME : CLOCK_MONOTONIC);
	return clock == CLOCK_BOOTTIME ? t + GAP : t;
}

/* try k read at t, t + 10, t + 20 */
static void quiet_try(struct script *s, int k, int64_t t)
{
	s->at[3 * k] = t;
	s->at[3 * k + 1] = t + 10;
	s->at[3 * k + 2] = t + 20;
}

static void preempted_before_the_boot_read(void **st)
{
	(void)st;
	struct script s = {.i = 0};
	/* the first try: 50 us off the CPU between the first monotonic read and the boot read
	 * (read unbracketed, that pair was 50 us off) */
	s.at[0] = 1000;
	s.at[1] = 51000;
	s.at[2] = 51010;
	for (int k = 1; k < 5; k++)
		quiet_try(&s, k, 100000 * k);
	assert_int_equal(weft_clock_gap_from(scripted, &s), GAP);
	assert_int_equal(s.i, 15);
}

static void preempted_after_the_boot_read(void **st)
{
	(void)st;
	struct script s = {.i = 0};
	for (int k = 0; k < 4; k++)
		quiet_try(&s, k, 100000 * k);
	s.at[12] = 900000; /* the last try: off the CPU after its boot read */
	s.at[13] = 900010;
	s.at[14] = 960000;
	assert_int_equal(weft_clock_gap_from(scripted, &s), GAP);
}

static void narrowest_try_wins(void **st)
{
	(void)st;
	/* every try skewed (the boot read early in its bracket) by half its width minus 5 ns:
	 * widths 100, 80, 20, 90, 60 give gaps GAP - 45, - 35, - 5, - 40, - 25 */
	static const int64_t width[5] = {100, 80, 20, 90, 60};
	struct script s = {.i = 0};
	for (int k = 0; k < 5; k++) {
		int64_t t = 100000 * k;
		s.at[3 * k] = t;
		s.at[3 * k + 1] = t + 5;
		s.at[3 * k + 2] = t + width[k];
	}
	assert_int_equal(weft_clock_gap_from(scripted, &s), GAP - 5);
}

static void system_clocks(void **st)
{
	(void)st;
	/* the boot clock never runs behind the monotonic one: at most half a bracket of error */
	int64_t g = weft_clock_gap();
	assert_true(g > -1000000);
	struct timespec m, b;
	clock_gettime(CLOCK_MONOTONIC, &m);
	clock_gettime(CLOCK_BOOTTIME, &b);
	int64_t direct = ((int64_t)b.tv_sec - m.tv_sec) * 1000000000 + (b.tv_nsec - m.tv_nsec);
	assert_true(g <= direct + 1000000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(preempted_before_the_boot_read), cmocka_unit_test(preempted_after_the_boot_read),
		cmocka_unit_test(narrowest_try_wins), cmocka_unit_test(system_clocks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
