/*
 * preload.c - libweft-preload.so: what `weft record` injects into an unmodified program with
 * LD_PRELOAD (the whole runtime is linked into it). Everything interposed is in this file:
 *   __cyg_profile_func_enter/exit  one 16-byte record per entry and exit of code built with
 *                                  -finstrument-functions (executable and libraries);
 *   dlopen, dlclose                the memory map is recorded again, so functions of
 *                                  libraries loaded later can be symbolized;
 *   execve and friends             the trace of this image is finished before the exec (it
 *                                  would be lost), and the environment that carries tracing
 *                                  to the new image is restored if the program dropped it;
 *   fatal and terminating signals  (signals.c, where the program leaves the default action)
 *                                  the trace is finished, then the signal takes its default
 *                                  effect; sigaction and friends show the program its own view.
 * Function filters: func_filter= and func_libs= select functions by name and by library
 * (funcfilter.c); func_depth=N records only the N outermost levels; func_min=T takes back
 * an entry/exit pair shorter than T with nothing recorded in between (like uftrace -t). What
 * they leave out is counted (not as drops: it was asked for).
 */
#include "lib/internal.h"
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <alloca.h>
#include <sys/syscall.h>
#include <unistd.h>

#define NOINST __attribute__((no_instrument_function))
#define EXPORT __attribute__((visibility("default")))

static int func_filters;          /* the filtered way: a function filter configured (set at
				   * start), recording disabled (func_pause) or stopped */
int weft_func_allowed(void *fn);  /* funcfilter.c */
static int func_select;           /* func_filter= or func_libs= set */
static uint64_t func_min_ticks;   /* func_min in clock ticks */
static __thread uint32_t depth WEFT_TLS; /* call depth, maintained only with filters */
/* Filtered-function counts: one slot per thread (written by it, relaxed), summed into the
 * trace when it stops. */
#define MAX_COUNTERS 4096
static uint64_t counters[MAX_COUNTERS];
static _Atomic unsigned ncounters;
static __thread uint64_t *my_counter WEFT_TLS;

static inline uint64_t func_hdr(unsigned type, const void *fn) NOINST;
static inline uint64_t func_hdr(unsigned type, const void *fn)
{
	uint64_t a = (uint64_t)(uintptr_t)fn;
	return (a & 0xffffffffu) | ((uint64_t)type << 32) | (((a >> 32) & 0xffff) << 48);
}

static void count_filtered(uint64_t n) NOINST;
static void count_filtered(uint64_t n)
{
	if (__builtin_expect(!my_counter, 0)) {
		unsigned i = atomic_fetch_add(&ncounters, 1);
		if (i >= MAX_COUNTERS) {
			atomic_fetch_add_explicit(&weft_g.func_filtered, n, memory_order_relaxed);
			return;
		}
		my_counter = &counters[i];
	}
	__atomic_store_n(my_counter, __atomic_load_n(my_counter, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

/* Set at stop (functions_stop): every later function event goes the filtered way, where it is
 * counted as after_stop (weft.h's promise) instead of written into a stale buffer window. */
static int func_stopped;

/* weft_stop, the run stopped (before the data sources stop): every later function event goes
 * the filtered way, and the filtered counts go into the totals. */
static void functions_stop(void)
{
	func_stopped = 1;
	__atomic_store_n(&func_filters, 1, __ATOMIC_RELAXED);
	unsigned n = atomic_load(&ncounters);
	for (unsigned i = 0; i < n && i < MAX_COUNTERS; i++)
		atomic_fetch_add(&weft_g.func_filtered, __atomic_exchange_n(&counters[i], 0, __ATOMIC_RELAXED));
}

/* Recording disabled by the control channel (control.c): every function event goes the
 * filtered way and is counted as disabled - except the exit of a call entered while recording:
 * its slice ends where the call returns, not at the stop. Each thread counts the entries it
 * skipped since the disable began (pause_gen tells a new one); an exit with none pending is
 * such a call's. Enabled again, only the configured filters take the filtered way. */
static int func_filters_cfg; /* the filters' own need of the filtered way, set at start */
static unsigned pause_gen;   /* one more at each disable */
static __thread unsigned skip_gen WEFT_TLS;
static __thread uint32_t skipped WEFT_TLS; /* entries skipped in this disable, not yet exited */

static void func_pause(int paused)
{
	if (paused)
		__atomic_fetch_add(&pause_gen, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&func_filters, paused || func_filters_cfg || func_stopped, __ATOMIC_RELAXED);
}

/* 1: the event is not recorded (disabled, counted); 0: it is. */
static int func_disabled(int enter) NOINST;
static int func_disabled(int enter)
{
	if (__builtin_expect(!atomic_load_explicit(&weft_g.paused, memory_order_relaxed), 1))
		return 0;
	unsigned g = __atomic_load_n(&pause_gen, __ATOMIC_RELAXED);
	if (skip_gen != g) {
		skip_gen = g;
		skipped = 0;
	}
	if (enter)
		skipped++;
	else if (skipped)
		skipped--;
	else
		return 0; /* the return of a call entered before the disable */
	atomic_fetch_add_explicit(&weft_g.disabled, 1, memory_order_relaxed);
	return 1;
}

static void enter_filtered(void *fn) NOINST;
static void enter_filtered(void *fn)
{
	if (__atomic_load_n(&func_stopped, __ATOMIC_RELAXED)) {
		atomic_fetch_add_explicit(&weft_g.after_stop, 1, memory_order_relaxed);
		return;
	}
	if (func_disabled(1))
		return;
	if (func_select && !weft_func_allowed(fn)) {
		count_filtered(1);
		return;
	}
	if (weft_cfg.func_depth && ++depth > weft_cfg.func_depth) {
		count_filtered(1);
		return;
	}
	if (!weft_cfg.func_depth)
		depth++;
	weft__slice(func_hdr(WEFT_R_FUNC_ENTER, fn));
}

static void exit_filtered(void *fn) NOINST;
static void exit_filtered(void *fn)
{
	if (__atomic_load_n(&func_stopped, __ATOMIC_RELAXED)) {
		atomic_fetch_add_explicit(&weft_g.after_stop, 1, memory_order_relaxed);
		return;
	}
	if (func_disabled(0))
		return;
	if (func_select && !weft_func_allowed(fn)) {
		count_filtered(1);
		return;
	}
	uint32_t d = depth;
	if (d)
		depth = d - 1;
	if (weft_cfg.func_depth && d > weft_cfg.func_depth) {
		count_filtered(1);
		return;
	}
	if (func_min_ticks) {
		/* Is the entry of this call the last record, in this chunk? Then the call had no
		 * recorded children, and if it was short both records are taken back. */
		uint64_t now = weft__ticks();
		uint64_t *p = weft__reserve(0); /* opens the window without moving */
		unsigned nc = (unsigned)weft__tls.nctr, w = 2 + nc; /* the entry's words (counters=) */
		if (p && (char *)p - 8 * w >= weft__tls.start && weft__tls.start &&
		    p[1 - (long)w] == (func_hdr(WEFT_R_FUNC_ENTER, fn) | (uint64_t)nc << 40) &&
		    now - p[-(long)w] < func_min_ticks) {
			weft__commit(p - w);
			count_filtered(2);
			return;
		}
		if (p)
			weft__commit(p);
	}
	weft__slice(func_hdr(WEFT_R_FUNC_EXIT, fn));
}

EXPORT NOINST void __cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	if (__builtin_expect(func_filters, 0)) {
		enter_filtered(fn);
		return;
	}
	weft__slice(func_hdr(WEFT_R_FUNC_ENTER, fn));
}

EXPORT NOINST void __cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	if (__builtin_expect(func_filters, 0)) {
		exit_filtered(fn);
		return;
	}
	weft__slice(func_hdr(WEFT_R_FUNC_EXIT, fn));
}

EXPORT void *dlopen(const char *file, int mode)
{
	static void *(*real)(const char *, int);
	if (!real)
		real = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	void *h = real(file, mode);
	if (h)
		weft_maps_record();
	return h;
}

EXPORT int dlclose(void *handle)
{
	static int (*real)(void *);
	if (!real)
		real = (int (*)(void *))dlsym(RTLD_NEXT, "dlclose");
	weft_maps_record(); /* the library's mapping, before it goes (written already, unless it changed) */
	return real(handle);
}

/* ---- exec ---- */

static const char *const carried[] = {"LD_PRELOAD", "WEFT_OPTIONS", "WEFT_SESSION"};

/* envp plus whichever of `carried` it lacks, from this process's environment. */
static char **with_tracing_env(char *const envp[])
{
	size_t n = 0;
	while (envp && envp[n])
		n++;
	char **out = malloc((n + 4) * sizeof(char *));
	if (!out)
		return NULL;
	memcpy(out, envp, n * sizeof(char *));
	for (size_t k = 0; k < sizeof(carried) / sizeof(carried[0]); k++) {
		size_t l = strlen(carried[k]);
		int have = 0;
		for (size_t i = 0; i < n && !have; i++)
			have = !strncmp(out[i], carried[k], l) && out[i][l] == '=';
		const char *v = getenv(carried[k]);
		if (!have && v) {
			char *e = malloc(l + strlen(v) + 2);
			if (e) {
				sprintf(e, "%s=%s", carried[k], v);
				out[n++] = e;
			}
		}
	}
	out[n] = NULL;
	return out;
}

/* Finish this image's trace: an exec that succeeds never returns to flush it. A vfork child
 * shares its parent's memory and must not touch the runtime: it is told apart by its pid. */
static void before_exec(int restore)
{
	if (atomic_load(&weft_g.run) == WEFT_RUN_ON && getpid() == weft_g.pid)
		weft_stop_leaving(restore);
}

EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	static int (*real)(const char *, char *const[], char *const[]);
	if (!real)
		real = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execve");
	char **env = with_tracing_env(envp);
	before_exec(1);
	int rc = real(path, argv, env ? env : envp);
	int e = errno;
	free(env); /* only the added strings leak, once per failed exec */
	errno = e;
	return rc;
}

EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	static int (*real)(const char *, char *const[], char *const[]);
	if (!real)
		real = (int (*)(const char *, char *const[], char *const[]))dlsym(RTLD_NEXT, "execvpe");
	char **env = with_tracing_env(envp);
	before_exec(1);
	int rc = real(file, argv, env ? env : envp);
	int e = errno;
	free(env);
	errno = e;
	return rc;
}

extern char **environ;
EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	static int (*real)(int, char *const[], char *const[]);
	if (!real)
		real = (int (*)(int, char *const[], char *const[]))dlsym(RTLD_NEXT, "fexecve");
	char **env = with_tracing_env(envp);
	before_exec(1);
	int rc = real(fd, argv, env ? env : envp);
	int e = errno;
	free(env);
	errno = e;
	return rc;
}

/* execl, execle, execlp: glibc's own call execve inside libc, past the interposed one, so
 * they are rebuilt here on the interposed execve/execvpe. */
#define EXECL_ARGV(arg, ap, argv)                                                   \
	size_t n_ = 1;                                                             \
	va_start(ap, arg);                                                         \
	while (va_arg(ap, char *))                                                 \
		n_++;                                                              \
	va_end(ap);                                                                \
	char **argv = alloca((n_ + 1) * sizeof(char *));                            \
	va_start(ap, arg);                                                         \
	argv[0] = (char *)arg;                                                     \
	for (size_t i_ = 1; i_ <= n_; i_++)                                        \
		argv[i_] = va_arg(ap, char *);

EXPORT int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	EXECL_ARGV(arg, ap, argv)
	va_end(ap);
	return execve(path, argv, environ);
}

EXPORT int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	EXECL_ARGV(arg, ap, argv)
	va_end(ap);
	return execvpe(file, argv, environ);
}

EXPORT int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	EXECL_ARGV(arg, ap, argv)
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

/* posix_spawn: the parent goes on, so nothing is finished; the child gets the tracing
 * environment if the caller's envp dropped it. */
#include <spawn.h>
typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);
static int spawn_with_env(spawn_fn real, pid_t *pid, const char *path,
			  const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *at,
			  char *const argv[], char *const envp[])
{
	char **env = with_tracing_env(envp);
	pid_t own = 0;
	int rc = real(pid ? pid : &own, path, fa, at, argv, env ? env : envp);
	free(env);
	if (!rc) /* (its image connects to weft record once its runtime starts: said first) */
		weft_control_spawned(pid ? *pid : own);
	return rc;
}

EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		       const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	static spawn_fn real;
	if (!real)
		real = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawn");
	return spawn_with_env(real, pid, path, fa, at, argv, envp);
}

EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	static spawn_fn real;
	if (!real)
		real = (spawn_fn)dlsym(RTLD_NEXT, "posix_spawnp");
	return spawn_with_env(real, pid, file, fa, at, argv, envp);
}

/* ---- _exit ---- */

/* _exit and _Exit skip atexit handlers, where the trace is normally finished (shells, a
 * fork child that fails to exec, programs that end in a hurry): finish it here, then end
 * the process the way glibc's _exit does. A vfork child (another pid, the parent's memory)
 * leaves the runtime alone. */
__attribute__((noreturn)) static void exit_now(int status)
{
	/* _exit is async-signal-safe and often called from a signal handler: the stop frees
	 * nothing (the process ends anyway; the interrupted code may hold malloc's lock) and is
	 * skipped when this thread was interrupted inside the runtime, holding its locks */
	if (!weft_in_runtime && getpid() == weft_g.pid) { /* not in a vfork child: parent's memory */
		/* a signal that comes now finds the process ending as it asked (weft_stop_leaving;
		 * never put back: the process ends) */
		struct weft_held_signals held;
		weft_hold_async_signals(&held);
		weft_g.in_signal = WEFT_QUICK_EXIT;
		weft_snapshot_quick_exit(); /* the flight recorder's exit window */
		before_exec(0);
	} else if (getpid() == weft_g.pid) {
		weft_meta_clock_try(); /* the stop is skipped: at least the clock's last point */
	}
	weft_control_bye((status & 0xff) << 8); /* ending, not exec'ing (record-control.c) */
	for (;;)
		syscall(SYS_exit_group, status);
}

EXPORT void _exit(int status)
{
	exit_now(status);
}

EXPORT void _Exit(int status)
{
	exit_now(status);
}

/* ---- signals (signals.c) ---- */

void weft_signals_start(void);

__attribute__((constructor(101))) static void preload_init(void)
{
	if (weft_start())
		return;
	func_select = weft_cfg.func_filter[0] || weft_cfg.func_libs[0];
	func_filters_cfg = weft_cfg.func_depth || weft_cfg.func_min_ns || func_select;
	func_filters = func_filters_cfg;
	if (weft_cfg.func_min_ns) {
		double tpn = weft_ticks_per_ns();
		func_min_ticks = (uint64_t)((double)weft_cfg.func_min_ns * tpn);
		if (!func_min_ticks)
			func_min_ticks = 1;
	}
	weft_g.before_stop = functions_stop;
	/* the control channel's state (taken at start, or changed since): the function hooks follow */
	weft_g.on_pause = func_pause;
	func_pause(atomic_load(&weft_g.paused));
	weft_maps_record();
	/* a forked child writes its own metadata file: it needs the whole map (this handler
	 * runs after the runtime's, which opened that file) */
	pthread_atfork(NULL, NULL, weft_maps_fork_child);
	weft_signals_start();
	/* the data sources (memory, mem_access, watch, sched, counters) started with the trace:
	 * weft_start runs collect/sources.c's table */
}


/* ---- setjmp / longjmp (x86-64: see setjmp-x86_64.S) ---- */

#if defined(__x86_64__)
/* Real functions, looked up by the first setjmp (read by the trampolines). */
EXPORT void *weft_real__setjmp, *weft_real_setjmp, *weft_real___sigsetjmp;

static void jmp_record(unsigned type, const void *env) NOINST;
static void jmp_record(unsigned type, const void *env)
{
	if (atomic_load_explicit(&weft_g.run, memory_order_relaxed) == WEFT_RUN_ON)
		weft__rec2(func_hdr(type, env));
}

EXPORT NOINST void weft_note_setjmp(void *env)
{
	if (!weft_real___sigsetjmp) {
		weft_real__setjmp = dlsym(RTLD_NEXT, "_setjmp");
		weft_real_setjmp = dlsym(RTLD_NEXT, "setjmp");
		__atomic_store_n(&weft_real___sigsetjmp, dlsym(RTLD_NEXT, "__sigsetjmp"), __ATOMIC_RELEASE);
	}
	jmp_record(WEFT_R_SETJMP, env);
}

#define LONGJMP_WRAPPER(fn)                                                              \
	EXPORT NOINST __attribute__((noreturn)) void fn(void *env, int val)                  \
	{                                                                                 \
		static void (*real)(void *, int);                                         \
		if (!real)                                                                \
			real = (void (*)(void *, int))dlsym(RTLD_NEXT, #fn);              \
		jmp_record(WEFT_R_LONGJMP, env);                                          \
		real(env, val);                                                           \
		__builtin_unreachable();                                                  \
	}
LONGJMP_WRAPPER(longjmp)
LONGJMP_WRAPPER(_longjmp)
LONGJMP_WRAPPER(siglongjmp)
LONGJMP_WRAPPER(__longjmp_chk)
#endif
