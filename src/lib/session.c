/*
 * session.c - the life of a trace in one process: options are read once (WEFT_OPTIONS, then
 * weft_configure), the first event or weft_start() creates the trace directory, the metadata
 * file and the writer threads, and weft_stop() - run at exit - flushes every thread, drains
 * the writers and writes the totals. fork() gives the child a fresh trace under its own pid in
 * the same directory: its buffers start empty (what the parent had buffered is the parent's),
 * every call-site id stays valid, and the writers are restarted in the child.
 */
#include "internal.h"
#include "collect/source.h"
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

struct weft_global weft_g = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void default_log(int level, const char *msg, void *ud)
{
	(void)ud;
	if (level > WEFT_LOG_WARN)
		return;
	char line[1200];
	int n = snprintf(line, sizeof(line), "weft: %s\n", msg);
	if (n > 0) {
		ssize_t r = write(2, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
		(void)r;
	}
}

static weft_log_fn log_fn = default_log; /* set by weft_set_log, any time */
static void *log_ud;

void weft_set_log(weft_log_fn fn, void *ud)
{
	log_ud = ud;
	log_fn = fn;
}

void weft_log(int level, const char *fmt, ...)
{
	weft_log_fn fn = log_fn;
	if (!fn)
		return;
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fn(level, msg, log_ud);
}

const char *weft_strerror(int err)
{
	if (err < 0)
		err = -err;
	return strerror(err);
}

static pthread_once_t config_once = PTHREAD_ONCE_INIT;
/* A setuid or setgid program (AT_SECURE) must not act on its caller's environment with its
 * owner's rights (WEFT_OPTIONS could name any directory to move aside or write into): there
 * tracing is off and the environment ignored, unless the program itself turns it on through
 * weft_configure()/weft_option_set(). */
static void config_init(void)
{
	weft_config_defaults(&weft_cfg);
	if (getauxval(AT_SECURE)) {
		weft_cfg.enable = 0;
		if (getenv("WEFT_OPTIONS"))
			weft_log(WEFT_LOG_WARN, "WEFT_OPTIONS ignored in a setuid/setgid program; tracing is "
				 "off unless the program enables it with weft_configure()");
		return;
	}
	weft_config_apply(&weft_cfg, getenv("WEFT_OPTIONS"), 1);
}

/* Config must be initialised before any setter runs: every entry point calls this. */
__attribute__((constructor)) static void weft_ctor(void)
{
	pthread_once(&config_once, config_init);
}

static int mkdir_p(const char *dir)
{
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s", dir);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	struct stat st;
	if (stat(tmp, &st) || !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (access(tmp, W_OK))
		return -errno;
	return 0;
}

/* A directory left by an earlier run is moved aside to DIR.old (like perf.data.old), after
 * removing the weft files of an older DIR.old. Processes of one session (weft record sets
 * WEFT_SESSION=DIR for everything it runs) and the tasks of a parallel job share the
 * directory instead. */
static void move_old(const char *dir)
{
	const char *sess = secure_getenv("WEFT_SESSION");
	if (sess && !strcmp(sess, dir))
		return;
	/* the ranks of a job start together and share the directory: one moving it would take
	 * the files the others just opened (weft record makes a job's directory fresh, once) */
	if (weft_in_job())
		return;
	struct stat st;
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return;
	char old[PATH_MAX];
	snprintf(old, sizeof(old), "%s.old", dir);
	DIR *d = opendir(old);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			if (weft_is_trace_file(e->d_name)) {
				char p[PATH_MAX + 256];
				snprintf(p, sizeof(p), "%s/%s", old, e->d_name);
				unlink(p);
			}
		}
		closedir(d);
		rmdir(old);
	}
	if (rename(dir, old))
		weft_log(WEFT_LOG_WARN, "cannot move the old %s aside to %s (%s); writing into it",
			 dir, old, strerror(errno));
}

static void start_locked(void)
{
	weft_pool_init();
	char dir[1024];
	int rc = weft_expand_output(weft_cfg.output, weft_cfg.name, dir, sizeof(dir));
	if (!rc) {
		move_old(dir);
		rc = mkdir_p(dir);
	}
	int pid = (int)getpid();
	if (!rc)
		rc = weft_flight_start();
	if (!rc)
		rc = weft_meta_open(dir, pid, weft_g.stem, sizeof(weft_g.stem));
	if (!rc) {
		snprintf(weft_g.dir, sizeof(weft_g.dir), "%s", dir);
		weft_g.pid = pid;
		weft_meta_process();
		weft_endwatch_start(0);
		rc = weft_writers_start(dir, weft_g.stem, pid);
	}
	if (rc) {
		weft_log(WEFT_LOG_ERROR, "cannot write the trace to '%s': %s; tracing is off", dir,
			 weft_strerror(rc));
		weft_meta_close();
		atomic_store(&weft_g.run, WEFT_RUN_FAILED);
		return;
	}
	weft_live_start();
	atomic_store(&weft_g.run, WEFT_RUN_ON);
	weft_snapshot_start();
	weft_sources_start(weft_sources()); /* collect/source.h: every data source, in order */
}

static void at_exit(void)
{
	weft_stop_leaving(1);
}

#ifdef __GLIBC__
/* exit(STATUS) or main's return: the status for weft record (control.c) */
static void at_exit_status(int status, void *arg)
{
	(void)arg;
	weft_control_bye((status & 0xff) << 8);
}
#endif

/* Collectors' fork handlers (weft_fork_hooks_add): written once each, before count publishes
 * them (release); read by the fork handlers. */
#define MAX_FORK_HOOKS 8
static struct weft_fork_hooks fork_hooks[MAX_FORK_HOOKS];
static _Atomic int nfork_hooks;
static int nfork_prepared; /* how many prepare handlers ran: fork_prepare, read by fork_parent */
/* adders, among themselves */
static pthread_mutex_t fork_hooks_lock = PTHREAD_MUTEX_INITIALIZER;

void weft_hold_async_signals(struct weft_held_signals *h)
{
	static const int sync_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
	sigset_t hold;
	sigfillset(&hold);
	for (size_t i = 0; i < sizeof(sync_sigs) / sizeof(sync_sigs[0]); i++)
		sigdelset(&hold, sync_sigs[i]);
	h->held = !pthread_sigmask(SIG_BLOCK, &hold, &h->old);
}

void weft_release_async_signals(const struct weft_held_signals *h)
{
	if (h->held)
		pthread_sigmask(SIG_SETMASK, &h->old, NULL);
}

static void fork_prepare(void);
static void fork_parent(void);
static void fork_child(void);
static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
static void register_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int weft_fork_hooks_add(const struct weft_fork_hooks *h)
{
	pthread_once(&atfork_once, register_atfork);
	pthread_mutex_lock(&fork_hooks_lock);
	int n = atomic_load(&nfork_hooks);
	if (n < MAX_FORK_HOOKS) {
		fork_hooks[n] = *h;
		atomic_store_explicit(&nfork_hooks, n + 1, memory_order_release);
	}
	pthread_mutex_unlock(&fork_hooks_lock);
	return n < MAX_FORK_HOOKS ? 0 : -ENOSPC;
}

/* Fork: every lock of the runtime and of its collectors is taken by the forking thread, in
 * the order the code takes them (weft_g.lock, then the collectors' - a collector's thread
 * takes the runtime's locks while it holds its own: access.c's sampler emits under its ring
 * lock -, then the registry, the writers, the threads and the pool, the metadata, the named
 * heaps), so the child inherits each free and the data it guards whole. The child then
 * reinitialises them all before it starts any thread; the collectors come last, once its
 * trace runs. */
static void fork_prepare(void)
{
	pthread_mutex_lock(&weft_g.lock);
	weft_sources_fork_prepare(weft_sources());
	int n = atomic_load_explicit(&nfork_hooks, memory_order_acquire);
	for (int i = n - 1; i >= 0; i--)
		if (fork_hooks[i].prepare)
			fork_hooks[i].prepare();
	nfork_prepared = n;
	weft_registry_atfork_prepare();
	weft_writers_atfork_prepare();
	weft_live_atfork_prepare(); /* a writer takes it while it holds its work lock */
	weft_threads_atfork_prepare();
	weft_flight_atfork_prepare(); /* after the threads' locks: a snapshot takes it under them */
	weft_meta_atfork_prepare();
	weft_heaps_atfork_prepare();
}

static void fork_parent(void)
{
	weft_heaps_atfork_parent();
	weft_meta_atfork_parent();
	weft_flight_atfork_parent();
	weft_threads_atfork_parent();
	weft_live_atfork_parent();
	weft_writers_atfork_parent();
	weft_registry_atfork_parent();
	for (int i = 0; i < nfork_prepared; i++)
		if (fork_hooks[i].parent)
			fork_hooks[i].parent();
	weft_sources_fork_parent(weft_sources());
	pthread_mutex_unlock(&weft_g.lock);
}

static void fork_child_locked(void);
/* The child frees the parent's buffers and opens its own files: inside the runtime, so the
 * allocation interposer leaves those calls alone, and the threads started here and by the
 * collectors' handlers are weft's (access.c's pthread_create wrapper leaves them alone). */
static void fork_child(void)
{
	struct weft_held_signals held;
	weft_hold_async_signals(&held); /* (as for a stop: weft_stop_leaving says why) */
	weft_in_runtime++;
	fork_child_locked();
	pthread_mutex_init(&fork_hooks_lock, NULL);
	int n = atomic_load_explicit(&nfork_hooks, memory_order_acquire);
	for (int i = 0; i < n; i++)
		if (fork_hooks[i].child)
			fork_hooks[i].child();
	weft_sources_fork_child(weft_sources());
	weft_in_runtime--;
	weft_release_async_signals(&held);
}

static void fork_child_locked(void)
{
	weft_meta_atfork_child();
	weft_live_atfork_child();
	weft_threads_atfork_child();
	weft_registry_atfork_child();
	weft_writers_atfork_child();
	weft_flight_atfork_child();
	weft_heaps_atfork_child();
	pthread_mutex_init(&weft_g.lock, NULL);
	atomic_store(&weft_g.events, 0);
	atomic_store(&weft_g.dropped, 0);
	atomic_store(&weft_g.after_stop, 0);
	atomic_store(&weft_g.disabled, 0);
	atomic_store(&weft_g.bytes_raw, 0);
	atomic_store(&weft_g.bytes_written, 0);
	atomic_store(&weft_g.chunks, 0);
	if (atomic_load(&weft_g.run) != WEFT_RUN_ON)
		return;
	int pid = (int)getpid();
	weft_pool_init();
	if (weft_meta_open(weft_g.dir, pid, weft_g.stem, sizeof(weft_g.stem)) == 0) {
		weft_g.pid = pid;
		weft_meta_process();
		weft_registry_write_all();
		weft_threads_after_fork();
		weft_endwatch_start(1);
		if (weft_writers_start(weft_g.dir, weft_g.stem, pid) == 0)
			return;
	}
	atomic_store(&weft_g.run, WEFT_RUN_FAILED);
}

int weft_ensure_started(void)
{
	int run = atomic_load(&weft_g.run);
	if (run == WEFT_RUN_ON)
		return 0;
	if (run != WEFT_RUN_NEW)
		return -ECANCELED;
	pthread_once(&config_once, config_init);
	weft_in_runtime++;
	pthread_mutex_lock(&weft_g.lock);
	if (atomic_load(&weft_g.run) == WEFT_RUN_NEW) {
		if (!weft_cfg.enable) {
			atomic_store(&weft_g.run, WEFT_RUN_STOPPED);
		} else if (weft_cfg.control[0] && weft_control_hello()) {
			/* weft record's trace was stopped (the stop command): this image records nothing */
			atomic_store(&weft_g.run, WEFT_RUN_STOPPED);
		} else {
			start_locked();
			if (atomic_load(&weft_g.run) == WEFT_RUN_ON && weft_cfg.control[0])
				weft_control_start();
			static int hooks;
			if (!hooks) {
				hooks = 1;
				atexit(at_exit);
#ifdef __GLIBC__
				on_exit(at_exit_status, NULL); /* (before at_exit: in reverse order) */
#endif
				pthread_once(&atfork_once, register_atfork);
			}
		}
	}
	run = atomic_load(&weft_g.run);
	pthread_mutex_unlock(&weft_g.lock);
	weft_in_runtime--;
	return run == WEFT_RUN_ON ? 0 : -ECANCELED;
}

int weft_start(void)
{
	int rc = weft_ensure_started();
	if (rc && !weft_cfg.enable)
		return -ECANCELED;
	return rc;
}

int weft_stop(void)
{
	weft_snapshot_at_exit(); /* requests still waiting, and the exit's snapshot */
	/* pending rate counts become points while the run is on, through the ordinary event
	 * path (not from inside the runtime, where a new chunk would be refused) */
	if (!weft_g.in_signal && !weft_in_runtime && atomic_load(&weft_g.run) == WEFT_RUN_ON)
		weft_rates_flush();
	/* the data sources' last samples (CUPTI's buffers, the perf rings), while the run takes
	 * them, outside the runtime's lock (CUPTI's own threads may be inside a callback that
	 * needs it): _exit, exec and a fatal signal end the process with no later drain */
	if (!weft_in_runtime && atomic_load(&weft_g.run) == WEFT_RUN_ON)
		weft_sources_drain(weft_sources());
	weft_in_runtime++;
	pthread_mutex_lock(&weft_g.lock);
	if (atomic_load(&weft_g.run) != WEFT_RUN_ON) {
		pthread_mutex_unlock(&weft_g.lock);
		weft_in_runtime--;
		return 0;
	}
	atomic_store(&weft_g.run, WEFT_RUN_STOPPED);
	if (weft_g.before_stop)
		weft_g.before_stop();
	/* what each data source that ran recorded (weft info), then every data source, in reverse
	 * order (the system sampler last: its last readings, while events are still taken),
	 * before the writers flush */
	static char said[4096]; /* (under weft_g.lock; not on a small signal stack) */
	size_t nsaid = weft_sources_describe(weft_sources(), said, sizeof(said));
	if (nsaid)
		weft_meta_write(WEFT_M_SOURCES, said, nsaid, "", 1);
	weft_sources_stop(weft_sources());
	weft_registry_reevaluate(); /* every site OFF: later events cost one load */
	weft_threads_flush_all();
	weft_writers_stop();
	weft_threads_count_late();
	weft_meta_clock();
	weft_flight_finish(); /* --switch-output's last part; the ring freed */
	uint64_t fin[7] = {atomic_load(&weft_g.events), atomic_load(&weft_g.dropped),
			   atomic_load(&weft_g.after_stop), atomic_load(&weft_g.bytes_raw),
			   atomic_load(&weft_g.bytes_written), atomic_load(&weft_g.chunks),
			   weft_boottime_ns()};
	weft_meta_write(WEFT_M_FINISH, fin, sizeof(fin), NULL, 0);
	uint64_t dis = atomic_load(&weft_g.disabled);
	if (dis)
		weft_meta_write(WEFT_M_DISABLED, &dis, sizeof(dis), NULL, 0);
	uint64_t ff = atomic_load(&weft_g.func_filtered);
	if (ff)
		weft_meta_write(WEFT_M_FUNC_FILTER, &ff, sizeof(ff), NULL, 0);
	uint64_t ov[2] = {atomic_load(&weft_g.writer_cpu_ns), atomic_load(&weft_g.slow_paths)};
	weft_meta_write(WEFT_M_OVERHEAD, ov, sizeof(ov), NULL, 0);
	struct rusage ru;
	if (!getrusage(RUSAGE_SELF, &ru)) {
		uint64_t r[3] = {(uint64_t)ru.ru_maxrss * 1024,
				 (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000,
				 (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000};
		weft_meta_write(WEFT_M_RUSAGE, r, sizeof(r), NULL, 0);
	}
	weft_meta_close();
	pthread_mutex_unlock(&weft_g.lock);
	weft_in_runtime--;
	return 0;
}

/* A stop on the way out is a few milliseconds of flushing (the writers' last chunks), during
 * which this thread is inside the runtime: a terminating signal that lands then finds weft's
 * handler unable to finish the trace (it must not take the locks this thread holds), and the
 * process dies with its trace unfinished. That is common, not rare: multiprocessing's
 * Pool.terminate() sends SIGTERM to workers that are already in os._exit, and a job launcher
 * signals ranks that are ending. So the asynchronous signals are held for the stop; the
 * synchronous ones (a fault, a trap) cannot wait and are left alone. Held, a signal sent to
 * the process goes to another of its threads if one takes it (its handler then waits for
 * this stop under weft_g.lock), else waits for the mask to come back. */
int weft_stop_leaving(int restore)
{
	struct weft_held_signals held;
	weft_hold_async_signals(&held);
	int rc = weft_stop();
	if (restore)
		weft_release_async_signals(&held);
	return rc;
}

int weft_stats_get(struct weft_stats *st)
{
	if (!st || st->sz < sizeof(size_t))
		return -EINVAL;
	struct weft_stats s = {.sz = st->sz};
	s.events = atomic_load(&weft_g.events);
	s.dropped = atomic_load(&weft_g.dropped);
	s.after_stop = atomic_load(&weft_g.after_stop);
	s.bytes_raw = atomic_load(&weft_g.bytes_raw);
	s.bytes_written = atomic_load(&weft_g.bytes_written);
	s.chunks = atomic_load(&weft_g.chunks);
	size_t n = st->sz < sizeof(s) ? st->sz : sizeof(s);
	memcpy(st, &s, n);
	return 0;
}

const char *weft_output_dir(void)
{
	return atomic_load(&weft_g.run) == WEFT_RUN_NEW ? NULL : weft_g.dir;
}

/* The options API: config.c parses, this takes the lock and re-evaluates call sites. */
int weft_option_set(const char *key, const char *value)
{
	if (!key || !value)
		return -EINVAL;
	weft_in_runtime++;
	pthread_mutex_lock(&weft_g.lock);
	int rc = weft_config_set(&weft_cfg, key, value, 1);
	pthread_mutex_unlock(&weft_g.lock);
	weft_in_runtime--;
	if (!rc && (!strcmp(key, "categories") || !strcmp(key, "filter")))
		weft_registry_reevaluate();
	return rc;
}

int weft_configure(const char *opts)
{
	if (!opts)
		return -EINVAL;
	weft_in_runtime++;
	pthread_mutex_lock(&weft_g.lock);
	int rc = weft_config_apply(&weft_cfg, opts, 1);
	pthread_mutex_unlock(&weft_g.lock);
	weft_in_runtime--;
	weft_registry_reevaluate();
	return rc;
}
