/* weftbench_tp.h - the LTTng-UST tracepoints the benchmark compares weft with: a slice begin,
 * a slice end and an instant, each carrying one small integer like weft's records. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER weftbench

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./weftbench_tp.h"

#if !defined(WEFTBENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define WEFTBENCH_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(weftbench, begin, LTTNG_UST_TP_ARGS(int, id),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int, id, id)))
LTTNG_UST_TRACEPOINT_EVENT(weftbench, end, LTTNG_UST_TP_ARGS(int, id),
	LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int, id, id)))

#endif

#include <lttng/tracepoint-event.h>
