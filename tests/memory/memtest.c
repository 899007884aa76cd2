/* memtest.c - a program whose allocations are known exactly, per function and thread, for the
 * memory tests (built with -finstrument-functions: each function is a slice). What each
 * function allocates is written next to it; tests/integration/test_memory.py asserts it. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
static __thread void *volatile sink; /* per thread: several threads store to it (TSan: no race of the test's own) */
void *volatile memtest_leaked; /* read by nobody: a leak the compiler must keep */

/* 10 x malloc(64), each freed before the next: 10 temporary allocations, 640 bytes */
NOINLINE void temp_allocs(void)
{
	for (int i = 0; i < 10; i++) {
		void *p = malloc(64);
		sink = p;
		free(p);
	}
}

/* one leak of 4096 bytes (live at exit) */
NOINLINE void leak_known(void)
{
	char *p = malloc(4096);
	memset(p, 1, 4096);
	memtest_leaked = p;
}

/* malloc(10) -> realloc 100 -> realloc 1000 -> free: allocations 10 + 100 + 1000 bytes (3),
 * frees 3 (two by realloc) */
NOINLINE void realloc_chain(void)
{
	char *p = malloc(10);
	p = realloc(p, 100);
	p = realloc(p, 1000);
	sink = p;
	free(p);
}

/* every other allocation function once, each freed:
 * calloc 100, memalign 128, posix_memalign 256, aligned_alloc 512, valloc 100, pvalloc 100 ->
 * one page, reallocarray 100: 7 allocations, 1296 + page bytes */
NOINLINE void every_function(void)
{
	void *a = calloc(4, 25);
	void *b = memalign(64, 128);
	void *c = NULL;
	if (posix_memalign(&c, 64, 256))
		abort();
	void *d = aligned_alloc(64, 512);
	void *e = valloc(100);
	void *f = pvalloc(100);
	void *g = reallocarray(NULL, 10, 10);
	void *all[] = {a, b, c, d, e, f, g};
	for (int i = 0; i < 7; i++)
		sink = all[i]; /* used: the compiler may not drop the pairs */
	free(a);
	free(b);
	free(c);
	free(d);
	free(e);
	/* cfree exists only as a compatibility symbol: called the way an old binary would */
	void (*cf)(void *) = (void (*)(void *))dlsym(RTLD_DEFAULT, "cfree");
	(cf ? cf : free)(f);
	free(g);
}

/* one anonymous mapping of 1 MiB, unmapped */
NOINLINE void map_anon(void)
{
	void *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		abort();
	memset(p, 0, 4096);
	munmap(p, 1 << 20);
}

/* one 2 MiB malloc, freed (a "large allocation" instant) */
NOINLINE void big_block(void)
{
	char *p = malloc(2 << 20);
	p[0] = 1;
	sink = p;
	free(p);
}

/* thread k (1..4): k*10 blocks of 32 bytes, all freed */
NOINLINE void *worker(void *arg)
{
	int k = (int)(long)arg;
	void *blocks[64];
	for (int i = 0; i < k * 10; i++)
		sink = blocks[i] = malloc(32);
	for (int i = 0; i < k * 10; i++)
		free(blocks[i]);
	return NULL;
}

NOINLINE void run_workers(void)
{
	pthread_t th[4];
	for (long k = 1; k <= 4; k++)
		pthread_create(&th[k - 1], NULL, worker, (void *)k);
	for (int k = 0; k < 4; k++)
		pthread_join(th[k], NULL);
}

/* produce: 5 x 200 bytes on a thread; consume: freed by the main thread */
static void *handoff[5];
NOINLINE void *produce(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++)
		sink = handoff[i] = malloc(200);
	return NULL;
}

NOINLINE void consume(void)
{
	for (int i = 0; i < 5; i++)
		free(handoff[i]);
}

NOINLINE void cross_thread(void)
{
	pthread_t th;
	pthread_create(&th, NULL, produce, NULL);
	pthread_join(th, NULL);
	consume();
}

/* the child: 3 x 50 bytes in child_work, freed */
NOINLINE void child_work(void)
{
	void *p[3];
	for (int i = 0; i < 3; i++)
		sink = p[i] = malloc(50);
	for (int i = 0; i < 3; i++)
		free(p[i]);
}

NOINLINE void forked(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		child_work();
		exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
}

/* plugin_alloc (in libmemplugin.so, loaded with dlopen): 333 bytes, freed */
NOINLINE void plugin(const char *path)
{
	void *h = dlopen(path, RTLD_NOW);
	if (!h) {
		fprintf(stderr, "memtest: %s\n", dlerror());
		exit(3);
	}
	void (*fn)(void) = (void (*)(void))dlsym(h, "plugin_alloc");
	fn();
}

int main(int argc, char **argv)
{
	temp_allocs();
	leak_known();
	realloc_chain();
	every_function();
	map_anon();
	big_block();
	run_workers();
	cross_thread();
	forked();
	if (argc > 1)
		plugin(argv[1]);
	return 0;
}
