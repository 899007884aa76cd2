/*
 * main.c - the `weft` command: a table of subcommands, each in its own cmd-<name>.c with its
 * own options and --help (the model is perf's builtin commands).
 */
#include "tool/cmd.h"
#include "format/reader.h"
#include <stdlib.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *summary;
} commands[] = {
	{"record", cmd_record, "run a program with tracing injected (functions, fork, exec) and record it"},
	{"report", cmd_report, "functions and slices by total and self time, calls, tree"},
	{"convert", cmd_convert, "convert a trace directory to .pftrace (Perfetto) or Chrome .json"},
	{"info", cmd_info, "show processes, threads, events, drops, time span and sizes of a trace"},
	{"export", cmd_export, "write a trace as a SQLite database (slices, allocations, accesses)"},
	{"plot", cmd_plot, "draw a trace's memory as PNG: address x time, or live bytes per heap"},
	{"overhead", cmd_overhead, "run a program untraced and traced, interleaved; compare time and memory"},
};

void weft_cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "weft: %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
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

static void usage(FILE *f)
{
	fprintf(f, "usage: weft COMMAND [OPTIONS] [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'weft COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return WEFT_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "help") && argc > 2) { /* weft help CMD = weft CMD --help */
		for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			if (!strcmp(argv[2], commands[i].name)) {
				char *args[] = {argv[2], (char *)"--help", NULL};
				return commands[i].fn(2, args);
			}
		fprintf(stderr, "weft: help: unknown command '%s' (try 'weft --help')\n", argv[2]);
		return WEFT_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return WEFT_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("weft 0.1\n");
		return WEFT_EXIT_OK;
	}
	weft_set_oom_handler(on_oom);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name)) {
			running = commands[i].name;
			return commands[i].fn(argc - 1, argv + 1);
		}
	fprintf(stderr, "weft: unknown command '%s' (try 'weft --help')\n", argv[1]);
	return WEFT_EXIT_USAGE;
}
