/*
 * pftrace-sched.h - scheduling in a .pftrace (pftrace-sched.c), called by pftrace.c: the
 * SCHED records of a sched reader's stream as ftrace event bundles per CPU (trace_processor
 * fills `sched` and `thread_state` from them), the program's own context switches (the
 * fallback without root) as on/off-CPU slices on a track per thread, and the system_info
 * packet the importer needs to decode prev_state. `mix` is pftrace.c's uuid hash.
 */
#ifndef WEFT_PFTRACE_SCHED_H
#define WEFT_PFTRACE_SCHED_H

#include "export/model.h"
#include "export/pb.h"

struct weft_pf_sched; /* one per sequence that holds SCHED records */

/* Where the CPUs' switch chains stand at the end of each stream of scheduling tracepoint
 * records, read before the streams are encoded (in parallel): a program that exec'd has one
 * stream per image, with a gap between them in which nothing was recorded. NULL when the trace
 * has fewer than two such streams. */
struct weft_pf_sched_ends;
struct weft_pf_sched_ends *weft_pf_sched_scan(const struct weft_trace *t);
void weft_pf_sched_ends_free(struct weft_pf_sched_ends *e);
/* Before the stream th of p is walked: *s (made here when needed) continues each CPU's chain
 * from the stream before it on that CPU. ends may be NULL. */
void weft_pf_sched_join(struct weft_pf_sched **s, const struct weft_pf_sched_ends *ends, const struct weft_proc *p,
			const struct weft_thread_data *th);
/* One SCHED event, into an open bundle of sequence seq (*s made at the first). */
void weft_pf_sched_event(struct weft_pf_sched **s, struct pb *b, uint32_t seq, const struct weft_ev *ev);
/* Closes the open bundle (before b is written out). */
void weft_pf_sched_close(struct weft_pf_sched *s, struct pb *b);
/* At the end of the sequence: the own-switch slices, on tracks under the process; then frees s. */
void weft_pf_sched_finish(struct weft_pf_sched *s, struct pb *b, uint32_t seq, const struct weft_proc *p,
			  uint64_t proc_uuid, uint64_t last_ns, uint64_t (*mix)(uint64_t, uint64_t));
/* The system_info packet (uname of the recording machine) when a process recorded the
 * scheduling tracepoints. */
void weft_pf_sched_system_info(struct pb *b, const struct weft_trace *t);

#endif
