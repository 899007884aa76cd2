/* report-memory.h - `weft report --memory` (report-memory.c), called by cmd-report.c. */
#ifndef WEFT_REPORT_MEMORY_H
#define WEFT_REPORT_MEMORY_H

#include "format/reader.h"

/* Select the sort column by name; -1 if unknown. */
int weft_report_memory_sort(const char *key);
const char *weft_report_memory_sort_keys(void);
/* fmt: 0 text, 1 csv, 2 json. Returns an exit code. */
int weft_report_memory(const struct weft_trace *t, int fmt, long limit, int leaks, int full_names);

#endif
