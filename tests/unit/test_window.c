/* The time window (format/window.c): a trace of 100 chunks read for a window of five of them
 * decodes only the chunks at the window's edges, the one holding the begin of the slice open
 * across it, and the nearest one with a counter value (the reader's statistics count them);
 * the rest of the window is handed on undecoded, and the events are those of the window. A
 * trace without the time index gives the same events, decoding every chunk to find them. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include "format/reader.h"
#include "format/chunkindex.h"
#include "export/model.h"
#include "trace_builder.h"

#define NCHUNKS 100
static struct tb meta, ev;

/* Chunk c spans ticks (= ns) 10000c + 1000 .. + 9000: a `step` slice with 5 `tick` instants; the
 * `run` slice begins in chunk 0 and ends in the last; every tenth chunk sets the counter. */
static void build(int with_index)
{
	free(meta.p);
	free(ev.p);
	memset(&meta, 0, sizeof(meta));
	memset(&ev, 0, sizeof(ev));
	tb_header(&meta, WEFT_META_MAGIC, 1, 77);
	tb_clock_kind(&meta, 1);
	tb_clock(&meta, 1000, 1000);
	tb_clock(&meta, 2001000, 2001000);
	tb_site(&meta, 1, 0, "run");
	tb_site(&meta, 2, 0, "step");
	tb_site(&meta, 3, 0, "tick");
	tb_site(&meta, 4, 1, "progress");
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 77);
	for (uint64_t c = 0; c < NCHUNKS; c++) {
		uint64_t w[64], base = 10000 * c;
		size_t n = 0;
		if (c == 0) {
			w[n++] = base + 1000;
			w[n++] = HDR(1, WEFT_R_BEGIN, 0, 0);
		}
		w[n++] = base + 1000;
		w[n++] = HDR(2, WEFT_R_BEGIN, 0, 0);
		for (uint64_t i = 0; i < 5; i++) {
			w[n++] = base + 2000 + i * 1000;
			w[n++] = HDR(3, WEFT_R_INSTANT, 0, 0);
		}
		if (c % 10 == 0) {
			w[n++] = base + 7500;
			w[n++] = HDR(4, WEFT_R_COUNTER_I64, 1, 0);
			w[n++] = c;
		}
		w[n++] = base + 9000;
		w[n++] = HDR(2, WEFT_R_END, 0, 0);
		if (c == NCHUNKS - 1) {
			w[n++] = base + 9500;
			w[n++] = HDR(1, WEFT_R_END, 0, 0);
		}
		if (with_index) {
			struct weft_index_rec e = {.tid = 78, .seq = c};
			weft_index_scan(w, n, &e);
			tb_meta(&meta, WEFT_M_CHUNK_INDEX, &e, sizeof(e));
		}
		tb_chunk(&ev, 78, c, w, n, 1);
	}
}

struct seen {
	uint64_t begins, instants, counters, first_counter, run_begin, ends, unterminated;
	uint64_t first_ts, last_ts;
};

static void on_event(void *ud, const struct weft_ev *e)
{
	struct seen *s = ud;
	if (e->kind == WEFT_EV_BEGIN) {
		s->begins++;
		if (e->id == 1)
			s->run_begin = e->ts;
	}
	if (e->kind == WEFT_EV_END) {
		s->ends++;
		s->unterminated += (e->flags & WEFT_EVF_UNTERMINATED) != 0;
	}
	if (e->kind == WEFT_EV_INSTANT) {
		s->instants++;
		if (!s->first_ts || e->ts < s->first_ts)
			s->first_ts = e->ts;
		if (e->ts > s->last_ts)
			s->last_ts = e->ts;
	}
	if (e->kind == WEFT_EV_COUNTER && s->counters++ == 0)
		s->first_counter = e->value;
}

static void window_reads_only_its_chunks(void **st)
{
	(void)st;
	for (int indexed = 1; indexed >= 0; indexed--) {
		build(indexed);
		const char *names[2] = {"77.wmeta", "77-0.wevents"};
		const unsigned char *data[2] = {meta.p, ev.p};
		size_t sizes[2] = {meta.n, ev.n};
		struct weft_trace *t = NULL;
		char err[256];
		assert_int_equal(weft_trace_from_buffers(names, data, sizes, 2, &t, err, sizeof(err)), 0);
		assert_int_equal(t->first_ns, 1000);
		/* chunks 50 to 54: from chunk 50's first event to chunk 54's third instant */
		struct weft_window_req req = {1, 1, 500000, 544000};
		assert_int_equal(weft_trace_window_apply(t, &req, err, sizeof(err)), 0);
		const struct weft_window_info *w = &t->window;
		assert_int_equal(w->chunks, NCHUNKS);
		assert_int_equal(w->scanned, indexed ? 0 : NCHUNKS);
		/* decoded: 50 and 54 (the edges), 0 (run's begin), 40 (the counter's last value) */
		assert_int_equal(w->decoded, 4);
		assert_int_equal(w->kept, 3);
		assert_int_equal(w->open_slices, 1);
		assert_int_equal(w->counters, 1);
		assert_int_equal(t->procs[0].threads[0].nchunks, 5);
		struct seen s = {0};
		struct weft_walk_stats ws = {0};
		uint64_t *buf = NULL;
		size_t cap = 0;
		weft_walk_thread(&t->procs[0], &t->procs[0].threads[0], t->last_ns, on_event, &s, &ws, &buf, &cap);
		free(buf);
		assert_int_equal(s.run_begin, 1000);   /* its real begin */
		assert_int_equal(s.begins, 1 + 5);     /* run, steps 50-54 */
		assert_int_equal(s.instants, 4 * 5 + 4); /* chunk 54: 542000 to TO = 1000 + 544000 */
		assert_int_equal(s.first_ts, 502000);
		assert_int_equal(s.last_ts, 545000);
		assert_int_equal(s.counters, 2);       /* the last before (40), then 50's */
		assert_int_equal(s.first_counter, 40);
		assert_int_equal(s.unterminated, 2);   /* run and step 54, closed at TO */
		assert_int_equal(ws.unmatched_end, 0);
		if (!indexed)
			assert_int_equal(t->nwarnings, 1); /* "... have no time index ..." */
		weft_trace_free(t);
	}
	free(meta.p);
	free(ev.p);
	memset(&meta, 0, sizeof(meta));
	memset(&ev, 0, sizeof(ev));
}

static void window_outside_the_trace_is_refused(void **st)
{
	(void)st;
	build(1);
	const char *names[2] = {"77.wmeta", "77-0.wevents"};
	const unsigned char *data[2] = {meta.p, ev.p};
	size_t sizes[2] = {meta.n, ev.n};
	struct weft_trace *t = NULL;
	char err[256];
	assert_int_equal(weft_trace_from_buffers(names, data, sizes, 2, &t, err, sizeof(err)), 0);
	struct weft_window_req req = {1, 0, 5000000, 0};
	assert_int_equal(weft_trace_window_apply(t, &req, err, sizeof(err)), -ERANGE);
	assert_non_null(strstr(err, "after the trace's end"));
	weft_trace_free(t);
	free(meta.p);
	free(ev.p);
	memset(&meta, 0, sizeof(meta));
	memset(&ev, 0, sizeof(ev));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(window_reads_only_its_chunks),
		cmocka_unit_test(window_outside_the_trace_is_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
