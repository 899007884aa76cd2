/*
 * pftrace-counter.h - one point of a Perfetto counter track: a TracePacket holding a
 * TrackEvent of TYPE_COUNTER on the track's uuid, the value as integer or double. Shared by
 * the .pftrace's memory and system parts (the thread's own counters go through pftrace.c's
 * packet encoder, which interns and batches).
 */
#ifndef WEFT_EXPORT_PFTRACE_COUNTER_H
#define WEFT_EXPORT_PFTRACE_COUNTER_H

#include "export/pb.h"

enum {
	PFC_TRACE_PACKET = 1, PFC_TP_TIMESTAMP = 8, PFC_TP_SEQ_ID = 10, PFC_TP_TRACK_EVENT = 11,
	PFC_TE_TYPE = 9, PFC_TE_TRACK_UUID = 11, PFC_TE_COUNTER = 30, PFC_TE_DCOUNTER = 44,
	PFC_TYPE_COUNTER = 4,
};

static inline size_t weft_pf_counter_open(struct pb *b, uint32_t seq, uint64_t ts, uint64_t uuid, size_t *te)
{
	size_t pk = pb_begin(b, PFC_TRACE_PACKET);
	pb_varint(b, PFC_TP_TIMESTAMP, ts);
	pb_varint(b, PFC_TP_SEQ_ID, seq);
	*te = pb_begin(b, PFC_TP_TRACK_EVENT);
	pb_varint(b, PFC_TE_TYPE, PFC_TYPE_COUNTER);
	pb_varint(b, PFC_TE_TRACK_UUID, uuid);
	return pk;
}

/* An integer point. */
static inline void weft_pf_counter_point(struct pb *b, uint32_t seq, uint64_t ts, uint64_t uuid, uint64_t v)
{
	size_t te, pk = weft_pf_counter_open(b, seq, ts, uuid, &te);
	pb_varint(b, PFC_TE_COUNTER, v);
	pb_end(b, te);
	pb_end(b, pk);
}

/* A double point. */
static inline void weft_pf_counter_point_d(struct pb *b, uint32_t seq, uint64_t ts, uint64_t uuid, double v)
{
	size_t te, pk = weft_pf_counter_open(b, seq, ts, uuid, &te);
	pb_double(b, PFC_TE_DCOUNTER, v);
	pb_end(b, te);
	pb_end(b, pk);
}

#endif
