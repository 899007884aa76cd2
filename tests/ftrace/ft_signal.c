/* A SIGALRM handler (instrumented, calling instrumented tick()) fires every 200 us while main
 * computes fib(18) over and over until the handler has run at least 50 times (and at least 10
 * rounds): tracing must neither deadlock nor recurse. Prints the rounds (fib(18) makes 8361
 * calls) and the ticks, so the test knows the exact counts whatever the machine's speed. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#define NI __attribute__((noinline))
static volatile sig_atomic_t ticks;
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
	long s = 0, rounds = 0;
	while (rounds < 10 || ticks < 50) {
		s += fib(18);
		rounds++;
	}
	struct itimerval off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &off, NULL);
	printf("%ld %ld %ld\n", s, rounds, (long)ticks);
	return 0;
}
