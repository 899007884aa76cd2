/*
 * meta.c - the per-process metadata file (P.wmeta): a file header, then length-prefixed
 * records appended with one writev each, under a lock. Records are rare (a call site's first
 * event, a thread's start and end, a clock point every 100 ms) so a system call each is fine,
 * and a record is on disk as soon as the event that needed it can be: a trace cut short by
 * SIGKILL still has the definitions of every id its chunks use.
 */
#include "internal.h"
#include "job.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
/* All guarded by meta_lock. */
static struct weft_file meta_file = {.fd = -1};
static int meta_failed_logged; /* one log line per process, not one per failed write */
static int meta_tight;         /* the disk is full: only the final totals may still be written */
static off_t meta_reserved;    /* file offset up to which space is allocated ahead */
#define META_RESERVE 16384      /* room kept for the final records (FINISH and friends) */

/* Keep META_RESERVE bytes allocated past the end of the file (without changing its size), so
 * that when the disk fills the final totals can still be written. Where it cannot be kept
 * (the disk is full), later records other than the final ones are skipped. */
static void meta_reserve(void)
{
	struct stat st;
	int fd = weft_file_fd(&meta_file); /* checked again: fallocate only weft's own file */
	if (fd < 0 || fstat(fd, &st))
		return;
	if (meta_reserved - st.st_size >= META_RESERVE / 2)
		return;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, st.st_size, META_RESERVE) == 0)
		meta_reserved = st.st_size + META_RESERVE;
	else if (errno == ENOSPC)
		meta_tight = 1;
}

/* The launcher's view of this process (job.c), read from the environment once, at the
 * trace's start (under weft_g.lock); a forked child keeps its parent's. */
static struct weft_job job;
static int job_read;
static const char *env(const char *name) { return getenv(name); }
static const struct weft_job *this_job(void)
{
	if (!job_read) {
		weft_job_detect(&job, env);
		job_read = 1;
	}
	return &job;
}

const struct weft_job *weft_job_this(void)
{
	return this_job();
}

int weft_in_job(void)
{
	return this_job()->known;
}

/* Files are named by a stem: the pid, or pid.N for the N-th image of a process that exec'd
 * (the same pid records again, and must not overwrite what its earlier image wrote). A task
 * of a job names its files HOST-rRANK-PID[.N]: the ranks of a job on several hosts can share
 * one directory, and a directory listing reads in rank order per host. */
int weft_meta_open(const char *dir, int pid, char *stem, size_t stemlen)
{
	char path[PATH_MAX], prefix[300] = "";
	const struct weft_job *j = this_job();
	if (j->known) {
		char host[256], hp[256];
		weft_host(host, sizeof(host));
		weft_job_host_part(host, hp, sizeof(hp));
		snprintf(prefix, sizeof(prefix), "%s-r%u-", hp, (unsigned)j->rank);
	}
	if (weft_flight_active()) { /* the records stay in memory until a snapshot (flight.c) */
		if (j->known)
			snprintf(stem, stemlen, "%s%d", prefix, pid);
		else
			snprintf(stem, stemlen, "%d", pid);
		return 0;
	}
	int fd = -1;
	for (int gen = 0; gen < 1000 && fd < 0; gen++) {
		if (gen)
			snprintf(stem, stemlen, "%s%d.%d", prefix, pid, gen);
		else
			snprintf(stem, stemlen, "%s%d", prefix, pid);
		snprintf(path, sizeof(path), "%s/%s.wmeta", dir, stem);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	struct weft_file_header h;
	weft_file_header_init(&h, WEFT_META_MAGIC, pid, 0, weft_clock_kind());
	if (write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		int e = errno ? -errno : -EIO;
		close(fd);
		unlink(path);
		return e;
	}
	pthread_mutex_lock(&meta_lock);
	meta_tight = meta_failed_logged = 0;
	meta_reserved = 0;
	int rc = weft_file_own(&meta_file, fd, path);
	if (!rc)
		meta_reserve();
	pthread_mutex_unlock(&meta_lock);
	return rc;
}

void weft_meta_close(void)
{
	pthread_mutex_lock(&meta_lock);
	weft_file_close(&meta_file);
	pthread_mutex_unlock(&meta_lock);
}

/* The records written when the trace ends, and a thread's name (small, and what its totals
 * are reported under: a thread that starts once the disk is full still gets one): they use
 * the reserved room. */
static int is_final(unsigned type)
{
	return type == WEFT_M_FINISH || type == WEFT_M_FUNC_FILTER || type == WEFT_M_OVERHEAD ||
	       type == WEFT_M_WRITE_FAILED || type == WEFT_M_SIGNAL || type == WEFT_M_CLOCK ||
	       type == WEFT_M_THREAD_END || type == WEFT_M_THREAD || type == WEFT_M_RUSAGE ||
	       type == WEFT_M_MEMORY || type == WEFT_M_ACCESS || type == WEFT_M_WATCH;
}

void weft_meta_write(unsigned type, const void *a, size_t alen, const void *b, size_t blen)
{
	struct weft_meta_rec_header h = {(uint16_t)type, 0, (uint32_t)(alen + blen)};
	struct iovec iov[3] = {{&h, sizeof(h)}, {(void *)a, alen}, {(void *)b, blen}};
	int saved = errno;
	weft_in_runtime++;
	if (weft_lock_fatal(&meta_lock, WEFT_HOLD_META)) { /* a fatal handler on a thread holding it */
		weft_in_runtime--;
		errno = saved;
		return;
	}
	if (weft_flight_active())
		weft_flight_meta(iov, 3);
	else if (meta_file.fd >= 0 && (!meta_tight || is_final(type))) {
		int rc = weft_file_append(&meta_file, iov, 3);
		if (rc) {
			if (!meta_failed_logged)
				weft_log(WEFT_LOG_ERROR, "metadata write failed: %s; keeping room for the totals",
					 strerror(-rc));
			meta_failed_logged = 1;
			meta_tight = 1;
		} else if (!meta_tight) {
			meta_reserve();
		}
	}
	weft_unlock(&meta_lock, WEFT_HOLD_META);
	weft_in_runtime--;
	errno = saved;
}

void weft_meta_write_failed(int err)
{
	uint32_t w[2] = {(uint32_t)err, 0};
	pthread_mutex_lock(&meta_lock);
	meta_tight = 1; /* the events could not be written: keep what room is left for the end */
	pthread_mutex_unlock(&meta_lock);
	weft_meta_write(WEFT_M_WRITE_FAILED, w, sizeof(w), NULL, 0);
}

void weft_meta_clock(void)
{
	struct weft_clock_point p;
	weft_clock_sample(&p);
	uint64_t w[3] = {p.ticks, p.boot_ns, p.real_ns};
	weft_meta_write(WEFT_M_CLOCK, w, sizeof(w), NULL, 0);
}

/* A last calibration point where the trace cannot be finished (the process ends from a signal
 * handler that interrupted the runtime on this thread, which may hold the metadata's lock):
 * written only if that lock is free. Without it a run shorter than the writers' first point
 * (10 ms) would keep one point, and its times would stay raw ticks. Async-signal-safe as far
 * as the write it makes. */
void weft_meta_clock_try(void)
{
	struct weft_clock_point p;
	weft_clock_sample(&p);
	uint64_t w[3] = {p.ticks, p.boot_ns, p.real_ns};
	struct weft_meta_rec_header h = {(uint16_t)WEFT_M_CLOCK, 0, (uint32_t)sizeof(w)};
	struct iovec iov[2] = {{&h, sizeof(h)}, {w, sizeof(w)}};
	int saved = errno;
	if (pthread_mutex_trylock(&meta_lock) == 0) {
		if (weft_flight_active())
			weft_flight_meta(iov, 2);
		else if (meta_file.fd >= 0)
			weft_file_append(&meta_file, iov, 2);
		pthread_mutex_unlock(&meta_lock);
	}
	errno = saved;
}

/* Process record: pid, ppid, start time, host, command line from /proc/self/cmdline. */
void weft_meta_process(void)
{
	char buf[8192];
	size_t n = 0;
	uint32_t ids[2] = {(uint32_t)getpid(), (uint32_t)getppid()};
	uint64_t start = weft_boottime_ns();
	memcpy(buf, ids, 8);
	memcpy(buf + 8, &start, 8);
	n = 16;
	char host[256] = "";
	weft_host(host, sizeof(host));
	size_t hl = strlen(host) + 1;
	memcpy(buf + n, host, hl);
	n += hl;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t r = read(fd, buf + n, sizeof(buf) - n - 2);
		if (r > 0)
			n += (size_t)r;
		close(fd);
	}
	buf[n++] = 0;
	buf[n++] = 0;
	weft_meta_write(WEFT_M_PROCESS, buf, n, NULL, 0);
	uint32_t ck[2] = {(uint32_t)weft_clock_kind(), 0};
	uint64_t hz = weft_clock_nominal_hz();
	char cs[16];
	memcpy(cs, ck, 8);
	memcpy(cs + 8, &hz, 8);
	weft_meta_write(WEFT_M_CLOCK_SOURCE, cs, 16, NULL, 0);
	const struct weft_job *j = this_job();
	if (j->known) { /* u32 rank, size, local rank, local size; id\0 launcher\0 */
		uint32_t jw[4] = {j->rank, j->size, j->local_rank, j->local_size};
		char js[sizeof(j->id) + sizeof(j->launcher)];
		size_t il = strlen(j->id) + 1, ll = strlen(j->launcher) + 1;
		memcpy(js, j->id, il);
		memcpy(js + il, j->launcher, ll);
		weft_meta_write(WEFT_M_JOB, jw, sizeof(jw), js, il + ll);
	}
	if (weft_cfg.given[0])
		weft_meta_write(WEFT_M_OPTIONS, weft_cfg.given, strlen(weft_cfg.given) + 1, NULL, 0);
	if (weft_cfg.name[0])
		weft_meta_write(WEFT_M_PROCESS_NAME, weft_cfg.name, strlen(weft_cfg.name) + 1, NULL, 0);
	weft_meta_clock();
}

void weft_process_name(const char *name)
{
	if (!name || weft_ensure_started())
		return;
	weft_meta_write(WEFT_M_PROCESS_NAME, name, strlen(name) + 1, NULL, 0);
}

void weft_note(const char *text)
{
	if (!text || !*text || weft_ensure_started())
		return;
	weft_meta_write(WEFT_M_NOTE, text, strnlen(text, 1000), "", 1);
}

void weft_meta_atfork_prepare(void) { pthread_mutex_lock(&meta_lock); }
void weft_meta_atfork_parent(void) { pthread_mutex_unlock(&meta_lock); }
void weft_meta_atfork_child(void)
{
	pthread_mutex_init(&meta_lock, NULL);
	weft_file_close(&meta_file); /* the parent's file; the child opens its own */
}
