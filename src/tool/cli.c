/*
 * cli.c - what every weft executable shares: one-line errors on stderr ("weft: CMD: why"),
 * the warning for chunks that did not decode, and the out-of-memory handler of the readers
 * (one line, exit 1, never SIGABRT).
 */
#include "tool/cmd.h"
#include "format/reader.h"
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <unistd.h>

void weft_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "weft: %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int weft_cli_table_format(const char *cmd, const char *arg)
{
	static const char *const names[] = {"text", "csv", "json"};
	for (int i = 0; i < 3; i++)
		if (!strcmp(arg, names[i]))
			return i;
	weft_cli_error(cmd, "unknown format '%s' (valid: text, csv, json)", arg);
	return -1;
}

void weft_cli_warn_undecoded(const char *cmd, unsigned long long n, const char *why, const char *of)
{
	weft_cli_error(cmd, "warning: %llu chunks could not be decoded (%s); their events are left out%s%s", n,
		       why ? why : "?", of ? " of " : "", of ? of : "");
}

/* Out of memory inside the reader or a converter: one line, exit 1 (never SIGABRT). What
 * was written so far stays, and is said to be incomplete. */
static const char *running = "weft";
static void on_oom(const char *what)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "weft: %s: out of memory %s; the output is incomplete\n", running, what);
	if (n > 0) {
		ssize_t r = write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		(void)r;
	}
	_exit(WEFT_EXIT_FAIL);
}

void weft_cli_set_oom(const char *cmd)
{
	running = cmd;
	weft_set_oom_handler(on_oom);
}

const char *weft_cli_find_file(const char *name, char *out, size_t n)
{
	char exe[PATH_MAX - 64];
	ssize_t l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (l <= 0)
		return NULL;
	exe[l] = 0;
	char *slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = 0;
#ifndef WEFT_PRELOAD_REL
#define WEFT_PRELOAD_REL "../lib/weft"
#endif
	/* the build tree has it beside the executable; an install in LIBDIR/weft, found relative
	 * to BINDIR, so a relocated install prefix still works */
	const char *cands[] = {"%s/%s", "%s/" WEFT_PRELOAD_REL "/%s", "%s/../lib/weft/%s"};
	for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
		snprintf(out, n, cands[i], exe, name);
		if (access(out, R_OK) == 0)
			return out;
	}
	return NULL;
}
