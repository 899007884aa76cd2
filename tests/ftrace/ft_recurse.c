/* Recursion: fib(12) = 465 calls, mutual recursion is_even(10) = 6 + is_odd 5 (or
 * is_even(argv[1])), and slow() (20 ms) making 10 quick() calls, for the time filter. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#define NI __attribute__((noinline))
NI int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
NI int is_odd(int n);
NI int is_even(int n) { return n == 0 ? 1 : is_odd(n - 1); }
NI int is_odd(int n) { return n == 0 ? 0 : is_even(n - 1); }
static volatile int sink;
NI void quick(int i) { sink += i; }
NI void slow(void)
{
	for (int i = 0; i < 10; i++)
		quick(i);
	usleep(20000);
}
int main(int argc, char **argv)
{
	printf("%d %d\n", fib(12), is_even(argc > 1 ? atoi(argv[1]) : 10));
	slow();
	return 0;
}
