/*
 * pftrace-snapshot.h - snapshot requests (SNAPSHOT metadata, format 1.8) in a .pftrace, called
 * by pftrace.c for each process.
 */
#ifndef WEFT_PFTRACE_SNAPSHOT_H
#define WEFT_PFTRACE_SNAPSHOT_H

#include "export/pb.h"
#include "format/reader.h"

/* Sequence 1: one instant on the process's track (uuid proc) per request, `weft: snapshot` with
 * the arguments reason and origin (and snapshot, its N, where one was written), or `weft:
 * snapshot refused` with reason, origin and why. */
void weft_pf_snapshots(struct pb *b, const struct weft_proc *p, uint64_t proc);

#endif
