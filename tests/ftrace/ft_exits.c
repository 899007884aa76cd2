/* ft_exits MODE: ways a program ends or behaves that tracing must not change or lose.
 *   _exit N / _Exit N   make 20 calls of step(), then end with _exit(N) / _Exit(N)
 *   raise SIG / kill SIG   make 20 calls, then raise(SIG) / kill(getpid(), SIG) (SIG a number);
 *                          untraced, the process dies of it; prints "survived" if it does not
 *   forkexec            the child makes 20 calls, then execl()s this program with "exec", which
 *                       makes 5 calls of exec_step() and ends with _exit(0)
 *   sigexit             calls step() 200000 times, then in a loop until a SIGALRM handler (armed
 *                       then) ends the process with _exit(3) (a signal may land anywhere, the
 *                       runtime included)
 *   closefds LOG        makes calls that fill chunks, closes every descriptor above 2
 *                       (close_range), opens LOG and writes lines into it while making more
 *                       calls, so any write weft made through a stale descriptor would land in
 *                       LOG; prints the number of step() calls
 *   closeloop LOG N     N rounds of: calls, close every descriptor above 2, open LOG, write a
 *                       line, close it: weft's writers lose their descriptor N times while they
 *                       write; prints the number of step() calls
 *   mainexit            the main thread makes 20 calls, starts a thread and ends with
 *                       pthread_exit; that thread starts another and ends with pthread_exit
 *                       too; the last makes 20 calls, prints "last" and returns: the process
 *                       then ends with status 0, as glibc ends it when its last thread ends
 *   lastthread          main starts a thread and ends with pthread_exit; the thread makes 20
 *                       calls, prints "done" (no newline: stdout is flushed by the exit glibc
 *                       makes when the last thread ends) and returns: the process ends, status 0 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#define NI __attribute__((noinline))
static volatile unsigned sink; /* wraps (unsigned: no overflow) */
NI void step(int i) { sink += (unsigned)i; }
NI void exec_step(int i) { sink += (unsigned)i; }
__attribute__((no_instrument_function)) static void on_alarm_exit(int sig)
{
	(void)sig;
	_exit(3);
}
static void steps(int n)
{
	for (int i = 0; i < n; i++)
		step(i);
}
static void *last_thread(void *arg)
{
	steps(20);
	printf("last\n");
	fflush(stdout);
	return arg;
}
static void *lone_thread(void *arg)
{
	(void)arg;
	usleep(200000); /* main's pthread_exit first */
	steps(20);
	printf("done");
	return NULL;
}
static void *middle_thread(void *arg)
{
	pthread_t t;
	pthread_create(&t, NULL, last_thread, NULL);
	pthread_detach(t);
	pthread_exit(arg);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int arg = argc > 2 ? atoi(argv[2]) : 0;
	if (!strcmp(mode, "_exit")) {
		steps(20);
		_exit(arg);
	} else if (!strcmp(mode, "_Exit")) {
		steps(20);
		_Exit(arg);
	} else if (!strcmp(mode, "raise") || !strcmp(mode, "kill")) {
		steps(20);
		if (mode[0] == 'r')
			raise(arg);
		else
			kill(getpid(), arg);
		printf("survived\n");
		return 0;
	} else if (!strcmp(mode, "forkexec")) {
		pid_t pid = fork();
		if (pid == 0) {
			steps(20);
			execl("/proc/self/exe", argv[0], "exec", (char *)NULL);
			_exit(99);
		}
		int st;
		waitpid(pid, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 98;
	} else if (!strcmp(mode, "exec")) {
		for (int i = 0; i < 5; i++)
			exec_step(i);
		_exit(0);
	} else if (!strcmp(mode, "sigexit")) {
		/* the alarm is armed after 200000 calls (several chunks handed to the writers), not
		 * at start: on a loaded machine 20 ms could pass before the first call */
		int i = 0;
		for (; i < 200000; i++)
			step(i);
		signal(SIGALRM, on_alarm_exit);
		ualarm(20000, 0);
		for (;; i++)
			step(i);
	} else if (!strcmp(mode, "closefds") && argc > 2) {
		steps(100000);
		syscall(SYS_close_range, 3u, ~0u, 0u);
		int n = 100000;
		for (int k = 0; k < 20; k++) {
			int fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
			dprintf(fd, "line %d\n", k);
			steps(50000);
			n += 50000;
			close(fd);
		}
		printf("%d\n", n);
		return 0;
	} else if (!strcmp(mode, "mainexit")) {
		pthread_t t;
		steps(20);
		pthread_create(&t, NULL, middle_thread, NULL);
		pthread_detach(t);
		pthread_exit(NULL);
	} else if (!strcmp(mode, "lastthread")) {
		pthread_t th;
		if (pthread_create(&th, NULL, lone_thread, NULL))
			return 1;
		pthread_exit(NULL);
	} else if (!strcmp(mode, "closeloop") && argc > 3) {
		int rounds = atoi(argv[3]), n = 0;
		for (int k = 0; k < rounds; k++) {
			steps(5000);
			n += 5000;
			syscall(SYS_close_range, 3u, ~0u, 0u);
			int fd = open(argv[2], O_WRONLY | O_CREAT | O_APPEND, 0644);
			dprintf(fd, "line %d\n", k);
			close(fd);
		}
		printf("%d\n", n);
		return 0;
	}
	return 2;
}
