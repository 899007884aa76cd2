/*
 * profile.h - where the time went: per function (or slice) name, calls, total time (counted
 * once for recursive calls: the outermost instance), self time (total minus recorded
 * children), average and maximum; optionally per thread; and the call tree (paths of names
 * with their time and calls). Threads are walked in parallel and merged by name.
 */
#ifndef WEFT_PROFILE_H
#define WEFT_PROFILE_H

#include "format/reader.h"

struct weft_fstat {
	const char *name;
	int pid;      /* 0 unless per thread or process */
	uint32_t tid; /* 0 unless per thread */
	uint64_t calls, total, self, max;
};

struct weft_tnode {
	const char *name;
	uint64_t calls, total, self;
	struct weft_tnode *child, *next;
};

struct weft_profile {
	struct weft_fstat *rows;
	size_t nrows;
	struct weft_tnode *root; /* children: the outermost slices of every thread */
	uint64_t events;
	uint64_t bad_chunks;     /* chunks that did not decode: their events are not counted */
	const char *bad_why;     /* the first one's reason */
};

/* per: WEFT_PROFILE_ALL (one table), _THREADS (rows per pid and tid) or _PROCESSES (per pid;
 * the images a process exec'd count as that process). */
enum { WEFT_PROFILE_ALL = 0, WEFT_PROFILE_THREADS = 1, WEFT_PROFILE_PROCESSES = 2 };
/* Returns 0, or -ENOMEM when memory ran out (out is then empty: an incomplete profile would
 * mislead). */
int weft_profile_build(const struct weft_trace *t, int per, int tree, int jobs, struct weft_profile *out);
void weft_profile_free(struct weft_profile *p);

#endif
