/* allocuser.c - linked with libmyalloc.so (its own allocator): allocates in user_work, 50 x 64
 * bytes, frees them, and says how many calls its allocator saw. The same output with and
 * without weft record --memory; the 50 blocks are in the trace. */
#include <stdio.h>
#include <stdlib.h>

extern unsigned long myalloc_mallocs, myalloc_frees;
void *volatile allocuser_sink;

__attribute__((noinline)) void user_work(void)
{
	void *p[50];
	for (int i = 0; i < 50; i++)
		allocuser_sink = p[i] = malloc(64);
	for (int i = 0; i < 50; i++)
		free(p[i]);
}

int main(void)
{
	unsigned long m0 = myalloc_mallocs, f0 = myalloc_frees;
	user_work();
	printf("myalloc: %lu mallocs, %lu frees in user_work\n", myalloc_mallocs - m0, myalloc_frees - f0);
	return 0;
}
