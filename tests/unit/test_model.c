/* The walker: nesting, unwinding, unterminated slices, orphan ends, attached args and flows;
 * plain events offered to a converter's weft_plain_fn make the same stream. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include "export/model.h"
#include "trace_builder.h"

static char log_[8192];

static void collect(void *ud, const struct weft_ev *e)
{
	(void)ud;
	static const char *k[] = {"B", "E", "I", "C", "AB", "AE", "AI", "X", "D"};
	char one[64];
	snprintf(one, sizeof(one), "%s%u@%llu%s%s", k[e->kind], e->id, (unsigned long long)e->ts,
		 e->flags & WEFT_EVF_UNWOUND ? "u" : "", e->flags & WEFT_EVF_UNTERMINATED ? "t" : "");
	strcat(log_, one);
	for (unsigned i = 0; i < e->nargs; i++) {
		snprintf(one, sizeof(one), "[a%u=%lld]", e->args[i].key, (long long)e->args[i].v);
		strcat(log_, one);
	}
	for (unsigned i = 0; i < e->nout; i++) {
		snprintf(one, sizeof(one), "[>%llu]", (unsigned long long)e->flows_out[i]);
		strcat(log_, one);
	}
	for (unsigned i = 0; i < e->nin; i++) {
		snprintf(one, sizeof(one), "[<%llu]", (unsigned long long)e->flows_in[i]);
		strcat(log_, one);
	}
	strcat(log_, " ");
}

static struct weft_walk_stats walk(uint64_t *w, size_t n)
{
	struct weft_site_def sites[8];
	memset(sites, 0, sizeof(sites));
	struct weft_proc p;
	memset(&p, 0, sizeof(p));
	p.mult = (unsigned __int128)1 << 32; /* ticks are ns */
	p.sites = sites;
	p.nsites = 8;
	struct weft_walk_stats st = {0};
	struct weft_walker wk;
	log_[0] = 0;
	weft_walker_init(&wk, &p, collect, NULL, &st);
	size_t half = 0; /* split at the record boundary nearest the middle: two chunks */
	while (half < n / 2)
		half += 2 + weft_rec_extra(w[half + 1]);
	weft_walker_feed(&wk, w, half); /* state (open slices) carries across chunks */
	weft_walker_feed(&wk, w + half, n - half);
	weft_walker_finish(&wk, 999);
	return st;
}

static void nesting_and_repair(void **s)
{
	(void)s;
	uint64_t w[] = {
		10, HDR(1, WEFT_R_BEGIN, 0, 0), 5, HDR(4, WEFT_R_ARG_I64, 0, 0), 77, HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		20, HDR(2, WEFT_R_BEGIN, 0, 0),
		25, HDR(3, WEFT_R_END, 0, 0),           /* orphan: 3 never began */
		30, HDR(2, WEFT_R_BEGIN, 0, 0),          /* recursion */
		40, HDR(1, WEFT_R_END, 0, 0),           /* skips both 2s: unwound */
		50, HDR(3, WEFT_R_BEGIN, 0, 0),          /* never ends */
		60, HDR(5, WEFT_R_INSTANT, 0, 0), 88, HDR(0, WEFT_R_FLOW_IN, 0, 0),
		70, HDR(0, WEFT_R_DROPPED, 1, 0), 12,
		71, HDR(0, WEFT_R_FLOW_OUT, 0, 0),       /* nothing to attach to */
	};
	struct weft_walk_stats st = walk(w, sizeof(w) / 8);
	assert_string_equal(log_, "B1@10[a4=5][>77] B2@20 B2@30 E2@40u E2@40u E1@40 B3@50 I5@60[<88] "
				  "D0@70 E3@999t ");
	assert_int_equal(st.unmatched_end, 1);
	assert_int_equal(st.unwound, 2);
	assert_int_equal(st.unterminated, 1);
	assert_int_equal(st.orphan_flows, 1);
	assert_int_equal(st.events, 6); /* B1 B2 B2 E1 B3 I5 */
}

static void tracks_are_separate(void **s)
{
	(void)s;
	uint64_t w[] = {
		10, HDR(1, WEFT_R_BEGIN, 0, 0),
		20, HDR(1, WEFT_R_BEGIN, 0, 7),  /* same name on track 7 */
		30, HDR(1, WEFT_R_END, 0, 0),    /* closes the thread's one, not track 7's */
		40, HDR(1, WEFT_R_END, 0, 7),
		45, HDR(2, WEFT_R_COMPLETE, 1, 0), 48,
		50, HDR(3, WEFT_R_ASYNC_BEGIN, 1, 0), 9,
		55, HDR(6, WEFT_R_COUNTER_F64, 1, 0), 0x3ff0000000000000ull,
	};
	struct weft_walk_stats st = walk(w, sizeof(w) / 8);
	assert_string_equal(log_, "B1@10 B1@20 E1@30 E1@40 X2@45 AB3@50 C6@55 ");
	assert_int_equal(st.unwound + st.unterminated + st.unmatched_end, 0);
}

static void truncated_record_stops(void **s)
{
	(void)s;
	/* a string argument claiming more words than the chunk has ends the walk there */
	uint64_t w[] = {10, HDR(1, WEFT_R_INSTANT, 0, 0), 5, HDR(4, WEFT_R_ARG_STR, 9, 0), 0};
	walk(w, sizeof(w) / 8);
	assert_string_equal(log_, "I1@10 ");
}

/* ---- plain events (weft_plain_fn): offered in batches before any weft_ev is made ---- */

static unsigned plain_taken, plain_refuse; /* events taken; an id the hook refuses (0: none) */

static size_t take_plain(void *ud, const struct weft_plain_ev *ev, size_t n)
{
	(void)ud;
	for (size_t i = 0; i < n; i++) {
		if (ev[i].id == plain_refuse)
			return i;
		char one[64];
		snprintf(one, sizeof(one), "%s%u@%llu ", ev[i].kind == WEFT_EV_BEGIN ? "B" : "E", ev[i].id,
			 (unsigned long long)ev[i].ts);
		strcat(log_, one);
		plain_taken++;
	}
	return n;
}

/* The records walked (prepared: function ids, not addresses) with or without the hook, in two
 * chunks; the log of every event, as collect writes it, whichever way it came. */
static void walk_prepared(uint64_t *w, size_t n, int plain, unsigned nctr)
{
	struct weft_site_def sites[8];
	memset(sites, 0, sizeof(sites));
	struct weft_proc p;
	memset(&p, 0, sizeof(p));
	p.mult = (unsigned __int128)1 << 32;
	p.sites = sites;
	p.nsites = 8;
	p.nctr = nctr;
	struct weft_walk_stats st = {0};
	struct weft_walker wk;
	log_[0] = 0;
	plain_taken = 0;
	weft_walker_init(&wk, &p, collect, NULL, &st);
	wk.plain = plain ? take_plain : NULL;
	size_t half = 0;
	while (half < n / 2)
		half += 2 + weft_rec_extra(w[half + 1]);
	weft_walker_feed_prepared(&wk, w, half);
	weft_walker_feed_prepared(&wk, w + half, n - half);
	weft_walker_finish(&wk, 999);
}

static void plain_events_same_stream(void **s)
{
	(void)s;
	uint64_t w[] = {
		10, HDR(1, WEFT_R_FUNC_ENTER, 0, 0),
		11, HDR(2, WEFT_R_FUNC_ENTER, 0, 0),
		12, HDR(2, WEFT_R_FUNC_EXIT, 0, 0),
		13, HDR(3, WEFT_R_BEGIN, 0, 0), 5, HDR(4, WEFT_R_ARG_I64, 0, 0), /* an argument: not plain */
		14, HDR(3, WEFT_R_END, 0, 0), 6, HDR(4, WEFT_R_ARG_I64, 0, 0),  /* an end's (1.7) */
		15, HDR(5, WEFT_R_BEGIN, 0, 0), 77, HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		16, HDR(5, WEFT_R_END, 1, 0), WEFT_END_EXCEPTION,             /* flags: not plain */
		17, HDR(2, WEFT_R_FUNC_ENTER, 0, 0),
		18, HDR(6, WEFT_R_FUNC_ENTER, 1, 0), 42,                          /* counters (nctr 1) */
		19, HDR(6, WEFT_R_FUNC_EXIT, 0, 0),
		20, HDR(1, WEFT_R_FUNC_EXIT, 0, 0),                               /* unwinds 2 */
		21, HDR(3, WEFT_R_BEGIN, 0, 0),
		22, HDR(3, WEFT_R_END, 0, 0),
		23, HDR(7, WEFT_R_BEGIN, 0, 2),                                   /* a named track */
		24, HDR(2, WEFT_R_FUNC_ENTER, 0, 0),                              /* never ends */
	};
	size_t n = sizeof(w) / 8;
	const char *want = "B1@10 B2@11 E2@12 B3@13[a4=5] E3@14[a4=6] B5@15[>77] E5@16 B2@17 B6@18 E6@19 "
			   "E2@20u E1@20 B3@21 E3@22 B7@23 B2@24 E2@999t E7@999t ";
	walk_prepared(w, n, 0, 1);
	assert_string_equal(log_, want);
	plain_refuse = 0;
	walk_prepared(w, n, 1, 1);
	assert_string_equal(log_, want);
	/* plain: B1 B2 E2 B2 E6 E1 B3 E3 B2; not: those with arguments, flows, flags or counters,
	 * unwound or unterminated, or on a named track */
	assert_int_equal(plain_taken, 9);
	plain_refuse = 2; /* a converter that cannot take some: the walker hands those over in full */
	walk_prepared(w, n, 1, 1);
	assert_string_equal(log_, want);
	assert_int_equal(plain_taken, 5);
}

/* More plain events than a batch holds, some refused in the middle of a batch. */
static void plain_batches(void **s)
{
	(void)s;
	enum { CALLS = 150 };
	uint64_t w[CALLS * 4];
	char want[sizeof(log_)] = "";
	for (unsigned i = 0; i < CALLS; i++) {
		uint32_t id = 1 + i % 3;
		w[4 * i] = 100 + 2 * i;
		w[4 * i + 1] = HDR(id, WEFT_R_FUNC_ENTER, 0, 0);
		w[4 * i + 2] = 101 + 2 * i;
		w[4 * i + 3] = HDR(id, WEFT_R_FUNC_EXIT, 0, 0);
		char one[64];
		snprintf(one, sizeof(one), "B%u@%u E%u@%u ", id, 100 + 2 * i, id, 101 + 2 * i);
		strcat(want, one);
	}
	walk_prepared(w, CALLS * 4, 0, 0);
	assert_string_equal(log_, want);
	plain_refuse = 0;
	walk_prepared(w, CALLS * 4, 1, 0);
	assert_string_equal(log_, want);
	assert_int_equal(plain_taken, 2 * CALLS);
	plain_refuse = 3;
	walk_prepared(w, CALLS * 4, 1, 0);
	assert_string_equal(log_, want);
	assert_int_equal(plain_taken, 2 * CALLS - 2 * (CALLS / 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nesting_and_repair), cmocka_unit_test(tracks_are_separate),
		cmocka_unit_test(truncated_record_stops), cmocka_unit_test(plain_events_same_stream),
		cmocka_unit_test(plain_batches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
