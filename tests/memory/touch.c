/* touch.c - a known access pattern for access sampling: writer_pass (a thread) allocates 64 MiB
 * and writes every page of it in order; reader_pass (another thread, after it) allocates 16 MiB
 * and reads every 4th page. Each first touch of a page is one page fault: 16384 by writer_pass
 * in its block, 1024 by reader_pass in its block. Built with -finstrument-functions. */
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

/* One fault per 4 KiB page, whatever the machine's transparent huge page setting. */
static void no_huge_pages(void *p, size_t n)
{
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)p + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	madvise((void *)a, n - (a - (uintptr_t)p), MADV_NOHUGEPAGE);
}
__thread void *volatile touch_sink; /* per thread (TSan) */
volatile unsigned long touch_sum;

NOINLINE void *writer_pass(void *arg)
{
	(void)arg;
	long page = sysconf(_SC_PAGESIZE);
	char *p = malloc(64u << 20);
	no_huge_pages(p, 64u << 20);
	for (size_t i = 0; i < (64u << 20); i += (size_t)page)
		p[i] = 1;
	touch_sink = p;
	return NULL;
}

NOINLINE void *reader_pass(void *arg)
{
	(void)arg;
	long page = sysconf(_SC_PAGESIZE);
	volatile char *q = malloc(16u << 20);
	no_huge_pages((void *)q, 16u << 20);
	unsigned long sum = 0;
	for (size_t i = 0; i < (16u << 20); i += 4 * (size_t)page)
		sum += (unsigned char)q[i];
	touch_sum = sum;
	touch_sink = (void *)q;
	return NULL;
}

int main(void)
{
	pthread_t w, r;
	pthread_create(&w, NULL, writer_pass, NULL);
	pthread_join(w, NULL);
	pthread_create(&r, NULL, reader_pass, NULL);
	pthread_join(r, NULL);
	printf("touched\n");
	return 0;
}
