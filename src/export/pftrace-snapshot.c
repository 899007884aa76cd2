/*
 * pftrace-snapshot.c - the `weft: snapshot` markers of a .pftrace: each SNAPSHOT metadata
 * record of a process (a snapshot request, taken or refused) as an instant on the process's
 * track, so the Perfetto UI shows when and why the recent past was kept, whatever thread or
 * signal asked for it. Written on sequence 1 with the track descriptors, names inline (no
 * interning state needed).
 */
#include "export/pftrace-snapshot.h"
#include "format/format.h"

enum {
	TRACE_PACKET = 1, TP_TIMESTAMP = 8, TP_SEQ_ID = 10, TP_TRACK_EVENT = 11,
	TE_DEBUG = 4, TE_TYPE = 9, TE_TRACK_UUID = 11, TE_NAME = 23,
	DA_UINT = 3, DA_STRING = 6, DA_NAME = 10, TYPE_INSTANT = 3,
};

static void arg_str(struct pb *b, const char *key, const char *v)
{
	size_t da = pb_begin(b, TE_DEBUG);
	pb_string(b, DA_NAME, key);
	pb_string(b, DA_STRING, v);
	pb_end(b, da);
}

void weft_pf_snapshots(struct pb *b, const struct weft_proc *p, uint64_t proc)
{
	for (size_t i = 0; i < p->nsnaps; i++) {
		const struct weft_snap_mark *m = &p->snaps[i];
		size_t pk = pb_begin(b, TRACE_PACKET);
		pb_varint(b, TP_TIMESTAMP, weft_proc_ns(p, m->ticks));
		pb_varint(b, TP_SEQ_ID, 1);
		size_t te = pb_begin(b, TP_TRACK_EVENT);
		pb_varint(b, TE_TYPE, TYPE_INSTANT);
		pb_varint(b, TE_TRACK_UUID, proc);
		pb_string(b, TE_NAME, m->refused ? "weft: snapshot refused" : "weft: snapshot");
		arg_str(b, "reason", m->reason ? m->reason : "");
		arg_str(b, "origin", weft_snap_origin_name(m->origin));
		if (m->refused) {
			arg_str(b, "why", weft_snap_refusal_name(m->refused));
		} else if (m->number) {
			size_t da = pb_begin(b, TE_DEBUG);
			pb_string(b, DA_NAME, "snapshot");
			pb_varint(b, DA_UINT, m->number);
			pb_end(b, da);
		}
		pb_end(b, te);
		pb_end(b, pk);
	}
}
