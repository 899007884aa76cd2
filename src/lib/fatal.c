/*
 * fatal.c - the runtime's locks as a fatal signal's handler sees them. A crash (or a SIGTERM)
 * can come while some thread - this one or another - holds a lock that writing the flight
 * recorder's window needs: the ring's, the dump's, the metadata's, the thread table's, a
 * thread's own. Another thread lets go of its lock within microseconds (the writers and the
 * program's other threads keep running while the handler does its work), so the handler waits
 * for it; only a lock that this very thread holds (the signal came inside weft's own code on
 * this thread) can never be released, and the handler must not wait for that one.
 *
 * So each of those locks is taken with weft_lock(), which marks it in a per-thread mask
 * (weft_held) once it is held and clears the mark before letting go; a handler takes it with
 * weft_lock_fatal(): -EDEADLK at once where this thread's mark is set, else trylock until the
 * fatal deadline (weft_fatal_begin: 5 s after the signal), -ETIMEDOUT past it. A signal that
 * lands between the lock and the mark (or the unmark and the unlock) costs a wait until the
 * deadline, never a deadlock. Everything here is async-signal-safe.
 */
#include "internal.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__thread unsigned weft_held WEFT_TLS;     /* the locks this thread holds (WEFT_HOLD_*) */
__thread int weft_fatal_thread WEFT_TLS;  /* this thread is in weft's fatal-signal handler */
static uint64_t fatal_deadline_ns;        /* CLOCK_MONOTONIC; written by the handler's thread */

#define FATAL_WAIT_NS 5000000000ull

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void weft_lock(pthread_mutex_t *m, unsigned bit)
{
	pthread_mutex_lock(m);
	weft_held |= bit;
}

void weft_unlock(pthread_mutex_t *m, unsigned bit)
{
	weft_held &= ~bit;
	pthread_mutex_unlock(m);
}

void weft_fatal_begin(void)
{
	weft_fatal_thread = 1;
	__atomic_store_n(&fatal_deadline_ns, mono_ns() + FATAL_WAIT_NS, __ATOMIC_RELAXED);
}

int weft_fatal_expired(void)
{
	return mono_ns() >= __atomic_load_n(&fatal_deadline_ns, __ATOMIC_RELAXED);
}

void weft_fatal_pause(void)
{
	struct timespec ts = {0, 1000000L};
	nanosleep(&ts, NULL);
}

int weft_lock_fatal(pthread_mutex_t *m, unsigned bit)
{
	if (!weft_fatal_thread) {
		weft_lock(m, bit);
		return 0;
	}
	if (weft_held & bit)
		return -EDEADLK;
	for (;;) {
		if (!pthread_mutex_trylock(m)) {
			weft_held |= bit;
			return 0;
		}
		if (weft_fatal_expired())
			return -ETIMEDOUT;
		weft_fatal_pause();
	}
}

const char *weft_held_name(unsigned bit)
{
	switch (bit) {
	case WEFT_HOLD_POOL: return "the chunk pool's lock";
	case WEFT_HOLD_THREADS: return "the thread table's lock";
	case WEFT_HOLD_SELF: return "its thread's buffer lock";
	case WEFT_HOLD_RING: return "the flight recorder's ring lock";
	case WEFT_HOLD_DUMP: return "the snapshot lock";
	case WEFT_HOLD_SNAP: return "the snapshot policy's lock";
	case WEFT_HOLD_META: return "the metadata lock";
	case WEFT_HOLD_EVICT: return "the flight recorder's overflow lock";
	}
	return "a lock";
}

/* The crash window could not be written: DIR/window-not-written-PID.txt says why, in one line
 * (weft record prints it; weft info lists it). Plain open and write: async-signal-safe. */
void weft_fatal_report(const char *reason, const char *why)
{
	if (!weft_g.dir[0])
		return;
	char path[sizeof(weft_g.dir) + 64], line[512];
	snprintf(path, sizeof(path), "%s/window-not-written-%d.txt", weft_g.dir, (int)getpid());
	int n = snprintf(line, sizeof(line), "pid %d, %s: the window was not written: %s\n", (int)getpid(),
			 reason && *reason ? reason : "fatal signal", why);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return;
	ssize_t w = write(fd, line, (size_t)n);
	(void)w;
	close(fd);
}
