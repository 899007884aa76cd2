/*
 * pack4.h - packing versions 4 (chunk flag WEFT_CHUNK_PACKED4, format 1.10) and 5 (below; what
 * writers write):
 * version 3's record stream with the numbers that vary from record to record taken out into columns of
 * fixed-width little-endian values, each value's width written once in a small code, so that
 * zstd sees five streams that are each regular in their own way and no varint's length bytes:
 *
 *   records  the tag bytes, literal headers and everything else (version 2's record stream,
 *            each memory record ending after its tag);
 *   deltas   timestamp deltas of 60 ticks or more of short-tag records: 1, 2, 4 or 8 bytes;
 *   codes    one byte per memory record: the widths of its address and size values;
 *   addrs    memory records' addresses, zigzag-coded differences to the previous address of
 *            a memory record of the chunk (starting at 0): 0 (the difference is 0) to 6 bytes,
 *            or 8;
 *   sizes    memory records' sizes: 1, 2, 4 or 8 bytes;
 * then u32 the records' length, u32 the deltas', u32 the codes', u32 the addresses' (the sizes
 * fill the rest up to the trailer).
 *
 * A short tag (b < 192: list entry b >> 6) of a timestamp record carries in its low 6 bits d
 * the delta itself (d < 60) or the width of the delta in the deltas column (60 + k: 1 << k
 * bytes); of another record, d must be 63 and word0's 8 bytes follow in the records. Tags 192
 * (a literal header, its 8 bytes follow) and 193 (list entry 3) are followed by word0 as in
 * version 2 (a varint for a timestamp delta, else 8 bytes).
 * A memory record of the usual shape (FREE with 1 extra word, ALLOC with 2, REALLOC with 3)
 * has one code byte: bits 0-2 the width code of its first address (0..7: 0 to 6 bytes, or 8),
 * bits 3-4 of its size (0..3: 1, 2, 4, 8 bytes; ALLOC and REALLOC), bits 5-7 of REALLOC's
 * second address; other bits and codes are malformed. A memory record of another shape has
 * no code byte: its addresses and sizes are varints in the two columns (as version 3).
 * A LEAF record (format 1.12) with its one extra word, the ticks from its begin to its end, has
 * that word as a varint in the records after the tag (and its delta), not 8 bytes.
 * The writers compress each part as a zstd frame of its own (writer.c): a malloc/free stream
 * then costs zstd about half of version 3's time in slightly fewer bytes, a compiler's
 * allocations 0.9x the bytes (bench/RESULTS.md, issue 21, h22/memfloor).
 *
 * Version 5 (chunk flag WEFT_CHUNK_PACKED5, format 1.14, what writers write) is version 4 with
 * two more things in the columns, so that the records of a call that writes more headers than
 * the list holds (an MPI call: its BEGIN, five arguments, a flow, its END) repeat byte for byte
 * from call to call and zstd codes a whole call as one match:
 *  - a timestamp record other than a function's entry or exit whose header is literal or list
 *    entry 3 has its delta in the deltas column, 1 << k bytes: tag 194 + k (WEFT_PACK5_LITERAL,
 *    the 8 header bytes follow) or 198 + k (WEFT_PACK5_ENTRY3), nothing after; (192 and 193
 *    with a varint stay valid, and are what a function's entry or exit keeps: its literals are
 *    what a Lua trace is made of, and there the varint among them compresses better);
 *  - a FLOW_OUT or FLOW_IN record's word0 (the flow id) is a varint in the addresses column,
 *    the zigzag-coded difference to the previous flow id of the chunk (starting at 0): a
 *    channel's ids count up by one.
 * (MPI ping-pong: 2.1 -> 1.0 zstd bytes an event and zstd's time 31 -> 13 ns an event.)
 *
 * Included by pack.h (which dispatches to it); not on its own.
 */
#ifndef WEFT_PACK4_H
#define WEFT_PACK4_H

#define WEFT_PACK4_SMALL 60u  /* short tag low bits below this: the delta itself */
#define WEFT_PACK4_INLINE 64u /* weft__unpack_hdr's *small for tags 192/193: word0 in the records */
#define WEFT_PACK4_TRAILER 16u

/* Is a record of this type a flow (version 5: its word0 in the addresses column)? */
static inline int weft__flow_type(unsigned type)
{
	return type == WEFT_R_FLOW_OUT || type == WEFT_R_FLOW_IN;
}

/* The columns of a version 4 chunk; main is the records' length. 0, or -1 when the trailer does
 * not fit. */
struct weft__cols4 {
	const uint8_t *d, *d_end, *c, *c_end, *a, *a_end, *s, *s_end;
};
static inline int weft__cols4_find(const uint8_t *in, size_t len, size_t *main, struct weft__cols4 *c)
{
	uint32_t t[4];
	if (len < WEFT_PACK4_TRAILER)
		return -1;
	memcpy(t, in + len - WEFT_PACK4_TRAILER, sizeof(t));
	size_t room = len - WEFT_PACK4_TRAILER;
	for (int k = 0; k < 4; k++) {
		if (t[k] > room)
			return -1;
		room -= t[k];
	}
	*main = t[0];
	c->d = in + t[0];
	c->d_end = c->c = c->d + t[1];
	c->c_end = c->a = c->c + t[2];
	c->a_end = c->s = c->a + t[3];
	c->s_end = in + len - WEFT_PACK4_TRAILER;
	return 0;
}

/* Width codes: a delta or size 0..3 (1, 2, 4, 8 bytes); an address difference 0..7 (0 to 6
 * bytes, 7: 8 bytes): a heap address is 6 bytes, and zstd gets no zero bytes to skip. */
static inline unsigned weft__w4_code(uint64_t v)
{
	return (unsigned)(v > 0xff) + (unsigned)(v > 0xffff) + (unsigned)(v > 0xffffffffu);
}
static inline unsigned weft__w4_acode(uint64_t z)
{
	unsigned bytes = z ? (unsigned)(71 - __builtin_clzll(z)) / 8 : 0;
	return bytes < 7 ? bytes : 7;
}
static inline unsigned weft__w4_abytes(unsigned code)
{
	return code < 7 ? code : 8;
}

/* Writes v's low `bytes` bytes (little-endian; the room has 8 bytes: the format is little-endian
 * and so are the hosts weft runs on). */
static inline uint8_t *weft__put_fixed(uint8_t *o, uint64_t v, unsigned bytes)
{
	memcpy(o, &v, 8);
	return o + bytes;
}

/* Reads a `bytes`-byte value (0..8) at *p; -1 if it runs past end. */
static inline int weft__get_fixed(const uint8_t **p, const uint8_t *end, unsigned bytes, uint64_t *out)
{
	size_t room = (size_t)(end - *p);
	if (room < bytes)
		return -1;
	uint64_t v = 0;
	if (room >= 8) {
		memcpy(&v, *p, 8);
		if (bytes < 8)
			v &= ((uint64_t)1 << (bytes * 8)) - 1;
	} else {
		for (unsigned k = 0; k < bytes; k++)
			v |= (uint64_t)(*p)[k] << (8 * k);
	}
	*p += bytes;
	*out = v;
	return 0;
}

/* Scratch room weft_pack4_indexed needs for n words: the deltas (8 bytes a record at most), the
 * codes (1), the addresses and the sizes (a varint at most a word each), with slack. */
static inline size_t weft_pack4_scratch(size_t nwords)
{
	return nwords * 25 + 64;
}

/* One record's address difference to *prev into the addresses column, its code returned. */
static inline __attribute__((always_inline)) unsigned weft__pack4_addr(uint8_t **oa, uint64_t x, uint64_t *prev)
{
	uint64_t z = weft__zigzag(x, *prev);
	unsigned c = weft__w4_acode(z);
	*prev = x;
	*oa = weft__put_fixed(*oa, z, weft__w4_abytes(c));
	return c;
}

/* Packs w[0..n) (whole records, timestamps absolute) in version 4 into out (at most
 * weft_pack_bound(n) bytes), with the chunk's index entry in ix as weft_pack_indexed does;
 * scratch: weft_pack4_scratch(n) bytes for the columns while they are made. Returns the bytes
 * written. */
static inline __attribute__((always_inline)) size_t
weft__pack4_ix(const uint64_t *w, size_t n, uint8_t *out, uint32_t *events, uint32_t *dropped,
	       struct weft_index_rec *ix, uint8_t *scratch, uint32_t *opens, int *jumps, struct weft_funcset *funcs,
	       int v5)
{
	uint8_t *d0 = scratch, *c0 = d0 + 4 * n + 16, *a0 = c0 + n + 16, *s0 = a0 + 10 * n + 16;
	uint8_t *od = d0, *oc = c0, *oa = a0, *os = s0, *o = out;
	uint64_t mru[4] = {0, 0, 0, 0}, prev = 0, prev_addr = 0, prev_flow = 0;
	struct weft__ix_acc acc;
	weft__ix_init(&acc);
	acc.opens = opens;
	uint32_t ev = 0;
	size_t i = 0;
	while (i + 2 <= n) {
		uint64_t h = w[i + 1], v = w[i];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h), b;
		if (i + 2 + extra > n)
			break;
		__builtin_prefetch(w + i + 64); /* the chunk was just written on another core */
		ev += (unsigned)weft_rec_events(type);
		if (ix)
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
		if (__builtin_expect(b < WEFT_PACK_LITERAL && ticks, 1)) {
			if (v < WEFT_PACK4_SMALL) {
				*o++ = (uint8_t)(b | v);
			} else {
				unsigned k = weft__w4_code(v);
				*o++ = (uint8_t)(b | (WEFT_PACK4_SMALL + k));
				od = weft__put_fixed(od, v, 1u << k);
			}
		} else if (v5 && ticks && type != WEFT_R_FUNC_ENTER && type != WEFT_R_FUNC_EXIT) {
			unsigned k = weft__w4_code(v); /* (b is the literal or entry 3 here) */
			*o++ = (uint8_t)((b == WEFT_PACK_LITERAL ? WEFT_PACK5_LITERAL : WEFT_PACK5_ENTRY3) + k);
			if (b == WEFT_PACK_LITERAL) {
				memcpy(o, &h, 8);
				o += 8;
			}
			od = weft__put_fixed(od, v, 1u << k);
		} else if (v5 && weft__flow_type(type)) {
			*o++ = (uint8_t)(b < WEFT_PACK_LITERAL ? b | WEFT_PACK_LONG : b);
			if (b == WEFT_PACK_LITERAL) {
				memcpy(o, &h, 8);
				o += 8;
			}
			oa = weft__put_varint(oa, weft__zigzag(v, prev_flow));
			prev_flow = v;
		} else {
			o = weft__pack_long(o, b, h, v, ticks);
			/* every distinct header of the chunk is literal once (the list starts empty) */
			if (funcs && b == WEFT_PACK_LITERAL && (type == WEFT_R_FUNC_ENTER || type == WEFT_R_FUNC_EXIT))
				weft_funcset_add(funcs, weft_rec_addr(h));
		}
		const uint64_t *x = w + i + 2;
		if (__builtin_expect(!weft_rec_is_mem(type), 1)) {
			if (__builtin_expect(extra == 1, 1)) { /* no rep movs for one word */
				if (type == WEFT_R_LEAF) {
					o = weft__put_varint(o, x[0]);
				} else {
					memcpy(o, x, 8);
					o += 8;
				}
			} else if (extra) {
				memcpy(o, x, (size_t)extra * 8);
				o += (size_t)extra * 8;
			}
		} else if (type == WEFT_R_FREE && extra == 1) {
			*oc++ = (uint8_t)weft__pack4_addr(&oa, x[0], &prev_addr);
		} else if (type == WEFT_R_ALLOC && extra == 2) {
			unsigned c = weft__pack4_addr(&oa, x[0], &prev_addr), k = weft__w4_code(x[1]);
			os = weft__put_fixed(os, x[1], 1u << k);
			*oc++ = (uint8_t)(c | k << 3);
		} else if (type == WEFT_R_REALLOC && extra == 3) {
			unsigned c0 = weft__pack4_addr(&oa, x[0], &prev_addr);
			unsigned c1 = weft__pack4_addr(&oa, x[1], &prev_addr), k = weft__w4_code(x[2]);
			os = weft__put_fixed(os, x[2], 1u << k);
			*oc++ = (uint8_t)(c0 | k << 3 | c1 << 5);
		} else { /* another shape: varints, as version 3 */
			for (unsigned j = 0; j < extra; j++) {
				if (weft__mem_is_addr(type, j, extra)) {
					oa = weft__put_varint(oa, weft__zigzag(x[j], prev_addr));
					prev_addr = x[j];
				} else {
					os = weft__put_varint(os, x[j]);
				}
			}
		}
		i += 2 + extra;
	}
	*events = ev;
	if (ix)
		weft__ix_done(&acc, ix);
	if (jumps)
		*jumps = acc.jumps;
	uint32_t t[4] = {(uint32_t)(o - out), (uint32_t)(od - d0), (uint32_t)(oc - c0), (uint32_t)(oa - a0)};
	memcpy(o, d0, t[1]);
	o += t[1];
	memcpy(o, c0, t[2]);
	o += t[2];
	memcpy(o, a0, t[3]);
	o += t[3];
	memcpy(o, s0, (size_t)(os - s0));
	o += os - s0;
	memcpy(o, t, sizeof(t));
	return (size_t)(o - out) + sizeof(t);
}

static inline size_t weft_pack4_indexed(const uint64_t *w, size_t n, uint8_t *out, uint32_t *events,
					uint32_t *dropped, struct weft_index_rec *ix, uint8_t *scratch)
{
	return weft__pack4_ix(w, n, out, events, dropped, ix, scratch, 0, 0, 0, 0);
}

/* weft_pack4_indexed in version 5 (what writers write), adding the chunk's function addresses
 * to funcs (funcset.h) where given. */
static inline size_t weft_pack5_indexed(const uint64_t *w, size_t n, uint8_t *out, uint32_t *events,
					uint32_t *dropped, struct weft_index_rec *ix, uint8_t *scratch,
					struct weft_funcset *funcs)
{
	return weft__pack4_ix(w, n, out, events, dropped, ix, scratch, 0, 0, funcs, 1);
}

/* weft_pack5_indexed that also keeps, for the runtime's live view, where the chunk's slices
 * still open at its end were opened (chunkindex.h: opens, WEFT_IX_OPENS * 2 entries; ix must
 * be given), and whether a setjmp or longjmp made the count unreliable (*jumps); funcs as
 * weft_pack5_indexed (or NULL). */
static inline size_t weft_pack5_indexed_opens(const uint64_t *w, size_t n, uint8_t *out, uint32_t *events,
					      uint32_t *dropped, struct weft_index_rec *ix, uint8_t *scratch,
					      uint32_t *opens, int *jumps, struct weft_funcset *funcs)
{
	return weft__pack4_ix(w, n, out, events, dropped, ix, scratch, opens, jumps, funcs, 1);
}

/* A version 4 record's timestamp delta after its tag (small: weft__unpack_hdr's): in the tag,
 * the deltas column or the records. -1 if malformed. */
static inline __attribute__((always_inline)) int weft__unpack4_delta(unsigned small, const uint8_t **p,
								    const uint8_t *end, struct weft__cols4 *c,
								    uint64_t *v)
{
	if (small < WEFT_PACK4_SMALL) {
		*v = small;
		return 0;
	}
	if (small < WEFT_PACK4_INLINE)
		return weft__get_fixed(&c->d, c->d_end, 1u << (small - WEFT_PACK4_SMALL), v);
	if (small >= WEFT_PACK5_COL) /* version 5's tags 194-201 */
		return weft__get_fixed(&c->d, c->d_end, 1u << (small - WEFT_PACK5_COL), v);
	return weft__get_varint(p, end, v);
}

/* A version 5 flow record's word0 from the addresses column. -1 if malformed. */
static inline int weft__unpack5_flow(struct weft__cols4 *c, uint64_t *prev_flow, uint64_t *v)
{
	uint64_t z;
	if (weft__get_varint(&c->a, c->a_end, &z))
		return -1;
	*prev_flow += (z >> 1) ^ (0 - (z & 1));
	*v = *prev_flow;
	return 0;
}

/* A version 4 memory record's extra words x[0..extra) from the columns. -1 if malformed. */
static inline int weft__unpack4_mem(struct weft__cols4 *c, uint64_t *x, unsigned type, unsigned extra,
				    uint64_t *prev_addr)
{
	unsigned shape = (type == WEFT_R_FREE && extra == 1) || (type == WEFT_R_ALLOC && extra == 2) ||
			 (type == WEFT_R_REALLOC && extra == 3);
	if (shape) {
		if (c->c >= c->c_end)
			return -1;
		unsigned code = *c->c++, nadd = type == WEFT_R_REALLOC ? 2 : 1;
		unsigned ac[2] = {code & 7, code >> 5};
		if ((type == WEFT_R_FREE && code > 7) || (type == WEFT_R_ALLOC && code >> 5))
			return -1;
		for (unsigned j = 0; j < nadd; j++) {
			uint64_t z;
			if (weft__get_fixed(&c->a, c->a_end, weft__w4_abytes(ac[j]), &z))
				return -1;
			*prev_addr += (z >> 1) ^ (0 - (z & 1));
			x[j] = *prev_addr;
		}
		if (type != WEFT_R_FREE && weft__get_fixed(&c->s, c->s_end, 1u << ((code >> 3) & 3), &x[nadd]))
			return -1;
		return 0;
	}
	for (unsigned j = 0; j < extra; j++) {
		uint64_t v;
		if (weft__mem_is_addr(type, j, extra)) {
			if (weft__get_varint(&c->a, c->a_end, &v))
				return -1;
			*prev_addr += (v >> 1) ^ (0 - (v & 1));
			v = *prev_addr;
		} else if (weft__get_varint(&c->s, c->s_end, &v)) {
			return -1;
		}
		x[j] = v;
	}
	return 0;
}

/* Whether every column of a version 4 chunk was read to its end. */
static inline int weft__cols4_done(const struct weft__cols4 *c)
{
	return c->d == c->d_end && c->c == c->c_end && c->a == c->a_end && c->s == c->s_end;
}

/* Version 4 read fast, for the readers that read every record of a trace (conversion): the
 * header list kept as four slots that never move, its order four 2-bit slot numbers in one
 * byte (entry j's slot at bits 2j, starting 0xe4: entry j in slot j), so that a step of the
 * list is a few operations and no branch, and what a reader derives from a header (its size,
 * whether word0 is a timestamp, the header it wants written) is derived once, when the header
 * comes in as a literal, and kept in its slot. Same results as weft_unpack_each and
 * weft_unpack_headers on version 4 (test_pack4 checks them against each other). */
#define WEFT__ORDER0 0xe4u

/* The order after list entry k of order o moves to the front (its slot then entry 0's), as a
 * table made by the compiler: one load a record. */
#define WEFT__OT(o, k)                                                                                  \
	((((o) & ~((4u << (2 * (k))) - 1) & 0xffu) | (((o) & ((1u << (2 * (k))) - 1)) << 2) |              \
	  (((o) >> (2 * (k))) & 3)))
#define WEFT__OT1(o) WEFT__OT(o, 0), WEFT__OT(o, 1), WEFT__OT(o, 2), WEFT__OT(o, 3)
#define WEFT__OT4(o) WEFT__OT1(o), WEFT__OT1((o) + 1), WEFT__OT1((o) + 2), WEFT__OT1((o) + 3)
#define WEFT__OT16(o) WEFT__OT4(o), WEFT__OT4((o) + 4), WEFT__OT4((o) + 8), WEFT__OT4((o) + 12)
#define WEFT__OT64(o) WEFT__OT16(o), WEFT__OT16((o) + 16), WEFT__OT16((o) + 32), WEFT__OT16((o) + 48)
static const uint8_t weft__order_next[256 * 4] = {WEFT__OT64(0), WEFT__OT64(64), WEFT__OT64(128),
						   WEFT__OT64(192)};

/* The slot of list entry k, moved to the front of *order. */
static inline __attribute__((always_inline)) unsigned weft__order_take(unsigned *order, unsigned k)
{
	*order = weft__order_next[*order * 4 + k];
	return *order & 3;
}

/* What a reader needs of a header in version 4: its extra words' bytes in the records (memory
 * records: 0, their words are in the columns), 8 more for word0 where it is not a timestamp. */
#define WEFT__S4_TICKS 0x10000u /* word0 is a timestamp delta */
#define WEFT__S4_MEM 0x20000u   /* a memory record: its extra words in the columns */
#define WEFT__S4_VARX 0x40000u  /* a LEAF with one extra word: a varint in the records */
#define WEFT__S4_FLOW5 0x80000u /* version 5's flow: word0 in the addresses column */
#define WEFT__S4_TICK_TYPES 0x207fe00feull   /* bit t: weft_rec_has_ticks(t) */
#define WEFT__S4_MEM_TYPES 0x03800000ull    /* bit t: weft_rec_is_mem(t) */
static inline uint32_t weft__slot4_info(uint64_t h, int v5)
{
	unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
	if (v5 && weft__flow_type(type))
		return WEFT__S4_FLOW5 | (extra * 8u);
	/* weft_rec_has_ticks and weft_rec_is_mem as bit masks of the types (below 64: all of
	 * them); test_pack4 checks them against the functions */
	uint64_t bit = type < 64 ? 1ull << type : 0;
	uint64_t mem = bit & WEFT__S4_MEM_TYPES, ticks = bit & WEFT__S4_TICK_TYPES;
	if (type == WEFT_R_LEAF && extra == 1)
		return WEFT__S4_VARX | WEFT__S4_TICKS;
	return (mem ? WEFT__S4_MEM : extra * 8u) + (ticks ? WEFT__S4_TICKS : 8u);
}

/* Whether a version 4 header's record is its tag byte alone after a short tag (a timestamp
 * record with no extra words in the records: a function's entry or exit, a memory record). */
static inline int weft__slot4_one(uint32_t info)
{
	return (info & ~WEFT__S4_MEM) == WEFT__S4_TICKS; /* (a LEAF's varint follows: not one) */
}

/* The first byte at or after p (before end) that is 64 * j or more (j 1 to 3), or end: 8 bytes at
 * a time. */
static inline const uint8_t *weft__next_at_least(const uint8_t *p, const uint8_t *end, unsigned j)
{
	for (; end - p >= 8; p += 8) {
		uint64_t v, hi, lo;
		memcpy(&v, p, 8); /* little-endian: byte i is bits 8i..8i+7 */
		hi = v & 0x8080808080808080ull;
		lo = (v << 1) & 0x8080808080808080ull; /* each byte's bit 6, at its bit 7 */
		uint64_t m = j == 1 ? hi | lo : j == 2 ? hi : hi & lo;
		if (m)
			return p + (__builtin_ctzll(m) >> 3);
	}
	while (p < end && *p < 64 * j)
		p++;
	return p;
}

/* weft_unpack_headers for version 4 (the same headers, in the same order). Only the size of what
 * follows each tag matters here, so the list is kept as what the scan needs of each entry
 * (weft__slot4_info), in order, and a bit per entry saying whether it is one-byte. While list
 * entries 0 to j-1 are headers whose record is the tag byte alone, a short tag naming one of
 * them (a byte below 64 * j) is a one-byte record that leaves entries j to 3 where they are and
 * 0 to j-1 one-byte ones: the scan jumps from one byte of 64 * j or more to the next, once 8
 * such records came in a row (fib(30): 6x faster than record by record). A trace of a program
 * that calls many functions in turn is nearly all literals instead (Lua: 9 records in 10),
 * which take a few operations and no loop, and never jump (trying to cost it 40%). */
static inline int weft_unpack4_headers(const uint8_t *in, size_t len, void (*fn)(uint64_t h, void *ud), void *ud,
					int v5)
{
	struct weft__cols4 c4;
	size_t m;
	if (weft__cols4_find(in, len, &m, &c4))
		return -1;
	const uint8_t *p = in, *end = in + m;
	uint32_t e[4]; /* by list entry */
	unsigned ones = 0, j = 0; /* bit k: entry k one-byte; entries 0..j-1 are */
	unsigned run = 0;         /* one-byte records in a row: jumping pays in a run, not between literals */
	e[0] = e[1] = e[2] = e[3] = weft__slot4_info(0, v5);
	while (p < end) {
		if (run >= 8 && j && *p < 64 * j && (p = weft__next_at_least(p, end, j < 3 ? j : 3)) == end)
			break;
		unsigned b = *p++, k;
		uint32_t x;
		if (__builtin_expect(b < WEFT_PACK_LITERAL, 1)) {
			k = b >> 6;
			x = e[k];
			if (!(x & WEFT__S4_TICKS) && (b & WEFT_PACK_LONG) != WEFT_PACK_LONG)
				return -1; /* word0's 8 bytes must follow */
		} else if (b == WEFT_PACK_LITERAL && end - p >= 8) {
			uint64_t h;
			memcpy(&h, p, 8);
			p += 8;
			k = 3;
			x = weft__slot4_info(h, v5);
			fn(h, ud);
		} else if (b == WEFT_PACK_ENTRY3) {
			k = 3;
			x = e[3];
		} else if (v5 && b >= WEFT_PACK5_LITERAL && b < WEFT_PACK5_ENTRY3 && end - p >= 8) {
			uint64_t h; /* a literal, its delta in the deltas column */
			memcpy(&h, p, 8);
			p += 8;
			k = 3;
			x = weft__slot4_info(h, v5);
			fn(h, ud);
			if (!(x & WEFT__S4_TICKS))
				return -1;
		} else if (v5 && b >= WEFT_PACK5_ENTRY3 && b < WEFT_PACK5_END) {
			k = 3;
			x = e[3];
			if (!(x & WEFT__S4_TICKS))
				return -1;
		} else {
			return -1;
		}
		/* entry k to the front: 1..k take 0..k-1 */
		e[3] = k >= 3 ? e[2] : e[3];
		e[2] = k >= 2 ? e[1] : e[2];
		e[1] = k >= 1 ? e[0] : e[1];
		e[0] = x;
		unsigned low = (2u << k) - 1;
		ones = (ones & ~low) | ((ones << 1) & low) | (unsigned)weft__slot4_one(x);
		j = (unsigned)__builtin_ctz(~ones);
		if (b <= WEFT_PACK_ENTRY3 && b >= WEFT_PACK_LITERAL && (x & WEFT__S4_TICKS)) { /* a varint delta */
			while (p < end && (*p & 0x80))
				p++;
			if (p++ >= end)
				return -1;
		}
		size_t skip = x & 0xffffu;
		if ((size_t)(end - p) < skip)
			return -1;
		p += skip;
		if (__builtin_expect(x & WEFT__S4_VARX, 0)) {
			uint64_t d;
			if (weft__get_varint(&p, end, &d))
				return -1;
			skip = 1; /* not a one-byte record: no run through it */
		}
		run = b < WEFT_PACK_LITERAL && !skip ? run + 1 : 0;
	}
	return 0;
}

/* weft_unpack_each for version 4 with undelta, for a reader that rewrites records as it goes:
 * each record's header comes out as hdr(h, ctx), computed once per literal (hdr must depend on
 * h alone), and a timestamp as ts(absolute ticks, ctx). With `leaves`, a LEAF record comes out
 * as the BEGIN and the END it stands for (4 words for 3: weft_leaf_expand's result). w has room
 * for cap words. Returns the words written, or (size_t)-1 if the input is malformed. */
static inline __attribute__((always_inline)) size_t
weft_unpack4_rewrite(const uint8_t *in, size_t len, uint64_t *w, size_t cap,
		     uint64_t (*hdr)(uint64_t h, void *ctx), uint64_t (*ts)(uint64_t ticks, void *ctx), void *ctx,
		     int leaves, int v5)
{
	struct weft__cols4 c4;
	size_t m, n = 0;
	if (weft__cols4_find(in, len, &m, &c4))
		return (size_t)-1;
	const uint8_t *p = in, *end = in + m;
	uint64_t prev = 0, prev_addr = 0, prev_flow = 0, h[4], out[4];
	uint32_t info[4];
	unsigned order = WEFT__ORDER0;
	h[0] = h[1] = h[2] = h[3] = 0;
	out[0] = out[1] = out[2] = out[3] = hdr(0, ctx);
	info[0] = info[1] = info[2] = info[3] = weft__slot4_info(0, v5);
	while (p < end) {
		unsigned b = *p++, slot, small;
		if (__builtin_expect(b < WEFT_PACK_LITERAL, 1)) {
			slot = weft__order_take(&order, b >> 6);
			small = b & WEFT_PACK_LONG;
		} else if (b == WEFT_PACK_ENTRY3) {
			slot = weft__order_take(&order, 3);
			small = WEFT_PACK4_INLINE;
		} else if (b == WEFT_PACK_LITERAL && end - p >= 8) {
			slot = weft__order_take(&order, 3);
			memcpy(&h[slot], p, 8);
			p += 8;
			out[slot] = hdr(h[slot], ctx);
			info[slot] = weft__slot4_info(h[slot], v5);
			small = WEFT_PACK4_INLINE;
		} else if (v5 && b >= WEFT_PACK5_LITERAL && b < WEFT_PACK5_END) { /* the delta in the column */
			slot = weft__order_take(&order, 3);
			if (b < WEFT_PACK5_ENTRY3) {
				if (end - p < 8)
					return (size_t)-1;
				memcpy(&h[slot], p, 8);
				p += 8;
				out[slot] = hdr(h[slot], ctx);
				info[slot] = weft__slot4_info(h[slot], v5);
			}
			small = WEFT_PACK5_COL + ((b - WEFT_PACK5_LITERAL) & 3);
		} else {
			return (size_t)-1;
		}
		uint32_t x = info[slot];
		unsigned extra = weft_rec_extra(h[slot]);
		if (n + 2 + extra > cap)
			return (size_t)-1;
		uint64_t v;
		if (__builtin_expect(x & WEFT__S4_TICKS, 1)) {
			if (__builtin_expect(small < WEFT_PACK4_SMALL, 1))
				v = small;
			else if (weft__unpack4_delta(small, &p, end, &c4, &v))
				return (size_t)-1;
			prev += v;
			v = ts(prev, ctx);
		} else if (small < WEFT_PACK_LONG || small >= WEFT_PACK5_COL) {
			return (size_t)-1;
		} else if (v5 && (x & WEFT__S4_FLOW5)) {
			if (weft__unpack5_flow(&c4, &prev_flow, &v))
				return (size_t)-1;
		} else {
			if (end - p < 8)
				return (size_t)-1;
			memcpy(&v, p, 8);
			p += 8;
		}
		w[n] = v;
		w[n + 1] = out[slot];
		if (__builtin_expect(x & WEFT__S4_VARX, 0)) {
			uint64_t d;
			if (weft__get_varint(&p, end, &d))
				return (size_t)-1;
			if (leaves) { /* the BEGIN and END it stands for */
				if (n + 4 > cap)
					return (size_t)-1;
				w[n + 1] = hdr(weft_leaf_hdr(h[slot], WEFT_R_BEGIN), ctx);
				w[n + 2] = ts(prev + d, ctx);
				w[n + 3] = hdr(weft_leaf_hdr(h[slot], WEFT_R_END), ctx);
				n += 4;
				continue;
			}
			w[n + 2] = d;
		} else if (__builtin_expect(extra != 0, 0)) {
			if (x & WEFT__S4_MEM) {
				if (weft__unpack4_mem(&c4, w + n + 2, weft_rec_type(h[slot]), extra, &prev_addr))
					return (size_t)-1;
			} else {
				if ((size_t)(end - p) < (size_t)extra * 8)
					return (size_t)-1;
				memcpy(w + n + 2, p, (size_t)extra * 8);
				p += (size_t)extra * 8;
			}
		}
		n += 2 + extra;
	}
	if (!weft__cols4_done(&c4))
		return (size_t)-1;
	return n;
}

#endif
