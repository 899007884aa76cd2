/* ownmalloc.c - a program that defines malloc itself (as when jemalloc is linked statically):
 * its definition comes before any preloaded library, so weft cannot see its allocations and
 * must say so. Prints how many of its own mallocs ran (the same with and without weft), and
 * how many calls to its allocation functions came from weft's runtime (0: weft takes its own
 * memory, never the program's arena). */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static char arena[1 << 24] __attribute__((aligned(4096)));
static size_t used;
static unsigned calls;
static uintptr_t callers[4096]; /* return addresses of the calls to the functions below */
static unsigned ncallers;

#define NOTE() (ncallers < 4096 ? (void)(callers[ncallers++] = (uintptr_t)__builtin_return_address(0)) : (void)0)

static void *take(size_t n, size_t align)
{
	n = (n + 15) & ~(size_t)15;
	size_t start = (used + 16 + align - 1) & ~(align - 1);
	if (start + n > sizeof(arena))
		return NULL;
	memcpy(arena + start - 16, &n, sizeof(n));
	used = start + n;
	return arena + start;
}

void *malloc(size_t n)
{
	NOTE();
	calls++;
	return take(n, 16);
}
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b)
{
	NOTE();
	void *p = take(a * b, 16);
	if (p)
		memset(p, 0, a * b);
	return p;
}
void *realloc(void *o, size_t n)
{
	NOTE();
	void *p = take(n, 16);
	if (p && o) {
		size_t on;
		memcpy(&on, (char *)o - 16, sizeof(on));
		memcpy(p, o, on < n ? on : n);
	}
	return p;
}
int posix_memalign(void **out, size_t align, size_t n)
{
	NOTE();
	void *p = take(n, align < 16 ? 16 : align);
	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}
void *aligned_alloc(size_t align, size_t n)
{
	NOTE();
	return take(n, align < 16 ? 16 : align);
}
void *memalign(size_t align, size_t n)
{
	NOTE();
	return take(n, align < 16 ? 16 : align);
}

void *volatile ownmalloc_sink;
int main(void)
{
	unsigned before = calls;
	for (int i = 0; i < 100; i++) {
		ownmalloc_sink = malloc(100);
		free(ownmalloc_sink);
	}
	printf("own mallocs: %u\n", calls - before);
	unsigned from_weft = 0;
	for (unsigned i = 0; i < ncallers; i++) {
		Dl_info di;
		if (dladdr((void *)callers[i], &di) && di.dli_fname && strstr(di.dli_fname, "libweft"))
			from_weft++;
	}
	printf("calls from weft: %u\n", from_weft);
	return 0;
}
