/* forkbusy [FORKS]: calls a function 20,000 times (built with -finstrument-functions: 40,000
 * events, the writer always busy), then forks a child that exits at once, FORKS times (default
 * 300). A fork that comes while a writer works must not wait for ever on the locks the writer
 * holds (tests/integration/test_top.py: weft top's live state, src/lib/live.c). */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) int leaf(int i)
{
	return i * 3;
}

int main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 300;
	volatile long s = 0;
	for (int f = 0; f < forks; f++) {
		for (int i = 0; i < 20000; i++)
			s += leaf(i);
		pid_t p = fork();
		if (p == 0)
			_exit(0);
		if (p < 0 || waitpid(p, NULL, 0) != p)
			return 1;
	}
	printf("%ld\n", (long)s);
	return 0;
}
