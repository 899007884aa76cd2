/*
 * reader-internal.h - what the reader's files (trace.c, meta.c, chunks.c, reader.c) share and
 * nothing else sees: allocation that calls weft_oom on failure, the process, thread and site
 * tables, and the per-file parsers that fill them.
 */
#ifndef WEFT_READER_INTERNAL_H
#define WEFT_READER_INTERNAL_H

#include "reader.h"

void *weft_rd_xcalloc(size_t n, size_t s);
void *weft_rd_xrealloc(void *p, size_t n);
char *weft_rd_xstrndup(const char *s, size_t n);

/* One weft_proc per file stem (pid, or pid.N for an exec'd image), added when first named. */
struct weft_proc *weft_rd_proc_get(struct weft_trace *t, const char *stem, int pid);
/* The files are read: the stems' lookup table goes (the processes may be reordered after). */
void weft_rd_stems_done(struct weft_trace *t);
/* The thread (tid, serial), added when first named. */
struct weft_thread_data *weft_rd_thread_get(struct weft_proc *p, uint32_t tid, uint32_t serial);
/* CHUNK_INDEX records onto their chunks (sorted by seq); frees the index. */
void weft_rd_attach_index(struct weft_proc *p);
/* The site slot for id (grown as needed), or NULL for an absurd id. */
struct weft_site_def *weft_rd_site_slot(struct weft_proc *p, uint32_t id);

/* 0: a file of this magic and a major version we read; 1: skip it (warned); -1: refuse (err). */
int weft_rd_check_header(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
			 const char *magic, char *err, size_t errlen);
void weft_rd_parse_meta(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
			const char *stem, int pid);
void weft_rd_parse_events(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
			  const char *stem, int pid);

#endif
