/*
 * pack.h - the packed record encoding (chunk flag WEFT_CHUNK_PACKED), applied by writers after
 * delta coding and before zstd, undone by readers. It is a serialization of the same records,
 * not a compressor: it takes zstd's input from 16 bytes per typical event to 2-3, which is
 * what lets one writer thread keep up with a thread emitting 40 M events/s.
 *
 * Per record: one tag byte. Tag 0-3: the header word equals entry N of a 4-entry most-recently
 * -used list of headers (moved to the front); tag 4: the 8 header bytes follow (and enter the
 * list). Then word0: as a LEB128 varint for records whose word0 is a timestamp delta, as 8 raw
 * bytes otherwise; then the record's extra words, 8 raw bytes each.
 */
#ifndef WEFT_PACK_H
#define WEFT_PACK_H

#include <stdint.h>
#include <string.h>
#include "format.h"


/* Largest packed size of n words: every record a miss (1 + 8 + 10 per two words). */
static inline size_t weft_pack_bound(size_t nwords)
{
	return nwords * 10 + 16;
}

/* Packs whole records of w[0..n) into out; returns bytes written. */
static inline size_t weft_pack(const uint64_t *w, size_t n, uint8_t *out)
{
	uint64_t mru[4] = {0, 0, 0, 0};
	uint8_t *o = out;
	size_t i = 0;
	while (i + 2 <= n) {
		uint64_t h = w[i + 1], v = w[i];
		unsigned extra = weft_rec_extra(h);
		if (i + 2 + extra > n)
			break;
		unsigned k = 0;
		while (k < 4 && mru[k] != h)
			k++;
		if (k < 4) {
			*o++ = (uint8_t)k;
		} else {
			*o++ = 4;
			memcpy(o, &h, 8);
			o += 8;
			k = 3;
		}
		for (; k > 0; k--)
			mru[k] = mru[k - 1];
		mru[0] = h;
		if (weft_rec_has_ticks(weft_rec_type(h))) {
			while (v >= 0x80) {
				*o++ = (uint8_t)(v | 0x80);
				v >>= 7;
			}
			*o++ = (uint8_t)v;
		} else {
			memcpy(o, &v, 8);
			o += 8;
		}
		memcpy(o, w + i + 2, (size_t)extra * 8);
		o += (size_t)extra * 8;
		i += 2 + extra;
	}
	return (size_t)(o - out);
}

/* Reads one record's tag (and literal header) at *p: the header, moved to the front of mru.
 * Returns 1 for a literal header, 0 for a list entry, -1 if the input is malformed. */
static inline int weft__unpack_hdr(const uint8_t **p, const uint8_t *end, uint64_t mru[4], uint64_t *out)
{
	unsigned k = *(*p)++;
	uint64_t h;
	int literal = 0;
	if (k < 4) {
		h = mru[k];
	} else if (k == 4 && end - *p >= 8) {
		memcpy(&h, *p, 8);
		*p += 8;
		k = 3;
		literal = 1;
	} else {
		return -1;
	}
	for (; k > 0; k--)
		mru[k] = mru[k - 1];
	mru[0] = h;
	*out = h;
	return literal;
}

/* Unpacks into w (room for cap words); returns words written, or (size_t)-1 if the input is
 * malformed. With `undelta`, timestamps come out as running sums of the deltas (what a chunk
 * stores), and `each`, when given, is then called on every record in place: both save readers
 * a second pass over the words (a constant `each` is inlined). */
static inline size_t weft_unpack_each(const uint8_t *in, size_t len, uint64_t *w, size_t cap, int undelta,
				      void (*each)(uint64_t *rec, void *ctx), void *ctx)
{
	uint64_t prev = 0;
	uint64_t mru[4] = {0, 0, 0, 0};
	const uint8_t *p = in, *end = in + len;
	size_t n = 0;
	while (p < end) {
		uint64_t h;
		if (weft__unpack_hdr(&p, end, mru, &h) < 0)
			return (size_t)-1;
		unsigned extra = weft_rec_extra(h);
		if (n + 2 + extra > cap)
			return (size_t)-1;
		uint64_t v = 0;
		if (weft_rec_has_ticks(weft_rec_type(h))) {
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
			if (undelta) {
				prev += v;
				v = prev;
			}
		} else {
			if (end - p < 8)
				return (size_t)-1;
			memcpy(&v, p, 8);
			p += 8;
		}
		if ((size_t)(end - p) < (size_t)extra * 8)
			return (size_t)-1;
		w[n] = v;
		w[n + 1] = h;
		memcpy(w + n + 2, p, (size_t)extra * 8);
		p += (size_t)extra * 8;
		if (each)
			each(w + n, ctx);
		n += 2 + extra;
	}
	return n;
}

static inline size_t weft_unpack(const uint8_t *in, size_t len, uint64_t *w, size_t cap, int undelta)
{
	return weft_unpack_each(in, len, w, cap, undelta, NULL, NULL);
}

/* Calls fn on every header word that is written out in full (tag 4) in a packed stream. Each
 * distinct header of a chunk is among them (the list starts empty in every chunk), so this
 * finds every function address of a chunk without unpacking it. Returns 0, or -1 if the input
 * is malformed. */
static inline int weft_unpack_headers(const uint8_t *in, size_t len, void (*fn)(uint64_t h, void *ud),
				      void *ud)
{
	uint64_t mru[4] = {0, 0, 0, 0};
	const uint8_t *p = in, *end = in + len;
	while (p < end) {
		uint64_t h;
		int literal = weft__unpack_hdr(&p, end, mru, &h);
		if (literal < 0)
			return -1;
		if (literal)
			fn(h, ud);
		size_t skip = (size_t)weft_rec_extra(h) * 8;
		if (weft_rec_has_ticks(weft_rec_type(h))) {
			while (p < end && (*p & 0x80))
				p++;
			if (p++ >= end)
				return -1;
		} else {
			skip += 8;
		}
		if ((size_t)(end - p) < skip)
			return -1;
		p += skip;
	}
	return 0;
}

#endif
