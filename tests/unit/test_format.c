/* The reader: metadata, chunk order, delta decoding, clock conversion, and salvage of
 * truncated, corrupt and too-new inputs. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include "format/reader.h"
#include "trace_builder.h"
#include "format/pack.h"

static struct tb meta, ev;

static void build(int zstd)
{
	free(meta.p);
	free(ev.p);
	memset(&meta, 0, sizeof(meta));
	memset(&ev, 0, sizeof(ev));
	tb_header(&meta, WEFT_META_MAGIC, 1, 77);
	tb_clock_kind(&meta, 1);
	tb_clock(&meta, 1000, 5000000);   /* 2 ticks per ns */
	tb_clock(&meta, 201000, 5100000);
	tb_site(&meta, 1, 0, "work");
	tb_site(&meta, 2, 1, "depth");
	uint32_t tid_name[3] = {78, 0, 0};
	memcpy((char *)tid_name + 4, "w1", 3);
	tb_meta(&meta, WEFT_M_THREAD, tid_name, 7);
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 77);
	/* chunk 1 written before chunk 0: the reader must order by seq */
	uint64_t c1[] = {3000, HDR(1, WEFT_R_END, 0, 0), 3100, HDR(2, WEFT_R_COUNTER_I64, 1, 0), 9};
	uint64_t c0[] = {2000, HDR(1, WEFT_R_BEGIN, 0, 0), 7, HDR(0, WEFT_R_ARG_I64, 0, 0)};
	tb_chunk(&ev, 78, 1, c1, 5, zstd);
	tb_chunk(&ev, 78, 0, c0, 4, zstd);
}

static struct weft_trace *load(char *err, size_t n)
{
	const char *names[2] = {"77.wmeta", "77-0.wevents"};
	const unsigned char *data[2] = {meta.p, ev.p};
	size_t sizes[2] = {meta.n, ev.n};
	struct weft_trace *t = NULL;
	int rc = weft_trace_from_buffers(names, data, sizes, 2, &t, err, n);
	return rc ? NULL : t;
}

static void reads_everything(void **s)
{
	(void)s;
	for (int z = 0; z < 2; z++) {
		build(z);
		char err[256];
		struct weft_trace *t = load(err, sizeof(err));
		assert_non_null(t);
		assert_int_equal(t->nwarnings, 0);
		assert_int_equal(t->nprocs, 1);
		struct weft_proc *p = &t->procs[0];
		assert_int_equal(p->pid, 77);
		assert_string_equal(weft_site_name(p, 1), "work");
		assert_int_equal(p->sites[2].kind, 1);
		assert_int_equal(p->nthreads, 1);
		assert_string_equal(p->threads[0].name, "w1");
		assert_int_equal(p->threads[0].nchunks, 2);
		assert_int_equal(p->threads[0].chunks[0].seq, 0);
		assert_int_equal(p->threads[0].events, 3);
		/* absolute ticks restored, then 2 ticks/ns from the calibration */
		uint64_t *buf = NULL;
		size_t cap = 0, nw;
		const char *why;
		assert_int_equal(weft_chunk_decode(&p->threads[0].chunks[1], &buf, &cap, &nw, &why), 0);
		assert_int_equal(nw, 5);
		assert_int_equal(buf[0], 3000);
		assert_int_equal(buf[2], 3100);
		free(buf);
		assert_int_equal(p->threads[0].chunks[1].events, 2);
		assert_int_equal(weft_proc_ns(p, 1000), 5000000);
		assert_int_equal(weft_proc_ns(p, 3000), 5001000);
		assert_int_equal(weft_proc_ns(p, 0), 4999500);
		assert_int_equal(t->first_ns, 5000500);
		assert_int_equal(t->last_ns, 5001050);
		weft_trace_free(t);
	}
}

static int has_warning(struct weft_trace *t, const char *needle)
{
	for (size_t i = 0; i < t->nwarnings; i++)
		if (strstr(t->warnings[i], needle))
			return 1;
	return 0;
}

static void truncated_keeps_complete_chunks(void **s)
{
	(void)s;
	build(1);
	size_t full = ev.n;
	char err[256];
	for (size_t cut = sizeof(struct weft_file_header); cut < full; cut += 7) {
		ev.n = cut;
		struct weft_trace *t = load(err, sizeof(err));
		assert_non_null(t);
		struct weft_proc *p = &t->procs[0];
		size_t chunks = p->nthreads ? p->threads[0].nchunks : 0;
		assert_true(chunks <= 1); /* the second frame is cut */
		if (cut > sizeof(struct weft_file_header))
			assert_true(has_warning(t, "truncated or damaged"));
		weft_trace_free(t);
	}
	ev.n = full;
	/* metadata cut in the middle of a record: the rest ignored, a warning */
	size_t mfull = meta.n;
	meta.n = mfull - 3;
	struct weft_trace *t = load(err, sizeof(err));
	assert_non_null(t);
	assert_true(has_warning(t, "truncated metadata record"));
	weft_trace_free(t);
	meta.n = mfull;
}

static void corruption_is_skipped(void **s)
{
	(void)s;
	build(0);
	char err[256];
	/* flip a payload byte of the first frame: its checksum fails, the second is found */
	ev.p[sizeof(struct weft_file_header) + sizeof(struct weft_chunk_header) + 3] ^= 0x55;
	struct weft_trace *t = load(err, sizeof(err));
	assert_non_null(t);
	assert_true(has_warning(t, "damaged bytes"));
	assert_int_equal(t->procs[0].threads[0].nchunks, 1);
	assert_int_equal(t->procs[0].threads[0].chunks[0].seq, 0);
	weft_trace_free(t);
}

static void newer_major_is_refused(void **s)
{
	(void)s;
	build(0);
	((struct weft_file_header *)meta.p)->major = 2;
	char err[256] = "";
	assert_null(load(err, sizeof(err)));
	assert_non_null(strstr(err, "trace format 2.0 is newer than this weft reads (1.x)"));
}

static void nothing_to_read(void **s)
{
	(void)s;
	const char *names[1] = {"notes.txt"};
	const unsigned char *data[1] = {(const unsigned char *)"x"};
	size_t sizes[1] = {1};
	struct weft_trace *t = NULL;
	char err[256];
	assert_int_equal(weft_trace_from_buffers(names, data, sizes, 1, &t, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no weft trace files"));
}

struct hdrs {
	uint64_t h[64];
	size_t n;
};
static void collect_hdr(uint64_t h, void *ud)
{
	struct hdrs *x = ud;
	if (x->n < 64)
		x->h[x->n++] = h;
}

static void packing_round_trips(void **s)
{
	(void)s;
	uint64_t w[] = {5, HDR(1, WEFT_R_BEGIN, 0, 0), 300, HDR(2, WEFT_R_FUNC_ENTER, 0, 7),
			-3ll, HDR(9, WEFT_R_ARG_I64, 0, 0), 1ull << 63, HDR(2, WEFT_R_FUNC_EXIT, 0, 7),
			4, HDR(0, WEFT_R_ARG_STR, 1, 0), 0x74736574, 0, HDR(1, WEFT_R_END, 0, 0),
			7, HDR(3, WEFT_R_COUNTER_F64, 1, 0), 0x3ff0000000000000ull,
			1, HDR(4, WEFT_R_BEGIN, 0, 0), 2, HDR(5, WEFT_R_BEGIN, 0, 0), 3, HDR(6, WEFT_R_BEGIN, 0, 0),
			4, HDR(1, WEFT_R_BEGIN, 0, 0)}; /* the last one fell out of the 4-entry list */
	size_t n = sizeof(w) / 8;
	uint8_t packed[512];
	size_t len = weft_pack(w, n, packed);
	assert_true(len < n * 8);
	uint64_t back[64];
	assert_int_equal(weft_unpack(packed, len, back, 64, 0), n);
	assert_memory_equal(back, w, n * 8);
	/* every cut of the packed bytes is either a shorter, valid prefix or refused */
	for (size_t cut = 0; cut < len; cut++) {
		size_t got = weft_unpack(packed, cut, back, 64, 0);
		assert_true(got == (size_t)-1 || (got < n && !memcmp(back, w, got * 8)));
	}
	/* undelta: timestamps become running sums; other words are untouched */
	assert_int_equal(weft_unpack(packed, len, back, 64, 1), n);
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i += 2 + weft_rec_extra(w[i + 1])) {
		int ticks = weft_rec_has_ticks(weft_rec_type(w[i + 1]));
		sum += ticks ? w[i] : 0;
		assert_int_equal(back[i], ticks ? sum : w[i]);
		assert_int_equal(back[i + 1], w[i + 1]);
	}
	/* the headers written out in full: each distinct one at least once, in order */
	struct hdrs got = {0};
	assert_int_equal(weft_unpack_headers(packed, len, collect_hdr, &got), 0);
	uint64_t want[] = {HDR(1, WEFT_R_BEGIN, 0, 0), HDR(2, WEFT_R_FUNC_ENTER, 0, 7),
			   HDR(9, WEFT_R_ARG_I64, 0, 0), HDR(2, WEFT_R_FUNC_EXIT, 0, 7),
			   HDR(0, WEFT_R_ARG_STR, 1, 0), HDR(1, WEFT_R_END, 0, 0),
			   HDR(3, WEFT_R_COUNTER_F64, 1, 0), HDR(4, WEFT_R_BEGIN, 0, 0),
			   HDR(5, WEFT_R_BEGIN, 0, 0), HDR(6, WEFT_R_BEGIN, 0, 0), HDR(1, WEFT_R_BEGIN, 0, 0)};
	assert_int_equal(got.n, sizeof(want) / 8);
	assert_memory_equal(got.h, want, sizeof(want));
	for (size_t cut = 0; cut < len; cut++) { /* cuts: no overrun (ASan), whole prefix or refused */
		got.n = 0;
		weft_unpack_headers(packed, cut, collect_hdr, &got);
		assert_true(got.n <= sizeof(want) / 8);
	}
	packed[0] = 9; /* no such tag */
	assert_int_equal(weft_unpack(packed, len, back, 64, 0), (size_t)-1);
	assert_int_equal(weft_unpack_headers(packed, len, collect_hdr, &got), -1);
	assert_int_equal(weft_unpack(packed + 1, len - 1, back, 2, 0), (size_t)-1); /* no room */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_everything), cmocka_unit_test(truncated_keeps_complete_chunks),
		cmocka_unit_test(corruption_is_skipped), cmocka_unit_test(newer_major_is_refused),
		cmocka_unit_test(nothing_to_read), cmocka_unit_test(packing_round_trips),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(meta.p);
	free(ev.p);
	return rc;
}
