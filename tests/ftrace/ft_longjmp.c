/* longjmp skips the exits of middle() and inner(); after() must still nest under outer(). */
#include <setjmp.h>
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
int main(void)
{
	outer();
	outer();
	return 0;
}
