/*
 * json.c - trace -> Chrome JSON ({"traceEvents":[...]}), as read by chrome://tracing, Perfetto
 * and speedscope. The output is always complete JSON, sorted by timestamp, with "M" events
 * naming processes and threads. --json-style=be writes B/E pairs, x writes complete "X"
 * events. Slices still open at the end of the trace are closed there with
 * args.weft_unterminated = true. Named-track lanes become pseudo-threads (tid 0x40000000 +
 * track<<12 + thread index) named "track / thread".
 *
 * Two passes. Pass 1 (threads in parallel) walks each thread to learn what the streaming pass
 * cannot know in time: the duration of every slice (for X events, written at their begin), the
 * lanes used (their names come first), and the complete slices, whose times lie in the past of
 * the stream - those are formatted right away into a side list. The B/E style needs no
 * durations: its pass 1 decodes only the chunks whose record headers show something else than
 * function entries and exits and plain slices and instants on the thread's own row (a parallel
 * scan of the packed headers decides). Pass 2 formats each thread one chunk at a time, a chunk
 * ahead on worker threads (--jobs), and merges the threads (and side lists) by timestamp
 * through a heap; the entries' bytes go out in runs from where they were formatted. GPU
 * activities (json-gpu.c) are one more side list in that merge, on rows of their own.
 *
 * Memory: two formatted chunks for each thread being merged. A trace of more than JSON_GROUP
 * threads (a job's ranks) is merged a group at a time into sorted runs of a spill file, then
 * the runs into the output (json-runs.c): the same bytes, with one group's memory.
 *
 * Formatting is table-driven where it is hot: each process's site names escaped once, each
 * thread's `"pid":..,"tid":..` made once, and a timestamp's whole seconds printed once per
 * second. The bytes do not depend on --jobs, nor on the merge's stages.
 */
#include "export/json-internal.h"
#include "format/minheap.h"
#include "export/export.h"
#include "export/pb.h"
#include "export/json-gpu.h"
#include "analysis/memory.h"
#include "format/format.h"
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

/* Pass 2's producers. A thread's next chunk is formatted into its spare list by a worker (or
 * by the merge itself while it waits) as the merge writes out the current one; a thread is
 * queued for one fill at a time, so its walker moves through its chunks in order whoever runs
 * it, and the entries, hence the bytes written, do not depend on the number of jobs. */
enum { JS_IDLE, JS_QUEUED, JS_FILLING, JS_READY };

struct feed {
	struct jthread *js;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a fill queued or done, or quit */
	size_t n;                       /* threads: js[n] is the snapshots' and the GPU's lists */
	size_t *queue, head, tail, cap; /* thread indices; each at most once */
	int quit;
};

/* Formats the thread's next chunk into its spare list: empty only when it has no more. */
static void fill(struct jthread *j)
{
	struct jlist *L = &j->spare;
	L->text.n = L->nents = L->pos = 0;
	L->unsorted = 0;
	j->fill = L;
	while (!L->nents && !j->finished) {
		if (j->chunk < j->th->nchunks) {
			size_t n;
			const char *why;
			int rc = weft_chunk_decode(&j->th->chunks[j->chunk++], &j->buf, &j->bufcap, &n, &why);
			if (!rc)
				weft_walker_feed(&j->walker, j->buf, n);
			else
				weft_walk_stats_refused(&j->st, rc, why);
		} else {
			weft_walker_finish(&j->walker, j->end_ns);
			j->finished = 1;
		}
	}
	if (L->unsorted)
		qsort(L->ents, L->nents, sizeof(struct jent), weft_json_cmp_ent);
}

/* Runs the oldest queued fill (the lock held, dropped meanwhile); 0 when none is queued. */
static int feed_run_one(struct feed *f)
{
	if (f->head == f->tail)
		return 0;
	struct jthread *j = &f->js[f->queue[f->head++ % f->cap]];
	j->spare_state = JS_FILLING;
	pthread_mutex_unlock(&f->lock);
	fill(j);
	pthread_mutex_lock(&f->lock);
	j->spare_state = JS_READY;
	pthread_cond_broadcast(&f->cond);
	return 1;
}

static void *feed_main(void *arg)
{
	struct feed *f = arg;
	pthread_mutex_lock(&f->lock);
	while (!f->quit)
		if (!feed_run_one(f))
			pthread_cond_wait(&f->cond, &f->lock);
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void feed_queue(struct feed *f, size_t i) /* the lock held */
{
	f->js[i].spare_state = JS_QUEUED;
	f->queue[f->tail++ % f->cap] = i;
	pthread_cond_broadcast(&f->cond);
}

/* Thread i's next entries into its out list (its next fill queued): 0 when it has no more. */
static int refill(struct feed *f, size_t i)
{
	struct jthread *j = &f->js[i];
	pthread_mutex_lock(&f->lock);
	if (j->spare_state == JS_IDLE) { /* no fill pending: the last one found the end */
		pthread_mutex_unlock(&f->lock);
		j->out.nents = j->out.pos = 0;
		return 0;
	}
	while (j->spare_state != JS_READY)
		if (!feed_run_one(f)) /* the merge helps rather than waits */
			pthread_cond_wait(&f->cond, &f->lock);
	struct jlist t = j->out;
	j->out = j->spare;
	j->spare = t;
	j->spare_state = JS_IDLE;
	int more = j->out.nents > 0;
	if (more && !j->finished)
		feed_queue(f, i);
	pthread_mutex_unlock(&f->lock);
	return more;
}

/* Threads merged at once: beyond, the merge goes in stages through a spill file (json-runs.c),
 * so that memory holds this many threads' chunks (a few MB each when busy), not all of them. */
#define JSON_GROUP 16

struct ctx {
	FILE *out;
	struct pb buf;
	/* entries taken but not yet written: one run of bytes in one list's text (written before
	 * that list is refilled) */
	const uint8_t *run;
	size_t nrun;
	int err, first;
};

static void out_write(struct ctx *c, const void *p, size_t n)
{
	if (n && !c->err && fwrite(p, 1, n, c->out) != n)
		c->err = errno ? errno : EIO;
}

static void out_flush(struct ctx *c, int force)
{
	if (c->buf.n >= (1u << 20) || (force && c->buf.n)) {
		out_write(c, c->buf.p, c->buf.n);
		c->buf.n = 0;
	}
}

/* A long run goes out from where it lies, a short one through the buffer. */
static void run_flush(struct ctx *c)
{
	if (!c->nrun)
		return;
	if (c->nrun >= (1u << 16)) {
		out_flush(c, 1);
		out_write(c, c->run, c->nrun);
	} else {
		put(&c->buf, (const char *)c->run, c->nrun);
		out_flush(c, 0);
	}
	c->nrun = 0;
}

static void emit_ent(struct ctx *c, const struct jlist *L, const struct jent *e)
{
	const uint8_t *p = L->text.p + e->off;
	size_t n = e->len;
	if (e->flags & JF_BARE) {
		run_flush(c);
		if (!c->first)
			PUTS(&c->buf, ",\n");
		c->first = 0;
		put(&c->buf, (const char *)p, n);
		out_flush(c, 0);
		return;
	}
	if (c->first) { /* the file's first event: no separator */
		p += 2;
		n -= 2;
		c->first = 0;
	}
	if (c->nrun && c->run + c->nrun == p) {
		c->nrun += n;
		return;
	}
	run_flush(c);
	c->run = p;
	c->nrun = n;
}

static void meta_event(struct ctx *c, int pid, uint64_t tid, const char *what, const char *name)
{
	struct pb *b = &c->buf;
	if (!c->first)
		PUTS(b, ",\n");
	c->first = 0;
	PUTS(b, "{\"ph\":\"M\",\"pid\":");
	put_u64(b, (uint64_t)(uint32_t)pid);
	if (tid != UINT64_MAX) {
		PUTS(b, ",\"tid\":");
		put_u64(b, tid);
	}
	PUTS(b, ",\"ts\":0,\"name\":");
	put_cstr(b, what);
	PUTS(b, ",\"args\":{\"name\":");
	put_cstr(b, name);
	PUTS(b, "}}");
}

/* Merge streams: 2 per thread, s = 2i (its chunks) and 2i+1 (its side list). */
static struct jlist *stream_list(struct jthread *js, size_t s)
{
	return s & 1 ? &js[s / 2].side : &js[s / 2].out;
}

static int stream_next(struct feed *f, size_t s)
{
	struct jlist *L = stream_list(f->js, s);
	if (++L->pos < L->nents)
		return 1;
	return (s & 1) || s / 2 == f->n ? 0 : refill(f, s / 2);
}

/* The streams' heap, keyed by (the timestamp of the stream's current entry, the stream): equal
 * timestamps go out in stream order, whether merged in one stage or in groups. */
struct merge {
	struct jthread *js;
	struct feed *f;
	struct ctx *c;
	struct jruns *runs; /* in stages: where the group's entries go */
	size_t *heap, hn;
};

static int stream_before(const void *ctx, size_t a, size_t b)
{
	struct jthread *js = (struct jthread *)ctx;
	const struct jlist *A = stream_list(js, a), *B = stream_list(js, b);
	uint64_t ka = A->ents[A->pos].ts, kb = B->ents[B->pos].ts;
	return ka < kb || (ka == kb && a < b);
}

static void sift_down(struct merge *m, size_t at)
{
	weft_heap_sift_down(m->heap, m->hn, at, stream_before, m->js);
}

/* Threads [lo, hi)'s streams (with `rest`, also the snapshots' and the GPU's lists) merged into
 * the output, or in stages into one run of the spill file. */
static void merge_streams(struct merge *m, size_t lo, size_t hi, int rest)
{
	struct feed *f = m->f;
	struct jthread *js = m->js;
	size_t n = f->n;
	pthread_mutex_lock(&f->lock);
	for (size_t i = lo; i < hi; i++)
		feed_queue(f, i);
	pthread_mutex_unlock(&f->lock);
	m->hn = 0;
	for (size_t s = 2 * lo; s < 2 * hi; s++)
		if ((s & 1) ? js[s / 2].side.nents > 0 : refill(f, s / 2))
			m->heap[m->hn++] = s;
	if (rest && js[n].out.nents) /* 2n: the snapshots' list, 2n + 1: the GPU's */
		m->heap[m->hn++] = 2 * n;
	if (rest && js[n].side.nents)
		m->heap[m->hn++] = 2 * n + 1;
	for (size_t i = m->hn / 2 + 1; i-- > 0;)
		sift_down(m, i);
	for (uint64_t emitted = 1; m->hn; emitted++) {
		size_t s = m->heap[0];
		struct jlist *L = stream_list(js, s);
		const struct jent *e = &L->ents[L->pos];
		if (m->runs) {
			size_t sep = e->flags & JF_BARE ? 0 : 2;
			weft_json_runs_add(m->runs, e->ts, L->text.p + e->off + sep, e->len - sep);
		} else {
			emit_ent(m->c, L, e);
			if (L->pos + 1 >= L->nents) /* its text is about to be reused */
				run_flush(m->c);
		}
		if (!(emitted & 0xffff)) /* the progress line's count */
			atomic_fetch_add_explicit(&weft_export_progress, 0x10000, memory_order_relaxed);
		if (!stream_next(f, s))
			m->heap[0] = m->heap[--m->hn];
		sift_down(m, 0);
	}
	if (m->runs)
		weft_json_runs_end(m->runs);
}

/* A run's entry into the output (the merge in stages). */
static void emit_text(void *ud, const uint8_t *text, size_t len)
{
	struct ctx *c = ud;
	if (!c->first)
		PUTS(&c->buf, ",\n");
	c->first = 0;
	put(&c->buf, (const char *)text, len);
	out_flush(c, 0);
}

/* What a thread holds for the merge, given back once merged. */
static void release(struct jthread *j)
{
	free(j->out.text.p);
	free(j->out.ents);
	free(j->spare.text.p);
	free(j->spare.ents);
	free(j->side.text.p);
	free(j->side.ents);
	free(j->durs);
	free(j->eargs);
	free(j->etext.p);
	free(j->buf);
	memset(&j->out, 0, sizeof(j->out));
	memset(&j->spare, 0, sizeof(j->spare));
	memset(&j->side, 0, sizeof(j->side));
	memset(&j->etext, 0, sizeof(j->etext));
	j->durs = NULL;
	j->eargs = NULL;
	j->buf = NULL;
	j->bufcap = 0;
}

/* Threads merged at once before the merge goes in stages (WEFT_JSON_GROUP, for tests). */
static size_t json_group(void)
{
	const char *e = getenv("WEFT_JSON_GROUP");
	long v = e ? strtol(e, NULL, 10) : 0;
	return v >= 1 ? (size_t)v : JSON_GROUP;
}

int weft_export_json(const struct weft_trace *t, FILE *out, int style, int jobs,
		     struct weft_export_summary *sum, char *err, size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	size_t n = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		n += t->procs[i].nthreads;
	struct jthread *js = calloc(n + 1, sizeof(*js));
	if (!js)
		weft_oom("writing JSON");
	size_t k = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		for (size_t h = 0; h < t->procs[i].nthreads; h++, k++) {
			js[k].p = &t->procs[i];
			js[k].th = &t->procs[i].threads[h];
			js[k].thread_index = h;
			js[k].style = style;
			js[k].end_ns = t->last_ns;
		}
	struct weft_mem *mem = NULL;
	int mrc = weft_mem_analyze(t, &mem, err, errlen);
	if (mrc) {
		free(js);
		return mrc;
	}
	for (size_t i = 0; i < n; i++)
		js[i].mem = weft_mem_for(mem, js[i].p);
	struct jnames *names = calloc(t->nprocs + 1, sizeof(*names)); /* after the memory analysis: it adds sites */
	if (!names)
		weft_oom("writing JSON");
	for (size_t i = 0, k2 = 0; i < t->nprocs; i++) {
		weft_json_names_build(&t->procs[i], &names[i]);
		for (size_t h = 0; h < t->procs[i].nthreads; h++, k2++) {
			js[k2].names = &names[i];
			weft_json_thread_prefix(&js[k2]);
		}
	}
	struct weft_json_gpu gpu; /* its events: the side list of js[n], a thread of no process */
	if ((mrc = weft_json_gpu_build(t, &gpu, err, errlen))) {
		weft_mem_free(mem);
		free(js);
		return mrc;
	}
	if (gpu.n > gpu.nmeta) {
		struct jlist *G = &js[n].side;
		G->text = gpu.text;
		G->nents = G->cap = gpu.n - gpu.nmeta;
		G->ents = malloc(G->nents * sizeof(*G->ents));
		if (!G->ents)
			weft_oom("writing JSON");
		for (size_t i = 0; i < G->nents; i++) {
			const struct weft_json_gpu_ent *e = &gpu.ents[gpu.nmeta + i];
			G->ents[i] = (struct jent){e->ts, e->off, e->len, JF_BARE};
		}
	}
	weft_json_snapshot_marks(t, &js[n].out); /* stream 2n: no thread's (js[n] has none: finished) */
	js[n].finished = 1;
	/* in stages, the X style's durations (8 bytes a slice) are learnt a group at a time */
	size_t group = json_group();
	struct jruns runs; /* in stages (or no spill file could be made: memory is all there is) */
	int staged = n > group && !weft_json_runs_open(&runs), durs_later = staged && style == WEFT_JSON_X;
	for (size_t i = 0; i < n; i++)
		js[i].p1 = JP1_REST | (style == WEFT_JSON_X && !durs_later ? JP1_DURS : 0);
	if (!(js[0].p1 & JP1_DURS))
		weft_json_scan(js, n, weft_jobs(jobs));
	weft_parallel_for(n, weft_jobs(jobs), weft_json_pass1, js);
	for (size_t i = 0; i < n; i++)
		if (js[i].mem && js[i].thread_index == 0)
			weft_json_mem_counters(&js[i]);
	size_t naset = 0;
	for (size_t i = 0; i < n; i++)
		naset += js[i].naflows;
	uint64_t *aset = naset ? malloc(naset * sizeof(*aset)) : NULL;
	if (naset && !aset) {
		sum->oom++;
		naset = 0;
	}
	for (size_t i = 0, at = 0; i < n && aset; i++) {
		memcpy(aset + at, js[i].aflows, js[i].naflows * sizeof(*aset));
		at += js[i].naflows;
		free(js[i].aflows);
		js[i].aflows = NULL;
	}
	if (naset)
		qsort(aset, naset, sizeof(*aset), weft_json_cmp_u64);
	for (size_t i = 0; i < n; i++) {
		js[i].aset = aset;
		js[i].naset = naset;
	}

	struct ctx c = {.out = out, .first = 1};
	char spill_err[200] = "";
	PUTS(&c.buf, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
	k = 0;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		meta_event(&c, p->pid, UINT64_MAX, "process_name", p->name);
		if (weft_proc_rank(p) != WEFT_RANK_NONE) { /* a job's ranks in rank order */
			PUTS(&c.buf, ",\n{\"ph\":\"M\",\"pid\":");
			put_u64(&c.buf, (uint64_t)(uint32_t)p->pid);
			PUTS(&c.buf, ",\"ts\":0,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":");
			put_u64(&c.buf, weft_proc_rank(p));
			PUTS(&c.buf, "}}");
		}
		for (size_t h = 0; h < p->nthreads; h++, k++) {
			struct jthread *j = &js[k];
			meta_event(&c, p->pid, j->th->tid, "thread_name", j->th->name);
			for (size_t l = 0; l < j->nlanes; l++) {
				char name[600];
				const char *tn = weft_track_name(p, j->lanes[l]);
				snprintf(name, sizeof(name), "%s / %s (%u)", tn ? tn : "track", j->th->name, j->th->tid);
				meta_event(&c, p->pid, weft_json_lane_tid(j, j->lanes[l]), "thread_name", name);
			}
		}
	}
	for (size_t i = 0; i < gpu.nmeta; i++) {
		if (!c.first)
			PUTS(&c.buf, ",\n");
		c.first = 0;
		put(&c.buf, (const char *)gpu.text.p + gpu.ents[i].off, gpu.ents[i].len);
	}
	for (size_t i = 0; i < n; i++) {
		struct jthread *j = &js[i];
		sum->oom += j->st.oom; /* pass 2 counts the rest: it decodes the same chunks */
		memset(&j->st, 0, sizeof(j->st));
		weft_walker_init(&j->walker, j->p, weft_json_pass2_event, j, &j->st);
	}
	struct feed f = {.js = js, .n = n, .cap = n + 1};
	pthread_mutex_init(&f.lock, NULL);
	pthread_cond_init(&f.cond, NULL);
	f.queue = malloc(f.cap * sizeof(*f.queue));
	if (!f.queue)
		weft_oom("writing JSON");
	pthread_t workers[16];
	int nworkers = 0;
	for (int w = 1; w < weft_jobs(jobs) && (size_t)w <= n; w++)
		if (pthread_create(&workers[nworkers], NULL, feed_main, &f) == 0)
			nworkers++;
	struct merge m = {.js = js, .f = &f, .c = &c, .heap = calloc(2 * n + 2, sizeof(size_t))};
	if (!m.heap)
		weft_oom("writing JSON");
	if (!staged) {
		merge_streams(&m, 0, n, 1);
	} else {
		m.runs = &runs;
		for (size_t lo = 0; lo < n && !runs.err; lo += group) { /* (a failed write is said below) */
			size_t hi = n - lo > group ? lo + group : n;
			for (size_t i = lo; durs_later && i < hi; i++)
				js[i].p1 = JP1_DURS;
			if (durs_later)
				weft_parallel_for(hi - lo, weft_jobs(jobs), weft_json_pass1, js + lo);
			merge_streams(&m, lo, hi, hi == n);
			for (size_t i = lo; i < hi; i++)
				release(&js[i]);
		}
		run_flush(&c);
		int spill_rc = weft_json_runs_merge(&runs, emit_text, &c);
		if (spill_rc && !c.err) {
			snprintf(spill_err, sizeof(spill_err), "merging the threads through a spill file in %s failed: %s",
				 runs.dir, strerror(-spill_rc));
			c.err = -spill_rc;
		}
		weft_json_runs_free(&runs);
	}
	pthread_mutex_lock(&f.lock);
	f.quit = 1;
	pthread_cond_broadcast(&f.cond);
	pthread_mutex_unlock(&f.lock);
	for (int w = 0; w < nworkers; w++)
		pthread_join(workers[w], NULL);
	pthread_mutex_destroy(&f.lock);
	pthread_cond_destroy(&f.cond);
	free(f.queue);
	uint64_t events = 0;
	uint64_t dropped = 0; /* the process totals: drops not attributed to a thread count too */
	for (size_t i = 0; i < t->nprocs; i++)
		dropped += weft_proc_dropped(&t->procs[i]);
	for (size_t i = 0; i < n; i++) {
		struct jthread *j = &js[i];
		sum->unmatched_end += j->st.unmatched_end;
		sum->unterminated += j->st.unterminated;
		sum->deep += j->st.deep;
		sum->unwound += j->st.unwound;
		sum->oom += j->st.oom;
		events += j->st.events;
		sum->bad_chunks += j->st.bad_chunks;
		if (!sum->bad_why)
			sum->bad_why = j->st.bad_why;
		release(j);
		free(j->want);
		free(j->want_why);
		free(j->lanes);
	}
	run_flush(&c);
	PUTS(&c.buf, "\n],\"metadata\":{\"weft-dropped-events\":");
	put_u64(&c.buf, dropped);
	PUTS(&c.buf, ",\"weft-unterminated-slices\":");
	put_u64(&c.buf, sum->unterminated);
	PUTS(&c.buf, "}}\n");
	out_flush(&c, 1);
	free(c.buf.p);
	free(m.heap);
	free(aset);
	free(js[n].side.text.p); /* gpu.text, when it had events */
	if (js[n].side.text.p != gpu.text.p)
		free(gpu.text.p);
	free(js[n].side.ents);
	free(js[n].out.text.p); /* the snapshots' list */
	free(js[n].out.ents);
	free(gpu.ents);
	for (size_t i = 0; i < n; i++)
		free(js[i].aflows); /* where the merge ran out of memory */
	free(js);
	weft_mem_free(mem);
	for (size_t i = 0; i < t->nprocs; i++) {
		free(names[i].text.p);
		free(names[i].off);
	}
	free(names);
	sum->events = events;
	sum->dropped = dropped;
	if (!c.err && fflush(out))
		c.err = errno;
	if (c.err) {
		if (spill_err[0])
			snprintf(err, errlen, "%s", spill_err);
		else
			snprintf(err, errlen, "writing the trace failed: %s", strerror(c.err));
		return -c.err;
	}
	return weft_export_result(sum, 0, err, errlen);
}
