/* sigview.c MODE - what a program sees of its signal dispositions, for
 * tests/integration/test_signals.py, which compares every line of output with the untraced run.
 * Built with -finstrument-functions.
 *   show       every signal's disposition as sigaction(sig, NULL, &old) returns it
 *   calls      on each signal weft manages: every call that sets a disposition (sigaction,
 *              signal, bsd_signal, ssignal, sysv_signal, __sysv_signal, sigset, sigignore,
 *              siginterrupt), what each returns and what a query sees after it
 *   die SIG H  installs a handler on SIG, puts SIG_DFL back with call H (sigaction, signal,
 *              sigset, sysv_signal, bsd_signal), runs step() 10 times, then raises SIG (SIGSEGV
 *              and SIGFPE: a real fault); prints "survived" if it returns
 *   wait       step() 10 times, prints "ready", then waits for a signal (sent by the test)
 *   pipe       step() 10 times, then prints numbered lines until a write fails (a reader that
 *              closed the pipe: SIGPIPE, whose default action ends it)
 *   race       4 threads set and reset dispositions (handler, SIG_DFL with flags, SIG_IGN) of
 *              the managed signals and query them, while a timer's handler does the same;
 *              prints "mismatches N" (a query that saw what no thread set) and then shows
 *              every signal, all set back to SIG_DFL */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

/* siginterrupt, sigignore and sigset are deprecated, and tested here because programs call them */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

extern __sighandler_t bsd_signal(int, __sighandler_t);
extern __sighandler_t __sysv_signal(int, __sighandler_t);

/* every signal whose default action ends the process, but the real-time ones (signals.c) */
static const int managed[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,   SIGSEGV, SIGBUS,  SIGABRT, SIGFPE,
			      SIGILL,  SIGPIPE, SIGALRM, SIGUSR1,   SIGUSR2, SIGVTALRM, SIGPROF, SIGXCPU,
			      SIGXFSZ, SIGTRAP, SIGSYS,  SIGIO,	    SIGPWR,  SIGSTKFLT};
#define NMANAGED (int)(sizeof(managed) / sizeof(managed[0]))
/* the ones race() churns: not its timer's SIGALRM, nor one its churn would let end it */
static const int racing[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGUSR2, SIGPWR};
#define NRACING (int)(sizeof(racing) / sizeof(racing[0]))

volatile int sink;
__attribute__((noinline)) void step(void)
{
	sink++;
}

static void handler(int sig)
{
	(void)sig;
}

static const char *name(__sighandler_t h)
{
	return h == SIG_DFL ? "DFL" : h == SIG_IGN ? "IGN" : h == SIG_ERR ? "ERR" : h == SIG_HOLD ? "HOLD"
	       : h == handler ? "handler" : "other";
}

static void show(int sig)
{
	struct sigaction o;
	memset(&o, 0xa5, sizeof(o));
	if (sigaction(sig, NULL, &o)) {
		printf("  %d: error\n", sig);
		return;
	}
	unsigned long long mask = 0;
	for (int s = 1; s <= 64; s++)
		if (sigismember(&o.sa_mask, s) == 1)
			mask |= 1ull << (s - 1);
	printf("  %d: %s flags=%#x mask=%#llx restorer=%s\n", sig, name(o.sa_handler), (unsigned)o.sa_flags, mask,
	       o.sa_restorer ? "set" : "null");
}

static void calls(int sig)
{
	struct sigaction a, o;
	printf("signal %d\n", sig);
	show(sig);
	memset(&a, 0, sizeof(a));
	a.sa_handler = SIG_DFL;
	a.sa_flags = SA_RESTART | SA_ONSTACK;
	sigemptyset(&a.sa_mask);
	sigaddset(&a.sa_mask, SIGUSR1);
	sigaddset(&a.sa_mask, SIGKILL); /* the kernel drops it */
	printf(" sigaction DFL: %d", sigaction(sig, &a, &o));
	printf(" was %s flags=%#x\n", name(o.sa_handler), (unsigned)o.sa_flags);
	show(sig);
	printf(" signal handler: was %s\n", name(signal(sig, handler)));
	show(sig);
	printf(" signal DFL: was %s\n", name(signal(sig, SIG_DFL)));
	show(sig);
	printf(" sysv_signal IGN: was %s\n", name(sysv_signal(sig, SIG_IGN)));
	show(sig);
	printf(" __sysv_signal DFL: was %s\n", name(__sysv_signal(sig, SIG_DFL)));
	show(sig);
	printf(" bsd_signal handler: was %s\n", name(bsd_signal(sig, handler)));
	printf(" siginterrupt 1: %d\n", siginterrupt(sig, 1));
	show(sig);
	printf(" ssignal DFL: was %s\n", name(ssignal(sig, SIG_DFL)));
	show(sig);
	printf(" siginterrupt 0: %d\n", siginterrupt(sig, 0));
	show(sig);
	printf(" sigignore: %d\n", sigignore(sig));
	show(sig);
	printf(" sigset HOLD: was %s\n", name(sigset(sig, SIG_HOLD)));
	printf(" sigset DFL: was %s\n", name(sigset(sig, SIG_DFL)));
	show(sig);
	printf(" sigset handler: was %s\n", name(sigset(sig, handler)));
	memset(&a, 0, sizeof(a));
	a.sa_handler = SIG_DFL; /* back as it was at start */
	sigemptyset(&a.sa_mask);
	printf(" sigaction DFL: %d", sigaction(sig, &a, &o));
	printf(" was %s\n", name(o.sa_handler));
	show(sig);
}

static _Atomic long mismatches;

/* one round on sig: a handler, SIG_DFL with SA_RESTART and SIGUSR1 masked, SIG_IGN, queried */
static void churn(int sig)
{
	struct sigaction a, o;
	memset(&a, 0, sizeof(a));
	sigemptyset(&a.sa_mask);
	a.sa_handler = handler;
	sigaction(sig, &a, NULL);
	a.sa_handler = SIG_DFL;
	a.sa_flags = SA_RESTART;
	sigaddset(&a.sa_mask, SIGUSR1);
	sigaction(sig, &a, NULL);
	sigaction(sig, NULL, &o);
	/* another thread may have changed it since: only what no thread ever sets is wrong */
	if (o.sa_handler == SIG_DFL && !(o.sa_flags & SA_RESTART) && o.sa_flags != 0)
		mismatches++;
	if (o.sa_handler != SIG_DFL && o.sa_handler != SIG_IGN && o.sa_handler != handler)
		mismatches++;
	signal(sig, SIG_IGN);
}

static void on_timer(int sig)
{
	(void)sig;
	churn(SIGHUP);
}

static void *racer(void *arg)
{
	int k = (int)(long)arg;
	for (int i = 0; i < 20000; i++)
		churn(racing[(i + k) % NRACING]);
	return NULL;
}

static void race(void)
{
	signal(SIGALRM, on_timer);
	struct itimerval it = {{0, 100}, {0, 100}};
	setitimer(ITIMER_REAL, &it, NULL);
	pthread_t th[4];
	for (long k = 0; k < 4; k++)
		pthread_create(&th[k], NULL, racer, (void *)k);
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	signal(SIGALRM, SIG_DFL);
	printf("mismatches %ld\n", (long)mismatches);
	struct sigaction a;
	memset(&a, 0, sizeof(a));
	a.sa_handler = SIG_DFL; /* back as at start */
	sigemptyset(&a.sa_mask);
	for (int i = 0; i < NMANAGED; i++)
		sigaction(managed[i], &a, NULL);
	for (int s = 1; s <= 64; s++)
		show(s);
}

static void restore_default(int sig, const char *how)
{
	if (!strcmp(how, "sigaction")) {
		struct sigaction a;
		memset(&a, 0, sizeof(a));
		a.sa_handler = SIG_DFL;
		sigaction(sig, &a, NULL);
	} else if (!strcmp(how, "signal")) {
		signal(sig, SIG_DFL);
	} else if (!strcmp(how, "sigset")) {
		sigset(sig, SIG_DFL);
	} else if (!strcmp(how, "sysv_signal")) {
		sysv_signal(sig, SIG_DFL);
	} else if (!strcmp(how, "bsd_signal")) {
		bsd_signal(sig, SIG_DFL);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "show";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "show")) {
		for (int s = 1; s <= 64; s++)
			show(s);
	} else if (!strcmp(mode, "calls")) {
		for (int i = 0; i < NMANAGED; i++)
			calls(managed[i]);
		for (int s = 1; s <= 64; s++)
			show(s);
	} else if (!strcmp(mode, "die") && argc > 3) {
		int sig = atoi(argv[2]);
		struct sigaction a;
		memset(&a, 0, sizeof(a));
		a.sa_handler = handler;
		sigaction(sig, &a, NULL);
		restore_default(sig, argv[3]);
		for (int i = 0; i < 10; i++)
			step();
		if (sig == SIGSEGV)
			*(volatile int *)(long)sink = 1; /* sink is 10: an unmapped address */
		else if (sig == SIGFPE) {
			volatile int zero = sink - 10;
			sink = 1000 / zero;
		}
		else
			raise(sig);
		printf("survived\n");
	} else if (!strcmp(mode, "race")) {
		race();
	} else if (!strcmp(mode, "pipe")) {
		for (int i = 0; i < 10; i++)
			step();
		for (long i = 0;; i++)
			if (printf("%ld\n", i) < 0 || fflush(stdout))
				break;
		printf("survived\n");
	} else if (!strcmp(mode, "wait")) {
		for (int i = 0; i < 10; i++)
			step();
		printf("ready\n");
		for (;;)
			pause();
	} else {
		fprintf(stderr, "usage: sigview show|calls|die SIG HOW|wait|pipe\n");
		return 2;
	}
	return 0;
}
