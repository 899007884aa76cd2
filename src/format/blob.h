/*
 * blob.h - a trace file's bytes as the reader holds them. A large events file is mapped, not
 * read: the kernel brings its pages in as the readers use them, and every chunk decoded gives
 * its pages back (weft_blob_release, from the decoders), so a walk through a trace of any size
 * holds a few chunks' pages at a time instead of the whole file. The bytes stay valid: a page
 * given back is read again from the page cache when touched. Smaller files, and anything not
 * a regular file that maps, are read into the heap. Either way the bytes are followed
 * by one zero byte. Thread-safe.
 */
#ifndef WEFT_FORMAT_BLOB_H
#define WEFT_FORMAT_BLOB_H

#include <stddef.h>

/* The contents of fd (a regular file of `size` bytes), and in *got how many could be read;
 * NULL when out of memory. Free with weft_blob_free. */
void *weft_blob_load(int fd, size_t size, int map, size_t *got);
void weft_blob_free(void *p);
/* The reader is done with [p, p + n) for now: where it lies in a mapped blob, its pages leave
 * this process's memory (they come back when read). A no-op for any other memory. */
void weft_blob_release(const void *p, size_t n);

/* Files at least this big are mapped (when `map` is asked for), as long as fewer than
 * WEFT_BLOB_MAP_MAX are (each takes one or two of the process's 65,530 map areas): a rank's
 * events file of a few pages is mapped too, so a 4,096-rank job's reader does not hold them all. */
#define WEFT_BLOB_MAP_MIN (8u << 10)
#define WEFT_BLOB_MAP_MAX 20000

#endif
