/*
 * zdeflate.c - the zlib-format compressor behind zdeflate.h: ISA-L's stateless igzip where the
 * build has it (WEFT_HAVE_ISAL), libdeflate otherwise.
 */
#include "export/zdeflate.h"
#include <stdlib.h>

#ifdef WEFT_HAVE_ISAL
#include <isa-l/igzip_lib.h>

#define WEFT_ISAL_LEVEL 2
#define WEFT_ISAL_LEVEL_BUF ISAL_DEF_LVL2_DEFAULT

struct weft_zdeflate {
	uint8_t *level_buf; /* the level's hash tables, reused batch after batch */
};

struct weft_zdeflate *weft_zdeflate_new(void)
{
	struct weft_zdeflate *z = calloc(1, sizeof(*z));
	if (z && !(z->level_buf = malloc(WEFT_ISAL_LEVEL_BUF))) {
		free(z);
		z = NULL;
	}
	return z;
}

void weft_zdeflate_free(struct weft_zdeflate *z)
{
	if (z)
		free(z->level_buf);
	free(z);
}

size_t weft_zdeflate_bound(struct weft_zdeflate *z, size_t n)
{
	(void)z;
	/* stored blocks at worst (5 bytes per 64 KiB) plus the zlib header, trailer and slack */
	return n + n / 4096 * 5 + 1024;
}

size_t weft_zdeflate(struct weft_zdeflate *z, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	struct isal_zstream s;
	if (n > UINT32_MAX || cap > UINT32_MAX)
		return 0;
	isal_deflate_stateless_init(&s);
	s.level = WEFT_ISAL_LEVEL;
	s.level_buf = z->level_buf;
	s.level_buf_size = WEFT_ISAL_LEVEL_BUF;
	s.gzip_flag = IGZIP_ZLIB;
	s.next_in = (uint8_t *)in;
	s.avail_in = (uint32_t)n;
	s.next_out = out;
	s.avail_out = (uint32_t)cap;
	s.end_of_stream = 1;
	s.flush = NO_FLUSH;
	if (isal_deflate_stateless(&s) != COMP_OK || s.avail_in)
		return 0;
	return s.total_out;
}

const char *weft_zdeflate_engine(void)
{
	return "isa-l level 2";
}

#else
#include <libdeflate.h>

struct weft_zdeflate *weft_zdeflate_new(void)
{
	return (struct weft_zdeflate *)libdeflate_alloc_compressor(1);
}

void weft_zdeflate_free(struct weft_zdeflate *z)
{
	if (z)
		libdeflate_free_compressor((struct libdeflate_compressor *)z);
}

size_t weft_zdeflate_bound(struct weft_zdeflate *z, size_t n)
{
	return libdeflate_zlib_compress_bound((struct libdeflate_compressor *)z, n);
}

size_t weft_zdeflate(struct weft_zdeflate *z, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	return libdeflate_zlib_compress((struct libdeflate_compressor *)z, in, n, out, cap);
}

const char *weft_zdeflate_engine(void)
{
	return "libdeflate level 1";
}
#endif
