/* A SIGALRM handler (instrumented, calling instrumented tick()) fires every 200 us while
 * main computes fib(25) ten times: tracing must neither deadlock nor recurse. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#define NI __attribute__((noinline))
static volatile long ticks;
NI void tick(void) { ticks++; }
NI void on_alarm(int sig) { (void)sig; tick(); }
NI long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = {{0, 200}, {0, 200}};
	setitimer(ITIMER_REAL, &it, NULL);
	long s = 0;
	for (int i = 0; i < 10; i++)
		s += fib(25);
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("%ld %ld\n", s, ticks);
	return 0;
}
