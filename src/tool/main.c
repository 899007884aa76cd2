/*
 * main.c - the `weft` command: a table of subcommands, each in its own cmd-<name>.c with its
 * own options and --help (the model is perf's builtin commands).
 */
#include "tool/cmd.h"
#include "format/reader.h"
#include <errno.h>
#include <limits.h>
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
	{"open", cmd_open, "show a trace in the Perfetto UI: serve it once to ui.perfetto.dev and open the browser"},
	{"info", cmd_info, "show processes, threads, events, drops, time span and sizes of a trace"},
	{"export", cmd_export, "write a trace as a SQLite database (slices, allocations, accesses)"},
	{"plot", cmd_plot_exec, "draw a trace's memory as PNG: address x time, or live bytes by allocating slice"},
	{"estimate", cmd_estimate, "what recording costs: events and bytes per function, size for a duration, a filter"},
	{"overhead", cmd_overhead, "run a program untraced and traced, interleaved; compare time and memory"},
	{"top", cmd_top, "watch a run live: calls open now, self time, events, drops, MPI waits per rank and thread"},
	{"snapshot", cmd_control, "ask the weft record writing DIR for a snapshot now (docs/control.md)"},
	{"enable", cmd_control, "enable recording in the weft record writing DIR"},
	{"disable", cmd_control, "disable recording in the weft record writing DIR (events counted, not recorded)"},
	{"stop", cmd_control, "finish the trace of the weft record writing DIR; the program runs on"},
};

/* `weft plot ...`: the same arguments to weft-plot, found beside weft or in LIBDIR/weft. */
int cmd_plot_exec(int argc, char **argv)
{
	char path[PATH_MAX];
	if (!weft_cli_find_file("weft-plot", path, sizeof(path))) {
		weft_cli_error("plot", "weft-plot not found next to the weft executable or in its lib/weft");
		return WEFT_EXIT_FAIL;
	}
	(void)argc;
	argv[0] = path;
	execv(path, argv);
	weft_cli_error("plot", "cannot run %s: %s", path, strerror(errno));
	return WEFT_EXIT_FAIL;
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
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name)) {
			weft_cli_set_oom(commands[i].name);
			weft_cli_exit_setup();
			return weft_cli_exit(commands[i].fn(argc - 1, argv + 1));
		}
	fprintf(stderr, "weft: unknown command '%s' (try 'weft --help')\n", argv[1]);
	return WEFT_EXIT_USAGE;
}
