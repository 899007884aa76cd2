/*
 * fdfile.c - the files weft writes (metadata, events), held so that weft never writes into a
 * descriptor it no longer owns. A program may close every descriptor (daemons, closefrom,
 * close_range) and open its own files, which then get weft's old numbers. So weft's
 * descriptors are moved high (near the RLIMIT_NOFILE soft limit, close-on-exec), and before
 * every write the descriptor is checked (fstat: same device and inode as when opened); if it
 * no longer is weft's file, the file is opened again by its path (append), never written
 * through the stale number, which now belongs to the program. What cannot be written is
 * counted by the callers as dropped.
 *
 * The check and the write are two system calls: the program may close the descriptor between
 * them (close_range from another thread while a writer writes). The write then fails with
 * EBADF, or stops part way; weft_file_append takes that as "taken away", not as a failed disk:
 * it finds its file again (by its path), cuts off the part of the record already written, and
 * writes the record again. (Were the program to open a file of its own at weft's exact high
 * number inside that window, a write would still land there: dup2 to that number, or 900 open
 * files, within microseconds; no descriptor can be kept from close_range.)
 */
#include "internal.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* The descriptor table's size (RLIMIT_NOFILE; 1024 where it is unlimited or unknown). */
static long fd_limit(void)
{
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (1u << 20))
		return (long)rl.rlim_cur;
	return 1024;
}

/* fd moved to a high number (close-on-exec), from `from` up (0: the top of the descriptor
 * table's range); the original is closed. Returns the new fd, or fd itself when no high slot is
 * free. Each file keeps the number it got first (its slot) and a reopen asks for that one: a
 * writer that checked its descriptor just before the program closed it must not find, under
 * that number, another file of weft's reopened meanwhile by another thread (its write would
 * land there: a chunk lost from the events, written into the metadata, 1 run in 30 of
 * ft_exits closeloop under load). The program's own files take the lowest free numbers. */
static int move_high(int fd, int from)
{
	long min = from;
	if (min <= 0) { /* the files' slots: the top 128 */
		long lim = fd_limit();
		min = lim > 256 ? lim - 128 : lim / 2;
	}
	if (min <= fd)
		return fd;
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)min);
	if (hi < 0)
		return fd;
	close(fd);
	return hi;
}

int weft_fd_high(int fd)
{
	if (fd < 0)
		return fd;
	long lim = fd_limit();
	/* below the files' slots (the top 128), which a reopen asks for again by number */
	return move_high(fd, lim > 512 ? (int)(lim - 384) : (int)(lim / 4));
}

int weft_file_own(struct weft_file *f, int fd, const char *path)
{
	struct stat st;
	if (fstat(fd, &st))
		return -errno;
	f->fd = f->slot = move_high(fd, 0);
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	snprintf(f->path, sizeof(f->path), "%s", path);
	return 0;
}

int weft_file_fd(struct weft_file *f)
{
	struct stat st;
	if (f->fd >= 0 && !fstat(f->fd, &st) && st.st_dev == f->dev && st.st_ino == f->ino)
		return f->fd;
	/* not ours any more: the number is the program's now, leave it alone */
	f->fd = -1;
	/* The program may close the new descriptor too (close_range in a loop) and open a file of
	 * its own under its number before the check: then that number is the program's, and must
	 * be neither written nor closed; try again. A different file under weft's name (the trace
	 * replaced) leaves its descriptor open (it cannot be told from the program's), at most a
	 * few times, once: the caller stops writing after -ESTALE. */
	for (int tries = 0; tries < 8; tries++) {
		int fd = open(f->path, O_WRONLY | O_APPEND | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (!fstat(fd, &st) && st.st_dev == f->dev && st.st_ino == f->ino) {
			f->fd = move_high(fd, f->slot);
			return f->fd;
		}
	}
	return -ESTALE;
}

/* Writes all of iov[0..n) (n <= 8) at the end of fd; 0 or -errno. */
static int write_all(int fd, const struct iovec *in, int n)
{
	struct iovec v[8], *iov = v;
	if (n > 8)
		return -EINVAL;
	memcpy(v, in, sizeof(*in) * (size_t)n);
	while (n > 0) {
		ssize_t r = writev(fd, iov, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		while (n > 0 && (size_t)r >= iov->iov_len) {
			r -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + r;
			iov->iov_len -= (size_t)r;
		}
	}
	return 0;
}

int weft_file_append(struct weft_file *f, const struct iovec *iov, int n)
{
	int rc = -EBADF;
	/* a few tries: each lost descriptor is found again by its path */
	for (int tries = 0; tries < 8 && rc == -EBADF; tries++) {
		int fd = weft_file_fd(f);
		if (fd < 0)
			return fd;
		off_t before = lseek(fd, 0, SEEK_END);
		rc = before < 0 ? -errno : write_all(fd, iov, n);
		if (rc && before >= 0) {
			/* no half record left behind; truncated through a descriptor checked again, as
			 * this one may be the program's by now */
			int again = weft_file_fd(f);
			if (again >= 0 && ftruncate(again, before))
				(void)0; /* rc says why already */
		}
	}
	return rc;
}

void weft_file_close(struct weft_file *f)
{
	struct stat st;
	if (f->fd >= 0 && !fstat(f->fd, &st) && st.st_dev == f->dev && st.st_ino == f->ino)
		close(f->fd);
	f->fd = -1;
}
