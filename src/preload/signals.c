/*
 * signals.c - fatal and terminating signals in libweft-preload.so: when a signal whose default
 * action ends the process would end the program (its disposition is the default) - SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT, SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, and SIGPIPE (`prog | head`),
 * SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGTRAP, SIGSYS, SIGIO,
 * SIGPWR, SIGSTKFLT - weft's handler finishes the trace first and then lets the signal take its
 * default effect, so a crash, a Ctrl-C or a closed pipe still leaves a complete trace. (The
 * real-time signals, which end a process by default too, are left alone: glibc keeps two of
 * them, and a program that sends one without a handler for it is rare.)
 *
 * The program must not see that handler: CPython installs its SIGINT handler (the one that
 * raises KeyboardInterrupt) only where the disposition it finds is SIG_DFL, multiprocessing
 * saves and restores dispositions through signal.getsignal, and C programs compare what
 * sigaction() returns. So every call that sets or reads a disposition is interposed here
 * (sigaction and __sigaction, signal, bsd_signal, ssignal, sysv_signal and __sysv_signal,
 * sigset, sigignore, siginterrupt) and answers with the program's own view:
 *   - while the program's view of a signal is SIG_DFL, weft's handler is what the kernel has,
 *     and a query returns SIG_DFL with the flags and mask the program gave with it (as the
 *     kernel and glibc would have normalised them, which start() measures once);
 *   - a handler or SIG_IGN the program installs goes to the kernel unchanged, and is what a
 *     query returns (the kernel's answer);
 *   - when the program sets SIG_DFL again, weft's handler goes back in its place.
 * Whether weft's handler is in place is always the kernel's answer (its handler is
 * on_fatal), never a flag of ours, so threads racing on sigaction, a vfork child and glibc's
 * internal calls that bypass the interposition (system(), abort()) stay consistent. What is
 * ours is only the flags and mask of each SIG_DFL view: an index per signal into a small pool
 * of immutable views, published with one atomic store, so a query or a change from any thread
 * or from a signal handler needs no lock (async-signal-safe, like the calls it replaces).
 * A fork child inherits both the kernel's table and ours; exec resets handlers to SIG_DFL
 * (SIG_IGN survives) and the next image's preload installs weft's handler again.
 *
 * The signal named by snapshot_signal= (`weft record --snapshot-signal=SIG`) is managed the
 * same way, with snap_handler in place of the fatal one: while the program's view is SIG_DFL
 * the signal requests a snapshot (taken by the runtime's snapshot thread, snapshot.c) instead
 * of its default action, and the program still sees SIG_DFL; a handler the program installs
 * for it replaces weft's (the program's use of the signal wins), and SIG_DFL brings weft's back.
 * A fatal signal takes a snapshot (WEFT_SNAP_FATAL, nothing allocated) before the trace stops.
 *
 * Not covered: a program that calls the rt_sigaction system call itself (syscall(2), Go's
 * runtime, a statically linked libc) sees weft's handler; it may replace it, and then that
 * signal ends the program untraced. sigvec (a compatibility symbol no program can link to any
 * more) is not interposed.
 */
#include "lib/internal.h"
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* the same order as the sites in fatal_site */
static const int fatal[] = {SIGINT,  SIGTERM,   SIGHUP,  SIGQUIT, SIGSEGV, SIGBUS,  SIGABRT,
			    SIGFPE,  SIGILL,    SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2, SIGVTALRM,
			    SIGPROF, SIGXCPU,   SIGXFSZ, SIGTRAP, SIGSYS,  SIGIO,   SIGPWR,
			    SIGSTKFLT};
#define NFATAL (sizeof(fatal) / sizeof(fatal[0]))

/* ---- the calls underneath ---- */

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
typedef __sighandler_t (*signal_fn)(int, __sighandler_t);
typedef int (*sigignore_fn)(int);
typedef int (*siginterrupt_fn)(int, int);
/* Looked up at start (dlsym is not async-signal-safe); a call that comes before (another
 * library's constructor) looks up for itself. Relaxed: any thread's answer is the same. */
static sigaction_fn next_sigaction_p;

static void *next_fn(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static int next_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigaction_fn f = __atomic_load_n(&next_sigaction_p, __ATOMIC_RELAXED);
	if (__builtin_expect(!f, 0)) {
		void *p = next_fn("sigaction");
		memcpy(&f, &p, sizeof(f));
		if (!f) {
			errno = ENOSYS;
			return -1;
		}
		__atomic_store_n(&next_sigaction_p, f, __ATOMIC_RELAXED);
	}
	return f(sig, act, old);
}

#define NEXT(type, name) \
	static type next_##name; \
	if (!next_##name) { \
		void *p_ = next_fn(#name); \
		memcpy(&next_##name, &p_, sizeof(p_)); \
	}

/* ---- the program's SIG_DFL views ---- */

/* Signals whose disposition this file manages (bit sig): set once at start, read relaxed. */
static uint64_t managed;
/* Flags as the kernel and glibc store them, measured at start: a flag outside `kept` is
 * dropped by the kernel (unknown to it), `added` is what glibc adds (SA_RESTORER on x86-64,
 * with its restorer function, which the kernel's answer for weft's handler carries too). */
static int kept = -1, added;

/* A SIG_DFL disposition as the program set it: flags and the mask of signals 1..64 (what the
 * kernel keeps). A slot is claimed (nclaimed), written, then marked ready, and never changes
 * after; a claimer interrupted by a handler on its own thread only makes the handler's scan
 * miss its slot (a duplicate, never a wrong answer). */
struct view {
	int flags;
	int ready;
	uint64_t mask;
};
#define NVIEWS 64
static struct view views[NVIEWS] = {{0, 1, 0}}; /* [0]: no flags, empty mask (after exec) */
static unsigned nclaimed = 1;
static uint8_t view_of[65]; /* per signal: the index of its current SIG_DFL view */

static int is_managed(int sig)
{
	return sig > 0 && sig < 64 && (__atomic_load_n(&managed, __ATOMIC_RELAXED) >> sig & 1);
}

static uint64_t mask_word(const sigset_t *s)
{
	uint64_t m;
	memcpy(&m, s, sizeof(m)); /* glibc: signal n is bit n-1 of the first word */
	return m & ~((1ull << (SIGKILL - 1)) | (1ull << (SIGSTOP - 1))); /* as the kernel does */
}

/* The view of flags and mask (as the kernel keeps them): an existing slot with the same, else
 * a new one. When the pool is full a slot with the same flags stands in (else slot 0): the
 * handler, which is what programs test, stays right. */
static unsigned view_for(int flags, uint64_t mask)
{
	unsigned n = __atomic_load_n(&nclaimed, __ATOMIC_ACQUIRE), same_flags = 0;
	for (unsigned i = 0; i < n && i < NVIEWS; i++) {
		if (!__atomic_load_n(&views[i].ready, __ATOMIC_ACQUIRE))
			continue;
		if (views[i].flags == flags && views[i].mask == mask)
			return i;
		if (views[i].flags == flags && !same_flags)
			same_flags = i;
	}
	unsigned i = __atomic_fetch_add(&nclaimed, 1, __ATOMIC_RELAXED);
	if (i >= NVIEWS)
		return same_flags;
	views[i].flags = flags;
	views[i].mask = mask;
	__atomic_store_n(&views[i].ready, 1, __ATOMIC_RELEASE);
	return i;
}

/* A program's SIG_DFL action, as the kernel would store it. */
static unsigned view_of_action(const struct sigaction *act)
{
	return view_for((act->sa_flags | added) & kept, mask_word(&act->sa_mask));
}

static void fatal_handler(int sig, siginfo_t *si, void *uc);
static void snap_handler(int sig, siginfo_t *si, void *uc);
/* snapshot_signal=: set once at start (weft_signals_start), read relaxed; 0 none */
static int snap_sig;

/* What the program sees for a kernel disposition k: k itself, unless it is weft's handler,
 * which stands for SIG_DFL with the view's flags and mask. */
static void program_view(unsigned view, const struct sigaction *k, struct sigaction *out)
{
	*out = *k;
	if (k->sa_sigaction != fatal_handler && k->sa_sigaction != snap_handler)
		return;
	const struct view *v = &views[view < NVIEWS ? view : 0];
	out->sa_handler = SIG_DFL;
	out->sa_flags = v->flags;
	memset(&out->sa_mask, 0, sizeof(out->sa_mask));
	memcpy(&out->sa_mask, &v->mask, sizeof(v->mask));
	if (added && !(v->flags & added))
		out->sa_restorer = NULL; /* as at start: glibc had not set one yet */
}

/* weft's handler, in the kernel while the program's view is SIG_DFL. SA_RESETHAND: the
 * default action is back in place as soon as it runs. The snapshot signal's stays (SA_RESTART:
 * the program's calls go on as if nothing came). */
static void weft_action(struct sigaction *sa, int sig)
{
	memset(sa, 0, sizeof(*sa));
	sigemptyset(&sa->sa_mask);
	if (sig && sig == __atomic_load_n(&snap_sig, __ATOMIC_RELAXED)) {
		sa->sa_sigaction = snap_handler;
		sa->sa_flags = SA_SIGINFO | SA_RESTART;
		return;
	}
	sa->sa_sigaction = fatal_handler;
	sa->sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESETHAND;
}

static int managed_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction k, weft;
	/* acquire/release: a slot's contents are seen with its index */
	unsigned before = __atomic_load_n(&view_of[sig], __ATOMIC_ACQUIRE);
	int rc;
	if (!act) {
		rc = next_sigaction(sig, NULL, &k);
	} else if (act->sa_handler == SIG_DFL) {
		/* the new view is published before weft's handler is in: a query in between sees
		 * the new disposition, as after a change that happened at once */
		before = __atomic_exchange_n(&view_of[sig], (uint8_t)view_of_action(act), __ATOMIC_ACQ_REL);
		weft_action(&weft, sig);
		rc = next_sigaction(sig, &weft, &k);
	} else {
		rc = next_sigaction(sig, act, &k);
	}
	if (!rc && old)
		program_view(before, &k, old);
	return rc;
}

/* ---- the interposed calls ---- */

EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!is_managed(sig))
		return next_sigaction(sig, act, old);
	return managed_sigaction(sig, act, old);
}

EXPORT int __sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return sigaction(sig, act, old);
}

/* glibc's signal() restarts interrupted calls unless siginterrupt(sig, 1) said otherwise: the
 * signals so marked (managed ones; glibc's own set keeps the others). */
static uint64_t interrupting;

static __sighandler_t set_simple(int sig, __sighandler_t h, int flags, int mask_self)
{
	struct sigaction a, o;
	memset(&a, 0, sizeof(a));
	a.sa_handler = h;
	sigemptyset(&a.sa_mask);
	if (mask_self)
		sigaddset(&a.sa_mask, sig);
	a.sa_flags = flags;
	return managed_sigaction(sig, &a, &o) ? SIG_ERR : o.sa_handler;
}

/* signal, bsd_signal and ssignal: glibc's one function under three names (BSD semantics) */
static __sighandler_t bsd_signal_impl(int sig, __sighandler_t h, signal_fn next)
{
	if (!is_managed(sig))
		return next ? next(sig, h) : (errno = ENOSYS, SIG_ERR);
	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	int intr = __atomic_load_n(&interrupting, __ATOMIC_RELAXED) >> sig & 1;
	return set_simple(sig, h, intr ? 0 : SA_RESTART, 1);
}

EXPORT __sighandler_t signal(int sig, __sighandler_t h)
{
	NEXT(signal_fn, signal)
	return bsd_signal_impl(sig, h, next_signal);
}

EXPORT __sighandler_t bsd_signal(int sig, __sighandler_t h)
{
	NEXT(signal_fn, bsd_signal)
	return bsd_signal_impl(sig, h, next_bsd_signal);
}

EXPORT __sighandler_t ssignal(int sig, __sighandler_t h)
{
	NEXT(signal_fn, ssignal)
	return bsd_signal_impl(sig, h, next_ssignal);
}

/* System V semantics: reset to SIG_DFL on delivery, the signal not blocked in its handler,
 * calls interrupted (SA_INTERRUPT: a historical flag the kernel drops). */
static __sighandler_t sysv_signal_impl(int sig, __sighandler_t h, signal_fn next)
{
	if (!is_managed(sig))
		return next ? next(sig, h) : (errno = ENOSYS, SIG_ERR);
	if (h == SIG_ERR) {
		errno = EINVAL;
		return SIG_ERR;
	}
	return set_simple(sig, h, (SA_RESETHAND | SA_NODEFER | 0x20000000) & ~SA_RESTART, 0);
}

EXPORT __sighandler_t sysv_signal(int sig, __sighandler_t h)
{
	NEXT(signal_fn, sysv_signal)
	return sysv_signal_impl(sig, h, next_sysv_signal);
}

EXPORT __sighandler_t __sysv_signal(int sig, __sighandler_t h)
{
	NEXT(signal_fn, __sysv_signal)
	return sysv_signal_impl(sig, h, next___sysv_signal);
}

/* sigset: SIG_HOLD blocks the signal; any other disposition is set with no flags and the
 * signal unblocked. The previous disposition, or SIG_HOLD if the signal was blocked. */
EXPORT __sighandler_t sigset(int sig, __sighandler_t h)
{
	NEXT(signal_fn, sigset)
	if (!is_managed(sig))
		return next_sigset ? next_sigset(sig, h) : (errno = ENOSYS, SIG_ERR);
	sigset_t one, was;
	sigemptyset(&one);
	sigaddset(&one, sig);
	struct sigaction o;
	if (h == SIG_HOLD) {
		if (sigprocmask(SIG_BLOCK, &one, &was) < 0)
			return SIG_ERR;
		if (sigismember(&was, sig))
			return SIG_HOLD;
		return managed_sigaction(sig, NULL, &o) ? SIG_ERR : o.sa_handler;
	}
	__sighandler_t prev = set_simple(sig, h, 0, 0);
	if (prev == SIG_ERR || sigprocmask(SIG_UNBLOCK, &one, &was) < 0)
		return SIG_ERR;
	return sigismember(&was, sig) ? SIG_HOLD : prev;
}

EXPORT int sigignore(int sig)
{
	NEXT(sigignore_fn, sigignore)
	if (!is_managed(sig))
		return next_sigignore ? next_sigignore(sig) : (errno = ENOSYS, -1);
	return set_simple(sig, SIG_IGN, 0, 0) == SIG_ERR ? -1 : 0;
}

/* siginterrupt: SA_RESTART off (1) or on (0) in the current disposition, and remembered for
 * later signal() calls. glibc's own does this on the kernel's disposition, which for a
 * SIG_DFL view is weft's handler, not the view. */
EXPORT int siginterrupt(int sig, int flag)
{
	NEXT(siginterrupt_fn, siginterrupt)
	if (!is_managed(sig))
		return next_siginterrupt ? next_siginterrupt(sig, flag) : (errno = ENOSYS, -1);
	struct sigaction a;
	if (managed_sigaction(sig, NULL, &a))
		return -1;
	if (flag) {
		__atomic_fetch_or(&interrupting, 1ull << sig, __ATOMIC_RELAXED);
		a.sa_flags &= ~SA_RESTART;
	} else {
		__atomic_fetch_and(&interrupting, ~(1ull << sig), __ATOMIC_RELAXED);
		a.sa_flags |= SA_RESTART;
	}
	return managed_sigaction(sig, &a, NULL);
}

/* ---- weft's handler ---- */

/* The marker a fatal signal leaves in the trace: an instant on the thread that got it. The
 * sites are registered at start (weft_signals_start): registering allocates, and the handler
 * may have interrupted malloc holding its lock. */
#define SITE(s) {0, WEFT_KIND_EVENT, 0, 0, 0, "weft: killed by " #s, "", 0, 0}
static struct weft_site fatal_sites[] = {
	SITE(SIGINT),  SITE(SIGTERM), SITE(SIGHUP),	SITE(SIGQUIT), SITE(SIGSEGV), SITE(SIGBUS),
	SITE(SIGABRT), SITE(SIGFPE),  SITE(SIGILL),	SITE(SIGPIPE), SITE(SIGALRM), SITE(SIGUSR1),
	SITE(SIGUSR2), SITE(SIGVTALRM), SITE(SIGPROF), SITE(SIGXCPU), SITE(SIGXFSZ), SITE(SIGTRAP),
	SITE(SIGSYS),  SITE(SIGIO),   SITE(SIGPWR),	SITE(SIGSTKFLT)};
_Static_assert(sizeof(fatal_sites) / sizeof(fatal_sites[0]) == NFATAL, "a marker for each fatal signal");
#undef SITE

static struct weft_site *fatal_site(int sig)
{
	for (size_t i = 0; i < NFATAL; i++)
		if (fatal[i] == sig)
			return &fatal_sites[i];
	return NULL;
}

/* The marker, where nothing has to be allocated: its site registered, room left in this
 * thread's chunk (a new chunk, or a first event of the thread, would allocate), and not inside
 * another event of this thread (it would be dropped and counted as a loss). Otherwise only
 * the SIGNAL metadata record says it. */
static void fatal_marker(int sig)
{
	struct weft_site *m = fatal_site(sig);
	if (!m || weft__tls.busy || __atomic_load_n(&m->state, __ATOMIC_ACQUIRE) != WEFT__SITE_ON)
		return;
	if (!weft__tls.pos || weft__tls.end - weft__tls.pos < 64)
		return;
	weft__rec2(weft__hdr(m->id, WEFT_R_INSTANT, 0, 0));
}

static void fatal_handler(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int saved = errno;
	/* finish the trace unless this thread was inside the runtime holding its locks (then
	 * what the writers already have is what survives) */
	if (getpid() == weft_g.pid)
		weft_fatal_begin();
	if (!weft_in_runtime && getpid() == weft_g.pid) {
		weft_g.in_signal = 1;
		if (atomic_load(&weft_g.run) == WEFT_RUN_ON) {
			fatal_marker(sig);
			/* where and when the process ended, for `weft info` and a marker in the trace */
			uint32_t w[4] = {(uint32_t)sig, (uint32_t)syscall(SYS_gettid), 0, 0};
			uint64_t ticks = weft__ticks();
			memcpy(&w[2], &ticks, sizeof(ticks));
			weft_meta_write(WEFT_M_SIGNAL, w, sizeof(w), NULL, 0);
			/* the flight recorder's window (or the marker alone), before the stop */
			const struct weft_site *m = fatal_site(sig);
			weft_snapshot_fatal(m ? m->name + strlen("weft: ") : "fatal signal");
		}
		weft_stop();
	} else if (getpid() == weft_g.pid) {
		/* inside weft's own code on this thread (a drop, a chunk switch): the stop is skipped
		 * (it takes this thread's locks), but the flight recorder's window is still written -
		 * the dump never waits for a lock this thread holds, and says why where it needs one */
		if (atomic_load(&weft_g.run) == WEFT_RUN_ON && weft_flight_active()) {
			weft_g.in_signal = 1;
			const struct weft_site *m = fatal_site(sig);
			weft_snapshot_fatal(m ? m->name + strlen("weft: ") : "fatal signal");
		}
		weft_meta_clock_try(); /* at least the clock's last point */
	}
	/* the default action (SA_RESETHAND put it back already; this is for certain), straight
	 * to the kernel: the interposed calls would put this handler back */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	next_sigaction(sig, &dfl, NULL);
	errno = saved;
	/* A fault the CPU raised (si_code > 0) re-executes the faulting instruction on return and
	 * dies of it with the default action now in place. Every other fatal signal, including a
	 * SIGSEGV sent with kill() or raise() (si_code <= 0: SI_USER, SI_TKILL, SI_QUEUE), would
	 * just return: it is raised again, so the program ends exactly as it would untraced. */
	int fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && si && si->si_code > 0;
	weft_control_bye(sig); /* (no core flag: whether one is dumped is the kernel's to say) */
	if (!fault)
		raise(sig);
}

/* The snapshot signal, while the program's view is SIG_DFL: a request for the snapshot
 * thread, nothing else (async-signal-safe). A fork child's own thread takes its requests;
 * a vfork child (same memory, other pid) makes none. */
static void snap_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	int saved = errno;
	if (getpid() == weft_g.pid)
		weft_snapshot_signal_request();
	errno = saved;
}

/* At start (preload_init): weft's handler where the program would have SIG_DFL. A signal
 * the process inherited as ignored stays ignored, and is managed all the same (setting SIG_DFL
 * later puts weft's handler in). */
void weft_signals_start(void)
{
	void *p = next_fn("sigaction");
	if (!p)
		return;
	memcpy(&next_sigaction_p, &p, sizeof(p));
	sigset_t all, was;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &was); /* no signal of this thread in between */
	/* the fatal signals, and the snapshot signal where it is another */
	int sigs[NFATAL + 1];
	size_t nsigs = 0;
	int ss = weft_cfg.snapshot_signal > 0 && weft_cfg.snapshot_signal < 64 ? weft_cfg.snapshot_signal : 0;
	__atomic_store_n(&snap_sig, ss, __ATOMIC_RELAXED);
	for (size_t i = 0; i < NFATAL; i++)
		sigs[nsigs++] = fatal[i];
	if (ss && !fatal_site(ss))
		sigs[nsigs++] = ss;
	struct sigaction start[NFATAL + 1], weft, k;
	uint64_t m = 0;
	int probed = 0;
	for (size_t i = 0; i < nsigs; i++) {
		if (next_sigaction(sigs[i], NULL, &start[i]))
			continue;
		m |= 1ull << sigs[i];
		if (start[i].sa_handler != SIG_DFL)
			continue; /* the program's own handling (or an inherited SIG_IGN) stays */
		view_of[sigs[i]] = (uint8_t)view_for(start[i].sa_flags, mask_word(&start[i].sa_mask));
		weft_action(&weft, sigs[i]);
		if (!probed) {
			/* what the kernel keeps of a disposition's flags (unknown ones it drops), and
			 * what glibc adds: every flag asked for first, then weft's own */
			weft.sa_flags = -1;
			if (!next_sigaction(sigs[i], &weft, NULL) && !next_sigaction(sigs[i], NULL, &k))
				kept = k.sa_flags;
			weft_action(&weft, sigs[i]);
		}
		next_sigaction(sigs[i], &weft, NULL);
		if (!probed && !next_sigaction(sigs[i], NULL, &k))
			added = k.sa_flags & ~weft.sa_flags;
		probed = 1;
	}
	__atomic_store_n(&managed, m, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	for (size_t i = 0; i < NFATAL; i++) /* the markers' sites, while allocating is safe */
		weft__site_check_n(&fatal_sites[i], 0); /* registered: no event */
}
