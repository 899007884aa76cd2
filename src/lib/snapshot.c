/*
 * snapshot.c - what a snapshot request does, whoever makes it: weft_snapshot() in the program,
 * the control command (its own thread), --snapshot-signal (signals.c), a slow slice
 * (trigger.c), a fatal signal (signals.c) and the program's exit (weft_stop).
 *
 * Every request goes through the same policy, under one lock so that requests from several
 * threads are taken one after the other: at most max_snapshots= are taken, and one that comes
 * sooner than min_interval= after the last one taken is refused (a crash and the exit are
 * exempt from the interval: each ends the process once, and they would lose its last window).
 * A request taken asks the flight recorder for its window (weft_flight_dump: DIR/snapshot-N,
 * with after= of data past the trigger) and records a SNAPSHOT metadata record, the
 * `weft: snapshot` marker the converters show, with its reason, origin and N (0 in a normal
 * recording, where everything is on disk already). A refused request records the same with
 * why it was refused, so `weft info` can count and say them.
 *
 * Requests that cannot be taken where they arise - in a signal handler, or at the end of a
 * slice on the program's thread (the dump allocates, writes files, and waits after=) - go to
 * the snapshot thread: a signal posts a semaphore (sem_post is async-signal-safe), a trigger
 * fills one of a few fixed slots. The thread is started with the trace when snapshot_signal=
 * or trigger= is set, blocks every signal, and runs inside the runtime (its allocations are
 * not the program's). Requests still waiting when the trace stops are taken then.
 */
#include "internal.h"
#include <errno.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The policy's state, guarded by snap_lock (a fatal signal only tries it). */
static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned taken;    /* requests taken (snapshots written, or markers in a normal recording) */
static uint64_t last_ns;  /* CLOCK_BOOTTIME of the last one taken */
static int have_last;

static void marker_head(unsigned char head[24], uint64_t ticks, enum weft_snap_origin origin, uint32_t number,
			uint32_t refused, uint32_t err)
{
	uint32_t w[4] = {(uint32_t)origin, number, refused, err};
	memcpy(head, &ticks, 8);
	memcpy(head + 8, w, sizeof(w));
}

static void marker(uint64_t ticks, enum weft_snap_origin origin, uint32_t number, uint32_t refused, uint32_t err,
		   const char *reason)
{
	unsigned char head[24];
	marker_head(head, ticks, origin, number, refused, err);
	const char *r = reason ? reason : "";
	weft_meta_write(WEFT_M_SNAPSHOT, head, sizeof(head), r, strlen(r) + 1);
}

/* The request being dumped (under snap_lock, for weft_snapshot_current). */
static struct {
	const char *reason;
	uint64_t ticks;
	enum weft_snap_origin origin;
} cur;

const char *weft_snapshot_current(unsigned char head[24], uint32_t number)
{
	marker_head(head, cur.ticks, cur.origin, number, WEFT_SNAP_TAKEN, 0);
	return cur.reason ? cur.reason : "";
}

/* The policy, then the dump and the marker: 0, -EBUSY (throttled) or the dump's -errno. */
static int take_locked(const char *reason, enum weft_snap_origin origin, uint64_t ticks)
{
	uint64_t now = weft_boottime_ns();
	int final = origin == WEFT_SNAP_FATAL || origin == WEFT_SNAP_EXIT;
	uint32_t why = WEFT_SNAP_TAKEN;
	if (taken >= (unsigned)weft_cfg.max_snapshots)
		why = WEFT_SNAP_MAX;
	else if (!final && weft_cfg.min_interval_ns && have_last && now - last_ns < weft_cfg.min_interval_ns)
		why = WEFT_SNAP_INTERVAL;
	if (why) {
		marker(ticks, origin, 0, why, 0, reason);
		return -EBUSY;
	}
	cur.reason = reason;
	cur.ticks = ticks;
	cur.origin = origin;
	int n = weft_flight_dump(reason ? reason : "", ticks, final ? 0 : weft_cfg.after_ns);
	if (n < 0) {
		marker(ticks, origin, 0, WEFT_SNAP_FAILED, (uint32_t)-n, reason);
		return n;
	}
	taken++;
	last_ns = now;
	have_last = 1;
	marker(ticks, origin, (uint32_t)n, WEFT_SNAP_TAKEN, 0, reason);
	return 0;
}

static int take(const char *reason, enum weft_snap_origin origin, uint64_t ticks)
{
	if (weft_ensure_started())
		return -ENOTSUP;
	weft_in_runtime++;
	weft_lock(&snap_lock, WEFT_HOLD_SNAP);
	int rc = atomic_load(&weft_g.run) == WEFT_RUN_ON ? take_locked(reason, origin, ticks) : -ENOTSUP;
	weft_unlock(&snap_lock, WEFT_HOLD_SNAP);
	weft_in_runtime--;
	return rc;
}

int weft_snapshot_take(const char *reason, enum weft_snap_origin origin)
{
	if (origin == WEFT_SNAP_FATAL) {
		weft_snapshot_fatal(reason);
		return 0;
	}
	return take(reason, origin, weft__ticks());
}

/* The program's own call: its thread holds the snapshot's locks until the snapshot is on
 * disk, and a fatal signal's handler on this thread could never have them (fatal.c). So this
 * thread takes no signal meanwhile: one sent to the process goes to another thread, whose
 * handler waits for this snapshot and then writes the crash window; one sent to this thread
 * waits until the snapshot is written (milliseconds). Only weft's code runs in between. */
int weft_snapshot(const char *reason)
{
	sigset_t all, was;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was);
	int rc = weft_snapshot_take(reason, WEFT_SNAP_API);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	return rc;
}

/* In a fatal signal's handler, or _exit: nothing allocated here (the flight recorder's dump, told by
 * weft_g.in_signal, allocates nothing either). The policy's lock, like every lock the dump
 * takes, is waited for while another thread holds it, never where this one does (fatal.c).
 * In flight mode a window that could not be written says why in the trace directory
 * (weft_fatal_report): the marker alone would stay in memory with the rest of the ring. */
static void take_unallocating(const char *reason, enum weft_snap_origin origin)
{
	if (atomic_load(&weft_g.run) != WEFT_RUN_ON)
		return;
	uint64_t ticks = weft__ticks();
	int rc = weft_lock_fatal(&snap_lock, WEFT_HOLD_SNAP);
	if (rc) {
		marker(ticks, origin, 0, WEFT_SNAP_BUSY, 0, reason);
		if (weft_flight_active())
			weft_fatal_report(reason, rc == -EDEADLK ? "it came while this thread was taking a snapshot"
								 : "another snapshot was still being written 5 s later");
		return;
	}
	rc = take_locked(reason, origin, ticks);
	weft_unlock(&snap_lock, WEFT_HOLD_SNAP);
	if (rc < 0 && weft_flight_active()) {
		const char *why = weft_flight_fail_why();
		char b[160];
		if (!*why) {
			snprintf(b, sizeof(b), "%s", rc == -EBUSY ? "max-snapshots reached" : strerror(-rc));
			why = b;
		}
		weft_fatal_report(reason, why);
	}
}

void weft_snapshot_fatal(const char *reason)
{
	take_unallocating(reason, WEFT_SNAP_FATAL);
}

void weft_snapshot_quick_exit(void)
{
	if (!weft_in_runtime && weft_flight_active() == 1)
		take_unallocating("exit", WEFT_SNAP_EXIT);
}

/* ---- requests for the snapshot thread ---- */

static sem_t wake;          /* one post per request */
static int wake_ok;         /* sem_init done (the thread runs) */
static int snap_sig_pending; /* signal requests not taken yet (atomic) */
/* Trigger requests: a slot is claimed (FREE -> FILLING), filled, published (READY, release)
 * and taken by whoever takes it from READY (the thread, or the stop). */
enum { SLOT_FREE = 0, SLOT_FILLING = 1, SLOT_READY = 2 };
#define NSLOTS 8
static struct slot {
	int state;
	const char *name;
	uint64_t ns, min_ns, ticks; /* ticks: the slice's end (after its END) */
} slots[NSLOTS];
static pthread_t thread;
static int thread_on; /* the thread was started in this process */
static int thread_busy; /* the thread is taking requests (atomic): the stop waits for it */

void weft_snapshot_signal_request(void)
{
	if (!__atomic_load_n(&wake_ok, __ATOMIC_ACQUIRE))
		return;
	int e = errno;
	__atomic_fetch_add(&snap_sig_pending, 1, __ATOMIC_RELEASE);
	sem_post(&wake);
	errno = e;
}

void weft_snapshot_trigger(const char *name, uint64_t ns, uint64_t min_ns, uint64_t ticks)
{
	if (!__atomic_load_n(&wake_ok, __ATOMIC_ACQUIRE))
		return;
	for (int i = 0; i < NSLOTS; i++) {
		int free_ = SLOT_FREE;
		if (!__atomic_compare_exchange_n(&slots[i].state, &free_, SLOT_FILLING, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		slots[i].name = name;
		slots[i].ns = ns;
		slots[i].min_ns = min_ns;
		slots[i].ticks = ticks;
		__atomic_store_n(&slots[i].state, SLOT_READY, __ATOMIC_RELEASE);
		sem_post(&wake);
		return;
	}
	/* every slot waits: the snapshot thread is behind; this one is refused, and said */
	weft_in_runtime++;
	char reason[300];
	snprintf(reason, sizeof(reason), "%s took %.3f ms (> %.3f ms)", name, (double)ns / 1e6, (double)min_ns / 1e6);
	marker(ticks, WEFT_SNAP_TRIGGER, 0, WEFT_SNAP_BUSY, 0, reason);
	weft_in_runtime--;
}

/* Takes what waits: every pending signal request and ready trigger slot (each taken once,
 * whoever runs this). */
static void take_pending(void)
{
	for (;;) {
		int n = __atomic_load_n(&snap_sig_pending, __ATOMIC_ACQUIRE);
		if (n <= 0)
			break;
		if (!__atomic_compare_exchange_n(&snap_sig_pending, &n, n - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			continue;
		char reason[64];
		const char *abbrev = sigabbrev_np(weft_cfg.snapshot_signal);
		if (abbrev)
			snprintf(reason, sizeof(reason), "SIG%s", abbrev);
		else
			snprintf(reason, sizeof(reason), "signal %d", weft_cfg.snapshot_signal);
		take(reason, WEFT_SNAP_SIGNAL, weft__ticks());
	}
	for (int i = 0; i < NSLOTS; i++) {
		int ready = SLOT_READY;
		if (!__atomic_compare_exchange_n(&slots[i].state, &ready, SLOT_FILLING, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		char reason[300];
		snprintf(reason, sizeof(reason), "%s took %.3f ms (> %.3f ms)", slots[i].name, (double)slots[i].ns / 1e6,
			 (double)slots[i].min_ns / 1e6);
		uint64_t ticks = slots[i].ticks;
		__atomic_store_n(&slots[i].state, SLOT_FREE, __ATOMIC_RELEASE);
		take(reason, WEFT_SNAP_TRIGGER, ticks);
	}
}

static void *snapshot_thread(void *arg)
{
	(void)arg;
	weft_in_runtime++;
	pthread_setname_np(pthread_self(), "weft-snapshot");
	weft_endwatch_own_thread();
	for (;;) {
		while (sem_wait(&wake) && errno == EINTR)
			;
		__atomic_store_n(&thread_busy, 1, __ATOMIC_SEQ_CST);
		if (atomic_load(&weft_g.run) == WEFT_RUN_ON) /* after the stop: nothing more to take */
			take_pending();
		__atomic_store_n(&thread_busy, 0, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void start_thread(void)
{
	if (sem_init(&wake, 0, 0))
		return;
	sigset_t all, was;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was); /* the program's signals are never delivered to it */
	pthread_attr_t a;
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&a, 256u << 10);
	__atomic_store_n(&wake_ok, 1, __ATOMIC_RELEASE);
	if (pthread_create(&thread, &a, snapshot_thread, NULL)) {
		__atomic_store_n(&wake_ok, 0, __ATOMIC_RELEASE);
		weft_log(WEFT_LOG_WARN, "cannot start the snapshot thread: --snapshot-signal and --trigger are off");
	} else {
		thread_on = 1;
	}
	pthread_attr_destroy(&a);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
}

/* A fork child: the parent's requests and counts are the parent's; its own thread, if the
 * parent had one. */
static void snapshot_atfork_child(void)
{
	pthread_mutex_init(&snap_lock, NULL);
	taken = 0;
	have_last = 0;
	__atomic_store_n(&snap_sig_pending, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < NSLOTS; i++)
		__atomic_store_n(&slots[i].state, SLOT_FREE, __ATOMIC_RELAXED);
	__atomic_store_n(&wake_ok, 0, __ATOMIC_RELEASE);
	if (thread_on && atomic_load(&weft_g.run) == WEFT_RUN_ON) {
		thread_on = 0;
		start_thread();
	}
}

void weft_snapshot_start(void)
{
	static int hooked; /* the child's lock and counts are its own, thread or not */
	if (!hooked) {
		hooked = 1;
		struct weft_fork_hooks h = {NULL, NULL, snapshot_atfork_child};
		weft_fork_hooks_add(&h);
	}
	if ((weft_cfg.snapshot_signal || weft_cfg.trigger[0]) && !thread_on)
		start_thread();
}

void weft_snapshot_at_exit(void)
{
	if (weft_g.in_signal || weft_in_runtime || atomic_load(&weft_g.run) != WEFT_RUN_ON)
		return;
	if (__atomic_load_n(&wake_ok, __ATOMIC_ACQUIRE)) {
		take_pending(); /* what the thread has not taken yet */
		/* and what it is taking: its markers go into the trace before the stop closes it */
		while (__atomic_load_n(&thread_busy, __ATOMIC_ACQUIRE)) {
			struct timespec ms = {0, 1000000};
			nanosleep(&ms, NULL);
		}
	}
	if (weft_flight_active() == 1)
		take("exit", WEFT_SNAP_EXIT, weft__ticks());
}
