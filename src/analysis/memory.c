/*
 * memory.c - see memory.h; the rooms are described in memory-internal.h. Per process that has
 * memory records (or heaps, or sampled accesses):
 *   1. scan (memory-scan.c): each thread walked for its slice stacks, call stacks, the
 *      records' time span and the sampled accesses; the call stacks are then named;
 *   2. stream (memory-stream.c): the threads walked again side by side, their records merged by
 *      time and replayed (memory-replay.c) one at a time against the live blocks, the
 *      accesses joined on the way (memory-access.c); then the leaks, the peak shares, the dumps.
 * Memory is proportional to what is live at one time, never to the number of records.
 */
#include "analysis/memory-internal.h"
#include "format/format.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint64_t weft_mem_large_alloc = 1u << 20;

void *weft_mem__realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		weft_oom("the memory analysis");
	return q;
}

static int has_heaps(const struct weft_proc *p)
{
	if (p->mem_recorded || p->has_access)
		return 1;
	for (size_t i = 0; i < p->nsites; i++)
		if (p->sites[i].defined && p->sites[i].kind == WEFT_KIND_HEAP)
			return 1;
	return 0;
}

static int cmp_slice(const void *a, const void *b)
{
	const struct weft_mem_slice *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static void analyze_proc(const struct weft_trace *t, struct weft_mem_proc *mp, const struct weft_mem_hooks *hk,
			 size_t proc)
{
	const struct weft_proc *p = mp->p;
	mp->threads = calloc(p->nthreads + 1, sizeof(*mp->threads));
	if (!mp->threads)
		weft_oom("the memory analysis");
	weft_mem__intern(mp, 0, 0); /* stack 0: outside any slice (its own parent) */
	if (!has_heaps(p))
		return;
	struct mem_replay rp = {.t = t, .mp = mp, .nthreads = p->nthreads, .on_block = hk->block, .on_step = hk->step,
				.ud = hk->ud, .proc = proc,
				.seeded_thread = SIZE_MAX};
	rp.threads = calloc(p->nthreads + 1, sizeof(*rp.threads));
	rp.last_alloc = calloc(p->nthreads + 1, sizeof(*rp.last_alloc));
	if (!rp.threads || !rp.last_alloc)
		weft_oom("the memory analysis");
	struct mem_frame_map fm = {0};
	uint32_t inherited[WEFT_MEM_INHERIT_MAX];
	rp.ninherited = weft_mem__inherited(t, p, inherited, &rp.fork_ns);
	rp.inherited = inherited;
	for (size_t i = 0; i < p->nthreads && rp.ninherited; i++)
		if (p->threads[i].tid == (uint32_t)p->pid) { /* the forking thread's continuation */
			rp.seeded_thread = i;
			break;
		}
	/* 1. the scan */
	for (size_t i = 0; i < p->nthreads; i++) {
		struct mem_thread *c = &rp.threads[i];
		c->mp = mp;
		c->frames = &fm;
		c->acc = &rp.acc;
		c->mt = &mp->threads[i];
		c->index = i;
		weft_mem__scan_thread(&rp, c);
		if (c->has_recs) {
			mp->has_records = 1;
			if (!mp->first_ts || c->first_rec < mp->first_ts)
				mp->first_ts = c->first_rec;
			if (c->last_rec > mp->last_ts)
				mp->last_ts = c->last_rec;
		}
	}
	weft_mem__access_points(mp);
	weft_mem__resolve_stacks(mp, &fm);
	rp.filtered = p->mem_threshold || p->mem_sample;
	rp.sample = (double)p->mem_sample;
	mp->scale_note = rp.sample;
	uint64_t span = mp->last_ts - mp->first_ts;
	rp.resolution = span / 50000 ? span / 50000 : 1; /* at most ~100000 points per heap */
	rp.dump_every = span / 16 ? span / 16 : 1;
	rp.next_dump = mp->first_ts + rp.dump_every;
	weft_mem__access_prepare(&rp);
	/* 2. the stream and its replay */
	weft_mem__stream(&rp);
	weft_mem__join_accesses(&rp, 0, 1);
	weft_mem__charge_accesses(&rp);
	for (size_t i = 0; i < mp->nheaps; i++) /* the process's calls: the C heap's */
		if (!mp->heaps[i].id) {
			mp->alloc_calls = mp->heaps[i].alloc_calls;
			mp->realloc_calls = mp->heaps[i].realloc_calls;
			mp->free_calls = mp->heaps[i].free_calls;
		}
	weft_mem__dump(mp, mp->last_ts, 0, NULL, NULL);
	weft_mem__finish_heaps(&rp);
	weft_mem__leaks(&rp);
	for (size_t i = 0; i < p->nthreads; i++) {
		struct weft_mem_thread *mt = &mp->threads[i];
		if (mt->nslices)
			qsort(mt->slices, mt->nslices, sizeof(*mt->slices), cmp_slice);
		free(rp.threads[i].q);
		free(rp.threads[i].pend);
	}
	weft_mem__frames_free(&fm);
	weft_mem__replay_free(&rp);
	free(rp.threads);
	free(rp.buf);
	free(rp.last_alloc);
	weft_ranges__clear(&rp.ranges);
	free(rp.acc.a);
	free(rp.bytid);
	free(rp.site_slot);
}

int weft_mem_analyze(const struct weft_trace *t, struct weft_mem **out, char *err, size_t errlen)
{
	return weft_mem_analyze_blocks(t, NULL, NULL, out, err, errlen);
}

int weft_mem_analyze_blocks(const struct weft_trace *t, weft_mem_block_fn fn, void *ud, struct weft_mem **out,
			    char *err, size_t errlen)
{
	struct weft_mem_hooks hk = {.block = fn, .ud = ud};
	return weft_mem_analyze_hooks(t, &hk, out, err, errlen);
}

int weft_mem_analyze_hooks(const struct weft_trace *t, const struct weft_mem_hooks *hk, struct weft_mem **out,
			   char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	struct weft_mem *m = calloc(1, sizeof(*m));
	if (!m || !(m->procs = calloc(t->nprocs + 1, sizeof(*m->procs))))
		weft_oom("the memory analysis");
	m->nprocs = t->nprocs;
	m->big_alloc = weft_mem_large_alloc;
	for (size_t i = 0; i < t->nprocs; i++) {
		m->procs[i].p = &t->procs[i];
		analyze_proc(t, &m->procs[i], hk, i);
	}
	*out = m;
	return 0;
}

void weft_mem_free(struct weft_mem *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nprocs; i++) {
		struct weft_mem_proc *mp = &m->procs[i];
		for (size_t k = 0; k < mp->nheaps; k++) {
			struct weft_mem_heap *h = &mp->heaps[k];
			free(h->totals);
			free(h->points);
			free(h->usage);
			for (size_t d = 0; d < h->ndumps; d++)
				free(h->dumps[d].alloc_bytes);
			free(h->dumps);
			free(h->leaks);
		}
		free(mp->heaps);
		if (mp->threads)
			for (size_t k = 0; k < mp->p->nthreads; k++)
				free(mp->threads[k].slices);
		free(mp->threads);
		free(mp->stacks);
		free(mp->accesses);
		for (size_t k = 0; k < mp->naccess_sites; k++)
			free(mp->access_sites[k].points);
		free(mp->access_sites);
		free(mp->unjoined.points);
		free(mp->ikeys);
		free(mp->ivals);
	}
	free(m->procs);
	free(m);
}

const struct weft_mem_proc *weft_mem_for(const struct weft_mem *m, const struct weft_proc *p)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->nprocs; i++)
		if (m->procs[i].p == p)
			return m->procs[i].has_records ? &m->procs[i] : NULL;
	return NULL;
}

const struct weft_mem_slice *weft_mem_slice(const struct weft_mem_proc *mp, size_t thread, uint64_t serial)
{
	if (!mp || thread >= mp->p->nthreads)
		return NULL;
	const struct weft_mem_thread *mt = &mp->threads[thread];
	size_t lo = 0, hi = mt->nslices;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (mt->slices[mid].serial < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < mt->nslices && mt->slices[lo].serial == serial ? &mt->slices[lo] : NULL;
}

const char *weft_mem_why_none(const struct weft_trace *t, int pid, char *buf, size_t n)
{
	const struct weft_proc *p = NULL;
	for (size_t i = 0; i < t->nprocs && !p; i++)
		if ((!pid || t->procs[i].pid == pid) && t->procs[i].mem_recorded)
			p = &t->procs[i];
	if (!p)
		snprintf(buf, n, "no memory records %s (record with 'weft record --memory', or use weft_heap_* in "
			 "the program)", pid ? "of that process" : "in the trace");
	else if (t->nwarnings) /* (files skipped or damaged: the reader said which) */
		snprintf(buf, n, "no allocation could be read: memory was recorded, but the trace was read with "
			 "%zu warning%s (files damaged or missing)", t->nwarnings, t->nwarnings == 1 ? "" : "s");
	else if (p->mem_not_interposed)
		snprintf(buf, n, "no allocation was recorded: the program's own malloc (%s) came before weft's",
			 p->mem_allocator ? p->mem_allocator : "?");
	else if (p->mem_sample)
		snprintf(buf, n, "no allocation was sampled (memory_sample=%llu: one sample per %llu bytes on "
			 "average; a smaller --memory=sample:N samples more)", (unsigned long long)p->mem_sample,
			 (unsigned long long)p->mem_sample);
	else if (p->mem_threshold)
		snprintf(buf, n, "no block of at least %llu bytes was allocated (memory_threshold=%llu)",
			 (unsigned long long)p->mem_threshold, (unsigned long long)p->mem_threshold);
	else
		snprintf(buf, n, "no allocation was recorded (memory was recorded: the program allocated nothing "
			 "while tracing was on)");
	return buf;
}

const char *weft_mem_fn_name(unsigned fn)
{
	static const char *const names[] = {"?", "malloc", "calloc", "realloc", "reallocarray", "memalign",
					    "posix_memalign", "aligned_alloc", "valloc", "pvalloc", "free",
					    "mmap", "munmap", "mremap", "heap api"};
	return fn < sizeof(names) / sizeof(names[0]) ? names[fn] : "?";
}
