/* reexec.h - for unit tests that run their test body in a fresh copy of themselves (after
 * setting WEFT_OPTIONS and the like, which the runtime reads once at start): runs
 * /proc/self/exe with the same arguments, waits, removes the temporary directory TMP, and
 * returns the child's exit status (1 if it did not exit). */
#ifndef WEFT_TEST_REEXEC_H
#define WEFT_TEST_REEXEC_H
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int weft_test_reexec(char **argv, const char *tmp)
{
	pid_t pid = fork();
	if (pid == 0) {
		execv("/proc/self/exe", argv);
		_exit(127);
	}
	int status = 1;
	waitpid(pid, &status, 0);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	if (system(cmd))
		return 1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
#endif
