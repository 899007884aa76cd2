/*
 * report-gpu.h - `weft report --gpu`: kernels, copies and launch latency per process.
 */
#ifndef WEFT_REPORT_GPU_H
#define WEFT_REPORT_GPU_H

#include "format/reader.h"

/* Prints the report (fmt 0 text, 1 csv, 2 json; at most limit kernel rows per process when
 * > 0; full_names: kernels' C++ names whole). A trace without GPU activity gets one line
 * saying so (and why, when the collector was unavailable) and status 0. Returns the command's
 * exit status. */
int weft_report_gpu(const struct weft_trace *t, int fmt, long limit, int full_names);

#endif
