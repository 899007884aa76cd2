/*
 * system.c - the system sampler's readings (collect/sampler.c, SAMPLE records) as series: per
 * process and channel, (time, reading) in time order. Only the chunks of a process's sampler
 * threads (the tids its SYS_SOURCE records name) are decoded.
 *
 * The sampler writes a reading when it changes, and for cumulative channels the last
 * unchanged reading before a change, so the readings are exact step points: linear
 * interpolation between two consecutive readings is wrong by at most what changed in that one
 * sampling period. A slice's CPU time is the interpolated cumulative CPU time at its end minus
 * that at its begin; each end can be off by at most the CPU the process used in the period
 * around it (at most one period times its running threads; getrusage itself counts in
 * microseconds, split between user and system by the scheduler's tick sampling), so slices
 * are given the figures only when longer than the period, and the figures are the whole
 * process's, every thread's, during the slice.
 */
#include "analysis/system.h"
#include "format/format.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_point(const void *a, const void *b)
{
	const struct weft_sys_point *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void push(struct weft_sys_series *s, uint64_t ts, uint64_t v)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->pt = realloc(s->pt, s->cap * sizeof(*s->pt));
		if (!s->pt)
			weft_oom("reading the system sampler's records");
	}
	s->pt[s->n].ts = ts;
	s->pt[s->n++].v = v;
}

static int is_sampler(const struct weft_proc *p, uint32_t tid)
{
	for (size_t i = 0; i < WEFT_SYS_NSOURCES; i++)
		if (p->sys_sources[i].present && p->sys_sources[i].tid == tid)
			return 1;
	return 0;
}

static void analyze_proc(const struct weft_proc *p, struct weft_sys_proc *sp, uint64_t **buf, size_t *cap)
{
	sp->p = p;
	sp->nseries = p->nsys_chans;
	sp->series = calloc(p->nsys_chans + 1, sizeof(*sp->series));
	if (!sp->series)
		weft_oom("reading the system sampler's records");
	uint32_t maxid = 0;
	for (size_t c = 0; c < p->nsys_chans; c++) {
		sp->series[c].def = &p->sys_chans[c];
		if (p->sys_chans[c].id > maxid)
			maxid = p->sys_chans[c].id;
	}
	size_t *by_id = malloc((maxid + 1) * sizeof(size_t));
	if (!by_id)
		weft_oom("reading the system sampler's records");
	for (size_t i = 0; i <= maxid; i++)
		by_id[i] = SIZE_MAX;
	for (size_t c = 0; c < p->nsys_chans; c++)
		by_id[p->sys_chans[c].id] = c; /* a later declaration of an id wins (a fork child's file is its own) */
	for (size_t k = 0; k < p->nthreads; k++) {
		const struct weft_thread_data *th = &p->threads[k];
		if (!is_sampler(p, th->tid))
			continue;
		for (size_t c = 0; c < th->nchunks; c++) {
			size_t n;
			const char *why;
			if (weft_chunk_decode(&th->chunks[c], buf, cap, &n, &why))
				continue; /* the walkers count and report it */
			const uint64_t *w = *buf;
			for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(w[i + 1])) {
				if (weft_rec_type(w[i + 1]) != WEFT_R_SAMPLE || weft_rec_extra(w[i + 1]) < 1 || i + 3 > n)
					continue;
				uint32_t id = weft_rec_id(w[i + 1]);
				if (id <= maxid && by_id[id] != SIZE_MAX)
					push(&sp->series[by_id[id]], w[i], w[i + 2]);
			}
		}
	}
	free(by_id);
	for (size_t c = 0; c < sp->nseries; c++) {
		struct weft_sys_series *s = &sp->series[c];
		if (s->n) /* (pt is NULL without readings) */
			qsort(s->pt, s->n, sizeof(*s->pt), cmp_point);
		if (s->def->kind == WEFT_SYSK_CPU_USER_NS)
			sp->user = s;
		else if (s->def->kind == WEFT_SYSK_CPU_SYS_NS)
			sp->sys = s;
		else if (s->def->kind == WEFT_SYSK_RSS_BYTES)
			sp->rss = s;
	}
	const struct weft_sys_src_def *cm = &p->sys_sources[WEFT_SYS_CPU_MEM];
	if (cm->present && cm->state == WEFT_SYS_USED && sp->user && sp->user->n)
		sp->slice_min_ns = cm->period_ns ? cm->period_ns : 1;
}

int weft_sys_analyze(const struct weft_trace *t, struct weft_sys **out, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	*out = NULL;
	size_t with = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		with += t->procs[i].nsys_chans != 0;
	if (!with)
		return 0;
	struct weft_sys *s = calloc(1, sizeof(*s));
	if (!s || !(s->procs = calloc(with, sizeof(*s->procs))))
		weft_oom("reading the system sampler's records");
	uint64_t *buf = NULL;
	size_t cap = 0;
	for (size_t i = 0; i < t->nprocs; i++)
		if (t->procs[i].nsys_chans)
			analyze_proc(&t->procs[i], &s->procs[s->nprocs++], &buf, &cap);
	free(buf);
	*out = s;
	return 0;
}

const struct weft_sys_proc *weft_sys_for(const struct weft_sys *s, const struct weft_proc *p)
{
	for (size_t i = 0; s && i < s->nprocs; i++)
		if (s->procs[i].p == p)
			return &s->procs[i];
	return NULL;
}

void weft_sys_free(struct weft_sys *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nprocs; i++) {
		for (size_t c = 0; c < s->procs[i].nseries; c++)
			free(s->procs[i].series[c].pt);
		free(s->procs[i].series);
	}
	free(s->procs);
	free(s);
}

double weft_sys_at(const struct weft_sys_series *s, uint64_t t)
{
	if (!s->n)
		return 0;
	if (t <= s->pt[0].ts)
		return (double)s->pt[0].v;
	if (t >= s->pt[s->n - 1].ts)
		return (double)s->pt[s->n - 1].v;
	size_t lo = 0, hi = s->n - 1; /* pt[lo].ts <= t < pt[hi].ts */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->pt[mid].ts <= t)
			lo = mid;
		else
			hi = mid;
	}
	const struct weft_sys_point *a = &s->pt[lo], *b = &s->pt[hi];
	double f = (double)(t - a->ts) / (double)(b->ts - a->ts);
	return (double)a->v + ((double)b->v - (double)a->v) * f;
}

double weft_sys_rate(const struct weft_sys_series *s, size_t i, uint64_t wrap)
{
	if (i + 1 >= s->n || s->pt[i + 1].ts <= s->pt[i].ts)
		return 0;
	uint64_t a = s->pt[i].v, b = s->pt[i + 1].v, d;
	if (b >= a)
		d = b - a;
	else if (wrap && a <= wrap)
		d = b + (wrap - a); /* the counter passed max_energy_range_uj and started again at 0 */
	else
		return 0;
	return (double)d * 1e9 / (double)(s->pt[i + 1].ts - s->pt[i].ts);
}

static uint64_t nonneg(double x)
{
	return x > 0 ? (uint64_t)(x + 0.5) : 0;
}

int weft_sys_slice(const struct weft_sys_proc *sp, uint64_t begin, uint64_t end, struct weft_sys_slice *out)
{
	if (!sp || !sp->slice_min_ns || end <= begin || end - begin <= sp->slice_min_ns)
		return 0;
	memset(out, 0, sizeof(*out));
	out->user_ns = nonneg(weft_sys_at(sp->user, end) - weft_sys_at(sp->user, begin));
	if (sp->sys)
		out->sys_ns = nonneg(weft_sys_at(sp->sys, end) - weft_sys_at(sp->sys, begin));
	if (sp->rss && sp->rss->n) {
		double b = weft_sys_at(sp->rss, begin), e = weft_sys_at(sp->rss, end), mx = b > e ? b : e;
		size_t lo = 0, hi = sp->rss->n; /* the first reading after begin */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (sp->rss->pt[mid].ts <= begin)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t i = lo; i < sp->rss->n && sp->rss->pt[i].ts < end; i++)
			if ((double)sp->rss->pt[i].v > mx)
				mx = (double)sp->rss->pt[i].v;
		out->rss_bytes = nonneg(mx);
		out->rss_delta = e >= b ? (int64_t)(e - b + 0.5) : -(int64_t)(b - e + 0.5);
	}
	return 1;
}
