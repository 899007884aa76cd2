/*
 * mpihook.c - what the preload runtime offers libweft-mpi.so (src/mpi/), which is preloaded
 * after it and reaches weft's events through weft.h's exported calls: the mpi= option, and
 * the metadata file, where the MPI wrappers write their WEFT_M_MPI and WEFT_M_CLOCK_SYNC
 * records. Not an API: the two libraries are built and shipped together.
 */
#include "lib/internal.h"

/* mpi= as configured (1 record MPI calls, 0 pass them through); read once by the wrappers at
 * their first call, after the runtime's constructor has applied WEFT_OPTIONS. */
__attribute__((visibility("default"))) int weft__mpi_option(void)
{
	return weft_cfg.mpi;
}

/* mpi_sync= as configured: 0, no clock sync over MPI (a job where some ranks run without weft,
 * which would never join it) */
__attribute__((visibility("default"))) int weft__mpi_sync_option(void)
{
	return weft_cfg.mpi_sync;
}

/* One metadata record of `type` (two parts, either may be empty); thread-safe, not
 * async-signal-safe (the metadata lock). */
__attribute__((visibility("default"))) void weft__meta_put(unsigned type, const void *a, size_t alen,
							    const void *b, size_t blen)
{
	weft_meta_write(type, a, alen, b, blen);
}
