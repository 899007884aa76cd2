/* What a drop keeps (src/lib/dropkeep.c): of the dropped records, the begins of slices still open
 * when the drop ends and the ends of slices begun before it, in order, with their times; closes
 * matched by track and id as the converter's walker matches them (functions on track 0). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "lib/dropkeep.h"
#include "format/format.h"

static uint64_t ts;

static void note(struct weft_dropkeep *k, unsigned type, uint32_t id, unsigned track)
{
	uint64_t w[2] = {++ts, weft__hdr(id, type, 0, track)};
	weft_dropkeep_note(k, w, 2);
}

/* The kept records as "E4096@1 X12@3 B7/5@4" (type letter, id, /track when not 0, @time). */
static const char *kept(const struct weft_dropkeep *k)
{
	static char out[4096];
	size_t len = 0;
	out[0] = 0;
	for (size_t i = 0; i < k->nkeep; i += 2 + weft_rec_extra(k->keep[i + 1])) {
		uint64_t h = k->keep[i + 1];
		unsigned type = weft_rec_type(h);
		char c = type == WEFT_R_FUNC_ENTER ? 'E' : type == WEFT_R_FUNC_EXIT ? 'X' : type == WEFT_R_BEGIN ? 'B' : 'N';
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%c%u", len ? " " : "", c, weft_rec_id(h));
		if (weft_rec_track(h) && type != WEFT_R_FUNC_ENTER && type != WEFT_R_FUNC_EXIT)
			len += (size_t)snprintf(out + len, sizeof(out) - len, "/%u", weft_rec_track(h));
		len += (size_t)snprintf(out + len, sizeof(out) - len, "@%llu", (unsigned long long)k->keep[i]);
	}
	return out;
}

/* Begun and ended inside the drop: nothing kept; what is still open is. */
static void test_inner_calls_go(void **unused)
{
	(void)unused;
	struct weft_dropkeep k = {0};
	ts = 0;
	note(&k, WEFT_R_FUNC_ENTER, 10, 0);
	note(&k, WEFT_R_FUNC_ENTER, 20, 0);
	note(&k, WEFT_R_FUNC_EXIT, 20, 0);
	note(&k, WEFT_R_FUNC_EXIT, 10, 0);
	note(&k, WEFT_R_FUNC_ENTER, 30, 0);
	note(&k, WEFT_R_INSTANT, 5, 0); /* not a begin or end: dropped */
	assert_string_equal(kept(&k), "E30@5");
	assert_int_equal(weft_dropkeep_events(&k), 1);
}

/* Ends of slices begun before the drop are kept, then what opened after them. */
static void test_ends_of_earlier_slices_kept(void **unused)
{
	(void)unused;
	struct weft_dropkeep k = {0};
	ts = 0;
	note(&k, WEFT_R_FUNC_EXIT, 20, 0);
	note(&k, WEFT_R_FUNC_EXIT, 10, 0);
	note(&k, WEFT_R_FUNC_ENTER, 10, 0);
	note(&k, WEFT_R_FUNC_ENTER, 20, 0);
	assert_string_equal(kept(&k), "X20@1 X10@2 E10@3 E20@4");
}

/* An exception thrown through Y (entered in the drop) to X (entered before it): X's exit closes
 * Y too, as the walker has it; the innermost of two same-named levels is the one closed. */
static void test_exception_and_recursion(void **unused)
{
	(void)unused;
	struct weft_dropkeep k = {0};
	ts = 0;
	note(&k, WEFT_R_FUNC_ENTER, 40, 0);
	note(&k, WEFT_R_FUNC_EXIT, 30, 0);
	note(&k, WEFT_R_FUNC_ENTER, 50, 0);
	note(&k, WEFT_R_FUNC_ENTER, 50, 0);
	note(&k, WEFT_R_FUNC_ENTER, 60, 0);
	note(&k, WEFT_R_FUNC_EXIT, 50, 0); /* closes the inner 50 and 60 above it */
	assert_string_equal(kept(&k), "X30@2 E50@3");
}

/* Slices on a named track close by site on that track; the thread's functions share track 0
 * with BEGINs on it (the walker's one stack). */
static void test_tracks(void **unused)
{
	(void)unused;
	struct weft_dropkeep k = {0};
	ts = 0;
	note(&k, WEFT_R_BEGIN, 7, 5);
	note(&k, WEFT_R_FUNC_ENTER, 7, 0);
	note(&k, WEFT_R_BEGIN, 8, 0);
	note(&k, WEFT_R_END, 7, 5);       /* track 5's 7, not the function 7 */
	note(&k, WEFT_R_FUNC_EXIT, 7, 0); /* and BEGIN 8 on track 0 with it */
	note(&k, WEFT_R_END, 9, 5);       /* begun before the drop */
	assert_string_equal(kept(&k), "N9/5@6");
}

/* Bounded: opens past WEFT_DROPKEEP_WORDS are dropped as before, nothing written past it. */
static void test_bounded(void **unused)
{
	(void)unused;
	struct weft_dropkeep k = {0};
	ts = 0;
	for (int i = 0; i < 1000; i++)
		note(&k, WEFT_R_FUNC_ENTER, (uint32_t)i, 0);
	assert_int_equal(k.nkeep, WEFT_DROPKEEP_WORDS);
	assert_int_equal(weft_dropkeep_events(&k), WEFT_DROPKEEP_WORDS / 2);
}

/* Written: the DROPPED record first (where events were lost), at the drop's start or at the
 * first kept record's time when that is earlier, then the kept records; cleared after. */
static void test_write(void **unused)
{
	(void)unused;
	struct weft_dropkeep k = {0};
	ts = 100;
	k.since = 105;
	note(&k, WEFT_R_FUNC_ENTER, 10, 0);
	uint64_t out[3 + WEFT_DROPKEEP_WORDS];
	size_t n = weft_dropkeep_write(&k, out, 42);
	assert_int_equal(n, 5);
	assert_int_equal(out[0], 101);
	assert_int_equal(weft_rec_type(out[1]), WEFT_R_DROPPED);
	assert_int_equal(out[2], 42);
	assert_int_equal(weft_rec_type(out[4]), WEFT_R_FUNC_ENTER);
	assert_int_equal(k.nkeep, 0);
	k.since = 200;
	note(&k, WEFT_R_FUNC_EXIT, 10, 0);
	assert_int_equal(weft_dropkeep_write(&k, out, 0), 2); /* nothing lost: no DROPPED record */
	assert_int_equal(weft_rec_type(out[1]), WEFT_R_FUNC_EXIT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inner_calls_go),
		cmocka_unit_test(test_ends_of_earlier_slices_kept),
		cmocka_unit_test(test_exception_and_recursion),
		cmocka_unit_test(test_tracks),
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_write),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
