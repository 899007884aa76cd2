/*
 * model.h - the meaning of a thread's records, shared by every converter and report: walks
 * the records in order, converts ticks to ns, attaches argument and flow records to the event
 * before them, and balances slices per (thread, track): an end that matches an outer open
 * slice first closes the inner ones (flagged UNWOUND: longjmp, exceptions, a dropped end), an
 * end with no open begin is skipped and counted, and slices still open at the end of the
 * trace are closed there (flagged UNTERMINATED). A flow record that does not follow an event
 * it can attach to (that event was filtered out or dropped) is skipped and counted. Converters therefore never see an unbalanced
 * stream.
 */
#ifndef WEFT_MODEL_H
#define WEFT_MODEL_H

#include "format/reader.h"

enum weft_ev_kind {
	WEFT_EV_BEGIN, WEFT_EV_END, WEFT_EV_INSTANT, WEFT_EV_COUNTER, WEFT_EV_ASYNC_BEGIN,
	WEFT_EV_ASYNC_END, WEFT_EV_ASYNC_INSTANT, WEFT_EV_COMPLETE, WEFT_EV_DROPPED,
	/* memory: id is the heap (0 the C heap, else a heap site), mfn the function (enum
	 * weft_mem_fn), `slice` the innermost open slice of the thread; addr, size (ALLOC), addr
	 * (FREE), addr -> addr2 with size (REALLOC), value/addr/addr2/size = -/live/cached/
	 * requested (HEAP_USAGE) */
	WEFT_EV_ALLOC, WEFT_EV_FREE, WEFT_EV_REALLOC, WEFT_EV_HEAP_USAGE,
	/* a sampled memory access: id the tid that made it, mfn the source (enum
	 * weft_access_source: 1 page fault, 2 PEBS load, 3 PEBS store, 4 IBS op, 5 watchpoint hit
	 * on a write, 6 on a read or write), addr the data address (a watchpoint's: its address), addr2 the instruction, size the latency and value the data source (PEBS/IBS);
	 * a sampler's stream holds every thread's */
	WEFT_EV_ACCESS,
	/* a scheduling event (format 1.5, sched=1): id the CPU, mfn the kind (enum
	 * weft_sched_kind), nframes/frames its extra words (docs/format.md, SCHED); a sched
	 * reader's stream holds every CPU's it drains */
	WEFT_EV_SCHED,
};
#define WEFT_EVF_UNTERMINATED 1u
#define WEFT_EVF_UNWOUND 2u
#define WEFT_EVF_EXCEPTION 4u /* END: the scope was left by an exception (WEFT_END_EXCEPTION) */

#define WEFT_EV_MAX_ARGS 16
#define WEFT_EV_MAX_FLOWS 8

struct weft_ev_arg {
	uint32_t key;
	unsigned type; /* WEFT_R_ARG_* */
	uint64_t v;
	const char *s; /* WEFT_R_ARG_STR: not \0-terminated, slen bytes */
	size_t slen;
};

struct weft_ev {
	unsigned kind, flags;
	uint64_t ts, end_ts; /* ns; end_ts for COMPLETE */
	uint32_t id;         /* site id (0: none) */
	unsigned track;      /* named track id, 0 = the thread's own */
	uint64_t value;      /* counter bits, async id, dropped count */
	int is_double;
	/* the slice's number in its thread (1, 2, ... in begin order) on BEGIN and END; on memory
	 * events the innermost slice open on any track of the thread (0: none) */
	uint64_t serial;
	uint64_t addr, addr2, size; /* memory events */
	unsigned mfn;
	/* memory_stacks: the call stack of an ALLOC or REALLOC, by hash; its return addresses
	 * (innermost first) where this record defines it, else nframes 0 (defined earlier) */
	uint64_t stack_hash;
	unsigned nframes;
	const uint64_t *frames;
	/* BEGIN and END (counters=, format 1.5): the thread's counter values there, in the order
	 * of the process's ctr_names; nctr 0 when the record carried none (an END that closes an
	 * unwound slice never does) */
	unsigned nctr;
	uint64_t ctr[8];
	/* BEGIN and END of a cpu_mem_exact= slice (CPUMEM records): the thread's user and system
	 * CPU time (ns) and the process's RSS (bytes) there; has_cm 0 when none came */
	int has_cm;
	uint64_t cm_user_ns, cm_sys_ns, cm_rss;
	unsigned nargs, nout, nin;
	struct weft_ev_arg args[WEFT_EV_MAX_ARGS];
	uint64_t flows_out[WEFT_EV_MAX_FLOWS], flows_in[WEFT_EV_MAX_FLOWS];
};

struct weft_walk_stats {
	uint64_t events, unmatched_end, unterminated, unwound, orphan_flows;
	uint64_t bad_chunks;  /* chunks whose stored bytes did not decode: left out */
	const char *bad_why;  /* the first one's reason (a static string) */
	uint64_t oom;         /* chunks or events left out for want of memory: the result is incomplete */
	uint64_t deep;        /* stacks (a thread's own track, a named track) that went past
			       * WEFT_UI_LEVELS open slices */
};
/* The most levels trace_processor (the Perfetto UI) nests on one track: the slices deeper are
 * left unfinished, at depth 0. */
#define WEFT_UI_LEVELS 512
/* Counts a chunk that weft_chunk_decode refused (its return code and reason). */
void weft_walk_stats_refused(struct weft_walk_stats *st, int rc, const char *why);

typedef void (*weft_ev_fn)(void *ud, const struct weft_ev *e);
/* Optional, for converters that write function calls by the million: plain BEGINs and ENDs (on
 * the thread's own track, with nothing attached: no arguments, flows, counters, readings or
 * flags), as their fields alone, in batches of consecutive ones, before a weft_ev is filled in
 * for any. Returns how many of the first ones it took; the walker hands the next one through
 * weft_ev_fn (in full: the same event) and offers the rest again. */
struct weft_plain_ev {
	uint64_t ts;
	uint64_t serial;
	uint32_t id;
	unsigned kind; /* WEFT_EV_BEGIN or WEFT_EV_END */
};
typedef size_t (*weft_plain_fn)(void *ud, const struct weft_plain_ev *ev, size_t n);
#define WEFT_PLAIN_BATCH 64

/* A walker is fed one thread's chunks in order, then finished. Events handed to fn point into
 * the chunk being fed: they are valid during the callback only. */
struct weft_walk_stack;
struct weft_walker {
	uint64_t next_serial; /* slices begun so far in this thread */
	const struct weft_proc *p;
	weft_ev_fn fn;
	weft_plain_fn plain; /* NULL: every event through fn */
	void *ud;
	struct weft_walk_stats *st;
	struct weft_walk_stack *stacks;
	size_t nstacks;
	struct weft_ev ev; /* pending: its args and flows may still follow */
	int pending;
	int light; /* the pending event is plain so far: only kind, ts, id, track (0), serial set */
	uint64_t last_ts;
	struct { uint64_t env; size_t depth; } *jmps; /* setjmp buffers seen */
	struct weft_plain_ev batch[WEFT_PLAIN_BATCH]; /* plain events not yet offered to plain */
	size_t nbatch;
	struct { int valid; uint32_t id; uint64_t user, sys, rss; } cm_end; /* a CPUMEM before an END */
	size_t njmps, jcap;
};
void weft_walker_init(struct weft_walker *w, const struct weft_proc *p, weft_ev_fn fn, void *ud,
		      struct weft_walk_stats *st);
/* Feeds one decoded chunk. The records are rewritten in place on the way (ticks to ns,
 * function addresses to site ids): feed each buffer once. */
void weft_walker_feed(struct weft_walker *w, uint64_t *records, size_t nwords);
/* The same for records weft_chunk_decode_prepared (or weft_records_prepare) already prepared. */
void weft_walker_feed_prepared(struct weft_walker *w, uint64_t *records, size_t nwords);
/* A chunk left out of the walk (a pass that knows it holds nothing it wants): the pending event
 * goes out now, so that arguments and flows after the gap attach to nothing before it. */
void weft_walker_skip(struct weft_walker *w);
/* Closes what is still open at end_ns and frees the walker's memory. */
void weft_walker_finish(struct weft_walker *w, uint64_t end_ns);

/* All of one thread: decode each chunk into *buf (reused; free it after), feed, finish. */
void weft_walk_thread(const struct weft_proc *p, const struct weft_thread_data *th,
		      uint64_t trace_end_ns, weft_ev_fn fn, void *ud, struct weft_walk_stats *st,
		      uint64_t **buf, size_t *cap);
/* The same, offering plain function and slice events to plain first (weft_plain_fn). */
void weft_walk_thread_plain(const struct weft_proc *p, const struct weft_thread_data *th,
			    uint64_t trace_end_ns, weft_ev_fn fn, weft_plain_fn plain, void *ud,
			    struct weft_walk_stats *st, uint64_t **buf, size_t *cap);

/* Run fn(i, ud) for i in [0, n) on up to `jobs` threads (the calling one included). */
void weft_parallel_for(size_t n, int jobs, void (*fn)(size_t i, void *ud), void *ud);
/* jobs as asked, or for 0 (or less) one per core; at most 16. */
int weft_jobs(int jobs);

#endif
