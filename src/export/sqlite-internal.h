/*
 * sqlite-internal.h - what sqlite.c (the file, the schema, processes and threads) shares with
 * sqlite-walk.c (each process's records, streamed and joined into rows).
 */
#ifndef WEFT_EXPORT_SQLITE_INTERNAL_H
#define WEFT_EXPORT_SQLITE_INTERNAL_H

#include "export/export.h"
#include "export/sqlite-rows.h"

enum { T_META, T_PROC, T_THREAD, T_SLICE, T_COUNTER, T_ALLOC, T_ACCESS, T_RUN, T_GPU, T_SNAPSHOT, NTABLES };

struct weft_sqlite_db {
	struct weft_sq sq;
	struct weft_sq_table tab[NTABLES];
	const struct weft_trace *t;
	int64_t *utid_base;    /* per process: utid of its first thread */
	int64_t next_alloc;    /* allocation ids, over the whole trace, in allocation order */
	int64_t next_async;    /* async slices: ids 2^62 + n, n over the whole trace */
};

/* Every row of process `proc` (slices, counters, allocations, accesses), its records read a
 * chunk per thread at a time and merged by time, the joins done on the way. */
void weft_sqlite_walk_proc(struct weft_sqlite_db *d, size_t proc, struct weft_export_summary *sum);
/* The GPU collector's kernels, copies and memsets (sqlite-gpu.c): gpu_activities rows. */
void weft_sqlite_gpu(struct weft_sqlite_db *d);

#endif
