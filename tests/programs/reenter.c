/* reenter ROUNDS CALLS: an interpreter that calls back into itself, as Lua's does (the
 * time-window test, test_time_window.py): main runs execute(0), a loop of ROUNDS rounds; each
 * round goes 5 levels down through sortlike() and makes CALLS callbacks, each a nested
 * execute(1) running leaf(). So `execute` is on the stack twice (levels 2 and 9), and the
 * deeper one opens and closes thousands of times under the outer one, which stays open from
 * the start to the end. Built with -finstrument-functions. */
#include <stdlib.h>
#define NI __attribute__((noinline))

static volatile unsigned long sink;

NI void leaf(int n)
{
	for (int i = 0; i < n; i++)
		sink += (unsigned long)i;
}

NI void execute(int nested, int rounds, int calls);

NI void callback(void)
{
	execute(1, 0, 0);
}

NI void sortlike(int d, int calls)
{
	if (d) {
		sortlike(d - 1, calls);
		return;
	}
	for (int i = 0; i < calls; i++)
		callback();
}

NI void execute(int nested, int rounds, int calls)
{
	if (nested) {
		leaf(300);
		return;
	}
	for (int r = 0; r < rounds; r++)
		sortlike(4, calls);
}

int main(int argc, char **argv)
{
	execute(0, argc > 1 ? atoi(argv[1]) : 100, argc > 2 ? atoi(argv[2]) : 200);
	return (int)(sink & 0);
}
