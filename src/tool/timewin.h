/* timewin.h - `--time FROM:TO` of convert, report, export and plot (timewin.c, docs/time-window.md). */
#ifndef WEFT_TIMEWIN_H
#define WEFT_TIMEWIN_H
#include "format/reader.h"

/* Parses FROM:TO (seconds from the trace's start, or with a unit ns, us, ms, s, m, h; either end
 * may be left out: ":5s", "10s:"). 0, or -1 after printing "weft: CMD: ..." (a usage error). */
int weft_cli_parse_time(const char *cmd, const char *arg, struct weft_window_req *req);
/* The same, for a window counted from another origin (weft plot: "the process's first memory
 * event"), which the usage error names. */
int weft_cli_parse_time_from(const char *cmd, const char *arg, const char *origin, struct weft_window_req *req);
/* "2.5 s to 3.5 s of 60 s" for the window a trace was read with (for summaries and reports). */
void weft_cli_window_text(const struct weft_trace *t, char *buf, size_t n);

#endif
