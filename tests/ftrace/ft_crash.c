/* ft_crash segv | kill N | exit N: dies of SIGSEGV inside c(), of SIGKILL after N calls of
 * step() (writers given time to write what was handed to them), or exits with status N. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define NI __attribute__((noinline))
static volatile int sink;
NI void c(int *p) { *p = 1; }
NI void b(int *p) { c(p); }
NI void a(int *p) { b(p); }
NI void step(int i) { sink += i; }
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
		usleep(300000);
		raise(SIGKILL);
	} else if (argc > 2 && !strcmp(argv[1], "exit")) {
		a((int *)&sink);
		exit(atoi(argv[2]));
	}
	return 0;
}
