/* stacks.c - allocations at known call paths, for weft record --memory=stacks (built with
 * frame pointers, without -finstrument-functions: the stacks come from the frame walk alone).
 * main > outer > inner allocates 777 bytes (leaked); main > outer > other allocates 3 x 55.
 * `stacks badframe` instead allocates 99 bytes (leaked) from bad_fp_malloc, which calls malloc
 * with its frame-pointer register holding -16, as a caller built without frame pointers may
 * leave it (a signal handler's, say): the walk must stop there, never read at that address. */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
__asm__(".text\n.globl bad_fp_malloc\n.type bad_fp_malloc, @function\nbad_fp_malloc:\n"
	"\tpush %rbp\n\tmov $-16, %rbp\n\tcall malloc@PLT\n\tpop %rbp\n\tret\n"
	".size bad_fp_malloc, .-bad_fp_malloc\n");
void *bad_fp_malloc(size_t n);
#elif defined(__aarch64__)
__asm__(".text\n.globl bad_fp_malloc\n.type bad_fp_malloc, %function\nbad_fp_malloc:\n"
	"\tstp x29, x30, [sp, #-16]!\n\tmov x29, #-16\n\tbl malloc\n\tldp x29, x30, [sp], #16\n\tret\n"
	".size bad_fp_malloc, .-bad_fp_malloc\n");
void *bad_fp_malloc(size_t n);
#else
static void *bad_fp_malloc(size_t n) { return malloc(n); }
#endif

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

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "badframe")) {
		stacks_sink = bad_fp_malloc(99);
		return 0;
	}
	outer();
	return 0;
}
