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

#include "tool/tracedir.h"
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

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
/* --options OPTS: every key=value valid for the runtime (lib/config.c); 0, or -1 after one line
 * saying the first that is not */
int weft_record_check_options(const char *opts);
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
/* 0 if execvp would find PROG as an executable file, else the errno it would fail with */
int weft_record_runnable(const char *prog);
struct weft_record_launch {
	const char *preload; /* libweft-preload.so */
	const char *options; /* WEFT_OPTIONS */
	const char *dir;     /* WEFT_SESSION: the trace directory */
	const char *job_id;  /* WEFT_JOB_ID, or NULL */
	const char *pypath;  /* PYTHONPATH, or "" */
	int gpu;             /* CUDA_INJECTION64_PATH names the preload (unless set) */
	int python;          /* PY_* bits for WEFT_PYTHON, or 0 */
	struct weft_jobdir *detach; /* a rank's: this process becomes the program, a supervisor
				     * waits (record-detach.c); NULL: the program is a child */
	int supervising;     /* set: this is that supervisor (the program is not its child) */
	int pmi_fd;          /* the supervisor's copy of Hydra's PMI connection, or -1 */
};
/* Runs argv[0] with argv and waits it out (serving the control channel): 0 with its wait
 * status in *status (-1 where a supervisor could not see it); 127 when it could not be run,
 * WEFT_EXIT_FAIL when no process could be started (both said). With l->detach, the calling
 * process execs the program (never returns but on exec's failure) and the supervisor returns. */
int weft_record_launch(struct weft_record_launch *l, char **argv, int *status);

/* ---- record-detach.c ---- */

/* Should this rank's recorder leave the launcher's reach? (mpirun's Hydra and Open MPI; not
 * in a Slurm step, whose end kills every process of the step, nor with WEFT_NO_DETACH set) */
int weft_record_may_detach(const struct weft_job *job);
struct weft_detached {
	pid_t pid; /* the program (the recorder's first process) */
	int pidfd; /* readable once it ended */
	int pmi_fd; /* a copy of Hydra's PMI connection (PMI_FD), or -1 */
};
/* Forks the supervisor (a session of its own, not a child of this process, holding the job
 * registration jd, with only weft's own descriptors and stderr): 1 in the supervisor (*out
 * set), 0 in this process, which is now to exec the program, -1 when no supervisor could be
 * made (nothing changed). */
int weft_record_detach(struct weft_jobdir *jd, struct weft_detached *out);
/* Once the program ended and the rank left the job's directory: closes the supervisor's copies
 * of the launcher's stdout pipe and PMI connection (fd, or -1) when no other rank of this host
 * runs, or after at most 2 s. */
void weft_record_let_go(struct weft_jobdir *jd, int fd);
/* The wait status of pid, a zombie not ours (/proc/PID/stat), or -1. */
int weft_record_zombie_status(pid_t pid);

#endif
