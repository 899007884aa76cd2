/*
 * json-runs.c - Chrome JSON's merge in stages, for a trace of many threads (a job's ranks).
 *
 * The one-stage merge (json.c) holds every thread's current chunk formatted at once: a few MB
 * per busy thread, gigabytes at a thousand ranks. With more threads than a group holds, json.c
 * merges them a group at a time, each group into one sorted run of entries appended to an
 * unlinked spill file in $TMPDIR (or /tmp); this file then merges the runs into the output,
 * reading each through a buffer of its own. Memory holds one group's chunks and a block per
 * run, whatever the number of threads.
 *
 * An entry in a run: its timestamp (8 bytes), its text's length (4), its text (no separator).
 * A run's entries are zstd-compressed (level 1) in blocks of 32 KiB: the spill file is about 5%
 * of the output (1,024 ranks: 72 MB for 1.33 GB; that much memory where $TMPDIR is a tmpfs),
 * and the merge holds one block per run.
 *
 * Runs are merged by (timestamp, run): the groups are consecutive threads and each group's
 * merge orders equal timestamps by stream, so the output is the one-stage merge's, byte for
 * byte.
 */
#include "export/json-internal.h"
#include "format/minheap.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#define BLOCK (32u << 10) /* a run's entries compressed in blocks of this size (or one entry) */
#define ENT_HDR 12u
#define BLK_HDR 8u /* before each block: its size, then its compressed size (4 bytes each) */

static int grow(uint8_t **p, size_t *cap, size_t want)
{
	if (want <= *cap)
		return 0;
	uint8_t *b = realloc(*p, want);
	if (!b)
		return -ENOMEM;
	*p = b;
	*cap = want;
	return 0;
}

int weft_json_runs_open(struct jruns *R)
{
	memset(R, 0, sizeof(*R));
	const char *d = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/weft-json-XXXXXX", d && *d ? d : "/tmp");
	R->fd = mkostemp(path, O_CLOEXEC);
	if (R->fd < 0)
		return -errno;
	unlink(path);
	R->dir = d && *d ? d : "/tmp";
	if (!(R->cctx = ZSTD_createCCtx()) || grow(&R->blk, &R->blkcap, BLOCK) ||
	    grow(&R->zbuf, &R->zcap, ZSTD_compressBound(BLOCK) + BLK_HDR)) {
		weft_json_runs_free(R);
		return -ENOMEM;
	}
	return 0;
}

/* The entries gathered, compressed, to the file. */
static void flush_block(struct jruns *R)
{
	if (!R->blkn || R->err)
		return;
	size_t raw = R->blkn;
	R->blkn = 0; /* (taken, written or not) */
	size_t z = ZSTD_compressCCtx(R->cctx, R->zbuf + BLK_HDR, R->zcap - BLK_HDR, R->blk, raw, 1);
	if (ZSTD_isError(z)) {
		R->err = EIO;
		return;
	}
	uint32_t h[2] = {(uint32_t)raw, (uint32_t)z};
	memcpy(R->zbuf, h, BLK_HDR);
	for (size_t done = 0, n = BLK_HDR + z; done < n;) {
		ssize_t w = pwrite(R->fd, R->zbuf + done, n - done, (off_t)(R->at + done));
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			R->err = w < 0 ? errno : EIO;
			return;
		}
		done += (size_t)w;
	}
	R->at += BLK_HDR + z;
}

void weft_json_runs_add(struct jruns *R, uint64_t ts, const uint8_t *text, size_t len)
{
	size_t need = ENT_HDR + len;
	if (R->err) /* (said by weft_json_runs_merge) */
		return;
	if (R->blkn + need > R->blkcap && R->blkn)
		flush_block(R);
	if (need > R->blkcap && (grow(&R->blk, &R->blkcap, need) ||
				 grow(&R->zbuf, &R->zcap, ZSTD_compressBound(need) + BLK_HDR))) {
		R->err = ENOMEM;
		return;
	}
	uint8_t *o = R->blk + R->blkn;
	uint32_t n = (uint32_t)len;
	memcpy(o, &ts, 8);
	memcpy(o + 8, &n, 4);
	memcpy(o + ENT_HDR, text, len);
	R->blkn += need;
}

void weft_json_runs_end(struct jruns *R)
{
	flush_block(R);
	if (R->n + 2 > R->cap) {
		size_t cap = R->cap ? R->cap * 2 : 64;
		uint64_t *o = realloc(R->off, cap * sizeof(*o));
		if (!o)
			weft_oom("writing JSON");
		R->off = o;
		R->cap = cap;
	}
	if (!R->n)
		R->off[0] = 0;
	R->off[++R->n] = R->at;
}

struct rd {
	uint64_t pos, end; /* the run's blocks not yet read */
	uint8_t *buf;      /* the block being taken */
	size_t cap, lo, hi;
	uint64_t ts;
	uint32_t len; /* the current entry: its text at buf + lo + ENT_HDR */
};

static int read_at(int fd, void *p, size_t n, uint64_t at)
{
	for (size_t done = 0; done < n;) {
		ssize_t got = pread(fd, (uint8_t *)p + done, n - done, (off_t)(at + done));
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -errno : -EBADMSG;
		done += (size_t)got;
	}
	return 0;
}

/* The run's next entry made current (its next block read where this one is taken): 1, 0 at
 * its end, or -errno. */
static int rd_next(struct jruns *R, ZSTD_DCtx *dctx, struct rd *r)
{
	if (r->lo == r->hi) {
		if (r->pos == r->end)
			return 0;
		uint32_t h[2];
		int rc = r->end - r->pos < BLK_HDR ? -EBADMSG : read_at(R->fd, h, BLK_HDR, r->pos);
		if (!rc && (h[1] > r->end - r->pos - BLK_HDR || grow(&R->zbuf, &R->zcap, h[1]) ||
			    grow(&r->buf, &r->cap, h[0])))
			rc = h[1] > r->end - r->pos - BLK_HDR ? -EBADMSG : -ENOMEM;
		if (!rc)
			rc = read_at(R->fd, R->zbuf, h[1], r->pos + BLK_HDR);
		if (rc)
			return rc;
		size_t got = ZSTD_decompressDCtx(dctx, r->buf, r->cap, R->zbuf, h[1]);
		if (ZSTD_isError(got) || got != h[0])
			return -EBADMSG;
		r->pos += BLK_HDR + h[1];
		r->lo = 0;
		r->hi = got;
	}
	if (r->hi - r->lo < ENT_HDR)
		return -EBADMSG;
	memcpy(&r->ts, r->buf + r->lo, 8);
	memcpy(&r->len, r->buf + r->lo + 8, 4);
	return r->hi - r->lo - ENT_HDR < r->len ? -EBADMSG : 1;
}

static int rd_before(const void *ctx, size_t a, size_t b)
{
	const struct rd *rs = ctx;
	return rs[a].ts < rs[b].ts || (rs[a].ts == rs[b].ts && a < b);
}

static void sift_down(const struct rd *rs, size_t *heap, size_t hn, size_t at)
{
	weft_heap_sift_down(heap, hn, at, rd_before, rs);
}

int weft_json_runs_merge(struct jruns *R, void (*emit)(void *ud, const uint8_t *text, size_t len), void *ud)
{
	if (R->err)
		return -R->err;
	int rc = 0;
	struct rd *rs = calloc(R->n + 1, sizeof(*rs));
	size_t *heap = calloc(R->n + 1, sizeof(*heap)), hn = 0;
	ZSTD_DCtx *dctx = ZSTD_createDCtx();
	if (!rs || !heap || !dctx) {
		free(rs);
		free(heap);
		ZSTD_freeDCtx(dctx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < R->n && !rc; i++) {
		rs[i].pos = R->off[i];
		rs[i].end = R->off[i + 1];
		int more = rd_next(R, dctx, &rs[i]);
		if (more > 0)
			heap[hn++] = i;
		else if (more < 0)
			rc = more;
	}
	for (size_t i = hn / 2 + 1; i-- > 0 && !rc;)
		sift_down(rs, heap, hn, i);
	while (hn && !rc) {
		struct rd *r = &rs[heap[0]];
		emit(ud, r->buf + r->lo + ENT_HDR, r->len);
		r->lo += ENT_HDR + r->len;
		int more = rd_next(R, dctx, r);
		if (more < 0)
			rc = more;
		else if (!more)
			heap[0] = heap[--hn];
		sift_down(rs, heap, hn, 0);
	}
	for (size_t i = 0; i < R->n; i++)
		free(rs[i].buf);
	free(rs);
	free(heap);
	ZSTD_freeDCtx(dctx);
	return rc;
}

void weft_json_runs_free(struct jruns *R)
{
	if (R->fd >= 0)
		close(R->fd);
	ZSTD_freeCCtx(R->cctx);
	free(R->blk);
	free(R->zbuf);
	free(R->off);
	memset(R, 0, sizeof(*R));
	R->fd = -1;
}
