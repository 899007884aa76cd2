/* longjmp skips the exits of middle() and inner(); after() must still nest under outer().
 * ft_longjmp N: N rounds of outer() in a loop (each a setjmp and a longjmp that skips two
 * exits, as an interpreter's error or coroutine switch does), inside run(); then prints the
 * peak RSS as "hwm KiB". */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define NI __attribute__((noinline))
static jmp_buf env;
static volatile int sink;
NI void inner(void) { longjmp(env, 1); }
NI void middle(void) { inner(); sink++; }
NI void after(void) { sink++; }
NI void outer(void)
{
	if (!setjmp(env))
		middle();
	after();
}
NI void run(long n)
{
	for (long i = 0; i < n; i++)
		outer();
}
static long hwm_kib(void)
{
	char line[256];
	long kib = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof(line), f))
		if (!strncmp(line, "VmHWM:", 6))
			kib = atol(line + 6);
	if (f)
		fclose(f);
	return kib;
}
int main(int argc, char **argv)
{
	if (argc > 1) {
		run(atol(argv[1]));
		printf("hwm %ld\n", hwm_kib());
		return 0;
	}
	outer();
	outer();
	return 0;
}
