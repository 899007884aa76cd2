/* The runtime's own allocator (src/preload/rtalloc.c), called directly: sizes from tiny to
 * larger than a slab, alignments, realloc keeping the bytes, calloc's zeroes (of a recycled
 * block too), many threads at once, and a fork while other threads allocate. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void __wrap_free(void *p);
int __wrap_posix_memalign(void **out, size_t align, size_t n);
void *__wrap_aligned_alloc(size_t align, size_t n);
char *__wrap_strdup(const char *s);

static void test_sizes_and_alignment(void **state)
{
	(void)state;
	static const size_t sizes[] = {0, 1, 15, 16, 17, 100, 4096, 65535, 65536, 1 << 20, 3 << 20};
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned char *p = __wrap_malloc(sizes[i]);
		assert_non_null(p);
		assert_int_equal((uintptr_t)p % 16, 0);
		memset(p, 0xab, sizes[i]);
		for (size_t a = 16; a <= 8192; a *= 2) {
			void *q = NULL;
			assert_int_equal(__wrap_posix_memalign(&q, a, sizes[i]), 0);
			assert_int_equal((uintptr_t)q % a, 0);
			memset(q, 0xcd, sizes[i]);
			void *r = __wrap_aligned_alloc(a, sizes[i]);
			assert_int_equal((uintptr_t)r % a, 0);
			memset(r, 0xef, sizes[i]);
			__wrap_free(q);
			__wrap_free(r);
		}
		for (size_t k = 0; k < sizes[i]; k++)
			assert_int_equal(p[k], 0xab); /* nothing else wrote over it */
		__wrap_free(p);
	}
	void *q;
	assert_int_equal(__wrap_posix_memalign(&q, 24, 10), 22); /* EINVAL: not a power of two */
	__wrap_free(NULL);
}

static void test_realloc_calloc_strdup(void **state)
{
	(void)state;
	char *p = __wrap_malloc(10);
	memcpy(p, "abcdefghi", 10);
	for (size_t n = 20; n < (4u << 20); n *= 3) {
		p = __wrap_realloc(p, n);
		assert_non_null(p);
		assert_string_equal(p, "abcdefghi");
	}
	p = __wrap_realloc(p, 5);
	assert_memory_equal(p, "abcde", 5);
	assert_null(__wrap_realloc(p, 0)); /* freed */
	unsigned char *d = __wrap_malloc(200);
	memset(d, 0xff, 200);
	__wrap_free(d);
	unsigned char *z = __wrap_calloc(25, 8); /* likely the block just freed: zeroed all the same */
	for (int k = 0; k < 200; k++)
		assert_int_equal(z[k], 0);
	__wrap_free(z);
	assert_null(__wrap_calloc(SIZE_MAX / 2, 4));
	char *s = __wrap_strdup("weft");
	assert_string_equal(s, "weft");
	__wrap_free(s);
}

static void *churn(void *arg)
{
	uintptr_t seed = (uintptr_t)arg;
	void *keep[64] = {0};
	for (int i = 0; i < 20000; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		int k = (int)(seed >> 58);
		size_t n = (seed >> 20) % 3000;
		__wrap_free(keep[k]);
		keep[k] = __wrap_malloc(n);
		if (!keep[k])
			return (void *)1;
		memset(keep[k], k, n);
	}
	for (int k = 0; k < 64; k++)
		__wrap_free(keep[k]);
	return NULL;
}

static void test_threads_and_fork(void **state)
{
	(void)state;
	pthread_t t[4];
	for (uintptr_t i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
	for (int f = 0; f < 60; f++) { /* the child allocates: the lock was never left held */
		pid_t pid = fork();
		if (!pid) {
			void *p = __wrap_malloc(100);
			_exit(p && churn((void *)7) == NULL ? 0 : 1);
		}
		int status;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	for (int i = 0; i < 4; i++) {
		void *rc;
		pthread_join(t[i], &rc);
		assert_null(rc);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes_and_alignment),
		cmocka_unit_test(test_realloc_calloc_strdup),
		cmocka_unit_test(test_threads_and_fork),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
