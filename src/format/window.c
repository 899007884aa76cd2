/*
 * window.c - a time window of a trace (`weft convert --time FROM:TO`, docs/time-window.md):
 * after loading, each thread's chunks are cut down to those of the window, so every converter
 * and report reads the window as if it were the whole trace, and the chunks outside it are
 * never decoded.
 *
 * The time index (CHUNK_INDEX records, chunkindex.h) gives each chunk's times and how the
 * thread's slice depth moves through it. Per thread:
 *   - k, the first chunk that reaches FROM, and e, the last that starts by TO; the chunks
 *     between them are kept as they are (undecoded);
 *   - the context: the slices open at FROM begin before it, and the chunk holding each one's
 *     BEGIN is found from the depths alone: walking back from k with T = the depth at k's start,
 *     a chunk whose lowest depth is below T holds the begins of the levels above it (T becomes
 *     that lowest depth), and the walk ends at T = 0. Only those chunks (at most one per open
 *     level) are decoded; the stack is replayed through them (a level above the lowest depth of
 *     the chunks skipped in between was closed there). Counters' last values before FROM come
 *     from the nearest earlier chunks that hold counter records;
 *   - chunk k becomes a head chunk: the open slices' BEGIN records (with their arguments, at
 *     their real times), the counters' last values, then k's records from FROM on; chunk e loses
 *     the records after TO (slices still open at TO are closed there by the walker, flagged
 *     unterminated).
 * A chunk without an index entry (a trace written before format 1.8, or one cut short before
 * its index records) is decoded once to compute the same entry: the window is still right,
 * only the cost is the whole trace's, and a warning says so.
 * Head and tail chunks are rewritten as packed, compressed chunks owned by the trace. Exact for
 * properly nested slices on a thread's own track; slices on named tracks and async slices open
 * at FROM are not carried into the window (their ends in the window are skipped as ends without
 * a begin).
 */
#include "reader.h"
#include "chunkindex.h"
#include "format.h"
#include "pack.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		weft_oom("reading a time window");
	return p;
}

/* A run of words: a record group (an event and the arguments, flows, stack after it). */
struct words {
	uint64_t *w;
	size_t n, cap;
};

static void words_put(struct words *b, const uint64_t *w, size_t n)
{
	if (!n)
		return;
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 64;
		b->w = xrealloc(b->w, b->cap * 8);
	}
	memcpy(b->w + b->n, w, n * 8);
	b->n += n;
}

/* An open slice (or a counter's last value) of the context: its group's words in `store`. */
struct ctx_ent {
	unsigned track;   /* 0 the thread's own */
	unsigned level;   /* track 0: its depth (1 outermost) by the index's count */
	int func;         /* a function entry: key is its address */
	uint64_t key;     /* site id or function address */
	uint64_t order;   /* chunk index << 32 | position: where it was in the thread's records */
	size_t off, n;    /* in store */
};

struct ctx {
	const struct weft_proc *p;
	struct words store;
	struct ctx_ent *open;
	size_t nopen, capopen;
	struct ctx_ent *ctr; /* counters: the last value per site */
	size_t nctr, capctr;
	struct ctx_ent *jmps; /* setjmps: the last per jmp_buf (key), level = the depth it noted */
	size_t njmps, capjmps;
	unsigned cur; /* the depth by the index's count (the replay's own, replaying from the start) */
};

static uint64_t rec_ns(const struct weft_proc *p, const uint64_t *r)
{
	if (weft_rec_time_is_ns(weft_rec_type(r[1])))
		return r[0]; /* weft_chunk_decode applied the host correction */
	return weft_proc_ns(p, r[0]);
}

/* The group starting at word i of w[0..n): its end; *ns its time (0 when it has none), *ev
 * where its timed record is. A CPUMEM record on track 1 goes with the END after it; other
 * untimed records (arguments, flows, stacks) with the event before them. */
static size_t group_end(const uint64_t *w, size_t n, size_t i, const struct weft_proc *p, uint64_t *ns,
			size_t *ev)
{
	*ns = 0;
	*ev = i;
	size_t j = i;
	int timed = 0;
	while (j + 2 <= n) {
		uint64_t h = w[j + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (j + 2 + extra > n)
			return n;
		int is_timed = weft_rec_is_timed(type);
		int lead = type == WEFT_R_CPUMEM && weft_rec_track(h) == 1;
		if (j > i && (is_timed ? timed : lead))
			break; /* the next group starts here */
		if (is_timed) {
			timed = 1;
			*ns = rec_ns(p, w + j);
			*ev = j;
		}
		j += 2 + extra;
	}
	return j;
}

static void ent_add(struct ctx_ent **a, size_t *n, size_t *cap, const struct ctx_ent *e)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 16;
		*a = xrealloc(*a, *cap * sizeof(**a));
	}
	(*a)[(*n)++] = *e;
}

/* Drop the open slices of track 0 above `level`, and (after skipped chunks) those of named
 * tracks, whose ends may lie in what was skipped. */
static void ctx_cut(struct ctx *x, unsigned level, int named_too)
{
	size_t o = 0;
	for (size_t i = 0; i < x->nopen; i++) {
		struct ctx_ent *e = &x->open[i];
		if (e->track == 0 ? e->level > level : named_too)
			continue;
		x->open[o++] = *e;
	}
	x->nopen = o;
}

/* An END on `track` for key: closes the innermost open slice of that key on the track and
 * what was opened above it there (the walker's rule); nothing when none matches. On the
 * thread's own track the context may have a gap: the levels opened in chunks that were skipped
 * (ctx_cut dropped what they held, the index says how deep they went), whose entries are not
 * here. The search goes down from the innermost level `top` (the depth before this END) only as
 * long as the levels are all held: an END that reaches the gap closes a level of the gap, in
 * the full walk too (properly nested calls close their own level), and never one held below it.
 * (Searching on would close, say, the luaV_execute at depth 18 held from an early chunk on the
 * exit of the luaV_execute at depth 25 that a skipped chunk opened: 13 levels lost.) */
static void ctx_end(struct ctx *x, unsigned track, int func, uint64_t key, unsigned top)
{
	unsigned want = top; /* track 0: the level the next entry down must have */
	for (size_t i = x->nopen; i-- > 0;) {
		struct ctx_ent *e = &x->open[i];
		if (e->track != track)
			continue;
		if (!track) {
			if (e->level < want)
				return; /* a gap: what this END closes is not held */
			want = e->level - 1;
		}
		if (e->func != func || e->key != key)
			continue;
		size_t o = i;
		for (size_t j = i + 1; j < x->nopen; j++)
			if (x->open[j].track != track)
				x->open[o++] = x->open[j];
		x->nopen = o;
		return;
	}
}

/* Replays one group of records before FROM into the context. */
static void ctx_group(struct ctx *x, const uint64_t *w, size_t start, size_t ev, size_t end, uint64_t order)
{
	if (ev + 2 > end)
		return;
	uint64_t h = w[ev + 1];
	unsigned type = weft_rec_type(h), track = weft_rec_track(h);
	struct ctx_ent e = {.order = order, .off = x->store.n, .n = end - start};
	switch (type) {
	case WEFT_R_FUNC_ENTER:
		e.func = 1;
		e.key = weft_rec_addr(h);
		e.level = ++x->cur;
		break;
	case WEFT_R_BEGIN:
		e.key = weft_rec_id(h);
		e.track = track;
		if (!track)
			e.level = ++x->cur;
		break;
	case WEFT_R_FUNC_EXIT:
		ctx_end(x, 0, 1, weft_rec_addr(h), x->cur);
		if (x->cur)
			x->cur--;
		return;
	case WEFT_R_END:
		ctx_end(x, track, 0, weft_rec_id(h), x->cur);
		if (!track && x->cur)
			x->cur--;
		return;
	case WEFT_R_SETJMP: /* the depth a longjmp to this jmp_buf goes back to (the walker's rule) */
		e.key = weft_rec_addr(h);
		e.level = x->cur;
		words_put(&x->store, w + start, end - start);
		for (size_t i = 0; i < x->njmps; i++)
			if (x->jmps[i].key == e.key) {
				x->jmps[i] = e;
				return;
			}
		ent_add(&x->jmps, &x->njmps, &x->capjmps, &e);
		return;
	case WEFT_R_LONGJMP: /* closes every level of the thread's own track above its setjmp's */
		for (size_t i = 0; i < x->njmps; i++)
			if (x->jmps[i].key == weft_rec_addr(h)) {
				ctx_cut(x, x->jmps[i].level, 0);
				x->cur = x->jmps[i].level;
				return;
			}
		return;
	case WEFT_R_COUNTER_I64:
	case WEFT_R_COUNTER_F64:
		e.key = weft_rec_id(h);
		for (size_t i = 0; i < x->nctr; i++)
			if (x->ctr[i].key == e.key) {
				if (x->ctr[i].order < order) {
					words_put(&x->store, w + start, end - start);
					x->ctr[i] = e;
				}
				return;
			}
		words_put(&x->store, w + start, end - start);
		ent_add(&x->ctr, &x->nctr, &x->capctr, &e);
		return;
	default:
		return;
	}
	words_put(&x->store, w + start, end - start);
	ent_add(&x->open, &x->nopen, &x->capopen, &e);
}

/* Whether setjmp j still holds in the head: the levels of the thread's own track up to the
 * depth it noted are open, all opened before it (none closed and opened again since), so the
 * walker, meeting it among them, notes the same depth. */
static int jmp_holds(const struct ctx *x, const struct ctx_ent *j)
{
	if (j->level > x->cur)
		return 0;
	unsigned held = 0;
	for (size_t i = 0; i < x->nopen; i++) {
		const struct ctx_ent *e = &x->open[i];
		if (e->track || e->level > j->level)
			continue;
		if (e->order > j->order)
			return 0;
		held++;
	}
	return held == j->level;
}

static int cmp_order(const void *a, const void *b)
{
	const struct ctx_ent *x = a, *y = b;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Records w[0..n) (whole, absolute times) packed (packing 4) and zstd-compressed into c, as a
 * writer stores a chunk; the stored bytes (malloc'd), or NULL when memory is short. */
static uint8_t *store_packed(struct weft_chunk_view *c, const uint64_t *w, size_t n)
{
	struct weft_index_rec ix;
	size_t zcap = ZSTD_compressBound(weft_pack_bound(n)), zl = 0;
	uint8_t *packed = malloc(weft_pack_bound(n) + 8), *scratch = malloc(weft_pack4_scratch(n));
	uint8_t *z = packed && scratch ? malloc(zcap) : NULL;
	if (z) {
		size_t len = weft_pack4_indexed(w, n, packed, &c->events, &c->dropped, &ix, scratch);
		zl = ZSTD_compress(z, zcap, packed, len, 1);
	}
	free(packed);
	free(scratch);
	if (!z || ZSTD_isError(zl)) {
		free(z);
		return NULL;
	}
	z = xrealloc(z, zl);
	c->stored = z;
	c->stored_size = (uint32_t)zl;
	c->flags = WEFT_CHUNK_PACKED4 | WEFT_CHUNK_ZSTD | (ix.flags & WEFT_IX_LEAF ? WEFT_CHUNK_LEAF : 0);
	return z;
}

/* The same stored plain (delta-coded, as a writer without memory to pack writes it). */
static uint8_t *store_plain(struct weft_chunk_view *c, const uint64_t *w, size_t n)
{
	uint64_t *d = xrealloc(NULL, n * 8 + 8);
	memcpy(d, w, n * 8);
	uint64_t prev = 0;
	c->events = c->dropped = 0;
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(d[i + 1])) {
		unsigned type = weft_rec_type(d[i + 1]);
		c->events += weft_rec_events(type);
		if (type == WEFT_R_DROPPED && weft_rec_extra(d[i + 1]))
			c->dropped += (uint32_t)d[i + 2];
		if (weft_rec_has_ticks(type)) {
			uint64_t ts = d[i];
			d[i] = ts - prev;
			prev = ts;
		}
	}
	c->stored = (const unsigned char *)d;
	c->stored_size = (uint32_t)(n * 8);
	c->flags = 0;
	return (uint8_t *)d;
}

/* A chunk of the given absolute records, owned by the trace: packed and compressed, so that a
 * window's head and tail chunks (one or two per thread) take what the writer's chunks take, not
 * 16 bytes a record (a 1 MiB head chunk per thread was 617 KiB a rank of `convert --time`'s
 * peak); plain when memory for the packing is short. */
static void make_chunk(struct weft_trace *t, struct weft_chunk_view *c, uint64_t seq, const uint64_t *w, size_t n)
{
	size_t whole = 0;
	while (whole + 2 <= n && whole + 2 + weft_rec_extra(w[whole + 1]) <= n)
		whole += 2 + weft_rec_extra(w[whole + 1]);
	memset(c, 0, sizeof(*c));
	uint8_t *stored = store_packed(c, w, whole);
	if (!stored)
		stored = store_plain(c, w, whole);
	t->blobs = xrealloc(t->blobs, (t->nblobs + 1) * sizeof(*t->blobs));
	t->blobs[t->nblobs++] = stored;
	c->seq = seq;
	c->raw_size = (uint32_t)(whole * 8);
	c->fix = NULL; /* the records were decoded: corrected already */
}

struct scratch {
	uint64_t *buf;
	size_t cap, n;
};

static int decode_chunk(struct weft_trace *t, const struct weft_proc *p, const struct weft_chunk_view *c,
			struct scratch *s)
{
	const char *why = NULL;
	if (weft_chunk_decode(c, &s->buf, &s->cap, &s->n, &why)) {
		weft_trace_warn(t, "process %d: chunk %llu cannot be decoded (%s)", p->pid,
				(unsigned long long)c->seq, why ? why : "?");
		s->n = 0;
		return -1;
	}
	t->window.decoded++;
	return 0;
}

/* The chunk's span in ns (the index's times converted), or lo > hi when it has no time. */
static void chunk_span(const struct weft_proc *p, const struct weft_chunk_view *c, uint64_t *lo, uint64_t *hi)
{
	*lo = UINT64_MAX;
	*hi = 0;
	if (c->ix.first_ticks <= c->ix.last_ticks) {
		*lo = weft_proc_ns(p, c->ix.first_ticks);
		*hi = weft_proc_ns(p, c->ix.last_ticks);
	}
	if (c->ix.first_ns <= c->ix.last_ns) {
		uint64_t a = c->ix.first_ns, b = c->ix.last_ns;
		if (c->fix) {
			a = weft_ns_fix_apply(c->fix, a);
			b = weft_ns_fix_apply(c->fix, b);
		}
		if (a < *lo)
			*lo = a;
		if (b > *hi)
			*hi = b;
	}
}

/* Every record group of chunk j (c) replayed into the context. */
static void replay_chunk(struct weft_trace *t, const struct weft_proc *p, const struct weft_chunk_view *c, size_t j,
			 struct scratch *s, struct ctx *x)
{
	if (decode_chunk(t, p, c, s))
		return;
	for (size_t i = 0; i < s->n;) {
		uint64_t ns;
		size_t ev, end = group_end(s->buf, s->n, i, p, &ns, &ev);
		ctx_group(x, s->buf, i, ev, end, (uint64_t)j << 32 | i);
		i = end;
	}
}

static void window_thread(struct weft_trace *t, struct weft_proc *p, struct weft_thread_data *th,
			  struct scratch *s, unsigned counter_sites)
{
	struct weft_window_info *wi = &t->window;
	size_t n = th->nchunks;
	uint64_t from = wi->from_ns, to = wi->to_ns;
	wi->chunks += n;
	if (!n)
		return;
	/* every chunk's index entry: from the trace, or computed here */
	for (size_t c = 0; c < n; c++) {
		struct weft_chunk_view *v = &th->chunks[c];
		if (v->has_ix)
			continue;
		struct weft_chunk_view raw = *v;
		raw.fix = NULL; /* the index holds the times as recorded */
		const char *why = NULL;
		memset(&v->ix, 0, sizeof(v->ix));
		v->ix.first_ticks = v->ix.first_ns = UINT64_MAX;
		if (!weft_chunk_decode(&raw, &s->buf, &s->cap, &s->n, &why))
			weft_index_scan(s->buf, s->n, &v->ix);
		v->has_ix = 1;
		wi->scanned++;
	}
	uint64_t *lo = xrealloc(NULL, n * sizeof(*lo)), *hi = xrealloc(NULL, n * sizeof(*hi));
	unsigned *d = xrealloc(NULL, (n + 1) * sizeof(*d)), *dmin = xrealloc(NULL, n * sizeof(*dmin));
	d[0] = 0;
	for (size_t c = 0; c < n; c++) {
		const struct weft_chunk_view *v = &th->chunks[c];
		chunk_span(p, v, &lo[c], &hi[c]);
		if (lo[c] > hi[c]) /* no time of its own: where the one before ended */
			lo[c] = hi[c] = c ? hi[c - 1] : 0;
		int64_t m = (int64_t)d[c] + v->ix.depth_min, e = (int64_t)d[c] + v->ix.depth_delta;
		dmin[c] = m < 0 ? 0 : (unsigned)m;
		d[c + 1] = e < 0 ? 0 : (unsigned)e;
		if (d[c + 1] < dmin[c])
			dmin[c] = d[c + 1];
	}
	size_t k = 0;
	while (k < n && hi[k] < from)
		k++;
	size_t e = n; /* one past the last chunk that starts by TO */
	while (e > k && lo[e - 1] > to)
		e--;
	/* a longjmp before k: the index's depths count the exits it skipped as still open, so the
	 * chunks to replay cannot be found from them; every chunk before k is replayed instead, and
	 * the depths are the replay's own (format 1.15 flags such chunks; an earlier trace's are not
	 * known and are read as without) */
	int replay_all = 0;
	for (size_t j = 0; j < k && !replay_all; j++)
		replay_all = (th->chunks[j].ix.flags & WEFT_IX_JUMPS) != 0;
	/* else the chunks holding the begins of the slices open at k's start */
	size_t *chosen = xrealloc(NULL, (k + 1) * sizeof(*chosen)); /* at most one per chunk (a damaged
									* index may claim any depth) */
	size_t nchosen = 0;
	unsigned T = replay_all ? 0 : d[k];
	for (size_t j = k; j-- > 0 && T > 0;)
		if (dmin[j] < T) {
			chosen[nchosen++] = j;
			T = dmin[j];
		}
	struct ctx x = {.p = p};
	for (size_t j = 0; replay_all && j < k; j++)
		replay_chunk(t, p, &th->chunks[j], j, s, &x);
	size_t prev = (size_t)-1; /* the last chunk replayed */
	for (size_t a = nchosen; a-- > 0;) {
		size_t j = chosen[a];
		unsigned m = d[j];
		for (size_t i = prev + 1; i < j; i++)
			if (dmin[i] < m)
				m = dmin[i];
		ctx_cut(&x, m, j != prev + 1);
		x.cur = d[j];
		prev = j;
		replay_chunk(t, p, &th->chunks[j], j, s, &x);
	}
	if (!replay_all) { /* down to what is open at k's start */
		unsigned m = d[k];
		for (size_t i = prev + 1; i < k; i++)
			if (dmin[i] < m)
				m = dmin[i];
		ctx_cut(&x, m, k != prev + 1);
		x.cur = d[k];
	}
	/* chunk k: what comes before FROM is context, what lies in the window is kept */
	struct words kwin = {0};
	if (k < e && !decode_chunk(t, p, &th->chunks[k], s)) {
		for (size_t i = 0; i < s->n;) {
			uint64_t ns;
			size_t ev, end = group_end(s->buf, s->n, i, p, &ns, &ev);
			if (ns && ns < from)
				ctx_group(&x, s->buf, i, ev, end, (uint64_t)k << 32 | i);
			else if (ns <= to)
				words_put(&kwin, s->buf + i, end - i);
			i = end;
		}
	}
	/* counters: their last values before FROM, from the nearest chunks that hold some (walking
	 * back until every counter of the process has a value from chunk j or later) */
	for (size_t j = k, a = 0; j-- > 0 && counter_sites && !replay_all;) {
		while (a < nchosen && chosen[a] > j)
			a++;
		int replayed = a < nchosen && chosen[a] == j;
		if ((th->chunks[j].ix.flags & WEFT_IX_COUNTERS) && !replayed && !decode_chunk(t, p, &th->chunks[j], s)) {
			for (size_t i = 0; i < s->n;) {
				uint64_t ns;
				size_t ev, end = group_end(s->buf, s->n, i, p, &ns, &ev);
				unsigned type = ev + 2 <= end ? weft_rec_type(s->buf[ev + 1]) : 0;
				if (type == WEFT_R_COUNTER_I64 || type == WEFT_R_COUNTER_F64)
					ctx_group(&x, s->buf, i, ev, end, (uint64_t)j << 32 | i);
				i = end;
			}
		}
		size_t newer = 0;
		for (size_t c = 0; c < x.nctr; c++)
			newer += x.ctr[c].order >= (uint64_t)j << 32;
		if (newer >= counter_sites)
			break;
	}
	/* the head: the context in its order, then chunk k's records in the window */
	struct words head = {0};
	struct weft_chunk_view *out = xrealloc(NULL, (e > k ? e - k : 0) * sizeof(*out) + 2 * sizeof(*out));
	size_t nout = 0;
	size_t nctx = x.nopen + x.nctr;
	struct ctx_ent *all = xrealloc(NULL, (nctx + x.njmps + 1) * sizeof(*all));
	if (x.nopen)
		memcpy(all, x.open, x.nopen * sizeof(*all));
	if (x.nctr)
		memcpy(all + x.nopen, x.ctr, x.nctr * sizeof(*all));
	for (size_t i = 0; i < x.njmps; i++) /* the setjmps whose levels are all still open */
		if (jmp_holds(&x, &x.jmps[i]))
			all[nctx++] = x.jmps[i];
	qsort(all, nctx, sizeof(*all), cmp_order);
	for (size_t i = 0; i < nctx; i++)
		words_put(&head, x.store.w + all[i].off, all[i].n);
	wi->open_slices += x.nopen;
	wi->counters += x.nctr;
	words_put(&head, kwin.w, kwin.n);
	free(kwin.w);
	if (head.n)
		make_chunk(t, &out[nout++], k < n ? th->chunks[k].seq : th->chunks[n - 1].seq, head.w, head.n);
	for (size_t c = k + 1; c + 1 < e; c++) { /* whole: undecoded */
		out[nout++] = th->chunks[c];
		wi->kept++;
	}
	if (e > k + 1 && !decode_chunk(t, p, &th->chunks[e - 1], s)) { /* the tail, up to TO */
		struct words tail = {0};
		for (size_t i = 0; i < s->n;) {
			uint64_t ns;
			size_t ev, end = group_end(s->buf, s->n, i, p, &ns, &ev);
			if (!ns || (ns >= from && ns <= to))
				words_put(&tail, s->buf + i, end - i);
			i = end;
		}
		if (tail.n)
			make_chunk(t, &out[nout++], th->chunks[e - 1].seq, tail.w, tail.n);
		free(tail.w);
	}
	free(th->chunks);
	th->chunks = out;
	th->nchunks = th->cap = nout;
	free(head.w);
	free(all);
	free(x.store.w);
	free(x.open);
	free(x.ctr);
	free(x.jmps);
	free(chosen);
	free(lo);
	free(hi);
	free(d);
	free(dmin);
}

static void fmt_rel(char *b, size_t n, uint64_t ns)
{
	snprintf(b, n, "%.6g s", (double)ns / 1e9);
}

int weft_trace_window_apply(struct weft_trace *t, const struct weft_window_req *req, char *err, size_t errlen)
{
	struct weft_window_info *wi = &t->window;
	memset(wi, 0, sizeof(*wi));
	uint64_t first = t->first_ns, last = t->last_ns, span = last - first;
	wi->trace_first_ns = first;
	wi->trace_last_ns = last;
	uint64_t rf = req->from_set ? req->from_ns : 0, rt = req->to_set ? req->to_ns : span;
	if (req->from_set && req->to_set && rt <= rf) {
		snprintf(err, errlen, "--time: the window's end must come after its start");
		return -EINVAL;
	}
	if (rf > span || (req->from_set && rf == span && span)) {
		char a[32], b[32];
		fmt_rel(a, sizeof(a), rf);
		fmt_rel(b, sizeof(b), span);
		snprintf(err, errlen, "--time: the window starts at %s, after the trace's end (it lasts %s)", a, b);
		return -ERANGE;
	}
	if (rt > span)
		rt = span;
	wi->active = 1;
	wi->from_ns = first + rf;
	wi->to_ns = first + rt;
	struct scratch s = {0};
	uint64_t snap_scanned = 0, snap_chunks = 0; /* of flight recorder snapshots (and parts) */
	for (size_t i = 0; i < t->nprocs; i++) {
		struct weft_proc *p = &t->procs[i];
		unsigned counters = 0;
		for (size_t k = 1; k < p->nsites; k++)
			counters += p->sites[k].defined && p->sites[k].kind == WEFT_KIND_COUNTER;
		uint64_t scanned = wi->scanned, chunks = wi->chunks;
		for (size_t k = 0; k < p->nthreads; k++)
			window_thread(t, p, &p->threads[k], &s, counters);
		if (p->has_window) {
			snap_scanned += wi->scanned - scanned;
			snap_chunks += wi->chunks - chunks;
		}
	}
	free(s.buf);
	/* a snapshot is written without CHUNK_INDEX records (its chunks are the ring's): it is
	 * read whole, as it is, and that is no sign of an old or damaged trace */
	if (snap_scanned)
		weft_trace_warn(t, "%llu of %llu chunks are a flight recorder snapshot's, which has no time index: "
			    "all of them were read to find the window",
			    (unsigned long long)snap_scanned, (unsigned long long)snap_chunks);
	if (wi->scanned > snap_scanned)
		weft_trace_warn(t, "%llu of %llu chunks have no time index (a trace written before weft's format "
			    "1.8, or cut short): all of them were read to find the window",
			    (unsigned long long)(wi->scanned - snap_scanned),
			    (unsigned long long)(wi->chunks - snap_chunks));
	t->first_ns = wi->from_ns;
	t->last_ns = wi->to_ns;
	return 0;
}
