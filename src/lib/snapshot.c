/*
 * snapshot.c - what a snapshot request does, whoever makes it (weft_snapshot() in the program,
 * the control command, a signal, a slow-slice trigger, a fatal signal, the program's exit).
 * Not built yet: every request is refused with -ENOTSUP (issue 20 builds the throttles, the
 * marker and the flight recorder's dump here).
 */
#include "internal.h"
#include <errno.h>

int weft_snapshot_take(const char *reason, enum weft_snap_origin origin)
{
	(void)origin;
	int n = weft_flight_dump(reason, weft__ticks(), 0); /* H2a's stand-in; H2b owns this file */
	return n < 0 ? n : 0;
}

int weft_snapshot(const char *reason)
{
	return weft_snapshot_take(reason, WEFT_SNAP_API);
}
