/* failbig.so - a test shim, preloaded: allocations larger than WEFT_TEST_FAIL_ABOVE bytes
 * fail (return NULL, errno ENOMEM), smaller ones go to glibc. It makes "out of memory" in the
 * readers deterministic (a chunk's decode buffer is over 1 MB; the trace's bookkeeping is not)
 * without rlimits, which also limit the loader and thread stacks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t s);
extern void *__libc_realloc(void *p, size_t n);
extern void *__libc_memalign(size_t align, size_t n);

static size_t limit(void)
{
	static size_t v;
	if (!v) {
		const char *s = getenv("WEFT_TEST_FAIL_ABOVE");
		v = s && *s ? strtoull(s, NULL, 10) : (size_t)-1;
	}
	return v;
}

static int too_big(size_t n)
{
	if (n <= limit())
		return 0;
	errno = ENOMEM;
	return 1;
}

void *malloc(size_t n)
{
	return too_big(n) ? NULL : __libc_malloc(n);
}

void *calloc(size_t n, size_t s)
{
	return s && n > (size_t)-1 / s ? NULL : too_big(n * s) ? NULL : __libc_calloc(n, s);
}

void *realloc(void *p, size_t n)
{
	return too_big(n) ? NULL : __libc_realloc(p, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	if (too_big(n))
		return ENOMEM;
	void *p = __libc_memalign(align, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t n)
{
	return too_big(n) ? NULL : __libc_memalign(align, n);
}
