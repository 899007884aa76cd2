/*
 * maps.c - where each library's code lies: MAPS metadata records (docs/format.md), the lines of
 * /proc/self/maps, written at start, in a forked child and after each dlopen. A process image
 * writes each distinct line once: the reader takes the union of its records in order, so a
 * record after a dlopen needs only what changed (Open MPI dlopens ~120 components at
 * MPI_Init, and a whole copy each time made 4 MB of maps per rank). The lines written are
 * remembered by hash (FNV-1a, 64 bits) in an open-addressing set, under a lock (dlopen is
 * called from any thread); a fork child starts with an empty set and writes its whole map
 * into its own metadata file.
 */
#include "lib/internal.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *seen; /* hashes of the lines written; 0: an empty slot */
static size_t nseen, seen_cap;

static uint64_t line_hash(const char *s, size_t n)
{
	uint64_t h = 14695981039346656037ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h ? h : 1;
}

static void put(uint64_t *tab, size_t cap, uint64_t h)
{
	size_t i = (size_t)h & (cap - 1);
	while (tab[i] && tab[i] != h)
		i = (i + 1) & (cap - 1);
	tab[i] = h;
}

/* 1 if h was not in the set (now it is); 1 also when the set cannot grow (written again) */
static int first_time(uint64_t h)
{
	if (2 * (nseen + 1) > seen_cap) {
		size_t cap = seen_cap ? 2 * seen_cap : 1024;
		uint64_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return 1;
		for (size_t i = 0; i < seen_cap; i++)
			if (seen[i])
				put(t, cap, seen[i]);
		free(seen);
		seen = t;
		seen_cap = cap;
	}
	size_t i = (size_t)h & (seen_cap - 1);
	while (seen[i] && seen[i] != h)
		i = (i + 1) & (seen_cap - 1);
	if (seen[i])
		return 0;
	seen[i] = h;
	nseen++;
	return 1;
}

/* the whole file, or NULL; *len its size */
static char *read_maps(size_t *len)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			char *b = realloc(buf, cap * 2);
			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	*len = n;
	return buf;
}

void weft_maps_record(void)
{
	if (atomic_load(&weft_g.run) != WEFT_RUN_ON)
		return;
	weft_in_runtime++; /* its own allocations are not the program's */
	size_t n = 0;
	char *buf = read_maps(&n);
	uint64_t ticks = weft__ticks();
	if (buf) {
		pthread_mutex_lock(&maps_lock);
		/* the new lines, moved to the front of buf in their order */
		size_t out = 0;
		for (size_t a = 0; a < n;) {
			char *nl = memchr(buf + a, '\n', n - a);
			size_t b = nl ? (size_t)(nl - buf) + 1 : n;
			if (first_time(line_hash(buf + a, b - a))) {
				memmove(buf + out, buf + a, b - a);
				out += b - a;
			}
			a = b;
		}
		pthread_mutex_unlock(&maps_lock);
		if (out)
			weft_meta_write(WEFT_M_MAPS, &ticks, sizeof(ticks), buf, out);
		free(buf);
	}
	weft_in_runtime--;
}

void weft_maps_fork_child(void)
{
	/* (the lock may have been held by a thread the child does not have) */
	pthread_mutex_init(&maps_lock, NULL);
	free(seen);
	seen = NULL;
	nseen = seen_cap = 0;
	weft_maps_record();
}
