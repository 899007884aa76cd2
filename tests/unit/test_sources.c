/* The data sources' table and the loops that drive it (collect/source.h, collect/sources.c).
 * The runtime's table: every row has a name, an option that lib/config.c knows, wanted, open,
 * stop and describe, names are unique, and the order is the documented one. The loops, over a
 * table of counting rows: each wanted row is opened once and started once however often the
 * start runs (the trace's start and a late start racing), a row that is unavailable says so
 * in one line and is never started, drained or stopped, an idle row can start late, fork
 * handlers run for started rows only (prepare in reverse order), and every started row is
 * stopped exactly once, in reverse order. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <weft.h>
#include "lib/internal.h"
#include "collect/source.h"

/* ---- the runtime's table ---- */

static void runtime_table(void **st)
{
	(void)st;
	const struct weft_source_set *s = weft_sources();
	/* libweft's rows (the preload runtime adds memory, mem_access, watch, sched, counters:
	 * tests/integration/test_sources.py sees them through weft info) */
	static const char *const order[] = {"sampler", "gpu"};
	assert_int_equal(s->n, sizeof(order) / sizeof(order[0]));
	for (unsigned i = 0; i < s->n; i++) {
		const struct weft_source *r = s->row[i];
		assert_non_null(r->name);
		assert_string_equal(r->name, order[i]);
		assert_non_null(r->option);
		assert_non_null(r->wanted);
		assert_non_null(r->open);
		assert_non_null(r->stop);
		assert_non_null(r->describe);
		char keys[200];
		snprintf(keys, sizeof(keys), "%s", r->option);
		for (char *save, *k = strtok_r(keys, ",", &save); k; k = strtok_r(NULL, ",", &save))
			assert_non_null(weft_config_valid(k)); /* an option weft knows */
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(s->row[j]->name, r->name);
	}
}

/* ---- the loops, over rows that count ---- */

enum { A, B, C, D, NROWS };
static int opens[NROWS], starts[NROWS], drains[NROWS], preps[NROWS], parents[NROWS], children[NROWS],
	stops[NROWS];
static char trail[64]; /* the order of the fork and stop calls */
static int wanted_d;   /* D's option */
static int c_later;    /* C opens for real once this is set (a late start) */
static char logged[512];

static void note(char what, int row)
{
	size_t l = strlen(trail);
	if (l + 2 < sizeof(trail)) {
		trail[l] = what;
		trail[l + 1] = (char)('a' + row);
		trail[l + 2] = 0;
	}
}

#define ROW_FNS(R, r)                                                                     \
	static void r##_start(void) { starts[R]++; }                                       \
	static void r##_drain(void) { drains[R]++; }                                       \
	static void r##_prep(void) { preps[R]++; note('p', R); }                           \
	static void r##_parent(void) { parents[R]++; note('P', R); }                       \
	static void r##_child(void) { children[R]++; note('c', R); }                       \
	static void r##_stop(void) { stops[R]++; note('s', R); }                           \
	static void r##_describe(char *b, size_t n) { snprintf(b, n, "row " #r); }
ROW_FNS(A, a)
ROW_FNS(B, b)
ROW_FNS(C, c)
ROW_FNS(D, d)

static int yes(void) { return 1; }
static int d_wanted(void) { return wanted_d; }
static int a_open(char *why, size_t n) { (void)why; (void)n; opens[A]++; return 0; }
static int b_open(char *why, size_t n)
{
	opens[B]++;
	snprintf(why, n, "no such device");
	return -ENODEV;
}
static int c_open(char *why, size_t n)
{
	(void)why;
	(void)n;
	opens[C]++;
	return c_later ? 0 : WEFT_SOURCE_IDLE;
}
static int d_open(char *why, size_t n) { (void)why; (void)n; opens[D]++; return 0; }
static void b_label(char *buf, size_t n) { snprintf(buf, n, "bee=1:"); }

#define ROW(r, w, l) {.name = #r, .option = #r, .wanted = w, .label = l, .open = r##_open, .start = r##_start, \
		      .drain = r##_drain, .fork_prepare = r##_prep, .fork_parent = r##_parent,                 \
		      .fork_child = r##_child, .stop = r##_stop, .describe = r##_describe}
static const struct weft_source row_a = ROW(a, yes, NULL), row_b = ROW(b, yes, b_label), row_c = ROW(c, yes, NULL),
				row_d = ROW(d, d_wanted, NULL);
static const struct weft_source *const rows[NROWS] = {&row_a, &row_b, &row_c, &row_d};

static void capture(int level, const char *msg, void *ud)
{
	(void)level;
	(void)ud;
	size_t l = strlen(logged);
	snprintf(logged + l, sizeof(logged) - l, "%s\n", msg);
}

static void loops(void **st)
{
	(void)st;
	_Atomic int state[NROWS] = {0};
	struct weft_source_set s = {rows, NROWS, state};
	weft_set_log(capture, NULL);

	weft_sources_start(&s);
	weft_sources_start(&s); /* a second start opens nothing again */
	assert_int_equal(opens[A], 1);
	assert_int_equal(starts[A], 1);
	assert_int_equal(opens[B], 1);
	assert_int_equal(starts[B], 0);
	assert_string_equal(logged, "bee=1: unavailable: no such device\n"); /* once */
	assert_int_equal(opens[C], 1);
	assert_int_equal(starts[C], 0); /* idle */
	assert_int_equal(opens[D] + starts[D], 0); /* not wanted */
	assert_int_equal(atomic_load(&state[D]), WEFT_SRC_OFF);

	/* a late start: the idle row opens and starts; a started one is not started again */
	assert_int_equal(weft_sources_start_late(&s, "a"), -EALREADY);
	assert_int_equal(weft_sources_start_late(&s, "b"), -EALREADY);
	assert_int_equal(weft_sources_start_late(&s, "nope"), -ENOENT);
	c_later = 1;
	assert_int_equal(weft_sources_start_late(&s, "c"), 0);
	assert_int_equal(weft_sources_start_late(&s, "c"), -EALREADY);
	assert_int_equal(opens[A], 1);
	assert_int_equal(starts[A], 1);
	assert_int_equal(opens[C], 2);
	assert_int_equal(starts[C], 1);
	assert_int_equal(opens[B], 1);

	char text[200];
	weft_sources_describe(&s, text, sizeof(text));
	assert_string_equal(text, "a: row a\nc: row c\n");

	weft_sources_fork_prepare(&s);
	weft_sources_fork_parent(&s);
	weft_sources_fork_child(&s);
	weft_sources_drain(&s);
	assert_string_equal(trail, "pcpaPaPccacc"); /* prepare in reverse, started rows only */
	assert_int_equal(drains[A], 1);
	assert_int_equal(drains[C], 1);
	assert_int_equal(drains[B] + drains[D], 0);

	memset(trail, 0, sizeof(trail));
	weft_sources_stop(&s);
	weft_sources_stop(&s); /* weft_stop runs once, but a second pass must stop nothing */
	assert_string_equal(trail, "scsa"); /* reverse order, started rows only, once each */
	for (int r = 0; r < NROWS; r++)
		assert_int_equal(stops[r], starts[r]); /* every started row stopped, none twice */
	assert_int_equal(weft_sources_start_late(&s, "a"), -EALREADY); /* stopped stays stopped */
	weft_set_log(NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {cmocka_unit_test(runtime_table), cmocka_unit_test(loops)};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
