/*
 * top.h - `weft top`'s pieces (docs/top.md): a sample of the processes a trace directory's
 * recorders trace (top-sample.c: asked over their control sockets, or read from the trace of
 * a run that has ended), and the frame made from two samples (top-view.c: rates over the
 * interval, totals, the tables as text, CSV or JSON). cmd-top.c runs the loop and the keys.
 */
#ifndef WEFT_TOOL_TOP_H
#define WEFT_TOOL_TOP_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct top_func {
	char *name;
	uint64_t calls, self_ns;
};

struct top_frame {
	char *name;
	uint64_t open_ns; /* how long it has been open */
};

struct top_thread {
	int tid;
	unsigned serial;
	int alive;
	char name[32];
	uint64_t events, calls, dropped, mpi_ns, lag_chunks;
	uint64_t asof_ns; /* CLOCK_BOOTTIME up to which its numbers are known (behind now when its
			   * writer is behind) */
	uint64_t cpu_ns; /* user + system CPU time (/proc/PID/task/TID/stat), 0: unknown */
	unsigned depth; /* open slices (stack[] holds at most the first 512) */
	struct top_frame *stack; /* outermost first */
	size_t nstack;
	struct top_func *funcs;
	size_t nfuncs;
};

struct top_proc {
	int pid;
	int rank;      /* -1: not in a job */
	unsigned size; /* the job's ranks (0: unknown) */
	int flight;    /* a flight recorder runs */
	char host[64], comm[64];
	uint64_t now_ns;   /* CLOCK_BOOTTIME of its answer */
	uint64_t since_ns; /* counting of calls and self time began (the first watch) */
	uint64_t events, dropped, heap;
	struct top_thread *threads;
	size_t nthreads;
};

struct top_sample {
	struct top_proc *procs;
	size_t nprocs;
	int recorders;   /* that answered */
	int elsewhere;   /* recorders of a job registered in DIR from other hosts (not reachable here) */
	char other_hosts[128]; /* the first of those hosts, ", " between them */
	int ended;       /* no recorder: the totals of the trace in the directory */
	double span_s;   /* ended: the trace's length */
};

/* Symbol tables of the processes seen (by pid, from /proc/PID/maps), kept across samples. */
struct top_syms;
struct top_syms *top_syms_new(void);
void top_syms_free(struct top_syms *s);

/* Asks every recorder writing dir (DIR/.control.*) for its processes' state. 0 with s filled
 * (s->recorders of them answered; s->elsewhere: the job's recorders on other hosts, whose
 * sockets only their host reaches); -ENOENT when no recorder listens there (s->elsewhere
 * still counted); other -errno. */
int top_sample_live(const char *dir, struct top_syms *syms, struct top_sample *s);
/* The final totals of the trace in dir (a run that ended): 0, or -1 with why in err. */
int top_sample_ended(const char *dir, struct top_sample *s, char *err, size_t n);
void top_sample_free(struct top_sample *s);

enum top_format { TOP_TEXT = 0, TOP_CSV = 1, TOP_JSON = 2 };
enum top_sort { TOP_SORT_SELF = 0, TOP_SORT_CALLS = 1, TOP_SORT_EVENTS = 2, TOP_SORT_NAME = 3, TOP_NSORT };
extern const char *const top_sort_names[TOP_NSORT];

struct top_view {
	const char *dir;
	enum top_format format;
	enum top_sort sort;
	const char *filter; /* "": all; rank=N, pid=N, tid=N, or a substring of a process or thread name */
	int memory;         /* the heap column */
	int width, height;  /* the terminal's (text) */
	int paused;
	int header_csv;     /* CSV: the header line is still to be written */
};

/* One frame from the samples before and now (before NULL: totals only, no rates). */
void top_frame_print(FILE *f, const struct top_view *v, const struct top_sample *before, const struct top_sample *now);

#endif
