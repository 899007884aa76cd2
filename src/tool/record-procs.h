/* record-procs.h - weft record's view of traced processes that exec: a process whose control
 * connection closed without `bye` is exec'ing (the socket is close-on-exec; the new image says
 * hello again under the same pid) or was killed. record-control.c notes them, forgets each at
 * its new hello, and waits for those still pending once the program ended (its linger). */
#ifndef WEFT_RECORD_PROCS_H
#define WEFT_RECORD_PROCS_H

#include <stddef.h>

/* pid's connection closed without `bye` (the oldest of 64 goes when full). */
void weft_rec_exec_note(int pid);
/* pid said hello again: its new image is traced. */
void weft_rec_exec_forget(int pid);
/* Forgets the noted processes that ended or now run an image weft never starts in (a static
 * one: its trace was finished before the exec); how many are left. */
size_t weft_rec_execs_pending(void);
/* The noted pids (the first max into pids; pids may be NULL with max 0): how many. */
size_t weft_rec_execs(int *pids, size_t max);
/* 1 while pid is a process that has not ended (a zombie has). */
int weft_rec_proc_alive(int pid);

#endif
