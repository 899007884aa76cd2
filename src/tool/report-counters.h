/*
 * report-counters.h - `weft report --counters`: per-slice counter deltas per name.
 */
#ifndef WEFT_REPORT_COUNTERS_H
#define WEFT_REPORT_COUNTERS_H

#include "format/reader.h"

/* Prints the table (fmt 0 text, 1 csv, 2 json; at most limit rows when > 0). Returns the
 * command's exit status (1, with one line, when the trace has no counters). */
int weft_report_counters(const struct weft_trace *t, int fmt, long limit);

#endif
