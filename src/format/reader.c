/*
 * reader.c - trace directory -> struct weft_trace. Files are read whole; metadata is parsed
 * record by record; events files frame by frame, each frame checked (magic, sizes, checksum)
 * before its chunk is accepted. A bad frame makes the reader look for the next plausible frame
 * (salvage after corruption); a short file keeps its complete frames. Chunks are decompressed
 * and delta-decoded by two threads, since this is the bulk of converting a large trace.
 */
#include "reader.h"
#include "format.h"
#include "symbols.h"
#include "pack.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;

/* Warnings are kept per kind (the format string): the first WARN_SHOWN of a kind word for
 * word, the rest counted, and one line says how many more there were (weft_trace_warn_close),
 * so a trace damaged in a thousand places gives a few lines, not a thousand. */
#define WARN_SHOWN 3
static void add_warning(struct weft_trace *t, const char *text)
{
	char **w = realloc(t->warnings, (t->nwarnings + 1) * sizeof(*w));
	if (w) {
		t->warnings = w;
		t->warnings[t->nwarnings++] = strdup(text);
	}
}

void weft_trace_warn(struct weft_trace *t, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&warn_lock);
	size_t k = 0;
	while (k < t->nwkinds && t->wkinds[k].fmt != fmt)
		k++;
	if (k == t->nwkinds && k < sizeof(t->wkinds) / sizeof(t->wkinds[0])) {
		t->wkinds[k].fmt = fmt;
		t->wkinds[k].n = 0;
		t->nwkinds++;
	}
	uint64_t n = k < t->nwkinds ? ++t->wkinds[k].n : 1;
	if (n <= WARN_SHOWN)
		add_warning(t, buf);
	else if (k < t->nwkinds)
		snprintf(t->wkinds[k].last, sizeof(t->wkinds[k].last), "%s", buf);
	pthread_mutex_unlock(&warn_lock);
}

void weft_trace_warn_close(struct weft_trace *t)
{
	pthread_mutex_lock(&warn_lock);
	for (size_t k = 0; k < t->nwkinds; k++)
		if (t->wkinds[k].n > WARN_SHOWN) {
			char buf[700];
			snprintf(buf, sizeof(buf), "... and %llu more of this kind (the last: %s)",
				 (unsigned long long)(t->wkinds[k].n - WARN_SHOWN), t->wkinds[k].last);
			add_warning(t, buf);
			t->wkinds[k].n = WARN_SHOWN; /* said once */
		}
	pthread_mutex_unlock(&warn_lock);
}

static weft_oom_fn oom_fn; /* set once by the program before reading */

void weft_set_oom_handler(weft_oom_fn fn)
{
	oom_fn = fn;
}

void weft_oom(const char *what)
{
	if (oom_fn)
		oom_fn(what);
	abort(); /* no handler, or it returned */
}

static void *xcalloc(size_t n, size_t s)
{
	void *p = calloc(n ? n : 1, s ? s : 1);
	if (!p)
		weft_oom("reading the trace");
	return p;
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		weft_oom("reading the trace");
	return p;
}

static char *xstrndup(const char *s, size_t n)
{
	char *r = xcalloc(1, n + 1);
	memcpy(r, s, n);
	return r;
}

/* One weft_proc per file stem (pid, or pid.N for an exec'd image). */
static struct weft_proc *proc_get(struct weft_trace *t, const char *stem, int pid)
{
	for (size_t i = 0; i < t->nprocs; i++)
		if (!strcmp(t->procs[i].stem, stem))
			return &t->procs[i];
	t->procs = xrealloc(t->procs, (t->nprocs + 1) * sizeof(*t->procs));
	struct weft_proc *p = &t->procs[t->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(p->stem, sizeof(p->stem), "%s", stem);
	/* the image number follows the pid, the stem's last part (a host may hold '.' and '-') */
	const char *last = strrchr(stem, '-') ? strrchr(stem, '-') + 1 : strrchr(stem, '/') ? strrchr(stem, '/') + 1 : stem;
	const char *dot = strchr(last, '.');
	p->gen = dot ? atoi(dot + 1) : 0;
	return p;
}

/* A thread is (tid, serial): the kernel reuses tids, the runtime numbers its threads. Found
 * through a hash table (a trace may hold 100,000 short-lived threads). */
static uint64_t thread_key(uint32_t tid, uint32_t serial)
{
	return ((uint64_t)serial << 32 | tid) + 1; /* never 0: 0 marks a free slot */
}

static void thash_put(struct weft_proc *p, uint64_t key, size_t idx)
{
	size_t mask = p->thcap - 1;
	for (size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & mask;; i = (i + 1) & mask)
		if (!p->thkey[i]) {
			p->thkey[i] = key;
			p->thidx[i] = idx;
			return;
		}
}

static struct weft_thread_data *thread_get(struct weft_proc *p, uint32_t tid, uint32_t serial)
{
	uint64_t key = thread_key(tid, serial);
	if (p->thcap) {
		size_t mask = p->thcap - 1;
		for (size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & mask; p->thkey[i]; i = (i + 1) & mask)
			if (p->thkey[i] == key)
				return &p->threads[p->thidx[i]];
	}
	if (p->nthreads == p->thread_cap) {
		p->thread_cap = p->thread_cap ? p->thread_cap * 2 : 8;
		p->threads = xrealloc(p->threads, p->thread_cap * sizeof(*p->threads));
	}
	if ((p->nthreads + 1) * 2 > p->thcap) { /* grow the table, keep it at most half full */
		free(p->thkey);
		free(p->thidx);
		p->thcap = p->thcap ? p->thcap * 2 : 16;
		p->thkey = xcalloc(p->thcap, sizeof(*p->thkey));
		p->thidx = xcalloc(p->thcap, sizeof(*p->thidx));
		for (size_t i = 0; i < p->nthreads; i++)
			thash_put(p, thread_key(p->threads[i].tid, p->threads[i].serial), i);
	}
	struct weft_thread_data *th = &p->threads[p->nthreads];
	memset(th, 0, sizeof(*th));
	th->tid = tid;
	th->serial = serial;
	thash_put(p, key, p->nthreads++);
	return th;
}

/* The thread (tid, serial), or NULL: never adds one. */
static struct weft_thread_data *thread_find(struct weft_proc *p, uint32_t tid, uint32_t serial)
{
	uint64_t key = thread_key(tid, serial);
	if (!p->thcap)
		return NULL;
	size_t mask = p->thcap - 1;
	for (size_t i = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & mask; p->thkey[i]; i = (i + 1) & mask)
		if (p->thkey[i] == key)
			return &p->threads[p->thidx[i]];
	return NULL;
}

/* CHUNK_INDEX records to their chunks (sorted by seq): an entry whose chunk is not here (never
 * written, cut off) is dropped. */
static void attach_index(struct weft_proc *p)
{
	for (size_t i = 0; i < p->nindex; i++) {
		const struct weft_index_rec *e = &p->index[i];
		struct weft_thread_data *th = thread_find(p, e->tid, (uint32_t)(e->seq >> WEFT_SEQ_SERIAL_SHIFT));
		if (!th)
			continue;
		size_t lo = 0, hi = th->nchunks;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if (th->chunks[mid].seq < e->seq)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < th->nchunks && th->chunks[lo].seq == e->seq) {
			th->chunks[lo].ix = *e;
			th->chunks[lo].has_ix = 1;
		}
	}
	free(p->index);
	p->index = NULL;
	p->nindex = p->index_cap = 0;
}

static struct weft_site_def *site_slot(struct weft_proc *p, uint32_t id)
{
	if (id > 10000000)
		return NULL;
	if (id >= p->nsites) {
		size_t n = id + 64;
		p->sites = xrealloc(p->sites, n * sizeof(*p->sites));
		memset(p->sites + p->nsites, 0, (n - p->nsites) * sizeof(*p->sites));
		p->nsites = n;
	}
	return &p->sites[id];
}

uint64_t weft_proc_dropped(const struct weft_proc *p)
{
	uint64_t d = 0;
	for (size_t k = 0; k < p->nthreads; k++)
		d += p->threads[k].dropped;
	d = p->finished && p->fin[1] > d ? p->fin[1] : d;
	return d + p->gpu_dropped; /* CUPTI's: records it had no buffer for */
}

uint32_t weft_proc_add_site(struct weft_proc *p, const char *name, const char *cat)
{
	uint32_t id = (uint32_t)(p->nsites ? p->nsites : 1);
	for (size_t i = p->nsites; i-- > 1;) /* after the last defined one */
		if (p->sites[i].defined) {
			id = (uint32_t)i + 1;
			break;
		}
	struct weft_site_def *s = site_slot(p, id);
	if (!s)
		return 0;
	s->id = id;
	s->kind = 0;
	s->defined = 1;
	s->name = strdup(name);
	s->cat = strdup(cat);
	s->unit = strdup("");
	return id;
}

uint32_t weft_proc_rank(const struct weft_proc *p)
{
	if (p->has_mpi && p->mpi_rank != WEFT_RANK_NONE)
		return p->mpi_rank;
	if (p->has_job)
		return p->job_rank;
	return WEFT_RANK_NONE;
}

const char *weft_site_name(const struct weft_proc *p, uint32_t id)
{
	if (id < p->nsites && p->sites[id].defined)
		return p->sites[id].name;
	return NULL;
}

const char *weft_track_name(const struct weft_proc *p, unsigned id)
{
	if (id < p->ntracks && p->tracks[id])
		return p->tracks[id];
	return NULL;
}

/* Returns the length of the \0-terminated string at s within n bytes, or n if unterminated. */
static size_t bounded_len(const char *s, size_t n)
{
	const char *z = memchr(s, 0, n);
	return z ? (size_t)(z - s) : n;
}

static int check_header(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
			const char *magic, char *err, size_t errlen)
{
	struct weft_file_header h;
	if (n < sizeof(h)) {
		weft_trace_warn(t, "%s: shorter than its header (%zu bytes); skipped", name, n);
		return 1;
	}
	memcpy(&h, d, sizeof(h));
	if (memcmp(h.magic, magic, 8)) {
		weft_trace_warn(t, "%s: not a weft file (bad magic); skipped", name);
		return 1;
	}
	if (h.major > WEFT_FMT_MAJOR) {
		snprintf(err, errlen, "%s: trace format %u.%u is newer than this weft reads (%u.x); "
			 "use a newer weft", name, h.major, h.minor, WEFT_FMT_MAJOR);
		return -1;
	}
	return 0;
}

static void parse_meta(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
		       const char *stem, int pid)
{
	struct weft_proc *p = proc_get(t, stem, pid);
	p->has_meta = 1;
	size_t off = sizeof(struct weft_file_header);
	while (off < n) {
		struct weft_meta_rec_header h;
		if (n - off < sizeof(h)) {
			weft_trace_warn(t, "%s: truncated metadata record at offset %zu; the rest is ignored", name, off);
			break;
		}
		memcpy(&h, d + off, sizeof(h));
		off += sizeof(h);
		if (h.len > n - off) {
			weft_trace_warn(t, "%s: truncated metadata record at offset %zu; the rest is ignored", name,
			     off - sizeof(h));
			break;
		}
		const unsigned char *r = d + off;
		size_t len = h.len;
		off += len;
		switch (h.type) {
		case WEFT_M_PROCESS: {
			if (len < 16)
				break;
			uint32_t ids[2];
			memcpy(ids, r, 8);
			memcpy(&p->start_ns, r + 8, 8);
			p->ppid = (int)ids[1];
			const char *s = (const char *)r + 16;
			size_t rem = len - 16, l = bounded_len(s, rem);
			free(p->host);
			p->host = xstrndup(s, l);
			s += l + (l < rem);
			rem -= l + (l < rem);
			for (int i = 0; i < p->argc; i++)
				free(p->argv[i]);
			p->argc = 0;
			while (rem > 0 && *s) {
				l = bounded_len(s, rem);
				p->argv = xrealloc(p->argv, (size_t)(p->argc + 1) * sizeof(char *));
				p->argv[p->argc++] = xstrndup(s, l);
				s += l + (l < rem);
				rem -= l + (l < rem);
			}
			break;
		}
		case WEFT_M_OPTIONS:
			free(p->options);
			p->options = xstrndup((const char *)r, bounded_len((const char *)r, len));
			break;
		case WEFT_M_CLOCK:
			if (len >= 24) {
				p->clock = xrealloc(p->clock, (p->nclock + 1) * sizeof(*p->clock));
				memcpy(&p->clock[p->nclock++], r, 24);
			}
			break;
		case WEFT_M_CLOCK_SOURCE:
			if (len >= 16) {
				uint32_t k;
				memcpy(&k, r, 4);
				p->clock_kind = (int)k;
				memcpy(&p->nominal_hz, r + 8, 8);
			}
			break;
		case WEFT_M_SITE: {
			if (len < 8)
				break;
			uint32_t id;
			memcpy(&id, r, 4);
			struct weft_site_def *s = site_slot(p, id);
			if (!s)
				break;
			const char *str = (const char *)r + 8;
			size_t rem = len - 8, l1 = bounded_len(str, rem);
			size_t r2 = rem - l1 - (l1 < rem), l2 = bounded_len(str + l1 + 1, r2 > 0 ? r2 : 0);
			size_t r3 = r2 - l2 - (l2 < r2);
			free(s->name);
			free(s->cat);
			free(s->unit);
			s->name = xstrndup(str, l1);
			s->cat = r2 ? xstrndup(str + l1 + 1, l2) : xstrndup("", 0);
			s->unit = r3 ? xstrndup(str + l1 + 1 + l2 + 1, bounded_len(str + l1 + l2 + 2, r3)) : xstrndup("", 0);
			s->id = id;
			s->kind = r[4];
			s->is_double = r[5] & 1;
			s->defined = 1;
			break;
		}
		case WEFT_M_SOURCE: {
			if (len < 9)
				break;
			uint32_t w[2];
			memcpy(w, r, 8);
			struct weft_site_def *s = site_slot(p, w[0]);
			if (!s)
				break;
			free(s->file);
			s->file = xstrndup((const char *)r + 8, bounded_len((const char *)r + 8, len - 8));
			s->line = w[1];
			break;
		}
		case WEFT_M_TRACK: {
			if (len < 4)
				break;
			uint32_t id;
			memcpy(&id, r, 4);
			if (id == 0 || id > 65535)
				break;
			if (id >= p->ntracks) {
				p->tracks = xrealloc(p->tracks, (id + 1) * sizeof(char *));
				memset(p->tracks + p->ntracks, 0, (id + 1 - p->ntracks) * sizeof(char *));
				p->ntracks = id + 1;
			}
			free(p->tracks[id]);
			p->tracks[id] = xstrndup((const char *)r + 4, bounded_len((const char *)r + 4, len - 4));
			break;
		}
		case WEFT_M_THREAD: {
			if (len < 4)
				break;
			uint32_t tid;
			memcpy(&tid, r, 4);
			size_t nl = bounded_len((const char *)r + 4, len - 4);
			uint64_t serial = 0; /* after the name (format 1.2); 0 in older traces */
			if (len >= 4 + nl + 1 + 8)
				memcpy(&serial, r + 4 + nl + 1, 8);
			struct weft_thread_data *th = thread_get(p, tid, (uint32_t)serial);
			free(th->name);
			th->name = xstrndup((const char *)r + 4, nl);
			uint32_t flags = 0; /* after the serial (format 1.6); absent before */
			if (len >= 4 + nl + 1 + 8 + 4)
				memcpy(&flags, r + 4 + nl + 1 + 8, 4);
			th->weft_own = (flags & WEFT_THREAD_OWN) != 0;
			break;
		}
		case WEFT_M_THREAD_END: {
			if (len < 32)
				break;
			uint64_t v[4];
			memcpy(v, r, 32);
			struct weft_thread_data *th = thread_get(p, (uint32_t)v[0], (uint32_t)v[1]);
			th->ended = 1;
			if (v[3] > th->seq_end)
				th->seq_end = v[3];
			if (v[2] > th->dropped)
				th->dropped = v[2];
			break;
		}
		case WEFT_M_JOB:
			if (len >= 16) {
				p->has_job = 1;
				memcpy(&p->job_rank, r, 4);
				memcpy(&p->job_size, r + 4, 4);
				memcpy(&p->job_local_rank, r + 8, 4);
				memcpy(&p->job_local_size, r + 12, 4);
				const char *id = (const char *)r + 16;
				size_t l1 = bounded_len(id, len - 16);
				free(p->job_id);
				free(p->job_launcher);
				p->job_id = xstrndup(id, l1);
				p->job_launcher = l1 < len - 16 ? xstrndup(id + l1 + 1, bounded_len(id + l1 + 1, len - 16 - l1 - 1))
								 : xstrndup("", 0);
			}
			break;
		case WEFT_M_MPI:
			if (len >= 48) {
				p->has_mpi = 1;
				memcpy(&p->mpi_rank, r, 4);
				memcpy(&p->mpi_size, r + 4, 4);
				memcpy(&p->mpi_flavor, r + 8, 4);
				memcpy(&p->mpi_flags, r + 12, 4);
				memcpy(&p->mpi_calls, r + 16, 8);
				memcpy(&p->mpi_sent, r + 24, 8);
				memcpy(&p->mpi_received, r + 32, 8);
				memcpy(&p->mpi_undrawn, r + 40, 8);
				free(p->mpi_library);
				p->mpi_library = xstrndup((const char *)r + 48, bounded_len((const char *)r + 48, len - 48));
			}
			break;
		case WEFT_M_CHUNK_INDEX: /* matched to its chunk once all are read (finish) */
			if (len < sizeof(struct weft_index_rec))
				break;
			if (p->nindex == p->index_cap) {
				p->index_cap = p->index_cap ? p->index_cap * 2 : 256;
				p->index = xrealloc(p->index, p->index_cap * sizeof(*p->index));
			}
			memcpy(&p->index[p->nindex++], r, sizeof(struct weft_index_rec));
			break;
		case WEFT_M_CLOCK_SYNC:
			if (len >= 40) {
				p->clock_sync = xrealloc(p->clock_sync, (p->nclock_sync + 1) * sizeof(*p->clock_sync));
				struct weft_clock_sync *c = &p->clock_sync[p->nclock_sync++];
				memcpy(&c->phase, r, 4);
				memcpy(&c->ref_rank, r + 4, 4);
				memcpy(&c->offset_ns, r + 8, 8);
				memcpy(&c->at_ns, r + 16, 8);
				memcpy(&c->rtt_ns, r + 24, 8);
				memcpy(&c->rounds, r + 32, 4);
				size_t hl = bounded_len((const char *)r + 40, len - 40);
				snprintf(c->ref_host, sizeof(c->ref_host), "%.*s", (int)hl, (const char *)r + 40);
			}
			break;
		case WEFT_M_SNAPSHOT:
			if (len >= 24) {
				p->snaps = xrealloc(p->snaps, (p->nsnaps + 1) * sizeof(*p->snaps));
				struct weft_snap_mark *m = &p->snaps[p->nsnaps++];
				memcpy(&m->ticks, r, 8);
				memcpy(&m->origin, r + 8, 4);
				memcpy(&m->number, r + 12, 4);
				memcpy(&m->refused, r + 16, 4);
				memcpy(&m->err, r + 20, 4);
				m->reason = xstrndup((const char *)r + 24, bounded_len((const char *)r + 24, len - 24));
			}
			break;
		case WEFT_M_NOTE:
			p->notes = xrealloc(p->notes, (p->nnotes + 1) * sizeof(*p->notes));
			p->notes[p->nnotes++] = xstrndup((const char *)r, bounded_len((const char *)r, len));
			break;
		case WEFT_M_SOURCES:
			free(p->sources);
			p->sources = xstrndup((const char *)r, bounded_len((const char *)r, len));
			break;
		case WEFT_M_PROCESS_NAME:
			free(p->name);
			p->name = xstrndup((const char *)r, bounded_len((const char *)r, len));
			break;
		case WEFT_M_MAPS:
			if (len > 8) {
				p->maps = xrealloc(p->maps, p->maps_len + len - 8 + 2);
				memcpy(p->maps + p->maps_len, r + 8, len - 8);
				p->maps_len += len - 8;
				p->maps[p->maps_len++] = '\n';
				p->maps[p->maps_len] = 0;
			}
			break;
		case WEFT_M_OVERHEAD:
			if (len >= 16) {
				memcpy(&p->writer_cpu_ns, r, 8);
				memcpy(&p->slow_paths, r + 8, 8);
				p->has_overhead = 1;
			}
			break;
		case WEFT_M_WINDOW:
			if (len >= 80) {
				memcpy(p->window, r, 72);
				memcpy(&p->window_number, r + 72, 4);
				p->has_window = 1;
				free(p->window_reason);
				p->window_reason = strndup((const char *)r + 80, len - 80);
			}
			break;
		case WEFT_M_FUNC_FILTER:
			if (len >= 8)
				memcpy(&p->func_filtered, r, 8);
			break;
		case WEFT_M_DISABLED:
			if (len >= 8)
				memcpy(&p->disabled, r, 8);
			break;
		case WEFT_M_WRITE_FAILED:
			if (len >= 4)
				memcpy(&p->write_errno, r, 4);
			break;
		case WEFT_M_SIGNAL:
			if (len >= 16) {
				memcpy(&p->end_signal, r, 4);
				memcpy(&p->end_signal_tid, r + 4, 4);
				memcpy(&p->end_signal_ticks, r + 8, 8);
			}
			break;
		case WEFT_M_FORK:
			if (len >= 16) {
				memcpy(&p->fork_tid, r, 4);
				memcpy(&p->fork_ticks, r + 8, 8);
			}
			break;
		case WEFT_M_MEMORY:
			if (len >= 32) {
				uint32_t flags;
				memcpy(&flags, r, 4);
				p->mem_recorded = (flags & 1) != 0;
				p->mem_stacks = (flags & 2) != 0;
				memcpy(&p->mem_threshold, r + 8, 8);
				memcpy(&p->mem_sample, r + 16, 8);
				memcpy(&p->mem_sample_full, r + 24, 8);
				memcpy(&p->mem_nested_lost, r + 4, 4);
				p->mem_not_interposed = (flags & 4) != 0;
				free(p->mem_allocator);
				p->mem_allocator = len > 33 && r[32] ? xstrndup((const char *)r + 32, bounded_len((const char *)r + 32, len - 32)) : NULL;
			}
			break;
		case WEFT_M_COUNTERS:
			if (len >= 8) {
				uint32_t head[2];
				memcpy(head, r, 8);
				size_t o = 8;
				p->nctr = 0;
				p->ctr_flags = head[1];
				for (uint32_t k = 0; k < head[0] && k < 8 && o < len; k++) {
					size_t l = strnlen((const char *)r + o, len - o);
					snprintf(p->ctr_names[k], sizeof(p->ctr_names[k]), "%.*s", (int)l, (const char *)r + o);
					o += l + 1;
					p->nctr = k + 1;
				}
				if (p->nctr != head[0])
					p->nctr = 0; /* damaged: the values cannot be told apart */
			}
			break;
		case WEFT_M_ACCESS:
			if (len >= 32) {
				memcpy(&p->access_samples, r + 8, 8);
				memcpy(&p->access_lost, r + 16, 8);
				memcpy(&p->access_throttled, r + 24, 8);
				memcpy(&p->access_source, r, 4);
				if (len >= 40)
					memcpy(&p->access_own, r + 32, 8);
				p->has_access = 1;
			}
			break;
		case WEFT_M_SCHED:
			if (len >= 32) {
				uint32_t head[2], rd;
				memcpy(head, r, 8);
				memcpy(&p->sched_records, r + 8, 8);
				memcpy(&p->sched_lost, r + 16, 8);
				memcpy(&rd, r + 24, 4);
				memcpy(&p->sched_pinned, r + 28, 4);
				p->sched_mode = head[0];
				p->sched_cpus = head[1];
				p->sched_readers = rd;
				const char *str = (const char *)r + 32, *end = (const char *)r + len;
				char *dst[4] = {p->sched_release, p->sched_machine, p->sched_why, p->sched_sets};
				size_t cap[4] = {sizeof(p->sched_release), sizeof(p->sched_machine), sizeof(p->sched_why),
						 sizeof(p->sched_sets)};
				for (int k = 0; k < 4; k++) { /* (no sets before the readers' CPU sets) */
					size_t l = str < end ? bounded_len(str, (size_t)(end - str)) : 0;
					snprintf(dst[k], cap[k], "%.*s", (int)l, str);
					str += l + 1;
				}
				if (str < end && (size_t)(end - str) >= 8) /* (absent before it was counted) */
					memcpy(&p->sched_unreported, str, 8);
				p->has_sched = 1;
			}
			break;
		case WEFT_M_WATCH:
			if (len >= 16) {
				uint32_t head[2];
				memcpy(head, r, 8);
				memcpy(&p->watch_lost, r + 8, 8);
				p->watch_unwatched = head[1];
				size_t nw = head[0] < 4 ? head[0] : 4, o = 16;
				if (len < o + nw * 24)
					break;
				for (size_t k = 0; k < nw; k++, o += 24) {
					struct weft_watch_total *w = &p->watches[k];
					memcpy(&w->addr, r + o, 8);
					memcpy(&w->len, r + o + 8, 4);
					memcpy(&w->source, r + o + 12, 4);
					memcpy(&w->hits, r + o + 16, 8);
					w->name[0] = 0;
				}
				for (size_t k = 0; k < nw && o < len; k++) {
					size_t l = bounded_len((const char *)r + o, len - o);
					snprintf(p->watches[k].name, sizeof(p->watches[k].name), "%.*s", (int)l, (const char *)r + o);
					o += l + 1;
				}
				p->nwatches = nw;
				p->has_watch = 1;
			}
			break;
		case WEFT_M_RUSAGE:
			if (len >= 24) {
				memcpy(&p->max_rss, r, 8);
				memcpy(&p->user_ns, r + 8, 8);
				memcpy(&p->sys_ns, r + 16, 8);
				p->has_rusage = 1;
			}
			break;
		case WEFT_M_SYS_SOURCE:
			if (len >= 24) {
				uint32_t w[2];
				memcpy(w, r, 8);
				if (w[0] >= WEFT_SYS_NSOURCES)
					break;
				struct weft_sys_src_def *sd = &p->sys_sources[w[0]];
				sd->present = 1;
				sd->state = w[1];
				memcpy(&sd->period_ns, r + 8, 8);
				memcpy(&sd->tid, r + 16, 4);
				free(sd->text);
				sd->text = xstrndup((const char *)r + 24, bounded_len((const char *)r + 24, len - 24));
			}
			break;
		case WEFT_M_SYS_CHANNEL:
			if (len >= 24) {
				struct weft_sys_chan_def c = {0};
				uint16_t k;
				memcpy(&c.id, r, 4);
				memcpy(&k, r + 4, 2);
				c.kind = k;
				memcpy(&c.index, r + 8, 4);
				memcpy(&c.aux, r + 16, 8);
				c.name = xstrndup((const char *)r + 24, bounded_len((const char *)r + 24, len - 24));
				p->sys_chans = xrealloc(p->sys_chans, (p->nsys_chans + 1) * sizeof(c));
				p->sys_chans[p->nsys_chans++] = c;
			}
			break;
		case WEFT_M_SYS_OVERHEAD:
			if (len >= 24) {
				memcpy(&p->sys_cpu_ns, r, 8);
				memcpy(&p->sys_wall_ns, r + 8, 8);
				memcpy(&p->sys_rounds, r + 16, 8);
				p->has_sys_overhead = 1;
			}
			break;
		case WEFT_M_GPU:
			if (len >= 48) {
				uint32_t w[2], nt;
				memcpy(w, r, 8);
				p->has_gpu = 1;
				p->gpu_state = w[0];
				nt = w[1] > WEFT_GPU_MAX_TIDS ? WEFT_GPU_MAX_TIDS : w[1];
				if (48 + 4 * (size_t)nt > len)
					nt = (uint32_t)((len - 48) / 4);
				memcpy(&p->gpu_records, r + 8, 8);
				memcpy(&p->gpu_dropped, r + 16, 8);
				memcpy(&p->gpu_buffers, r + 24, 8);
				memcpy(&p->gpu_api_calls, r + 32, 8);
				memcpy(&p->cupti_version, r + 40, 4);
				p->gpu_ntids = nt;
				memcpy(p->gpu_tids, r + 48, 4 * (size_t)nt);
				size_t off = 48 + 4 * (size_t)w[1];
				if (off < len) {
					size_t tl = bounded_len((const char *)r + off, len - off);
					if (tl >= sizeof(p->gpu_text))
						tl = sizeof(p->gpu_text) - 1;
					memcpy(p->gpu_text, r + off, tl);
					p->gpu_text[tl] = 0;
				}
			}
			break;
		case WEFT_M_GPU_CLOCK:
			if (len >= 24) {
				struct weft_gpu_clock_pt c;
				uint64_t b1;
				memcpy(&c.gpu_ns, r, 8);
				memcpy(&c.boot_ns, r + 8, 8);
				memcpy(&b1, r + 16, 8);
				if (b1 < c.boot_ns)
					break;
				c.width = b1 - c.boot_ns;
				c.boot_ns += c.width / 2;
				if (!(p->ngpu_clock & (p->ngpu_clock + 1))) /* 0, 1, 3, 7, ...: double */
					p->gpu_clock = xrealloc(p->gpu_clock, (2 * p->ngpu_clock + 2) * sizeof(c));
				p->gpu_clock[p->ngpu_clock++] = c;
			}
			break;
		case WEFT_M_GPU_DEVICE:
			if (len >= 64) {
				struct weft_gpu_device_def d;
				memset(&d, 0, sizeof(d));
				uint32_t w[12];
				memcpy(w, r, sizeof(w));
				d.id = w[0];
				d.sms = w[1];
				d.cc_major = w[2];
				d.cc_minor = w[3];
				d.max_warps_sm = w[4];
				d.max_blocks_sm = w[5];
				d.max_shared_sm = w[6];
				d.max_regs_sm = w[7];
				d.max_regs_block = w[8];
				d.max_shared_block = w[9];
				d.max_threads_block = w[10];
				d.warp_size = w[11];
				memcpy(&d.global_mem, r + 48, 8);
				memcpy(&d.clock_khz, r + 56, 4);
				size_t tl = bounded_len((const char *)r + 64, len - 64);
				if (tl >= sizeof(d.name))
					tl = sizeof(d.name) - 1;
				memcpy(d.name, r + 64, tl);
				size_t k;
				for (k = 0; k < p->ngpu_devices; k++)
					if (p->gpu_devices[k].id == d.id)
						break;
				if (k == p->ngpu_devices)
					p->gpu_devices = xrealloc(p->gpu_devices, ++p->ngpu_devices * sizeof(d));
				p->gpu_devices[k] = d;
			}
			break;
		case WEFT_M_FINISH:
			if (len >= sizeof(p->fin)) {
				memcpy(p->fin, r, sizeof(p->fin));
				p->finished = 1;
			}
			break;
		default:
			break; /* a newer minor version's record: skip */
		}
	}
}

static void add_chunk(struct weft_proc *p, const struct weft_chunk_header *h, const unsigned char *payload)
{
	struct weft_thread_data *th = thread_get(p, h->tid, (uint32_t)(h->seq >> WEFT_SEQ_SERIAL_SHIFT));
	if (th->nchunks == th->cap) {
		th->cap = th->cap ? th->cap * 2 : 16;
		th->chunks = xrealloc(th->chunks, th->cap * sizeof(*th->chunks));
	}
	struct weft_chunk_view *c = &th->chunks[th->nchunks++];
	memset(c, 0, sizeof(*c));
	c->seq = h->seq;
	c->events = h->events;
	c->dropped = h->dropped;
	c->stored = payload;
	c->stored_size = h->stored_size;
	c->raw_size = h->raw_size;
	c->flags = h->flags;
	p->bytes_stored += h->stored_size + sizeof(*h);
	p->nchunks_read++;
}

static int frame_ok(const unsigned char *d, size_t n, size_t off, struct weft_chunk_header *h)
{
	if (n - off < sizeof(*h))
		return 0;
	memcpy(h, d + off, sizeof(*h));
	if (h->magic != WEFT_CHUNK_MAGIC || h->raw_size > WEFT_MAX_CHUNK || h->raw_size % 8 ||
	    h->stored_size > WEFT_MAX_CHUNK || h->stored_size > n - off - sizeof(*h))
		return 0;
	if (!(h->flags & WEFT_CHUNK_ZSTD) && !weft_chunk_packing(h->flags) && h->stored_size != h->raw_size)
		return 0;
	return weft_chunk_sum(h->flags, d + off + sizeof(*h), h->stored_size) == h->checksum;
}

static void parse_events(struct weft_trace *t, const char *name, const unsigned char *d, size_t n,
			 const char *stem, int pid)
{
	struct weft_proc *p = proc_get(t, stem, pid);
	size_t off = sizeof(struct weft_file_header);
	while (off < n) {
		struct weft_chunk_header h;
		if (frame_ok(d, n, off, &h)) {
			add_chunk(p, &h, d + off + sizeof(h));
			off += sizeof(h) + h.stored_size;
			continue;
		}
		/* Cut short (the last frame incomplete) or corrupt: look for the next good frame. */
		size_t bad = off, next = off + 1;
		int found = 0;
		for (; next + sizeof(h) <= n; next++) {
			uint32_t m;
			memcpy(&m, d + next, 4);
			if (m == WEFT_CHUNK_MAGIC && frame_ok(d, n, next, &h)) {
				found = 1;
				break;
			}
		}
		if (!found) {
			struct weft_chunk_header partial;
			memcpy(&partial, d + bad, n - bad < sizeof(partial) ? 0 : sizeof(partial));
			weft_trace_warn(t, "%s: truncated or damaged after offset %zu (%zu bytes unreadable); "
			     "kept everything before it", name, bad, n - bad);
			break;
		}
		weft_trace_warn(t, "%s: damaged bytes %zu-%zu skipped", name, bad, next);
		p->bad_chunks++;
		off = next;
	}
}

/* What weft_records_prepare does to one record; inlined into the unpacking loop. */
struct prep_ctx {
	const struct weft_proc *p;
	uint64_t last_addr;
	uint32_t last_id;
};

static inline void prepare_rec(uint64_t *r, void *ctx)
{
	struct prep_ctx *x = ctx;
	uint64_t h = r[1];
	unsigned type = weft_rec_type(h);
	if (!weft_rec_has_ticks(type))
		return; /* complete records hold ns already; args and flows hold values */
	r[0] = weft_proc_ns(x->p, r[0]);
	if (type == WEFT_R_FUNC_ENTER || type == WEFT_R_FUNC_EXIT) {
		uint64_t a = weft_rec_addr(h);
		if (a != x->last_addr) {
			x->last_addr = a;
			x->last_id = weft_func_id(x->p, a);
		}
		/* the extra words (counters, 1.5) stay */
		r[1] = (h & (0xffull << 40)) | ((uint64_t)type << 32) | x->last_id;
	}
}

void weft_records_prepare(const struct weft_proc *p, uint64_t *r, size_t n)
{
	struct prep_ctx x = {.p = p};
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1]))
		prepare_rec(r + i, &x);
}

/* A chunk of a host aligned onto another's clock (hosts.h): the records that hold BOOTTIME ns
 * themselves get the correction, those that name a tid or this process's pid the unique one. */
static void fix_records(const struct weft_ns_fix *f, uint64_t *r, size_t n)
{
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(r[i + 1])) {
		uint64_t h = r[i + 1];
		switch (weft_rec_type(h)) {
		case WEFT_R_COMPLETE:
			r[i] = weft_ns_fix_apply(f, r[i]);
			if (weft_rec_extra(h) && i + 3 <= n)
				r[i + 2] = weft_ns_fix_apply(f, r[i + 2]);
			break;
		case WEFT_R_ACCESS: {
			uint32_t tid = weft_rec_id(h);
			if (tid && tid < (1u << 22))
				r[i + 1] = (h & ~0xffffffffull) | (tid | f->id_or);
		}
			/* fall through */
		case WEFT_R_SCHED:
		case WEFT_R_SAMPLE:
			r[i] = weft_ns_fix_apply(f, r[i]);
			break;
		case WEFT_R_FLOW_OUT:
		case WEFT_R_FLOW_IN: /* a CUDA call's arrow: weft_gpu_flow_id(pid, correlation) */
			if ((r[i] >> 63) && (uint32_t)((r[i] >> 32) & 0x7fffffff) == f->pid_from)
				r[i] = weft_gpu_flow_id(f->pid_to, (uint32_t)r[i]);
			break;
		default:
			break;
		}
	}
}

static int decode(const struct weft_chunk_view *c, const struct weft_proc *prep, uint64_t **buf, size_t *cap,
		  size_t *nwords, const char **why)
{
	*nwords = 0;
	/* packed records are decompressed behind the room for the words, then unpacked forward */
	int fmt = weft_chunk_packing(c->flags);
	size_t packed_room = fmt ? weft_pack_bound(c->raw_size / 8) : 0;
	size_t need = c->raw_size + packed_room + 8;
	if (need > *cap) {
		uint64_t *b = realloc(*buf, need);
		if (!b) {
			*why = "out of memory";
			return -ENOMEM;
		}
		*buf = b;
		*cap = need;
	}
	uint64_t *w = *buf;
	uint8_t *dst = fmt ? (uint8_t *)w + c->raw_size : (uint8_t *)w;
	size_t room = fmt ? packed_room : c->raw_size, got = c->stored_size;
	if (c->flags & WEFT_CHUNK_ZSTD) {
		got = ZSTD_decompress(dst, room, c->stored, c->stored_size);
		if (ZSTD_isError(got) || (!fmt && got != c->raw_size)) {
			*why = ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size mismatch";
			return -EBADMSG;
		}
	} else if (c->stored_size) {
		if (c->stored_size > room) {
			*why = "size mismatch";
			return -EBADMSG;
		}
		memcpy(dst, c->stored, c->stored_size);
	}
	size_t n = c->raw_size / 8, i = 0;
	if (fmt) {
		struct prep_ctx x = {.p = prep};
		size_t words;
		if (!prep)
			words = weft_unpack(dst, got, w, n, fmt, 1);
		else if (fmt == 3)
			words = weft_unpack_each(dst, got, w, n, 3, 1, prepare_rec, &x);
		else if (fmt == 2)
			words = weft_unpack_each(dst, got, w, n, 2, 1, prepare_rec, &x);
		else
			words = weft_unpack_each(dst, got, w, n, 1, 1, prepare_rec, &x);
		if (words != n) {
			*why = "bad packed records";
			return -EBADMSG;
		}
		*nwords = n; /* weft_unpack wrote whole records only */
		if (c->fix)
			fix_records(c->fix, w, n);
		return 0;
	}
	uint64_t prev = 0;
	while (i + 2 <= n) {
		uint64_t h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (i + 2 + extra > n)
			break;
		if (weft_rec_has_ticks(type)) {
			prev += w[i];
			w[i] = prev;
		}
		i += 2 + extra;
	}
	*nwords = i;
	if (c->fix)
		fix_records(c->fix, w, i);
	if (prep)
		weft_records_prepare(prep, w, i);
	return 0;
}

int weft_chunk_decode(const struct weft_chunk_view *c, uint64_t **buf, size_t *cap, size_t *nwords,
		      const char **why)
{
	return decode(c, NULL, buf, cap, nwords, why);
}

int weft_chunk_decode_prepared(const struct weft_chunk_view *c, const struct weft_proc *p, uint64_t **buf,
			       size_t *cap, size_t *nwords, const char **why)
{
	return decode(c, p, buf, cap, nwords, why);
}

int weft_chunk_headers(const struct weft_chunk_view *c, uint64_t **buf, size_t *cap,
		       void (*fn)(uint64_t h, void *ud), void *ud, const char **why)
{
	int fmt = weft_chunk_packing(c->flags);
	if (fmt) { /* literal headers are all there is to see: no unpacking */
		const uint8_t *packed = c->stored;
		size_t got = c->stored_size;
		if (c->flags & WEFT_CHUNK_ZSTD) {
			size_t room = weft_pack_bound(c->raw_size / 8);
			if (room > *cap) {
				uint64_t *b = realloc(*buf, room);
				if (!b) {
					*why = "out of memory";
					return -ENOMEM;
				}
				*buf = b;
				*cap = room;
			}
			got = ZSTD_decompress(*buf, room, c->stored, c->stored_size);
			if (ZSTD_isError(got)) {
				*why = ZSTD_getErrorName(got);
				return -EBADMSG;
			}
			packed = (const uint8_t *)*buf;
		}
		if (weft_unpack_headers(packed, got, fmt, fn, ud)) {
			*why = "bad packed records";
			return -EBADMSG;
		}
		return 0;
	}
	size_t n;
	int rc = weft_chunk_decode(c, buf, cap, &n, why);
	if (rc)
		return rc;
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra((*buf)[i + 1]))
		fn((*buf)[i + 1], ud);
	return 0;
}

static int cmp_chunk(const void *a, const void *b)
{
	const struct weft_chunk_view *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void setup_clock(struct weft_trace *t, struct weft_proc *p)
{
	p->mult = (unsigned __int128)1 << 32;
	p->base_ticks = p->base_ns = 0;
	if (p->clock_kind == 0 && p->has_meta)
		return;
	if (p->nclock >= 2) {
		struct weft_clock_pt *a = &p->clock[0], *b = &p->clock[p->nclock - 1];
		for (size_t i = 0; i < p->nclock; i++) {
			if (p->clock[i].ticks < a->ticks)
				a = &p->clock[i];
			if (p->clock[i].ticks > b->ticks)
				b = &p->clock[i];
		}
		if (b->ticks > a->ticks && b->boot_ns > a->boot_ns) {
			p->base_ticks = a->ticks;
			p->base_ns = a->boot_ns;
			p->mult = ((unsigned __int128)(b->boot_ns - a->boot_ns) << 32) / (b->ticks - a->ticks);
			return;
		}
	}
	if (p->nclock >= 1) {
		p->base_ticks = p->clock[0].ticks;
		p->base_ns = p->clock[0].boot_ns;
		if (p->nominal_hz) {
			p->mult = ((unsigned __int128)1000000000u << 32) / p->nominal_hz;
			weft_trace_warn(t, "process %d: one clock calibration point; using the nominal %llu Hz", p->pid,
			     (unsigned long long)p->nominal_hz);
			return;
		}
	}
	weft_trace_warn(t, "process %d: no usable clock calibration; timestamps are raw ticks", p->pid);
}

/* Widen [first, last] by the times in one chunk. */
static void span_of(struct weft_trace *t, const struct weft_proc *p, const struct weft_chunk_view *c,
		    uint64_t **buf, size_t *cap)
{
	size_t n;
	const char *why;
	if (weft_chunk_decode(c, buf, cap, &n, &why)) {
		weft_trace_warn(t, "process %d: chunk %llu cannot be decoded (%s)", p->pid, (unsigned long long)c->seq, why);
		return;
	}
	const uint64_t *w = *buf;
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(w[i + 1])) {
		unsigned type = weft_rec_type(w[i + 1]);
		uint64_t ns, end;
		if (type == WEFT_R_COMPLETE || type == WEFT_R_ACCESS || type == WEFT_R_SCHED ||
		    type == WEFT_R_SAMPLE) /* already ns */
			ns = end = w[i];
		else if (weft_rec_has_ticks(type))
			ns = end = weft_proc_ns(p, w[i]);
		else /* arguments, flows, a stack's hash: no time of their own */
			continue;
		if (type == WEFT_R_COMPLETE && weft_rec_extra(w[i + 1]) && w[i + 2] > end)
			end = w[i + 2];
		if (ns < t->first_ns)
			t->first_ns = ns;
		if (end > t->last_ns)
			t->last_ns = end;
	}
}

/* Sites with a source location give their events the arguments "file" and "line": their keys
 * are two sites added here (after every defined one). A SOURCE record for an undefined site
 * (a damaged file) is dropped. */
static void add_source_keys(struct weft_proc *p)
{
	int any = 0;
	for (size_t i = 1; i < p->nsites; i++) {
		struct weft_site_def *s = &p->sites[i];
		if (s->file && !s->defined) {
			free(s->file);
			s->file = NULL;
		}
		any |= s->file != NULL;
	}
	if (!any)
		return;
	p->key_file = weft_proc_add_site(p, "file", "");
	p->key_line = weft_proc_add_site(p, "line", "");
	if (p->key_file && p->key_line)
		p->sites[p->key_file].kind = p->sites[p->key_line].kind = WEFT_KIND_ARG;
	else
		p->key_file = p->key_line = 0;
}

static int finish(struct weft_trace *t, const struct weft_window_req *win, char *err, size_t errlen)
{
	uint64_t *buf = NULL;
	size_t cap = 0;
	t->first_ns = UINT64_MAX;
	t->last_ns = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		struct weft_proc *p = &t->procs[i];
		if (!p->has_meta)
			weft_trace_warn(t, "process %d: no metadata file; names are unknown", p->pid);
		setup_clock(t, p);
		uint64_t missing_chunks = 0, events_read = 0;
		uint32_t missing_tid = 0;
		for (size_t k = 0; k < p->nthreads; k++) {
			struct weft_thread_data *th = &p->threads[k];
			if (th->nchunks)
				qsort(th->chunks, th->nchunks, sizeof(*th->chunks), cmp_chunk);
			size_t o = 0;
			uint64_t drops = 0;
			for (size_t c = 0; c < th->nchunks; c++) {
				if (o && th->chunks[o - 1].seq == th->chunks[c].seq) {
					weft_trace_warn(t, "process %d thread %u: chunk %llu appears twice; kept the first",
					     p->pid, th->tid, (unsigned long long)th->chunks[c].seq);
					continue;
				}
				th->chunks[o++] = th->chunks[c];
				th->events += th->chunks[c].events;
				drops += th->chunks[c].dropped;
				p->bytes_raw += th->chunks[c].raw_size;
			}
			th->nchunks = o;
			if (drops > th->dropped)
				th->dropped = drops;
			/* chunk numbers run 0..n-1 per thread: gaps, and the count THREAD_END gives, say
			 * what was handed to the writers and is not here (deleted or cut out) */
			uint64_t expect = o ? (th->chunks[o - 1].seq & WEFT_SEQ_INDEX_MASK) + 1 : 0;
			if ((th->seq_end & WEFT_SEQ_INDEX_MASK) > expect)
				expect = th->seq_end & WEFT_SEQ_INDEX_MASK;
			if (expect > o) {
				missing_chunks += expect - o;
				if (!missing_tid)
					missing_tid = th->tid;
			}
			events_read += th->events;
			/* a thread's records are in time order: its first and last chunk bound it
			 * (complete slices, whose times the program gives, may reach further) */
			if (o)
				span_of(t, p, &th->chunks[0], &buf, &cap);
			if (o > 1)
				span_of(t, p, &th->chunks[o - 1], &buf, &cap);
			if (!th->name) {
				char name[32];
				snprintf(name, sizeof(name), "thread %u", th->tid);
				th->name = strdup(name);
			}
		}
		attach_index(p);
		if (p->write_errno) {
			/* the runtime said so: those chunks were never written, and counted as dropped */
		} else if (missing_chunks) {
			weft_trace_warn(t, "process %d: %llu chunks missing (first in thread %u): the events files "
				    "were cut or deleted; their events are not in the trace", p->pid,
				    (unsigned long long)missing_chunks, missing_tid);
		} else if (p->finished && p->fin[0] > events_read) {
			weft_trace_warn(t, "process %d: %llu of %llu recorded events missing: an events file was "
				    "cut or deleted", p->pid, (unsigned long long)(p->fin[0] - events_read),
				    (unsigned long long)p->fin[0]);
		}
		if (!p->name) {
			if (p->argc > 0) {
				const char *b = strrchr(p->argv[0], '/');
				p->name = strdup(b ? b + 1 : p->argv[0]);
			} else {
				char name[32];
				snprintf(name, sizeof(name), "process %d", p->pid);
				p->name = strdup(name);
			}
		}
	}
	if (t->first_ns == UINT64_MAX)
		t->first_ns = t->last_ns = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		add_source_keys(&t->procs[i]);
	if (weft_hosts_align(t)) { /* other hosts' times moved: the span again */
		t->first_ns = UINT64_MAX;
		t->last_ns = 0;
		for (size_t i = 0; i < t->nprocs; i++)
			for (size_t k = 0; k < t->procs[i].nthreads; k++) {
				struct weft_thread_data *th = &t->procs[i].threads[k];
				if (th->nchunks)
					span_of(t, &t->procs[i], &th->chunks[0], &buf, &cap);
				if (th->nchunks > 1)
					span_of(t, &t->procs[i], &th->chunks[th->nchunks - 1], &buf, &cap);
			}
		if (t->first_ns == UINT64_MAX)
			t->first_ns = t->last_ns = 0;
	}
	free(buf);
	/* a time window first: then only its chunks are looked at for function addresses */
	if (win) {
		int rc = weft_trace_window_apply(t, win, err, errlen);
		if (rc)
			return rc;
	}
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].maps)
			weft_symbolize(t, &t->procs[i]);
	return 0;
}

/* The pid in a file name whose header lost it: "PID[.N]..." or "HOST-rRANK-PID[.N]..." */
static int pid_of(const char *name)
{
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	char stem[320];
	snprintf(stem, sizeof(stem), "%s", base);
	char *dot = strrchr(stem, '.'); /* .wmeta, .wevents */
	if (dot)
		*dot = 0;
	if (dot && !strcmp(dot + 1, "wevents") && strrchr(stem, '-'))
		*strrchr(stem, '-') = 0; /* -K */
	const char *r = strstr(stem, "-r");
	for (const char *q = r; q; q = strstr(q + 1, "-r"))
		r = q; /* the last "-r", then the pid after its '-' */
	const char *pid = r && strchr(r + 2, '-') ? strchr(r + 2, '-') + 1 : stem;
	return atoi(pid);
}

static int load(struct weft_trace *t, const char *const *names, const unsigned char *const *data,
		const size_t *sizes, size_t n, const struct weft_window_req *win, char *err, size_t errlen)
{
	size_t used = 0;
	for (int pass = 0; pass < 2; pass++) /* metadata first, so events see their process */
		for (size_t i = 0; i < n; i++) {
			const char *dot = strrchr(names[i], '.');
			if (!dot)
				continue;
			int is_meta = !strcmp(dot, ".wmeta"), is_ev = !strcmp(dot, ".wevents");
			if ((pass == 0 && !is_meta) || (pass == 1 && !is_ev))
				continue;
			int rc = check_header(t, names[i], data[i], sizes[i],
					      is_meta ? WEFT_META_MAGIC : WEFT_EVENTS_MAGIC, err, errlen);
			if (rc < 0)
				return -EPROTO;
			if (rc > 0)
				continue;
			struct weft_file_header h;
			memcpy(&h, data[i], sizeof(h));
			int pid = h.pid ? (int)h.pid : pid_of(names[i]);
			/* the stem: "P[.N]" (HOST-rR-P[.N] in a job) of "P[.N].wmeta" and "P[.N]-K.wevents",
			 * with the "DIR#/" a load of several directories puts before each name */
			char stem[320];
			const char *base = strrchr(names[i], '/') ? strrchr(names[i], '/') + 1 : names[i];
			const char *end = is_meta ? dot : strrchr(base, '-');
			size_t sl = end && end > base ? (size_t)(end - names[i]) : strlen(names[i]);
			snprintf(stem, sizeof(stem), "%.*s", (int)(sl < sizeof(stem) ? sl : sizeof(stem) - 1), names[i]);
			if (is_meta)
				parse_meta(t, names[i], data[i], sizes[i], stem, pid);
			else
				parse_events(t, names[i], data[i], sizes[i], stem, pid);
			used++;
		}
	if (!used) {
		snprintf(err, errlen, "%s: no weft trace files (*.wmeta, *.wevents) found", t->dir);
		return -ENOENT;
	}
	return finish(t, win, err, errlen);
}

int weft_trace_from_buffers(const char *const *names, const unsigned char *const *data,
			    const size_t *sizes, size_t n, struct weft_trace **out, char *err, size_t errlen)
{
	struct weft_trace *t = xcalloc(1, sizeof(*t));
	t->dir = strdup("(memory)");
	int rc = load(t, names, data, sizes, n, NULL, err, errlen);
	if (rc) {
		weft_trace_free(t);
		return rc;
	}
	weft_trace_warn_close(t);
	*out = t;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The trace files of dir, sorted, appended to *names; with a prefix ("2/") when several
 * directories are read, so their stems (a pid on two hosts) stay apart. 0 or -errno. */
static int list_dir(const char *dir, const char *prefix, char ***names, size_t *n, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		snprintf(err, errlen, "%s: %s", dir, strerror(e));
		return -e;
	}
	size_t first = *n;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (weft_is_trace_file(e->d_name)) {
			*names = xrealloc(*names, (*n + 1) * sizeof(**names));
			size_t l = strlen(prefix) + strlen(e->d_name) + 1;
			char *nm = xcalloc(1, l);
			snprintf(nm, l, "%s%s", prefix, e->d_name);
			(*names)[(*n)++] = nm;
		}
	}
	closedir(d);
	if (*n > first)
		qsort(*names + first, *n - first, sizeof(**names), cmp_str);
	return 0;
}

int weft_trace_open_dirs(const char *const *dirs, size_t ndirs, struct weft_trace **out, char *err,
			 size_t errlen)
{
	return weft_trace_open_window(dirs, ndirs, NULL, out, err, errlen);
}

int weft_trace_open_window(const char *const *dirs, size_t ndirs, const struct weft_window_req *win,
			   struct weft_trace **out, char *err, size_t errlen)
{
	if (!ndirs) {
		snprintf(err, errlen, "no trace directory given");
		return -EINVAL;
	}
	char **names = NULL;
	size_t n = 0, *from = NULL; /* from[i]: the directory of names[i] */
	for (size_t k = 0; k < ndirs; k++) {
		char prefix[32] = "";
		if (ndirs > 1)
			snprintf(prefix, sizeof(prefix), "%zu/", k);
		size_t before = n;
		int rc = list_dir(dirs[k], prefix, &names, &n, err, errlen);
		if (!rc && n == before && ndirs > 1) {
			snprintf(err, errlen, "%s: no weft trace files (*.wmeta, *.wevents) found", dirs[k]);
			rc = -ENOENT;
		}
		if (rc) {
			for (size_t i = 0; i < n; i++)
				free(names[i]);
			free(names);
			free(from);
			return rc;
		}
		from = xrealloc(from, (n + 1) * sizeof(*from));
		for (size_t i = before; i < n; i++)
			from[i] = k;
	}
	struct weft_trace *t = xcalloc(1, sizeof(*t));
	t->dir = strdup(dirs[0]);
	unsigned char **data = xcalloc(n, sizeof(*data));
	size_t *sizes = xcalloc(n, sizeof(*sizes));
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		const char *base = ndirs > 1 ? strchr(names[i], '/') + 1 : names[i];
		snprintf(path, sizeof(path), "%s/%s", dirs[from[i]], base);
		/* O_NONBLOCK: a FIFO or device named like a trace file must not hang the reader */
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		struct stat st;
		if (fd < 0 || fstat(fd, &st)) {
			weft_trace_warn(t, "%s: %s; skipped", names[i], strerror(errno));
			if (fd >= 0)
				close(fd);
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			weft_trace_warn(t, "%s: not a regular file; skipped", names[i]);
			close(fd);
			continue;
		}
		data[i] = xcalloc(1, (size_t)st.st_size + 1);
		size_t got = 0;
		while (got < (size_t)st.st_size) {
			ssize_t r = read(fd, data[i] + got, (size_t)st.st_size - got);
			if (r <= 0)
				break;
			got += (size_t)r;
		}
		sizes[i] = got;
		close(fd);
	}
	free(from);
	t->blobs = (void **)data;
	t->nblobs = n;
	int rc = load(t, (const char *const *)names, (const unsigned char *const *)data, sizes, n, win, err, errlen);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(sizes);
	if (rc) {
		weft_trace_free(t);
		return rc;
	}
	weft_trace_warn_close(t);
	*out = t;
	return 0;
}

int weft_trace_open(const char *dir, struct weft_trace **out, char *err, size_t errlen)
{
	return weft_trace_open_dirs(&dir, 1, out, err, errlen);
}

static void proc_free(struct weft_proc *p)
{
	for (size_t k = 0; k < p->nthreads; k++) {
		free(p->threads[k].chunks);
		free(p->threads[k].name);
	}
	free(p->threads);
	free(p->thkey);
	free(p->thidx);
	for (size_t s = 0; s < p->nsites; s++) {
		free(p->sites[s].name);
		free(p->sites[s].cat);
		free(p->sites[s].unit);
		free(p->sites[s].file);
	}
	free(p->sites);
	for (size_t s = 0; s < p->ntracks; s++)
		free(p->tracks[s]);
	free(p->tracks);
	for (int a = 0; a < p->argc; a++)
		free(p->argv[a]);
	free(p->argv);
	free(p->clock);
	free(p->maps);
	for (size_t c = 0; c < p->nsys_chans; c++)
		free(p->sys_chans[c].name);
	free(p->sys_chans);
	free(p->gpu_clock);
	free(p->gpu_devices);
	for (size_t c = 0; c < WEFT_SYS_NSOURCES; c++)
		free(p->sys_sources[c].text);
	free(p->func_addr);
	free(p->func_id);
	free(p->name);
	for (size_t k = 0; k < p->nnotes; k++)
		free(p->notes[k]);
	free(p->notes);
	free(p->sources);
	for (size_t k = 0; k < p->nsnaps; k++)
		free(p->snaps[k].reason);
	free(p->snaps);
	free(p->host);
	free(p->window_reason);
	free(p->options);
	free(p->mem_allocator);
	free(p->job_id);
	free(p->job_launcher);
	free(p->mpi_library);
	free(p->clock_sync);
	free(p->index);
}

size_t weft_trace_keep(struct weft_trace *t, int (*keep)(const struct weft_proc *p, void *arg), void *arg)
{
	size_t o = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		if (keep(&t->procs[i], arg)) {
			if (o != i)
				t->procs[o] = t->procs[i];
			o++;
		} else {
			proc_free(&t->procs[i]);
		}
	}
	t->nprocs = o;
	return o;
}

void weft_trace_free(struct weft_trace *t)
{
	if (!t)
		return;
	weft_hosts_free(&t->hosts);
	for (size_t i = 0; i < t->nprocs; i++)
		proc_free(&t->procs[i]);
	free(t->procs);
	for (size_t i = 0; i < t->nwarnings; i++)
		free(t->warnings[i]);
	free(t->warnings);
	for (size_t i = 0; i < t->nblobs; i++)
		free(t->blobs[i]);
	free(t->blobs);
	free(t->dir);
	free(t);
}

const char *weft_snap_origin_name(uint32_t origin)
{
	static const char *const names[] = {"api", "command", "signal", "trigger", "fatal", "exit"};
	return origin < sizeof(names) / sizeof(names[0]) ? names[origin] : "unknown";
}

const char *weft_snap_refusal_name(uint32_t refused)
{
	static const char *const names[] = {"taken", "max-snapshots", "min-interval", "failed", "busy"};
	return refused < sizeof(names) / sizeof(names[0]) ? names[refused] : "unknown";
}
