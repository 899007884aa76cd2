/*
 * tracedir.c - where `weft record` puts a trace. A plain run makes DIR fresh: an earlier
 * trace in DIR goes to DIR.old (like perf.data.old). The recorders of one parallel job
 * (`mpirun -np 4 weft record -o D -- ./app`, srun, mpiexec) all name the same DIR and start at
 * the same moment, so they take turns under an flock(2) on DIR itself: the first to find DIR
 * without its job's mark (DIR/.weft-job, holding the launcher's job id) moves DIR aside, makes
 * a fresh one and marks it; the others find the mark and join. A recorder that locked a DIR
 * someone moved meanwhile sees the inode differ from the path's and locks the new one. Each
 * recorder registers (DIR/.weft-run-PID@HOST) and, when its program ended, turns that into
 * DIR/.weft-done-PID@HOST; the one that finds no recorder running and as many done on its
 * host as the launcher started there (or as many as the job has) is the last, and converts,
 * still holding the lock, so nothing moves DIR under the conversion.
 */
#include "tool/tracedir.h"
#include "format/format.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define JOB_MARK ".weft-job"

/* weft's own names in a trace directory: its data, the conversion (and one cut short,
 * outfile.c's temporary), the job's mark, registrations and claim, a recorder's control socket */
static int is_weft_name(const char *n)
{
	return !strcmp(n, "trace.pftrace") || !strncmp(n, ".trace.pftrace.weft-", 20) || weft_is_trace_file(n) ||
	       !strcmp(n, JOB_MARK) || !strncmp(n, ".weft-run-", 10) || !strncmp(n, ".weft-done-", 11) ||
	       !strncmp(n, ".weft-claimed@", 14) || !strncmp(n, ".control.", 9);
}

/* A trace directory weft writes inside one: the flight recorder's snapshot-N, --switch-output's
 * part-N, and either one still being written (.snapshot-PID.tmp, .part-PID.tmp). */
static int is_weft_subdir_name(const char *n)
{
	const char *kinds[] = {"snapshot-", "part-"};
	int tmp = n[0] == '.';
	for (size_t k = 0; k < 2; k++) {
		size_t l = strlen(kinds[k]);
		if (strncmp(n + tmp, kinds[k], l))
			continue;
		const char *p = n + tmp + l, *digits = p;
		while (*p >= '0' && *p <= '9')
			p++;
		if (p > digits && (tmp ? !strcmp(p, ".tmp") : !*p))
			return 1;
	}
	return 0;
}

static int is_trace_dir_depth(const char *dir, int depth);

void weft_tracedir_subdirs(const char *dir, struct weft_tracedir_subdirs out[2])
{
	memset(out, 0, 2 * sizeof(*out));
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		if (n[0] == '.' || !is_weft_subdir_name(n))
			continue;
		struct weft_tracedir_subdirs *s = &out[n[0] == 'p'];
		unsigned k = (unsigned)strtoul(strchr(n, '-') + 1, NULL, 10);
		if (!s->n || k < s->lo)
			s->lo = k;
		if (!s->n || k > s->hi)
			s->hi = k;
		s->n++;
	}
	closedir(d);
}

/* Is entry n of dir weft's: one of its files, or (at the top) a snapshot or part that is itself
 * a trace directory. */
static int is_weft_entry(const char *dir, const char *n, int depth)
{
	if (is_weft_name(n))
		return 1;
	if (depth > 0 || !is_weft_subdir_name(n))
		return 0;
	char p[PATH_MAX + 300];
	snprintf(p, sizeof(p), "%s/%s", dir, n);
	return is_trace_dir_depth(p, depth + 1);
}

static int is_trace_dir_depth(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int ok = 1;
	struct dirent *e;
	while (ok && (e = readdir(d)))
		ok = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || is_weft_entry(dir, e->d_name, depth);
	closedir(d);
	return ok;
}

/* Is `dir` a directory weft may move aside: a trace directory (weft files only, or empty; the
 * flight recorder's snapshots and parts in it are trace directories too)? */
static int is_trace_dir(const char *dir)
{
	return is_trace_dir_depth(dir, 0);
}

/* Removes the weft files of an old trace directory, its snapshots and parts, then the
 * directory (no shell: a name is only ever a path). */
static int remove_trace_dir_depth(const char *dir, int depth)
{
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		char p[PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
		if (is_weft_name(e->d_name))
			unlink(p);
		else if (!depth && is_weft_subdir_name(e->d_name))
			remove_trace_dir_depth(p, depth + 1);
	}
	closedir(d);
	return rmdir(dir) ? -errno : 0;
}

static int remove_trace_dir(const char *dir)
{
	return remove_trace_dir_depth(dir, 0);
}

/* DIR (a trace directory) to DIR.old, an older DIR.old removed first. */
static int move_aside(const char *dir, char *why, size_t whylen)
{
	struct stat st;
	if (!is_trace_dir(dir)) {
		snprintf(why, whylen, "%s exists and is not a weft trace directory; not touching it", dir);
		return -EEXIST;
	}
	char old[PATH_MAX + 8];
	snprintf(old, sizeof(old), "%s.old", dir);
	if (lstat(old, &st) == 0) {
		if (!S_ISDIR(st.st_mode) || !is_trace_dir(old)) {
			snprintf(why, whylen, "%s exists and is not a weft trace directory; not moving %s there", old, dir);
			return -EEXIST;
		}
		int rc = remove_trace_dir(old);
		if (rc) {
			snprintf(why, whylen, "cannot remove %s: %s", old, strerror(-rc));
			return rc;
		}
	}
	if (rename(dir, old)) {
		int e = errno;
		snprintf(why, whylen, "cannot move %s to %s: %s", dir, old, strerror(e));
		return -e;
	}
	return 0;
}

int weft_tracedir_prepare(const char *dir, char *why, size_t whylen)
{
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (!S_ISDIR(st.st_mode)) {
			snprintf(why, whylen, "%s exists and is not a weft trace directory; not touching it", dir);
			return -EEXIST;
		}
		int rc = move_aside(dir, why, whylen);
		if (rc)
			return rc;
	}
	if (mkdir(dir, 0755)) {
		int e = errno;
		snprintf(why, whylen, "cannot create %s: %s", dir, strerror(e));
		return -e;
	}
	return 0;
}

/* The job id DIR is marked with, or "" (no mark). */
static void read_mark(const char *dir, char *id, size_t n)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/" JOB_MARK, dir);
	id[0] = 0;
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	ssize_t r = read(fd, id, n - 1);
	close(fd);
	id[r > 0 ? r : 0] = 0;
	id[strcspn(id, "\n")] = 0;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	size_t l = strlen(text);
	int rc = write(fd, text, l) == (ssize_t)l ? 0 : -EIO;
	close(fd);
	return rc;
}

static int is_empty_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	struct dirent *e;
	int empty = 1;
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return empty;
}

int weft_jobdir_join(struct weft_jobdir *jd, const char *dir, const struct weft_job *job, const char *host,
		     char *why, size_t whylen)
{
	memset(jd, 0, sizeof(*jd));
	jd->fd = -1;
	snprintf(jd->dir, sizeof(jd->dir), "%s", dir);
	weft_job_host_part(host, jd->host, sizeof(jd->host));
	jd->expect = job->local_size ? job->local_size : job->size;
	jd->size = job->size;
	char mark[sizeof(job->id) + 2];
	snprintf(mark, sizeof(mark), "%s\n", job->id);
	for (int tries = 0; tries < 1000; tries++) {
		if (mkdir(dir, 0755) && errno != EEXIST) {
			int e = errno;
			snprintf(why, whylen, "cannot create %s: %s", dir, strerror(e));
			return -e;
		}
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0) {
			if (errno == ENOENT) /* moved between our mkdir and open */
				continue;
			int e = errno;
			snprintf(why, whylen, "%s: %s", dir, strerror(e));
			return -e;
		}
		struct stat held, now;
		while (flock(fd, LOCK_EX) && errno == EINTR)
			;
		if (fstat(fd, &held) || stat(dir, &now) || held.st_ino != now.st_ino || held.st_dev != now.st_dev) {
			close(fd); /* DIR was moved aside while we waited: lock the new one */
			continue;
		}
		char id[sizeof(job->id)];
		read_mark(dir, id, sizeof(id));
		int rc = 0;
		if (strcmp(id, job->id) && !is_empty_dir(dir)) {
			/* an earlier run's: aside, and a fresh DIR (still locked through fd, the old
			 * inode: the job's other recorders waiting on it then see it moved) */
			rc = move_aside(dir, why, whylen);
			if (!rc && mkdir(dir, 0755) && errno != EEXIST) {
				rc = -errno;
				snprintf(why, whylen, "cannot create %s: %s", dir, strerror(errno));
			}
			close(fd);
			if (rc)
				return rc;
			continue;
		}
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/" JOB_MARK, dir);
		if (!id[0])
			rc = write_file(p, mark);
		snprintf(jd->run, sizeof(jd->run), "%s/.weft-run-%d@%s", dir, (int)getpid(), jd->host);
		snprintf(jd->done, sizeof(jd->done), "%s/.weft-done-%d@%s", dir, (int)getpid(), jd->host);
		if (!rc)
			rc = write_file(jd->run, "");
		if (rc) {
			snprintf(why, whylen, "cannot write in %s: %s", dir, strerror(-rc));
			close(fd);
			return rc;
		}
		flock(fd, LOCK_UN);
		jd->fd = fd;
		return 0;
	}
	snprintf(why, whylen, "%s keeps being moved by others; giving up", dir);
	return -EBUSY;
}

int weft_jobdir_run_gone(const char *name, const char *host)
{
	const char *at = strchr(name, '@');
	int pid = atoi(name + 10);
	return !strncmp(name, ".weft-run-", 10) && at && !strcmp(at + 1, host) && pid > 0 && kill(pid, 0) &&
	       errno == ESRCH;
}

/* The job's registrations in DIR: a run file of this host whose recorder is gone (killed)
 * counts as ended, not waited for */
struct jobdir_counts {
	unsigned running, running_here, done_here, done_all;
	int claimed; /* .weft-claimed@HOST of this host is there */
};
static struct jobdir_counts jobdir_scan(const struct weft_jobdir *jd)
{
	struct jobdir_counts c = {0};
	DIR *d = opendir(jd->dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		const char *at = strchr(e->d_name, '@');
		int here = at && !strcmp(at + 1, jd->host);
		if (weft_jobdir_run_gone(e->d_name, jd->host))
			c.done_all++, c.done_here++;
		else if (!strncmp(e->d_name, ".weft-run-", 10))
			c.running++, c.running_here += here;
		else if (!strncmp(e->d_name, ".weft-done-", 11))
			c.done_all++, c.done_here += here;
		else if (here && !strncmp(e->d_name, ".weft-claimed@", 14))
			c.claimed = 1;
	}
	if (d)
		closedir(d);
	return c;
}

int weft_jobdir_handover(struct weft_jobdir *jd, pid_t pid)
{
	char run[sizeof(jd->run)], done[sizeof(jd->done)];
	int dirlen = (int)(strrchr(jd->run, '/') - jd->run); /* (DIR as cut in jd->run) */
	snprintf(run, sizeof(run), "%.*s/.weft-run-%d@%s", dirlen, jd->run, (int)pid, jd->host);
	snprintf(done, sizeof(done), "%.*s/.weft-done-%d@%s", dirlen, jd->run, (int)pid, jd->host);
	if (rename(jd->run, run))
		return -errno;
	memcpy(jd->run, run, sizeof(run));
	memcpy(jd->done, done, sizeof(done));
	return 0;
}

int weft_jobdir_leave(struct weft_jobdir *jd, const char *ending)
{
	if (jd->fd < 0)
		return 0;
	while (flock(jd->fd, LOCK_EX) && errno == EINTR)
		;
	/* the registration becomes the record of how the rank ended (written, then renamed: a
	 * reader never sees a done file without its line) */
	if (write_file(jd->run, ending ? ending : "") || rename(jd->run, jd->done))
		write_file(jd->done, ending ? ending : "");
	struct jobdir_counts c = jobdir_scan(jd);
	unsigned running = c.running, done_here = c.done_here, done_all = c.done_all;
	/* per host: hosts sharing DIR each convert once their own ranks ended (harmless: the
	 * output is replaced whole); the whole job: ranks given other host names on one machine */
	int last = !running && (!jd->expect || done_here >= jd->expect || (jd->size && done_all >= jd->size));
	if (!last) {
		flock(jd->fd, LOCK_UN);
		weft_jobdir_close(jd);
	}
	jd->done_seen = done_all;
	return last ? 1 : running ? 0 : 2;
}

int weft_jobdir_claim(struct weft_jobdir *jd)
{
	int fd = open(jd->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (flock(fd, LOCK_EX) && errno == EINTR)
		;
	struct jobdir_counts c = jobdir_scan(jd);
	char mark[300];
	snprintf(mark, sizeof(mark), ".weft-claimed@%s", jd->host);
	char path[sizeof(jd->dir) + 320];
	snprintf(path, sizeof(path), "%s/%s", jd->dir, mark);
	if (c.running || c.claimed || c.done_all != jd->done_seen || write_file(path, "")) {
		close(fd); /* (a recorder that came since, or one that claimed first, converts) */
		return 0;
	}
	jd->fd = fd;
	return 1;
}

int weft_jobdir_running_here(const struct weft_jobdir *jd)
{
	return (int)jobdir_scan(jd).running_here;
}

void weft_jobdir_close(struct weft_jobdir *jd)
{
	if (jd->fd >= 0)
		close(jd->fd); /* drops the lock */
	jd->fd = -1;
}

int weft_tracedir_not_written(const char *dir, void (*fn)(const char *name, const char *line, void *ud), void *ud)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (strncmp(e->d_name, "window-not-written-", 19))
			continue;
		n++;
		char path[4096], line[600];
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		FILE *f = fn ? fopen(path, "r") : NULL;
		if (f && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			fn(e->d_name, line, ud);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}
