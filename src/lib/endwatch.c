/*
 * endwatch.c - a process ends when its last thread does: glibc calls exit(0) once the count of
 * threads it keeps (every thread, weft's own included) drops to zero. weft's threads (writers,
 * the control thread, samplers) would keep such a process alive for ever once the program's
 * last thread ended by pthread_exit: main's pthread_exit after its workers ended, or the only
 * thread of a child forked by a thread other than main (Python's threading ends a thread so).
 * Its main thread a zombie, the process is never reaped, and the signals that would end it are
 * blocked by the only threads left: weft's.
 *
 * So writer 0 asks, every 100 ms, whether the main thread (the thread group leader) has ended:
 * one pread of its /proc stat file, held on a high descriptor opened when the writers start
 * (no descriptor is taken while the program runs). Only then does it compare the process's
 * thread count with the runtime's own threads (each counts itself in with
 * weft_endwatch_own_thread), and when every thread left is weft's, ends the process as glibc
 * would have: exit(0), from a thread of its own (the exit handlers stop the writers, which
 * joins writer 0). Each mistake a race can make errs towards "the program still runs": a
 * runtime thread counts itself in after it exists and out before it is gone.
 */
#include "internal.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The runtime's threads now running: each adds itself at its start and is taken off by its
 * key's destructor at its end; 0 in a fork child (weft_endwatch_start, before any starts). */
static atomic_int own_threads;
static pthread_key_t own_key;
static pthread_once_t own_once = PTHREAD_ONCE_INIT;
/* The main thread's stat file, opened by weft_endwatch_start (writers' start, and again in a
 * fork child) and read by writer 0 only; dev/ino tell whether the program closed it. */
static int stat_fd = -1;
static dev_t stat_dev;
static ino_t stat_ino;
static int ending; /* writer 0's: exit(0) was asked for once */

static void own_gone(void *v)
{
	(void)v;
	atomic_fetch_sub(&own_threads, 1);
}

static void make_key(void)
{
	if (pthread_key_create(&own_key, own_gone))
		own_key = (pthread_key_t)-1;
}

void weft_endwatch_own_thread(void)
{
	pthread_once(&own_once, make_key);
	if (own_key == (pthread_key_t)-1)
		return; /* never counted in: the process is never taken for ended */
	if (!pthread_setspecific(own_key, (void *)1))
		atomic_fetch_add(&own_threads, 1);
}

static int stat_fd_ours(void)
{
	struct stat st;
	return stat_fd >= 0 && !fstat(stat_fd, &st) && st.st_dev == stat_dev && st.st_ino == stat_ino;
}

void weft_endwatch_start(int child)
{
	if (child) { /* none of the parent's threads is here; its descriptor is still ours */
		atomic_store(&own_threads, 0);
		ending = 0;
	}
	if (stat_fd_ours())
		close(stat_fd);
	stat_fd = -1;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)getpid());
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return;
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	stat_fd = weft_fd_high(fd);
	stat_dev = st.st_dev;
	stat_ino = st.st_ino;
}

static void *exit_main(void *arg)
{
	(void)arg;
	exit(0); /* what glibc does when the last thread ends */
}

void weft_endwatch_check(void)
{
	if (ending || stat_fd < 0)
		return;
	char buf[512];
	ssize_t n = pread(stat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0 || !stat_fd_ours()) { /* the program closed it: no more watching */
		stat_fd = -1;
		return;
	}
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	char state;
	long threads;
	/* after "pid (comm)": state, then 16 fields, then num_threads (field 20) */
	if (!p || sscanf(p + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %ld", &state,
			 &threads) != 2)
		return;
	if ((state != 'Z' && state != 'X') || threads > 1 + (long)atomic_load(&own_threads))
		return;
	pthread_t th;
	pthread_attr_t a;
	if (pthread_attr_init(&a))
		return;
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (!pthread_create(&th, &a, exit_main, NULL))
		ending = 1;
	pthread_attr_destroy(&a);
}
