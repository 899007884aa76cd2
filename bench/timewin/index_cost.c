/* index_cost DIR: what the time index costs a writer, in thread CPU time, over every chunk of the
 * trace DIR decoded as a writer holds it: packing with the index (weft_pack_indexed, what
 * writers do) against packing without (weft_pack), and against packing plus zstd at the default
 * level 1 (what a writer does to each chunk); weft_index_scan alone (the pass a chunk stored
 * unpacked gets, and the reader's for a chunk without an entry). Run by timewin_bench.py. */
#include "format/reader.h"
#include "format/chunkindex.h"
#include "format/pack.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zstd.h>

static uint64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

int main(int argc, char **argv)
{
	struct weft_trace *t;
	char err[512];
	if (argc != 2 || weft_trace_open(argv[1], &t, err, sizeof(err))) {
		fprintf(stderr, "usage: index_cost DIR (%s)\n", argc == 2 ? err : "");
		return 2;
	}
	uint64_t *buf = NULL, scan_ns = 0, pack_ns = 0, ipack_ns = 0, zstd_ns = 0, chunks = 0, events = 0;
	size_t cap = 0, n, pcap = 0, zcap = 0;
	uint8_t *pbuf = NULL;
	void *zbuf = NULL;
	const char *why;
	ZSTD_CCtx *cctx = ZSTD_createCCtx();
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t k = 0; k < t->procs[i].nthreads; k++) {
			const struct weft_thread_data *th = &t->procs[i].threads[k];
			for (size_t c = 0; c < th->nchunks; c++) {
				if (weft_chunk_decode(&th->chunks[c], &buf, &cap, &n, &why))
					continue;
				if (weft_pack_bound(n) > pcap) {
					pcap = weft_pack_bound(n);
					pbuf = realloc(pbuf, pcap);
					zcap = ZSTD_compressBound(pcap);
					zbuf = realloc(zbuf, zcap);
				}
				struct weft_index_rec e;
				uint32_t ev, dr = 0;
				size_t packed = 0;
				uint64_t t0 = cpu_ns();
				for (int r = 0; r < 5; r++)
					weft_index_scan(buf, n, &e);
				uint64_t t1 = cpu_ns();
				for (int r = 0; r < 5; r++)
					packed = weft_pack(buf, n, pbuf, &ev, &dr);
				uint64_t t2 = cpu_ns();
				for (int r = 0; r < 5; r++)
					packed = weft_pack_indexed(buf, n, pbuf, &ev, &dr, &e);
				uint64_t t3 = cpu_ns();
				ZSTD_compressCCtx(cctx, zbuf, zcap, pbuf, packed, 1);
				uint64_t t4 = cpu_ns();
				scan_ns += (t1 - t0) / 5;
				pack_ns += (t2 - t1) / 5;
				ipack_ns += (t3 - t2) / 5;
				zstd_ns += t4 - t3;
				chunks++;
				events += th->chunks[c].events;
			}
		}
	double ch = chunks ? (double)chunks : 1, evs = events ? (double)events : 1;
	printf("# index cost (thread CPU, %llu chunks of %.0f events): packing %.1f us per chunk without the "
	       "index, %.1f us with it (%+.2f ns per event); packing + zstd %.1f us: the index adds %.1f%% to "
	       "the writer's work; weft_index_scan alone %.1f us (%.2f ns per event)\n",
	       (unsigned long long)chunks, evs / ch, (double)pack_ns / ch / 1e3, (double)ipack_ns / ch / 1e3,
	       ((double)ipack_ns - (double)pack_ns) / evs, (double)(pack_ns + zstd_ns) / ch / 1e3,
	       pack_ns + zstd_ns ? 100.0 * ((double)ipack_ns - (double)pack_ns) / (double)(pack_ns + zstd_ns) : 0,
	       (double)scan_ns / ch / 1e3, (double)scan_ns / evs);
	ZSTD_freeCCtx(cctx);
	free(buf);
	free(pbuf);
	free(zbuf);
	weft_trace_free(t);
	return 0;
}
