/*
 * trace.c - the loaded trace as an object: its processes (one per file stem), their threads
 * (found through a hash table on (tid, serial)), call sites and tracks, the warnings collected
 * while reading (kept per kind, so a badly damaged trace gives a few lines), the out-of-memory
 * handler, and freeing it all. The files that fill it in are meta.c (metadata records),
 * chunks.c (events frames and their decoding) and reader.c (opening and finishing).
 */
#include "reader.h"
#include "reader-internal.h"
#include "blob.h"
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

void *weft_rd_xcalloc(size_t n, size_t s)
{
	void *p = calloc(n ? n : 1, s ? s : 1);
	if (!p)
		weft_oom("reading the trace");
	return p;
}

void *weft_rd_xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		weft_oom("reading the trace");
	return p;
}

char *weft_rd_xstrndup(const char *s, size_t n)
{
	char *r = weft_rd_xcalloc(1, n + 1);
	memcpy(r, s, n);
	return r;
}

static uint64_t stem_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The stems' hash table while files are read (t->stem_ix: index + 1 in t->procs, 0 free),
 * so that finding a process is not a walk of every rank's process; NULL afterwards. */
static size_t *stem_slot(struct weft_trace *t, const char *stem)
{
	size_t m = t->stem_cap - 1, h = (size_t)stem_hash(stem) & m;
	while (t->stem_ix[h] && strcmp(t->procs[t->stem_ix[h] - 1].stem, stem))
		h = (h + 1) & m;
	return &t->stem_ix[h];
}

void weft_rd_stems_done(struct weft_trace *t)
{
	free(t->stem_ix);
	t->stem_ix = NULL;
	t->stem_cap = 0;
}

/* One weft_proc per file stem (pid, or pid.N for an exec'd image). */
struct weft_proc *weft_rd_proc_get(struct weft_trace *t, const char *stem, int pid)
{
	if ((t->nprocs + 1) * 2 > t->stem_cap) { /* (re)built: at most half full */
		free(t->stem_ix);
		t->stem_cap = t->stem_cap ? t->stem_cap * 2 : 64;
		t->stem_ix = weft_rd_xcalloc(t->stem_cap, sizeof(*t->stem_ix));
		for (size_t i = 0; i < t->nprocs; i++)
			*stem_slot(t, t->procs[i].stem) = i + 1;
	}
	size_t *slot = stem_slot(t, stem);
	if (*slot)
		return &t->procs[*slot - 1];
	if (t->nprocs == t->proc_cap) {
		t->proc_cap = t->proc_cap ? t->proc_cap * 2 : 16;
		t->procs = weft_rd_xrealloc(t->procs, t->proc_cap * sizeof(*t->procs));
	}
	*slot = t->nprocs + 1;
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

struct weft_thread_data *weft_rd_thread_get(struct weft_proc *p, uint32_t tid, uint32_t serial)
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
		p->threads = weft_rd_xrealloc(p->threads, p->thread_cap * sizeof(*p->threads));
	}
	if ((p->nthreads + 1) * 2 > p->thcap) { /* grow the table, keep it at most half full */
		free(p->thkey);
		free(p->thidx);
		p->thcap = p->thcap ? p->thcap * 2 : 16;
		p->thkey = weft_rd_xcalloc(p->thcap, sizeof(*p->thkey));
		p->thidx = weft_rd_xcalloc(p->thcap, sizeof(*p->thidx));
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
void weft_rd_attach_index(struct weft_proc *p)
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
			th->chunks[lo].funcs_at = (uint32_t)(p->index_funcs[i] >> 32);
			th->chunks[lo].funcs_n = (uint32_t)p->index_funcs[i];
		}
	}
	free(p->index);
	free(p->index_funcs);
	p->index = NULL;
	p->index_funcs = NULL;
	p->nindex = p->index_cap = 0;
}

struct weft_site_def *weft_rd_site_slot(struct weft_proc *p, uint32_t id)
{
	if (id > 10000000)
		return NULL;
	if (id >= p->nsites) {
		size_t n = id + 64;
		p->sites = weft_rd_xrealloc(p->sites, n * sizeof(*p->sites));
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
	struct weft_site_def *s = weft_rd_site_slot(p, id);
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
	if (p->has_job && !p->rank_carrier)
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
	free(p->maps_z);
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
	free(p->index_funcs);
	free(p->ix_funcs);
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

uint64_t weft_proc_events(const struct weft_proc *p)
{
	uint64_t n = 0;
	for (size_t k = 0; k < p->nthreads; k++)
		n += p->threads[k].events;
	return n;
}

uint64_t weft_trace_events(const struct weft_trace *t)
{
	uint64_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		n += weft_proc_events(&t->procs[i]);
	return n;
}

void weft_trace_free(struct weft_trace *t)
{
	if (!t)
		return;
	weft_hosts_free(&t->hosts);
	for (size_t i = 0; i < t->nprocs; i++)
		proc_free(&t->procs[i]);
	free(t->procs);
	free(t->stem_ix);
	for (size_t i = 0; i < t->nwarnings; i++)
		free(t->warnings[i]);
	free(t->warnings);
	for (size_t i = 0; i < t->nblobs; i++)
		weft_blob_free(t->blobs[i]);
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
