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

/* weft_sum32 (format 1.9) as docs/format.md specifies it: known answers (the same as the
 * Python version in tests/integration/test_damage.py), a reader that checks it where the flag
 * says so, finds damage with it, and still checks FNV-1a where the flag is clear. */
static void chunk_checksum_kinds(void **s)
{
	(void)s;
	static const struct { unsigned n; uint32_t sum; } kat[] = {
		{0, 0x76be81c4u}, {1, 0x6fa95859u}, {8, 0xcecd7661u}, {9, 0x93c98063u},
		{31, 0xe7b20ffau}, {32, 0x7d17c836u}, {33, 0x16a12170u}, {100, 0x61839005u}};
	unsigned char bytes[100];
	for (unsigned i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)i;
	for (unsigned k = 0; k < sizeof(kat) / sizeof(kat[0]); k++)
		assert_int_equal(weft_sum32(bytes, kat[k].n), kat[k].sum);
	assert_int_equal(weft_chunk_sum(WEFT_CHUNK_SUM, bytes, 100), 0x61839005u);
	assert_int_equal(weft_chunk_sum(0, bytes, 100), weft_fnv1a(bytes, 100));
	char err[256];
	for (int z = 0; z < 2; z++) {
		tb_chunk_flags = WEFT_CHUNK_SUM;
		build(z);
		tb_chunk_flags = 0;
		struct weft_trace *t = load(err, sizeof(err));
		assert_non_null(t);
		assert_int_equal(t->nwarnings, 0);
		assert_int_equal(t->procs[0].threads[0].nchunks, 2);
		assert_true(t->procs[0].threads[0].chunks[0].flags & WEFT_CHUNK_SUM);
		weft_trace_free(t);
		/* a byte of the first frame damaged: found */
		size_t at = sizeof(struct weft_file_header) + sizeof(struct weft_chunk_header) + 3;
		ev.p[at] ^= 0x55;
		t = load(err, sizeof(err));
		assert_non_null(t);
		assert_true(has_warning(t, "damaged bytes"));
		assert_int_equal(t->procs[0].threads[0].nchunks, 1);
		weft_trace_free(t);
		ev.p[at] ^= 0x55;
		/* the flag cleared: the sum is no FNV-1a of the bytes */
		struct weft_chunk_header h;
		memcpy(&h, ev.p + sizeof(struct weft_file_header), sizeof(h));
		h.flags &= ~WEFT_CHUNK_SUM;
		memcpy(ev.p + sizeof(struct weft_file_header), &h, sizeof(h));
		t = load(err, sizeof(err));
		assert_non_null(t);
		assert_true(has_warning(t, "damaged bytes"));
		weft_trace_free(t);
	}
}

static void newer_major_is_refused(void **s)
{
	(void)s;
	build(0);
	((struct weft_file_header *)meta.p)->major = 2;
	((struct weft_file_header *)meta.p)->minor = 0;
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

/* The packed bytes unpack to w; every cut of them is either a shorter, valid prefix or refused. */
static void unpacks_whole_and_every_cut(const uint8_t *packed, size_t len, const uint64_t *w, size_t n)
{
	uint64_t back[64];
	assert_int_equal(weft_unpack(packed, len, back, 64, 2, 1), n);
	assert_memory_equal(back, w, n * 8);
	for (size_t cut = 0; cut < len; cut++) {
		size_t got = weft_unpack(packed, cut, back, 64, 2, 1);
		assert_true(got == (size_t)-1 || (got < n && !memcmp(back, w, got * 8)));
	}
}

/* Packing version 3 (format 1.9): the memory records' words in columns after the records. A
 * mixed stream round trips (with the headers pass), is smaller than version 2 by the same words
 * moved (plus its 8-byte trailer), and every cut, a damaged trailer and column bytes that no
 * record takes are refused. */
static void packing_v3_columns(void **s)
{
	(void)s;
	uint64_t w[] = {900, HDR(3, WEFT_R_BEGIN, 0, 0),
			1000, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x55d0c0a01230ull, 24,
			1040, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0x55d0c0a01230ull,
			1050, HDR(3, WEFT_R_COUNTER_I64, 1, 0), 77,
			1100, HDR(7, WEFT_R_REALLOC, 3, WEFT_MEM_REALLOC), 0x55d0c0a01230ull, 0x7f0000001000ull, 1ull << 40,
			1101, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_CALLOC), UINT64_MAX, UINT64_MAX,
			1102, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0,
			0xabcdef0123456789ull, HDR(0, WEFT_R_STACK, 2, 0), 0x401234, 0x7f1234567890ull,
			1200, HDR(3, WEFT_R_END, 0, 0)};
	size_t n = sizeof(w) / 8;
	uint8_t p2[512], p3[512], ca[512], cs[512];
	uint32_t ev2 = 0, ev3 = 0, dr = 0;
	struct weft_index_rec ix2, ix3;
	memset(&ix2, 0, sizeof(ix2)); /* tid, file, seq and offset are the caller's */
	memset(&ix3, 0, sizeof(ix3));
	size_t len2 = weft_pack_indexed(w, n, p2, &ev2, &dr, &ix2);
	size_t len3 = weft_pack3_indexed(w, n, p3, &ev3, &dr, &ix3, ca, cs);
	assert_true(len3 <= weft_pack_bound(n));
	assert_int_equal(len3, len2 + 8); /* the same bytes, moved, and the trailer */
	assert_int_equal(ev3, ev2);
	assert_memory_equal(&ix3, &ix2, sizeof(ix2));
	uint64_t back[64];
	assert_int_equal(weft_unpack(p3, len3, back, 64, 3, 1), n);
	assert_memory_equal(back, w, n * 8);
	assert_int_equal(weft_unpack(p3, len3, back, 64, 2, 1), (size_t)-1); /* not version 2 */
	struct hdrs got = {0}, want = {0};
	assert_int_equal(weft_unpack_headers(p3, len3, 3, collect_hdr, &got), 0);
	assert_int_equal(weft_unpack_headers(p2, len2, 2, collect_hdr, &want), 0);
	assert_int_equal(got.n, want.n);
	assert_memory_equal(got.h, want.h, got.n * 8);
	for (size_t cut = 0; cut < len3; cut++)
		assert_int_equal(weft_unpack(p3, cut, back, 64, 3, 1), (size_t)-1);
	uint8_t bad[512];
	memcpy(bad, p3, len3);
	uint32_t m;
	memcpy(&m, bad + len3 - 8, 4);
	m += 1000; /* the records' length beyond the payload */
	memcpy(bad + len3 - 8, &m, 4);
	assert_int_equal(weft_unpack(bad, len3, back, 64, 3, 1), (size_t)-1);
	assert_int_equal(weft_unpack_headers(bad, len3, 3, collect_hdr, &got), -1);
	memcpy(bad, p3, len3); /* one more size byte than the records take */
	memmove(bad + len3 - 7, bad + len3 - 8, 8);
	bad[len3 - 8] = 5;
	assert_int_equal(weft_unpack(bad, len3 + 1, back, 64, 3, 1), (size_t)-1);
}

/* Memory records (format 1.3): extras as varints, addresses as differences; extremes round
 * trip, a typical malloc/free pair is small, every cut is a valid prefix or refused. */
static void packing_memory_records(void **s)
{
	(void)s;
	uint64_t w[] = {1000, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x55d0c0a01230ull, 24,
			1040, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0x55d0c0a01230ull,
			1100, HDR(7, WEFT_R_REALLOC, 3, WEFT_MEM_REALLOC), 0x55d0c0a01230ull, 0x7f0000001000ull, 1ull << 40,
			1101, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_CALLOC), UINT64_MAX, UINT64_MAX,
			1102, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0,
			0xabcdef0123456789ull, HDR(0, WEFT_R_STACK, 2, 0), 0x401234, 0x7f1234567890ull,
			1103, HDR(7, WEFT_R_HEAP_USAGE, 3, WEFT_MEM_HEAP_API), 1, 2, 3};
	size_t n = sizeof(w) / 8;
	uint8_t packed[512];
	uint32_t events = 0, dropped = 0;
	size_t len = weft_pack(w, n, packed, &events, &dropped);
	assert_true(len <= weft_pack_bound(n));
	assert_int_equal(events, 6); /* allocs, frees, realloc, usage; not the stack */
	uint64_t back[64];
	unpacks_whole_and_every_cut(packed, len, w, n);
	/* a malloc then its free, 40 ticks apart, near the previous address: at most 16 bytes */
	uint64_t pair[] = {1000, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x55d0c0a01230ull, 24,
			   1040, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0x55d0c0a01230ull,
			   1090, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x55d0c0a01290ull, 200,
			   1120, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0x55d0c0a01290ull};
	size_t plen = weft_pack(pair, 14, packed, &events, &dropped);
	size_t first = weft_pack(pair, 7, packed + 256, &events, &dropped);
	assert_true(plen - first <= 16); /* the second pair, list entries and small deltas */
	assert_int_equal(weft_unpack(packed, plen, back, 64, 2, 1), 14);
	assert_memory_equal(back, pair, 14 * 8);
	/* the headers pass skips the varints */
	struct hdrs got = {0};
	assert_int_equal(weft_unpack_headers(packed, plen, 2, collect_hdr, &got), 0);
	assert_int_equal(got.n, 2);
}

static void packing_round_trips(void **s)
{
	(void)s;
	/* absolute timestamps, as a thread writes them; the packing delta-codes them */
	uint64_t w[] = {5, HDR(1, WEFT_R_BEGIN, 0, 0), 305, HDR(2, WEFT_R_FUNC_ENTER, 0, 7),
			-3ll, HDR(9, WEFT_R_ARG_I64, 0, 0), 310, HDR(2, WEFT_R_FUNC_EXIT, 0, 7),
			314, HDR(0, WEFT_R_ARG_STR, 1, 0), 0x74736574, 1ull << 62, HDR(1, WEFT_R_END, 0, 0),
			(1ull << 62) + 7, HDR(3, WEFT_R_COUNTER_F64, 1, 0), 0x3ff0000000000000ull,
			(1ull << 62) + 70, HDR(0, WEFT_R_DROPPED, 1, 0), 42,
			(1ull << 62) + 71, HDR(4, WEFT_R_BEGIN, 0, 0), (1ull << 62) + 72, HDR(5, WEFT_R_BEGIN, 0, 0),
			(1ull << 62) + 73, HDR(6, WEFT_R_BEGIN, 0, 0), (1ull << 62) + 74, HDR(0, WEFT_R_DROPPED, 1, 0), 1,
			(1ull << 62) + 80, HDR(1, WEFT_R_BEGIN, 0, 0)}; /* fell out of the 4-entry list */
	size_t n = sizeof(w) / 8;
	uint8_t packed[512];
	uint32_t events = 0, dropped = 0;
	size_t len = weft_pack(w, n, packed, &events, &dropped);
	assert_true(len < n * 8 && len <= weft_pack_bound(n));
	assert_int_equal(events, 9); /* begins, end, func enter/exit, counter; not args or drops */
	assert_int_equal(dropped, 43);
	uint64_t back[64];
	unpacks_whole_and_every_cut(packed, len, w, n);
	/* without undelta: timestamps come out as differences; other words are untouched */
	assert_int_equal(weft_unpack(packed, len, back, 64, 2, 0), n);
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i += 2 + weft_rec_extra(w[i + 1])) {
		int ticks = weft_rec_has_ticks(weft_rec_type(w[i + 1]));
		assert_int_equal(back[i], ticks ? w[i] - prev : w[i]);
		prev = ticks ? w[i] : prev;
		assert_int_equal(back[i + 1], w[i + 1]);
	}
	/* the headers written out in full: each distinct one at least once, in order */
	struct hdrs got = {0};
	assert_int_equal(weft_unpack_headers(packed, len, 2, collect_hdr, &got), 0);
	uint64_t want[] = {HDR(1, WEFT_R_BEGIN, 0, 0), HDR(2, WEFT_R_FUNC_ENTER, 0, 7),
			   HDR(9, WEFT_R_ARG_I64, 0, 0), HDR(2, WEFT_R_FUNC_EXIT, 0, 7),
			   HDR(0, WEFT_R_ARG_STR, 1, 0), HDR(1, WEFT_R_END, 0, 0),
			   HDR(3, WEFT_R_COUNTER_F64, 1, 0), HDR(0, WEFT_R_DROPPED, 1, 0),
			   HDR(4, WEFT_R_BEGIN, 0, 0), HDR(5, WEFT_R_BEGIN, 0, 0), HDR(6, WEFT_R_BEGIN, 0, 0),
			   HDR(1, WEFT_R_BEGIN, 0, 0)};
	assert_int_equal(got.n, sizeof(want) / 8);
	assert_memory_equal(got.h, want, sizeof(want));
	for (size_t cut = 0; cut < len; cut++) { /* cuts: no overrun (ASan), whole prefix or refused */
		got.n = 0;
		weft_unpack_headers(packed, cut, 2, collect_hdr, &got);
		assert_true(got.n <= sizeof(want) / 8);
	}
	packed[0] = 194; /* no such tag */
	assert_int_equal(weft_unpack(packed, len, back, 64, 2, 1), (size_t)-1);
	assert_int_equal(weft_unpack_headers(packed, len, 2, collect_hdr, &got), -1);
	assert_int_equal(weft_unpack(packed + 1, len - 1, back, 2, 2, 1), (size_t)-1); /* no room */
}

/* The byte layout of packing version 2, as docs/format.md specifies it. */
static void packing_v2_bytes(void **s)
{
	(void)s;
	uint64_t E = HDR(0x1000, WEFT_R_FUNC_ENTER, 0, 0), X = HDR(0x1000, WEFT_R_FUNC_EXIT, 0, 0);
	uint64_t w[] = {100, E, 110, X, 120, E, 130, X, 130, X, 330, E, 7, HDR(1, WEFT_R_ARG_I64, 0, 0)};
	uint8_t want[] = {192, 0, 0x10, 0, 0, WEFT_R_FUNC_ENTER, 0, 0, 0, 100, /* literal, delta 100 */
			  192, 0, 0x10, 0, 0, WEFT_R_FUNC_EXIT, 0, 0, 0, 10, /* literal, delta 10 */
			  64 | 10,			/* list entry 1 (enter), delta 10 in the tag */
			  64 | 10,			/* list entry 1 (exit) */
			  0,				/* entry 0 (exit again), delta 0 */
			  64 | 63, 0xc8, 0x01,		/* entry 1 (enter), delta 200 as a varint */
			  192, 1, 0, 0, 0, WEFT_R_ARG_I64, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0}; /* raw word0 */
	uint8_t packed[128];
	uint32_t events, dropped = 0;
	size_t len = weft_pack(w, sizeof(w) / 8, packed, &events, &dropped);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(packed, want, sizeof(want));
	assert_int_equal(events, 6);
	/* entry 3 has its own tag: A B C D then A again */
	uint64_t h[5] = {HDR(1, WEFT_R_BEGIN, 0, 0), HDR(2, WEFT_R_BEGIN, 0, 0), HDR(3, WEFT_R_BEGIN, 0, 0),
			 HDR(4, WEFT_R_BEGIN, 0, 0), HDR(1, WEFT_R_BEGIN, 0, 0)};
	uint64_t w2[10];
	for (int i = 0; i < 5; i++) {
		w2[2 * i] = (uint64_t)i;
		w2[2 * i + 1] = h[i];
	}
	len = weft_pack(w2, 10, packed, &events, &dropped);
	assert_int_equal(len, 4 * 10 + 2);
	assert_int_equal(packed[40], WEFT_PACK_ENTRY3);
	assert_int_equal(packed[41], 1);
	uint64_t back[10];
	assert_int_equal(weft_unpack(packed, len, back, 10, 2, 1), 10);
	assert_memory_equal(back, w2, sizeof(w2));
	/* a short tag on a record without a timestamp is malformed */
	uint8_t bad[] = {192, 1, 0, 0, 0, WEFT_R_ARG_I64, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 5};
	assert_int_equal(weft_unpack(bad, sizeof(bad), back, 10, 2, 1), (size_t)-1);
	struct hdrs got = {0};
	assert_int_equal(weft_unpack_headers(bad, sizeof(bad), 2, collect_hdr, &got), -1);
}

/* Packing version 1 (format 1.0 traces) still reads. */
static void packing_v1_reads(void **s)
{
	(void)s;
	uint8_t v1[] = {4, 0, 0x10, 0, 0, WEFT_R_FUNC_ENTER, 0, 0, 0, 100, /* literal, delta 100 */
			4, 0, 0x10, 0, 0, WEFT_R_FUNC_EXIT, 0, 0, 0, 0xc8, 0x01, /* literal, delta 200 */
			1, 5,						   /* entry 1 (enter), delta 5 */
			4, 1, 0, 0, 0, WEFT_R_ARG_I64, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0};
	uint64_t E = HDR(0x1000, WEFT_R_FUNC_ENTER, 0, 0), X = HDR(0x1000, WEFT_R_FUNC_EXIT, 0, 0);
	uint64_t want[] = {100, E, 300, X, 305, E, 7, HDR(1, WEFT_R_ARG_I64, 0, 0)};
	uint64_t back[8];
	assert_int_equal(weft_unpack(v1, sizeof(v1), back, 8, 1, 1), 8);
	assert_memory_equal(back, want, sizeof(want));
	struct hdrs got = {0};
	assert_int_equal(weft_unpack_headers(v1, sizeof(v1), 1, collect_hdr, &got), 0);
	assert_int_equal(got.n, 3);
	assert_int_equal(weft_unpack(v1, sizeof(v1), back, 8, 2, 1), (size_t)-1); /* not version 2 */
	v1[0] = 5; /* no such tag in version 1 */
	assert_int_equal(weft_unpack(v1, sizeof(v1), back, 8, 1, 1), (size_t)-1);
}

/* The kernel reuses tids: two threads with tid 90 (serials 1 and 2, format 1.2), each with
 * chunks 0 and 1, stay two threads with all their events; 20,000 threads load through the
 * (tid, serial) table. */
/* The start of a process's metadata as a writer makes it: clock records and site 1 "work". */
static void meta_start(struct tb *m, int pid)
{
	tb_header(m, WEFT_META_MAGIC, 1, pid);
	tb_clock_kind(m, 1);
	tb_clock(m, 1000, 5000000);
	tb_clock(m, 201000, 5100000);
	tb_site(m, 1, 0, "work");
}

/* The trace of process pid: metadata m and one slice of site 1; m is freed. */
static struct weft_trace *load_with_one_slice(struct tb *m, int pid)
{
	struct tb e = {0};
	tb_header(&e, WEFT_EVENTS_MAGIC, 1, pid);
	uint64_t c0[] = {2000, HDR(1, WEFT_R_BEGIN, 0, 0), 2010, HDR(1, WEFT_R_END, 0, 0)};
	tb_chunk(&e, (uint32_t)pid, 0, c0, 4, 0);
	char mn[32], en[32];
	snprintf(mn, sizeof(mn), "%d.wmeta", pid);
	snprintf(en, sizeof(en), "%d-0.wevents", pid);
	const char *names[2] = {mn, en};
	const unsigned char *data[2] = {m->p, e.p};
	size_t sizes[2] = {m->n, e.n};
	struct weft_trace *t = NULL;
	char err[256];
	assert_int_equal(weft_trace_from_buffers(names, data, sizes, 2, &t, err, sizeof(err)), 0);
	free(m->p);
	free(e.p);
	return t;
}

static int warned(const struct weft_trace *t, const char *text)
{
	for (size_t i = 0; i < t->nwarnings; i++)
		if (strstr(t->warnings[i], text))
			return 1;
	return 0;
}

/* A call-site id far beyond what the metadata can define (damage, or a crafted file) is
 * refused with a warning before it sizes the site table; ids as a writer numbers them are kept,
 * high ones included when the metadata holds that many sites. */
static void site_ids_beyond_the_metadata_are_refused(void **s)
{
	(void)s;
	struct tb m = {0};
	meta_start(&m, 78);
	tb_site(&m, 9000000, 0, "far");
	for (uint32_t id = 2; id <= 6000; id++) /* 6000 sites: id 6000 is a real one */
		tb_site(&m, id, 0, id == 6000 ? "last" : "x");
	struct weft_trace *t = load_with_one_slice(&m, 78);
	const struct weft_proc *p = &t->procs[0];
	assert_true(p->nsites < 100000);
	assert_string_equal(weft_site_name(p, 1), "work");
	assert_string_equal(weft_site_name(p, 6000), "last");
	assert_null(weft_site_name(p, 9000000));
	assert_true(warned(t, "call site id 9000000 is beyond what the metadata can define"));
	weft_trace_free(t);
}

/* A sampler channel id out of range (a 1 KiB fuzzer input declared 0x6430460d: the system
 * analysis indexes channels by id, 26 GB) is refused with a warning; a writer's ids are kept. */
static void sampler_channel_ids_out_of_range_are_refused(void **s)
{
	(void)s;
	struct tb m = {0};
	meta_start(&m, 79);
	const uint32_t ids[] = {0x6430460du, 1, WEFT_SYS_CHANNEL_MAX};
	for (size_t i = 0; i < 3; i++) {
		unsigned char rec[24 + 8] = {0};
		memcpy(rec, &ids[i], 4);
		memcpy(rec + 24, "cpu0", 5);
		tb_meta(&m, WEFT_M_SYS_CHANNEL, rec, 24 + 5);
	}
	struct weft_trace *t = load_with_one_slice(&m, 79);
	const struct weft_proc *p = &t->procs[0];
	assert_int_equal(p->nsys_chans, 2);
	assert_int_equal(p->sys_chans[0].id, 1);
	assert_int_equal(p->sys_chans[1].id, WEFT_SYS_CHANNEL_MAX);
	assert_true(warned(t, "sampler channel id 1680885261 is out of range"));
	weft_trace_free(t);
}

static void reused_tids_are_separate_threads(void **s)
{
	(void)s;
	struct tb m = {0}, e = {0};
	tb_header(&m, WEFT_META_MAGIC, 1, 77);
	tb_clock_kind(&m, 1);
	tb_clock(&m, 1000, 5000000);
	tb_clock(&m, 201000, 5100000);
	tb_site(&m, 1, 0, "work");
	tb_header(&e, WEFT_EVENTS_MAGIC, 1, 77);
	const uint32_t nthreads = 20000;
	for (uint32_t k = 0; k < nthreads; k++) {
		uint32_t tid = k < 2 ? 90 : 1000 + k, serial = k + 1;
		char rec[4 + 16 + 8];
		memcpy(rec, &tid, 4);
		int l = snprintf(rec + 4, 16, "t%u", serial);
		uint64_t s64 = serial;
		memcpy(rec + 4 + l + 1, &s64, 8);
		tb_meta(&m, WEFT_M_THREAD, rec, (size_t)(4 + l + 1 + 8));
		uint64_t base = (uint64_t)serial << WEFT_SEQ_SERIAL_SHIFT, t0 = 2000 + 1000 * (uint64_t)k;
		uint64_t c0[] = {t0, HDR(1, WEFT_R_BEGIN, 0, 0)}, c1[] = {t0 + 10, HDR(1, WEFT_R_END, 0, 0)};
		tb_chunk(&e, tid, base | 1, c1, 2, 0);
		tb_chunk(&e, tid, base | 0, c0, 2, 0);
		uint64_t end[4] = {tid, serial, 0, base | 2};
		tb_meta(&m, WEFT_M_THREAD_END, end, sizeof(end));
	}
	const char *names[2] = {"77.wmeta", "77-0.wevents"};
	const unsigned char *data[2] = {m.p, e.p};
	size_t sizes[2] = {m.n, e.n};
	struct weft_trace *t = NULL;
	char err[256];
	assert_int_equal(weft_trace_from_buffers(names, data, sizes, 2, &t, err, sizeof(err)), 0);
	assert_int_equal(t->nwarnings, 0); /* no "chunk appears twice", nothing missing */
	struct weft_proc *p = &t->procs[0];
	assert_int_equal(p->nthreads, nthreads);
	uint64_t events = 0;
	int with90 = 0;
	for (size_t i = 0; i < p->nthreads; i++) {
		events += p->threads[i].events;
		assert_int_equal(p->threads[i].nchunks, 2);
		if (p->threads[i].tid == 90) {
			with90++;
			char want[16];
			snprintf(want, sizeof(want), "t%u", p->threads[i].serial);
			assert_string_equal(p->threads[i].name, want);
		}
	}
	assert_int_equal(with90, 2);
	assert_int_equal(events, 2 * (uint64_t)nthreads);
	weft_trace_free(t);
	free(m.p);
	free(e.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(reads_everything), cmocka_unit_test(truncated_keeps_complete_chunks),
		cmocka_unit_test(corruption_is_skipped), cmocka_unit_test(chunk_checksum_kinds),
		cmocka_unit_test(newer_major_is_refused),
		cmocka_unit_test(nothing_to_read), cmocka_unit_test(packing_round_trips),
		cmocka_unit_test(packing_memory_records), cmocka_unit_test(packing_v3_columns),
		cmocka_unit_test(packing_v2_bytes), cmocka_unit_test(packing_v1_reads),
		cmocka_unit_test(reused_tids_are_separate_threads), cmocka_unit_test(site_ids_beyond_the_metadata_are_refused),
		cmocka_unit_test(sampler_channel_ids_out_of_range_are_refused),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	free(meta.p);
	free(ev.p);
	return rc;
}
