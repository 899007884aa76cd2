/*
 * reader.c - trace directory -> struct weft_trace: lists and reads the files whole, hands each
 * to its parser (meta.c, chunks.c), then finishes the trace: chunks sorted, clocks set up,
 * spans measured. Chunks are decompressed and delta-decoded by two threads, since this is the
 * bulk of converting a large trace.
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

static int cmp_chunk(const void *a, const void *b)
{
	const struct weft_chunk_view *x = a, *y = b;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void setup_clock(struct weft_trace *t, struct weft_proc *p)
{
	p->mult = (unsigned __int128)1 << 32;
	p->base_ticks = p->base_ns = 0;
	if (p->clock_kind == 0 && p->has_meta) {
		if (!p->clock_said) /* a .wmeta cut before its second record: what the times count is unknown */
			weft_trace_warn(t, "process %d: its metadata has no clock record (cut short?); timestamps are read "
				       "as nanoseconds, which they may not be", p->pid);
		return;
	}
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

/* Images of one process (one pid on one host) in exec order. Their files are numbered per
 * name prefix (PID, PID.1, ...), and a process that became a job's rank by exec (its new
 * environment holds OMPI_COMM_WORLD_RANK) names its files HOST-rRANK-PID: two images numbered
 * 0, each listed with the other's. Where numbers repeat, the images are numbered again by
 * their start. */
static const struct weft_trace *img_t;
static int cmp_image(const void *a, const void *b)
{
	const struct weft_proc *x = &img_t->procs[*(const size_t *)a], *y = &img_t->procs[*(const size_t *)b];
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	int h = strcmp(x->host ? x->host : "", y->host ? y->host : "");
	if (h)
		return h;
	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->gen != y->gen)
		return x->gen < y->gen ? -1 : 1;
	return strcmp(x->stem, y->stem);
}

static void number_images(struct weft_trace *t)
{
	size_t *ix = malloc(t->nprocs * sizeof(*ix));
	if (!ix)
		return; /* (numbers as the files give them) */
	for (size_t i = 0; i < t->nprocs; i++)
		ix[i] = i;
	img_t = t;
	qsort(ix, t->nprocs, sizeof(*ix), cmp_image);
	for (size_t a = 0, b; a < t->nprocs; a = b) {
		const struct weft_proc *p = &t->procs[ix[a]];
		int repeat = 0;
		for (b = a + 1; b < t->nprocs; b++) {
			const struct weft_proc *q = &t->procs[ix[b]];
			if (q->pid != p->pid || strcmp(q->host ? q->host : "", p->host ? p->host : ""))
				break;
			for (size_t c = a; c < b && !repeat; c++)
				repeat = t->procs[ix[c]].gen == q->gen;
		}
		for (size_t c = a; repeat && c < b; c++)
			t->procs[ix[c]].gen = (int)(c - a);
	}
	free(ix);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

/* A process that has a rank from its launcher's environment but never called MPI_Init, where
 * another process of that rank did: it only carried the environment down to the rank's MPI
 * program (mpirun -np 2 ./wrapper.sh ./app: the shell, unshare), and is not named as the rank.
 * In a job without MPI every process of a rank keeps its name. */
static void mark_rank_carriers(struct weft_trace *t)
{
	uint32_t *ranks = malloc((t->nprocs + 1) * sizeof(*ranks));
	size_t n = 0;
	if (!ranks)
		return;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].has_mpi && weft_proc_rank(&t->procs[i]) != WEFT_RANK_NONE)
			ranks[n++] = weft_proc_rank(&t->procs[i]);
	qsort(ranks, n, sizeof(*ranks), cmp_u32);
	for (size_t i = 0; n && i < t->nprocs; i++) {
		struct weft_proc *p = &t->procs[i];
		p->rank_carrier = p->has_job && !p->has_mpi && p->job_rank != WEFT_RANK_NONE &&
				  bsearch(&p->job_rank, ranks, n, sizeof(*ranks), cmp_u32);
	}
	free(ranks);
}

int weft_trace_rank_subset;

static const char *job_of(const struct weft_proc *p)
{
	return p->job_id ? p->job_id : "";
}

/* The ranks of a job that left no process in the trace (their files deleted, damaged past
 * reading who wrote them, or never written: a rank run without weft) are said in one warning
 * per job, unless the reader asked for some ranks only (weft_trace_rank_subset). A job is told
 * by its id; its size is MPI's, else the launcher's. */
static void warn_missing_ranks(struct weft_trace *t)
{
	if (weft_trace_rank_subset)
		return;
	const char **said = NULL; /* the jobs already looked at (a trace holds one job, or a few) */
	size_t nsaid = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		uint32_t size = p->has_mpi && p->mpi_size ? p->mpi_size : p->has_job ? p->job_size : 0;
		if (weft_proc_rank(p) == WEFT_RANK_NONE || !size || size > (1u << 24))
			continue;
		int first = 1; /* the first process of its job says it */
		for (size_t k = 0; k < nsaid && first; k++)
			first = strcmp(said[k], job_of(p)) != 0;
		if (!first)
			continue;
		const char **grown = realloc(said, (nsaid + 1) * sizeof(*said));
		unsigned char *seen = calloc(size, 1);
		if (!grown || !seen) {
			free(grown ? grown : said);
			free(seen);
			return;
		}
		said = grown;
		said[nsaid++] = job_of(p);
		for (size_t j = i; j < t->nprocs; j++) {
			uint32_t r = weft_proc_rank(&t->procs[j]);
			if (r < size && !strcmp(job_of(&t->procs[j]), job_of(p)))
				seen[r] = 1;
		}
		char list[256] = "";
		size_t len = 0;
		uint32_t missing = 0;
		for (uint32_t r = 0; r < size; r++) {
			if (seen[r])
				continue;
			uint32_t e = r;
			while (e + 1 < size && !seen[e + 1])
				e++;
			missing += e - r + 1;
			if (len + 32 < sizeof(list))
				len += (size_t)snprintf(list + len, sizeof(list) - len, e > r ? "%s%u-%u" : "%s%u",
							len ? "," : "", r, e);
			else if (!strstr(list, ",..."))
				len += (size_t)snprintf(list + len, sizeof(list) - len, ",...");
			r = e;
		}
		free(seen);
		if (missing)
			weft_trace_warn(t, "job %s: %s %s of %u not in the trace (no readable file of %s: deleted, "
				    "damaged, or run without weft)",
				    p->job_id && *p->job_id ? p->job_id : "(no id)", missing > 1 ? "ranks" : "rank", list,
				    size, missing > 1 ? "them" : "it");
	}
	free(said);
}

static int finish(struct weft_trace *t, const struct weft_window_req *win, char *err, size_t errlen)
{
	uint64_t *buf = NULL;
	size_t cap = 0;
	number_images(t);
	mark_rank_carriers(t);
	warn_missing_ranks(t);
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
		weft_rd_attach_index(p);
		if (p->write_errno) {
			/* the runtime said so: those chunks were never written, and counted as dropped */
		} else if (missing_chunks) {
			/* indexed before their frames were written: a process that never finished its
			 * trace (killed: SIGKILL, a launcher's) ended in between */
			weft_trace_warn(t, "process %d: %llu chunks missing (first in thread %u): %s; their events are "
				    "not in the trace", p->pid, (unsigned long long)missing_chunks, missing_tid,
				    p->finished ? "the events files were cut or deleted"
						: "the process ended while writing them, without finishing its trace (killed?)");
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
	for (size_t i = 0; i < t->nprocs && !weft_trace_defer_symbols; i++)
		if (t->procs[i].maps_len)
			weft_symbolize(t, &t->procs[i]);
	return 0;
}

int weft_trace_defer_symbols;

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


/* DIR holds no trace files: where it holds a flight recorder's snapshot-N (or --switch-output's
 * part-N) directories, each a trace, the error names them. */
static void no_trace_files(const char *dir, char *err, size_t errlen)
{
	static const char *const kind[2] = {"snapshot-", "part-"};
	unsigned lo[2] = {0, 0}, hi[2] = {0, 0};
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		for (int k = 0; k < 2; k++) {
			size_t l = strlen(kind[k]);
			char *end;
			if (strncmp(e->d_name, kind[k], l) || !*(e->d_name + l))
				continue;
			unsigned long n = strtoul(e->d_name + l, &end, 10);
			if (*end || !n || n > 0xffffffffu)
				continue;
			if (!lo[k] || n < lo[k])
				lo[k] = (unsigned)n;
			if (n > hi[k])
				hi[k] = (unsigned)n;
		}
	if (d)
		closedir(d);
	int k = lo[0] ? 0 : lo[1] ? 1 : -1;
	if (k < 0)
		snprintf(err, errlen, "%s: no weft trace files (*.wmeta, *.wevents) found", dir);
	else
		snprintf(err, errlen, "%s: %s directory, no trace of its own: read one of its %s, %s/%sN (N = %u .. %u), "
			 "each a trace directory", dir, k ? "a --switch-output" : "a flight recorder",
			 k ? "parts" : "snapshots", dir, kind[k], lo[k], hi[k]);
}

/* Where load() gets a file's bytes: from memory (data[i], sizes[i] set), or read when its turn
 * comes (fetch), so that each metadata file is parsed and freed before the next is read. */
struct files {
	const unsigned char **data;
	size_t *sizes; /* metadata files' as stat saw them before reading; each file's as read */
	int (*fetch)(struct files *f, struct weft_trace *t, size_t i); /* 0: data[i] set */
	void (*drop)(struct files *f, size_t i);                        /* done with a metadata file */
	const char *const *dirs;
	const size_t *from; /* from[i]: the directory of names[i] */
	size_t ndirs;
	const char *const *names;
};

static int load(struct weft_trace *t, const char *const *names, struct files *fs, size_t n,
		const struct weft_window_req *win, char *err, size_t errlen)
{
	const unsigned char **data = fs->data;
	const size_t *sizes = fs->sizes;
	size_t used = 0;
	/* Call-site ids count up from 1 in a process and its forked children, each defined by one
	 * SITE record (16 bytes at least) in one of the metadata files: an id beyond what all of
	 * them could hold is damage, refused before it sizes a site table (a 1 KiB file once made
	 * one of 10 M entries). Generous: twice that, and 4096 more. */
	uint64_t meta_bytes = 0;
	for (size_t i = 0; i < n; i++) {
		const char *dot = strrchr(names[i], '.');
		if (dot && !strcmp(dot, ".wmeta"))
			meta_bytes += sizes[i];
	}
	t->site_id_max = 4096 + 2 * (meta_bytes / (sizeof(struct weft_meta_rec_header) + 8));
	for (int pass = 0; pass < 2; pass++) /* metadata first, so events see their process */
		for (size_t i = 0; i < n; i++) {
			const char *dot = strrchr(names[i], '.');
			if (!dot)
				continue;
			int is_meta = !strcmp(dot, ".wmeta"), is_ev = !strcmp(dot, ".wevents");
			if ((pass == 0 && !is_meta) || (pass == 1 && !is_ev))
				continue;
			if (fs->fetch && fs->fetch(fs, t, i))
				continue;
			int rc = weft_rd_check_header(t, names[i], data[i], sizes[i],
					      is_meta ? WEFT_META_MAGIC : WEFT_EVENTS_MAGIC, err, errlen);
			if (rc < 0)
				return -EPROTO;
			if (rc > 0) {
				if (fs->drop)
					fs->drop(fs, i);
				continue;
			}
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
			if (is_meta) {
				weft_rd_parse_meta(t, names[i], data[i], sizes[i], stem, pid);
				if (fs->drop) /* everything kept was copied out of it */
					fs->drop(fs, i);
			} else
				weft_rd_parse_events(t, names[i], data[i], sizes[i], stem, pid);
			used++;
		}
	weft_rd_stems_done(t);
	if (!used) {
		no_trace_files(t->dir, err, errlen);
		return -ENOENT;
	}
	return finish(t, win, err, errlen);
}

int weft_trace_from_buffers(const char *const *names, const unsigned char *const *data,
			    const size_t *sizes, size_t n, struct weft_trace **out, char *err, size_t errlen)
{
	struct weft_trace *t = weft_rd_xcalloc(1, sizeof(*t));
	t->dir = strdup("(memory)");
	struct files fs = {.data = (const unsigned char **)data, .sizes = (size_t *)sizes};
	int rc = load(t, names, &fs, n, NULL, err, errlen);
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
			*names = weft_rd_xrealloc(*names, (*n + 1) * sizeof(**names));
			size_t l = strlen(prefix) + strlen(e->d_name) + 1;
			char *nm = weft_rd_xcalloc(1, l);
			snprintf(nm, l, "%s%s", prefix, e->d_name);
			(*names)[(*n)++] = nm;
		}
	}
	closedir(d);
	if (*n > first)
		qsort(*names + first, *n - first, sizeof(**names), cmp_str);
	return 0;
}

static const char *file_path(char *path, size_t len, const char *const *dirs, const size_t *from,
			     const char *const *names, size_t ndirs, size_t i)
{
	const char *base = ndirs > 1 ? strchr(names[i], '/') + 1 : names[i];
	snprintf(path, len, "%s/%s", dirs[from[i]], base);
	return path;
}

/* Reads names[i] into fs->data[i]: 0, or 1 with a warning where it cannot be read. */
static int fetch_file(struct files *fs, struct weft_trace *t, size_t i)
{
	char path[4096];
	const char *name = fs->names[i];
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	file_path(path, sizeof(path), fs->dirs, fs->from, fs->names, fs->ndirs, i);
	/* O_NONBLOCK: a FIFO or device named like a trace file must not hang the reader */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	if (fd < 0 || fstat(fd, &st)) {
		weft_trace_warn(t, "%s: %s; skipped", name, strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	if (!S_ISREG(st.st_mode)) {
		weft_trace_warn(t, "%s: not a regular file; skipped", name);
		close(fd);
		return 1;
	}
	/* events files mapped (format/blob.h): a walk holds a few chunks' pages, not the file */
	const char *dot = strrchr(base, '.');
	size_t got = 0;
	unsigned char *d = weft_blob_load(fd, (size_t)st.st_size, dot && !strcmp(dot, ".wevents"), &got);
	close(fd);
	if (!d)
		weft_oom("reading the trace");
	fs->data[i] = d;
	fs->sizes[i] = got;
	return 0;
}

static void drop_file(struct files *fs, size_t i)
{
	weft_blob_free((void *)fs->data[i]);
	fs->data[i] = NULL;
}

int weft_trace_open_dirs(const char *const *dirs, size_t ndirs, struct weft_trace **out, char *err,
			 size_t errlen)
{
	return weft_trace_open_window(dirs, ndirs, NULL, out, err, errlen);
}

/* 0, or -EINVAL with the message where one directory is named twice (its events would be
 * read twice: every count doubled) */
static int named_twice(const char *const *dirs, size_t ndirs, char *err, size_t errlen)
{
	for (size_t k = 1; k < ndirs; k++) {
		struct stat a, b;
		if (stat(dirs[k], &a))
			continue; /* (list_dir says why) */
		for (size_t j = 0; j < k; j++)
			if (!stat(dirs[j], &b) && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
				snprintf(err, errlen, "%s and %s are the same directory: name each trace once", dirs[j],
					 dirs[k]);
				return -EINVAL;
			}
	}
	return 0;
}

int weft_trace_open_window(const char *const *dirs, size_t ndirs, const struct weft_window_req *win,
			   struct weft_trace **out, char *err, size_t errlen)
{
	if (!ndirs) {
		snprintf(err, errlen, "no trace directory given");
		return -EINVAL;
	}
	int twice = named_twice(dirs, ndirs, err, errlen);
	if (twice)
		return twice;
	char **names = NULL;
	size_t n = 0, *from = NULL; /* from[i]: the directory of names[i] */
	for (size_t k = 0; k < ndirs; k++) {
		char prefix[32] = "";
		if (ndirs > 1)
			snprintf(prefix, sizeof(prefix), "%zu/", k);
		size_t before = n;
		int rc = list_dir(dirs[k], prefix, &names, &n, err, errlen);
		if (!rc && n == before && ndirs > 1) {
			no_trace_files(dirs[k], err, errlen);
			rc = -ENOENT;
		}
		if (rc) {
			for (size_t i = 0; i < n; i++)
				free(names[i]);
			free(names);
			free(from);
			return rc;
		}
		from = weft_rd_xrealloc(from, (n + 1) * sizeof(*from));
		for (size_t i = before; i < n; i++)
			from[i] = k;
	}
	struct weft_trace *t = weft_rd_xcalloc(1, sizeof(*t));
	t->dir = strdup(dirs[0]);
	unsigned char **data = weft_rd_xcalloc(n, sizeof(*data));
	size_t *sizes = weft_rd_xcalloc(n, sizeof(*sizes));
	for (size_t i = 0; i < n; i++) { /* metadata sizes first: load() bounds call-site ids by them */
		char path[4096];
		struct stat st;
		const char *dot = strrchr(names[i], '.');
		if (dot && !strcmp(dot, ".wmeta") &&
		    !stat(file_path(path, sizeof(path), dirs, from, (const char *const *)names, ndirs, i), &st) &&
		    S_ISREG(st.st_mode))
			sizes[i] = (size_t)st.st_size;
	}
	struct files fs = {.data = (const unsigned char **)data, .sizes = sizes, .fetch = fetch_file,
			   .drop = drop_file, .dirs = dirs, .from = from, .ndirs = ndirs,
			   .names = (const char *const *)names};
	t->blobs = (void **)data; /* the events files' bytes stay, the trace's to free */
	t->nblobs = n;
	int rc = load(t, (const char *const *)names, &fs, n, win, err, errlen);
	free(from);
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
