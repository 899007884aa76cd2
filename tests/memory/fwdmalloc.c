/* fwdmalloc.c - a malloc wrapper preloaded ahead of weft (LD_PRELOAD=libfwdmalloc.so:weft's):
 * every call forwards to the next definition (weft's interposer), counting. Its allocations
 * all reach weft, which must record them and not warn that they are not recorded. */
#include <dlfcn.h>
#include <stddef.h>

static void *(*next_malloc)(size_t);
static void (*next_free)(void *);
unsigned long fwdmalloc_calls;

void *malloc(size_t n)
{
	if (!next_malloc)
		next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	fwdmalloc_calls++;
	return next_malloc(n);
}

void free(void *p)
{
	if (!next_free)
		next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	next_free(p);
}
