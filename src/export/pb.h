/*
 * pb.h - the few protobuf primitives the Perfetto writer needs: varints, tags, fixed64,
 * doubles, strings, and nested messages written once, front to back, without sizing passes:
 * one byte is reserved for the length; a body of 128 bytes or more (rare: long strings,
 * interning) is moved up to make room for a 4-byte redundant varint (valid protobuf, as
 * Perfetto's own protozero writes it).
 */
#ifndef WEFT_PB_H
#define WEFT_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noreturn)) void weft_oom(const char *what); /* format/reader.h */

struct pb {
	uint8_t *p;
	size_t n, cap;
};

static inline void pb_reserve(struct pb *b, size_t more)
{
	if (b->n + more <= b->cap)
		return;
	size_t cap = b->cap ? b->cap * 2 : 4096;
	while (cap < b->n + more)
		cap *= 2;
	b->p = realloc(b->p, cap);
	if (!b->p)
		weft_oom("encoding the trace");
	b->cap = cap;
}

static inline void pb_varint_raw(struct pb *b, uint64_t v)
{
	pb_reserve(b, 10);
	uint8_t *o = b->p + b->n;
	while (v >= 0x80) {
		*o++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*o++ = (uint8_t)v;
	b->n = (size_t)(o - b->p);
}

static inline void pb_tag(struct pb *b, unsigned field, unsigned wire)
{
	pb_varint_raw(b, ((uint64_t)field << 3) | wire);
}

static inline void pb_varint(struct pb *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, 0);
	pb_varint_raw(b, v);
}

static inline void pb_fixed64(struct pb *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, 1);
	pb_reserve(b, 8);
	memcpy(b->p + b->n, &v, 8); /* little-endian hosts only (x86-64, aarch64) */
	b->n += 8;
}

static inline void pb_double(struct pb *b, unsigned field, double d)
{
	uint64_t v;
	memcpy(&v, &d, 8);
	pb_fixed64(b, field, v);
}

static inline void pb_bytes(struct pb *b, unsigned field, const void *s, size_t n)
{
	pb_tag(b, field, 2);
	pb_varint_raw(b, n);
	pb_reserve(b, n);
	memcpy(b->p + b->n, s, n);
	b->n += n;
}

static inline void pb_string(struct pb *b, unsigned field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

/* Begin a nested message; returns the position to hand to pb_end. */
static inline size_t pb_begin(struct pb *b, unsigned field)
{
	pb_tag(b, field, 2);
	pb_reserve(b, 1);
	return b->n++;
}

static inline void pb_end(struct pb *b, size_t at)
{
	size_t len = b->n - at - 1;
	if (len < 128) { /* most messages: the 1-byte length reserved */
		b->p[at] = (uint8_t)len;
		return;
	}
	pb_reserve(b, 3); /* longer: move the body up to make room for 4 bytes */
	memmove(b->p + at + 4, b->p + at + 1, len);
	b->n += 3;
	b->p[at] = (uint8_t)(0x80 | (len & 0x7f));
	b->p[at + 1] = (uint8_t)(0x80 | ((len >> 7) & 0x7f));
	b->p[at + 2] = (uint8_t)(0x80 | ((len >> 14) & 0x7f));
	b->p[at + 3] = (uint8_t)((len >> 21) & 0x7f);
}

/* One InternedString of an InternedData field (event names, categories, debug annotation
 * names, function names, mapping paths): iid (1) and its text (2). */
static inline void pb_interned_string(struct pb *b, unsigned field, uint64_t iid, const char *s)
{
	size_t m = pb_begin(b, field);
	pb_varint(b, 1, iid);
	pb_string(b, 2, s);
	pb_end(b, m);
}

#endif
