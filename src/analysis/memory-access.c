/*
 * memory-access.c - sampled memory accesses (mem_access) joined to the blocks they landed in
 * (analysis/memory.h). The scan collects them; sorted by time, they are merged into the replay:
 * before each record, the accesses up to its time are joined to the innermost block live at
 * their address (the replay keeps the live blocks by address range while there are accesses),
 * or whose chunk header they are in; the others wait for their thread's next memory record
 * (settle). At the end every access is charged, in time order, to its block's allocation site,
 * or to the unjoined.
 * Memory: proportional to the sampled accesses (a sample per many events, not per record).
 */
#include "analysis/memory-internal.h"
#include <stdlib.h>
#include <string.h>

#define GROW MEM_GROW

/* ---- accesses joined to the blocks they landed in ---- */

/* One more access charged to s at ts: its cumulative count, at most one point per resolution-wide
 * bucket (the bucket's last count, at the time of its last access). */
static void charge(struct weft_mem_access_site *s, uint64_t ts, uint64_t resolution)
{
	s->count++;
	if (s->npoints && ts - s->bucket_start < resolution) {
		s->points[s->npoints - 1].ts = ts;
		s->points[s->npoints - 1].live = s->count;
		return;
	}
	GROW(s->points, s->npoints, s->pcap);
	s->points[s->npoints++] = (struct weft_mem_point){ts, s->count, 0};
	s->bucket_start = ts;
}

static struct weft_mem_access_site *access_site(struct mem_replay *rp, uint32_t site)
{
	struct weft_mem_proc *mp = rp->mp;
	if (site >= rp->nslots) {
		size_t n = rp->nslots ? rp->nslots : 64;
		while (n <= site)
			n *= 2;
		rp->site_slot = weft_mem__realloc(rp->site_slot, n * sizeof(*rp->site_slot));
		memset(rp->site_slot + rp->nslots, 0, (n - rp->nslots) * sizeof(*rp->site_slot));
		rp->nslots = n;
	}
	if (!rp->site_slot[site]) {
		GROW(mp->access_sites, mp->naccess_sites, mp->access_site_cap);
		memset(&mp->access_sites[mp->naccess_sites], 0, sizeof(*mp->access_sites));
		mp->access_sites[mp->naccess_sites].site = site;
		rp->site_slot[site] = (uint32_t)++mp->naccess_sites;
	}
	return &mp->access_sites[rp->site_slot[site] - 1];
}

/* The thread that made accesses as tid at ts: of the threads with that tid, the latest begun by
 * then (tids are reused), else any; NULL: none. */
static struct mem_thread *thread_by_tid(struct mem_replay *rp, uint32_t tid, uint64_t ts)
{
	const struct weft_proc *p = rp->mp->p;
	size_t lo = 0, hi = rp->nthreads;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->threads[rp->bytid[mid]].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct mem_thread *best = NULL, *any = NULL;
	for (size_t i = lo; i < rp->nthreads && p->threads[rp->bytid[i]].tid == tid; i++) {
		struct mem_thread *c = &rp->threads[rp->bytid[i]];
		any = c;
		if (c->started && c->first_ts <= ts && (!best || c->first_ts >= best->first_ts))
			best = c;
	}
	return best ? best : any;
}

/* The accesses before `ts` (all: every one left), each to the innermost block live at its address
 * (whatever heap or thread it is from), or whose chunk header it is in; the others wait for
 * their thread's next memory record (settle). */
void weft_mem__join_accesses(struct mem_replay *rp, uint64_t ts, int all)
{
	for (; rp->next_acc < rp->acc.n && (all || rp->acc.a[rp->next_acc].ts < ts); rp->next_acc++) {
		struct mem_access *a = &rp->acc.a[rp->next_acc];
		uint64_t stack, start;
		if (weft_ranges__find(&rp->ranges, a->addr, NULL, NULL, &stack) ||
		    (a->addr <= UINT64_MAX - 16 && weft_ranges__find(&rp->ranges, a->addr + 16, &start, NULL, &stack) &&
		     start > a->addr)) {
			a->joined = 1;
			a->stack = (uint32_t)stack;
			continue;
		}
		struct mem_thread *c = thread_by_tid(rp, a->tid, a->ts);
		if (!c)
			continue;
		if (c->npend == WEFT_MEM_MAX_PENDING) { /* a thread with no record for long: the oldest stay out */
			memmove(c->pend, c->pend + 1, (c->npend - 1) * sizeof(*c->pend));
			c->npend--;
		}
		GROW(c->pend, c->npend, c->pendcap);
		c->pend[c->npend++] = rp->next_acc;
	}
}

/* Thread c's next memory record r came: its waiting accesses that r's allocation call wrote are
 * its block's (r's stack); the others stay out. */
void weft_mem__settle(struct mem_replay *rp, struct mem_thread *c, const struct mem_rec *r)
{
	uint64_t addr = r->type == WEFT_EV_ALLOC ? r->addr : r->type == WEFT_EV_REALLOC ? r->addr2 : 0;
	for (size_t i = 0; addr && i < c->npend; i++) {
		struct mem_access *a = &rp->acc.a[c->pend[i]];
		if (weft_mem_written_by_call(addr, r->size, a->addr)) {
			a->joined = 1;
			a->stack = r->stack;
		}
	}
	c->npend = 0;
}

/* Every access charged, in time order: to its block's allocation site, or to the unjoined. */
void weft_mem__charge_accesses(struct mem_replay *rp)
{
	struct weft_mem_proc *mp = rp->mp;
	for (size_t i = 0; i < rp->acc.n; i++) {
		const struct mem_access *a = &rp->acc.a[i];
		if (!a->joined) {
			charge(&mp->unjoined, a->ts, rp->acc_resolution);
			continue;
		}
		mp->joined_accesses++;
		charge(access_site(rp, a->stack ? mp->stacks[a->stack].site : 0), a->ts, rp->acc_resolution);
	}
}

static const struct weft_proc *sort_proc; /* qsort has no user pointer */
static int cmp_tid(const void *a, const void *b)
{
	uint32_t x = sort_proc->threads[*(const uint32_t *)a].tid, y = sort_proc->threads[*(const uint32_t *)b].tid;
	return x < y ? -1 : x > y;
}

static int cmp_access(const void *a, const void *b)
{
	const struct mem_access *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}


static int cmp_point(const void *a, const void *b)
{
	const struct weft_mem_point *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* Sampled accesses as a cumulative count, one point per ~span/50000 (the last of each). */
void weft_mem__access_points(struct weft_mem_proc *mp)
{
	if (!mp->naccesses)
		return;
	mp->has_records = 1;
	qsort(mp->accesses, mp->naccesses, sizeof(*mp->accesses), cmp_point);
	uint64_t span = mp->accesses[mp->naccesses - 1].ts - mp->accesses[0].ts, res = span / 50000 ? span / 50000 : 1;
	size_t out = 0;
	uint64_t bucket = 0;
	for (size_t i = 0; i < mp->naccesses; i++) {
		uint64_t ts = mp->accesses[i].ts;
		if (out && ts - bucket < res) { /* the same bucket: its count grows */
			mp->accesses[out - 1].live = i + 1;
			continue;
		}
		bucket = ts;
		mp->accesses[out].ts = ts;
		mp->accesses[out].live = i + 1;
		out++;
	}
	mp->naccesses = out;
}

/* Before the replay: the accesses in time order, the threads by tid, the points' resolution. */
void weft_mem__access_prepare(struct mem_replay *rp)
{
	const struct weft_proc *p = rp->mp->p;
	if (!rp->acc.n)
		return;
	qsort(rp->acc.a, rp->acc.n, sizeof(*rp->acc.a), cmp_access);
	uint64_t aspan = rp->acc.a[rp->acc.n - 1].ts - rp->acc.a[0].ts;
	rp->acc_resolution = aspan / 50000 ? aspan / 50000 : 1; /* at most ~50000 points per site */
	if (!(rp->bytid = calloc(p->nthreads + 1, sizeof(*rp->bytid))))
		weft_oom("the memory analysis");
	for (size_t i = 0; i < p->nthreads; i++)
		rp->bytid[i] = (uint32_t)i;
	sort_proc = p;
	qsort(rp->bytid, p->nthreads, sizeof(*rp->bytid), cmp_tid);
}
