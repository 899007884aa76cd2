/* job-endings.h - how a job's ranks ended, in one line: each rank's recorder writes its ending
 * into its done file in DIR (tracedir.c: weft_jobdir_leave), and the recorder that converts
 * the job reads them all back. */
#ifndef WEFT_TOOL_JOB_ENDINGS_H
#define WEFT_TOOL_JOB_ENDINGS_H

#include <stddef.h>
#include <stdint.h>

/* A wait status (or -1: not known) in words: "exit status 1", "killed by SIGKILL (its
 * unwritten events lost)",
 * "killed by SIGSEGV (core dumped)", "ended (status not seen)". */
void weft_job_ending_words(int status, char *out, size_t n);

/* How the job's ranks in DIR ended, from the done files: "ranks 0-2 exit status 0, rank 3
 * killed by SIGKILL" (ranks with the same ending together, in rank order; "..." past n),
 * "N recorders gone without a word" for run files of this host whose process is dead, and
 * with the job's size (0 unknown) the ranks that never registered: "ranks 2-3 not run under
 * weft". "" when there are none. */
void weft_jobdir_endings(const char *dir, const char *host, unsigned size, char *out, size_t n);

#endif
