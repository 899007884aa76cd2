/* forkslice.c - a fork child that allocates in the slices it inherited: spawn() forks; the child
 * allocates 5 x 64 bytes in spawn itself, returns to main and allocates 3 x 32 bytes there, then
 * 2 x 16 in a function of its own (own_work). Built with -finstrument-functions: the child's
 * blocks are charged to spawn, main and own_work, not to "outside any slice". */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
void *volatile forkslice_sink;

NOINLINE void own_work(void)
{
	for (int i = 0; i < 2; i++)
		forkslice_sink = malloc(16);
}

NOINLINE int spawn(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 5; i++)
			forkslice_sink = malloc(64);
		return 1;
	}
	int status;
	waitpid(pid, &status, 0);
	return 0;
}

int main(void)
{
	if (spawn()) { /* the child */
		for (int i = 0; i < 3; i++)
			forkslice_sink = malloc(32);
		own_work();
		exit(0);
	}
	return 0;
}
