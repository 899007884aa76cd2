/* ft_crash segv | kill N | exit N | loop | loop-handled: dies of SIGSEGV inside c(), of SIGKILL
 * after N calls of step() (once weft's writers have written every whole buffer of them, as its
 * weft_stats_get says: all but the last 512 events), or exits with
 * status N. loop calls step() until SIGINT ends it, printing "ready" after 1000 calls; loop-handled catches
 * SIGINT instead, stops looping and prints how many calls of step() it made and how many
 * SIGINTs it received. */
#include <weft.h>
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define NI __attribute__((noinline))
static volatile int sink;
NI void c(int *p) { *p = 1; }
NI void b(int *p) { c(p); }
NI void a(int *p) { b(p); }
NI void step(int i) { sink += i; }
static volatile sig_atomic_t interrupted;
/* not traced: its events would be dropped (and counted) whenever the signal lands inside a
 * hook of the loop, and this test wants an exact count (test_signal_handler covers that) */
__attribute__((no_instrument_function)) static void on_int(int sig) { (void)sig; interrupted++; }
int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "segv")) {
		int x;
		a(&x);
		a(0);
	} else if (argc > 2 && !strcmp(argv[1], "kill")) {
		int n = atoi(argv[2]);
		for (int i = 0; i < n; i++)
			step(i);
		/* weft record's runtime (preloaded) says how many events its writers wrote: wait for
		 * them (at most a minute; a loaded machine's writer may be far behind) */
		int (*stats)(struct weft_stats *) = (int (*)(struct weft_stats *))dlsym(RTLD_DEFAULT, "weft_stats_get");
		struct weft_stats st = {.sz = sizeof(st)};
		for (int k = 0; stats && k < 60000 && (stats(&st) || st.events < 2ull * (unsigned)n - 512); k++)
			usleep(1000);
		raise(SIGKILL);
	} else if (argc > 1 && !strncmp(argv[1], "loop", 4)) {
		if (!strcmp(argv[1], "loop-handled"))
			signal(SIGINT, on_int);
		long n = 0;
		while (!interrupted) {
			step((int)n++);
			if (n == 1000) {
				printf("ready\n"); /* some calls are made before any SIGINT */
				fflush(stdout);
			}
			if (!(n & 1023))
				usleep(100);
		}
		usleep(50000); /* a second, doubled SIGINT would arrive here */
		printf("steps=%ld signals=%d\n", n, (int)interrupted);
	} else if (argc > 2 && !strcmp(argv[1], "exit")) {
		a((int *)&sink);
		exit(atoi(argv[2]));
	}
	return 0;
}
