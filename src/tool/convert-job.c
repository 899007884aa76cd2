/*
 * convert-job.c - `weft convert D -o F` as a parallel job: every rank of `mpirun -np N weft
 * convert ...` (or srun, or any launcher job.c reads) opens the whole trace (the reader maps
 * the files; each rank computes the same host alignment from the metadata), and writes the
 * threads of its share of the processes, cut by events (weft_export_pftrace_part). Perfetto
 * reads a .pftrace made of several packet streams one after another; the parts in rank order
 * are byte for byte the file one process writes.
 *
 * No MPI is needed: the ranks meet in F's directory, which every rank must see (as D).
 *   rank R > 0  writes F.weft-part-R-of-N.tmp, then F.weft-part-R-of-N.sum (its counts) and
 *               renames the part to F.weft-part-R-of-N; on failure F.weft-part-R-of-N.failed
 *               with the reason (and it exits 1, which makes the launcher end the job);
 *   rank 0      writes its part into F's temporary (outfile.c), then appends each other part
 *               as it is complete, in rank order, removing it; F is renamed into place only
 *               when all are in. A failed rank fails rank 0 with its reason; so does a job
 *               from which no part came for WEFT_CONVERT_JOB_TIMEOUT s (600). No F is left
 *               then, and no part.
 */
#include "tool/convert-job.h"
#include "lib/job.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *env(const char *name)
{
	return getenv(name);
}

static const char *out_path; /* F: set by detect */
static char job_id[160];     /* the launcher's job id as a file name part: parts of another run never mix */

static void part_name(const char *out, unsigned rank, unsigned size, const char *suffix, char *buf, size_t n)
{
	snprintf(buf, n, "%s.weft-part-%s-%u-of-%u%s", out, job_id, rank, size, suffix);
}

int weft_convert_job_detect(struct weft_convert_job *j, const char *out)
{
	memset(j, 0, sizeof(*j));
	j->size = 1;
	const char *split = getenv("WEFT_CONVERT_SPLIT");
	if (split && !strcmp(split, "0"))
		return 0;
	struct weft_job jb;
	if (!weft_job_detect(&jb, env) || jb.size < 2 || jb.rank >= jb.size)
		return 0;
	j->rank = jb.rank;
	j->size = jb.size;
	j->local_size = jb.local_size ? jb.local_size : 1;
	out_path = out;
	weft_job_host_part(jb.id[0] ? jb.id : "job", job_id, sizeof(job_id));
	part_name(out, j->rank, j->size, "", j->part, sizeof(j->part));
	return 1;
}

FILE *weft_convert_job_part_open(struct weft_convert_job *j)
{
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s.tmp", j->part);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return NULL;
	FILE *f = fdopen(fd, "wb");
	if (!f)
		close(fd);
	return f;
}

static int write_text(const char *path, const char *text)
{
	char tmp[PATH_MAX + 16];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "we");
	if (!f)
		return -errno;
	int bad = fputs(text, f) < 0;
	bad |= fclose(f) != 0;
	if (bad || rename(tmp, path)) {
		int e = errno ? errno : EIO;
		unlink(tmp);
		return -e;
	}
	return 0;
}

int weft_convert_job_part_done(struct weft_convert_job *j, FILE *f, int ok, const char *why, uint64_t events,
			       uint64_t dropped)
{
	char tmp[PATH_MAX + 16], side[PATH_MAX + 16], text[1100];
	snprintf(tmp, sizeof(tmp), "%s.tmp", j->part);
	if (f && fclose(f) && ok) {
		ok = 0;
		why = strerror(errno);
	}
	if (ok) {
		snprintf(side, sizeof(side), "%s.sum", j->part);
		snprintf(text, sizeof(text), "%llu %llu\n", (unsigned long long)events, (unsigned long long)dropped);
		int rc = write_text(side, text);
		if (!rc && rename(tmp, j->part))
			rc = -errno;
		if (!rc)
			return 0;
		ok = 0;
		why = strerror(-rc);
	}
	unlink(tmp);
	snprintf(side, sizeof(side), "%s.failed", j->part);
	snprintf(text, sizeof(text), "%s\n", why ? why : "failed");
	int rc = write_text(side, text);
	/* rank 0 says it (once, for the job) and removes the file: waited for up to 5 s, so that the
	 * launcher, which ends the job when this rank exits with 1, does not end rank 0 first */
	for (int i = 0; !rc && i < 250 && !access(side, F_OK); i++)
		usleep(20000);
	return rc ? rc : access(side, F_OK) ? 1 : 0;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Appends the file at path to out. 0 or -errno. */
static int append(FILE *out, const char *path)
{
	FILE *in = fopen(path, "re");
	if (!in)
		return -errno;
	static char buf[1 << 20];
	size_t r;
	int rc = 0;
	while ((r = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, r, out) != r) {
			rc = -(errno ? errno : EIO);
			break;
		}
	if (!rc && ferror(in))
		rc = -EIO;
	fclose(in);
	return rc;
}

static void read_line(const char *path, char *buf, size_t n)
{
	buf[0] = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)n, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* The size of rank r's temporary part (0 if none): progress while it converts. */
static long long tmp_size(struct weft_convert_job *j, unsigned r)
{
	char p[PATH_MAX + 64];
	part_name(out_path, r, j->size, ".tmp", p, sizeof(p));
	struct stat st;
	return stat(p, &st) ? 0 : (long long)st.st_size;
}

int weft_convert_job_each(struct weft_convert_job *j, weft_job_take_fn take, void *ud, char *why, size_t n)
{
	const char *t = getenv("WEFT_CONVERT_JOB_TIMEOUT");
	double timeout = t && atof(t) > 0 ? atof(t) : 600, last = now_s();
	long long seen = 0;
	int rc = 0;
	for (unsigned r = 1; r < j->size && !rc;) {
		char part[PATH_MAX + 64], side[PATH_MAX + 64], line[1100];
		part_name(out_path, r, j->size, ".failed", side, sizeof(side));
		if (!access(side, F_OK)) {
			read_line(side, line, sizeof(line));
			snprintf(why, n, "rank %u of %u failed: %s", r, j->size, line[0] ? line : "(no reason given)");
			rc = -1;
			break;
		}
		part_name(out_path, r, j->size, "", part, sizeof(part));
		if (access(part, F_OK)) {
			long long sz = tmp_size(j, r);
			if (sz != seen) { /* it is still writing: time runs from its last progress */
				seen = sz;
				last = now_s();
			}
			if (now_s() - last > timeout) {
				snprintf(why, n, "no part from rank %u of %u in %.0f s (is %s on a file system every rank "
					 "sees?)", r, j->size, timeout, out_path);
				rc = -1;
				break;
			}
			usleep(20000);
			continue;
		}
		part_name(out_path, r, j->size, ".sum", side, sizeof(side));
		read_line(side, line, sizeof(line));
		rc = take(ud, r, part, line, why, n);
		unlink(part);
		unlink(side);
		seen = 0;
		last = now_s();
		r++;
	}
	if (rc)
		weft_convert_job_cleanup(j);
	return rc;
}

struct gather {
	FILE *out;
	uint64_t *events, *dropped;
};

/* A .pftrace part: appended; its counts added. */
static int take_pftrace(void *ud, unsigned r, const char *part, const char *sum, char *why, size_t n)
{
	struct gather *g = ud;
	unsigned long long ev = 0, dr = 0;
	if (sscanf(sum, "%llu %llu", &ev, &dr) == 2) {
		*g->events += ev;
		*g->dropped += dr;
	}
	int a = append(g->out, part);
	if (a) {
		snprintf(why, n, "appending rank %u's part %s: %s", r, part, strerror(-a));
		return -1;
	}
	return 0;
}

int weft_convert_job_gather(struct weft_convert_job *j, FILE *out, uint64_t *events, uint64_t *dropped, char *why,
			    size_t n)
{
	struct gather g = {out, events, dropped};
	return weft_convert_job_each(j, take_pftrace, &g, why, n);
}

void weft_convert_job_cleanup(struct weft_convert_job *j)
{
	static const char *const suffixes[] = {"", ".tmp", ".sum", ".sum.tmp", ".failed", ".failed.tmp"};
	for (unsigned r = 0; r < j->size; r++)
		for (size_t k = 0; k < sizeof(suffixes) / sizeof(suffixes[0]); k++) {
			char p[PATH_MAX + 64];
			part_name(out_path, r, j->size, suffixes[k], p, sizeof(p));
			unlink(p);
		}
}
