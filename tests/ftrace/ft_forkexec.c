/* fork + exec: the parent runs parent_part(), the child child_part() and then execs this
 * program again with "exec", whose image runs exec_part(). */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#define NI __attribute__((noinline))
static volatile int sink;
NI void parent_part(void) { sink++; }
NI void child_part(void) { sink++; }
NI void exec_part(void) { sink++; }
int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "exec")) {
		exec_part();
		return 0;
	}
	pid_t pid = fork();
	if (pid == 0) {
		child_part();
		char *args[] = {argv[0], "exec", NULL};
		execv("/proc/self/exe", args);
		_exit(99);
	}
	parent_part();
	int st;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 98;
}
