/* topbusy: a program for weft top's tests (tests/integration/test_top.py), gated by files so
 * nothing depends on timing. Built with -finstrument-functions.
 *   topbusy GATE
 * main runs phase_alpha (calls alpha_leaf again and again) until the file GATE.beta exists,
 * then phase_beta (beta_leaf) until GATE.quit exists, then returns 0. A second thread,
 * "topworker", enters worker_wait and blocks there in read() on a pipe nobody writes until
 * main ends: an idle thread whose open call weft top must still show. Prints "ready PID" once
 * both run, "beta PID" when phase beta starts. Exits with status 3 if GATE's directory goes
 * away (a test that ended without opening the gates leaves no program spinning). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NOINST __attribute__((no_instrument_function))

static volatile unsigned long sink;
static int pipefd[2];
static char gate_beta[4096], gate_quit[4096], gate_dir[4096];

__attribute__((noinline)) void alpha_leaf(unsigned long i)
{
	for (int k = 0; k < 200; k++)
		sink += i * (unsigned long)k;
}

__attribute__((noinline)) void beta_leaf(unsigned long i)
{
	for (int k = 0; k < 200; k++)
		sink ^= i + (unsigned long)k;
}

NOINST static int exists(const char *p)
{
	if (access(gate_dir, F_OK))
		exit(3);
	return access(p, F_OK) == 0;
}

__attribute__((noinline)) void phase_alpha(void)
{
	for (unsigned long i = 0;; i++) {
		alpha_leaf(i);
		if (!(i & 1023) && exists(gate_beta))
			return;
	}
}

__attribute__((noinline)) void phase_beta(void)
{
	printf("beta %d\n", (int)getpid());
	fflush(stdout);
	for (unsigned long i = 0;; i++) {
		beta_leaf(i);
		if (!(i & 1023) && exists(gate_quit))
			return;
	}
}

__attribute__((noinline)) void worker_wait(void)
{
	char c;
	while (read(pipefd[0], &c, 1) < 0)
		;
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "topworker");
	worker_wait();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: topbusy GATE\n");
		return 2;
	}
	snprintf(gate_beta, sizeof(gate_beta), "%s.beta", argv[1]);
	snprintf(gate_quit, sizeof(gate_quit), "%s.quit", argv[1]);
	snprintf(gate_dir, sizeof(gate_dir), "%s", argv[1]);
	char *slash = strrchr(gate_dir, '/');
	snprintf(slash ? slash + 1 : gate_dir, 2, ".");
	if (pipe(pipefd))
		return 1;
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	phase_alpha();
	phase_beta();
	close(pipefd[1]);
	pthread_join(th, NULL);
	return 0;
}
