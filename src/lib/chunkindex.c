/*
 * chunkindex.c - the time index of the chunks a process writes (format 1.8, format/chunkindex.h):
 * one CHUNK_INDEX metadata record per chunk, made by the writer thread that writes the chunk
 * (never on the program's hot path): its times, depth and flags come from the pass that packs the
 * chunk (weft_pack_indexed), or, for a chunk stored unpacked, a pass of their own over the
 * records before they are delta-coded; then one metadata record (a system call or two per chunk
 * of 1M).
 * A reader uses it to read a time window of the trace (`weft convert --time FROM:TO`) without
 * decoding the chunks outside it; a chunk whose record is missing (the disk filled, the process
 * was killed between the chunk and its record) is scanned by the reader instead.
 * Since 1.13 the record also lists the chunk's function addresses (format/funcset.h), which the
 * writer collects while it packs the chunk: a reader names the functions without scanning.
 */
#include "internal.h"
#include "../format/chunkindex.h"

void weft_index_chunk(const struct weft_chunk *c, const struct weft_index_rec *ix, unsigned file,
		      uint64_t offset, const void *tail, size_t tlen)
{
	struct weft_index_rec e;
	if (ix)
		e = *ix;
	else
		weft_index_scan((const uint64_t *)(const void *)c->data, (c->used & ~(size_t)7) / 8, &e);
	e.tid = c->tid;
	e.file = file;
	e.seq = c->seq;
	e.offset = offset;
	weft_meta_write(WEFT_M_CHUNK_INDEX, &e, sizeof(e), tail, tail ? tlen : 0);
}
