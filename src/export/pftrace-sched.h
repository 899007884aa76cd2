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
