/*
 * funcset.h - the function addresses a chunk holds, listed beside it (format 1.13).
 *
 * A reader names a process's functions before it converts the process (symbols.c): it needs
 * every distinct function address, and finding them meant decompressing and scanning every
 * chunk once more before the conversion decodes them (a fifth of `weft convert`'s CPU on a
 * Lua trace). The writer already sees each address go by when it packs a chunk: a header not
 * among the four most recent ones is written literally (pack.h), so each distinct ENTER or
 * EXIT header of a chunk is met at least once on that path. The writer keeps the chunk's
 * distinct addresses in a weft_funcset on the way and appends them to the chunk's
 * CHUNK_INDEX record (chunkindex.h, flag WEFT_IX_FUNCS): sorted, each a varint of its
 * difference to the one before (the first to 0). The listing is the chunk's alone (no record
 * depends on another), so a lost record only means that chunk is scanned as before.
 *
 * A chunk with more than WEFT_FUNCSET_MAX distinct addresses is not listed (the reader scans
 * it); address 0 is never listed (no reader names it). Included by pack.h, whose varints
 * the listing uses.
 */
#ifndef WEFT_FUNCSET_H
#define WEFT_FUNCSET_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define WEFT_FUNCSET_MAX 4096u   /* distinct addresses a listing holds */
#define WEFT_FUNCSET_SLOTS 8192u /* the table: twice that, a power of two */
#define WEFT_FUNCSET_RECENT 256u /* the last address seen at each of these low-bit positions */
#define WEFT_FUNCSET_BYTES (WEFT_FUNCSET_MAX * 10u) /* the largest encoded listing */

struct weft_funcset {
	uint64_t recent[WEFT_FUNCSET_RECENT]; /* most repeats stop here, before the table */
	uint64_t slot[WEFT_FUNCSET_SLOTS];    /* open addressing, 0 empty */
	uint32_t used[WEFT_FUNCSET_MAX];      /* the filled slots, in the order they were filled */
	uint32_t n;
	int over; /* more than WEFT_FUNCSET_MAX: the chunk is not listed */
};

/* The table's part of weft_funcset_add (out of line: the packing loop keeps only the check). */
static __attribute__((noinline)) void weft__funcset_insert(struct weft_funcset *s, uint64_t a)
{
	if (!a || s->over)
		return;
	size_t j = (size_t)((a * 0x9e3779b97f4a7c15ull) >> 40) & (WEFT_FUNCSET_SLOTS - 1);
	while (s->slot[j] && s->slot[j] != a)
		j = (j + 1) & (WEFT_FUNCSET_SLOTS - 1);
	if (s->slot[j])
		return;
	if (s->n == WEFT_FUNCSET_MAX) {
		s->over = 1;
		return;
	}
	s->slot[j] = a;
	s->used[s->n++] = (uint32_t)j;
}

/* Adds address a (a function's, from an ENTER or EXIT header) to the chunk's set. */
static inline void weft_funcset_add(struct weft_funcset *s, uint64_t a)
{
	uint64_t *r = &s->recent[(a >> 4) & (WEFT_FUNCSET_RECENT - 1)];
	if (__builtin_expect(*r == a, 1))
		return;
	*r = a;
	weft__funcset_insert(s, a);
}

/* Empties the set for the next chunk (only the slots it filled are cleared). */
static inline void weft_funcset_clear(struct weft_funcset *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		s->slot[s->used[i]] = 0;
	memset(s->recent, 0, sizeof(s->recent));
	s->n = 0;
	s->over = 0;
}

static inline int weft__funcset_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Encodes the set into out (WEFT_FUNCSET_BYTES of room; tmp: WEFT_FUNCSET_MAX words) as the
 * CHUNK_INDEX record's tail. Returns its length, or -1 where the set is not listable (over). */
static inline long weft_funcset_encode(const struct weft_funcset *s, uint8_t *out, uint64_t *tmp)
{
	if (s->over)
		return -1;
	for (uint32_t i = 0; i < s->n; i++)
		tmp[i] = s->slot[s->used[i]];
	qsort(tmp, s->n, sizeof(*tmp), weft__funcset_cmp);
	uint8_t *o = out;
	for (uint32_t i = 0; i < s->n; i++)
		o = weft__put_varint(o, tmp[i] - (i ? tmp[i - 1] : 0));
	return (long)(o - out);
}

/* Decodes a listing of len bytes at p: calls add(ud, address) for each. Returns the count, or
 * -1 where it is malformed (a varint cut short or longer than 10 bytes, an address that does
 * not increase): the caller then treats the chunk as unlisted. add may be NULL (a check only). */
static inline long weft_funcset_decode(const uint8_t *p, size_t len, void (*add)(void *ud, uint64_t a), void *ud)
{
	const uint8_t *end = p + len;
	uint64_t prev = 0;
	long n = 0;
	while (p < end) {
		uint64_t v;
		if (weft__get_varint(&p, end, &v))
			return -1;
		if (!v || prev + v < prev)
			return -1;
		prev += v;
		if (add)
			add(ud, prev);
		n++;
	}
	return n;
}

#endif
