/*
 * export.h - trace -> file converters. Each returns 0 or -errno with a one-line reason in err,
 * and fills a summary of what it wrote.
 */
#ifndef WEFT_EXPORT_H
#define WEFT_EXPORT_H

#include <stdatomic.h>
#include <stdio.h>
#include "format/reader.h"
#include "export/model.h"

struct weft_export_summary {
	uint64_t events, dropped, unmatched_end, unterminated, unwound, bytes;
	uint64_t deep;        /* tracks nesting more than WEFT_UI_LEVELS slices (model.h) */
	uint64_t bad_chunks;  /* chunks that did not decode, left out (warn: see bad_why) */
	const char *bad_why;  /* the first one's reason */
	uint64_t oom;         /* chunks or events left out for want of memory (then the export fails) */
	/* OTF2: events written, locations, complete slices whose times were moved to nest, MPI
	 * messages whose partner or communicator is not in the trace (left out) */
	uint64_t records, locations, clamped, unmapped;
};
/* Adds a walk's counts into a summary. */
void weft_export_summary_add(struct weft_export_summary *sum, const struct weft_walk_stats *st);
/* The export's return value once the output is written: rc, or where memory ran out on the
 * way -ENOMEM with the reason in err (the output is incomplete). */
int weft_export_result(const struct weft_export_summary *sum, int rc, char *err, size_t errlen);

/* Events the converters (pftrace, json) have written so far in this process, added now and then
 * (relaxed): what the CLI's progress line counts (tool/progress.c). Defined in model.c. */
extern _Atomic uint64_t weft_export_progress;

/* deflate: 1 for packets written as TracePacket.compressed_packets batches (zlib streams,
 * zdeflate.h; Perfetto inflates them on import; 5-9x smaller for function traces), 0 for plain
 * packets. */
#define WEFT_PFTRACE_DEFLATE 1
/* jobs: threads encoding (and as many deflating), 0: one per core (at most 16). */
int weft_export_pftrace(const struct weft_trace *t, FILE *out, int jobs, int deflate,
			struct weft_export_summary *sum, char *err, size_t errlen);
/* Part `part` (0-based) of nparts of that .pftrace: the parts, each written by its own process
 * (a conversion run as an MPI job, tool/convert-job.c), concatenated in order, are the bytes
 * weft_export_pftrace writes. Each part holds the threads of a run of whole processes with
 * about 1/nparts of the events; the first also the header, the last the sequences after the
 * threads' (memory counters, samplers, GPU). sum counts this part's. */
int weft_export_pftrace_part(const struct weft_trace *t, FILE *out, int jobs, int deflate, unsigned part,
			     unsigned nparts, struct weft_export_summary *sum, char *err, size_t errlen);

enum weft_json_style { WEFT_JSON_BE = 0, WEFT_JSON_X = 1 };
int weft_export_json(const struct weft_trace *t, FILE *out, int style, int jobs,
		     struct weft_export_summary *sum, char *err, size_t errlen);

/* SQLite database written into path (docs/sqlite.md): a new or empty file (the CLI's fresh
 * temporary, renamed when this succeeds: tool/outfile.c); sum->bytes holds the rows written. */
int weft_export_sqlite(const struct weft_trace *t, const char *path, struct weft_export_summary *sum, char *err,
		       size_t errlen);

/* OTF2 archive (docs/otf2.md) written into dir (a new directory, or an empty one: the CLI's
 * fresh sibling, renamed when this succeeds), anchor file dir/traces.otf2; sum->bytes holds
 * the archive's size. Only where weft was built with libotf2 (WEFT_HAVE_OTF2). */
int weft_export_otf2(const struct weft_trace *t, const char *dir, struct weft_export_summary *sum, char *err,
		     size_t errlen);

#endif
