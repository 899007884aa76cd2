/*
 * chunks.c - events files, frame by frame: each frame is checked (magic, sizes, checksum)
 * before its chunk is accepted; a bad frame makes the reader look for the next plausible one
 * (salvage after corruption), and a short file keeps its complete frames. Then decoding a
 * chunk: zstd, unpacking or delta-decoding, and preparing records (ticks to ns, addresses to
 * function ids) in the same pass.
 */
#include "reader.h"
#include "reader-internal.h"
#include "blob.h"
#include "format.h"
#include "symbols.h"
#include "pack.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

static void add_chunk(struct weft_proc *p, const struct weft_chunk_header *h, const unsigned char *payload)
{
	struct weft_thread_data *th = weft_rd_thread_get(p, h->tid, (uint32_t)(h->seq >> WEFT_SEQ_SERIAL_SHIFT));
	if (th->nchunks == th->cap) {
		th->cap = th->cap ? th->cap * 2 : 16;
		th->chunks = weft_rd_xrealloc(th->chunks, th->cap * sizeof(*th->chunks));
	}
	struct weft_chunk_view *c = &th->chunks[th->nchunks++];
	memset(c, 0, sizeof(*c));
	c->seq = h->seq;
	c->events = h->events;
	c->dropped = h->dropped;
	c->stored = payload;
	c->stored_size = h->stored_size;
	c->raw_size = h->raw_size;
	c->flags = h->flags;
	p->bytes_stored += h->stored_size + sizeof(*h);
	p->nchunks_read++;
}

static int frame_ok(const unsigned char *d, size_t n, size_t off, struct weft_chunk_header *h)
{
	if (n - off < sizeof(*h))
		return 0;
	memcpy(h, d + off, sizeof(*h));
	if (h->magic != WEFT_CHUNK_MAGIC || h->raw_size > WEFT_MAX_CHUNK || h->raw_size % 8 ||
	    h->stored_size > WEFT_MAX_CHUNK || h->stored_size > n - off - sizeof(*h))
		return 0;
	if (!(h->flags & WEFT_CHUNK_ZSTD) && !weft_chunk_packing(h->flags) && h->stored_size != h->raw_size)
		return 0;
	return weft_chunk_sum(h->flags, d + off + sizeof(*h), h->stored_size) == h->checksum;
}

void weft_rd_parse_events(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
			 const char *stem, int pid)
{
	struct weft_proc *p = weft_rd_proc_get(t, stem, pid);
	size_t off = sizeof(struct weft_file_header);
	while (off < n) {
		struct weft_chunk_header h;
		if (frame_ok(d, n, off, &h)) {
			add_chunk(p, &h, d + off + sizeof(h));
			weft_blob_release(d + off, sizeof(h) + h.stored_size); /* checked: read again when decoded */
			off += sizeof(h) + h.stored_size;
			continue;
		}
		/* Cut short (the last frame incomplete) or corrupt: look for the next good frame. */
		size_t bad = off, next = off + 1;
		int found = 0;
		for (; next + sizeof(h) <= n; next++) {
			uint32_t m;
			memcpy(&m, d + next, 4);
			if (m == WEFT_CHUNK_MAGIC && frame_ok(d, n, next, &h)) {
				found = 1;
				break;
			}
		}
		if (!found) {
			struct weft_chunk_header partial;
			memcpy(&partial, d + bad, n - bad < sizeof(partial) ? 0 : sizeof(partial));
			weft_trace_warn(t, "%s: truncated or damaged after offset %zu (%zu bytes unreadable); "
			     "kept everything before it", name, bad, n - bad);
			break;
		}
		weft_trace_warn(t, "%s: damaged bytes %zu-%zu skipped", name, bad, next);
		p->bad_chunks++;
		off = next;
	}
	weft_blob_release(d, n); /* what the last check's fault mapped past it (format/blob.h) */
}

/* What weft_records_prepare does to one record; inlined into the unpacking loop. */
struct prep_ctx {
	const struct weft_proc *p;
	uint64_t last_addr;
	uint32_t last_id;
};

static inline void prepare_rec(uint64_t *r, void *ctx)
{
	struct prep_ctx *x = ctx;
	uint64_t h = r[1];
	unsigned type = weft_rec_type(h);
	if (!weft_rec_has_ticks(type))
		return; /* complete records hold ns already; args and flows hold values */
	r[0] = weft_proc_ns(x->p, r[0]);
	if (type == WEFT_R_FUNC_ENTER || type == WEFT_R_FUNC_EXIT) {
		uint64_t a = weft_rec_addr(h);
		if (a != x->last_addr) {
			x->last_addr = a;
			x->last_id = weft_func_id(x->p, a);
		}
		/* the extra words (counters, 1.5) stay */
		r[1] = (h & (0xffull << 40)) | ((uint64_t)type << 32) | x->last_id;
	}
}

/* prepare_rec as weft_unpack4_rewrite asks for it: per header (once per literal) and per time. */
static inline uint64_t prepare_hdr(uint64_t h, void *ctx)
{
	const struct prep_ctx *x = ctx;
	unsigned type = weft_rec_type(h);
	if (type != WEFT_R_FUNC_ENTER && type != WEFT_R_FUNC_EXIT)
		return h;
	return (h & (0xffull << 40)) | ((uint64_t)type << 32) | weft_func_id(x->p, weft_rec_addr(h));
}

static inline uint64_t prepare_ts(uint64_t ticks, void *ctx)
{
	return weft_proc_ns(((const struct prep_ctx *)ctx)->p, ticks);
}

void weft_records_prepare(const struct weft_proc *p, uint64_t *r, size_t n)
{
	struct prep_ctx x = {.p = p};
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1]))
		prepare_rec(r + i, &x);
}

/* A chunk of a host aligned onto another's clock (hosts.h): the records that hold BOOTTIME ns
 * themselves get the correction, those that name a tid or this process's pid the unique one. */
static void fix_records(const struct weft_ns_fix *f, uint64_t *r, size_t n)
{
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1])) {
		uint64_t h = r[i + 1];
		switch (weft_rec_type(h)) {
		case WEFT_R_COMPLETE:
			r[i] = weft_ns_fix_apply(f, r[i]);
			if (weft_rec_extra(h) && i + 3 <= n)
				r[i + 2] = weft_ns_fix_apply(f, r[i + 2]);
			break;
		case WEFT_R_ACCESS: {
			uint32_t tid = weft_rec_id(h);
			if (tid && tid < (1u << 22))
				r[i + 1] = (h & ~0xffffffffull) | (tid | f->id_or);
		}
			/* fall through */
		case WEFT_R_SCHED:
		case WEFT_R_SAMPLE:
			r[i] = weft_ns_fix_apply(f, r[i]);
			break;
		case WEFT_R_FLOW_OUT:
		case WEFT_R_FLOW_IN: /* a CUDA call's arrow: weft_gpu_flow_id(pid, correlation) */
			if ((r[i] >> 63) && (uint32_t)((r[i] >> 32) & 0x7fffffff) == f->pid_from)
				r[i] = weft_gpu_flow_id(f->pid_to, (uint32_t)r[i]);
			break;
		default:
			break;
		}
	}
}

/* Decoded records w[0..n) with absolute ticks: another host's correction, then (prep) the
 * preparing (ns, function ids). */
static int finish(const struct weft_chunk_view *c, const struct weft_proc *prep, uint64_t *w, size_t n,
		  size_t *nwords)
{
	*nwords = n;
	if (c->fix)
		fix_records(c->fix, w, n);
	if (prep)
		weft_records_prepare(prep, w, n);
	return 0;
}

static int decode(const struct weft_chunk_view *c, const struct weft_proc *prep, uint64_t **buf, size_t *cap,
		  size_t *nwords, const char **why)
{
	*nwords = 0;
	if (c->flags & ~(uint32_t)WEFT_CHUNK_KNOWN_FLAGS) { /* a packing or checksum of a later format */
		*why = "written by a newer weft (chunk flags it does not know): use a newer weft";
		return -EBADMSG;
	}
	/* packed records are decompressed behind the room for the words, then unpacked forward;
	 * a chunk with LEAF records (1.12) decodes to a word more per LEAF (3 words at least) */
	int fmt = weft_chunk_packing(c->flags), leaves = (c->flags & WEFT_CHUNK_LEAF) != 0;
	size_t packed_room = fmt ? weft_pack_bound(c->raw_size / 8) : 0;
	size_t grow = leaves ? (c->raw_size / 24 + 1) * 8 : 0, words_room = c->raw_size + grow;
	size_t need = words_room + packed_room + 8;
	if (need > *cap) {
		uint64_t *b = realloc(*buf, need);
		if (!b) {
			*why = "out of memory";
			return -ENOMEM;
		}
		*buf = b;
		*cap = need;
	}
	uint64_t *w = *buf;
	uint8_t *dst = fmt ? (uint8_t *)w + words_room : (uint8_t *)w;
	size_t room = fmt ? packed_room : c->raw_size, got = c->stored_size;
	if (c->flags & WEFT_CHUNK_ZSTD) {
		got = ZSTD_decompress(dst, room, c->stored, c->stored_size);
		if (ZSTD_isError(got) || (!fmt && got != c->raw_size)) {
			*why = ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size mismatch";
			return -EBADMSG;
		}
	} else if (c->stored_size) {
		if (c->stored_size > room) {
			*why = "size mismatch";
			return -EBADMSG;
		}
		memcpy(dst, c->stored, c->stored_size);
	}
	size_t n = c->raw_size / 8, i = 0, cap_words = words_room / 8;
	if (fmt && leaves && !(prep && fmt >= 4)) { /* LEAF records made BEGIN and END, then prepared */
		size_t words = weft_unpack(dst, got, w, n, fmt, 1);
		if (words != n || (words = weft_leaf_expand(w, n, cap_words)) == (size_t)-1) {
			*why = "bad packed records";
			return -EBADMSG;
		}
		return finish(c, prep, w, words, nwords);
	}
	if (fmt) {
		struct prep_ctx x = {.p = prep};
		size_t words;
		if (!prep)
			words = weft_unpack(dst, got, w, n, fmt, 1);
		else if (fmt >= 4 && leaves) { /* each LEAF comes out as its BEGIN and END */
			words = fmt == 5 ? weft_unpack4_rewrite(dst, got, w, cap_words, prepare_hdr, prepare_ts, &x, 1, 1)
					 : weft_unpack4_rewrite(dst, got, w, cap_words, prepare_hdr, prepare_ts, &x, 1, 0);
			if (words != (size_t)-1 && words >= n && words <= cap_words)
				return finish(c, NULL, w, words, nwords); /* (prepared as they came) */
		} else if (fmt == 5)
			words = weft_unpack4_rewrite(dst, got, w, n, prepare_hdr, prepare_ts, &x, 0, 1);
		else if (fmt == 4)
			words = weft_unpack4_rewrite(dst, got, w, n, prepare_hdr, prepare_ts, &x, 0, 0);
		else if (fmt == 3)
			words = weft_unpack_each(dst, got, w, n, 3, 1, prepare_rec, &x);
		else if (fmt == 2)
			words = weft_unpack_each(dst, got, w, n, 2, 1, prepare_rec, &x);
		else
			words = weft_unpack_each(dst, got, w, n, 1, 1, prepare_rec, &x);
		if (words != n) {
			*why = "bad packed records";
			return -EBADMSG;
		}
		*nwords = n; /* weft_unpack wrote whole records only */
		if (c->fix)
			fix_records(c->fix, w, n);
		return 0;
	}
	uint64_t prev = 0;
	while (i + 2 <= n) {
		uint64_t h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (i + 2 + extra > n)
			break;
		if (weft_rec_has_ticks(type)) {
			prev += w[i];
			w[i] = prev;
		}
		i += 2 + extra;
	}
	if (leaves && (i = weft_leaf_expand(w, i, cap_words)) == (size_t)-1) {
		*why = "bad records";
		return -EBADMSG;
	}
	return finish(c, prep, w, i, nwords);
}

int weft_chunk_decode(const struct weft_chunk_view *c, uint64_t **buf, size_t *cap, size_t *nwords,
		      const char **why)
{
	int rc = decode(c, NULL, buf, cap, nwords, why);
	weft_blob_release(c->stored, c->stored_size); /* (format/blob.h) */
	return rc;
}

int weft_chunk_decode_prepared(const struct weft_chunk_view *c, const struct weft_proc *p, uint64_t **buf,
			       size_t *cap, size_t *nwords, const char **why)
{
	int rc = decode(c, p, buf, cap, nwords, why);
	weft_blob_release(c->stored, c->stored_size); /* (format/blob.h) */
	return rc;
}

int weft_chunk_headers(const struct weft_chunk_view *c, uint64_t **buf, size_t *cap,
		       void (*fn)(uint64_t h, void *ud), void *ud, const char **why)
{
	int fmt = weft_chunk_packing(c->flags);
	if (fmt) { /* literal headers are all there is to see: no unpacking */
		const uint8_t *packed = c->stored;
		size_t got = c->stored_size;
		if (c->flags & WEFT_CHUNK_ZSTD) {
			size_t room = weft_pack_bound(c->raw_size / 8);
			if (room > *cap) {
				uint64_t *b = realloc(*buf, room);
				if (!b) {
					*why = "out of memory";
					return -ENOMEM;
				}
				*buf = b;
				*cap = room;
			}
			got = ZSTD_decompress(*buf, room, c->stored, c->stored_size);
			if (ZSTD_isError(got)) {
				*why = ZSTD_getErrorName(got);
				return -EBADMSG;
			}
			packed = (const uint8_t *)*buf;
		}
		int bad = fmt >= 4 ? weft_unpack4_headers(packed, got, fn, ud, fmt == 5)
				   : weft_unpack_headers(packed, got, fmt, fn, ud);
		weft_blob_release(c->stored, c->stored_size); /* (format/blob.h) */
		if (bad) {
			*why = "bad packed records";
			return -EBADMSG;
		}
		return 0;
	}
	size_t n;
	int rc = weft_chunk_decode(c, buf, cap, &n, why);
	if (rc)
		return rc;
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra((*buf)[i + 1]))
		fn((*buf)[i + 1], ud);
	return 0;
}
