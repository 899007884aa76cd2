/* The containment set of src/analysis/ranges.h: nesting, ties and errors worked out by hand,
 * then a long random run of inserts, removes and lookups checked against a plain list. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include "analysis/ranges.h"

static uint64_t found(const struct weft_ranges *r, uint64_t addr)
{
	uint64_t v = 0;
	return weft_ranges__find(r, addr, NULL, NULL, &v) ? v : 0;
}

static void nesting_and_ties(void **s)
{
	(void)s;
	struct weft_ranges r = WEFT_RANGES_INIT;
	assert_int_equal(weft_ranges__insert(&r, 0x1000, 0x9000, 1, 10), 0);  /* a mapping */
	assert_int_equal(weft_ranges__insert(&r, 0x2000, 0x3000, 2, 20), 0);  /* a block in it */
	assert_int_equal(weft_ranges__insert(&r, 0x2800, 0x2900, 3, 30), 0);  /* an item in the block */
	assert_int_equal(weft_ranges__insert(&r, 0x2000, 0x2400, 4, 40), 0);  /* same start, later */
	assert_int_equal(found(&r, 0x0fff), 0);
	assert_int_equal(found(&r, 0x1000), 10);
	assert_int_equal(found(&r, 0x2000), 40); /* highest seq among the same start */
	assert_int_equal(found(&r, 0x23ff), 40);
	assert_int_equal(found(&r, 0x2400), 20); /* past the later one: the block */
	assert_int_equal(found(&r, 0x2850), 30); /* innermost: highest start */
	assert_int_equal(found(&r, 0x2900), 20);
	assert_int_equal(found(&r, 0x5000), 10); /* past the nested ones: the outer one */
	assert_int_equal(found(&r, 0x8fff), 10);
	assert_int_equal(found(&r, 0x9000), 0);  /* the end is not in the range */
	uint64_t st = 0, en = 0;
	assert_int_equal(weft_ranges__find(&r, 0x2850, &st, &en, NULL), 1);
	assert_true(st == 0x2800 && en == 0x2900);
	/* errors: a duplicate key, an empty range, a missing key */
	assert_int_equal(weft_ranges__insert(&r, 0x2000, 0x2100, 2, 99), -EEXIST);
	assert_int_equal(weft_ranges__insert(&r, 0x7000, 0x7000, 9, 99), -EINVAL);
	assert_int_equal(weft_ranges__remove(&r, 0x2000, 9, NULL), -ENOENT);
	assert_int_equal(r.count, 4);
	uint64_t v = 0;
	assert_int_equal(weft_ranges__remove(&r, 0x2000, 4, &v), 0);
	assert_int_equal(v, 40);
	assert_int_equal(found(&r, 0x2000), 20);
	assert_int_equal(weft_ranges__remove(&r, 0x1000, 1, NULL), 0);
	assert_int_equal(found(&r, 0x5000), 0);
	assert_int_equal(found(&r, 0x2850), 30);
	/* a range at the very top of the address space */
	assert_int_equal(weft_ranges__insert(&r, UINT64_MAX - 16, UINT64_MAX, UINT64_MAX, 77), 0);
	assert_int_equal(found(&r, UINT64_MAX - 1), 77);
	assert_int_equal(found(&r, UINT64_MAX), 0);
	weft_ranges__clear(&r);
	assert_int_equal(found(&r, 0x2850), 0);
	assert_int_equal(weft_ranges__insert(&r, 1, 2, 1, 5), 0); /* usable after clear */
	assert_int_equal(found(&r, 1), 5);
	weft_ranges__clear(&r);
}

struct ref { uint64_t start, end, seq; int live; };

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Random ranges of any size (a byte to most of the space) over a small space, so they overlap
 * and nest a lot; every lookup compared with a scan of the live ones. */
static void random_against_a_list(void **s)
{
	(void)s;
	enum { N = 20000, SPACE = 1 << 16 };
	struct ref *ref = calloc(N, sizeof(*ref));
	assert_non_null(ref);
	struct weft_ranges r = WEFT_RANGES_INIT;
	uint64_t x = 88172645463325252ull;
	size_t n = 0, live = 0;
	for (int step = 0; step < 60000; step++) {
		unsigned op = (unsigned)(rnd(&x) % 8);
		if (op < 3 && n < N) {
			uint64_t start = rnd(&x) % SPACE;
			unsigned shift = (unsigned)(rnd(&x) % 16);
			uint64_t len = 1 + rnd(&x) % (1ull << shift);
			if (rnd(&x) % 4 == 0 && n)
				start = ref[rnd(&x) % n].start; /* same starts: ties on seq */
			ref[n] = (struct ref){start, start + len, n + 1, 1};
			assert_int_equal(weft_ranges__insert(&r, start, start + len, n + 1, n + 1), 0);
			n++;
			live++;
		} else if (op < 5 && live) {
			size_t i = rnd(&x) % n;
			while (!ref[i].live)
				i = (i + 1) % n;
			uint64_t v = 0;
			assert_int_equal(weft_ranges__remove(&r, ref[i].start, ref[i].seq, &v), 0);
			assert_int_equal(v, ref[i].seq);
			ref[i].live = 0;
			live--;
		} else {
			uint64_t a = rnd(&x) % (SPACE + 256);
			uint64_t want = 0, ws = 0;
			for (size_t i = 0; i < n; i++)
				if (ref[i].live && ref[i].start <= a && a < ref[i].end &&
				    (!want || ref[i].start > ws || (ref[i].start == ws && ref[i].seq > want))) {
					want = ref[i].seq;
					ws = ref[i].start;
				}
			assert_int_equal(found(&r, a), want);
		}
		assert_int_equal(r.count, live);
	}
	weft_ranges__clear(&r);
	free(ref);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(nesting_and_ties),
		cmocka_unit_test(random_against_a_list),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
