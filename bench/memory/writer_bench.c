/* writer_bench DIR [LEVEL...] - what a writer thread spends per event on the chunks of a trace
 * (bench/memory/run.sh, issue 21): each events file's chunks are read back to their records
 * (as the runtime's chunk held them), then each step the writer does is timed on them alone,
 * best of REPS passes (env, 7): packing (with the chunk's index entry), the checksum, and zstd
 * at each LEVEL given (default 1) of the packed bytes, in the packing and frames the tree's writers
 * use (version 4: the records at LEVEL, each column apart). One line per step:
 *   step=pack ns_per_event=X bytes_per_event=Y
 * Tight loops over data already in memory, timed in thread CPU time, so a loaded machine disturbs
 * it less than a whole
 * `weft record`. Built against a source tree's headers (-I SRC -I SRC/include -I SRC/src), so
 * the same file times two trees' packing side by side. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <time.h>
#include <zstd.h>
#include "format/pack.h"

#ifndef WEFT_CHUNK_SUM
/* a tree without chunk checksum kinds: FNV-1a */
#define weft_chunk_sum(flags, p, n) ((void)(flags), weft_fnv1a(p, n))
#define WEFT_CHUNK_SUM 0u
#endif

struct chunk {
	uint64_t *w;
	size_t n;
	uint32_t events;
};
static struct chunk *chunks;
static size_t nchunks, cap;

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* preemption on a busy machine is not counted */
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void load(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *d = malloc((size_t)len);
	if (!d || fread(d, 1, (size_t)len, f) != (size_t)len)
		exit(1);
	fclose(f);
	size_t off = sizeof(struct weft_file_header);
	while (off + sizeof(struct weft_chunk_header) <= (size_t)len) {
		struct weft_chunk_header h;
		memcpy(&h, d + off, sizeof(h));
		off += sizeof(h);
		if (h.magic != WEFT_CHUNK_MAGIC || off + h.stored_size > (size_t)len)
			break;
		uint8_t *packed = d + off;
		size_t plen = h.stored_size;
		uint8_t *tmp = NULL;
		if (h.flags & WEFT_CHUNK_ZSTD) { /* one frame, or (version 4) one per part back to back */
			unsigned long long r = ZSTD_decompressBound(packed, plen);
			if (r == ZSTD_CONTENTSIZE_ERROR || !(tmp = malloc(r)))
				break;
			plen = ZSTD_decompress(tmp, r, packed, plen);
			packed = tmp;
			if (ZSTD_isError(plen)) {
				fprintf(stderr, "writer_bench: %s: a chunk does not decompress\n", path);
				exit(1);
			}
		}
		struct chunk c = {malloc(h.raw_size), h.raw_size / 8, h.events};
		int fmt = weft_chunk_packing(h.flags);
		if (fmt)
			c.n = weft_unpack(packed, plen, c.w, c.n, fmt, 1);
		else
			memcpy(c.w, packed, h.raw_size);
		free(tmp);
		off += h.stored_size;
		if (nchunks == cap)
			chunks = realloc(chunks, (cap = cap ? 2 * cap : 64) * sizeof(*chunks));
		chunks[nchunks++] = c;
	}
	free(d);
}

/* zstd at level, with the parameters the env names (ZSTD_c_<name>=value) on top, as experiments */
static size_t zcompress(ZSTD_CCtx *cc, void *dst, size_t cap, const void *src, size_t n, int level)
{
	static const struct { const char *env; ZSTD_cParameter p; } knobs[] = {
		{"ZWINDOW", ZSTD_c_windowLog}, {"ZHASH", ZSTD_c_hashLog}, {"ZCHAIN", ZSTD_c_chainLog},
		{"ZMINMATCH", ZSTD_c_minMatch}, {"ZTARGET", ZSTD_c_targetLength}, {"ZSTRATEGY", ZSTD_c_strategy},
		{"ZLIT", ZSTD_c_literalCompressionMode}};
	ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, level);
	for (unsigned i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (getenv(knobs[i].env))
			ZSTD_CCtx_setParameter(cc, knobs[i].p, atoi(getenv(knobs[i].env)));
	ZSTD_CCtx_setPledgedSrcSize(cc, n);
	return ZSTD_compress2(cc, dst, cap, src, n);
}

#ifdef WEFT_CHUNK_PACKED4
static size_t zpart(ZSTD_CCtx *cc, void *dst, size_t cap, const void *src, size_t n, int level, int lit)
{
	ZSTD_CCtx_reset(cc, ZSTD_reset_session_and_parameters);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, lit ? -1000 : level);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_literalCompressionMode, lit ? ZSTD_ps_enable : ZSTD_ps_auto);
	return ZSTD_compress2(cc, dst, cap, src, n);
}
#endif

/* zcompress as the tree's writers do: version 4 (writer.c's compress_chunk): the records at
 * level, then each non-empty column a frame; at levels up to 1 the deltas and codes as literals
 * only, the other columns as literals unless matches make them a fifth smaller, tried on a column of at
 * least 4 KiB when not for 16 chunks (chunk: its number in the pass); older trees: one frame. */
static size_t zcompress_tree(ZSTD_CCtx *cc, ZSTD_CCtx *ccol, void *dst, size_t cap, const uint8_t *src, size_t n,
			     int level, size_t chunk)
{
#ifdef WEFT_CHUNK_PACKED4
	static uint8_t lit[5];
	static unsigned age[5];
	if (chunk == 0) /* a pass starts as a writer does */
		memset(age, 0, sizeof(age)), memset(lit, 0, sizeof(lit));
	uint32_t t[4];
	memcpy(t, src + n - 16, 16);
	size_t cut[5] = {t[0], t[1], t[2], t[3], n - t[0] - t[1] - t[2] - t[3]}, at = 0, o = 0;
	for (int k = 0; k < 5; k++) {
		if (!cut[k])
			continue;
		char *d = (char *)dst + o;
		size_t z;
		if (k == 0) {
			z = zcompress(cc, d, cap - o, src + at, cut[k], level);
		} else if (level > 1 || k <= 2) {
			z = zpart(ccol, d, cap - o, src + at, cut[k], level, level <= 1);
		} else if (cut[k] >= 4096 && (!age[k] || age[k] >= 16)) {
			size_t a = zpart(ccol, d, cap - o, src + at, cut[k], level, 1);
			size_t m = zpart(ccol, d + a, cap - o - a, src + at, cut[k], level, 0);
			lit[k] = a * 4 <= m * 5;
			age[k] = 1;
			if (!lit[k])
				memmove(d, d + a, m);
			z = lit[k] ? a : m;
		} else {
			age[k] += age[k] != 0;
			z = zpart(ccol, d, cap - o, src + at, cut[k], level, lit[k]);
		}
		if (ZSTD_isError(z))
			return z;
		at += cut[k];
		o += z;
	}
	return o;
#else
	(void)ccol;
	(void)chunk;
	return zcompress(cc, dst, cap, src, n, level);
#endif
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: writer_bench DIR [LEVEL...]\n");
		return 2;
	}
	DIR *dir = opendir(argv[1]);
	if (!dir)
		return 1;
	struct dirent *e;
	char path[4096];
	while ((e = readdir(dir))) {
		size_t l = strlen(e->d_name);
		if (l > 8 && !strcmp(e->d_name + l - 8, ".wevents")) {
			snprintf(path, sizeof(path), "%s/%s", argv[1], e->d_name);
			load(path);
		}
	}
	closedir(dir);
	int reps = getenv("REPS") ? atoi(getenv("REPS")) : 7;
	if (getenv("CHUNKS") && (size_t)atoi(getenv("CHUNKS")) < nchunks) /* fewer: less memory traffic */
		nchunks = (size_t)atoi(getenv("CHUNKS"));
	uint64_t events = 0;
	size_t maxn = 0;
	for (size_t i = 0; i < nchunks; i++) {
		events += chunks[i].events;
		if (chunks[i].n > maxn)
			maxn = chunks[i].n;
	}
	if (!events)
		return 1;
	uint8_t **packed = malloc(nchunks * sizeof(*packed));
	size_t *plen = malloc(nchunks * sizeof(*plen));
	for (size_t i = 0; i < nchunks; i++)
		packed[i] = malloc(weft_pack_bound(chunks[i].n));
	size_t colroom = weft_pack_bound(maxn);
	uint8_t *cols = malloc(3 * colroom + 64); /* version 4: weft_pack4_scratch(maxn) */
	(void)cols;
	double best = 1e9;
	size_t total = 0;
#ifdef WEFT_FUNCSET_MAX
	struct weft_funcset *fs = calloc(1, sizeof(*fs));
	static uint8_t listing[WEFT_FUNCSET_BYTES];
	static uint64_t ftmp[WEFT_FUNCSET_MAX];
	size_t listed = 0;
#endif
	for (int r = 0; r < reps; r++) {
		double t0 = now();
		total = 0;
		for (size_t i = 0; i < nchunks; i++) {
			uint32_t ev, dr = 0;
			struct weft_index_rec ix;
#if defined(WEFT_PACK5_LITERAL) /* 1.14: version 5, the function addresses listed, as the writers do */
			plen[i] = weft_pack5_indexed(chunks[i].w, chunks[i].n, packed[i], &ev, &dr, &ix, cols, fs);
			listed += weft_funcset_encode(fs, listing, ftmp) > 0;
			weft_funcset_clear(fs);
#elif defined(WEFT_CHUNK_PACKED4) /* what the tree's writers write */
			plen[i] = weft_pack4_indexed(chunks[i].w, chunks[i].n, packed[i], &ev, &dr, &ix, cols);
#elif defined(WEFT_CHUNK_PACKED3)
			plen[i] = weft_pack3_indexed(chunks[i].w, chunks[i].n, packed[i], &ev, &dr, &ix, cols, cols + colroom);
#else
			plen[i] = weft_pack_indexed(chunks[i].w, chunks[i].n, packed[i], &ev, &dr, &ix);
#endif
			total += plen[i];
		}
		double t = now() - t0;
		if (t < best)
			best = t;
	}
#ifdef WEFT_CHUNK_PACKED4 /* the packing round-trips (a check, not timed) */
	for (size_t i = 0; i < nchunks; i++) {
		uint64_t *back = malloc(chunks[i].n * 8 + 8);
#ifdef WEFT_PACK5_LITERAL
		int fmt = 5;
#else
		int fmt = 4;
#endif
		if (weft_unpack(packed[i], plen[i], back, chunks[i].n, fmt, 1) != chunks[i].n ||
		    memcmp(back, chunks[i].w, chunks[i].n * 8)) {
			fprintf(stderr, "writer_bench: chunk %zu does not round-trip\n", i);
			return 1;
		}
		free(back);
	}
#endif
#ifdef WEFT_FUNCSET_MAX
	if (!listed && reps) /* every rep lists the same chunks: a trace with functions lists some */
		fprintf(stderr, "writer_bench: no chunk listed function addresses\n");
	free(fs);
#endif
	printf("step=pack ns_per_event=%.2f bytes_per_event=%.2f\n", best * 1e9 / events, (double)total / events);
	void *zbuf = malloc(4 * ZSTD_compressBound(maxn * 10 + 16) + 512);
	ZSTD_CCtx *cc = ZSTD_createCCtx(), *ccol = ZSTD_createCCtx();
	int nlev = argc > 2 ? argc - 2 : 1;
	for (int k = 0; k < nlev; k++) {
		int level = argc > 2 ? atoi(argv[2 + k]) : 1;
		size_t ztotal = 0;
		double zbest = 1e9, sbest = 1e9;
		volatile uint32_t sink = 0;
		for (int r = 0; r < reps; r++) {
			double zt = 0, st = 0;
			ztotal = 0;
			for (size_t i = 0; i < nchunks; i++) {
				double t0 = now();
				size_t z = zcompress_tree(cc, ccol, zbuf, 4 * ZSTD_compressBound(plen[i]) + 512, packed[i], plen[i], level, i);
				double t1 = now();
				sink += weft_chunk_sum(WEFT_CHUNK_SUM, zbuf, z);
				double t2 = now();
				zt += t1 - t0;
				st += t2 - t1;
				ztotal += z + sizeof(struct weft_chunk_header);
			}
			if (zt < zbest)
				zbest = zt;
			if (st < sbest)
				sbest = st;
		}
		printf("step=zstd%d ns_per_event=%.2f bytes_per_event=%.3f\n", level, zbest * 1e9 / events,
		       (double)ztotal / events);
		printf("step=checksum ns_per_event=%.2f\n", sbest * 1e9 / events);
	}
	return 0;
}
