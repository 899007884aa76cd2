/* Packing version 4 (src/format/pack4.h, format 1.10): adversarial record sequences round trip
 * exactly (huge and backwards timestamp deltas, maximal addresses and sizes, memory records
 * of unusual shapes, header lists that spill to literals), with the same events, drops and
 * index entry as version 2; every cut and damaged trailer, column or code is refused, never
 * read out of bounds (run under ASan in the sanitizer job); and the reader gives the same
 * records for a chunk written in version 3 (format 1.9) and in version 4, with a clear error
 * for a truncated or short version 4 chunk. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include "format/reader.h"
#include "trace_builder.h"
#include "format/pack.h"

struct hdrs {
	uint64_t h[512];
	size_t n;
};
static void collect(uint64_t h, void *ud)
{
	struct hdrs *x = ud;
	if (x->n < 512)
		x->h[x->n++] = h;
}

/* The fast readers (pack4.h: weft_unpack4_rewrite, weft_unpack4_headers) against the general
 * ones on any input, good or not: the same result, the same words, the same headers in the same
 * order. The rewrite is one that a header alone decides, as the reader's preparing is. */
static void prep_ref(uint64_t *r, void *ctx);
static uint64_t rw_hdr(uint64_t h, void *ctx)
{
	(void)ctx;
	unsigned type = weft_rec_type(h);
	return type == WEFT_R_FUNC_ENTER || type == WEFT_R_FUNC_EXIT ? (h ^ 0x5a5a5aull) & ~(0xffffull << 48) : h;
}
static uint64_t rw_ts(uint64_t ticks, void *ctx)
{
	(void)ctx;
	return ticks * 3 + 7;
}
static void prep_ref(uint64_t *r, void *ctx)
{
	if (weft_rec_has_ticks(weft_rec_type(r[1])))
		r[0] = rw_ts(r[0], ctx);
	r[1] = rw_hdr(r[1], ctx);
}
static void fast_agrees(const uint8_t *in, size_t len, size_t cap, int fmt)
{
	uint64_t *a = malloc(cap * 8 + 8), *b = malloc(cap * 8 + 8);
	size_t na = weft_unpack_each(in, len, a, cap, fmt, 1, prep_ref, NULL);
	size_t nb = weft_unpack4_rewrite(in, len, b, cap, rw_hdr, rw_ts, NULL, 0, fmt == 5);
	assert_int_equal(nb, na);
	if (na != (size_t)-1)
		assert_memory_equal(a, b, na * 8);
	struct hdrs ha = {.n = 0}, hb = {.n = 0};
	int ra = weft_unpack_headers(in, len, fmt, collect, &ha);
	int rb = weft_unpack4_headers(in, len, collect, &hb, fmt == 5);
	assert_int_equal(rb, ra);
	assert_int_equal(hb.n, ha.n);
	assert_memory_equal(hb.h, ha.h, ha.n * 8);
	free(a);
	free(b);
}

/* Version 5 (format 1.14) of w: the same events, drops and index as version 4, the same records
 * back, the same headers, and the fast readers agree; every cut of a short one is refused or a
 * valid prefix. */
static void every_cut(const uint8_t *p4, size_t len, const uint64_t *w, size_t n, int fmt);
static void round_trip5(const uint64_t *w, size_t n, uint32_t ev4, uint32_t dr4, const struct weft_index_rec *ix4)
{
	uint8_t *p5 = malloc(weft_pack_bound(n)), *scratch = malloc(weft_pack4_scratch(n));
	uint32_t ev5 = 0, dr5 = 0;
	struct weft_index_rec ix5;
	memset(&ix5, 0, sizeof(ix5));
	size_t len5 = weft_pack5_indexed(w, n, p5, &ev5, &dr5, &ix5, scratch, NULL);
	assert_true(len5 <= weft_pack_bound(n));
	assert_int_equal(ev5, ev4);
	assert_int_equal(dr5, dr4);
	assert_memory_equal(&ix5, ix4, sizeof(ix5));
	uint64_t *back = malloc(n * 8 + 8);
	assert_int_equal(weft_unpack(p5, len5, back, n, 5, 1), n);
	assert_memory_equal(back, w, n * 8);
	fast_agrees(p5, len5, n, 5);
	fast_agrees(p5, len5, n > 2 ? n - 2 : 0, 5);
	if (len5 < 600)
		every_cut(p5, len5, w, n, 5);
	free(p5);
	free(scratch);
	free(back);
}

/* Version 4 of w round trips and agrees with version 2 on events, drops, index and headers
 * (and version 5 with version 4: round_trip5). */
static size_t round_trip(const uint64_t *w, size_t n, uint8_t *p4)
{
	uint8_t *p2 = malloc(weft_pack_bound(n)), *scratch = malloc(weft_pack4_scratch(n));
	uint32_t ev2 = 0, ev4 = 0, dr2 = 0, dr4 = 0;
	struct weft_index_rec ix2, ix4;
	memset(&ix2, 0, sizeof(ix2));
	memset(&ix4, 0, sizeof(ix4));
	size_t len2 = weft_pack_indexed(w, n, p2, &ev2, &dr2, &ix2);
	size_t len4 = weft_pack4_indexed(w, n, p4, &ev4, &dr4, &ix4, scratch);
	assert_true(len4 <= weft_pack_bound(n));
	assert_int_equal(ev4, ev2);
	assert_int_equal(dr4, dr2);
	assert_memory_equal(&ix4, &ix2, sizeof(ix2));
	uint64_t *back = malloc(n * 8 + 8);
	assert_int_equal(weft_unpack(p4, len4, back, n, 4, 1), n);
	assert_memory_equal(back, w, n * 8);
	assert_int_equal(weft_unpack(p4, len4, back, n, 4, 0), n); /* deltas: as version 2 gives them */
	uint64_t *back2 = malloc(n * 8 + 8);
	assert_int_equal(weft_unpack(p2, len2, back2, n, 2, 0), n);
	assert_memory_equal(back, back2, n * 8);
	struct hdrs got = {.n = 0}, want = {.n = 0};
	assert_int_equal(weft_unpack_headers(p4, len4, 4, collect, &got), 0);
	assert_int_equal(weft_unpack_headers(p2, len2, 2, collect, &want), 0);
	assert_int_equal(got.n, want.n);
	assert_memory_equal(got.h, want.h, got.n * 8);
	fast_agrees(p4, len4, n, 4);
	fast_agrees(p4, len4, n > 2 ? n - 2 : 0, 4); /* no room for the last record */
	round_trip5(w, n, ev4, dr4, &ix4);
	free(p2);
	free(scratch);
	free(back);
	free(back2);
	return len4;
}

/* Every cut of p4 is refused or a valid prefix of w; nothing reads past the cut. */
static void every_cut(const uint8_t *p4, size_t len, const uint64_t *w, size_t n, int fmt)
{
	uint64_t *back = malloc(n * 8 + 8);
	for (size_t cut = 0; cut < len; cut++) {
		uint8_t *copy = malloc(cut + 1); /* exactly cut bytes readable (ASan) */
		memcpy(copy, p4, cut);
		size_t got = weft_unpack(copy, cut, back, n, fmt, 1);
		assert_true(got == (size_t)-1 || (got <= n && !memcmp(back, w, got * 8)));
		struct hdrs hs = {.n = 0};
		weft_unpack_headers(copy, cut, fmt, collect, &hs);
		fast_agrees(copy, cut, n, fmt);
		free(copy);
	}
	free(back);
}

static void adversarial_round_trips(void **s)
{
	(void)s;
	const uint64_t A = 0x55d0c0a01230ull;
	uint64_t w[] = {
		0, HDR(3, WEFT_R_BEGIN, 0, 0),
		59, HDR(3, WEFT_R_END, 0, 0), /* the largest delta a tag holds */
		119, HDR(3, WEFT_R_BEGIN, 0, 0), /* 60: the smallest in the column */
		375, HDR(3, WEFT_R_END, 0, 0), /* 256: two bytes */
		375 + 65536, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), A, 24, /* four bytes */
		375 + 65536 + (1ull << 32), HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), A, /* eight */
		UINT64_MAX, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), UINT64_MAX, UINT64_MAX, /* huge */
		5, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0, /* backwards: another thread's clock */
		4, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 1,
		1ull << 63, HDR(7, WEFT_R_REALLOC, 3, WEFT_MEM_REALLOC), 1, UINT64_MAX, 0,
		(1ull << 63) + 1, HDR(7, WEFT_R_REALLOC, 3, WEFT_MEM_REALLOC), A, A + 1, 1ull << 40,
		(1ull << 63) + 2, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_CALLOC), 0x8000000000000000ull, 255,
		(1ull << 63) + 3, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_CALLOC), 0x7fffffffffffffffull, 256,
		(1ull << 63) + 4, HDR(0, WEFT_R_ALLOC, 3, WEFT_MEM_MALLOC), A, 1, 2, /* unusual shapes */
		(1ull << 63) + 5, HDR(0, WEFT_R_FREE, 2, WEFT_MEM_FREE), A, UINT64_MAX,
		(1ull << 63) + 6, HDR(0, WEFT_R_REALLOC, 0, WEFT_MEM_REALLOC),
		(1ull << 63) + 7, HDR(0, WEFT_R_FREE, 0, WEFT_MEM_FREE),
		0xabcdef0123456789ull, HDR(0, WEFT_R_STACK, 2, 0), 0x401234, 0x7f1234567890ull, /* no ticks */
		3, HDR(1, WEFT_R_DROPPED, 1, 0), 17,
		0x8000000000000001ull, HDR(0, WEFT_R_FLOW_OUT, 0, 0), /* flow ids: any 64 bits, back */
		1, HDR(0, WEFT_R_FLOW_IN, 0, 0),
		UINT64_MAX, HDR(0, WEFT_R_FLOW_OUT, 0, 0),
		0, HDR(0, WEFT_R_FLOW_IN, 0, 0),
		7, HDR(4, WEFT_R_BEGIN, 0, 0), 8, HDR(4, WEFT_R_END, 0, 0), /* small deltas, entry 3 */
		2, HDR(7, WEFT_R_HEAP_USAGE, 3, WEFT_MEM_HEAP_API), 1, 2, 3,
		UINT64_MAX, HDR(9, WEFT_R_COUNTER_I64, 1, 0), UINT64_MAX,
		1, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0, 0,
	};
	size_t n = sizeof(w) / 8;
	uint8_t p4[4096];
	size_t len = round_trip(w, n, p4);
	every_cut(p4, len, w, n, 4);

	/* many headers in turn (literals and list entry 3, word0 in the records) and a long
	 * pseudo-random mixed stream */
	enum { N = 60000 };
	uint64_t *r = malloc(N * 8);
	uint64_t x = 0x9e3779b97f4a7c15ull, t = 1000;
	size_t k = 0;
	while (k + 5 <= N) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned pick = (unsigned)(x % 11);
		uint64_t dt = (x >> 8) % 7 == 0 ? (x >> 20) : (x >> 32) % 300; /* now and then any size */
		t = (x >> 40) % 11 == 0 ? t - (x >> 50) : t + dt; /* and now and then back */
		uint64_t addr = 0x55d0c0000000ull + ((x >> 24) % 64) * 48;
		uint64_t size = (x >> 3) % 5 == 0 ? x : (x >> 5) % 4096;
		uint32_t id = (uint32_t)(x >> 45) % 7;
		/* one record: its header and extra words (word0 is t, or x for STACK) */
		uint64_t rec[][4] = {
			{HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), addr, size},
			{HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), addr},
			{HDR(0, WEFT_R_REALLOC, 3, WEFT_MEM_REALLOC), addr, x, size},
			{HDR(id, WEFT_R_FUNC_ENTER, 0, 0)},
			{HDR(id, WEFT_R_FUNC_EXIT, 0, 0)},
			{HDR(0, WEFT_R_STACK, 1, 0), x >> 1},
			{HDR(id % 5, WEFT_R_COUNTER_I64, 1, 0), x},
			{HDR(0, WEFT_R_FREE, 1, WEFT_MEM_MUNMAP), x},
			{HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MMAP), x << 12, UINT64_MAX - (x & 0xff)},
			{HDR(id, WEFT_R_BEGIN, 0, 0)},
			{HDR(id, WEFT_R_FLOW_OUT, 0, 0)},
		};
		unsigned extra = weft_rec_extra(rec[pick][0]);
		r[k] = pick == 5 ? x : pick == 10 ? (x & 3 ? k : x) : t; /* a flow: counting up, or any */
		memcpy(r + k + 1, rec[pick], (1 + extra) * 8);
		k += 2 + extra;
	}
	uint8_t *big = malloc(weft_pack_bound(k));
	size_t blen = round_trip(r, k, big);
	every_cut(big, blen < 3000 ? blen : 3000, r, k, 4); /* the first cuts: all trailers wrong */
	for (size_t cut = blen - 40; cut < blen; cut++) /* and the last: columns short */
		assert_int_equal(weft_unpack(big, cut, r, k, 4, 1), (size_t)-1);
	free(big);
	free(r);
}

/* A stream of function calls as a program's (a few functions, one-byte records, now and then
 * an argument, a counter-carrying begin, a delta in the column or a literal), cut and damaged
 * byte by byte: the fast readers agree with the general ones on all of it. */
static void fast_readers_agree(void **s)
{
	(void)s;
	for (unsigned type = 0; type < 256; type++) { /* weft__slot4_info's masks of the types */
		uint64_t h = (uint64_t)type << 32 | 3ull << 40;
		uint32_t x = weft__slot4_info(h, 0), x5 = weft__slot4_info(h, 1);
		assert_int_equal(!!(x & WEFT__S4_TICKS), weft_rec_has_ticks(type));
		assert_int_equal(!!(x & WEFT__S4_MEM), weft_rec_is_mem(type));
		assert_int_equal(x & 0xffffu, (weft_rec_is_mem(type) ? 0 : 24) + (weft_rec_has_ticks(type) ? 0 : 8));
		if (weft__flow_type(type)) /* version 5: word0 in the addresses column */
			assert_int_equal(x5, WEFT__S4_FLOW5 | 24);
		else
			assert_int_equal(x5, x);
	}
	enum { N = 12000 };
	uint64_t *r = malloc(N * 8);
	uint64_t x = 0x2545f4914f6cdd1dull, t = 5;
	size_t k = 0;
	while (k + 4 <= N) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		unsigned pick = (unsigned)(x % 97);
		uint64_t fn = 0x401000 + ((x >> 12) % (pick < 3 ? 40 : 3)) * 64; /* mostly 3 functions */
		t += (x >> 20) % 8 == 0 ? (x >> 30) % 5000 : (x >> 24) % 40;
		r[k] = t;
		if (pick == 0) { /* an argument: word0 a value */
			r[k] = x;
			r[k + 1] = HDR(5, WEFT_R_ARG_I64, 0, 0);
		} else if (pick == 1) { /* a begin with a counter */
			r[k + 1] = HDR(2, WEFT_R_BEGIN, 1, 0);
			r[k + 2] = x >> 3;
		} else if (pick == 3 || pick == 4) { /* a flow: word0 an id */
			r[k] = pick == 3 ? k : x;
			r[k + 1] = HDR(0, pick == 3 ? WEFT_R_FLOW_OUT : WEFT_R_FLOW_IN, 0, 0);
		} else if (pick == 2) {
			r[k + 1] = HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC);
			r[k + 2] = 0x55d0c0000000ull + (x >> 40) * 16;
			r[k + 3] = (x >> 8) & 0xfff;
		} else {
			r[k + 1] = ((uint64_t)(pick & 1 ? WEFT_R_FUNC_ENTER : WEFT_R_FUNC_EXIT) << 32) | (fn & 0xffffffffu) |
				   ((fn >> 32) << 48);
		}
		k += 2 + weft_rec_extra(r[k + 1]);
	}
	uint8_t *p = malloc(weft_pack_bound(k)), *bad = malloc(weft_pack_bound(k));
	size_t len = round_trip(r, k, p);
	uint32_t t0;
	memcpy(&t0, p + len - 16, 4);
	for (size_t cut = len - 64; cut <= len; cut++)
		fast_agrees(p, cut, k, 4);
	for (int i = 0; i < 2000; i++) { /* one damaged byte */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(bad, p, len);
		size_t at = (size_t)(x % (i % 2 ? t0 : len)); /* the records, or anywhere */
		bad[at] = (uint8_t)(i % 4 == 0 ? 192 + (x >> 40) % 2 : x >> 32);
		fast_agrees(bad, len, k, 4);
	}
	/* the same in version 5, with its column tags (194-201) among the damage */
	uint8_t *scr = malloc(weft_pack4_scratch(k));
	uint32_t e5, d5;
	struct weft_index_rec ix5;
	len = weft_pack5_indexed(r, k, p, &e5, &d5, &ix5, scr, NULL);
	memcpy(&t0, p + len - 16, 4);
	for (size_t cut = len - 64; cut <= len; cut++)
		fast_agrees(p, cut, k, 5);
	for (int i = 0; i < 2000; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(bad, p, len);
		size_t at = (size_t)(x % (i % 2 ? t0 : len));
		bad[at] = (uint8_t)(i % 4 == 0 ? 192 + (x >> 40) % 10 : x >> 32);
		fast_agrees(bad, len, k, 5);
	}
	free(scr);
	free(p);
	free(bad);
	free(r);
}

/* A damaged trailer, a code naming a width that does not exist, a column byte no record takes
 * and a short column are refused. */
static void damage_is_refused(void **s)
{
	(void)s;
	uint64_t w[] = {1000, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x55d0c0a01230ull, 4000,
			1040, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0x55d0c0a01230ull,
			2040, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x55d0c0a01230ull, 4000,
			2080, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0x55d0c0a01230ull,
			2240, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x55d0c0a01230ull, 4000};
	size_t n = sizeof(w) / 8;
	uint8_t p[512], bad[520];
	size_t len = round_trip(w, n, p);
	uint64_t back[64];
	uint32_t t[4];
	memcpy(t, p + len - 16, 16);
	/* the first two records' headers are literals (word0 a varint in the records); then the
	 * ALLOC's 1000 ticks in 2 bytes of the deltas, the FREE's 40 in its tag, the ALLOC's 160 in 1 */
	assert_int_equal(t[0], 2 * 9 + 2 + 1 + 3);
	assert_int_equal(t[1], 3);
	assert_int_equal(t[2], 5); /* a code byte for each memory record */
	assert_int_equal(t[3], 6); /* the address: 48 bits zigzag-coded in 6 bytes, then 0 bytes (the same) */
	assert_int_equal(len - 16 - t[0] - t[1] - t[2] - t[3], 6); /* the sizes: 2 bytes each */
	for (int k = 0; k < 4; k++) { /* a length beyond the payload */
		memcpy(bad, p, len);
		uint32_t v = t[k] + 1000;
		memcpy(bad + len - 16 + 4 * k, &v, 4);
		assert_int_equal(weft_unpack(bad, len, back, 64, 4, 1), (size_t)-1);
	}
	memcpy(bad, p, len); /* the free's address 8 bytes wide: the addresses column is short */
	bad[t[0] + t[1] + 1] = 7;
	assert_int_equal(weft_unpack(bad, len, back, 64, 4, 1), (size_t)-1);
	memcpy(bad, p, len); /* the free's code with size bits */
	bad[t[0] + t[1] + 1] = 1 << 3;
	assert_int_equal(weft_unpack(bad, len, back, 64, 4, 1), (size_t)-1);
	memcpy(bad, p, len); /* the alloc's code with a second address */
	bad[t[0] + t[1]] |= 1 << 5;
	assert_int_equal(weft_unpack(bad, len, back, 64, 4, 1), (size_t)-1);
	memcpy(bad, p, len); /* one more size byte than the records take */
	memmove(bad + len - 15, bad + len - 16, 16);
	bad[len - 16] = 7;
	assert_int_equal(weft_unpack(bad, len + 1, back, 64, 4, 1), (size_t)-1);
	memcpy(bad, p, len); /* the alloc's size 8 bytes wide: the sizes column is short */
	bad[t[0] + t[1]] |= 3 << 3;
	assert_int_equal(weft_unpack(bad, len, back, 64, 4, 1), (size_t)-1);
	memcpy(bad, p, len); /* not version 3 or 2 */
	assert_int_equal(weft_unpack(bad, len, back, 64, 3, 1), (size_t)-1);
	assert_int_equal(weft_unpack(bad, len, back, 64, 2, 1), (size_t)-1);
	assert_int_equal(weft_unpack(p, len, back, 3, 4, 1), (size_t)-1); /* no room */

	/* version 5: a column tag (194-201) on a record without a timestamp, and a flow whose id
	 * is not in the addresses column, are refused by every reader */
	uint64_t f[] = {5, HDR(3, WEFT_R_ARG_I64, 0, 0), 1000, HDR(1, WEFT_R_BEGIN, 0, 0),
			9, HDR(0, WEFT_R_FLOW_OUT, 0, 0), 2000, HDR(1, WEFT_R_END, 0, 0)};
	uint8_t scr[1024], p5[256];
	uint32_t e5, d5;
	struct weft_index_rec ix5;
	size_t len5 = weft_pack5_indexed(f, 8, p5, &e5, &d5, &ix5, scr, NULL);
	assert_int_equal(weft_unpack(p5, len5, back, 64, 5, 1), 8);
	assert_memory_equal(back, f, sizeof(f));
	assert_int_equal(p5[0], WEFT_PACK_LITERAL);  /* the argument: word0 in the records */
	assert_int_equal(p5[17], WEFT_PACK5_LITERAL + 1); /* the BEGIN: its 1000 in 2 bytes of the deltas */
	memcpy(bad, p5, len5);
	bad[0] = WEFT_PACK5_LITERAL + 3;
	assert_int_equal(weft_unpack(bad, len5, back, 64, 5, 1), (size_t)-1);
	fast_agrees(bad, len5, 64, 5);
	uint32_t t5[4];
	memcpy(t5, p5 + len5 - 16, 16);
	assert_int_equal(t5[3], 1); /* the flow's id: zigzag(9) = 18, one byte */
	assert_int_equal(p5[t5[0] + t5[1] + t5[2]], 18);
	memcpy(bad, p5, len5);
	memset(bad + len5 - 4, 0, 4); /* the addresses column empty: its byte goes to the sizes */
	assert_int_equal(weft_unpack(bad, len5, back, 64, 5, 1), (size_t)-1);
	fast_agrees(bad, len5, 64, 5);
	assert_int_equal(weft_unpack(p5, len5, back, 64, 4, 1), (size_t)-1); /* not version 4 */
}

/* ---- the reader: the same records in a version 3 and a version 4 chunk ---- */

static struct tb meta, ev;

/* One chunk of w in packing fmt (3 or 4), zstd-compressed as the writers do (version 4: the
 * records, then each column, each non-empty part a frame; version 3: one frame). */
static void put_chunk(struct tb *b, uint32_t tid, uint64_t seq, const uint64_t *w, size_t n, int fmt)
{
	uint8_t *packed = malloc(weft_pack_bound(n)), *scratch = malloc(weft_pack4_scratch(n) + 3 * weft_pack_bound(n));
	uint32_t events = 0, dropped = 0;
	struct weft_index_rec ix;
	size_t len = fmt == 5	? weft_pack5_indexed(w, n, packed, &events, &dropped, &ix, scratch, NULL)
		     : fmt == 4 ? weft_pack4_indexed(w, n, packed, &events, &dropped, &ix, scratch)
				: weft_pack3_indexed(w, n, packed, &events, &dropped, &ix, scratch, scratch + weft_pack_bound(n));
	size_t cut[5] = {len, 0, 0, 0, 0}, zcap = 5 * ZSTD_compressBound(len), z = 0, at = 0;
	if (fmt >= 4) {
		uint32_t t[4];
		memcpy(t, packed + len - 16, 16);
		for (int k = 0; k < 4; k++)
			cut[k] = t[k];
		cut[4] = len - t[0] - t[1] - t[2] - t[3];
	}
	uint8_t *zb = malloc(zcap);
	for (int k = 0; k < 5; k++) {
		if (!cut[k])
			continue;
		size_t r = ZSTD_compress(zb + z, zcap - z, packed + at, cut[k], k ? -1000 : 1);
		assert_false(ZSTD_isError(r));
		z += r;
		at += cut[k];
	}
	struct weft_chunk_header h;
	memset(&h, 0, sizeof(h));
	h.magic = WEFT_CHUNK_MAGIC;
	h.tid = tid;
	h.seq = seq;
	h.raw_size = (uint32_t)(n * 8);
	h.events = events;
	h.dropped = dropped;
	h.flags = WEFT_CHUNK_ZSTD | WEFT_CHUNK_SUM |
		  (fmt == 5 ? WEFT_CHUNK_PACKED5 : fmt == 4 ? WEFT_CHUNK_PACKED4 : WEFT_CHUNK_PACKED3) |
		  (ix.flags & WEFT_IX_LEAF ? WEFT_CHUNK_LEAF : 0); /* as writer.c flags it */
	h.stored_size = (uint32_t)z;
	h.checksum = weft_chunk_sum(h.flags, zb, z);
	tb_put(b, &h, sizeof(h));
	tb_put(b, zb, z);
	free(packed);
	free(scratch);
	free(zb);
}

enum { NRECS = 22 };
static uint64_t recs[NRECS];
static void fill_recs(void)
{
	uint64_t r[NRECS] = {
	2000, HDR(1, WEFT_R_BEGIN, 0, 0),
	2010, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x55d0c0a01230ull, 24,
	2300, HDR(0, WEFT_R_FREE, 1, WEFT_MEM_FREE), 0x55d0c0a01230ull,
	1900, HDR(0, WEFT_R_ALLOC, 2, WEFT_MEM_MALLOC), 0x7f0000001000ull, 1ull << 33, /* backwards */
	1900 + (1ull << 40), HDR(0, WEFT_R_REALLOC, 3, WEFT_MEM_REALLOC), 0x7f0000001000ull, 0x55d0c0a02000ull, 100,
	1901 + (1ull << 40), HDR(1, WEFT_R_END, 0, 0),
	};
	memcpy(recs, r, sizeof(r));
}

static void build(int fmt)
{
	fill_recs();
	meta.n = ev.n = 0;
	tb_header(&meta, WEFT_META_MAGIC, 1, 77);
	tb_site(&meta, 1, 0, "work");
	tb_clock_kind(&meta, 0); /* (as every writer writes: the times are ns) */
	tb_clock(&meta, 1000, 5000000);
	tb_clock(&meta, 3000, 5001000);
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 77);
	put_chunk(&ev, 78, 0, recs, sizeof(recs) / 8, fmt);
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

static int has_warning(struct weft_trace *t, const char *needle)
{
	for (size_t i = 0; i < t->nwarnings; i++)
		if (strstr(t->warnings[i], needle))
			return 1;
	return 0;
}

/* LEAF records (format 1.12, a slice with nothing inside: weft__end_leaf): packed with their
 * duration as a varint, counted as two events, indexed to their end; every reader gives the
 * BEGIN and END each stands for, at the begin and begin + duration, whatever the chunk's
 * packing, prepared (ns) or not; a cut LEAF is refused or dropped, never read past. */
/* a header as a constant (weft__hdr is a function) */
#define LHDR(id, type, extra) ((uint64_t)(id) | (uint64_t)(type) << 32 | (uint64_t)(extra) << 40)
static const uint64_t leaf_recs[] = {
	1000, LHDR(5, WEFT_R_BEGIN, 0),
	1010, LHDR(6, WEFT_R_LEAF, 1), 40,
	1100, LHDR(6, WEFT_R_LEAF, 1), 70000, /* ends after the END below: 71100 */
	1200, LHDR(5, WEFT_R_END, 0),
	1300, LHDR(7, WEFT_R_LEAF, 1), 0,
	1301, LHDR(0, WEFT_R_FREE, 1) | (uint64_t)WEFT_MEM_FREE << 48, 0x55d0c0a01230ull,
};
static const uint64_t leaf_expanded[] = {
	1000, LHDR(5, WEFT_R_BEGIN, 0),
	1010, LHDR(6, WEFT_R_BEGIN, 0), 1050, LHDR(6, WEFT_R_END, 0),
	1100, LHDR(6, WEFT_R_BEGIN, 0), 71100, LHDR(6, WEFT_R_END, 0),
	1200, LHDR(5, WEFT_R_END, 0),
	1300, LHDR(7, WEFT_R_BEGIN, 0), 1300, LHDR(7, WEFT_R_END, 0),
	1301, LHDR(0, WEFT_R_FREE, 1) | (uint64_t)WEFT_MEM_FREE << 48, 0x55d0c0a01230ull,
};

static void leaf_packing(void **s)
{
	(void)s;
	size_t n = sizeof(leaf_recs) / 8, ne = sizeof(leaf_expanded) / 8;
	uint8_t *p4 = malloc(weft_pack_bound(n)), *scratch = malloc(weft_pack4_scratch(n));
	size_t len = round_trip(leaf_recs, n, p4); /* as version 2, headers, fast readers */
	uint32_t events = 0, dropped = 0;
	struct weft_index_rec ix;
	assert_int_equal(weft_pack4_indexed(leaf_recs, n, p4, &events, &dropped, &ix, scratch), len);
	assert_int_equal(events, 9);
	assert_true(ix.flags & WEFT_IX_LEAF);
	assert_int_equal(ix.first_ticks, 1000);
	assert_int_equal(ix.last_ticks, 71100);
	assert_int_equal(ix.depth_delta, 0);
	/* the duration is a varint: 70000 in 3 bytes, not 8 */
	uint64_t one[] = {1100, HDR(6, WEFT_R_LEAF, 1, 0), 70000};
	uint64_t two[] = {1100, HDR(6, WEFT_R_COMPLETE, 1, 0), 70000};
	uint8_t a[64], b[64];
	size_t la = weft_pack4_indexed(one, 3, a, &events, &dropped, &ix, scratch);
	size_t lb = weft_pack4_indexed(two, 3, b, &events, &dropped, &ix, scratch);
	assert_int_equal(lb - la, 5 + 6); /* and COMPLETE's word0 is not a delta: 8 bytes, not 2 */
	/* expanded in place, and by the rewriting reader as it goes (the same words, prepared) */
	uint64_t w[64];
	memcpy(w, leaf_recs, n * 8);
	assert_int_equal(weft_leaf_expand(w, n, ne - 1), (size_t)-1); /* no room */
	assert_int_equal(weft_leaf_expand(w, n, ne), ne);
	assert_memory_equal(w, leaf_expanded, ne * 8);
	uint64_t r[64], want[64];
	assert_int_equal(weft_unpack4_rewrite(p4, len, r, 64, rw_hdr, rw_ts, NULL, 1, 0), ne);
	memcpy(want, leaf_expanded, ne * 8);
	for (size_t i = 0; i + 2 <= ne; i += 2 + weft_rec_extra(want[i + 1]))
		prep_ref(want + i, NULL);
	assert_memory_equal(r, want, ne * 8);
	assert_int_equal(weft_unpack4_rewrite(p4, len, r, ne - 1, rw_hdr, rw_ts, NULL, 1, 0), (size_t)-1);
	/* a LEAF cut short (its word not there) stays as it is: nothing is read past the end */
	memcpy(w, leaf_recs, n * 8);
	assert_int_equal(weft_leaf_expand(w, 4, 64), 4);
	assert_memory_equal(w, leaf_recs, 4 * 8);
	assert_int_equal(weft_leaf_expand(w, 5, 64), 6); /* whole: expanded */
	assert_int_equal(w[4], 1050);
	assert_int_equal(w[5], HDR(6, WEFT_R_END, 0, 0));
	every_cut(p4, len, leaf_recs, n, 4);
	free(p4);
	free(scratch);
}

/* The reader on chunks with LEAF records: packed (flagged as the writers flag it) and stored
 * unpacked (delta-coded, the writers' fallback), decoded and prepared. */
static void leaf_reader(void **s)
{
	(void)s;
	size_t ne = sizeof(leaf_expanded) / 8;
	for (int packed = 0; packed < 2; packed++) {
		meta.n = ev.n = 0;
		tb_header(&meta, WEFT_META_MAGIC, 1, 77);
		tb_site(&meta, 5, 0, "outer");
		tb_site(&meta, 6, 0, "leaf");
		tb_site(&meta, 7, 0, "empty");
		tb_clock_kind(&meta, 0);
		tb_clock(&meta, 1000, 5000000);
		tb_clock(&meta, 81000, 5080000); /* 1 tick = 1 ns */
		tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 77);
		if (packed) {
			put_chunk(&ev, 78, 0, leaf_recs, sizeof(leaf_recs) / 8, 4);
		} else {
			tb_chunk_flags = WEFT_CHUNK_LEAF;
			tb_chunk(&ev, 78, 0, leaf_recs, sizeof(leaf_recs) / 8, 1);
			tb_chunk_flags = 0;
		}
		char err[256];
		struct weft_trace *t = load(err, sizeof(err));
		assert_non_null(t);
		assert_int_equal(t->nwarnings, 0);
		struct weft_thread_data *th = &t->procs[0].threads[0];
		assert_int_equal(th->events, 9);
		uint64_t *buf = NULL;
		size_t cap = 0, nw = 0;
		const char *why;
		assert_int_equal(weft_chunk_decode(&th->chunks[0], &buf, &cap, &nw, &why), 0);
		assert_int_equal(nw, ne);
		assert_memory_equal(buf, leaf_expanded, ne * 8);
		/* prepared: every time in ns, the ends' too */
		const struct weft_proc *p = &t->procs[0];
		assert_int_equal(weft_chunk_decode_prepared(&th->chunks[0], p, &buf, &cap, &nw, &why), 0);
		assert_int_equal(nw, ne);
		for (size_t i = 0; i + 2 <= ne; i += 2 + weft_rec_extra(leaf_expanded[i + 1])) {
			assert_int_equal(buf[i], weft_proc_ns(p, leaf_expanded[i]));
			assert_int_equal(buf[i + 1], leaf_expanded[i + 1]);
		}
		assert_int_equal(buf[8] - buf[6], 70000 * (weft_proc_ns(p, 81000) - weft_proc_ns(p, 1000)) / 80000);
		free(buf);
		weft_trace_free(t);
	}
}

static void reader_same_records_v3_v4(void **s)
{
	(void)s;
	uint64_t *words[3] = {NULL, NULL, NULL};
	size_t nw[3] = {0, 0, 0}, cap[3] = {0, 0, 0};
	for (int k = 0; k < 3; k++) { /* versions 3, 4 and 5 */
		build(3 + k);
		char err[256];
		struct weft_trace *t = load(err, sizeof(err));
		assert_non_null(t);
		assert_int_equal(t->nwarnings, 0);
		struct weft_thread_data *th = &t->procs[0].threads[0];
		assert_int_equal(th->nchunks, 1);
		assert_int_equal(th->events, 6);
		const char *why;
		assert_int_equal(weft_chunk_decode(&th->chunks[0], &words[k], &cap[k], &nw[k], &why), 0);
		weft_trace_free(t);
	}
	assert_int_equal(nw[0], sizeof(recs) / 8);
	assert_int_equal(nw[1], nw[0]);
	assert_int_equal(nw[2], nw[0]);
	assert_memory_equal(words[1], words[0], nw[0] * 8);
	assert_memory_equal(words[2], words[0], nw[0] * 8);
	assert_int_equal(words[1][16], 0x55d0c0a02000ull); /* the REALLOC's new address and size */
	assert_int_equal(words[1][17], 100);
	for (int k = 0; k < 3; k++)
		free(words[k]);
}

/* A version 4 chunk cut anywhere: a warning, never a crash; a chunk whose stored bytes are
 * intact but whose packing is short (the checksum made for the short bytes): the decode says
 * why. */
static void reader_truncated_v4(void **s)
{
	(void)s;
	build(4);
	size_t full = ev.n;
	char err[256];
	for (size_t cut = sizeof(struct weft_file_header); cut < full; cut++) {
		ev.n = cut;
		struct weft_trace *t = load(err, sizeof(err));
		assert_non_null(t);
		struct weft_proc *p = &t->procs[0];
		assert_int_equal(p->nthreads ? p->threads[0].nchunks : 0, 0);
		if (cut > sizeof(struct weft_file_header))
			assert_true(has_warning(t, "truncated or damaged"));
		weft_trace_free(t);
	}
	ev.n = full;
	/* the records packed, one column byte short, stored unpacked (no zstd) */
	size_t n = sizeof(recs) / 8;
	uint8_t *packed = malloc(weft_pack_bound(n)), *scratch = malloc(weft_pack4_scratch(n));
	uint32_t events = 0, dropped = 0;
	struct weft_index_rec ix;
	size_t len = weft_pack4_indexed(recs, n, packed, &events, &dropped, &ix, scratch);
	uint32_t t4[4];
	memcpy(t4, packed + len - 16, 16);
	memmove(packed + len - 17, packed + len - 16, 16); /* the sizes lose their last byte */
	len--;
	ev.n = 0;
	tb_header(&ev, WEFT_EVENTS_MAGIC, 1, 77);
	struct weft_chunk_header h;
	memset(&h, 0, sizeof(h));
	h.magic = WEFT_CHUNK_MAGIC;
	h.tid = 78;
	h.raw_size = (uint32_t)(n * 8);
	h.events = events;
	h.flags = WEFT_CHUNK_SUM | WEFT_CHUNK_PACKED4;
	h.stored_size = (uint32_t)len;
	h.checksum = weft_chunk_sum(h.flags, packed, len);
	tb_put(&ev, &h, sizeof(h));
	tb_put(&ev, packed, len);
	struct weft_trace *t = load(err, sizeof(err));
	assert_non_null(t);
	uint64_t *buf = NULL;
	size_t cap = 0, nw;
	const char *why = NULL;
	assert_int_equal(t->procs[0].threads[0].nchunks, 1);
	assert_int_equal(weft_chunk_decode(&t->procs[0].threads[0].chunks[0], &buf, &cap, &nw, &why), -EBADMSG);
	assert_string_equal(why, "bad packed records");
	free(buf);
	weft_trace_free(t);
	free(packed);
	free(scratch);
	build(4);
}

/* Format 1.13: the function addresses packing collects for the chunk's index entry
 * (funcset.h) are exactly the distinct nonzero addresses of its ENTER and EXIT records
 * (whatever the header list held, with counter words or not), sorted in the listing; a chunk
 * with more than WEFT_FUNCSET_MAX of them is not listed; a cleared set starts empty; every
 * malformed listing is refused. */
#define FHDR(a, type, extra) HDR((uint32_t)(a), type, extra, (unsigned)((a) >> 32))
static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}
static void keep_addr(void *ud, uint64_t a)
{
	uint64_t **o = ud;
	*(*o)++ = a;
}
static void funcs_listing(void **s)
{
	(void)s;
	enum { N = 60000 };
	static uint64_t w[N * 3], expect[N], got[N], tmp[WEFT_FUNCSET_MAX];
	static uint8_t out[N * 24 + 64], scratch[N * 40], listing[WEFT_FUNCSET_BYTES];
	struct weft_funcset *fs = calloc(1, sizeof(*fs));
	assert_non_null(fs);
	unsigned seed = 12345;
	for (int round = 0; round < 6; round++) {
		/* distinct functions: few (the list and the recent table answer), many (the table),
		 * more than a listing holds */
		unsigned nfun = round < 2 ? 7 : round < 4 ? 3000 : WEFT_FUNCSET_MAX + 50;
		size_t n = 0, ne = 0;
		uint64_t t = 0;
		for (int r = 0; r < N / 2; r++) {
			seed = seed * 1103515245u + 12345u;
			unsigned f = (seed >> 8) % nfun;
			if (round & 1) /* the same function over and over, then the next */
				f = (unsigned)(r / 9) % nfun;
			uint64_t a = 0x7f0000400000ull + 16ull * f * (round == 5 ? 7919 : 1);
			if (f == 3)
				a = 0; /* never listed */
			unsigned type = (seed >> 20) & 1 ? WEFT_R_FUNC_ENTER : WEFT_R_FUNC_EXIT;
			unsigned extra = (seed >> 21) % 4 == 0; /* a counter word */
			w[n++] = t += (seed >> 24) % 100;
			w[n++] = FHDR(a, type, extra);
			if (extra)
				w[n++] = seed;
			if (a)
				expect[ne++] = a;
			if ((seed >> 23) % 5 == 0) { /* other records between */
				w[n++] = t;
				w[n++] = HDR(5, WEFT_R_BEGIN, 0, 0);
			}
		}
		qsort(expect, ne, 8, cmp_u64);
		size_t nu = 0;
		for (size_t i = 0; i < ne; i++)
			if (!nu || expect[nu - 1] != expect[i])
				expect[nu++] = expect[i];
		uint32_t ev, dr;
		struct weft_index_rec ix;
		size_t plain = weft_pack4_indexed(w, n, out, &ev, &dr, &ix, scratch);
		static uint8_t out2[N * 24 + 64];
		size_t plain5 = weft__pack4_ix(w, n, out, &ev, &dr, &ix, scratch, 0, 0, NULL, 1);
		size_t listed = weft_pack5_indexed(w, n, out2, &ev, &dr, &ix, scratch, fs);
		assert_true(plain > 0);
		assert_int_equal(plain5, listed); /* collecting leaves the packing as it was */
		assert_memory_equal(out, out2, plain5);
		long len = weft_funcset_encode(fs, listing, tmp);
		if (nu > WEFT_FUNCSET_MAX) {
			assert_int_equal(len, -1);
		} else {
			assert_true(len >= 0);
			uint64_t *o = got;
			assert_int_equal(weft_funcset_decode(listing, (size_t)len, keep_addr, &o), (long)nu);
			assert_memory_equal(got, expect, nu * 8);
		}
		weft_funcset_clear(fs);
		assert_int_equal(weft_funcset_encode(fs, listing, tmp), 0);
	}
	free(fs);
	/* malformed listings */
	static const struct { uint8_t b[12]; size_t n; } bad[] = {
		{{0x80}, 1},                     /* cut inside a varint */
		{{0x05, 0x00}, 2},               /* a zero difference: not increasing */
		{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 11}, /* 11 bytes */
		{{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x01}, 11}, /* wraps around */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(weft_funcset_decode(bad[i].b, bad[i].n, NULL, NULL), -1);
	assert_int_equal(weft_funcset_decode(NULL, 0, NULL, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(adversarial_round_trips),
		cmocka_unit_test(damage_is_refused),
		cmocka_unit_test(fast_readers_agree),
		cmocka_unit_test(funcs_listing),
		cmocka_unit_test(leaf_packing),
		cmocka_unit_test(leaf_reader),
		cmocka_unit_test(reader_same_records_v3_v4),
		cmocka_unit_test(reader_truncated_v4),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
