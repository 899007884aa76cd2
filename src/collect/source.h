/*
 * source.h - the one face of every data source: what records data that does not come from the
 * program's own calls to weft (allocations, memory accesses, watchpoints, scheduling, perf
 * counters, the system sampler, CUPTI). Each source is one file that defines one
 * `const struct weft_source weft_source_NAME`, and one row in the table of collect/sources.c;
 * the runtime (lib/session.c) drives every row through the same steps, in the table's order:
 *
 *   start   (trace start, under weft_g.lock, inside the runtime, the run already on): for each
 *           row whose option is set (wanted), open - which says 0, WEFT_SOURCE_IDLE (nothing to
 *           do here: another process of the session records it, or it starts later) or
 *           -errno with the reason, logged as the one line "LABEL unavailable: why" - then
 *           start. A row is opened at most once per process (a second start is refused);
 *   drain   (weft_stop, before the run stops, outside weft_g.lock, on every way out: exit,
 *           _exit, exec, a fatal signal - weft_g.in_signal): the last samples into the trace
 *           while it still takes events, in table order;
 *   stop    (weft_stop, the run stopped, under weft_g.lock, before the writers flush): in
 *           reverse table order, once per started row; stop writes the source's totals;
 *   fork    prepare in reverse table order (after weft_g.lock, before the runtime's own
 *           locks), parent and child in table order (child: once the child's trace restarted
 *           or was found off, inside the runtime), for started rows only.
 *
 * The order of the table is the order of those steps: the system sampler first (its thread
 * samples while the program's collectors start, and stops last, so its final readings cover
 * their stop), CUPTI next (its drain flushes CUDA's buffers before the perf rings' drain), then
 * the preload runtime's own sources: memory, mem_access, watch, sched, counters. Sources that
 * interpose symbols (the allocation functions, pthread_create) exist only in
 * libweft-preload.so: their rows are compiled in there only (WEFT_PRELOAD).
 *
 * A new source: one file in src/collect/ defining weft_source_NAME (name, option, wanted,
 * open, stop at least), one row in WEFT_SOURCE_ROWS (collect/sources.c), the file in
 * CMakeLists.txt, and its option in lib/config.c's table.
 */
#ifndef WEFT_COLLECT_SOURCE_H
#define WEFT_COLLECT_SOURCE_H

#include <stddef.h>

/* open's answer when there is nothing to do in this process, and no error either. */
#define WEFT_SOURCE_IDLE 1

struct weft_source {
	const char *name;   /* as messages and docs name it: "memory", "sched", ... */
	const char *option; /* the option (lib/config.c key) that enables it; several: comma-separated */
	int (*wanted)(void); /* is that option set (weft_cfg)? */
	/* the words before "unavailable: why" (NULL: "NAME:"), e.g. "mem-access=ibs:" */
	void (*label)(char *buf, size_t n);
	/* Probes and opens what the source reads: 0, WEFT_SOURCE_IDLE, or -errno with the reason
	 * in why (then nothing of it runs). May log a notice of its own (a fallback taken). */
	int (*open)(char *why, size_t n);
	void (*start)(void); /* begins collecting (threads); NULL: open started it */
	void (*drain)(void); /* the last samples, while the run takes events; NULL: none */
	void (*fork_prepare)(void); /* NULL: none (each of the three) */
	void (*fork_parent)(void);
	void (*fork_child)(void);
	void (*stop)(void); /* stops collecting, writes the totals (weft_g.in_signal: free nothing) */
	/* One line on what it records here (`weft info` prints it for each source the run
	 * started, beside the source's own metadata) */
	void (*describe)(char *buf, size_t n);
};

/* The state of each row in a process (enum weft_source_state). */
enum weft_source_state {
	WEFT_SRC_NEW = 0,     /* not considered yet */
	WEFT_SRC_OFF,         /* its option is not set */
	WEFT_SRC_OPENING,     /* open and start are running (one caller) */
	WEFT_SRC_IDLE,        /* open said WEFT_SOURCE_IDLE: a late start may still open it */
	WEFT_SRC_UNAVAILABLE, /* open failed (said once) */
	WEFT_SRC_STARTED,
	WEFT_SRC_STOPPED,
};

/* A table and its rows' states (the runtime's: weft_sources(); tests build their own). */
struct weft_source_set {
	const struct weft_source *const *row;
	unsigned n;
	_Atomic int *state; /* n entries, enum weft_source_state */
};

const struct weft_source_set *weft_sources(void);
/* Trace start: opens and starts every wanted row still NEW, in order. */
void weft_sources_start(const struct weft_source_set *s);
/* A row started later than the trace (CUDA's injection entry calls it for "gpu"): opens and
 * starts it if it is wanted and NEW or IDLE. 0 when it runs, -EALREADY when it ran already,
 * -ENOENT for no such row, else open's answer. */
int weft_sources_start_late(const struct weft_source_set *s, const char *name);
void weft_sources_drain(const struct weft_source_set *s);
void weft_sources_stop(const struct weft_source_set *s);
void weft_sources_fork_prepare(const struct weft_source_set *s);
void weft_sources_fork_parent(const struct weft_source_set *s);
void weft_sources_fork_child(const struct weft_source_set *s);
/* The describe lines of the started rows, "NAME: line\n" each, into buf. Returns the length. */
size_t weft_sources_describe(const struct weft_source_set *s, char *buf, size_t n);

#endif
