/*
 * job.h - which task of a parallel job this process is, as its launcher says in the
 * environment (Open MPI's mpirun, MPICH's hydra mpiexec, Slurm's srun, any PMIx or PMI-2
 * launcher). Read by the runtime at start (the JOB metadata record, the file names) and by
 * `weft record` (sharing the trace directory with the job's other recorders).
 */
#ifndef WEFT_LIB_JOB_H
#define WEFT_LIB_JOB_H
#include <stddef.h>
#include <stdint.h>

struct weft_job {
	int known;                    /* 1: a launcher said this process is a task with a rank */
	uint32_t rank, size;          /* rank in the job; size 0: unknown */
	uint32_t local_rank, local_size; /* on this host; WEFT_RANK_NONE / 0: unknown */
	char id[128];                 /* the job (and step) id the launcher gave, "" unknown */
	char launcher[16];            /* openmpi, hydra, slurm, pmix, pmi */
};

/* Reads the launcher's variables through get (getenv, or a test's table): fills *j, with
 * j->known = 0 when no launcher variable names a rank. WEFT_JOB_ID, where set (weft record
 * sets it for what it runs), overrides the job id. Returns j->known. */
int weft_job_detect(struct weft_job *j, const char *(*get)(const char *name));

/* HOST as a file-name part: every byte but [A-Za-z0-9._-] becomes '_' (a stem is read from
 * its right end, so '-' and '.' in a host are fine), at most n-1 bytes. */
void weft_job_host_part(const char *host, char *out, size_t n);

#endif
