/*
 * mpi.h - what a job's MPI call slices (category `mpi`, written by libweft-mpi.so) say, per
 * rank: time in MPI and outside it, per MPI function calls, time, bytes and wait, and the bytes
 * each rank sent each other rank (analysis/mpi.c explains the definitions).
 */
#ifndef WEFT_ANALYSIS_MPI_H
#define WEFT_ANALYSIS_MPI_H

#include "format/reader.h"
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

/* One MPI function on one rank. */
struct weft_mpi_fstat {
	uint64_t calls, total_ns, bytes, wait_ns;
};

struct weft_mpi_rank {
	int present;            /* a process of the trace has this rank */
	int by_pid;             /* it had no rank in the trace: numbered by pid order */
	int pid;                /* its (first) process */
	const char *host, *name;
	uint64_t first_ns, last_ns; /* its traced span: its processes' first and last event */
	uint64_t mpi_ns;        /* in outermost MPI slices */
	uint64_t weft_ns;       /* in weft's own clock sync (`weft: clock sync`): neither */
	uint64_t wait_ns, calls;
	struct weft_mpi_fstat *fn; /* indexed like weft_mpi.fns; nfn entries */
	size_t nfn;
};

/* Bytes (and messages) one rank sent another, from the sending calls' mpi.peer and mpi.bytes. */
struct weft_mpi_pair {
	uint32_t src, dst;
	uint64_t bytes, messages;
};

struct weft_mpi {
	struct weft_mpi_rank *ranks; /* indexed by rank, 0 .. nranks-1; absent ranks have present 0 */
	size_t nranks, npresent;
	char **fns;                  /* MPI function names, in order of first appearance */
	size_t nfns;
	struct weft_mpi_pair *pairs; /* by (src, dst) */
	size_t npairs;
	int any_by_pid;              /* some rank was numbered by pid order */
	uint64_t calls;              /* MPI slices */
	uint64_t messages;           /* receives matched with their send (FLOW out and in) */
	uint64_t unmatched_flows;    /* flow ends of MPI slices whose other end was not found */
	uint64_t collectives, incomplete_collectives; /* instances (comm, seq); those missing members */
	uint64_t pending_peak;       /* most flow ends and collective instances held at once */
	uint64_t pending_end;        /* those still held after the last thread (unmatched, incomplete) */
	struct weft_walk_stats_sum { uint64_t bad_chunks, oom; const char *bad_why; } st;
	char *why_owned;             /* st.bad_why where another rank's part gave it */
};

/* Walks every thread's records once. *out is always set (free it with weft_mpi_free); its
 * calls is 0 when the trace holds no MPI slice. 0, or -errno with the reason in err. */
int weft_mpi_analyze(const struct weft_trace *t, struct weft_mpi **out, char *err, size_t errlen);
/* The int64 values of the MPI wrappers' argument keys names[0..n) among an event's arguments
 * into v (-1: absent). */
struct weft_ev;
void weft_mpi_args(const struct weft_proc *p, const struct weft_ev *e, const char *const *names, int n, int64_t *v);
void weft_mpi_free(struct weft_mpi *m);

/* The same analysis split between the processes of a job (`mpirun -np N weft report --mpi`):
 * part k of n walks its share of the ranks (whole ranks, in rank order, about as many
 * processes each); the other parts' state (weft_mpi_save, written to a file the first reads
 * with weft_mpi_load, in part order) completes it: the messages and collectives that cross
 * shares are matched there. The result is weft_mpi_analyze's, but pending_peak (the most held
 * by any one part or by the merge). weft_mpi_analyze is part 0 of 1, ended. */
struct weft_mpi_acc;
/* NULL (out of memory, said in err) or the share walked. */
struct weft_mpi_acc *weft_mpi_begin(const struct weft_trace *t, unsigned part, unsigned nparts, char *err,
				    size_t errlen);
/* The share's state into f. 0 or -EIO (f's error). */
int weft_mpi_save(struct weft_mpi_acc *a, FILE *f);
/* Another part's state from f, added. 0, or -EINVAL (not a part of this build's, or cut short)
 * or -ENOMEM, with the reason in err; what was read is kept. */
int weft_mpi_load(struct weft_mpi_acc *a, FILE *f, char *err, size_t errlen);
/* The analysis, a freed (weft_mpi_free the result). */
struct weft_mpi *weft_mpi_end(struct weft_mpi_acc *a);
/* A share not ended. */
void weft_mpi_acc_free(struct weft_mpi_acc *a);

/* Compute time (span minus time in MPI, never below 0) of a present rank. */
/* span - in MPI - weft's clock sync (at least 0) */
uint64_t weft_mpi_compute_ns(const struct weft_mpi_rank *r);

/* Imbalance of compute time across present ranks: max / mean (0 without ranks), the slowest
 * (most compute) and fastest rank. */
struct weft_mpi_imbalance {
	double ratio;
	uint64_t max_ns, min_ns, mean_ns;
	uint32_t slowest, fastest;
};
struct weft_mpi_imbalance weft_mpi_imbalance(const struct weft_mpi *m);

#endif
