/* ft_bench leaf N | fib N: the function-tracing workload, built with -finstrument-functions.
 * leaf: a leaf function called N times (2N events); fib: recursive fib(N). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define NI __attribute__((noinline))
static volatile long sink;
NI void leaf(long i) { sink += i; }
NI long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 20000000;
	if (argc > 1 && !strcmp(argv[1], "fib"))
		printf("%ld\n", fib((int)n));
	else
		for (long i = 0; i < n; i++)
			leaf(i);
	return 0;
}
