/*
 * convert-job.h - `weft convert` run as a parallel job (`mpirun -np N weft convert D -o F`,
 * `srun -n N ...`): each rank writes its part of F (weft_export_pftrace_part), rank 0 its own
 * into F's temporary and then every other rank's after it, in rank order; F appears only when
 * every part is in (convert-job.c).
 */
#ifndef WEFT_TOOL_CONVERT_JOB_H
#define WEFT_TOOL_CONVERT_JOB_H

#include <stdint.h>
#include <stdio.h>

struct weft_convert_job {
	unsigned rank, size;   /* this rank, of size (size 1: not a job) */
	unsigned local_size;   /* ranks on this host (for the threads each uses) */
	char part[4096];       /* this rank's part file (rank > 0), next to F */
};

/* 1 when this process is one rank of a launcher's job of several (WEFT_CONVERT_SPLIT=0 turns
 * it off), with j filled; 0 otherwise. */
int weft_convert_job_detect(struct weft_convert_job *j, const char *out);

/* The part's file for writing (rank > 0): a temporary beside it; NULL with errno. */
FILE *weft_convert_job_part_open(struct weft_convert_job *j);
/* Rank > 0: the part is complete (ok, with its counts) or failed (why): said in files beside F
 * for rank 0. Returns 0; for a failure 1 once rank 0 took it (and says it), 0 when rank 0 did
 * not within 5 s (the caller says it); -errno when even that cannot be written. */
int weft_convert_job_part_done(struct weft_convert_job *j, FILE *f, int ok, const char *why, uint64_t events,
			       uint64_t dropped);

/* Rank 0, after its own part went into out: waits for every other rank's part, appends each
 * in rank order and removes it; adds their counts to *events and *dropped. 0, or -1 with why
 * (a rank failed, or nothing came for the time given by WEFT_CONVERT_JOB_TIMEOUT, default
 * 600 s); the parts are removed either way. */
int weft_convert_job_gather(struct weft_convert_job *j, FILE *out, uint64_t *events, uint64_t *dropped, char *why,
			    size_t n);

/* Rank 0, the same for any kind of part: take(ud, rank, its part's path, its .sum line, why, n)
 * on each in rank order as it is complete (0, or -1 with why: the job fails); the part is
 * removed after. */
typedef int (*weft_job_take_fn)(void *ud, unsigned rank, const char *part, const char *sum, char *why, size_t n);
int weft_convert_job_each(struct weft_convert_job *j, weft_job_take_fn take, void *ud, char *why, size_t n);

/* Removes this job's part files (a failure, or a signal on rank 0). */
void weft_convert_job_cleanup(struct weft_convert_job *j);

#endif
