/* memplugin.c - loaded by memtest with dlopen: plugin_alloc allocates 333 bytes and frees them. */
#include <stdlib.h>
void *volatile memplugin_sink;
__attribute__((noinline)) void plugin_alloc(void)
{
	void *p = malloc(333);
	memplugin_sink = p;
	free(p);
}
