/*
 * weft.h - the weft tracing API. This header is the manual: the stable, everyday part first,
 * then tracks and async work, then control of the runtime, then the rarely needed.
 *
 *   #include <weft.h>
 *   void step(int n) {
 *       WEFT_FUNC();                          // slice named "step", ends at scope exit
 *       WEFT_SCOPE("inner", WEFT_I("n", n));  // slice with a typed argument
 *       WEFT_COUNTER("queue depth", n);       // a point on the counter track "queue depth"
 *   }
 *
 * Run the program: events stream into ./weft.data/ (WEFT_OPTIONS="output=DIR" to change), and
 * `weft convert weft.data -o trace.pftrace` makes a file for ui.perfetto.dev.
 *
 * Cost model. An event reads the clock once and appends 16 bytes (24 for counters and async
 * events) to a buffer owned by the calling thread: no lock, no system call, no allocation,
 * errno untouched. The first event of a call site and of a thread, and one event in ~64K when a
 * buffer chunk fills, take a slow path out of line. A call site whose category is disabled or
 * whose name is filtered out costs one load and a predicted branch. `-DWEFT_DISABLE` compiles
 * every macro to nothing (arguments are not evaluated).
 *
 * Threads and signals. Every macro and weft_* event call is thread-safe and may be used in a
 * signal handler: a handler's event that interrupts an event of the same thread (or the
 * runtime's slow path) is dropped and counted, never written over it, and never deadlocks.
 *
 * Languages. C (c99 and later) and C++ (c++11 and later) with GCC or clang: the macros use GNU
 * extensions (statement expressions, the cleanup attribute, `, ##__VA_ARGS__`, __COUNTER__),
 * so -pedantic warns about them; the functions alone are ISO C. Two macros may share a line.
 * Every inline helper is marked no_instrument_function, so -finstrument-functions builds do
 * not record weft's own helpers. With -DWEFT_DISABLE nothing needs libweft at link time.
 *
 * Errors. Functions that can fail return 0 or a negative errno-style code; weft_strerror()
 * describes it. The library never prints except through the log callback (weft_set_log), whose
 * default writes warnings, one line each, to stderr.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stdint.h>
#include <stddef.h>
#include "weft_fastpath.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1

/* ============================================================================================
 * 1. Slices, instants, counters (the everyday part)
 * ========================================================================================== */

/* WEFT_SCOPE("name", args...) - a slice on the calling thread from here to the end of the
 * enclosing scope. Up to 8 typed arguments: WEFT_I (int64), WEFT_U (uint64), WEFT_D (double),
 * WEFT_B (bool), WEFT_S (string, copied, at most 1 KiB), WEFT_P (pointer). Keys and names must
 * be string literals or otherwise live for the whole run.
 * WEFT_SCOPE_C("category", "name", args...) - the same in a category (see categories=). */
#define WEFT_SCOPE(name, ...) WEFT_SCOPE_C("", name, ##__VA_ARGS__)
#define WEFT_SCOPE_C(cat, name, ...) WEFT__SCOPE(0, cat, name, ##__VA_ARGS__)
/* WEFT_FUNC() - WEFT_SCOPE with the enclosing function's name. */
#define WEFT_FUNC() WEFT_SCOPE_C("", __func__)

/* Explicit begin and end, for slices that do not follow a lexical scope. An end closes the
 * innermost open slice of the same name on the same thread and track; an end whose begin was
 * never recorded (dropped, filtered) is ignored by the converters. */
#define WEFT_BEGIN(name, ...) WEFT__BEGIN(0, "", name, ##__VA_ARGS__)
#define WEFT_END(name) WEFT__END(0, "", name)
#define WEFT_BEGIN_C(cat, name, ...) WEFT__BEGIN(0, cat, name, ##__VA_ARGS__)
#define WEFT_END_C(cat, name) WEFT__END(0, cat, name)

/* WEFT_COMPLETE("name", start_ns, end_ns) - a slice with given times from weft_now_ns(),
 * on the calling thread's track. Like every slice there it must nest with the others: emit it
 * once the range is over, not around slices the thread records later. */
#define WEFT_COMPLETE(name, start_ns, end_ns) WEFT__COMPLETE("", name, start_ns, end_ns)

/* WEFT_INSTANT("name", args...) - a zero-duration event on the calling thread. */
#define WEFT_INSTANT(name, ...) WEFT__INSTANT(0, "", name, ##__VA_ARGS__)
#define WEFT_INSTANT_C(cat, name, ...) WEFT__INSTANT(0, cat, name, ##__VA_ARGS__)

/* WEFT_COUNTER("name", v) - a point on the process-wide counter track "name" (int64).
 * WEFT_COUNTER_F("name", v) - the same for double values.
 * WEFT_COUNTER_UNIT("name", "unit", v) / WEFT_COUNTER_F_UNIT - with a unit ("bytes", "ns", ...;
 * "bytes" and "ns" and "count" are understood by Perfetto, others are shown as given). */
#define WEFT_COUNTER(name, v) WEFT__COUNTER(name, NULL, 0, WEFT_R_COUNTER_I64, weft__i2w(v))
#define WEFT_COUNTER_F(name, v) WEFT__COUNTER(name, NULL, 1, WEFT_R_COUNTER_F64, weft__d2w(v))
#define WEFT_COUNTER_UNIT(name, unit, v) \
	WEFT__COUNTER(name, unit, 0, WEFT_R_COUNTER_I64, weft__i2w(v))
#define WEFT_COUNTER_F_UNIT(name, unit, v) \
	WEFT__COUNTER(name, unit, 1, WEFT_R_COUNTER_F64, weft__d2w(v))

/* WEFT_RATE("name", n) - adds n to a running count and, at most every 100 ms, emits the rate
 * since the previous point (n per second, double) on the counter track "name" with unit "/s";
 * what is still counted when tracing stops is emitted then, so a short run shows a point too.
 * Thread-safe: all threads calling the same WEFT_RATE site add to one count. */
#define WEFT_RATE(name, n) \
	do { \
		static struct weft_rate weft__r_ = {{0, WEFT_KIND_COUNTER, 1, 0, 0, name, "", "/s", 0}, 0, 0, 0}; \
		weft_rate_add(&weft__r_, (uint64_t)(n)); \
	} while (0)

/* Process and thread names, shown on their tracks. Copied; may be called any time. */
WEFT_API void weft_process_name(const char *name);
WEFT_API void weft_thread_name(const char *name);

/* Nanoseconds on CLOCK_BOOTTIME, the trace's time base (for WEFT_COMPLETE). */
WEFT_API uint64_t weft_now_ns(void);

/* A one-line note on this recording (what a part of weft running in the program met, say),
 * kept in the trace: `weft info` lists it under the process, `weft record` prints it when the
 * program has ended. Copied (at most 1000 bytes); nothing while tracing is off. Thread-safe;
 * not async-signal-safe. */
WEFT_API void weft_note(const char *text);

/* ============================================================================================
 * 2. Named tracks, async slices and flows
 * ========================================================================================== */

/* weft_track("stream 3") - a named track of this process (returns 1..65535; 0 if the table is
 * full, and then events go to the thread's own track). The same name gives the same track.
 * Slices emitted on a track from several threads land on one lane per (track, thread) under
 * it, so a stream whose modules hop between threads still nests correctly on every lane. */
WEFT_API unsigned weft_track(const char *name);
#define WEFT_SCOPE_ON(track, name, ...) WEFT__SCOPE(track, "", name, ##__VA_ARGS__)
#define WEFT_BEGIN_ON(track, name, ...) WEFT__BEGIN(track, "", name, ##__VA_ARGS__)
#define WEFT_END_ON(track, name) WEFT__END(track, "", name)
#define WEFT_INSTANT_ON(track, name, ...) WEFT__INSTANT(track, "", name, ##__VA_ARGS__)

/* Async slices: begun on one thread, ended on any thread, matched by (name, id); each open
 * async slice gets its own lane under the process. */
#define WEFT_ASYNC_BEGIN(name, id) WEFT__ASYNC(WEFT_R_ASYNC_BEGIN, name, id)
#define WEFT_ASYNC_END(name, id) WEFT__ASYNC(WEFT_R_ASYNC_END, name, id)

/* Flows (arrows between slices, across threads). Call right after the begin (or instant) the
 * arrow leaves from / arrives at: weft_flow_out attaches to the most recent event of the
 * calling thread, weft_flow_in likewise ends the arrow there. The id is any 64-bit value the
 * two sides agree on. */
WEFT_API void weft_flow_out(uint64_t id);
WEFT_API void weft_flow_in(uint64_t id);

/* ============================================================================================
 * 3. Controlling the runtime
 * ========================================================================================== */

/* Options, one syntax everywhere: "key=value:key=value", from the WEFT_OPTIONS environment
 * variable (read at the first event or at weft_start) or from weft_configure(). Keys:
 *   enable=1|0            record at all (default 1)
 *   output=DIR            trace directory (default weft.data); {name} {host} {pid} expand
 *   name=NAME             component name, becomes the process name
 *   categories=GLOBS      comma list of globs; a leading '-' disables; default "*"
 *   filter=GLOBS          record only slices/instants whose name matches one glob; '-' excludes
 *                         (in both lists, and in weft record's -F/-N/-L, a pattern written
 *                         /like this/ is a POSIX extended regex, matched anywhere in the name)
 *   buffer_size=BYTES     at most this much buffer memory, allocated as needed (default 256M)
 *   chunk_size=BYTES      unit of hand-off to writers (default 1M; 4K..buffer_size/2)
 *   writers=N             writer threads (default 1, 1..16)
 *   writer_cpus=LIST      pin writer threads, e.g. 1 or 0-1
 *   compression=LEVEL     zstd level, 0 = none, negative = faster (default 1)
 *   overflow=drop|block   when all buffers are full: drop and count (default) or wait
 * and, read by the preload runtime of `weft record` (its --memory option sets them):
 *   memory=1              record every allocation (malloc & co., anonymous mmap)
 *   memory_stacks=1       with each allocation's call stack (frame pointers)
 *   memory_threshold=SIZE only blocks of at least SIZE bytes
 *   memory_sample=SIZE    a Poisson sample, one per SIZE bytes on average (totals scaled back)
 * An unknown key or bad value is reported through the log (one line naming the valid keys or
 * values), ignored, and tracing goes on with the default. weft_configure returns the number of
 * rejected settings (0 = all accepted) or a negative error. Settings after the trace started
 * only take effect for categories= and filter=. */
WEFT_API int weft_configure(const char *options);
WEFT_API int weft_option_set(const char *key, const char *value);

/* Start explicitly (otherwise the first event starts tracing). Returns 0, or -errno when the
 * trace directory cannot be created (then events are discarded and counted). */
WEFT_API int weft_start(void);
/* Hand the calling thread's buffered events to the writers now. */
WEFT_API void weft_flush(void);
/* Flush every thread, stop the writers, finish the trace. Called at exit automatically (and by
 * weft record's runtime at _exit, exec and fatal signals). Events emitted after it, or by other
 * threads while it runs, are not recorded and are counted in weft_stats.after_stop: written +
 * dropped + after_stop is every event emitted. */
WEFT_API int weft_stop(void);

/* Snapshot (issue 20's flight recorder and triggers): ask for the recent past to be kept.
 * Under `weft record --flight-recorder` the in-memory ring is written as DIR/snapshot-N; in a
 * normal recording (everything is on disk already) a `weft: snapshot` marker is recorded.
 * `reason` (may be NULL) is shown with the marker. Returns once the snapshot is written (with
 * `weft record --after T`, T later), 0, or -errno: -ENOTSUP where this build or run cannot take
 * one (tracing off or stopped), -EBUSY when a throttle (--max-snapshots, --min-interval)
 * refused it, the flight recorder's error when it could not write it (refusals are counted in
 * the trace; docs/flight-recorder.md). Thread-safe; not async-signal-safe. */
WEFT_API int weft_snapshot(const char *reason);

struct weft_stats {
	size_t sz;              /* set to sizeof(struct weft_stats) by the caller */
	uint64_t events;        /* events written to the trace (an event still in a buffer counts
	                         * once a writer has written it; after weft_stop, all of them) */
	uint64_t dropped;       /* events not recorded: no buffer free, the trace could not be
	                         * started or written, or a signal handler's event inside another */
	uint64_t after_stop;    /* events emitted after (or while) weft_stop ran: not recorded */
	uint64_t bytes_raw;     /* event bytes handed to writers */
	uint64_t bytes_written; /* bytes written to disk after compression */
	uint64_t chunks;        /* chunks written */
};
WEFT_API int weft_stats_get(struct weft_stats *st);

/* The directory this process writes to (NULL before start). */
WEFT_API const char *weft_output_dir(void);

enum weft_log_level { WEFT_LOG_ERROR = 0, WEFT_LOG_WARN = 1, WEFT_LOG_INFO = 2 };
typedef void (*weft_log_fn)(int level, const char *msg, void *ud);
/* Replace the log callback (NULL silences the library). */
WEFT_API void weft_set_log(weft_log_fn fn, void *ud);

WEFT_API const char *weft_strerror(int err);

/* ============================================================================================
 * 4. Memory: named heaps (memory pools, arenas, GPU caching allocators)
 * ========================================================================================== */

/* A heap the program manages itself, by name ("gpu0", "pool"). Its transactions go into the
 * calling thread's stream like every event, so each is attributed to the innermost open slice
 * of the thread (the module that triggered it); the converters show live and peak bytes per
 * heap as counters, the usage reports as counters too, and `weft report --memory` lists them.
 * Independent of the malloc interposer (weft record --memory): works in any traced program.
 *
 * weft_heap returns the heap of that name (the same pointer for the same name, from any
 * thread), or NULL when out of memory or name is NULL; the calls below accept NULL and then do
 * nothing. Thread-safe; not async-signal-safe (the first call for a name allocates).
 * weft_heap_alloc / weft_heap_free / weft_heap_usage: thread-safe and async-signal-safe, no
 * allocation, no lock, no syscall; when tracing is off they cost one load. A free of a pointer
 * the heap never saw is counted as unknown, never an error. weft_heap_usage reports the heap's
 * own figures: bytes live (handed out), cached (held by the pool, not handed out) and
 * requested (asked of the system). */
typedef struct weft_site weft_heap_t;
WEFT_API weft_heap_t *weft_heap(const char *name);

/* ============================================================================================
 * 5. Less common: events built by hand
 * ========================================================================================== */

/* A typed argument, built by WEFT_I/WEFT_U/WEFT_D/WEFT_B/WEFT_S/WEFT_P. */
struct weft_arg {
	struct weft_site *key;
	unsigned type; /* WEFT_R_ARG_* */
	union {
		int64_t i;
		uint64_t u;
		double d;
		const void *p;
		const char *s;
	} v;
};
/* Begin (type WEFT_R_BEGIN) or instant (WEFT_R_INSTANT) with arguments, as one atomic event. */
WEFT_API void weft_event_args(struct weft_site *s, unsigned type, unsigned track,
		     const struct weft_arg *args, unsigned nargs);
/* A complete slice (WEFT_COMPLETE's record) from start_ns to end_ns (weft_now_ns() times) with
 * arguments, as one atomic event: for values known only once the range is over. Nests like
 * WEFT_COMPLETE: record it after the range, not around slices the thread records later. */
WEFT_API void weft_complete_args(struct weft_site *s, uint64_t start_ns, uint64_t end_ns,
				 unsigned track, const struct weft_arg *args, unsigned nargs);

/* A site made at run time (an interpreter's function, say) with its source location: registers
 * s now, as its first event would, and records that it is at `file`:`line`; the converters
 * then give the site's slices and instants the arguments "file" and "line". Sites of the same
 * kind, category and name at different locations get different ids. s must be zeroed but for
 * kind, name and category (all of which, like s itself, must live for the whole run), and
 * this is its first use. Returns 1 when the site records, 0 when it does not (tracing off or
 * stopped, its category or name filtered out, out of memory), -EINVAL for a NULL s or file.
 * Thread-safe; not async-signal-safe (it may allocate). */
WEFT_API int weft_site_source(struct weft_site *s, const char *file, unsigned line);

struct weft_rate {
	struct weft_site site;
	uint64_t count; /* atomically added by weft_rate_add */
	uint64_t last;  /* ticks of the last point; CAS by the thread that emits it */
	struct weft_rate *next; /* the runtime's list of rates, flushed at weft_stop */
};
WEFT_API void weft_rate_add(struct weft_rate *r, uint64_t n);

/* ============================================================================================
 * Implementation of the macros (not API)
 * ========================================================================================== */
WEFT__INLINE uint64_t weft__i2w(int64_t v) { return (uint64_t)v; }
WEFT__INLINE uint64_t weft__d2w(double v) { union { double d; uint64_t u; } x; x.d = v; return x.u; }

#define WEFT__CAT2(a, b) a##b
#define WEFT__CAT(a, b) WEFT__CAT2(a, b)
/* A name unique in the translation unit: __COUNTER__ (GCC, clang), so two macros on one line
 * do not collide. It is expanded once per macro use and passed down as the argument `u`. */
#define WEFT__UNIQUE WEFT__CAT(weft__u, __COUNTER__)
#define WEFT__SITE_INIT(kind, cat, name) {0, kind, 0, 0, 0, name, cat, 0, 0}

#ifndef WEFT_DISABLE

/* Arguments are built by functions (not compound literals or designated initialisers) and
 * collected in a named local array, so the macros are the same in C and C++. */
WEFT__INLINE struct weft_arg weft__arg(struct weft_site *k, unsigned type, uint64_t u)
{
	struct weft_arg a;
	a.key = k;
	a.type = type;
	a.v.u = u;
	return a;
}
WEFT__INLINE struct weft_arg weft__arg_p(struct weft_site *k, unsigned type, const void *p)
{
	struct weft_arg a;
	a.key = k;
	a.type = type;
	a.v.p = p;
	return a;
}
#define WEFT__KEY(k) ({ static struct weft_site weft__k_ = WEFT__SITE_INIT(WEFT_KIND_ARG, "", k); &weft__k_; })
#define WEFT_I(k, x) weft__arg(WEFT__KEY(k), WEFT_R_ARG_I64, (uint64_t)(int64_t)(x))
#define WEFT_U(k, x) weft__arg(WEFT__KEY(k), WEFT_R_ARG_U64, (uint64_t)(x))
#define WEFT_D(k, x) weft__arg(WEFT__KEY(k), WEFT_R_ARG_F64, weft__d2w((double)(x)))
#define WEFT_B(k, x) weft__arg(WEFT__KEY(k), WEFT_R_ARG_BOOL, (x) ? 1u : 0u)
#define WEFT_S(k, x) weft__arg_p(WEFT__KEY(k), WEFT_R_ARG_STR, (const void *)(const char *)(x))
#define WEFT_P(k, x) weft__arg_p(WEFT__KEY(k), WEFT_R_ARG_PTR, (const void *)(x))

struct weft__scope {
	struct weft_site *site;
	unsigned track;
	unsigned exact; /* the site is WEFT__SITE_EXACT: CPUMEM records around its END */
};
/* The end of an EXACT slice (cpu_mem_exact=, trigger=): its CPUMEM record, the END, then the
 * trigger's check. */
WEFT__INLINE void weft__end_exact(uint32_t id, unsigned track)
{
	weft__cpumem(id, 1);
	weft__slice(weft__hdr(id, WEFT_R_END, 0, track));
	weft__exact_end(id);
}
WEFT__INLINE void weft__scope_end(struct weft__scope *sc)
{
	if (sc->site) {
		if (__builtin_expect(sc->exact != 0, 0))
			weft__end_exact(sc->site->id, sc->track);
		else
			weft__slice(weft__hdr(sc->site->id, WEFT_R_END, 0, sc->track));
	}
}
/* A slice's begin; `events` is 2 for a scope (its end is emitted by the cleanup only when
 * the begin was recorded, so where it is not, both are counted), 1 for WEFT_BEGIN. */
WEFT__INLINE struct weft__scope weft__begin(struct weft_site *s, unsigned track,
					    const struct weft_arg *a, unsigned n, unsigned events)
{
	struct weft__scope sc;
	int on = weft__on_n(s, events);
	sc.site = on ? s : 0;
	sc.track = track;
	sc.exact = on == 2;
	if (!on)
		return sc;
	if (n)
		weft_event_args(s, WEFT_R_BEGIN, track, a, n);
	else
		weft__slice(weft__hdr(s->id, WEFT_R_BEGIN, 0, track));
	if (__builtin_expect(on == 2, 0))
		weft__cpumem(s->id, 0);
	return sc;
}
/* the arguments as a local array `arr` after an unused first entry (so that it is never empty),
 * where they start, and their number */
#define WEFT__ARGS(arr, ...) const struct weft_arg arr[] = {{0, 0, {0}}, ##__VA_ARGS__}
#define WEFT__ARGP(arr) ((arr) + 1)
#define WEFT__NARGS(arr) ((unsigned)(sizeof(arr) / sizeof(arr[0]) - 1))

#define WEFT__SCOPE(track, cat, name, ...) WEFT__SCOPE_(WEFT__UNIQUE, track, cat, name, ##__VA_ARGS__)
#define WEFT__SCOPE_(u, track, cat, name, ...) \
	static struct weft_site WEFT__CAT(u, s) = WEFT__SITE_INIT(WEFT_KIND_EVENT, cat, name); \
	WEFT__ARGS(WEFT__CAT(u, a), ##__VA_ARGS__); \
	struct weft__scope WEFT__CAT(u, sc) __attribute__((cleanup(weft__scope_end), unused)) = \
		weft__begin(&WEFT__CAT(u, s), (track), WEFT__ARGP(WEFT__CAT(u, a)), WEFT__NARGS(WEFT__CAT(u, a)), 2)
#define WEFT__BEGIN(track, cat, name, ...) \
	do { \
		static struct weft_site weft__s_ = WEFT__SITE_INIT(WEFT_KIND_EVENT, cat, name); \
		WEFT__ARGS(weft__a_, ##__VA_ARGS__); \
		weft__begin(&weft__s_, (track), WEFT__ARGP(weft__a_), WEFT__NARGS(weft__a_), 1); \
	} while (0)
#define WEFT__END(track, cat, name) \
	do { \
		static struct weft_site weft__s_ = WEFT__SITE_INIT(WEFT_KIND_EVENT, cat, name); \
		int weft__on_ = weft__on(&weft__s_); \
		if (__builtin_expect(weft__on_ == 2, 0)) \
			weft__end_exact(weft__s_.id, (track)); \
		else if (weft__on_) \
			weft__slice(weft__hdr(weft__s_.id, WEFT_R_END, 0, (track))); \
	} while (0)
#define WEFT__INSTANT(track, cat, name, ...) \
	do { \
		static struct weft_site weft__s_ = WEFT__SITE_INIT(WEFT_KIND_EVENT, cat, name); \
		if (weft__on(&weft__s_)) { \
			WEFT__ARGS(weft__a_, ##__VA_ARGS__); \
			if (WEFT__NARGS(weft__a_)) \
				weft_event_args(&weft__s_, WEFT_R_INSTANT, (track), WEFT__ARGP(weft__a_), \
						WEFT__NARGS(weft__a_)); \
			else \
				weft__rec2(weft__hdr(weft__s_.id, WEFT_R_INSTANT, 0, (track))); \
		} \
	} while (0)
#define WEFT__COMPLETE(cat, name, t0, t1) \
	do { \
		static struct weft_site weft__s_ = WEFT__SITE_INIT(WEFT_KIND_EVENT, cat, name); \
		if (weft__on(&weft__s_)) { \
			uint64_t *weft__p_ = weft__reserve(24); \
			if (weft__p_) { \
				weft__p_[0] = (uint64_t)(t0); \
				weft__p_[1] = weft__hdr(weft__s_.id, WEFT_R_COMPLETE, 1, 0); \
				weft__p_[2] = (uint64_t)(t1); \
				weft__commit(weft__p_ + 3); \
			} \
		} \
	} while (0)
#define WEFT__COUNTER(name, unit_, dbl, type, word) \
	do { \
		static struct weft_site weft__s_ = {0, WEFT_KIND_COUNTER, dbl, 0, 0, name, "", unit_, 0}; \
		if (weft__on(&weft__s_)) \
			weft__rec3(weft__hdr(weft__s_.id, type, 1, 0), (word)); \
	} while (0)
#define WEFT__ASYNC(type, name, aid) \
	do { \
		static struct weft_site weft__s_ = WEFT__SITE_INIT(WEFT_KIND_EVENT, "", name); \
		if (weft__on(&weft__s_)) \
			weft__rec3(weft__hdr(weft__s_.id, type, 1, 0), (uint64_t)(aid)); \
	} while (0)

WEFT__INLINE void weft__rec4(uint64_t hdr, uint64_t a, uint64_t b)
{
	uint64_t t = weft__ticks();
	uint64_t *p = weft__reserve(32);
	if (__builtin_expect(p == 0, 0))
		return;
	p[0] = t;
	p[1] = hdr;
	p[2] = a;
	p[3] = b;
	weft__commit(p + 4);
}
WEFT__INLINE void weft_heap_alloc(weft_heap_t *h, const void *ptr, size_t size)
{
	if (h && weft__on(h))
		weft__rec4(weft__hdr(h->id, WEFT_R_ALLOC, 2, WEFT_MEM_HEAP_API), (uint64_t)(uintptr_t)ptr, size);
}
WEFT__INLINE void weft_heap_free(weft_heap_t *h, const void *ptr)
{
	if (h && weft__on(h))
		weft__rec3(weft__hdr(h->id, WEFT_R_FREE, 1, WEFT_MEM_HEAP_API), (uint64_t)(uintptr_t)ptr);
}
WEFT__INLINE void weft_heap_usage(weft_heap_t *h, uint64_t live, uint64_t cached, uint64_t requested)
{
	if (!h || !weft__on(h))
		return;
	uint64_t t = weft__ticks();
	uint64_t *p = weft__reserve(40);
	if (__builtin_expect(p == 0, 0))
		return;
	p[0] = t;
	p[1] = weft__hdr(h->id, WEFT_R_HEAP_USAGE, 3, WEFT_MEM_HEAP_API);
	p[2] = live;
	p[3] = cached;
	p[4] = requested;
	weft__commit(p + 5);
}

#else /* WEFT_DISABLE: everything compiles out, arguments are not evaluated */

/* sizeof marks a variable used without evaluating it: no unused-variable warnings */
#define WEFT__SCOPE(track, cat, name, ...) do { (void)sizeof(track); } while (0)
#define WEFT__BEGIN(track, cat, name, ...) do { (void)sizeof(track); } while (0)
#define WEFT__END(track, cat, name) do { (void)sizeof(track); } while (0)
#define WEFT__INSTANT(track, cat, name, ...) do { (void)sizeof(track); } while (0)
#define WEFT__COMPLETE(cat, name, t0, t1) do { (void)sizeof(t0); (void)sizeof(t1); } while (0)
#define WEFT__COUNTER(name, unit_, dbl, type, word) do { } while (0)
#define WEFT__ASYNC(type, name, aid) do { (void)sizeof(aid); } while (0)
#undef WEFT_RATE
#define WEFT_RATE(name, n) do { } while (0)
#define WEFT_I(k, x) 0
#define WEFT_U(k, x) 0
#define WEFT_D(k, x) 0
#define WEFT_B(k, x) 0
#define WEFT_S(k, x) 0
#define WEFT_P(k, x) 0
/* The functions too: a program built with -DWEFT_DISABLE needs no -lweft. They behave as with
 * enable=0 (weft_start returns -ECANCELED, 125 on Linux); arguments are not evaluated. */
WEFT__INLINE int weft__off_int(void) { return 0; }
WEFT__INLINE int weft__off_stats(struct weft_stats *st)
{
	if (!st || st->sz < sizeof(size_t))
		return -22; /* -EINVAL */
	size_t sz = st->sz < sizeof(*st) ? st->sz : sizeof(*st);
	unsigned char *b = (unsigned char *)st;
	for (size_t i = sizeof(size_t); i < sz; i++)
		b[i] = 0;
	return 0;
}
#define weft_process_name(n) ((void)0)
#define weft_thread_name(n) ((void)0)
#define weft_now_ns() ((uint64_t)0)
#define weft_note(t) ((void)0)
#define weft_track(n) (0u)
#define weft_flow_out(id) ((void)0)
#define weft_flow_in(id) ((void)0)
#define weft_configure(o) weft__off_int()
#define weft_option_set(k, v) weft__off_int()
#define weft_start() (-125)
#define weft_flush() ((void)0)
#define weft_stop() weft__off_int()
#define weft_snapshot(r) ((void)sizeof(r), weft__off_int())
#define weft_stats_get(st) weft__off_stats(st)
#define weft_output_dir() ((const char *)0)
#define weft_set_log(fn, ud) ((void)0)
#define weft_strerror(e) ("tracing compiled out (WEFT_DISABLE)")
#define weft_event_args(s, t, tr, a, n) ((void)0)
#define weft_complete_args(s, t0, t1, tr, a, n) ((void)0)
#define weft_site_source(s, f, l) ((void)sizeof(s), (void)sizeof(f), (void)sizeof(l), 0)
#define weft_rate_add(r, n) ((void)0)
#define weft_heap(n) ((weft_heap_t *)0)
#define weft_heap_alloc(h, p, n) ((void)sizeof(h), (void)sizeof(p), (void)sizeof(n))
#define weft_heap_free(h, p) ((void)sizeof(h), (void)sizeof(p))
#define weft_heap_usage(h, l, c, r) ((void)sizeof(h), (void)sizeof(l), (void)sizeof(c), (void)sizeof(r))

#endif /* WEFT_DISABLE */

#ifdef __cplusplus
}
#endif
#endif
