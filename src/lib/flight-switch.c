/*
 * flight-switch.c - --switch-output=SIZE|TIME (switch_output=, like perf's): the trace is written
 * as consecutive parts DIR/part-N, each a complete trace directory with the context a part needs
 * (the slices open at its start re-emitted, as in a flight recorder's snapshot), together the
 * whole run; switch_max_files=N keeps only the last N (a ring on disk).
 *
 * It is the flight recorder's machinery (flight.c) with a different trigger: the writers put
 * every chunk into the ring, and this file's thread takes a snapshot, named part-N, once SIZE
 * bytes of frames came in since the last part (the writers tell it), or every TIME, and at the
 * end of the run the last part (weft_flight_finish). Snapshots never overlap, so the parts do
 * not either. The ring is sized so that a part is written long before anything unwritten would
 * be evicted: twice SIZE plus 16M, or 256M for a time (or flight=SIZE where given); should it
 * still fill (a part every hour of a fast program), a part is taken at half the ring.
 */
#include "internal.h"
#include "flight.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static pthread_mutex_t sw_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sw_cond = PTHREAD_COND_INITIALIZER;
static pthread_t sw_thread;
static int sw_running, sw_want, sw_stopping; /* under sw_lock (sw_running: also read racily) */
/* switch_max_files=N: the numbers of this process's last N parts, a ring (made at start: a
 * part written from a fatal signal's handler or _exit allocates nothing); under fl_dump_lock */
static int *sw_mine;
static unsigned sw_nmine, sw_next;

uint64_t weft_switch_ring_size(void)
{
	if (!weft_cfg.switch_output[0] || weft_cfg.flight_size)
		return weft_cfg.flight_size ? weft_cfg.flight_size : 64ull << 20;
	if (weft_cfg.switch_bytes)
		return 2 * weft_cfg.switch_bytes + (16ull << 20);
	return 256ull << 20;
}

void weft_switch_note(uint64_t pending, uint64_t ring)
{
	if (!__atomic_load_n(&sw_running, __ATOMIC_RELAXED))
		return;
	if ((weft_cfg.switch_bytes && pending >= weft_cfg.switch_bytes) || pending >= ring / 2) {
		pthread_mutex_lock(&sw_lock);
		sw_want = 1;
		pthread_cond_signal(&sw_cond);
		pthread_mutex_unlock(&sw_lock);
	}
}

static void *switch_main(void *arg)
{
	(void)arg;
	weft_in_runtime = 1;
	pthread_setname_np(pthread_self(), "weft-switch");
	weft_endwatch_own_thread();
	uint64_t period = weft_cfg.switch_ns ? weft_cfg.switch_ns : 1000000000ull;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&sw_lock);
	for (;;) {
		uint64_t t = (uint64_t)next.tv_sec * 1000000000ull + (uint64_t)next.tv_nsec + period;
		struct timespec due = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
		int timed_out = 0;
		while (!sw_want && !sw_stopping && !timed_out)
			timed_out = pthread_cond_timedwait(&sw_cond, &sw_lock, &due) == ETIMEDOUT;
		if (sw_stopping)
			break;
		if (timed_out)
			next = due;
		if (sw_want || (timed_out && weft_cfg.switch_ns)) {
			sw_want = 0;
			if (!timed_out)
				clock_gettime(CLOCK_MONOTONIC, &next);
			pthread_mutex_unlock(&sw_lock);
			weft_flight_dump_as("part", "switch-output", weft__ticks(), 0);
			pthread_mutex_lock(&sw_lock);
		}
	}
	pthread_mutex_unlock(&sw_lock);
	return NULL;
}

void weft_switch_written(int number)
{
	unsigned n = (unsigned)weft_cfg.switch_max_files;
	if (!n || !sw_mine)
		return;
	if (sw_nmine == n) { /* full: the oldest goes, the new one takes its slot */
		char old[PATH_MAX];
		snprintf(old, sizeof(old), "%s/part-%d", weft_g.dir, sw_mine[sw_next]);
		fl_remove_dir(old);
	} else {
		sw_nmine++;
	}
	sw_mine[sw_next] = number;
	sw_next = (sw_next + 1) % n;
}

int weft_switch_start(void)
{
	if (!weft_cfg.switch_output[0])
		return 0;
	sw_nmine = sw_next = 0; /* (a fork child's parts are its own) */
	if (weft_cfg.switch_max_files && !sw_mine &&
	    !(sw_mine = calloc((size_t)weft_cfg.switch_max_files, sizeof(*sw_mine))))
		return -ENOMEM;
	pthread_mutex_lock(&sw_lock);
	sw_want = sw_stopping = 0;
	pthread_mutex_unlock(&sw_lock);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sw_cond, &ca);
	pthread_condattr_destroy(&ca);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay with the program's threads */
	int rc = pthread_create(&sw_thread, NULL, switch_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return -rc;
	__atomic_store_n(&sw_running, 1, __ATOMIC_RELAXED);
	return 0;
}

void weft_switch_stop(void)
{
	if (!sw_running)
		return;
	__atomic_store_n(&sw_running, 0, __ATOMIC_RELAXED);
	if (weft_g.in_signal) /* the thread may be writing a part: the last one is then refused */
		return;
	pthread_mutex_lock(&sw_lock);
	sw_stopping = 1;
	pthread_cond_signal(&sw_cond);
	pthread_mutex_unlock(&sw_lock);
	pthread_join(sw_thread, NULL);
}

/* Fork child: the parent's thread does not exist here; the child's ring gets its own. */
void weft_switch_atfork_child(void)
{
	pthread_mutex_init(&sw_lock, NULL);
	sw_running = 0;
	if (atomic_load(&weft_g.run) == WEFT_RUN_ON)
		weft_switch_start();
}
