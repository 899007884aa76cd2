/*
 * timewin.c - the `--time FROM:TO` option shared by convert, report and export: a window of
 * the trace, in seconds from its start (its earliest event: docs/time-window.md; in a snapshot
 * the re-emitted begin of its outermost open slice), units allowed, read through the chunks' time
 * index (format/window.c). Parsing only: the reader checks the window against the trace.
 * `weft plot` parses its --time here too (its window counts from the process's first memory
 * event instead), so every command reads the same times and refuses the same ones alike.
 */
#include "tool/timewin.h"
#include "tool/cmd.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "2.5", "2500ms", "1.5e3us", "2m": ns in *ns; -1 when it is not a time. */
static int parse_time(const char *s, size_t len, uint64_t *ns)
{
	char buf[64];
	if (!len || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = 0;
	/* decimal only: strtod also reads hexadecimal (0x10 would be 16 s), inf and nan */
	if (!((buf[0] >= '0' && buf[0] <= '9') || buf[0] == '.') || strpbrk(buf, "xX"))
		return -1;
	char *end;
	errno = 0;
	double v = strtod(buf, &end);
	if (end == buf || errno || !isfinite(v) || v < 0)
		return -1;
	static const struct { const char *unit; double mul; } units[] = {
		{"", 1e9}, {"s", 1e9}, {"ms", 1e6}, {"us", 1e3}, {"ns", 1}, {"m", 60e9}, {"min", 60e9}, {"h", 3600e9}};
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			double x = v * units[i].mul;
			if (x >= 1.8e19)
				return -1;
			*ns = (uint64_t)(x + 0.5);
			return 0;
		}
	return -1;
}

#define WEFT_TIME_EXAMPLES "such as 2.5:3.5, 2500ms:3500ms, :5s or 10s:"

int weft_cli_parse_time(const char *cmd, const char *arg, struct weft_window_req *req)
{
	return weft_cli_parse_time_from(cmd, arg, "the trace's start", req);
}

int weft_cli_parse_time_from(const char *cmd, const char *arg, const char *origin, struct weft_window_req *req)
{
	memset(req, 0, sizeof(*req));
	const char *colon = strchr(arg, ':');
	if (!colon || strchr(colon + 1, ':') || (colon == arg && !colon[1])) {
		weft_cli_error(cmd, "--time takes FROM:TO in seconds from %s, " WEFT_TIME_EXAMPLES ", not '%s'",
			       origin, arg);
		return -1;
	}
	size_t la = (size_t)(colon - arg), lb = strlen(colon + 1);
	int bad_a = la && parse_time(arg, la, &req->from_ns);
	int bad_b = !bad_a && lb && parse_time(colon + 1, lb, &req->to_ns);
	if (bad_a || bad_b) {
		const char *s = bad_a ? arg : colon + 1;
		int n = (int)(bad_a ? la : lb);
		weft_cli_error(cmd, "--time %s: '%.*s' is not a time: decimal seconds, or a number and a unit (ns, us, "
			       "ms, s, m, h), " WEFT_TIME_EXAMPLES, arg, n, s);
		return -1;
	}
	req->from_set = la > 0;
	req->to_set = lb > 0;
	if (req->from_set && req->to_set && req->to_ns <= req->from_ns) {
		weft_cli_error(cmd, "--time %s: the window's end must come after its start", arg);
		return -1;
	}
	return 0;
}

void weft_cli_window_text(const struct weft_trace *t, char *buf, size_t n)
{
	const struct weft_window_info *w = &t->window;
	snprintf(buf, n, "%.6g s to %.6g s of %.6g s", (double)(w->from_ns - w->trace_first_ns) / 1e9,
		 (double)(w->to_ns - w->trace_first_ns) / 1e9, (double)(w->trace_last_ns - w->trace_first_ns) / 1e9);
}
