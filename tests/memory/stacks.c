/* stacks.c - allocations at known call paths, for weft record --memory=stacks (built with
 * frame pointers, without -finstrument-functions: the stacks come from the frame walk alone).
 * main > outer > inner allocates 777 bytes (leaked); main > outer > other allocates 3 x 55. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))
void *volatile stacks_sink;

NOINLINE void inner(void)
{
	stacks_sink = malloc(777);
}

NOINLINE void other(void)
{
	for (int i = 0; i < 3; i++) {
		void *p = malloc(55);
		stacks_sink = p;
		free(p);
	}
}

NOINLINE void outer(void)
{
	inner();
	other();
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

int main(void)
{
	outer();
	return 0;
}
