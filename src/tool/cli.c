/*
 * cli.c - what every weft executable shares: one-line errors on stderr ("weft: CMD: why"),
 * the warning for chunks that did not decode, and the out-of-memory handler of the readers
 * (one line, exit 1, never SIGABRT), and `weft record` ending the way its program did.
 */
#include "tool/cmd.h"
#include "format/reader.h"
#include "export/model.h" /* WEFT_UI_LEVELS */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/resource.h>
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

int weft_cli_parse_int(const char *s, long long lo, long long hi, long long *v)
{
	/* strtoll alone takes " 7", "+7", "7x" (with end) and wraps nothing but saturates: the
	 * whole string must be digits, a '-' only where lo allows one, and within lo..hi */
	const char *d = s + (*s == '-' && lo < 0);
	if (*d < '0' || *d > '9')
		return -1;
	char *end;
	errno = 0;
	long long x = strtoll(s, &end, 10);
	if (*end || errno || x < lo || x > hi)
		return -1;
	*v = x;
	return 0;
}

int weft_cli_parse_hex(const char *s, unsigned long long *v)
{
	const char *d = s + (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) * 2;
	if (!((*d >= '0' && *d <= '9') || (*d >= 'a' && *d <= 'f') || (*d >= 'A' && *d <= 'F')))
		return -1;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(d, &end, 16);
	if (*end || errno)
		return -1;
	*v = x;
	return 0;
}

unsigned long long weft_cli_ui_events(void)
{
	const char *e = getenv("WEFT_UI_EVENTS");
	char *end;
	if (!e || !*e)
		return WEFT_UI_EVENTS;
	unsigned long long n = strtoull(e, &end, 10);
	return *end ? WEFT_UI_EVENTS : n;
}

void weft_cli_warn_deep(const char *cmd, unsigned long long tracks)
{
	if (tracks)
		weft_cli_error(cmd, "warning: slices nested more than %d deep on %llu track%s: the Perfetto UI "
			       "nests %d levels and leaves the deeper slices unfinished, at depth 0; weft report "
			       "and weft export --sqlite have every level", WEFT_UI_LEVELS, tracks,
			       tracks == 1 ? "" : "s", WEFT_UI_LEVELS);
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

static int program_signal; /* the signal that ended the recorded program (0: none) */
static int die_of;         /* ... and weft is to end of it too, once its exit handlers ran */

void weft_cli_program_signal(int sig)
{
	program_signal = sig;
}

/* Last of the exit handlers (registered first): weft dies of the program's signal, so a shell,
 * make or a Python parent sees what it would have seen untraced (WIFSIGNALED, "Segmentation
 * fault", a script that stops at Ctrl-C). Without a core of its own: the program's is the one
 * that matters, and weft's would overwrite it in the same directory. */
static void die_of_signal(void)
{
	int sig = die_of;
	if (!sig)
		return;
	fflush(NULL);
	struct rlimit none = {0, 0};
	setrlimit(RLIMIT_CORE, &none);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(sig, SIG_DFL);
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
}

void weft_cli_exit_setup(void)
{
	atexit(die_of_signal);
}

int weft_cli_exit(int rc)
{
	if (program_signal && rc == 128 + program_signal)
		die_of = program_signal;
	return rc;
}
