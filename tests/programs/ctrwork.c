/* ctrwork: known work for the per-slice counter tests (weft record --counters). Prints the CPU
 * time each spinning slice took by its own measure (CLOCK_THREAD_CPUTIME_ID, read inside the
 * slice) and how many fresh pages the touching slice wrote, one "name value" line each. */
#include <weft.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

__attribute__((no_instrument_function)) static uint64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static __thread volatile uint64_t sink; /* per thread (TSan) */
__attribute__((no_instrument_function)) static void spin(uint64_t ns)
{
	uint64_t t0 = cpu_ns();
	while (cpu_ns() - t0 < ns)
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 7;
}

__attribute__((noinline)) void work_fn(void)
{
	spin(5000000);
}

static void *thread_main(void *arg)
{
	(void)arg;
	WEFT_BEGIN("thread_spin");
	uint64_t t0 = cpu_ns();
	spin(20000000);
	uint64_t t1 = cpu_ns();
	WEFT_END("thread_spin");
	printf("thread_spin %llu\n", (unsigned long long)(t1 - t0));
	return NULL;
}

int main(void)
{
	WEFT_BEGIN("spin");
	uint64_t t0 = cpu_ns();
	spin(40000000);
	uint64_t t1 = cpu_ns();
	WEFT_END("spin");
	printf("spin %llu\n", (unsigned long long)(t1 - t0));

	enum { PAGES = 256 };
	long ps = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, (size_t)ps * PAGES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	WEFT_BEGIN("touch");
	for (int i = 0; i < PAGES; i++)
		m[(long)i * ps] = 1;
	WEFT_END("touch");
	printf("touch %d\n", PAGES);
	munmap(m, (size_t)ps * PAGES);

	{
		WEFT_SCOPE("outer");
		spin(10000000);
		{
			WEFT_SCOPE("inner");
			spin(10000000);
		}
	}
	for (int i = 0; i < 3; i++)
		work_fn();

	pthread_t th;
	pthread_create(&th, NULL, thread_main, NULL);
	pthread_join(th, NULL);
	return 0;
}
