/* memexits.c MODE - allocations before the ways a process or thread ends, and allocations in
 * signal handlers, for tests/integration/test_memory.py. Built with -finstrument-functions and
 * linked with libweft. Every mode but sigheap first runs before_end(): 5 x malloc(1000), never
 * freed.
 *   _exit    then _exit(3)
 *   thread   a thread allocates 7 x 100 in thread_work and leaves with pthread_exit; exit 0
 *   abort    then abort()
 *   sigwait  SIGUSR1 x 20 while main waits in sigsuspend inside waiting(); the handler mallocs
 *            and frees 64 bytes (recorded, charged to waiting)
 *   sigheap  20000 weft_heap_alloc/free pairs in main_heap_loop while a timer's handler does
 *            the same on another heap: every event is written or counted as dropped; prints
 *            "heap events N" (what main and the handler emitted) */
#include <weft.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
void *volatile memexits_sink;

NOINLINE void before_end(void)
{
	for (int i = 0; i < 5; i++)
		memexits_sink = malloc(1000);
}

NOINLINE void *thread_work(void *arg)
{
	(void)arg;
	for (int i = 0; i < 7; i++)
		memexits_sink = malloc(100);
	pthread_exit(NULL);
}

static volatile sig_atomic_t got;
static void on_usr1(int sig)
{
	(void)sig;
	void *p = malloc(64);
	memexits_sink = p;
	free(p);
	got++;
}

NOINLINE void waiting(void)
{
	sigset_t none;
	sigemptyset(&none);
	while (got < 20)
		sigsuspend(&none);
}

static weft_heap_t *main_heap, *signal_heap;
static volatile long handler_events;
static void on_alarm(int sig)
{
	(void)sig;
	static char block[64];
	weft_heap_alloc(signal_heap, block, 64);
	weft_heap_free(signal_heap, block);
	handler_events += 2;
}

NOINLINE void main_heap_loop(void)
{
	static char blocks[16];
	for (int i = 0; i < 20000; i++) {
		weft_heap_alloc(main_heap, blocks, 16);
		weft_heap_free(main_heap, blocks);
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "sigheap")) /* (its leak would fail a LeakSanitizer build) */
		before_end();
	if (!strcmp(mode, "_exit"))
		_exit(3);
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "thread")) {
		pthread_t t;
		pthread_create(&t, NULL, thread_work, NULL);
		pthread_join(t, NULL);
		return 0;
	}
	if (!strcmp(mode, "sigwait")) {
		sigset_t usr1;
		sigemptyset(&usr1);
		sigaddset(&usr1, SIGUSR1);
		sigprocmask(SIG_BLOCK, &usr1, NULL);
		signal(SIGUSR1, on_usr1);
		pid_t me = getpid();
		pid_t child = fork();
		if (child == 0) { /* pokes the parent (signals may merge: 40 for 20) */
			for (int i = 0; i < 40; i++) {
				kill(me, SIGUSR1);
				usleep(2000);
			}
			_exit(0);
		}
		waiting();
		waitpid(child, NULL, 0);
		return 0;
	}
	if (!strcmp(mode, "sigheap")) {
		main_heap = weft_heap("main");
		signal_heap = weft_heap("signal");
		signal(SIGALRM, on_alarm);
		struct itimerval it = {{0, 50}, {0, 50}};
		setitimer(ITIMER_REAL, &it, NULL);
		main_heap_loop();
		struct itimerval off = {{0, 0}, {0, 0}};
		setitimer(ITIMER_REAL, &off, NULL);
		signal(SIGALRM, SIG_IGN);
		printf("heap events %ld\n", 40000 + handler_events);
		return 0;
	}
	return 2;
}
