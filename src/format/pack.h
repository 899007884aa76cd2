/*
 * pack.h - the packed record encodings, applied by writers before zstd and undone by readers.
 * A packing is a serialization of the same records, not a compressor: it takes zstd's input
 * from 16 bytes per typical event to about 1, which is what lets one writer thread keep up
 * with a thread that emits an event every 12 ns (two clock reads per traced call).
 *
 * Both encodings keep a 4-entry most-recently-used list of header words per chunk (starting
 * empty; an entry used moves to the front, a new header enters at the front and pushes the
 * last one out) and write each record as a tag byte, word0, then its extra words (8 raw bytes
 * each). word0 is, for records that carry a timestamp, the difference to the previous such
 * record as a LEB128 varint; for other records its 8 raw bytes.
 *
 * Version 2 (chunk flag WEFT_CHUNK_PACKED2, written by formats 1.1 to 1.8 and by the flight
 * recorder's snapshots, flight-snap.c): the tag byte b
 *   b < 192   header = list entry b >> 6 (0-2); low 6 bits d: for a timestamp record, d < 63
 *             is the delta itself (no word0 bytes follow) and d == 63 means the varint follows;
 *             for other records d is 63 and word0's 8 bytes follow;
 *   b == 192  the 8 header bytes follow (and enter the list), then word0;
 *   b == 193  header = list entry 3, then word0; other values are malformed.
 * A function entry or exit a few dozen ticks after the previous event is one byte.
 * The extra words of memory records (ALLOC, FREE, REALLOC; format 1.3) are varints, not 8 raw
 * bytes: an address as the zigzag-coded difference to the previous address of a memory record
 * of the chunk (starting at 0), a size as itself. Every extra word of FREE is an address; of
 * ALLOC and REALLOC every one but the last, which is the size. A malloc or free near the
 * previous one packs into 5 to 9 bytes.
 * Version 3 (chunk flag WEFT_CHUNK_PACKED3, format 1.9; read only since 1.10): version 2 with the
 * memory records' extra words in two columns after the records instead of among them: the
 * records (version 2, each memory record ending after its word0), then every address varint
 * of the chunk, then every size varint, then u32 the records' length and u32 the addresses'
 * length (little-endian). zstd finds the record stream's repeats (a malloc's tag, then its
 * free's) and codes each column's bytes with its own statistics: 0.3x less zstd time and 11%
 * fewer bytes on a malloc/free stream than version 2 (bench/RESULTS.md, issue 21).
 * Version 4 (chunk flag WEFT_CHUNK_PACKED4, format 1.10) and version 5 (WEFT_CHUNK_PACKED5,
 * format 1.14, what writers write): pack4.h.
 * Version 1 (chunk flag WEFT_CHUNK_PACKED, written before format 1.1; read only): tag 0-3 is
 * list entry N, tag 4 a literal header; word0 always follows the tag. Timestamps in version 1
 * are deltas before packing: the writer delta-coded the chunk first.
 */
#ifndef WEFT_PACK_H
#define WEFT_PACK_H

#include <stdint.h>
#include <string.h>
#include "format.h"
#include "chunkindex.h"

#define WEFT_PACK_LITERAL 192u
#define WEFT_PACK_ENTRY3 193u
/* version 5 (pack4.h): a timestamp record's delta in the deltas column, 1 << k bytes, after a
 * literal header (tag WEFT_PACK5_LITERAL + k, the 8 header bytes follow) or list entry 3
 * (WEFT_PACK5_ENTRY3 + k); weft__unpack_hdr's *small for them: WEFT_PACK5_COL + k */
#define WEFT_PACK5_LITERAL 194u
#define WEFT_PACK5_ENTRY3 198u
#define WEFT_PACK5_END 202u
#define WEFT_PACK5_COL 128u
#define WEFT_PACK_LONG 63u /* low bits of a short tag: word0 follows */

/* Which packing a chunk's flags say (1 to 5), 0 for unpacked records. */
static inline int weft_chunk_packing(uint32_t flags)
{
	return (flags & WEFT_CHUNK_PACKED5)   ? 5
	       : (flags & WEFT_CHUNK_PACKED4) ? 4
	       : (flags & WEFT_CHUNK_PACKED3) ? 3
	       : (flags & WEFT_CHUNK_PACKED2) ? 2
	       : (flags & WEFT_CHUNK_PACKED)  ? 1
					      : 0;
}

/* Version 3's parts: the records [in, in + main), the addresses, the sizes. 0, or -1 when the
 * trailer does not fit. */
struct weft__cols {
	const uint8_t *a, *a_end, *s, *s_end;
};
static inline int weft__cols_find(const uint8_t *in, size_t len, size_t *main, struct weft__cols *c)
{
	uint32_t m, na;
	if (len < 8)
		return -1;
	memcpy(&m, in + len - 8, 4);
	memcpy(&na, in + len - 4, 4);
	if (m > len - 8 || na > len - 8 - m)
		return -1;
	*main = m;
	c->a = in + m;
	c->a_end = c->s = c->a + na;
	c->s_end = in + len - 8;
	return 0;
}

/* Largest packed size of n words: every record a miss (1 + 8 + 10 per two words). */
static inline size_t weft_pack_bound(size_t nwords)
{
	return nwords * 10 + 16;
}

static inline uint8_t *weft__put_varint(uint8_t *o, uint64_t v)
{
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	return o;
}

static inline uint64_t weft__zigzag(uint64_t v, uint64_t prev)
{
	int64_t d = (int64_t)(v - prev);
	return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

/* Reads a varint at *p; -1 if it runs past end or beyond 64 bits. */
static inline int weft__get_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (;;) {
		if (*p >= end || shift > 63)
			return -1;
		uint8_t b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
		shift += 7;
	}
	*out = v;
	return 0;
}

#include "funcset.h" /* (its listings are varints as these) */

/* Extra word j of a memory record of `type` with `extra` extra words: an address? */
static inline int weft__mem_is_addr(unsigned type, unsigned j, unsigned extra)
{
	return type == WEFT_R_FREE || j + 1 < extra;
}

static inline __attribute__((always_inline)) uint8_t *weft__pack_mem(uint8_t *o, const uint64_t *x, unsigned type,
								      unsigned extra, uint64_t *prev_addr)
{
	if (__builtin_expect(type == WEFT_R_FREE && extra == 1, 1)) { /* the common two first */
		o = weft__put_varint(o, weft__zigzag(x[0], *prev_addr));
		*prev_addr = x[0];
		return o;
	}
	if (__builtin_expect(type == WEFT_R_ALLOC && extra == 2, 1)) {
		o = weft__put_varint(o, weft__zigzag(x[0], *prev_addr));
		*prev_addr = x[0];
		return weft__put_varint(o, x[1]);
	}
	for (unsigned j = 0; j < extra; j++) {
		uint64_t v = x[j];
		if (weft__mem_is_addr(type, j, extra)) {
			int64_t d = (int64_t)(v - *prev_addr);
			*prev_addr = v;
			v = ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
		}
		o = weft__put_varint(o, v);
	}
	return o;
}

static inline int weft__unpack_mem(const uint8_t **p, const uint8_t *end, uint64_t *x, unsigned type,
				   unsigned extra, uint64_t *prev_addr)
{
	for (unsigned j = 0; j < extra; j++) {
		uint64_t v;
		if (weft__get_varint(p, end, &v))
			return -1;
		if (weft__mem_is_addr(type, j, extra)) {
			v = (v >> 1) ^ (0 - (v & 1));
			v += *prev_addr;
			*prev_addr = v;
		}
		x[j] = v;
	}
	return 0;
}

/* A record's tag in its long form (versions 2-4): the tag, the literal header where the list
 * did not hold it, then word0 (a varint for a timestamp delta, else 8 bytes). */
static inline __attribute__((always_inline)) uint8_t *weft__pack_long(uint8_t *o, unsigned b, uint64_t h,
									  uint64_t v, int ticks)
{
	*o++ = (uint8_t)(b < WEFT_PACK_LITERAL ? b | WEFT_PACK_LONG : b);
	if (b == WEFT_PACK_LITERAL) {
		memcpy(o, &h, 8);
		o += 8;
	}
	if (ticks)
		return weft__put_varint(o, v);
	memcpy(o, &v, 8);
	return o + 8;
}

/* The tag bits of header h against the four most recently used headers (0, 64, 128: list
 * entries 0-2; WEFT_PACK_ENTRY3; WEFT_PACK_LITERAL: none), h moved to the front (versions 2-4). */
static inline __attribute__((always_inline)) unsigned weft__pack_mru(uint64_t mru[4], uint64_t h)
{
	unsigned b;
	if (h == mru[0]) {
		b = 0;
	} else if (h == mru[1]) {
		b = 64;
		mru[1] = mru[0];
	} else if (h == mru[2]) {
		b = 128;
		mru[2] = mru[1];
		mru[1] = mru[0];
	} else {
		b = h == mru[3] ? WEFT_PACK_ENTRY3 : WEFT_PACK_LITERAL;
		mru[3] = mru[2];
		mru[2] = mru[1];
		mru[1] = mru[0];
	}
	mru[0] = h;
	return b;
}

/* weft_pack, and with ix the chunk's time index entry (chunkindex.h: what weft_index_scan
 * computes) in the same pass, for the writers: the walk over the records is paid once. With
 * addrs and sizes (version 3: scratch room of weft_pack_bound(n) bytes each) the memory records'
 * addresses and sizes go there first, and after the records at the end. */
static inline __attribute__((always_inline)) size_t weft__pack(const uint64_t *w, size_t n, uint8_t *out,
							       uint32_t *events, uint32_t *dropped,
							       struct weft_index_rec *ix, uint8_t *addrs,
							       uint8_t *sizes)
{
	uint8_t *oa = addrs, *os = sizes;
	uint64_t mru[4] = {0, 0, 0, 0}, prev = 0, prev_addr = 0;
	struct weft__ix_acc acc;
	weft__ix_init(&acc);
	uint32_t ev = 0;
	uint8_t *o = out;
	size_t i = 0;
	while (i + 2 <= n) {
		uint64_t h = w[i + 1], v = w[i];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h), b;
		if (i + 2 + extra > n)
			break;
		__builtin_prefetch(w + i + 64); /* the chunk was just written on another core */
		ev += (unsigned)weft_rec_events(type);
		if (ix) /* as weft_index_scan does */
			weft__ix_step(&acc, w, i, h, type, extra);
		if (__builtin_expect(type == WEFT_R_DROPPED && extra, 0))
			*dropped += (uint32_t)w[i + 2];
		b = weft__pack_mru(mru, h);
		int ticks = weft_rec_has_ticks(type);
		if (ticks) {
			uint64_t t = v;
			v -= prev;
			prev = t;
		}
		if (b < WEFT_PACK_LITERAL && ticks && v < WEFT_PACK_LONG) {
			*o++ = (uint8_t)(b | v);
		} else {
			o = weft__pack_long(o, b, h, v, ticks);
		}
		if (__builtin_expect(weft_rec_is_mem(type), 0)) {
			if (addrs && type == WEFT_R_FREE && extra == 1) { /* version 3: into the columns */
				oa = weft__put_varint(oa, weft__zigzag(w[i + 2], prev_addr));
				prev_addr = w[i + 2];
			} else if (addrs && type == WEFT_R_ALLOC && extra == 2) {
				oa = weft__put_varint(oa, weft__zigzag(w[i + 2], prev_addr));
				prev_addr = w[i + 2];
				os = weft__put_varint(os, w[i + 3]);
			} else if (addrs) {
				for (unsigned j = 0; j < extra; j++) {
					uint64_t x = w[i + 2 + j];
					if (weft__mem_is_addr(type, j, extra)) {
						oa = weft__put_varint(oa, weft__zigzag(x, prev_addr));
						prev_addr = x;
					} else {
						os = weft__put_varint(os, x);
					}
				}
			} else {
				o = weft__pack_mem(o, w + i + 2, type, extra, &prev_addr);
			}
		} else {
			memcpy(o, w + i + 2, (size_t)extra * 8);
			o += (size_t)extra * 8;
		}
		i += 2 + extra;
	}
	*events = ev;
	if (ix)
		weft__ix_done(&acc, ix);
	if (addrs) { /* the columns after the records, then the trailer */
		uint32_t m = (uint32_t)(o - out), na = (uint32_t)(oa - addrs);
		memcpy(o, addrs, na);
		o += na;
		memcpy(o, sizes, (size_t)(os - sizes));
		o += os - sizes;
		memcpy(o, &m, 4);
		memcpy(o + 4, &na, 4);
		o += 8;
	}
	return (size_t)(o - out);
}

/* Packs whole records of w[0..n), timestamps absolute, into out (version 2), delta-coding the
 * timestamps on the way; counts the events into *events and the DROPPED records' counts into
 * *dropped. Returns bytes written (at most weft_pack_bound(n)). */
static inline size_t weft_pack(const uint64_t *w, size_t n, uint8_t *out, uint32_t *events, uint32_t *dropped)
{
	return weft__pack(w, n, out, events, dropped, NULL, NULL, NULL);
}

/* weft_pack, also filling ix's times, depth and flags (not its tid, file, seq, offset). */
static inline size_t weft_pack_indexed(const uint64_t *w, size_t n, uint8_t *out, uint32_t *events,
				       uint32_t *dropped, struct weft_index_rec *ix)
{
	return weft__pack(w, n, out, events, dropped, ix, NULL, NULL);
}

/* weft_pack_indexed in version 3: addrs and sizes are scratch room of weft_pack_bound(n) bytes
 * each; out gets the records, the columns and the trailer (at most weft_pack_bound(n)). */
static inline size_t weft_pack3_indexed(const uint64_t *w, size_t n, uint8_t *out, uint32_t *events,
					uint32_t *dropped, struct weft_index_rec *ix, uint8_t *addrs,
					uint8_t *sizes)
{
	return weft__pack(w, n, out, events, dropped, ix, addrs, sizes);
}

#include "pack4.h"

/* Reads one record's tag (and literal header) at *p in packing `fmt`: the header, moved to
 * the front of mru, and in *small the delta the tag carries (WEFT_PACK_LONG: word0 follows;
 * in version 4, tags 192 and 193 give WEFT_PACK4_INLINE).
 * Returns 1 for a literal header, 0 for a list entry, -1 if the input is malformed. */
static inline __attribute__((always_inline)) int weft__unpack_hdr(const uint8_t **p, const uint8_t *end,
								    uint64_t mru[4], uint64_t *out, int fmt,
								    unsigned *small)
{
	unsigned b = *(*p)++, k;
	int literal = 0;
	uint64_t h;
	*small = WEFT_PACK_LONG;
	if (fmt >= 2 && b < WEFT_PACK_LITERAL) {
		k = b >> 6;
		*small = b & WEFT_PACK_LONG;
	} else if (fmt >= 2 && b == WEFT_PACK_ENTRY3) {
		k = 3;
		if (fmt >= 4)
			*small = WEFT_PACK4_INLINE;
	} else if (fmt == 5 && b >= WEFT_PACK5_LITERAL && b < WEFT_PACK5_END) {
		k = 3;
		literal = b < WEFT_PACK5_ENTRY3;
		*small = WEFT_PACK5_COL + ((b - WEFT_PACK5_LITERAL) & 3);
		if (literal && end - *p < 8)
			return -1;
	} else if (fmt == 1 && b < 4) {
		k = b;
	} else if (b == (fmt >= 2 ? WEFT_PACK_LITERAL : 4u) && end - *p >= 8) {
		k = 3;
		literal = 1;
		if (fmt >= 4)
			*small = WEFT_PACK4_INLINE;
	} else {
		return -1;
	}
	if (literal) {
		memcpy(&h, *p, 8);
		*p += 8;
	} else {
		h = mru[k];
	}
	for (; k > 0; k--)
		mru[k] = mru[k - 1];
	mru[0] = h;
	*out = h;
	return literal;
}

/* Unpacks packing `fmt` (1 to 4) into w (room for cap words); returns words written, or
 * (size_t)-1 if the input is malformed. With `undelta`, timestamps come out as running sums
 * of the deltas (absolute ticks), else as the deltas; `each`, when given, is then called on
 * every record in place: both save readers a second pass over the words (a constant `each`
 * and `fmt` are inlined). */
static inline __attribute__((always_inline)) size_t
weft_unpack_each(const uint8_t *in, size_t len, uint64_t *w, size_t cap, int fmt, int undelta,
		 void (*each)(uint64_t *rec, void *ctx), void *ctx)
{
	uint64_t prev = 0, prev_addr = 0, prev_flow = 0;
	uint64_t mru[4] = {0, 0, 0, 0};
	const uint8_t *p = in, *end = in + len;
	struct weft__cols col = {0, 0, 0, 0};
	struct weft__cols4 c4 = {0, 0, 0, 0, 0, 0, 0, 0};
	if (fmt == 3) {
		size_t m;
		if (weft__cols_find(in, len, &m, &col))
			return (size_t)-1;
		end = in + m;
	} else if (fmt >= 4) {
		size_t m;
		if (weft__cols4_find(in, len, &m, &c4))
			return (size_t)-1;
		end = in + m;
	}
	size_t n = 0;
	while (p < end) {
		uint64_t h;
		unsigned small;
		if (weft__unpack_hdr(&p, end, mru, &h, fmt, &small) < 0)
			return (size_t)-1;
		unsigned extra = weft_rec_extra(h);
		if (n + 2 + extra > cap)
			return (size_t)-1;
		uint64_t v = 0;
		if (fmt >= 4 && weft_rec_has_ticks(weft_rec_type(h))) {
			if (weft__unpack4_delta(small, &p, end, &c4, &v))
				return (size_t)-1;
			if (undelta) {
				prev += v;
				v = prev;
			}
		} else if (weft_rec_has_ticks(weft_rec_type(h))) {
			if (small < WEFT_PACK_LONG) {
				v = small;
			} else {
				unsigned shift = 0;
				for (;;) {
					if (p >= end || shift > 63)
						return (size_t)-1;
					uint8_t b = *p++;
					v |= (uint64_t)(b & 0x7f) << shift;
					if (!(b & 0x80))
						break;
					shift += 7;
				}
			}
			if (undelta) {
				prev += v;
				v = prev;
			}
		} else if (small < WEFT_PACK_LONG || small >= WEFT_PACK5_COL) { /* (INLINE only in versions 4, 5) */
			return (size_t)-1;
		} else if (fmt == 5 && weft__flow_type(weft_rec_type(h))) {
			if (weft__unpack5_flow(&c4, &prev_flow, &v))
				return (size_t)-1;
		} else {
			if (end - p < 8)
				return (size_t)-1;
			memcpy(&v, p, 8);
			p += 8;
		}
		w[n] = v;
		w[n + 1] = h;
		if (__builtin_expect(fmt >= 4 && weft_rec_is_mem(weft_rec_type(h)), 0)) {
			if (weft__unpack4_mem(&c4, w + n + 2, weft_rec_type(h), extra, &prev_addr))
				return (size_t)-1;
		} else if (__builtin_expect(fmt == 3 && weft_rec_is_mem(weft_rec_type(h)), 0)) {
			unsigned type = weft_rec_type(h);
			for (unsigned j = 0; j < extra; j++) {
				uint64_t x;
				if (weft__mem_is_addr(type, j, extra)) {
					if (weft__get_varint(&col.a, col.a_end, &x))
						return (size_t)-1;
					x = (x >> 1) ^ (0 - (x & 1));
					x += prev_addr;
					prev_addr = x;
				} else if (weft__get_varint(&col.s, col.s_end, &x)) {
					return (size_t)-1;
				}
				w[n + 2 + j] = x;
			}
		} else if (__builtin_expect(fmt == 2 && weft_rec_is_mem(weft_rec_type(h)), 0)) {
			if (weft__unpack_mem(&p, end, w + n + 2, weft_rec_type(h), extra, &prev_addr))
				return (size_t)-1;
		} else if (__builtin_expect(fmt >= 4 && weft_rec_type(h) == WEFT_R_LEAF && extra == 1, 0)) {
			if (weft__get_varint(&p, end, w + n + 2)) /* a LEAF's ticks to its end */
				return (size_t)-1;
		} else {
			if ((size_t)(end - p) < (size_t)extra * 8)
				return (size_t)-1;
			memcpy(w + n + 2, p, (size_t)extra * 8);
			p += (size_t)extra * 8;
		}
		if (each)
			each(w + n, ctx);
		n += 2 + extra;
	}
	if (fmt == 3 && (col.a != col.a_end || col.s != col.s_end))
		return (size_t)-1; /* column bytes no record took */
	if (fmt >= 4 && !weft__cols4_done(&c4))
		return (size_t)-1;
	return n;
}

static inline size_t weft_unpack(const uint8_t *in, size_t len, uint64_t *w, size_t cap, int fmt, int undelta)
{
	return fmt == 5	  ? weft_unpack_each(in, len, w, cap, 5, undelta, NULL, NULL)
	       : fmt == 4 ? weft_unpack_each(in, len, w, cap, 4, undelta, NULL, NULL)
	       : fmt == 3 ? weft_unpack_each(in, len, w, cap, 3, undelta, NULL, NULL)
	       : fmt == 2 ? weft_unpack_each(in, len, w, cap, 2, undelta, NULL, NULL)
			  : weft_unpack_each(in, len, w, cap, 1, undelta, NULL, NULL);
}

/* Calls fn on every header word that is written out in full (a literal) in a packed stream. Each
 * distinct header of a chunk is among them (the list starts empty in every chunk), so this
 * finds every function address of a chunk without unpacking it. Returns 0, or -1 if the input
 * is malformed. */
static inline int weft_unpack_headers(const uint8_t *in, size_t len, int fmt, void (*fn)(uint64_t h, void *ud),
				      void *ud)
{
	uint64_t mru[4] = {0, 0, 0, 0};
	const uint8_t *p = in, *end = in + len;
	if (fmt >= 3) { /* the records alone: the columns hold no headers */
		struct weft__cols col;
		struct weft__cols4 c4;
		size_t m;
		if (fmt == 3 ? weft__cols_find(in, len, &m, &col) : weft__cols4_find(in, len, &m, &c4))
			return -1;
		end = in + m;
	}
	while (p < end) {
		uint64_t h;
		unsigned small;
		int literal = fmt == 5	 ? weft__unpack_hdr(&p, end, mru, &h, 5, &small)
			      : fmt == 4 ? weft__unpack_hdr(&p, end, mru, &h, 4, &small)
			      : fmt >= 2 ? weft__unpack_hdr(&p, end, mru, &h, 2, &small)
					 : weft__unpack_hdr(&p, end, mru, &h, 1, &small);
		if (literal < 0)
			return -1;
		if (literal)
			fn(h, ud);
		size_t skip = (size_t)weft_rec_extra(h) * 8;
		int leaf = fmt >= 4 && weft_rec_type(h) == WEFT_R_LEAF && weft_rec_extra(h) == 1;
		if ((fmt >= 2 && weft_rec_is_mem(weft_rec_type(h))) || leaf)
			skip = 0; /* varints, skipped below (version 3: in the columns) */
		if (fmt >= 4 && weft_rec_has_ticks(weft_rec_type(h))) {
			if (small == WEFT_PACK4_INLINE) { /* skip the varint (else: in the tag or the deltas) */
				while (p < end && (*p & 0x80))
					p++;
				if (p++ >= end)
					return -1;
			}
		} else if (weft_rec_has_ticks(weft_rec_type(h))) {
			if (small == WEFT_PACK_LONG) { /* skip the varint */
				while (p < end && (*p & 0x80))
					p++;
				if (p++ >= end)
					return -1;
			}
		} else {
			if (small < WEFT_PACK_LONG || small >= WEFT_PACK5_COL)
				return -1;
			if (!(fmt == 5 && weft__flow_type(weft_rec_type(h)))) /* (version 5: in a column) */
				skip += 8;
		}
		if ((size_t)(end - p) < skip)
			return -1;
		p += skip;
		if (leaf) {
			uint64_t v;
			if (weft__get_varint(&p, end, &v))
				return -1;
		}
		if (fmt == 2 && weft_rec_is_mem(weft_rec_type(h))) {
			for (unsigned j = 0; j < weft_rec_extra(h); j++) {
				uint64_t v;
				if (weft__get_varint(&p, end, &v))
					return -1;
			}
		}
	}
	return 0;
}

#endif
