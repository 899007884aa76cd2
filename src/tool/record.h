/*
 * record.h - the rooms of `weft record` besides cmd-record.c (which parses the command line,
 * prepares the trace directory, and converts and sums up at the end):
 *   record-options.c  the help text and the checks of the values record passes on to the
 *                     runtime as WEFT_OPTIONS keys (--memory, --counters, --python, ...);
 *   record-launch.c   the program's start and its wait: the environment (LD_PRELOAD,
 *                     WEFT_OPTIONS, PYTHONPATH, CUDA's injection), signals passed on, fork and
 *                     exec; setuid programs.
 * Also record-control.c (--control, --delay), record-trigger.c and record-flight.c (cmd.h).
 */
#ifndef WEFT_TOOL_RECORD_H
#define WEFT_TOOL_RECORD_H

#include <stddef.h>
#include <stdio.h>

/* ---- record-options.c ---- */

void weft_record_help(FILE *f);
/* --python[=MODES] bits (WEFT_PYTHON) */
enum { PY_CALLS = 1, PY_C_CALLS = 2, PY_TASKS = 4 };
/* --python[=MODES]: MODES a comma-separated list of calls, c-calls, tasks (calls is implied by
 * the others; no value means calls). Adds the bits to *modes; -1 for an unknown word. */
int weft_record_python_modes(const char *arg, int *modes);
/* A value for one of the options record passes on: 0, or -1 after saying why (a usage error,
 * before anything runs). */
int weft_record_check_option(const char *flag, const char *key, const char *val);
/* Options record passes on to the runtime as WEFT_OPTIONS keys, by getopt letter. */
struct weft_record_passed {
	int opt;
	const char *flag, *key;
};
const struct weft_record_passed *weft_record_passed_option(int opt);
/* --memory[=threshold:SIZE,sample:SIZE,stacks] as WEFT_OPTIONS keys appended to out: 0 or -1
 * (said). */
int weft_record_memory_options(const char *arg, char *out, size_t n);
/* --counters=LIST: 0, WEFT_EXIT_USAGE or WEFT_EXIT_FAIL (said). */
int weft_record_counters_check(const char *list);

/* ---- record-launch.c ---- */

/* PYTHONPATH for the program: the weft package's directory (and with --python the start-up
 * hook's before it) ahead of the user's; "" when weft has no Python package. -1 (said) when
 * --python was asked of a weft built without its module. */
int weft_record_python_path(int python, char *out, size_t n);
/* Is running this program setuid/setgid to someone else (the loader then ignores LD_PRELOAD)? */
int weft_record_is_setid(const char *prog);
struct weft_record_launch {
	const char *preload; /* libweft-preload.so */
	const char *options; /* WEFT_OPTIONS */
	const char *dir;     /* WEFT_SESSION: the trace directory */
	const char *job_id;  /* WEFT_JOB_ID, or NULL */
	const char *pypath;  /* PYTHONPATH, or "" */
	int gpu;             /* CUDA_INJECTION64_PATH names the preload (unless set) */
	int python;          /* PY_* bits for WEFT_PYTHON, or 0 */
};
/* Runs argv[0] with argv and waits it out (serving the control channel): 0 with its wait
 * status in *status; 127 when it could not be run, WEFT_EXIT_FAIL when no process could be
 * started (both said). */
int weft_record_launch(const struct weft_record_launch *l, char **argv, int *status);

#endif
