/*
 * outdir.c - output directories (an OTF2 archive is a directory of files that libotf2 names
 * itself): the output is written into a fresh sibling, PATH.tmp-XXXXXX made by mkdtemp, and
 * renamed to PATH only when complete. A previous output at PATH (an empty directory, or one the
 * command recognises as its own) is first renamed aside to PATH.old-XXXXXX, the new one renamed
 * in, then the old one removed: at no moment is PATH a half-written archive. Anything else at
 * PATH - a file, a directory holding other things - is refused and never touched.
 */
#include "tool/outdir.h"
#include "tool/cmd.h"
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)f;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int is_empty_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	struct dirent *e;
	int empty = 1;
	while (empty && (e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty;
}

static int sibling(struct weft_outdir *o, char *out, const char *kind)
{
	if (snprintf(out, PATH_MAX, "%s.%s-XXXXXX", o->path, kind) >= PATH_MAX) {
		weft_cli_error(o->cmd, "%s: name too long", o->path);
		return WEFT_EXIT_USAGE;
	}
	if (!mkdtemp(out)) {
		weft_cli_error(o->cmd, "cannot create a temporary directory %s: %s", out, strerror(errno));
		out[0] = 0;
		return WEFT_EXIT_FAIL;
	}
	mode_t mask = umask(0); /* mkdtemp makes it 0700: the output gets a new directory's mode */
	umask(mask);
	chmod(out, 0777 & ~mask);
	return 0;
}

int weft_outdir_open(struct weft_outdir *o, const char *cmd, const char *path, int (*is_ours)(const char *path))
{
	memset(o, 0, sizeof(*o));
	o->cmd = cmd;
	size_t n = strlen(path);
	while (n > 1 && path[n - 1] == '/')
		n--;
	if (!n || n >= sizeof(o->path)) {
		weft_cli_error(cmd, n ? "%s: name too long" : "the output directory name is empty%s", n ? path : "");
		return WEFT_EXIT_USAGE;
	}
	memcpy(o->path, path, n);
	o->path[n] = 0;
	struct stat st;
	if (lstat(o->path, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			weft_cli_error(cmd, "refusing to write %s: it exists and is not a directory", o->path);
			return WEFT_EXIT_USAGE;
		}
		if (!is_empty_dir(o->path) && !(is_ours && is_ours(o->path))) {
			weft_cli_error(cmd, "refusing to write %s: a directory that is neither empty nor an archive weft wrote",
				       o->path);
			return WEFT_EXIT_USAGE;
		}
		o->replace = 1;
	} else if (errno != ENOENT) {
		weft_cli_error(cmd, "cannot write %s: %s", o->path, strerror(errno));
		return WEFT_EXIT_FAIL;
	}
	return sibling(o, o->tmp, "tmp");
}

int weft_outdir_commit(struct weft_outdir *o)
{
	char old[PATH_MAX] = "";
	if (o->replace) {
		int rc = sibling(o, old, "old");
		if (rc) {
			weft_outdir_abort(o);
			return WEFT_EXIT_FAIL;
		}
		if (rename(o->path, old)) { /* a directory onto the fresh empty one */
			weft_cli_error(o->cmd, "cannot replace %s: %s", o->path, strerror(errno));
			rmdir(old);
			weft_outdir_abort(o);
			return WEFT_EXIT_FAIL;
		}
	}
	if (rename(o->tmp, o->path)) {
		weft_cli_error(o->cmd, "cannot write %s: %s", o->path, strerror(errno));
		if (old[0] && rename(old, o->path))
			weft_cli_error(o->cmd, "the previous %s is now %s", o->path, old);
		weft_outdir_abort(o);
		return WEFT_EXIT_FAIL;
	}
	o->tmp[0] = 0;
	if (old[0])
		rm_tree(old);
	return 0;
}

void weft_outdir_abort(struct weft_outdir *o)
{
	if (o->tmp[0])
		rm_tree(o->tmp);
	o->tmp[0] = 0;
}
