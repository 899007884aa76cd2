/*
 * report-mpi.h - `weft report --mpi`: per rank time in MPI and outside, per MPI function calls,
 * time, bytes and wait, the compute imbalance and the communication matrix (analysis/mpi.h).
 */
#ifndef WEFT_REPORT_MPI_H
#define WEFT_REPORT_MPI_H

#include "format/reader.h"

/* Prints the report (fmt 0 text, 1 csv, 2 json; limit > 0: at most that many function rows and
 * matrix pairs in the text). A trace without MPI calls gets one line on stderr and status 1.
 * Returns the command's exit status. */
int weft_report_mpi(const struct weft_trace *t, int fmt, long limit);

#endif
