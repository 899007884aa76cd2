/*
 * report-mpi.h - `weft report --mpi`: per rank time in MPI and outside, per MPI function calls,
 * time, bytes and wait, the compute imbalance and the communication matrix (analysis/mpi.h).
 */
#ifndef WEFT_REPORT_MPI_H
#define WEFT_REPORT_MPI_H

#include "format/reader.h"
#include "tool/convert-job.h"
#include <limits.h>

/* `mpirun -np N weft report --mpi D` (or srun, any launcher lib/job.c reads): each rank of the
 * job analyses its share of the trace's ranks (analysis/mpi.h), ranks > 0 leave their state in
 * D (hidden part files, convert-job.c's protocol: every rank must see D), rank 0 merges them
 * in rank order and prints the report, the same as one process's. */
struct weft_report_job {
	struct weft_convert_job j;
	char base[PATH_MAX];
};
/* For a report of dir (mpi: --mpi): 0 not a job, or one that rank 0 makes alone (any report
 * but --mpi; --mpi where dir is not writable, said on stderr); -1 a rank with nothing to do
 * then (it exits 0, silent); 1 a rank of a --mpi job, job filled. */
int weft_report_mpi_job(struct weft_report_job *job, const char *dir, int mpi);
/* A rank > 0 whose trace did not open: says why for rank 0. 1 when rank 0 took the reason
 * (and says it), else 0 (the caller says it). */
int weft_report_mpi_job_failed(struct weft_report_job *job, const char *why);

/* Prints the report (fmt 0 text, 1 csv, 2 json; limit > 0: at most that many function rows and
 * matrix pairs in the text); in a job (job non-NULL), rank 0 prints it, the others write their
 * parts. A trace without MPI calls gets one line on stderr and status 1. Returns the command's
 * exit status. */
int weft_report_mpi(const struct weft_trace *t, int fmt, long limit, struct weft_report_job *job);

#endif
