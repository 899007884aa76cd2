/* plot.h - PNG pictures of a trace's memory (plot.c, plot-heap.c) and MPI calls (plot-mpi.c; cairo). Each returns 0 or
 * -errno with a one-line reason in err. */
#ifndef WEFT_PLOT_H
#define WEFT_PLOT_H

#include "format/reader.h"

struct weft_plot_opts {
	const char *out;      /* the PNG file */
	int width, height;    /* pixels */
	int pid;              /* the process (0: the first) */
	int has_time;         /* a time window, in ns from the process's first memory event: */
	uint64_t t_from, t_to; /* t_to 0: to the end */
	uint64_t a_lo, a_hi;  /* an address range (a_hi 0: all) */
	int describe;         /* print what was drawn where (JSON lines) on stdout */
	const char *heap;     /* heap: the heap to draw ("malloc", "mmap" or the program's name; NULL: malloc) */
	int top;              /* heap: the allocating slices drawn apart (the rest fold into "other"; 0: 8) */
};

/* Address x time: allocations as rectangles by slice, sampled accesses as dots. */
int weft_plot_memory(const struct weft_trace *t, const struct weft_plot_opts *o, char *err, size_t errlen);
/* Live bytes of one heap over time, stacked by the slice that allocated each block (the top
 * o->top by their own peak, the rest as "other"); the stack's top edge is the heap's live bytes
 * (plot-heap.c). -ENOENT: no such process or heap; -ENODATA: nothing to draw. */
int weft_plot_heap(const struct weft_trace *t, const struct weft_plot_opts *o, char *err, size_t errlen);
/* An MPI job's communication matrix as a heat map and each rank's time in and outside MPI as
 * bars (plot-mpi.c). -ENODATA: the trace has no MPI calls. */
int weft_plot_mpi(const struct weft_trace *t, const struct weft_plot_opts *o, char *err, size_t errlen);
/* Live bytes over time, a line per heap. */
int weft_plot_heap_lines(const struct weft_trace *t, const struct weft_plot_opts *o, char *err, size_t errlen);

#endif
