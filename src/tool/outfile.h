/* outfile.h - the one way the weft CLI opens an output file (outfile.c): what is not the
 * output is never written over. */
#ifndef WEFT_OUTFILE_H
#define WEFT_OUTFILE_H

#include <limits.h>
#include <sys/types.h>

struct weft_outfile {
	const char *cmd;      /* for the error lines: "weft: CMD: ..." */
	char path[PATH_MAX];  /* where the output goes (a symlink's target where -o named a link) */
	char tmp[PATH_MAX];   /* the file written, a name this process created (O_EXCL); "" if none */
	int fd;               /* STREAM: open for writing (on tmp, or on the device or FIFO itself) */
	int direct;           /* fd is the device or FIFO itself: nothing to rename */
	int copy;             /* tmp is in $TMPDIR; commit copies it into the device or FIFO */
	mode_t mode;          /* the mode the output gets (the replaced file's, or 0666 & ~umask) */
	uid_t uid;
	gid_t gid;
	int own;              /* replacing a file: give the new one its owner (root only) */
};

enum {
	WEFT_OUT_STREAM = 0,        /* the caller writes into o->fd */
	WEFT_OUT_NAMED = 1,         /* the caller writes the file named o->tmp (SQLite, cairo) */
	WEFT_OUT_PFTRACE_OK = 2,    /* DIR/trace.pftrace may be replaced (it is the conversion) */
	WEFT_OUT_REGULAR_ONLY = 4,  /* the file is updated in place (overhead --db): no device */
};

/* Opens the output `path` of command `cmd`, which reads the trace directory `trace_dir` (NULL
 * if none). A regular file (or a new name) is written under a fresh name beside it and renamed
 * over it by weft_outfile_commit; a character device or FIFO is written through (NAMED: by a
 * copy at commit); a symlink is followed to the file it names (a dangling one is refused);
 * anything else (directory, block device, socket) is refused, as is any file of trace_dir and
 * any .wmeta/.wevents name. Prints its one-line error; returns 0, WEFT_EXIT_USAGE (refused) or
 * WEFT_EXIT_FAIL (cannot create). */
int weft_outfile_open(struct weft_outfile *o, const char *cmd, const char *path, const char *trace_dir,
		      unsigned flags);
/* The output is complete: closes o->fd (if still >= 0), renames or copies. Prints its error;
 * 0 or WEFT_EXIT_FAIL (then nothing was replaced). */
int weft_outfile_commit(struct weft_outfile *o);
/* The output failed: closes o->fd, removes the temporary file; the target is untouched. */
void weft_outfile_abort(struct weft_outfile *o);

#endif
