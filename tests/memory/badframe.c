/* badframe.c - malloc(1000) called with a frame pointer register holding -16, as code built
 * without frame pointers (or a signal handler interrupting it) may leave it, for
 * weft record --memory=stacks: the frame walk must not follow a saved frame pointer whose end
 * wraps around the address space. Prints "ok" once the allocation returned. x86-64 only. */
#include <stdio.h>
#include <stdlib.h>

void *volatile badframe_sink;

__attribute__((noinline)) static void *alloc_with_bad_fp(void)
{
	void *p;
#if defined(__x86_64__)
	/* past the red zone, 16-byte aligned for the call, rbp = -16, then everything restored */
	__asm__ volatile("push %%rbp\n\t"
			 "push %%rbx\n\t"
			 "mov %%rsp, %%rbx\n\t"
			 "sub $128, %%rsp\n\t"
			 "and $-16, %%rsp\n\t"
			 "mov $-16, %%rbp\n\t"
			 "mov $1000, %%edi\n\t"
			 "call malloc@PLT\n\t"
			 "mov %%rbx, %%rsp\n\t"
			 "pop %%rbx\n\t"
			 "pop %%rbp"
			 : "=a"(p)
			 :
			 : "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "memory", "cc");
#else
	p = malloc(1000);
#endif
	return p;
}

int main(void)
{
	badframe_sink = alloc_with_bad_fp();
	free(badframe_sink);
	puts("ok");
	return 0;
}
