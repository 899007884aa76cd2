/*
 * zdeflate.h - one zlib-format (RFC 1950) deflate compressor for the .pftrace writer's batches
 * (TracePacket.compressed_packets, which Perfetto inflates). The engine is chosen at build
 * time: Intel's ISA-L (igzip, level 2: about twice libdeflate level 1's speed on weft's
 * packets, 5-15% larger) where CMake found libisal, else libdeflate level 1. Both are exact
 * zlib streams; a batch that would not fit its bound comes back as 0 and is written plain.
 * One compressor per thread; the same input gives the same bytes with the same engine on the
 * same CPU (ISA-L picks its code by the CPU's instruction set).
 */
#ifndef WEFT_ZDEFLATE_H
#define WEFT_ZDEFLATE_H

#include <stddef.h>
#include <stdint.h>

struct weft_zdeflate;

/* A compressor (NULL when memory fails). */
struct weft_zdeflate *weft_zdeflate_new(void);
void weft_zdeflate_free(struct weft_zdeflate *z);
/* The output room that n input bytes may need. */
size_t weft_zdeflate_bound(struct weft_zdeflate *z, size_t n);
/* in[0..n) as one zlib stream into out[0..cap): its length, or 0 if it did not fit. */
size_t weft_zdeflate(struct weft_zdeflate *z, const uint8_t *in, size_t n, uint8_t *out, size_t cap);
/* "isa-l level 2" or "libdeflate level 1": the engine this build compresses with. */
const char *weft_zdeflate_engine(void);

#endif
