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
 */
#include "internal.h"
#include "../format/chunkindex.h"

static void put_meta(const void *rec, size_t len)
{
	weft_meta_write(WEFT_M_CHUNK_INDEX, rec, len, NULL, 0);
}

void weft_index_chunk(const struct weft_chunk *c, const struct weft_index_rec *ix, unsigned file,
		      uint64_t offset, void (*put)(const void *rec, size_t len))
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
	(put ? put : put_meta)(&e, sizeof(e));
}
