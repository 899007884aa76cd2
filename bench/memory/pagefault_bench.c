/* pagefault_bench.c - the cost of a first touch: maps 512 MiB, writes one byte per page, and
 * prints the process's CPU ns per page (every thread's: with weft's access sampling that is the
 * kernel writing the sample in the faulting thread plus the sampler thread draining it).
 * Build: gcc -O2 pagefault_bench.c -o pagefault_bench. Used by bench/memory/run.sh. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

int main(void)
{
	size_t n = 512u << 20;
	struct timespec a, b;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 1;
	for (size_t i = 0; i < n; i += 4096)
		p[i] = 1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	printf("%.0f\n", ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)(n / 4096));
	return 0;
}
