/* endings.c - known page faults and watched writes, then an end that skips atexit: what the
 * access sampler has not drained yet when the process ends must still reach the trace.
 *   endings touch HOW   maps 400 fresh pages (no huge pages) and writes each once: 400 page
 *                       faults in the range it prints ("touch ADDR LEN")
 *   endings watch HOW   writes the global endings_watched 8 times
 * HOW: exit (atexit runs), _exit, _Exit, exec (execs /bin/true, the image's trace is finished
 * before), segv (raise(SIGSEGV)), abort, fork (a child does the work and ends with _exit(0);
 * prints "child PID"). The work's own line goes out before it starts; nothing runs after it
 * but the end. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define PAGES 400
#define WRITES 8

volatile long endings_watched;

static void work(const char *mode)
{
	if (!strcmp(mode, "touch")) {
		long page = sysconf(_SC_PAGESIZE);
		size_t len = (size_t)PAGES * (size_t)page;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			_exit(90);
		madvise(p, len, MADV_NOHUGEPAGE);
		printf("touch %p %zu\n", (void *)p, len);
		fflush(stdout);
		for (size_t i = 0; i < len; i += (size_t)page)
			p[i] = 1;
	} else {
		printf("watch %p\n", (void *)&endings_watched);
		fflush(stdout);
		for (int i = 0; i < WRITES; i++)
			endings_watched = i + 1;
	}
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	const char *how = argv[2];
	if (!strcmp(how, "fork")) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			work(argv[1]);
			_exit(0);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		printf("child %d\n", (int)pid);
		return 0;
	}
	work(argv[1]);
	if (!strcmp(how, "exit"))
		exit(0);
	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "_Exit"))
		_Exit(0);
	if (!strcmp(how, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		return 3;
	}
	if (!strcmp(how, "segv"))
		raise(SIGSEGV);
	if (!strcmp(how, "abort"))
		abort();
	return 4;
}
