/* ownmalloc.c - a program that defines malloc itself (as when jemalloc is linked statically):
 * its definition comes before any preloaded library, so weft cannot see its allocations and
 * must say so. Prints how many of its own mallocs ran (the same with and without weft). */
#include <stdio.h>
#include <string.h>

static char arena[1 << 22] __attribute__((aligned(16)));
static size_t used;
static unsigned calls;

void *malloc(size_t n)
{
	calls++;
	n = (n + 15) & ~(size_t)15;
	if (used + n + 16 > sizeof(arena))
		return NULL;
	memcpy(arena + used, &n, sizeof(n));
	void *p = arena + used + 16;
	used += n + 16;
	return p;
}
void free(void *p) { (void)p; }
void *calloc(size_t a, size_t b)
{
	void *p = malloc(a * b);
	if (p)
		memset(p, 0, a * b);
	return p;
}
void *realloc(void *o, size_t n)
{
	void *p = malloc(n);
	if (p && o) {
		size_t on;
		memcpy(&on, (char *)o - 16, sizeof(on));
		memcpy(p, o, on < n ? on : n);
	}
	return p;
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
	return 0;
}
