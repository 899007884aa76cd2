/* myalloc.c - libmyalloc.so, a stand-in for jemalloc/tcmalloc linked into a program: its own
 * malloc, free, calloc, realloc, memalign, posix_memalign, aligned_alloc and
 * malloc_usable_size (no valloc/pvalloc) over a private arena. free() aborts on a block that is
 * not its own: a tracer that sends the program's calls to another allocator is caught. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAGIC 0x6d79616c6c6f63ull
static char arena[64 << 20] __attribute__((aligned(4096)));
static size_t used;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
unsigned long myalloc_mallocs, myalloc_frees; /* read by the program */

struct head { uint64_t magic, size; };

static void *take(size_t align, size_t n)
{
	if (align < 16)
		align = 16;
	pthread_mutex_lock(&lock);
	size_t start = (used + sizeof(struct head) + align - 1) & ~(align - 1);
	if (start + n > sizeof(arena)) {
		pthread_mutex_unlock(&lock);
		errno = ENOMEM;
		return NULL;
	}
	used = start + n;
	myalloc_mallocs++;
	pthread_mutex_unlock(&lock);
	struct head *h = (struct head *)(arena + start) - 1;
	h->magic = MAGIC;
	h->size = n;
	return arena + start;
}

void *malloc(size_t n) { return take(16, n); }
void *memalign(size_t a, size_t n) { return take(a, n); }
void *aligned_alloc(size_t a, size_t n) { return take(a, n); }
int posix_memalign(void **out, size_t a, size_t n)
{
	void *p = take(a, n);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
void *calloc(size_t k, size_t n)
{
	void *p = take(16, k * n);
	if (p)
		memset(p, 0, k * n);
	return p;
}
size_t malloc_usable_size(void *p) { return p ? ((struct head *)p - 1)->size : 0; }
void free(void *p)
{
	if (!p)
		return;
	struct head *h = (struct head *)p - 1;
	if ((char *)p < arena || (char *)p >= arena + sizeof(arena) || h->magic != MAGIC)
		abort(); /* not one of ours */
	pthread_mutex_lock(&lock);
	myalloc_frees++;
	pthread_mutex_unlock(&lock);
}
void *realloc(void *old, size_t n)
{
	if (!old)
		return malloc(n);
	if (!n) {
		free(old);
		return NULL;
	}
	void *p = take(16, n);
	if (p) {
		size_t o = ((struct head *)old - 1)->size;
		memcpy(p, old, o < n ? o : n);
		free(old);
	}
	return p;
}
