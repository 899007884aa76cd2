/*
 * maps.c - where each library's code lies: MAPS metadata records (docs/format.md), the lines of
 * /proc/self/maps, written at start, in a forked child and after each dlopen. A process image
 * writes each distinct line once: the reader takes the union of its records in order, so a
 * record after a dlopen needs only what changed (Open MPI dlopens ~120 components at
 * MPI_Init, and a whole copy each time made 4 MB of maps per rank). The lines written are
 * remembered by hash (FNV-1a, 64 bits) in an open-addressing set, under a lock (dlopen is
 * called from any thread); a fork child starts with an empty set and writes its whole map
 * into its own metadata file. The lines go out zstd-compressed (MAPS_Z, format 1.11): a
 * process's map is the bulk of its metadata (30-100 KB of text at start, each Open MPI
 * component's dlopen ~1 KB more), and a job writes one per rank.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_createCCtx_advanced: the context's memory is weft's */
#include "lib/internal.h"
#include <signal.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static ZSTD_CCtx *maps_cctx; /* under maps_lock: made at the first map, kept */
static int maps_streaming;    /* the metadata file's zstd stream has begun (MAPS_Z, flag 1 next) */

/* The compression context's memory (~1.4 MB): mapped populated, so that making it takes no
 * page fault in the program's thread (`--mem-access=pagefault` samples those as the program's,
 * outside any of its blocks), and weft's own, not the program's malloc. */
static void *z_alloc(void *opaque, size_t n)
{
	(void)opaque;
	size_t len = n + 16;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	memcpy(p, &len, sizeof(len));
	return (char *)p + 16;
}

static void z_free(void *opaque, void *p)
{
	(void)opaque;
	if (!p)
		return;
	size_t len;
	memcpy(&len, (char *)p - 16, sizeof(len));
	munmap((char *)p - 16, len);
}

/* Writes the lines as a MAPS_Z record: the next flushed block of one zstd stream per metadata
 * file, so that a record after a dlopen (~1 KB of lines naming the same directories and the
 * paths the map already holds) costs what it adds, not a frame of its own. maps_lock held: the
 * records must reach the file in the stream's order. 0 where it cannot (written plain then). */
static int write_z(uint64_t ticks, const char *text, size_t n)
{
	if (!maps_cctx && !(maps_cctx = ZSTD_createCCtx_advanced((ZSTD_customMem){z_alloc, z_free, NULL})))
		return 0;
	if (!maps_streaming) {
		ZSTD_CCtx_reset(maps_cctx, ZSTD_reset_session_only);
		ZSTD_CCtx_setParameter(maps_cctx, ZSTD_c_compressionLevel, 3);
		ZSTD_CCtx_setParameter(maps_cctx, ZSTD_c_windowLog, 17); /* 128 KiB: a map's size; the context small */
	}
	size_t cap = 24 + ZSTD_compressBound(n) + 64;
	unsigned char *rec = malloc(cap);
	if (!rec)
		return 0;
	ZSTD_inBuffer in = {text, n, 0};
	ZSTD_outBuffer o = {rec + 24, cap - 24, 0};
	size_t left;
	do
		left = ZSTD_compressStream2(maps_cctx, &o, &in, ZSTD_e_flush);
	while (!ZSTD_isError(left) && left && o.pos < o.size);
	if (ZSTD_isError(left) || left) { /* the stream is in an unknown state: the next one begins anew */
		maps_streaming = 0;
		free(rec);
		return 0;
	}
	uint64_t raw = n;
	uint32_t flags = maps_streaming ? 1u : 0u, sum = weft_sum32(text, n); /* (the stream has none) */
	memcpy(rec, &ticks, 8);
	memcpy(rec + 8, &raw, 8);
	memcpy(rec + 16, &flags, 4);
	memcpy(rec + 20, &sum, 4);
	weft_meta_write(WEFT_M_MAPS_Z, rec, 24, rec + 24, o.pos);
	maps_streaming = 1;
	free(rec);
	return 1;
}
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
	struct weft_held_signals held;
	weft_hold_async_signals(&held); /* (reading the maps takes a while) */
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
		if (out && !write_z(ticks, buf, out)) /* (under the lock: the stream's order) */
			weft_meta_write(WEFT_M_MAPS, &ticks, sizeof(ticks), buf, out);
		pthread_mutex_unlock(&maps_lock);
		free(buf);
	}
	weft_in_runtime--;
	weft_release_async_signals(&held);
}

void weft_maps_fork_child(void)
{
	/* (the lock may have been held by a thread the child does not have) */
	pthread_mutex_init(&maps_lock, NULL);
	maps_streaming = 0; /* its own metadata file: a stream of its own */
	free(seen);
	seen = NULL;
	nseen = seen_cap = 0;
	weft_maps_record();
}
