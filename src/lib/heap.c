/*
 * heap.c - named heaps (weft_heap): one call site of kind WEFT_KIND_HEAP per name, allocated
 * once and kept for the life of the process (a program holds the pointer), so that the inline
 * weft_heap_alloc/free/usage in weft.h cost one load when tracing is off. The heap's id is the
 * site's id; its name reaches the trace as the site's definition.
 */
#include "internal.h"
#include <stdlib.h>
#include <string.h>

struct heap_entry {
	struct weft_site site; /* first: the pointer handed out */
	struct heap_entry *next;
};

/* Guarded by heaps_lock; entries are never freed. */
static pthread_mutex_t heaps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct heap_entry *heaps;

weft_heap_t *weft_heap(const char *name)
{
	if (!name)
		return NULL;
	weft_in_runtime++; /* its allocations are weft's, not the program's */
	pthread_mutex_lock(&heaps_lock);
	struct heap_entry *e;
	for (e = heaps; e; e = e->next)
		if (!strcmp(e->site.name, name))
			break;
	if (!e && (e = calloc(1, sizeof(*e)))) {
		char *n = strdup(name);
		if (!n) {
			free(e);
			e = NULL;
		} else {
			e->site.kind = WEFT_KIND_HEAP;
			e->site.name = n;
			e->site.category = "memory";
			e->site.unit = "bytes";
			e->next = heaps;
			heaps = e;
		}
	}
	pthread_mutex_unlock(&heaps_lock);
	weft_in_runtime--;
	if (!e)
		return NULL;
	weft__on(&e->site); /* registers it (its definition goes into the metadata now) */
	return &e->site;
}

/* Fork: a name being added while the process forks is either in the list or not, never half
 * in it (the forking thread holds the lock across the fork). */
void weft_heaps_atfork_prepare(void) { pthread_mutex_lock(&heaps_lock); }
void weft_heaps_atfork_parent(void) { pthread_mutex_unlock(&heaps_lock); }
void weft_heaps_atfork_child(void) { pthread_mutex_init(&heaps_lock, NULL); }
