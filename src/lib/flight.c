/*
 * flight.c - the flight recorder (issue 20). PLACEHOLDER: H2a's branch (h20/ring) replaces this
 * whole file with the in-memory ring and its dump; until then no flight recorder runs, so every
 * snapshot request records its marker only (snapshot.c).
 */
#include "internal.h"

int weft_flight_dump(const char *reason, uint64_t trigger_ticks, uint64_t after_ns)
{
	(void)reason;
	(void)trigger_ticks;
	(void)after_ns;
	return 0; /* no flight recorder in this process */
}

int weft_flight_active(void)
{
	return 0;
}
