/*
 * writer.c - writer threads: they take full chunks from the queue, pack them (pack4.h: records,
 * then columns of numbers), compress with zstd, and append each chunk to their own events file
 * (P-K.wevents), so writers never contend on a file. The records are one zstd frame at the
 * chosen level (they repeat: zstd's matches are what shrink a function trace); each column is
 * a frame of its own, at levels up to 1 Huffman-coded literals only: timestamp deltas,
 * addresses and sizes hardly repeat, and zstd's search for matches in them cost more than it
 * found (bench/RESULTS.md, issue 21, h22/memfloor). Writer 0 also records a clock
 * calibration point every 100 ms. Options: writers=N, writer_cpus=LIST (pinning, like
 * `perf record --threads`), compression=LEVEL. A failed write (disk full) is logged once;
 * the events of the chunk are counted as dropped and the file keeps its last complete frame.
 */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_literalCompressionMode: a parameter, refused by a zstd without it */
#include "internal.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>
#include "../format/pack.h"

struct writer {
	pthread_t th;
	pthread_mutex_t work; /* held while the writer works, so fork never splits a malloc */
	int idx;
	struct weft_file file; /* the events file */
	uint64_t at;           /* its size: where the next frame goes (for the chunk index) */
	ZSTD_CCtx *cctx; /* the records */
	ZSTD_CCtx *ccol; /* the columns */
	uint8_t col_lit[5];   /* column k (1-4) as literals only: compress_chunk's last probe */
	unsigned col_age[5];  /* chunks since that probe, + 1 (0: none yet) */
	void *zbuf;
	size_t zcap;
	uint8_t *pbuf; /* packed records */
	size_t pcap;
	uint8_t *cbuf; /* the columns while they are made (weft_pack4_scratch) */
	int failed;
	uint32_t opens[2 * WEFT_IX_OPENS]; /* weft top's stacks: packing's summary (chunkindex.h) */
	struct weft_funcset *funcs; /* the chunk's function addresses (funcset.h), then their listing */
	uint8_t *ftail;             /* ... encoded (WEFT_FUNCSET_BYTES) */
	uint64_t *ftmp;             /* ... sorted (WEFT_FUNCSET_MAX words) */
	_Atomic int running; /* set by the writer once its thread runs our code (fork waits for it) */
};

static struct writer writers[16]; /* set up by weft_writers_start before the threads run */
static int nwriters;

/* Count events and replace each timestamp by its difference to the previous one (what
 * weft_pack does on its way, for chunks stored unpacked when there is no memory to pack). */
static uint32_t delta_encode(uint64_t *w, size_t nwords, uint32_t *dropped)
{
	uint64_t prev = 0;
	uint32_t events = 0;
	size_t i = 0;
	while (i + 2 <= nwords) {
		uint64_t h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (i + 2 + extra > nwords)
			break;
		events += weft_rec_events(type);
		if (type == WEFT_R_DROPPED && extra)
			*dropped += (uint32_t)w[i + 2];
		if (weft_rec_has_ticks(type)) {
			uint64_t t = w[i];
			w[i] = t - prev;
			prev = t;
		}
		i += 2 + extra;
	}
	return events;
}

/* The columns at levels up to 1: Huffman-coded literals, no match search (a step of 1000 bytes
 * after each miss), for the deltas and codes always (deltas never repeat; matches made the
 * codes 0.7x for twice the time: less than a tenth of a byte per event); for the addresses and
 * sizes when the level's matches do not make them a fifth smaller: a real program's addresses
 * and sizes repeat (a compiler's: 0.6x with matches), a malloc/free loop's hardly (0.85x, for
 * 3.5x the time). Each writer tries both ways on a column of at least 4 KiB when it has not
 * for 16 chunks (a smaller one says little) and keeps the choice in between. */
#define WEFT_COL_LITERALS (-1000)
#define WEFT_COL_PROBE 16
#define WEFT_COL_PROBE_MIN 4096

static size_t compress_part(ZSTD_CCtx *cc, void *dst, size_t cap, const uint8_t *src, size_t n, int level, int lit)
{
	ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, lit ? WEFT_COL_LITERALS : level);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_literalCompressionMode, lit ? ZSTD_ps_enable : ZSTD_ps_auto);
	return ZSTD_compress2(cc, dst, cap, src, n);
}

/* Compresses packed bytes p[0..n) (version 4) into w->zbuf: the records, then each column with
 * the trailer going with the last, each non-empty part one frame (a reader decompresses the
 * concatenation). Returns the compressed size, or 0 on failure. */
static void writer_funcs_free(struct writer *w)
{
	free(w->funcs);
	free(w->ftail);
	free(w->ftmp);
	w->funcs = NULL;
	w->ftail = NULL;
	w->ftmp = NULL;
}

static size_t compress_chunk(struct writer *w, const uint8_t *p, size_t n)
{
	uint32_t t[4];
	memcpy(t, p + n - WEFT_PACK4_TRAILER, sizeof(t));
	size_t cut[5] = {t[0], t[1], t[2], t[3], n - t[0] - t[1] - t[2] - t[3]}, zneed = 0;
	for (int k = 0; k < 5; k++)
		zneed += 2 * ZSTD_compressBound(cut[k]); /* twice: room for a probe's second try */
	if (zneed > w->zcap) {
		free(w->zbuf);
		w->zbuf = malloc(zneed);
		w->zcap = w->zbuf ? zneed : 0;
		if (!w->zbuf)
			return 0;
	}
	int level = weft_cfg.compression;
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
	size_t at = 0, o = 0;
	for (int k = 0; k < 5; k++) {
		if (!cut[k])
			continue;
		uint8_t *dst = (uint8_t *)w->zbuf + o;
		size_t z;
		if (k == 0) {
			z = ZSTD_compress2(w->cctx, dst, w->zcap - o, p + at, cut[k]);
		} else if (level > 1 || k <= 2) {
			z = compress_part(w->ccol, dst, w->zcap - o, p + at, cut[k], level, level <= 1);
		} else if (cut[k] >= WEFT_COL_PROBE_MIN && (!w->col_age[k] || w->col_age[k] >= WEFT_COL_PROBE)) {
			size_t lit = compress_part(w->ccol, dst, w->zcap - o, p + at, cut[k], level, 1);
			if (ZSTD_isError(lit))
				return 0;
			size_t m = compress_part(w->ccol, dst + lit, w->zcap - o - lit, p + at, cut[k], level, 0);
			if (ZSTD_isError(m))
				return 0;
			w->col_lit[k] = lit * 4 <= m * 5;
			w->col_age[k] = 1;
			if (!w->col_lit[k])
				memmove(dst, dst + lit, m);
			z = w->col_lit[k] ? lit : m;
		} else { /* (before the first probe: with matches) */
			w->col_age[k] += w->col_age[k] != 0;
			z = compress_part(w->ccol, dst, w->zcap - o, p + at, cut[k], level, w->col_lit[k]);
		}
		if (ZSTD_isError(z))
			return 0;
		at += cut[k];
		o += z;
	}
	return o;
}

/* The writer's function address set and its listing's room, made at its first chunk; NULL
 * where there is no memory (the chunks are then unlisted: a reader scans them). */
static struct weft_funcset *writer_funcs(struct writer *w)
{
	if (!w->funcs) {
		w->funcs = calloc(1, sizeof(*w->funcs));
		w->ftail = malloc(WEFT_FUNCSET_BYTES);
		w->ftmp = malloc(WEFT_FUNCSET_MAX * sizeof(uint64_t));
		if (!w->funcs || !w->ftail || !w->ftmp) {
			writer_funcs_free(w);
			return NULL;
		}
	}
	return w->funcs;
}

static void write_chunk(struct writer *w, struct weft_chunk *c)
{
	size_t used = c->used & ~(size_t)7;
	uint32_t dropped = 0, events;
	struct weft_chunk_header h;
	memset(&h, 0, sizeof(h));
	h.magic = WEFT_CHUNK_MAGIC;
	h.tid = c->tid;
	h.seq = c->seq;
	h.raw_size = (uint32_t)used;
	const void *payload = c->data;
	size_t stored = used;
	size_t need = weft_pack_bound(used / 8);
	if (need > w->pcap) {
		free(w->pbuf);
		free(w->cbuf);
		w->pbuf = malloc(need);
		w->cbuf = malloc(weft_pack4_scratch(used / 8));
		if (!w->pbuf || !w->cbuf) {
			free(w->pbuf);
			free(w->cbuf);
			w->pbuf = w->cbuf = NULL;
		}
		w->pcap = w->pbuf ? need : 0;
	}
	int live = weft_live_wanted(); /* weft top (live.c): the stacks from packing's pass, or a walk */
	if (live == 2 || (live == 1 && !w->pbuf))
		weft_live_chunk(c->tid, c->seq, c->data, used); /* before delta_encode changes them */
	struct weft_index_rec ix; /* the chunk's time index entry (chunkindex.c), made in the same pass */
	/* its function addresses, listed in that entry (1.13, funcset.h): not in the flight
	 * recorder's ring, whose frames have no entries */
	struct weft_funcset *funcs = weft_flight_active() ? NULL : writer_funcs(w);
	if (w->pbuf) { /* records packed, delta-coded on the way: ~1 byte/event for zstd to chew */
		if (live == 1) {
			int jumps = 0;
			stored = weft_pack5_indexed_opens((const uint64_t *)c->data, used / 8, w->pbuf, &events, &dropped,
							  &ix, w->cbuf, w->opens, &jumps, funcs);
			weft_live_chunk_opens(c->tid, c->seq, c->data, used, ix.depth_delta, ix.depth_min, w->opens, jumps,
					      events, dropped);
		} else {
			stored = weft_pack5_indexed((const uint64_t *)c->data, used / 8, w->pbuf, &events, &dropped,
						    &ix, w->cbuf, funcs);
		}
		payload = w->pbuf;
		h.flags |= WEFT_CHUNK_PACKED5;
	} else { /* no memory for packing: the records themselves, delta-coded */
		weft_index_scan((const uint64_t *)c->data, used / 8, &ix); /* while they are absolute */
		events = delta_encode((uint64_t *)c->data, used / 8, &dropped);
	}
	if (ix.flags & WEFT_IX_LEAF) /* (1.12) a reader expands them */
		h.flags |= WEFT_CHUNK_LEAF;
	if (!weft_flight_active()) { /* in the ring no frame has a file offset (a snapshot's differ) */
		long tlen = funcs && w->pbuf ? weft_funcset_encode(funcs, w->ftail, w->ftmp) : -1;
		if (tlen >= 0)
			ix.flags |= WEFT_IX_FUNCS;
		weft_index_chunk(c, &ix, (unsigned)w->idx, w->at, tlen >= 0 ? w->ftail : NULL, tlen >= 0 ? (size_t)tlen : 0);
		if (funcs)
			weft_funcset_clear(funcs);
	}
	h.events = events;
	h.dropped = dropped;
	/* the flight recorder keeps frames packed, not compressed: the ring's snapshot compresses
	 * the few it writes, off the writers' path (flight-snap.c). --switch-output writes every
	 * frame as a part, and its SIZE is of compressed events: compressed here, as for a file */
	int zstd = weft_cfg.compression != 0 && (!weft_flight_active() || weft_cfg.switch_output[0]);
	if (zstd && w->cctx && w->ccol && w->pbuf) {
		size_t z = compress_chunk(w, w->pbuf, stored);
		if (z && z < stored) {
			payload = w->zbuf;
			stored = z;
			h.flags |= WEFT_CHUNK_ZSTD;
		}
	} else if (zstd && w->cctx) { /* the records unpacked: one frame */
		size_t zneed = ZSTD_compressBound(stored);
		if (zneed > w->zcap) {
			free(w->zbuf);
			w->zbuf = malloc(zneed);
			w->zcap = w->zbuf ? zneed : 0;
		}
		if (w->zbuf) {
			size_t z = ZSTD_compressCCtx(w->cctx, w->zbuf, w->zcap, payload, stored,
						     weft_cfg.compression);
			if (!ZSTD_isError(z) && z < stored) {
				payload = w->zbuf;
				stored = z;
				h.flags |= WEFT_CHUNK_ZSTD;
			}
		}
	}
	h.stored_size = (uint32_t)stored;
	h.flags |= WEFT_CHUNK_SUM;
	h.checksum = weft_chunk_sum(h.flags, payload, stored);
	if (weft_flight_active()) { /* the flight recorder: into its ring, not the file */
		weft_flight_put(c, &h, payload, stored);
		atomic_fetch_add(&weft_g.events, events);
		atomic_fetch_add(&weft_g.bytes_raw, used);
		atomic_fetch_add(&weft_g.chunks, 1);
		return;
	}
	struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)payload, stored}};
	int rc = w->failed ? -EIO : weft_file_append(&w->file, iov, 2); /* whole frames only */
	if (rc) {
		weft_chunk_unwritten(c, events);
		if (!w->failed) {
			weft_log(WEFT_LOG_ERROR, "writing the trace failed (%s): later events are dropped",
				 strerror(-rc));
			weft_meta_write_failed(-rc);
		}
		w->failed = 1;
		atomic_fetch_add(&weft_g.dropped, events);
		return;
	}
	w->at += sizeof(h) + stored;
	atomic_fetch_add(&weft_g.events, events);
	atomic_fetch_add(&weft_g.bytes_raw, used);
	atomic_fetch_add(&weft_g.bytes_written, stored + sizeof(h));
	atomic_fetch_add(&weft_g.chunks, 1);
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	weft_in_runtime = 1; /* for its whole life: nothing it does is the program's */
	weft_endwatch_own_thread();
	atomic_store(&w->running, 1);
	char name[16];
	snprintf(name, sizeof(name), "weft-writer-%d", w->idx);
	pthread_setname_np(pthread_self(), name);
	uint64_t mask;
	if (weft_cfg.writer_cpus[0] && !weft_parse_cpulist(weft_cfg.writer_cpus, &mask)) {
		cpu_set_t set;
		CPU_ZERO(&set);
		for (int i = 0; i < 64; i++)
			if (mask & (1ull << i))
				CPU_SET(i, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			weft_log(WEFT_LOG_WARN, "writer_cpus=%s: cannot pin writer %d", weft_cfg.writer_cpus, w->idx);
	}
	uint64_t last_clock = weft_boottime_ns();
	unsigned clocks = 0;
	for (;;) {
		int done;
		struct weft_chunk *c = weft_queue_pop_wait(&done);
		pthread_mutex_lock(&w->work);
		if (c) {
			write_chunk(w, c);
			weft_pool_release(c);
		}
		/* calibration points: at 10 ms (short runs need two), then every 100 ms */
		uint64_t now = weft_boottime_ns();
		if (w->idx == 0 && !done && now - last_clock >= (clocks ? 100000000ull : 10000000ull)) {
			weft_meta_clock();
			last_clock = now;
			clocks++;
			weft_endwatch_check(); /* every thread but weft's ended: exit (endwatch.c) */
		}
		pthread_mutex_unlock(&w->work);
		if (done)
			break;
		if (c)
			weft_pool_spare();
	}
	weft_flight_writer_exit();
	struct timespec cpu;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
		atomic_fetch_add(&weft_g.writer_cpu_ns, (uint64_t)cpu.tv_sec * 1000000000ull + (uint64_t)cpu.tv_nsec);
	return NULL;
}

static int open_events(struct weft_file *f, const char *dir, const char *stem, int pid, int idx)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s-%d.wevents", dir, stem, idx);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	struct weft_file_header h;
	weft_file_header_init(&h, WEFT_EVENTS_MAGIC, pid, idx, weft_clock_kind());
	if (write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h)) {
		int e = errno ? -errno : -EIO;
		close(fd);
		return e;
	}
	return weft_file_own(f, fd, path);
}

int weft_writers_start(const char *dir, const char *stem, int pid)
{
	nwriters = 0;
	for (int i = 0; i < weft_cfg.writers; i++) {
		struct writer *w = &writers[i];
		memset(w, 0, sizeof(*w));
		w->idx = i;
		pthread_mutex_init(&w->work, NULL);
		w->file.fd = -1;
		w->at = sizeof(struct weft_file_header);
		int e = weft_flight_active() ? 0 : open_events(&w->file, dir, stem, pid, i);
		if (e < 0) {
			weft_writers_stop();
			return e;
		}
		w->cctx = ZSTD_createCCtx();
		w->ccol = ZSTD_createCCtx();
		/* Signals stay with the application's threads. */
		sigset_t all, old;
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		int rc = pthread_create(&w->th, NULL, writer_main, w);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rc) {
			weft_file_close(&w->file);
			ZSTD_freeCCtx(w->cctx);
			ZSTD_freeCCtx(w->ccol);
			weft_writers_stop();
			return -rc;
		}
		nwriters++;
	}
	return 0;
}

void weft_writers_stop(void)
{
	weft_pool_wake_all();
	for (int i = 0; i < nwriters; i++) {
		struct writer *w = &writers[i];
		pthread_join(w->th, NULL);
		weft_file_close(&w->file);
		if (!weft_g.in_signal) { /* the interrupted thread may hold malloc's lock */
			ZSTD_freeCCtx(w->cctx);
			ZSTD_freeCCtx(w->ccol);
			free(w->zbuf);
			free(w->pbuf);
			free(w->cbuf);
			writer_funcs_free(w);
		}
	}
	nwriters = 0;
}

/* Fork: every writer is between chunks while the process forks (prepare takes their work
 * locks), so the child inherits no half-done allocation. A writer created just before the
 * fork may still be in its thread's start-up, which allocates (under ASan, with the
 * allocator's locks, which a child would inherit locked): prepare waits until each writer
 * runs writer_main. In the child the writer threads do not exist; their files belong to the
 * parent; what they owned is freed. */
void weft_writers_atfork_prepare(void)
{
	for (int i = 0; i < nwriters; i++) {
		while (!atomic_load(&writers[i].running))
			sched_yield();
		pthread_mutex_lock(&writers[i].work);
	}
}

void weft_writers_atfork_parent(void)
{
	for (int i = 0; i < nwriters; i++)
		pthread_mutex_unlock(&writers[i].work);
}

void weft_writers_atfork_child(void)
{
	for (int i = 0; i < nwriters; i++) {
		weft_file_close(&writers[i].file);
		ZSTD_freeCCtx(writers[i].cctx);
		ZSTD_freeCCtx(writers[i].ccol);
		free(writers[i].zbuf);
		free(writers[i].pbuf);
		free(writers[i].cbuf);
		writer_funcs_free(&writers[i]);
	}
	nwriters = 0;
}
