/* record-control.h - weft record's run-time control: --delay, --control, the control socket
 * that `weft snapshot|enable|disable|stop DIR` and every traced process connect to. */
#ifndef WEFT_RECORD_CONTROL_H
#define WEFT_RECORD_CONTROL_H

#include <stddef.h>
#include <sys/types.h>

/* The socket's name in the trace directory: CONTROL_PREFIX then the recorder's pid. */
#define WEFT_CONTROL_PREFIX ".control."

/* --delay MS (opt 'y') and --control SPEC (opt 'c'): 0, or WEFT_EXIT_USAGE after saying why. */
int weft_rctl_option(int opt, const char *arg);
/* Before the program starts: the control socket in dir, the FIFOs or descriptors of
 * --control; appends the runtime's control= key to opts. 0, or WEFT_EXIT_FAIL after saying why. */
int weft_rctl_setup(const char *dir, char *opts, size_t n);
/* Serves the control channel until child ends; its wait status in *status. Then closes the
 * channel (the socket is removed). With pidfd >= 0, child is not this process's child (a
 * rank's supervisor, record-detach.c): pidfd tells its end, *status is what /proc says
 * (weft_record_zombie_status), -1 if nothing. */
void weft_rctl_wait(pid_t child, int pidfd, int *status);
/* After weft_rctl_wait (its own child): how many traced processes were still running once the
 * program ended and WEFT_RECORD_LINGER seconds (1) more had passed; the first max pids. */
size_t weft_rctl_lingering(int *pids, size_t max);
/* Removes the socket (also at exit, where weft record ends early). */
void weft_rctl_close(void);
/* cmd-control.c: a connection to the recorder socket DIR/name (a path too long for sun_path
 * goes through the directory's descriptor): the socket, or -errno. */
int weft_rctl_connect(const char *dir, const char *name);

#endif
