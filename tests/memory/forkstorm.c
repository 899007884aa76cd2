/* forkstorm.c - forks from a process that has had many threads: 300 short threads (each
 * allocates and frees a little), then 30 children made with fork(), each allocating a little
 * and ending with _exit(0) (as a shell's or a server's children do), while another thread
 * goes on starting short threads. Under weft's access sampler (--mem-access) the parent's
 * sampler thread holds its lock while it drains the rings and closes those of ended threads
 * (every few milliseconds), and each new thread takes it to add its ring: forks then copy it
 * held into the child. Prints "child PID" for each child and "done" at the end; exits 1 if a
 * child did not exit 0. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define THREADS 300
#define CHILDREN 30

void *volatile forkstorm_sink;

static void *short_thread(void *arg)
{
	char *p = malloc(64 + (size_t)(uintptr_t)arg % 512);
	if (p)
		memset(p, 1, 64);
	forkstorm_sink = p;
	free(p);
	return NULL;
}

static volatile int forking = 1;

static void *churn(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; forking; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, short_thread, (void *)i) == 0)
			pthread_join(t, NULL);
	}
	return NULL;
}

int main(void)
{
	for (int i = 0; i < THREADS; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, short_thread, (void *)(uintptr_t)i) == 0)
			pthread_join(t, NULL);
	}
	pthread_t churner;
	int churning = pthread_create(&churner, NULL, churn, NULL) == 0;
	int bad = 0;
	for (int i = 0; i < CHILDREN; i++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			return 2;
		if (pid == 0) {
			for (int k = 0; k < 8; k++) {
				char *p = malloc(4096 * (size_t)(k + 1));
				if (p)
					memset(p, k, 4096 * (size_t)(k + 1));
				forkstorm_sink = p;
				free(p);
			}
			_exit(0);
		}
		printf("child %d\n", (int)pid);
		int st;
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	forking = 0;
	if (churning)
		pthread_join(churner, NULL);
	printf("done\n");
	return bad ? 1 : 0;
}
