/* The flight recorder's chunk summaries (src/lib/flight.c): a thread's state - the slices open
 * at the ring's oldest kept chunk, which a snapshot re-emits - is built by applying each chunk's
 * summary in order, never its records. It must equal what the converter's walker (model.c) has
 * open after walking the same records: a close matched by its id on its stack (functions on the
 * thread's own, track 0), the levels above it on that stack closed with it (an exception, lost
 * events), a close whose begin is not open ignored. Checked on hand-made cases and on random
 * ones against a model of the walker, with chunks lost whole (what a drop does) and with
 * exceptions unwinding through chunks. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/flight.h"

#define FN(a) ((uint64_t)(a))
#define ENTER(a) WEFT_R_FUNC_ENTER, FN(a), 0
#define EXIT(a) WEFT_R_FUNC_EXIT, FN(a), 0

/* ---- records ---- */
struct recs {
	uint64_t w[1 << 16];
	size_t n;
	uint64_t ts;
};

static void put(struct recs *r, unsigned type, uint32_t id, unsigned track)
{
	r->w[r->n++] = ++r->ts;
	r->w[r->n++] = weft__hdr(id, type, 0, track);
}

static void put_arg(struct recs *r, uint32_t key, uint64_t v)
{
	r->w[r->n++] = v;
	r->w[r->n++] = weft__hdr(key, WEFT_R_ARG_I64, 0, 0);
}

/* ---- the state, built from summaries ---- */
struct state {
	struct stack s;
	uint64_t *ctr;
	size_t nctr, capctr;
};

static void apply(struct state *st, const uint64_t *w, size_t n)
{
	size_t nsum = 0;
	uint64_t *sum = fl_chunk_summary(w, n, &nsum);
	if (sum)
		fl_sum_apply_to(&st->s, sum, &st->ctr, &st->nctr, &st->capctr, 0);
	free(sum);
}

static void state_free(struct state *st)
{
	free(st->s.w);
	free(st->s.lvl);
	free(st->s.track);
	free(st->ctr);
}

/* The open levels on one track, outermost first, as ids: "4096 8192". */
static void open_on(const struct state *st, unsigned track, char *out, size_t cap)
{
	out[0] = 0;
	size_t len = 0;
	for (size_t i = 0; i < st->s.nlvl; i++)
		if (st->s.track[i] == track)
			len += (size_t)snprintf(out + len, cap - len, "%s%u", len ? " " : "",
						weft_rec_id(st->s.w[st->s.lvl[i] + 1]));
}

/* Chunks given as (type, id, track) triples, 0 ending a chunk, -1 the list; each chunk's
 * summary applied in order. */
static void run_chunks(struct state *st, const uint64_t *spec)
{
	struct recs *r = calloc(1, sizeof(*r));
	assert_non_null(r);
	for (size_t i = 0;; i += 3) {
		if (spec[i] == 0 || spec[i] == (uint64_t)-1) {
			apply(st, r->w, r->n);
			r->n = 0;
			if (spec[i] == (uint64_t)-1)
				break;
			i -= 2; /* a chunk's end is one word */
			continue;
		}
		put(r, (unsigned)spec[i], (uint32_t)spec[i + 1], (unsigned)spec[i + 2]);
	}
	free(r);
}

static void expect(const struct state *st, unsigned track, const char *want)
{
	char got[1024];
	open_on(st, track, got, sizeof(got));
	assert_string_equal(got, want);
}

/* worker (0x3000) calls work (0x1000), which calls leaf (0x2000); the chunk holding leaf's
 * entry was lost (dropped): leaf's exit closes nothing, work's closes work. (Before: each exit
 * closed the innermost function, so leaf's closed work and work's closed worker, the thread's
 * own function: the snapshot had work at depth 0.) */
static void test_exit_whose_entry_was_lost(void **unused)
{
	(void)unused;
	struct state st = {0};
	const uint64_t spec[] = {ENTER(0x3000), ENTER(0x1000), 0,
				 /* lost: ENTER(0x2000) */
				 EXIT(0x2000), EXIT(0x1000), ENTER(0x1000), (uint64_t)-1};
	run_chunks(&st, spec);
	expect(&st, 0, "12288 4096");
	state_free(&st);
}

/* An exit whose entry is open nowhere (lost) is ignored, as the walker ignores it. */
static void test_exit_of_nothing_open_ignored(void **unused)
{
	(void)unused;
	struct state st = {0};
	const uint64_t spec[] = {ENTER(0x3000), ENTER(0x1000), 0, EXIT(0x5000), EXIT(0x6000), (uint64_t)-1};
	run_chunks(&st, spec);
	expect(&st, 0, "12288 4096");
	state_free(&st);
}

/* An exception thrown from C through B: their exits never come; A's exit closes them, in the
 * same chunk or in a later one. */
static void test_exception_unwinds_through_chunks(void **unused)
{
	(void)unused;
	struct state st = {0};
	const uint64_t spec[] = {ENTER(0x100), ENTER(0xa00), 0, ENTER(0xb00), ENTER(0xc00), EXIT(0xa00),
				 ENTER(0xd00), 0, ENTER(0xe00), ENTER(0xf00), EXIT(0xe00), (uint64_t)-1};
	run_chunks(&st, spec);
	expect(&st, 0, "256 3328");
	state_free(&st);
}

/* Slices on a named track close by their site, the walker's way; the thread's functions are
 * not touched by them, nor they by a function's exit. Python's calls (BEGIN on track 0) share
 * the functions' stack. */
static void test_named_track_and_track0(void **unused)
{
	(void)unused;
	struct state st = {0};
	const uint64_t spec[] = {WEFT_R_BEGIN, 7, 5, WEFT_R_BEGIN, 8, 5, ENTER(0x100), WEFT_R_BEGIN, 9, 0, 0,
				 WEFT_R_END, 7, 5, EXIT(0x100), WEFT_R_BEGIN, 8, 5, (uint64_t)-1};
	run_chunks(&st, spec);
	expect(&st, 5, "8");
	expect(&st, 0, ""); /* the BEGIN on track 0 inside the function closed with it */
	state_free(&st);
}

/* ---- random cases against a model of the walker ---- */
struct model {
	uint32_t id[3][4096];
	size_t n[3];
};
static const unsigned tracks[3] = {0, 3, 4};

static void model_close(struct model *m, int t, uint32_t id)
{
	for (size_t i = m->n[t]; i-- > 0;)
		if (m->id[t][i] == id) {
			m->n[t] = i;
			return;
		}
}

static uint64_t rnd_state;
static unsigned rnd(unsigned n)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)(rnd_state >> 33) % n;
}

/* A program's records (per track, well nested; `exceptions`: some closes on track 0 name a
 * level below the innermost), cut into chunks at random points; `drops`: some chunks lost
 * whole. The state from the summaries equals the model's after the records that were kept. */
static void random_case(unsigned seed, int exceptions, int drops)
{
	rnd_state = seed;
	struct model truth = {0}, kept = {0};
	struct state st = {0};
	struct recs *chunk = calloc(1, sizeof(*chunk));
	assert_non_null(chunk);
	int lose = 0;
	for (int ev = 0; ev < 20000; ev++) {
		int t = rnd(10) < 7 ? 0 : 1 + (int)rnd(2);
		unsigned tr = tracks[t];
		unsigned op = rnd(100);
		uint32_t id;
		unsigned type;
		if (op < 48 || !truth.n[t]) { /* open */
			if (truth.n[t] >= 4000)
				continue;
			int fn = t == 0 && rnd(4) != 0;
			id = fn ? 0x1000 + 16 * rnd(40) : 1 + rnd(40);
			type = fn ? WEFT_R_FUNC_ENTER : WEFT_R_BEGIN;
			truth.id[t][truth.n[t]++] = id;
		} else { /* close the innermost, or (an exception) one below it */
			size_t k = truth.n[t] - 1;
			if (exceptions && t == 0 && rnd(20) == 0)
				k -= rnd((unsigned)truth.n[t]);
			id = truth.id[t][k];
			model_close(&truth, t, id); /* (an equal id above k: the walker closes that one) */
			int fn = id >= 0x1000;
			type = fn ? WEFT_R_FUNC_EXIT : WEFT_R_END;
		}
		put(chunk, type, id, type == WEFT_R_FUNC_ENTER || type == WEFT_R_FUNC_EXIT ? 0 : tr);
		if (!lose) {
			if (type == WEFT_R_FUNC_ENTER || type == WEFT_R_BEGIN)
				kept.id[t][kept.n[t]++] = id;
			else
				model_close(&kept, t, id);
		}
		if (rnd(8) == 0)
			put_arg(chunk, 77, (uint64_t)ev);
		if (rnd(200) == 0) { /* the chunk ends */
			if (!lose)
				apply(&st, chunk->w, chunk->n);
			chunk->n = 0;
			lose = drops && rnd(4) == 0;
		}
	}
	if (!lose)
		apply(&st, chunk->w, chunk->n);
	for (int t = 0; t < 3; t++) {
		char want[65536], got[65536];
		size_t len = 0;
		want[0] = 0;
		for (size_t i = 0; i < kept.n[t]; i++)
			len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%u", len ? " " : "", kept.id[t][i]);
		open_on(&st, tracks[t], got, sizeof(got));
		if (strcmp(want, got))
			fail_msg("seed %u track %u:\nwant %.300s\ngot  %.300s", seed, tracks[t], want, got);
	}
	free(chunk);
	state_free(&st);
}

static void test_random_nesting(void **unused)
{
	(void)unused;
	for (unsigned seed = 1; seed <= 40; seed++)
		random_case(seed, 0, 0);
}

static void test_random_with_lost_chunks(void **unused)
{
	(void)unused;
	for (unsigned seed = 1; seed <= 40; seed++)
		random_case(seed, 0, 1);
}

static void test_random_with_exceptions(void **unused)
{
	(void)unused;
	for (unsigned seed = 1; seed <= 40; seed++)
		random_case(seed, 1, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exit_whose_entry_was_lost),
		cmocka_unit_test(test_exit_of_nothing_open_ignored),
		cmocka_unit_test(test_exception_unwinds_through_chunks),
		cmocka_unit_test(test_named_track_and_track0),
		cmocka_unit_test(test_random_nesting),
		cmocka_unit_test(test_random_with_lost_chunks),
		cmocka_unit_test(test_random_with_exceptions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
