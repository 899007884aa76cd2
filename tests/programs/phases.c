/* phases: gated phases for the control tests (tests/integration/test_control.py). Reads
 * commands from stdin, one per line, and answers each on stdout once done, so the test drives
 * it without timing:
 *   run X N     phase X (A, B or C): the function phase_x (built with -finstrument-functions:
 *               its entry and exit), in it a slice "phase X" holding N instants "tick X";
 *               answers "done X PID" - N + 4 events
 *   spin N      phase A with N instants again and again (weft_flush after each) until the
 *               trace has recorded events (weft_stats_get), at most 60 s; answers "emitted E PID"
 *               with the events it emitted
 *   fork        forks: the child answers "child PID" and reads the next commands; the parent
 *               waits for it, then answers "reaped PID"
 *   exec        forks and execs phases anew (the child answers "ready PID"); parent as for fork
 *   hold        enters the function phase_hold, answers "holding PID" and reads stdin there
 *               until a line "release", running phase C for each "run C N" meanwhile (as
 *               run); answers "released PID" once it returned
 *   quit        ends this process (answers nothing)
 * Starts with "ready PID". Only the phase functions are instrumented: every event is counted. */
#include <weft.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINST __attribute__((no_instrument_function))

__attribute__((noinline)) void phase_a(int n)
{
	WEFT_SCOPE("phase A");
	for (int i = 0; i < n; i++)
		WEFT_INSTANT("tick A");
}

__attribute__((noinline)) void phase_b(int n)
{
	WEFT_SCOPE("phase B");
	for (int i = 0; i < n; i++)
		WEFT_INSTANT("tick B");
}

__attribute__((noinline)) void phase_c(int n)
{
	WEFT_SCOPE("phase C");
	for (int i = 0; i < n; i++)
		WEFT_INSTANT("tick C");
}

NOINST static void say(const char *what, const char *arg)
{
	printf("%s%s%s %d\n", what, arg ? " " : "", arg ? arg : "", (int)getpid());
	fflush(stdout);
}

__attribute__((noinline)) void phase_hold(void)
{
	char line[64];
	int n;
	say("holding", NULL);
	while (fgets(line, sizeof(line), stdin) && strncmp(line, "release", 7))
		if (sscanf(line, "run C %d", &n) == 1) {
			phase_c(n);
			say("done", "C");
		}
}

NOINST static void reap(pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	say("reaped", NULL);
}

NOINST int main(int argc, char **argv)
{
	(void)argc;
	char line[256];
	say("ready", NULL);
	while (fgets(line, sizeof(line), stdin)) {
		char x = 0;
		int n = 0;
		if (!strncmp(line, "hold", 4)) {
			phase_hold();
			say("released", NULL);
		} else if (sscanf(line, "run %c %d", &x, &n) == 2) {
			if (x == 'A')
				phase_a(n);
			else if (x == 'B')
				phase_b(n);
			else
				phase_c(n);
			char s[2] = {x, 0};
			say("done", s);
		} else if (sscanf(line, "spin %d", &n) == 1) {
			unsigned long emitted = 0;
			time_t end = time(NULL) + 60;
			for (;;) {
				phase_a(n);
				emitted += (unsigned long)n + 4;
				weft_flush();
				struct weft_stats st = {.sz = sizeof(st)};
				if ((!weft_stats_get(&st) && st.events > 0) || time(NULL) > end)
					break;
				usleep(1000);
			}
			char s[32];
			snprintf(s, sizeof(s), "%lu", emitted);
			say("emitted", s);
		} else if (!strcmp(line, "fork\n")) {
			pid_t pid = fork();
			if (pid == 0) {
				say("child", NULL);
				continue;
			}
			reap(pid);
		} else if (!strcmp(line, "exec\n")) {
			pid_t pid = fork();
			if (pid == 0) {
				execv("/proc/self/exe", argv);
				_exit(127);
			}
			reap(pid);
		} else if (!strcmp(line, "quit\n")) {
			break;
		}
	}
	return 0;
}
