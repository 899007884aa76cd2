/*
 * blob.c - see blob.h. A mapped blob is a private read-only mapping of the file placed over an
 * anonymous reservation one byte longer (the zero byte after the contents, even when the size
 * is a whole number of pages). The mapped blobs are listed (address, length) so that a release
 * touches only them: MADV_DONTNEED on a private file mapping that was never written drops the
 * pages from this process; on the heap it would zero memory, so anything not listed is left.
 */
#include "format/blob.h"
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct mapped { uintptr_t addr; size_t len; };

/* The most a read fault maps before the page it hits: the aligned fault-around window (64 KiB by
 * default) or the page cache's folio holding the page, which readahead makes as large as a PMD
 * (2 MiB on x86-64; 128 KiB folios seen on this machine's kernel). */
#define FAULT_AROUND ((uintptr_t)2 << 20)

/* The mapped blobs: written by weft_blob_load and weft_blob_free, read by weft_blob_release,
 * all under `lock`. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mapped *maps;
static size_t nmaps, mapcap;

static size_t page(void)
{
	static size_t ps;
	if (!ps) {
		long v = sysconf(_SC_PAGESIZE);
		ps = v > 0 ? (size_t)v : 4096;
	}
	return ps;
}

/* The first of the n mapped blobs (sorted by address) that starts after a: a blob holding a
 * is the one before it. */
static size_t find(const struct mapped *m, size_t n, uintptr_t a)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (m[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void *map_file(int fd, size_t size)
{
	size_t len = size + 1;
	void *res = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (res == MAP_FAILED)
		return NULL;
	if (mmap(res, size, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
		munmap(res, len);
		return NULL;
	}
	pthread_mutex_lock(&lock);
	if (nmaps == mapcap) {
		size_t cap = mapcap ? mapcap * 2 : 16;
		struct mapped *m = realloc(maps, cap * sizeof(*m));
		if (!m) {
			pthread_mutex_unlock(&lock);
			munmap(res, len);
			return NULL;
		}
		maps = m;
		mapcap = cap;
	}
	size_t at = find(maps, nmaps, (uintptr_t)res); /* kept sorted by address */
	memmove(maps + at + 1, maps + at, (nmaps - at) * sizeof(*maps));
	maps[at] = (struct mapped){(uintptr_t)res, len};
	nmaps++;
	pthread_mutex_unlock(&lock);
	return res;
}

void *weft_blob_load(int fd, size_t size, int map, size_t *got)
{
	*got = 0;
	pthread_mutex_lock(&lock);
	int room = nmaps < WEFT_BLOB_MAP_MAX; /* beyond it, read (the map count is limited) */
	pthread_mutex_unlock(&lock);
	if (map && room && size >= WEFT_BLOB_MAP_MIN) {
		void *p = map_file(fd, size);
		if (p) {
			*got = size;
			return p;
		}
	}
	unsigned char *data = calloc(1, size + 1);
	if (!data)
		return NULL;
	while (*got < size) {
		ssize_t r = read(fd, data + *got, size - *got);
		if (r <= 0)
			break;
		*got += (size_t)r;
	}
	return data;
}

void weft_blob_free(void *p)
{
	if (!p)
		return;
	size_t len = 0;
	pthread_mutex_lock(&lock);
	size_t at = find(maps, nmaps, (uintptr_t)p);
	if (at && maps[at - 1].addr == (uintptr_t)p) {
		len = maps[at - 1].len;
		memmove(maps + at - 1, maps + at, (nmaps - at) * sizeof(*maps));
		nmaps--;
	}
	pthread_mutex_unlock(&lock);
	if (len)
		munmap(p, len);
	else
		free(p);
}

void weft_blob_release(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p, lo = 0, hi = 0;
	if (!n)
		return;
	pthread_mutex_lock(&lock);
	size_t at = find(maps, nmaps, a);
	if (at && a - maps[at - 1].addr < maps[at - 1].len) {
		lo = maps[at - 1].addr;
		hi = maps[at - 1].addr + maps[at - 1].len;
	}
	pthread_mutex_unlock(&lock);
	if (!hi)
		return;
	/* whole pages, rounded outward (a page shared with the next chunk is read again if needed),
	 * and the FAULT_AROUND bytes before: a read fault maps the cached pages of the aligned window
	 * or folio around it, which brings back pages of the chunk before, given back already */
	uintptr_t s = a & ~(uintptr_t)(page() - 1), e = a + n < hi ? a + n : hi;
	e = (e + page() - 1) & ~(uintptr_t)(page() - 1);
	s = s - lo > FAULT_AROUND ? s - FAULT_AROUND : lo;
	if (e > s)
		madvise((void *)s, e - s, MADV_DONTNEED);
}
