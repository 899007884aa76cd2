/* info-snapshots.h - weft info's lines on snapshot requests (info-snapshots.c). */
#ifndef WEFT_INFO_SNAPSHOTS_H
#define WEFT_INFO_SNAPSHOTS_H

#include "format/reader.h"

/* "  snapshots: N taken, M refused (why)", then one line per request (the first 20). */
void weft_info_snapshots(const struct weft_trace *t, const struct weft_proc *p);

#endif
