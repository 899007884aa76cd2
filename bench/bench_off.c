/* bench_off.c - the pair loop compiled with -DWEFT_DISABLE: what compiled-out tracing costs. */
#define WEFT_DISABLE
#include <weft.h>

void bench_compiled_out(long n);

void bench_compiled_out(long n)
{
	for (long i = 0; i < n; i++) {
		WEFT_SCOPE("pair");
		__asm__ __volatile__("");
	}
}
