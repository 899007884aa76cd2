/*
 * outfile.c - how every weft command that writes a file (convert, export, plot, record's
 * trace.pftrace, overhead --db) opens it, so that nothing that is not the output is written
 * over:
 *   - a regular file, or a name that does not exist yet, is written under a fresh name in the
 *     same directory (mkstemp: created with O_EXCL, so no file of the user's is ever opened
 *     or removed, PATH.tmp included) and renamed over PATH only when complete; a replaced file's
 *     mode (and, as root, owner) carries over;
 *   - a character device or a FIFO (/dev/null, a pipe to a reader) is written through, never
 *     replaced; a writer that needs a name (SQLite, cairo) writes a file in $TMPDIR that is
 *     copied into it at the end;
 *   - a symlink is followed: the file it names is the output, the link stays (a dangling link
 *     is refused rather than creating a file somewhere else);
 *   - a directory, a block device or a socket is refused, and so is every file of the trace
 *     directory being read (the same inode, or a name inside it the reader would take for part
 *     of the trace; its trace.pftrace too, except for the conversion itself).
 */
#include "tool/outfile.h"
#include "tool/cmd.h"
#include "format/format.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Is `st` (the output as it is, or its directory when `name` is given: a new file there) a
 * file of the trace directory `dir`? */
static int in_trace_dir(const char *dir, const struct stat *target, const struct stat *parent, const char *name,
			unsigned flags)
{
	struct stat sd;
	if (!dir || stat(dir, &sd) || !S_ISDIR(sd.st_mode))
		return 0;
	/* (its other files are .wmeta/.wevents, refused by name; a new name of another kind
	 * there, such as D/trace.db, is fine) */
	if (parent->st_dev == sd.st_dev && parent->st_ino == sd.st_ino && !strcmp(name, "trace.pftrace"))
		return !(flags & WEFT_OUT_PFTRACE_OK);
	if (!target) /* a new name elsewhere */
		return 0;
	DIR *d = opendir(dir); /* a hard link elsewhere to one of the trace's files */
	if (!d)
		return 0;
	int same = 0;
	struct dirent *e;
	while (!same && (e = readdir(d))) {
		struct stat si;
		same = !fstatat(dirfd(d), e->d_name, &si, 0) && S_ISREG(si.st_mode) && si.st_dev == target->st_dev &&
		       si.st_ino == target->st_ino &&
		       (strcmp(e->d_name, "trace.pftrace") || !(flags & WEFT_OUT_PFTRACE_OK));
	}
	closedir(d);
	return same;
}

/* A fresh file (O_EXCL) named after `base` in directory `dir`; its fd, or -1 with errno. */
static int make_tmp(char *out, size_t n, const char *dir, const char *base)
{
	snprintf(out, n, "%s/.%s.weft-XXXXXX", dir, base);
	return mkostemp(out, O_CLOEXEC);
}

int weft_outfile_open(struct weft_outfile *o, const char *cmd, const char *path, const char *trace_dir,
		      unsigned flags)
{
	memset(o, 0, sizeof(*o));
	o->cmd = cmd;
	o->fd = -1;
	if (!path || !*path) {
		weft_cli_error(cmd, "the output file name is empty");
		return WEFT_EXIT_USAGE;
	}
	struct stat sl, st;
	int exists = !lstat(path, &sl);
	if (exists && S_ISLNK(sl.st_mode)) {
		/* followed, deliberately: the file it names is the output (the link stays) */
		if (!realpath(path, o->path) || stat(o->path, &st)) {
			weft_cli_error(cmd, "%s is a symlink to a missing file: not followed (name the file itself)",
				       path);
			return WEFT_EXIT_USAGE;
		}
	} else {
		if (strlen(path) >= sizeof(o->path)) {
			weft_cli_error(cmd, "%s: name too long", path);
			return WEFT_EXIT_USAGE;
		}
		strcpy(o->path, path);
		st = sl;
	}
	if (!exists && errno != ENOENT) {
		weft_cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
		return WEFT_EXIT_FAIL;
	}
	char dbuf[PATH_MAX], bbuf[PATH_MAX];
	strcpy(dbuf, o->path);
	strcpy(bbuf, o->path);
	const char *dir = dirname(dbuf), *base = basename(bbuf);
	struct stat sp;
	if (stat(dir, &sp)) {
		weft_cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
		return WEFT_EXIT_FAIL;
	}
	struct stat sd;
	int in_dir = trace_dir && !stat(trace_dir, &sd) && sd.st_dev == sp.st_dev && sd.st_ino == sp.st_ino;
	if ((in_dir && weft_is_trace_file(base)) || in_trace_dir(trace_dir, exists ? &st : NULL, &sp, base, flags)) {
		weft_cli_error(cmd, "refusing to write %s: it is a file of the trace being read", path);
		return WEFT_EXIT_USAGE;
	}
	if (weft_is_trace_file(base)) {
		weft_cli_error(cmd, "refusing to write %s: .wmeta and .wevents files are read as parts of a trace",
			       path);
		return WEFT_EXIT_USAGE;
	}
	if (exists && !S_ISREG(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
		weft_cli_error(cmd, "refusing to write %s: it is %s, not a file", path,
			       S_ISDIR(st.st_mode) ? "a directory" : S_ISBLK(st.st_mode) ? "a block device" : "a socket");
		return WEFT_EXIT_USAGE;
	}
	if (flags & WEFT_OUT_REGULAR_ONLY) { /* updated in place by its writer */
		if (exists && !S_ISREG(st.st_mode)) {
			weft_cli_error(cmd, "refusing to write %s: it is a %s, not a regular file", path,
				       S_ISCHR(st.st_mode) ? "device" : "FIFO");
			return WEFT_EXIT_USAGE;
		}
		return 0;
	}
	if (exists && !S_ISREG(st.st_mode)) { /* a device or a FIFO: written through */
		if (flags & WEFT_OUT_NAMED) {
			const char *tmpdir = getenv("TMPDIR");
			int fd = make_tmp(o->tmp, sizeof(o->tmp), tmpdir && *tmpdir ? tmpdir : "/tmp", "out");
			if (fd < 0) {
				weft_cli_error(cmd, "cannot create a temporary file %s: %s", o->tmp, strerror(errno));
				o->tmp[0] = 0;
				return WEFT_EXIT_FAIL;
			}
			close(fd);
			o->copy = 1;
			return 0;
		}
		o->fd = open(o->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		if (o->fd < 0) {
			weft_cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
			return WEFT_EXIT_FAIL;
		}
		o->direct = 1;
		return 0;
	}
	if (exists) {
		o->mode = st.st_mode & 07777;
		o->uid = st.st_uid;
		o->gid = st.st_gid;
		o->own = geteuid() == 0;
	} else {
		mode_t um = umask(0);
		umask(um);
		o->mode = 0666 & ~um;
	}
	int fd = make_tmp(o->tmp, sizeof(o->tmp), dir, base);
	if (fd < 0) {
		/* ENOENT with the directory there (stat'ed above): its file system makes no new files
		 * (/proc, /sys), and "No such file or directory" would say the path is wrong */
		if (errno == ENOENT)
			weft_cli_error(cmd, "cannot write %s: %s takes no new files (the output is written as a new "
				       "file there, then renamed)", path, dir);
		else
			weft_cli_error(cmd, "cannot write %s: %s", path, strerror(errno));
		o->tmp[0] = 0;
		return WEFT_EXIT_FAIL;
	}
	if (fchmod(fd, o->mode) || (o->own && fchown(fd, o->uid, o->gid))) {
		/* best effort: the output is written either way */
	}
	if (flags & WEFT_OUT_NAMED)
		close(fd);
	else
		o->fd = fd;
	return 0;
}

/* Copies the file `from` into the open fd `to`; 0 or -errno. */
static int copy_into(const char *from, int to)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	static char buf[1 << 16];
	int rc = 0;
	for (;;) {
		ssize_t r = read(in, buf, sizeof(buf));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : 0;
			break;
		}
		for (ssize_t off = 0; off < r;) {
			ssize_t w = write(to, buf + off, (size_t)(r - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				rc = w < 0 ? -errno : -EIO;
				break;
			}
			off += w;
		}
		if (rc)
			break;
	}
	close(in);
	return rc;
}

int weft_outfile_commit(struct weft_outfile *o)
{
	int rc = 0;
	if (o->fd >= 0 && close(o->fd))
		rc = -errno;
	o->fd = -1;
	if (rc) {
		weft_cli_error(o->cmd, "writing %s failed: %s", o->path, strerror(-rc));
		weft_outfile_abort(o);
		return WEFT_EXIT_FAIL;
	}
	if (o->copy) {
		int to = open(o->path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
		rc = to < 0 ? -errno : copy_into(o->tmp, to);
		if (to >= 0 && close(to) && !rc)
			rc = -errno;
	} else if (o->tmp[0] && rename(o->tmp, o->path)) {
		rc = -errno;
	}
	if (rc) {
		weft_cli_error(o->cmd, "cannot write %s: %s", o->path, strerror(-rc));
		weft_outfile_abort(o);
		return WEFT_EXIT_FAIL;
	}
	if (o->copy)
		unlink(o->tmp);
	o->tmp[0] = 0;
	return 0;
}

void weft_outfile_abort(struct weft_outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = 0;
}
