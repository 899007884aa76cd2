/*
 * sources.c - the table of data sources (collect/source.h) and the loops that drive them. The
 * rows are listed once, in WEFT_SOURCE_ROWS, in the order the runtime starts, drains and forks
 * them (and stops them, in reverse): source.h says why this order. Each row's state is an
 * atomic, so that a row is opened by one caller only (the trace's start and CUDA's injection
 * entry may race for "gpu") and stopped once; the loops skip rows that are not started.
 */
#include "lib/internal.h"
#include "collect/source.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Rows of libweft-preload.so only: they interpose symbols (collect/access.c wraps
 * pthread_create, preload/memory.c the allocation functions). */
#ifdef WEFT_PRELOAD
#define WEFT_PRELOAD_ROWS(X) X(memory) X(mem_access) X(watch) X(sched) X(counters)
#else
#define WEFT_PRELOAD_ROWS(X)
#endif
/* The table, in order: one X(NAME) per source, whose file defines weft_source_NAME. */
#define WEFT_SOURCE_ROWS(X) X(sys) X(gpu) WEFT_PRELOAD_ROWS(X)

#define DECLARE(name) extern const struct weft_source weft_source_##name;
WEFT_SOURCE_ROWS(DECLARE)
#undef DECLARE
#define ROW(name) &weft_source_##name,
static const struct weft_source *const rows[] = {WEFT_SOURCE_ROWS(ROW)};
#undef ROW
#define NROWS (sizeof(rows) / sizeof(rows[0]))
/* Each row's state: set by the loops (start under weft_g.lock; late start and stop by
 * compare-and-swap); a fork child inherits them (its started rows follow their fork_child). */
static _Atomic int states[NROWS];
static const struct weft_source_set runtime_set = {rows, NROWS, states};

const struct weft_source_set *weft_sources(void)
{
	return &runtime_set;
}

/* Opens and starts row i if it is in state `from` (NEW, or IDLE for a late start). */
static int open_row(const struct weft_source_set *s, unsigned i, int from)
{
	const struct weft_source *src = s->row[i];
	int expect = from;
	if (!src->wanted()) {
		atomic_compare_exchange_strong(&s->state[i], &expect, WEFT_SRC_OFF);
		return -ENOENT;
	}
	if (!atomic_compare_exchange_strong(&s->state[i], &expect, WEFT_SRC_OPENING))
		return -EALREADY;
	char why[600] = "";
	int rc = src->open(why, sizeof(why));
	if (rc < 0) {
		if (why[0]) {
			char label[600];
			if (src->label)
				src->label(label, sizeof(label));
			else
				snprintf(label, sizeof(label), "%s:", src->name);
			weft_log(WEFT_LOG_WARN, "%s unavailable: %s", label, why);
		}
		atomic_store(&s->state[i], WEFT_SRC_UNAVAILABLE);
		return rc;
	}
	if (rc == WEFT_SOURCE_IDLE) {
		atomic_store(&s->state[i], WEFT_SRC_IDLE);
		return rc;
	}
	if (src->start)
		src->start();
	atomic_store(&s->state[i], WEFT_SRC_STARTED);
	return 0;
}

void weft_sources_start(const struct weft_source_set *s)
{
	for (unsigned i = 0; i < s->n; i++)
		open_row(s, i, WEFT_SRC_NEW);
}

int weft_sources_start_late(const struct weft_source_set *s, const char *name)
{
	for (unsigned i = 0; i < s->n; i++) {
		if (strcmp(s->row[i]->name, name))
			continue;
		int rc = open_row(s, i, WEFT_SRC_IDLE);
		if (rc == -EALREADY)
			rc = open_row(s, i, WEFT_SRC_NEW); /* the trace started without it */
		return rc;
	}
	return -ENOENT;
}

static int started(const struct weft_source_set *s, unsigned i)
{
	return atomic_load(&s->state[i]) == WEFT_SRC_STARTED;
}

void weft_sources_drain(const struct weft_source_set *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (s->row[i]->drain && started(s, i))
			s->row[i]->drain();
}

void weft_sources_stop(const struct weft_source_set *s)
{
	for (unsigned i = s->n; i-- > 0;) {
		int expect = WEFT_SRC_STARTED;
		if (atomic_compare_exchange_strong(&s->state[i], &expect, WEFT_SRC_STOPPED))
			s->row[i]->stop();
	}
}

/* Which rows prepare ran for: fork_prepare, read by fork_parent (the forking thread). The
 * child runs the rows started when it was forked (its states are the parent's then). */
static unsigned char prepared[64];

void weft_sources_fork_prepare(const struct weft_source_set *s)
{
	for (unsigned i = s->n; i-- > 0;) {
		int on = started(s, i);
		if (i < sizeof(prepared))
			prepared[i] = (unsigned char)on;
		if (on && s->row[i]->fork_prepare)
			s->row[i]->fork_prepare();
	}
}

void weft_sources_fork_parent(const struct weft_source_set *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if ((i < sizeof(prepared) ? prepared[i] : started(s, i)) && s->row[i]->fork_parent)
			s->row[i]->fork_parent();
}

void weft_sources_fork_child(const struct weft_source_set *s)
{
	for (unsigned i = 0; i < s->n; i++)
		if (started(s, i) && s->row[i]->fork_child)
			s->row[i]->fork_child();
}

size_t weft_sources_describe(const struct weft_source_set *s, char *buf, size_t n)
{
	size_t o = 0;
	if (n)
		buf[0] = 0;
	for (unsigned i = 0; i < s->n && o + 1 < n; i++) {
		if (!started(s, i) || !s->row[i]->describe)
			continue;
		char line[400] = "";
		s->row[i]->describe(line, sizeof(line));
		int k = snprintf(buf + o, n - o, "%s: %s\n", s->row[i]->name, line);
		if (k < 0 || (size_t)k >= n - o) {
			buf[o] = 0;
			break;
		}
		o += (size_t)k;
	}
	return o;
}
