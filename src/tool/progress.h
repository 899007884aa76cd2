/*
 * progress.h - the progress line of a long conversion: on stderr, only when stderr is a
 * terminal, from one second on (WEFT_PROGRESS_DELAY_MS changes that), rewritten in place four
 * times a second and erased at the end; scripts and pipes see nothing.
 */
#ifndef WEFT_TOOL_PROGRESS_H
#define WEFT_TOOL_PROGRESS_H

#include <stdint.h>

struct weft_progress;

/* Starts the line's thread for command cmd ("convert", "record"); NULL when stderr is not a
 * terminal (or the thread cannot start): the other calls accept NULL. */
struct weft_progress *weft_progress_start(const char *cmd);
/* The trace is read: total events to convert (from then on the line counts them). */
void weft_progress_total(struct weft_progress *pr, uint64_t total);
/* Erases the line and ends the thread. */
void weft_progress_stop(struct weft_progress *pr);

#endif
