/*
 * messages.h - arrows between processes, checked on the aligned timeline (`weft info`): a
 * message is a FLOW out whose FLOW in (same id) is on another process; it goes back in time
 * when the slice that receives it ends before the slice that sends it begins (clocks of two
 * hosts aligned wrong). Flows whose other end is in no process of the trace are counted too
 * (the GPU's arrows, whose device end is no flow record, are left out).
 */
#ifndef WEFT_MESSAGES_H
#define WEFT_MESSAGES_H

#include <stdint.h>

struct weft_trace;

struct weft_msg_stats {
	uint64_t messages;   /* flow pairs across processes */
	uint64_t across_hosts; /* of which between hosts */
	uint64_t backwards;  /* of which the receiving slice ends before the sending one begins */
	uint64_t unpaired;   /* flow ids with only an out or only an in */
	int64_t worst_ns;    /* the most backwards (receiving end - sending begin), 0 when none */
};

void weft_messages_check(const struct weft_trace *t, struct weft_msg_stats *out);

#endif
