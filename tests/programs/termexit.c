/* termexit - children that are signalled while they end, as multiprocessing's Pool.terminate()
 * does to workers already in os._exit, or a launcher to ranks that are finishing.
 *   termexit MODE N: N children one after another; each makes one slice "child work", tells
 *   the parent through a pipe that it is ending, then ends by MODE: "_exit" (_exit(0)), "exit"
 *   (exit(0): weft finishes the trace in its atexit handler) or "exec" (execs /bin/true, weft
 *   finishes the image's trace first). The parent sends SIGTERM the moment it reads that byte,
 *   so under weft the signal lands while the child's trace is being finished. Prints
 *   "child PID status S" (S: the wait status) per child, then "done".
 *   termexit fork N: the parent sends SIGTERM to each child 0 to 3 ms after fork() returns (in
 *   steps of 100 us), whatever the child is doing: under weft, at some of those moments the
 *   child is still restarting its trace in weft's fork handler. The child makes its slice and
 *   waits to be killed.
 */
#include <weft.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void child(const char *mode, int fd)
{
	if (!strcmp(mode, "fork")) {
		{
			WEFT_SCOPE("child work");
		}
		for (;;)
			pause();
	}
	{
		WEFT_SCOPE("child work");
		volatile unsigned long x = 0;
		for (unsigned long i = 0; i < 200000; i++)
			x += i;
	}
	char b = 1;
	if (write(fd, &b, 1) != 1)
		_exit(3);
	if (!strcmp(mode, "exit"))
		exit(0);
	if (!strcmp(mode, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(4);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "_exit") && strcmp(argv[1], "exit") && strcmp(argv[1], "exec") &&
			  strcmp(argv[1], "fork"))) {
		fprintf(stderr, "usage: termexit _exit|exit|exec|fork N\n");
		return 2;
	}
	int n = atoi(argv[2]);
	for (int i = 0; i < n; i++) {
		int p[2];
		if (pipe(p))
			return 1;
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			close(p[0]);
			child(argv[1], p[1]);
		}
		close(p[1]);
		char b;
		if (!strcmp(argv[1], "fork")) {
			usleep((useconds_t)(i % 31) * 100);
			kill(pid, SIGTERM);
		} else if (read(p[0], &b, 1) == 1) {
			kill(pid, SIGTERM);
		}
		close(p[0]);
		int status;
		waitpid(pid, &status, 0);
		printf("child %d status %d\n", (int)pid, status);
	}
	printf("done\n");
	return 0;
}
