/*
 * sqlite-walk.c - one process's rows, in memory bounded by a chunk per thread plus the blocks
 * live at any one time (not by the size of the trace).
 *
 * Each thread has a walker (model.c) fed one chunk at a time. What a row can be written for at
 * once - a slice at its end (its id, utid << 32 | serial, is known at its begin, so children
 * name their parent), an instant, a counter, an async slice when its second half comes - is
 * written from the walker's callback. What needs other threads - memory records (a block
 * freed by another thread than the one that allocated it) and sampled accesses (the sampler's
 * stream holds every thread's) - becomes a small item, and the threads' items are merged by
 * time through a binary heap over the threads, refilling a thread's items from its next chunk
 * when they run out. The merged stream is replayed against the live blocks (analysis/
 * livemap.h): an allocation takes the next allocation id, a free writes its block's row, an
 * access is joined to the innermost block live at its address then and to the innermost slice
 * then open on its thread's own track (the threads' begins and ends on that track are items
 * too, in processes that sampled accesses), else classified by the process's memory map.
 */
#include "export/sqlite-internal.h"
#include "analysis/livemap.h"
#include "analysis/memory.h"
#include "collect/perf_sample.h"
#include "export/model.h"
#include "format/format.h"
#include "format/minheap.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GROW(arr, n, cap)                                                         \
	do {                                                                      \
		if ((n) == (cap)) {                                               \
			size_t c_ = (cap) ? (cap) * 2 : 64;                       \
			void *p_ = realloc((arr), c_ * sizeof(*(arr)));           \
			if (!p_)                                                  \
				weft_oom("writing SQLite");                       \
			(arr) = p_;                                               \
			(cap) = c_;                                               \
		}                                                                 \
	} while (0)

/* A record another thread's replay depends on. */
struct item {
	uint64_t ts, addr, addr2, size, serial, value;
	uint32_t id;   /* heap (memory), tid (access) */
	uint32_t feed; /* the thread's n-th chunk that gave items */
	uint32_t ord;  /* push order: ties in time keep it */
	uint8_t kind, mfn;
};

struct open_slice { int64_t id; uint64_t ts; uint32_t site; };
struct track_stack { unsigned track; struct open_slice *e; size_t n, cap; };

/* Async slices of a process: begin and end may come from different threads. */
struct async_half { uint64_t key, aid; uint32_t site; int is_end; uint64_t ts; int64_t utid; };
struct async_map { struct async_half *e; size_t cap, n; };

struct pwalk;
struct sthread {
	struct pwalk *pw;
	struct weft_walker w;
	struct weft_walk_stats st;
	const struct weft_thread_data *th;
	int64_t utid;
	size_t next_chunk;
	int done, started;
	uint64_t first_ts;          /* of its first event: tells reused tids apart */
	struct item *q;             /* items of the chunks fed, not yet merged (by time) */
	size_t qn, qhead, qcap;
	uint32_t feeds, pushed;     /* chunks that gave items; items pushed */
	uint64_t *own;              /* serials open on its own track, in the merged stream */
	size_t nown, owncap;
	struct track_stack *stacks; /* slices open per track, in its own walk */
	size_t nstacks;
	struct pending *pend;       /* its accesses in no live block, waiting for its next record */
	size_t npend, pendcap;
};

/* An access that landed in no live block, held until its thread's next memory record (the join
 * analysis/memory.h describes). */
struct pending { struct item it; int64_t slice; };

struct region { uint64_t start, end; const char *kind; int inferred; };

struct pwalk {
	struct weft_sqlite_db *d;
	const struct weft_proc *p;
	int64_t upid;
	int want_own;               /* the process sampled accesses: track own-track slices */
	struct sthread *th;
	size_t n;
	size_t *heap;               /* merge heap: thread indices by their next item's time */
	size_t nheap;
	size_t *bytid;              /* thread indices sorted by tid */
	struct async_map async;
	struct weft_livemap live;
	uint64_t *buf;              /* decoded chunk (one at a time, any thread) */
	size_t cap;
	struct region *reg;         /* the memory map (parsed at the first access it classifies, or
				     * the first allocation where the process sampled accesses), then
				     * the C heap's growth since, as its blocks show it (grow_regions) */
	size_t nreg, regcap;
	size_t grown;               /* the region grow_regions extended or found last, + 1 */
	int reg_parsed;
};

/* ---- rows written during a thread's own walk ---- */

static struct async_half *async_slot(struct async_map *m, uint32_t site, uint64_t aid)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 256;
		struct async_half *ne = calloc(cap, sizeof(*ne));
		if (!ne)
			weft_oom("writing SQLite");
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->e[i].key)
				continue;
			size_t h = (size_t)((m->e[i].key * 0x9e3779b97f4a7c15ull) >> 20) & (cap - 1);
			while (ne[h].key)
				h = (h + 1) & (cap - 1);
			ne[h] = m->e[i];
		}
		free(m->e);
		m->e = ne;
		m->cap = cap;
	}
	uint64_t key = ((aid * 0x9e3779b97f4a7c15ull) ^ site) | 1;
	size_t h = (size_t)((key * 0x9e3779b97f4a7c15ull) >> 20) & (m->cap - 1);
	while (m->e[h].key && !(m->e[h].key == key && m->e[h].aid == aid && m->e[h].site == site))
		h = (h + 1) & (m->cap - 1);
	if (!m->e[h].key) {
		m->e[h].key = key;
		m->e[h].aid = aid;
		m->e[h].site = site;
		m->e[h].is_end = -1; /* new */
		m->n++;
	}
	return &m->e[h];
}

static struct track_stack *stack_of(struct sthread *s, unsigned track)
{
	for (size_t i = 0; i < s->nstacks; i++)
		if (s->stacks[i].track == track)
			return &s->stacks[i];
	struct track_stack *ts = realloc(s->stacks, (s->nstacks + 1) * sizeof(*ts));
	if (!ts)
		weft_oom("writing SQLite");
	s->stacks = ts;
	ts = &s->stacks[s->nstacks++];
	memset(ts, 0, sizeof(*ts));
	ts->track = track;
	return ts;
}

static const char *site_cat(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat && *p->sites[id].cat ? p->sites[id].cat
												 : NULL;
}

static void slice_row(struct sthread *s, int64_t id, unsigned track, uint64_t ts, uint64_t dur, uint32_t site,
		      size_t depth, int64_t parent, int unterminated)
{
	struct weft_sqlite_db *d = s->pw->d;
	const struct weft_proc *p = s->pw->p;
	const char *name = weft_site_name(p, site);
	weft_sq_row(&d->sq, &d->tab[T_SLICE], "iitiittizi", id, s->utid, track ? weft_track_name(p, track) : NULL,
		    (int64_t)ts, (int64_t)dur, name ? name : "?", site_cat(p, site), (int64_t)depth, parent,
		    (int64_t)unterminated);
}

static void async_row(struct sthread *s, uint64_t aid, uint32_t site, int64_t utid, uint64_t b, uint64_t e,
		      int unterminated)
{
	struct weft_sqlite_db *d = s->pw->d;
	char track[64];
	snprintf(track, sizeof(track), "async 0x%llx", (unsigned long long)aid);
	const char *name = weft_site_name(s->pw->p, site);
	weft_sq_row(&d->sq, &d->tab[T_SLICE], "iiTiittizi", ((int64_t)1 << 62) + d->next_async++, utid, track,
		    (int64_t)b, (int64_t)(e > b ? e - b : 0), name ? name : "?", site_cat(s->pw->p, site), (int64_t)0,
		    (int64_t)0, (int64_t)unterminated);
}

static void push(struct sthread *s, const struct weft_ev *ev)
{
	GROW(s->q, s->qn, s->qcap);
	s->q[s->qn++] = (struct item){ev->ts,	  ev->addr,	 ev->addr2,	       ev->size,
				      ev->serial, ev->value,	 ev->id,	       s->feeds + 1,
				      s->pushed++, (uint8_t)ev->kind, (uint8_t)ev->mfn};
}

static void on_event(void *ud, const struct weft_ev *ev)
{
	struct sthread *s = ud;
	const struct weft_proc *p = s->pw->p;
	if (!s->started) {
		s->started = 1;
		s->first_ts = ev->ts;
	}
	switch (ev->kind) {
	case WEFT_EV_BEGIN: {
		struct track_stack *ts = stack_of(s, ev->track);
		GROW(ts->e, ts->n, ts->cap);
		ts->e[ts->n++] = (struct open_slice){(s->utid << 32) | (int64_t)ev->serial, ev->ts, ev->id};
		if (s->pw->want_own && !ev->track)
			push(s, ev);
		break;
	}
	case WEFT_EV_END: {
		struct track_stack *ts = stack_of(s, ev->track);
		if (!ts->n)
			break;
		struct open_slice o = ts->e[--ts->n];
		slice_row(s, o.id, ev->track, o.ts, ev->ts - o.ts, o.site, ts->n, ts->n ? ts->e[ts->n - 1].id : 0,
			  (ev->flags & WEFT_EVF_UNTERMINATED) != 0);
		if (s->pw->want_own && !ev->track)
			push(s, ev);
		break;
	}
	case WEFT_EV_COMPLETE:
	case WEFT_EV_INSTANT: {
		/* no serial of their own: ids above every begun slice's (serials stay below 2^31) */
		struct track_stack *ts = stack_of(s, ev->track);
		static const int64_t other = (int64_t)1 << 31;
		int64_t id = (s->utid << 32) | (other + (int64_t)(s->st.events & 0x7fffffff));
		slice_row(s, id, ev->track, ev->ts, ev->kind == WEFT_EV_COMPLETE ? ev->end_ts - ev->ts : 0, ev->id, ts->n,
			  ts->n ? ts->e[ts->n - 1].id : 0, 0);
		break;
	}
	case WEFT_EV_ASYNC_BEGIN:
	case WEFT_EV_ASYNC_END: {
		int is_end = ev->kind == WEFT_EV_ASYNC_END;
		struct async_half *a = async_slot(&s->pw->async, ev->id, ev->value);
		if (a->is_end < 0 || a->is_end == is_end) { /* the first half (a repeat replaces it) */
			a->is_end = is_end;
			a->ts = ev->ts;
			a->utid = s->utid;
			break;
		}
		async_row(s, ev->value, ev->id, is_end ? a->utid : s->utid, is_end ? a->ts : ev->ts,
			  is_end ? ev->ts : a->ts, 0);
		a->is_end = -1; /* done: a later begin with the same id starts anew */
		break;
	}
	case WEFT_EV_COUNTER: {
		struct weft_sqlite_db *d = s->pw->d;
		const char *name = weft_site_name(p, ev->id);
		const char *unit = ev->id < p->nsites && p->sites[ev->id].defined ? p->sites[ev->id].unit : NULL;
		double v;
		if (ev->is_double)
			memcpy(&v, &ev->value, sizeof(v));
		else
			v = (double)(int64_t)ev->value;
		weft_sq_row(&d->sq, &d->tab[T_COUNTER], "niiittd", s->pw->upid, s->utid, (int64_t)ev->ts,
			    name ? name : "?", unit && *unit ? unit : NULL, v);
		break;
	}
	case WEFT_EV_ALLOC:
	case WEFT_EV_FREE:
	case WEFT_EV_REALLOC:
		if (ev->id && (ev->id >= p->nsites || !p->sites[ev->id].defined || p->sites[ev->id].kind != WEFT_KIND_HEAP))
			break; /* a heap that was never defined (a damaged trace) */
		push(s, ev);
		break;
	case WEFT_EV_ACCESS:
		push(s, ev);
		break;
	default:
		break;
	}
}

static int cmp_item(const void *a, const void *b)
{
	const struct item *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->ord < y->ord ? -1 : x->ord > y->ord;
}

/* Feeds s chunks until one gives items or none are left; 0 when it has no items at all. The
 * items not merged yet stay, in time order: a stream is in time order per thread, except the
 * access sampler's, which drains one ring after another (a batch from one thread's ring may
 * be older than the end of the batch before it); fill() keeps a chunk of lookahead, and this
 * sorts what it holds. */
static int extend(struct pwalk *pw, struct sthread *s)
{
	if (s->qhead) {
		memmove(s->q, s->q + s->qhead, (s->qn - s->qhead) * sizeof(*s->q));
		s->qn -= s->qhead;
		s->qhead = 0;
	}
	size_t had = s->qn;
	while (s->qn == had && !s->done) {
		if (s->next_chunk < s->th->nchunks) {
			size_t n;
			const char *why;
			int rc = weft_chunk_decode_prepared(&s->th->chunks[s->next_chunk++], pw->p, &pw->buf, &pw->cap, &n,
							    &why);
			if (rc)
				weft_walk_stats_refused(&s->st, rc, why);
			else
				weft_walker_feed_prepared(&s->w, pw->buf, n);
		} else {
			weft_walker_finish(&s->w, pw->d->t->last_ns);
			s->done = 1;
		}
	}
	if (s->qn > had) {
		s->feeds++;
		for (size_t i = 1; i < s->qn; i++)
			if (s->q[i].ts < s->q[i - 1].ts) {
				qsort(s->q, s->qn, sizeof(*s->q), cmp_item);
				break;
			}
	}
	return s->qn > 0;
}

/* Items, with a chunk of lookahead: while the thread's next item comes from the last chunk fed,
 * the next chunk is fed too, as it may hold older items (the sampler's stream). Before the
 * thread's next item is compared with other threads', so the merge sees its true least. */
static int fill(struct pwalk *pw, struct sthread *s)
{
	if (s->qhead == s->qn && !extend(pw, s))
		return 0;
	while (!s->done && s->q[s->qhead].feed == s->feeds)
		extend(pw, s);
	return 1;
}

/* ---- the merge ---- */

static int before(const void *ctx, size_t a, size_t b)
{
	const struct pwalk *pw = ctx;
	const struct sthread *x = &pw->th[a], *y = &pw->th[b];
	uint64_t tx = x->q[x->qhead].ts, ty = y->q[y->qhead].ts;
	return tx < ty || (tx == ty && a < b);
}

static void sift_down(struct pwalk *pw, size_t i)
{
	weft_heap_sift_down(pw->heap, pw->nheap, i, before, pw);
}

/* ---- the replay: blocks and accesses ---- */

/* ---- the memory map ---- */

static struct region *parse_regions(const struct weft_proc *p, size_t *n, size_t *capp)
{
	*n = *capp = 0;
	char *maps = weft_proc_maps(p);
	if (!maps)
		return NULL;
	size_t cap = 64, k = 0;
	struct region *r = malloc(cap * sizeof(*r));
	const char *exe = NULL;
	size_t exe_len = 0;
	for (const char *line = maps; r && *line;) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		unsigned long long a, b;
		int path_at = 0;
		char l[1200];
		snprintf(l, sizeof(l), "%.*s", (int)(len < sizeof(l) ? len : sizeof(l) - 1), line);
		if (sscanf(l, "%llx-%llx %*s %*s %*s %*s %n", &a, &b, &path_at) >= 2) {
			const char *path = path_at ? l + path_at : "";
			const char *kind = "anonymous";
			if (!strncmp(path, "[stack", 6))
				kind = "stack";
			else if (!strcmp(path, "[heap]"))
				kind = "brk heap";
			else if (path[0] == '[')
				kind = "kernel";
			else if (path[0] == '/') {
				if (!exe) { /* the first file mapped is the executable */
					exe = line + path_at;
					exe_len = strlen(path);
				}
				kind = !strncmp(line + path_at, exe, exe_len) ? "binary" : "library";
			}
			if (k == cap) {
				struct region *nr = realloc(r, cap * 2 * sizeof(*r));
				if (!nr)
					break;
				r = nr;
				cap *= 2;
			}
			r[k++] = (struct region){a, b, kind, 0};
		}
		line += len + (eol ? 1 : 0);
	}
	free(maps);
	*n = k;
	*capp = r ? cap : 0;
	return r;
}

static void need_regions(struct pwalk *pw)
{
	if (!pw->reg_parsed) {
		pw->reg_parsed = 1;
		pw->reg = parse_regions(pw->p, &pw->nreg, &pw->regcap);
	}
}

static const char *region_of(const struct pwalk *pw, uint64_t addr)
{
	for (size_t i = pw->nreg; i-- > 0;) /* later snapshots (and what grew since) last: they win */
		if (addr >= pw->reg[i].start && addr < pw->reg[i].end)
			return pw->reg[i].kind;
	return "unknown";
}

#define PAGE_UP(x) (((x) + 4095) & ~(uint64_t)4095)
#define ARENA_GAP ((uint64_t)1 << 20) /* a block this close past a piece of the heap's memory grew it */

/* The lowest start of a mapping (from the map) at or above addr: what a region growing up from
 * below addr may not pass. */
static uint64_t next_mapping(const struct pwalk *pw, uint64_t addr)
{
	uint64_t lim = UINT64_MAX;
	for (size_t i = 0; i < pw->nreg; i++)
		if (!pw->reg[i].inferred && pw->reg[i].start >= addr && pw->reg[i].start < lim)
			lim = pw->reg[i].start;
	return lim;
}

/* The C heap's memory as its blocks show it, so that an access is classified by the map as it
 * was then, not as it was at start: the map is read at start (and after dlopen), while glibc
 * grows its heap with brk (the [heap] mapping's end moves up) and maps thread arenas with mmap
 * (grown by mprotect). A block just past the brk heap's end (within ARENA_GAP: a heap grows by
 * its top chunk), below the next mapping, moves that end up to its last page; a block in no
 * mapping at all is in memory the allocator mapped since: a "malloc arena" region, which the
 * blocks just past it extend the same way. */
static void grow_regions(struct pwalk *pw, uint64_t addr, uint64_t size)
{
	uint64_t end = PAGE_UP(addr + (size ? size : 1));
	if (end <= addr)
		return;
	if (pw->grown && addr >= pw->reg[pw->grown - 1].start && end <= pw->reg[pw->grown - 1].end)
		return; /* most blocks: inside the piece of the heap the last one was in */
	struct region *r = NULL;
	for (size_t i = pw->nreg; i-- > 0;) { /* the latest region at addr: it is known */
		struct region *x = &pw->reg[i];
		if (addr >= x->start && addr < x->end) {
			if (!x->inferred && strcmp(x->kind, "brk heap"))
				return; /* in a mapping that is not the heap's */
			pw->grown = i + 1;
			if (end <= x->end)
				return;
			r = x;
			break;
		}
	}
	for (size_t i = pw->nreg; !r && i-- > 0;) { /* one that may grow to it */
		struct region *x = &pw->reg[i];
		if (x->end <= addr && addr - x->end < ARENA_GAP && (x->inferred || !strcmp(x->kind, "brk heap")) &&
		    next_mapping(pw, x->end) > addr)
			r = x;
	}
	if (r) {
		uint64_t lim = next_mapping(pw, r->end);
		r->end = end < lim ? end : lim;
		pw->grown = (size_t)(r - pw->reg) + 1;
		return;
	}
	if (pw->nreg == pw->regcap) {
		size_t cap = pw->regcap ? pw->regcap * 2 : 16;
		struct region *nr = realloc(pw->reg, cap * sizeof(*nr));
		if (!nr)
			weft_oom("writing SQLite");
		pw->reg = nr;
		pw->regcap = cap;
	}
	pw->reg[pw->nreg++] = (struct region){addr & ~(uint64_t)4095, end, "malloc arena", 1};
	pw->grown = pw->nreg;
}

/* ---- blocks ---- */

static void block_row(struct pwalk *pw, const struct weft_live_block *b, uint64_t free_ts, int64_t free_utid,
		      uint64_t free_serial)
{
	struct weft_sqlite_db *d = pw->d;
	const char *heap = b->heap ? weft_site_name(pw->p, b->heap) : "malloc";
	int64_t fslice = free_utid && free_serial ? (free_utid << 32) | (int64_t)free_serial : 0;
	int64_t aslice = b->serial ? (b->thread << 32) | (int64_t)b->serial : 0;
	weft_sq_row(&d->sq, &d->tab[T_ALLOC], "iiiizziittzz", (int64_t)b->id, pw->upid, b->thread, (int64_t)b->ts,
		    (int64_t)free_ts, free_utid, (int64_t)b->addr, (int64_t)b->size, heap ? heap : "heap",
		    weft_mem_fn_name(b->fn), aslice, fslice);
}

static void do_free(struct pwalk *pw, const struct sthread *s, uint32_t heap, uint64_t addr, uint64_t ts,
		    uint64_t serial)
{
	struct weft_live_block *b = weft_livemap_find(&pw->live, heap, addr);
	if (!b)
		return; /* never seen allocated: before tracing, left out by threshold/sampling, or not the program's */
	block_row(pw, b, ts ? ts : 1, s->utid, serial);
	weft_livemap_remove(&pw->live, heap, addr);
}

static void do_alloc(struct pwalk *pw, const struct sthread *s, const struct item *it, uint64_t addr)
{
	if (weft_livemap_find(&pw->live, it->id, addr)) /* its free never came: ends here, in no slice */
		do_free(pw, s, it->id, addr, it->ts, 0);
	struct weft_live_block *b = weft_livemap_insert(&pw->live, it->id, addr, it->size, (uint64_t)++pw->d->next_alloc);
	if (!b)
		weft_oom("writing SQLite");
	b->ts = it->ts;
	b->serial = it->serial;
	b->thread = s->utid;
	b->fn = it->mfn;
	if (pw->want_own && !it->id) { /* the C heap's growth, for the accesses' regions */
		need_regions(pw);
		grow_regions(pw, addr, it->size);
	}
}

/* The thread with that tid that had begun by ts (the latest such: tids are reused). */
static struct sthread *thread_by_tid(struct pwalk *pw, uint32_t tid, uint64_t ts)
{
	size_t lo = 0, hi = pw->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (pw->th[pw->bytid[mid]].th->tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	struct sthread *best = NULL, *any = NULL;
	for (size_t i = lo; i < pw->n && pw->th[pw->bytid[i]].th->tid == tid; i++) {
		struct sthread *s = &pw->th[pw->bytid[i]];
		any = s;
		if (s->started && s->first_ts <= ts && (!best || s->first_ts >= best->first_ts))
			best = s;
	}
	return best ? best : any;
}

static void write_access(struct pwalk *pw, const struct item *it, int64_t utid, int64_t slice,
			 const struct weft_live_block *b)
{
	static const char *const src[] = {"?",	    "pagefault",   "pebs-load", "pebs-store",
					  "ibs-op", "watch-write", "watch-rw"};
	struct weft_sqlite_db *d = pw->d;
	int hw = it->mfn >= 2 && it->mfn <= 4; /* latency (size) and data source (value) */
	/* stores: PEBS stores and write-only watchpoints; PEBS loads; IBS says which in its data
	 * source; page faults and read/write watchpoints cannot tell */
	int64_t wr = it->mfn == 3 || it->mfn == 5 ? 1 : it->mfn == 2 ? 0 : hw ? weft_perf_data_src_is_write(it->value) : -1;
	if (!b)
		need_regions(pw);
	const char *region = b ? (b->heap ? weft_site_name(pw->p, b->heap) : "malloc") : region_of(pw, it->addr);
	const char *source = src[it->mfn < sizeof(src) / sizeof(src[0]) ? it->mfn : 0];
	int64_t alloc = b ? (int64_t)b->id : 0;
	if (hw)
		weft_sq_row(&d->sq, &d->tab[T_ACCESS], "niiziwtiiizzt", (int64_t)it->ts, pw->upid, utid, (int64_t)it->addr,
			    wr, source, (int64_t)it->size, (int64_t)it->value, (int64_t)it->addr2, alloc, slice, region);
	else
		weft_sq_row(&d->sq, &d->tab[T_ACCESS], "niiziwtnnizzt", (int64_t)it->ts, pw->upid, utid, (int64_t)it->addr,
			    wr, source, (int64_t)it->addr2, alloc, slice, region);
}

/* The live block an access at addr belongs to: the innermost containing it, else the one whose
 * chunk header (the 16 bytes before it, where malloc keeps its size) it is in. */
static const struct weft_live_block *block_at(struct pwalk *pw, uint64_t addr)
{
	const struct weft_live_block *b = weft_livemap_containing(&pw->live, addr);
	if (b || addr > UINT64_MAX - 16)
		return b;
	b = weft_livemap_containing(&pw->live, addr + 16);
	return b && b->addr > addr ? b : NULL;
}

/* The accesses s held (in no live block when taken), now that its next record came: b the block
 * that record allocated (NULL: it was no allocation). Those the call wrote join b; the rest are
 * in no recorded block. */
static void settle(struct pwalk *pw, struct sthread *s, const struct weft_live_block *b)
{
	for (size_t i = 0; i < s->npend; i++) {
		const struct pending *pa = &s->pend[i];
		int wrote = b && weft_mem_written_by_call(b->addr, b->size, pa->it.addr);
		write_access(pw, &pa->it, s->utid, pa->slice, wrote ? b : NULL);
	}
	s->npend = 0;
}

static void access_row(struct pwalk *pw, const struct item *it)
{
	struct sthread *by = thread_by_tid(pw, it->id, it->ts);
	int64_t utid = by ? by->utid : 0;
	int64_t slice = by && by->nown ? (utid << 32) | (int64_t)by->own[by->nown - 1] : 0;
	const struct weft_live_block *b = block_at(pw, it->addr);
	if (b || !by || it->mfn >= 5) { /* (a watchpoint's address is the program's variable) */
		write_access(pw, it, utid, slice, b);
		return;
	}
	if (by->npend == WEFT_MEM_MAX_PENDING) { /* a thread with no record for long: the oldest go */
		write_access(pw, &by->pend[0].it, utid, by->pend[0].slice, NULL);
		memmove(by->pend, by->pend + 1, (by->npend - 1) * sizeof(*by->pend));
		by->npend--;
	}
	GROW(by->pend, by->npend, by->pendcap);
	by->pend[by->npend++] = (struct pending){*it, slice};
}

static void apply(struct pwalk *pw, struct sthread *s, const struct item *it)
{
	if (s->npend && (it->kind == WEFT_EV_ALLOC || it->kind == WEFT_EV_FREE || it->kind == WEFT_EV_REALLOC)) {
		const struct weft_live_block *b = NULL;
		if (it->kind == WEFT_EV_ALLOC || (it->kind == WEFT_EV_REALLOC && it->addr2)) {
			if (it->kind == WEFT_EV_REALLOC && it->addr)
				do_free(pw, s, it->id, it->addr, it->ts, it->serial);
			do_alloc(pw, s, it, it->kind == WEFT_EV_ALLOC ? it->addr : it->addr2);
			b = weft_livemap_find(&pw->live, it->id, it->kind == WEFT_EV_ALLOC ? it->addr : it->addr2);
			settle(pw, s, b);
			return;
		}
		settle(pw, s, NULL);
	}
	switch (it->kind) {
	case WEFT_EV_BEGIN:
		GROW(s->own, s->nown, s->owncap);
		s->own[s->nown++] = it->serial;
		break;
	case WEFT_EV_END:
		while (s->nown && s->own[s->nown - 1] != it->serial)
			s->nown--;
		if (s->nown)
			s->nown--;
		break;
	case WEFT_EV_ALLOC:
		do_alloc(pw, s, it, it->addr);
		break;
	case WEFT_EV_FREE:
		do_free(pw, s, it->id, it->addr, it->ts, it->serial);
		break;
	case WEFT_EV_REALLOC:
		if (it->addr)
			do_free(pw, s, it->id, it->addr, it->ts, it->serial);
		if (it->addr2)
			do_alloc(pw, s, it, it->addr2);
		break;
	case WEFT_EV_ACCESS:
		access_row(pw, it);
		break;
	}
}

/* ---- the process ---- */

static const struct weft_proc *sort_proc; /* qsort has no user pointer */
static int cmp_tid(const void *a, const void *b)
{
	uint32_t x = sort_proc->threads[*(const size_t *)a].tid, y = sort_proc->threads[*(const size_t *)b].tid;
	return x < y ? -1 : x > y;
}

static void live_row(void *ud, struct weft_live_block *b)
{
	block_row(ud, b, 0, 0, 0);
}

void weft_sqlite_walk_proc(struct weft_sqlite_db *d, size_t proc, struct weft_export_summary *sum)
{
	const struct weft_proc *p = &d->t->procs[proc];
	struct pwalk pw = {.d = d, .p = p, .upid = (int64_t)proc + 1, .n = p->nthreads};
	/* Accesses were sampled, or watchpoints hit: their totals say so (written at stop), or else
	 * the sampler's stream (named by its first record - not there when the sampler first ran
	 * after the run stopped: a short program, whose hits the last drain put in its own threads'
	 * streams). */
	pw.want_own = p->has_access || p->has_watch;
	for (size_t k = 0; k < p->nthreads && !pw.want_own; k++)
		if (p->threads[k].name && !strcmp(p->threads[k].name, "weft-access"))
			pw.want_own = 1;
	pw.th = calloc(pw.n + 1, sizeof(*pw.th));
	pw.heap = calloc(pw.n + 1, sizeof(*pw.heap));
	pw.bytid = calloc(pw.n + 1, sizeof(*pw.bytid));
	if (!pw.th || !pw.heap || !pw.bytid)
		weft_oom("writing SQLite");
	weft_livemap_init(&pw.live);
	for (size_t k = 0; k < pw.n; k++) {
		struct sthread *s = &pw.th[k];
		s->pw = &pw;
		s->th = &p->threads[k];
		s->utid = d->utid_base[proc] + (int64_t)k;
		weft_walker_init(&s->w, p, on_event, s, &s->st);
		pw.bytid[k] = k;
	}
	sort_proc = p;
	qsort(pw.bytid, pw.n, sizeof(*pw.bytid), cmp_tid);
	for (size_t k = 0; k < pw.n; k++)
		if (fill(&pw, &pw.th[k]))
			pw.heap[pw.nheap++] = k;
	for (size_t i = pw.nheap / 2; i-- > 0;)
		sift_down(&pw, i);
	while (pw.nheap) {
		struct sthread *s = &pw.th[pw.heap[0]];
		apply(&pw, s, &s->q[s->qhead++]);
		if (!fill(&pw, s))
			pw.heap[0] = pw.heap[--pw.nheap];
		sift_down(&pw, 0);
	}
	/* async slices begun and never ended: open until the end of the trace */
	for (size_t k = 0; k < pw.async.cap; k++) {
		struct async_half *a = &pw.async.e[k];
		if (a->key && a->is_end == 0 && pw.n)
			async_row(&pw.th[0], a->aid, a->site, a->utid, a->ts, d->t->last_ns, 1);
	}
	for (size_t k = 0; k < pw.n; k++) /* accesses after a thread's last record */
		settle(&pw, &pw.th[k], NULL);
	weft_livemap_foreach(&pw.live, live_row, &pw); /* never freed */
	for (size_t k = 0; k < pw.n; k++) {
		struct sthread *s = &pw.th[k];
		weft_export_summary_add(sum, &s->st);
		for (size_t i = 0; i < s->nstacks; i++)
			free(s->stacks[i].e);
		free(s->stacks);
		free(s->q);
		free(s->own);
		free(s->pend);
	}
	sum->dropped += weft_proc_dropped(p);
	weft_livemap_free(&pw.live);
	free(pw.async.e);
	free(pw.reg);
	free(pw.buf);
	free(pw.th);
	free(pw.heap);
	free(pw.bytid);
}
