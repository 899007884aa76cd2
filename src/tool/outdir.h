/* outdir.h - the one way the weft CLI writes an output directory (outdir.c): written under a
 * fresh sibling name and renamed into place when complete, so a failure leaves nothing partial;
 * a directory of the user's is never written over. */
#ifndef WEFT_OUTDIR_H
#define WEFT_OUTDIR_H

#include <limits.h>

struct weft_outdir {
	const char *cmd;     /* for the error lines: "weft: CMD: ..." */
	char path[PATH_MAX]; /* where the output goes (trailing slashes removed) */
	char tmp[PATH_MAX];  /* the fresh sibling written, "" once renamed or removed */
	int replace;         /* path exists (empty, or a previous output `is_ours` recognised) */
};

/* Opens the output directory `path` of command `cmd`: a new name, an empty directory, or a
 * directory is_ours(path) says this command wrote before (replaced as a whole); anything else
 * is refused. Creates the sibling o->tmp to write into. Prints its one-line error; returns 0,
 * WEFT_EXIT_USAGE (refused) or WEFT_EXIT_FAIL (cannot create). */
int weft_outdir_open(struct weft_outdir *o, const char *cmd, const char *path, int (*is_ours)(const char *path));
/* The output is complete: renames o->tmp to o->path (the old one, if any, is removed after).
 * Prints its error; 0 or WEFT_EXIT_FAIL (then the old output is still there). */
int weft_outdir_commit(struct weft_outdir *o);
/* The output failed: removes o->tmp and everything in it; the target is untouched. */
void weft_outdir_abort(struct weft_outdir *o);

#endif
