/* tracedir.h - the trace directory `weft record` writes into (tracedir.c): made fresh for one
 * run (an earlier one moved to DIR.old), or shared by the recorders of one parallel job. */
#ifndef WEFT_TRACEDIR_H
#define WEFT_TRACEDIR_H
#include "lib/job.h"
#include <stddef.h>
#include <sys/types.h>

/* DIR exists: move it to DIR.old (removing an older DIR.old's weft files), like perf; then
 * create DIR. Only a trace directory is moved: anything else named DIR is the user's. 0 or
 * -errno with the reason in why. */
int weft_tracedir_prepare(const char *dir, char *why, size_t whylen);

/* The finished trace directories weft wrote inside DIR: out[0] the flight recorder's
 * snapshot-N, out[1] --switch-output's part-N; each how many, the lowest and the highest N
 * (parts may have gaps: --switch-max-files deletes the oldest). */
struct weft_tracedir_subdirs {
	unsigned n, lo, hi;
};
void weft_tracedir_subdirs(const char *dir, struct weft_tracedir_subdirs out[2]);
/* DIR/window-not-written-PID.txt: a crash window the runtime could not write (lib/fatal.c),
 * its one line. For each such file: fn(its name, the line without its newline, ud). Returns
 * how many there are. */
int weft_tracedir_not_written(const char *dir, void (*fn)(const char *name, const char *line, void *ud),
			      void *ud);

/* One recorder's place in a job's shared directory. */
struct weft_jobdir {
	int fd;          /* DIR itself, open: flock(2) on it serializes the job's recorders */
	char dir[4096];  /* DIR as given */
	char run[512];   /* this recorder's registration while its program runs: DIR/.weft-run-PID@HOST */
	char done[512];  /* ... and once it ended: DIR/.weft-done-PID@HOST */
	char host[256];  /* the host part of those names */
	unsigned expect; /* recorders of the job on this host (the launcher's local size; 0 unknown) */
	unsigned size;   /* recorders of the whole job (0 unknown) */
	unsigned done_seen; /* the job's done files at weft_jobdir_leave */
};

/* Joins the job's directory DIR: the first recorder of a new job moves an earlier run's DIR to
 * DIR.old and marks the fresh DIR with the job id (DIR/.weft-job); the job's later recorders
 * find the mark and join. Registers this recorder. 0, or -errno with the reason in why. */
int weft_jobdir_join(struct weft_jobdir *jd, const char *dir, const struct weft_job *job, const char *host,
		     char *why, size_t whylen);

/* The registration passes to process pid (a rank's recorder that goes on, out of the
 * launcher's reach, after its first process became the program: record-detach.c): the run
 * file is renamed to pid's, whose end is what a stale one is told by. 0 or -errno. */
int weft_jobdir_handover(struct weft_jobdir *jd, pid_t pid);

/* This recorder's program ended, as ENDING says ("RANK WORDS\n": "3 exit status 1"; kept in
 * the done file for weft_jobdir_endings): 1 if none of the job's recorders in DIR still runs and it is
 * the last of those on this host, or of the whole job, to end (then DIR stays locked until
 * weft_jobdir_close: convert it), 0 if others still run, 2 if none runs but fewer ended than
 * the launcher started (others not registered yet, or never: weft_jobdir_claim). */
int weft_jobdir_leave(struct weft_jobdir *jd, const char *ending);
/* After weft_jobdir_leave said 2 (no recorder runs, but fewer ended than the launcher
 * started: ranks run without weft, an MPMD part) and a while passed: 1 with DIR locked if
 * still none runs, none ended since and no other recorder claimed it (convert), else 0. */
int weft_jobdir_claim(struct weft_jobdir *jd);
void weft_jobdir_close(struct weft_jobdir *jd);
/* How many recorders of this host in DIR still run (their process alive; after
 * weft_jobdir_leave, this one is not among them). */
int weft_jobdir_running_here(const struct weft_jobdir *jd);
/* Is NAME a run file (.weft-run-PID@HOST) of host whose recorder is gone (killed)? */
int weft_jobdir_run_gone(const char *name, const char *host);

#endif
