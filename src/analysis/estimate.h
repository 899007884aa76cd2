/*
 * estimate.h - what a trace costs, per name, to decide before a long run what to record (like
 * Score-P's scorep-score): for every function, slice, instant, counter, memory event kind,
 * sampler channel, sched or GPU record kind, the events and records the reader decodes, their
 * bytes in memory and on disk, and the slices' durations; the whole directory's bytes; and
 * the rate at which the run produced them, from which the command projects a longer run, the
 * buffer memory it needs and a filter (docs/estimate.md).
 *
 * Bytes on disk are exact by this definition: a chunk frame's bytes (its 40-byte header and
 * its stored, compressed bytes) are shared among its records in proportion to each record's
 * length in the chunk's packed stream (pack.h; 8 bytes a word for a chunk stored unpacked),
 * rounded so that the shares of a chunk sum to the frame's bytes. Arguments, flows, call
 * stacks and CPU/RSS readings go to the event they belong to. So the rows sum exactly to the
 * frames of every chunk the reader kept; the rest of the directory (metadata files, file
 * headers, bytes in no kept chunk, chunks that did not decode) is counted on its own.
 */
#ifndef WEFT_ESTIMATE_H
#define WEFT_ESTIMATE_H

#include "format/reader.h"

enum weft_est_kind {
	WEFT_EST_FUNCTION, /* -finstrument-functions entries and exits */
	WEFT_EST_SLICE,    /* weft.h slices (BEGIN/END, COMPLETE) */
	WEFT_EST_PYTHON,   /* slices of category python or python-c (--python) */
	WEFT_EST_MPI,      /* slices of category mpi */
	WEFT_EST_INSTANT,
	WEFT_EST_COUNTER,
	WEFT_EST_ASYNC,
	WEFT_EST_MEMORY,   /* allocations, frees, reallocs, heap usage (per heap) */
	WEFT_EST_ACCESS,   /* memory access samples (per source) */
	WEFT_EST_SCHED,    /* scheduling records (per kind) */
	WEFT_EST_SAMPLE,   /* system sampler readings (per channel) */
	WEFT_EST_GPU,      /* GPU kernels (per name), copies, memsets; CUDA calls (category cuda*) */
	WEFT_EST_WEFT,     /* weft's own markers: dropped events, setjmp/longjmp, unknown records */
	WEFT_EST_NKINDS
};
const char *weft_est_kind_name(unsigned kind);
/* A kind the filter may suggest: functions, slices and Python calls (`weft record -N` leaves
 * them out; MPI and CUDA calls are left alone, arrows and GPU work hang on them). */
int weft_est_kind_filterable(unsigned kind);

struct weft_est_row {
	const char *name; /* points into the trace, or a static string */
	const char *symbol; /* a function whose name is demangled C++: its symbol as the ELF table
			     * spells it (what weft record -N matches), else NULL */
	unsigned kind;    /* enum weft_est_kind */
	uint64_t events;  /* records that are events (weft_rec_events): their sum is the chunks' */
	uint64_t records; /* every record, with the arguments, flows, stacks that belong to them */
	uint64_t raw_bytes;    /* their bytes in memory (8 a word), what the buffers hold */
	uint64_t packed_bytes; /* their bytes in the chunks' packed streams */
	uint64_t bytes;        /* their share of the chunk frames on disk (see above) */
	uint64_t slices, dur_ns; /* slices closed (the walker's, model.h) and their summed durations */
};

struct weft_est_proc {
	int pid;
	char stem[320];
	unsigned threads;       /* the program's threads that wrote chunks */
	uint64_t raw_bytes;     /* raw bytes of its decoded chunks */
	uint64_t chunk_bytes;   /* its kept chunks' frames */
	uint64_t first_ns, last_ns; /* the run's span (the trace's: a process may live for part of it) */
	int has_pace;           /* a clean stop recorded the writers' CPU time */
	uint64_t writer_cpu_ns, writer_raw_bytes; /* and the raw bytes they wrote in it */
	const char *options;
};

struct weft_estimate {
	struct weft_est_row *rows; /* by bytes on disk, largest first (then by name) */
	size_t nrows;
	struct weft_est_proc *procs;
	size_t nprocs;
	uint64_t events, records, raw_bytes, packed_bytes;
	uint64_t chunk_bytes;  /* frames of the decoded chunks: the sum of the rows' bytes */
	uint64_t chunks;
	uint64_t bad_chunks, bad_chunk_bytes; /* kept chunks that did not decode */
	const char *bad_why;
	uint64_t meta_bytes;   /* the .wmeta files */
	uint64_t header_bytes; /* the .wevents files' headers (32 bytes each) */
	uint64_t unread_bytes; /* .wevents bytes in no chunk the reader kept (a cut tail, damage) */
	uint64_t file_bytes;   /* every trace file: the five above added (weft_estimate_files) */
	uint64_t first_ns, last_ns; /* the trace's span */
	uint64_t oom;          /* chunks left out for want of memory (the result is incomplete) */
	char **owned;          /* row names made here (a heap's "alloc: NAME") */
	size_t nowned;
};

/* Reads every chunk of t once. Returns 0, or -ENOMEM (out is then empty: it would be
 * incomplete). The rows' names point into t: free the estimate first. */
int weft_estimate_build(const struct weft_trace *t, struct weft_estimate *out);
/* The sizes of the trace files in dir (the directory t was read from): sets meta_bytes,
 * header_bytes, unread_bytes and file_bytes. Returns 0, or -errno when dir cannot be listed. */
int weft_estimate_files(struct weft_estimate *e, const char *dir);
void weft_estimate_free(struct weft_estimate *e);

/* The bytes a run of dur_ns would write: the bytes that do not grow with time (metadata,
 * file headers) plus the chunk bytes at the observed rate, without the rows keep() refuses
 * (NULL: all). 0 rate (no span) gives the fixed part. */
uint64_t weft_estimate_project(const struct weft_estimate *e, uint64_t dur_ns,
			       int (*keep)(const struct weft_est_row *r, void *ud), void *ud);

/* Buffer memory a process needs (docs/estimate.md): its threads' chunks being filled, the
 * chunks the writers work on, and the queue that forms while a writer packs and compresses one
 * chunk; when the writers cannot keep up, the backlog the run accumulates over dur_ns. */
struct weft_est_buffer {
	double rate;       /* raw bytes per second the process's threads produced */
	double pace;       /* raw bytes per second one writer handles (0: unknown: no clean stop, or
			    * the writers handled less than 4 chunks, too little to measure) */
	uint64_t need;     /* bytes of buffer memory */
	int behind;        /* the writers cannot keep up: need grows with the duration */
	unsigned writers_needed; /* writers that would keep up (0: unknown) */
};
void weft_estimate_buffer(const struct weft_est_proc *p, uint64_t chunk_size, unsigned writers,
			  uint64_t dur_ns, double scale, struct weft_est_buffer *out);

#endif
