/* trace_builder.h - makes trace files in memory for the reader and model tests. */
#ifndef TRACE_BUILDER_H
#define TRACE_BUILDER_H
#include <string.h>
#include <stdlib.h>
#include <zstd.h>
#include "format/format.h"

struct tb { unsigned char *p; size_t n; };

/* Flags tb_chunk adds to each chunk header (WEFT_CHUNK_SUM: the format 1.9 checksum). */
static uint32_t tb_chunk_flags __attribute__((unused));

static inline void tb_put(struct tb *b, const void *d, size_t n)
{
	b->p = realloc(b->p, b->n + n);
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static inline void tb_header(struct tb *b, const char *magic, unsigned major, int pid)
{
	struct weft_file_header h;
	weft_file_header_init(&h, magic, pid, 0, 1);
	h.major = (uint16_t)major;
	tb_put(b, &h, sizeof(h));
}

static inline void tb_meta(struct tb *b, unsigned type, const void *d, size_t n)
{
	struct weft_meta_rec_header h = {(uint16_t)type, 0, (uint32_t)n};
	tb_put(b, &h, sizeof(h));
	tb_put(b, d, n);
}

static inline void tb_site(struct tb *b, uint32_t id, unsigned kind, const char *name)
{
	unsigned char rec[256] = {0};
	memcpy(rec, &id, 4);
	rec[4] = (unsigned char)kind;
	size_t l = strlen(name);
	memcpy(rec + 8, name, l + 1);
	rec[8 + l + 1] = 0; /* category */
	rec[8 + l + 2] = 0; /* unit */
	tb_meta(b, WEFT_M_SITE, rec, 8 + l + 3);
}

static inline void tb_clock(struct tb *b, uint64_t ticks, uint64_t ns)
{
	uint64_t w[3] = {ticks, ns, ns + 1000};
	tb_meta(b, WEFT_M_CLOCK, w, sizeof(w));
}

static inline void tb_clock_kind(struct tb *b, unsigned kind)
{
	uint64_t w[2] = {kind, 0};
	tb_meta(b, WEFT_M_CLOCK_SOURCE, w, sizeof(w));
}

/* A chunk of records; timestamps in `w` are absolute and get delta-encoded here. */
static inline void tb_chunk(struct tb *b, uint32_t tid, uint64_t seq, const uint64_t *w, size_t nwords,
			    int zstd)
{
	uint64_t *d = malloc(nwords * 8 + 8);
	memcpy(d, w, nwords * 8);
	uint64_t prev = 0;
	uint32_t events = 0, dropped = 0;
	for (size_t i = 0; i + 2 <= nwords; i += 2 + weft_rec_extra(d[i + 1])) {
		unsigned t = weft_rec_type(d[i + 1]);
		events += weft_rec_events(t);
		if (t == WEFT_R_DROPPED)
			dropped += (uint32_t)d[i + 2];
		if (weft_rec_has_ticks(t)) {
			uint64_t ts = d[i];
			d[i] = ts - prev;
			prev = ts;
		}
	}
	struct weft_chunk_header h;
	memset(&h, 0, sizeof(h));
	h.magic = WEFT_CHUNK_MAGIC;
	h.tid = tid;
	h.seq = seq;
	h.raw_size = (uint32_t)(nwords * 8);
	h.events = events;
	h.dropped = dropped;
	void *payload = d;
	size_t stored = nwords * 8;
	void *z = NULL;
	if (zstd) {
		z = malloc(ZSTD_compressBound(stored));
		stored = ZSTD_compress(z, ZSTD_compressBound(stored), d, stored, 1);
		payload = z;
		h.flags = WEFT_CHUNK_ZSTD;
	}
	h.flags |= tb_chunk_flags;
	h.stored_size = (uint32_t)stored;
	h.checksum = weft_chunk_sum(h.flags, payload, stored);
	tb_put(b, &h, sizeof(h));
	tb_put(b, payload, stored);
	free(d);
	free(z);
}

#define HDR(id, type, extra, track) weft__hdr(id, type, extra, track)
#endif
