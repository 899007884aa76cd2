/*
 * flight.c - the flight recorder (flight=SIZE[,AGE][,noexit], weft record --flight-recorder):
 * nothing of the events reaches the disk until a snapshot. The writer threads pack and compress
 * each full chunk exactly as for a file and put the frame into this process's ring (one byte
 * buffer of SIZE bytes, frames laid end to end, wrapping); the oldest whole frames are evicted
 * to make room (and, with AGE, frames older than AGE), never single events. The metadata
 * records, small, are kept in memory too (meta.c hands them here): a snapshot is a complete
 * trace directory written from memory with plain file writes.
 *
 * Context, kept off the hot path: with each frame the writer stores a small summary of its net
 * effect on its thread - the track of every END that closes a slice begun before the chunk, the
 * BEGIN records (with their argument records) it leaves open, and its last counter records. On
 * eviction the summary is applied to the thread's state, which is therefore the open-slice stack
 * and the counters' values as of the oldest kept frame, without decompressing anything. A
 * snapshot writes, per thread, that state (plus what the records cut from its first frame
 * change) as the thread's first chunk: the original BEGIN records with their original times, so
 * every slice of the window has its real parent and the outermost one its true start.
 *
 * One window start for the process: the latest, over the threads that lost something (evicted
 * frames or an earlier snapshot), of their first kept event; records before it are cut from each
 * thread's first frame (decoded, trimmed, packed again) and counted as not in the window.
 * Snapshots do not overlap: each remembers where it ended in every thread (chunk and byte), and
 * the next one starts after that. Frames a snapshot wrote are consumed (their summaries applied).
 *
 * Locks: ring_lock guards the ring, the thread table and the counters; writers take it to put a
 * frame, a snapshot holds it while it writes. A snapshot from a fatal signal handler
 * (weft_g.in_signal) allocates nothing (its buffers are made at start), takes locks only with
 * trylock, and waits for the writers at most 200 ms.
 */
#include "internal.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <zstd.h>
#include "../format/pack.h"

/* ---- the metadata kept in memory ---- */
/* Records are appended to a chain of blocks that never move; `used` is published (release)
 * after the bytes, so a snapshot reads a block without the lock. Clock points go to their own
 * table, thinned (every other point dropped) when full: memory stays bounded however long the
 * program runs, and a window of any age finds points around it. */
#define META_BLOCK (64u << 10)
struct meta_block {
	struct meta_block *_Atomic next;
	_Atomic size_t used;
	unsigned char data[META_BLOCK];
};
#define MAX_CLOCKS 1024
static struct meta_block *meta_head, *meta_tail; /* under weft meta.c's meta_lock (its writers) */
static struct weft_clock_point clocks[MAX_CLOCKS];
static _Atomic int nclocks;

/* ---- the ring ---- */
struct fl_sum; /* a frame's net effect on its thread */
struct fl_thread;
struct fl_entry {
	size_t off;     /* in ring */
	uint32_t len;   /* header + stored bytes */
	uint32_t events;
	uint64_t seq;
	uint64_t first, last; /* ticks of its first and last timed record (first > last: none) */
	struct fl_thread *th;
	uint64_t *sum;  /* summary words (see summarize), or NULL */
	size_t nsum;
	int consumed;   /* its summary is applied (a snapshot wrote it, or it lies before one) */
};

/* A thread's state as of the ring's oldest kept frame (everything before it applied). */
struct fl_thread {
	uint32_t tid, serial;
	uint64_t *stk;   /* open records, outermost first: BEGIN (or FUNC_ENTER) and its attachments */
	size_t nstk, capstk;
	uint32_t *lvl;   /* start of each open slice in stk */
	uint16_t *lvltrack;
	size_t nlvl, caplvl;
	uint64_t *ctr;   /* last counter records, 3 words each */
	size_t nctr, capctr;
	int lost;        /* frames of it were evicted or cut: it bounds the window start */
	uint64_t received; /* frames put (any seq): compared to a thread's chunk index */
	uint64_t cut_seq; /* a snapshot ended inside this chunk, at cut_off raw bytes */
	size_t cut_off;
	int has_cut;
	uint64_t limit;  /* during a snapshot: its frames with seq < limit are in it */
	int excluded;    /* during a snapshot: the thread began after it (not in it) */
	/* during a snapshot: the thread's current chunk as copied (seq `limit`) */
	const uint64_t *part;
	size_t npart;    /* words */
	uint32_t written; /* chunks written in the snapshot being made */
	uint64_t dropped_end; /* THREAD_END's drops */
};

#define MAX_THREADS 4096
static pthread_mutex_t ring_lock = PTHREAD_MUTEX_INITIALIZER;
static int active;               /* flight mode in this process: set at start (weft_g.lock) */
static unsigned char *ring;      /* ring_size bytes */
static size_t ring_size, ring_head, ring_tail; /* bytes in use: from head (oldest) to tail */
static size_t ring_used;         /* frame bytes + summary bytes kept */
static struct fl_entry *ents;    /* a ring of entries */
static size_t *ord;              /* ents_cap: a snapshot's list of one thread's entries */
static size_t ents_cap, ents_first, ents_n;
static struct fl_thread *ths;    /* MAX_THREADS, made at start */
static size_t nths;
static int dumping;              /* a snapshot is being made: new threads are not in it */
static uint64_t ref_ticks, ref_ns; /* for records timed in ns (sched, samples, accesses) */
static double tpn = 1.0;
static uint64_t ev_received, ev_evicted, ev_written, ev_lost_since; /* events */
static int snapshots;            /* written by this process */
static uint64_t pending;         /* frame bytes put since the last snapshot (--switch-output) */
static uint64_t last_end_ticks;  /* the previous snapshot's end */

/* The snapshot's own buffers, made at start: a dump from a signal handler allocates nothing. */
static size_t chunk_cap;          /* bytes of a raw chunk */
static uint64_t *raw;             /* a decoded chunk */
static uint8_t *packbuf, *zbuf;   /* packed, compressed */
static size_t packcap, zcap;
static uint64_t *ctxw;            /* a context chunk being built */
static size_t ctxcap;
static uint32_t *ctxlvl;
static uint16_t *ctxtrack;
static size_t ctxlvlcap;
static unsigned char *partarea;   /* copies of the threads' current chunks */
static size_t partcap, partused;
#define OUTBUF (64u << 10)
static unsigned char *outbuf;     /* buffered writes of the snapshot's files */
static ZSTD_DCtx *dctx;
static ZSTD_CCtx *cctx;

int weft_flight_active(void) { return active; }

static uint64_t ns_to_ticks(uint64_t ns)
{
	double d = ((double)ns - (double)ref_ns) * tpn;
	return (uint64_t)((double)ref_ticks + d);
}

/* The time of a record in ticks, or 0 for one that has none (an argument, a stack, a GPU
 * activity in CUPTI's clock). */
static uint64_t rec_ticks(unsigned type, uint64_t w0)
{
	if (weft_rec_has_ticks(type))
		return w0;
	if (type == WEFT_R_SCHED || type == WEFT_R_SAMPLE || type == WEFT_R_ACCESS)
		return ns_to_ticks(w0);
	return 0;
}

static int is_open(unsigned type) { return type == WEFT_R_BEGIN || type == WEFT_R_FUNC_ENTER; }
static int is_close(unsigned type) { return type == WEFT_R_END || type == WEFT_R_FUNC_EXIT; }
/* Records that belong to the event before them. */
static int is_attached(unsigned type)
{
	return (type >= WEFT_R_ARG_I64 && type <= WEFT_R_FLOW_IN) || type == WEFT_R_STACK ||
	       type == WEFT_R_CPUMEM;
}
static int is_counter(unsigned type) { return type == WEFT_R_COUNTER_I64 || type == WEFT_R_COUNTER_F64; }

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	if (weft_g.in_signal)
		return -1;
	size_t n = *cap ? *cap * 2 : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* ---- a stack of open slices: fl_thread's, or the snapshot's scratch copy ---- */
struct stack {
	uint64_t *w;
	size_t n, cap;
	uint32_t *lvl;
	uint16_t *track;
	size_t nlvl, caplvl;
	int fixed;       /* the snapshot's scratch: never grown */
	uint64_t truncated; /* slices that did not fit */
};

static void stack_pop(struct stack *s, unsigned track)
{
	for (size_t i = s->nlvl; i-- > 0;) {
		if (s->track[i] != track)
			continue;
		size_t from = s->lvl[i], to = i + 1 < s->nlvl ? s->lvl[i + 1] : s->n;
		memmove(s->w + from, s->w + to, (s->n - to) * 8);
		s->n -= to - from;
		for (size_t k = i + 1; k < s->nlvl; k++) {
			s->lvl[k - 1] = s->lvl[k] - (uint32_t)(to - from);
			s->track[k - 1] = s->track[k];
		}
		s->nlvl--;
		return;
	}
}

static int stack_room(struct stack *s, size_t words, int level)
{
	if (s->fixed)
		return s->n + words <= s->cap && (!level || s->nlvl < s->caplvl);
	void *w = s->w, *l = s->lvl, *t = s->track;
	size_t wc = s->cap, lc = s->caplvl, tc = s->caplvl;
	if (grow(&w, &wc, s->n + words, 8))
		return 0;
	s->w = w;
	s->cap = wc;
	if (level) {
		if (grow(&l, &lc, s->nlvl + 1, 4) || grow(&t, &tc, s->nlvl + 1, 2))
			return 0;
		s->lvl = l;
		s->track = t;
		s->caplvl = lc < tc ? lc : tc;
	}
	return 1;
}

/* Applies records w[0..n) (absolute times) to s: opens push, closes pop, attachments follow
 * the slice they belong to. *attach says whether the last record pushed takes attachments. */
static void stack_apply(struct stack *s, const uint64_t *w, size_t n, int *attach)
{
	size_t i = 0;
	while (i + 2 <= n) {
		unsigned type = weft_rec_type(w[i + 1]), extra = weft_rec_extra(w[i + 1]);
		size_t len = 2 + extra;
		if (i + len > n)
			break;
		if (is_open(type)) {
			*attach = 0;
			if (stack_room(s, len, 1)) {
				s->lvl[s->nlvl] = (uint32_t)s->n;
				s->track[s->nlvl] = (uint16_t)(type == WEFT_R_FUNC_ENTER ? 0xffff : weft_rec_track(w[i + 1]));
				s->nlvl++;
				memcpy(s->w + s->n, w + i, len * 8);
				s->n += len;
				*attach = 1;
			} else {
				s->truncated++;
			}
		} else if (is_close(type)) {
			stack_pop(s, type == WEFT_R_FUNC_EXIT ? 0xffff : weft_rec_track(w[i + 1]));
			*attach = 0;
		} else if (is_attached(type)) {
			if (*attach && stack_room(s, len, 0)) {
				memcpy(s->w + s->n, w + i, len * 8);
				s->n += len;
			}
		} else if (type != WEFT_R_DROPPED) {
			*attach = 0;
		}
		i += len;
	}
}

static void thread_stack(struct fl_thread *t, struct stack *s)
{
	*s = (struct stack){t->stk, t->nstk, t->capstk, t->lvl, t->lvltrack, t->nlvl, t->caplvl, 0, 0};
}

static void thread_unstack(struct fl_thread *t, const struct stack *s)
{
	t->stk = s->w;
	t->nstk = s->n;
	t->capstk = s->cap;
	t->lvl = s->lvl;
	t->lvltrack = s->track;
	t->nlvl = s->nlvl;
	t->caplvl = s->caplvl;
}

static void counter_keep(uint64_t **ctr, size_t *n, size_t *cap, const uint64_t *r, int fixed)
{
	for (size_t k = 0; k < *n; k++) {
		uint64_t *c = *ctr + k * 3;
		if (c[1] == r[1]) { /* same site and track */
			memcpy(c, r, 24);
			return;
		}
	}
	if (fixed) {
		if (*n >= *cap)
			return;
	} else {
		void *p = *ctr;
		size_t cc = *cap;
		if (grow(&p, &cc, (*n + 1) * 3, 8))
			return;
		*ctr = p;
		*cap = cc;
	}
	memcpy(*ctr + *n * 3, r, 24);
	(*n)++;
}

/* ---- the summary of a chunk ---- */
/* Words: npops, nopen (words), nctr (records), then npops tracks, the open records (as a stack
 * applies them), and nctr counter records of 3 words. NULL when the chunk changes nothing.
 * One pass over the records with a writer's own scratch stack: a push per BEGIN, a pop of the
 * top per END (the common case), so it costs about what packing the chunk does. */
#define SUM_LEVELS 4096
#define SUM_POPS 256
struct sum_scratch {
	uint64_t *w;   /* open records */
	size_t cap;
	uint32_t lvl[SUM_LEVELS];
	uint16_t trk[SUM_LEVELS];
	uint64_t pops[SUM_POPS];
	uint64_t ctr[3 * 64];
};
static __thread struct sum_scratch *scratch WEFT_TLS; /* a writer's, made at its first chunk */

static uint64_t *summarize(const uint64_t *w, size_t n, size_t *nsum, uint64_t *first, uint64_t *last)
{
	*nsum = 0;
	*first = UINT64_MAX;
	*last = 0;
	struct sum_scratch *x = scratch;
	if (!x || x->cap < n) {
		if (x)
			free(x->w);
		free(x);
		x = scratch = calloc(1, sizeof(*x));
		if (!x)
			return NULL;
		x->w = malloc((n + 1) * 8);
		x->cap = x->w ? n : 0;
	}
	size_t nw = 0, nl = 0, npops = 0, nctr = 0, i = 0;
	int attach = 0;
	while (i + 2 <= n) {
		uint64_t h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		size_t len = 2 + extra;
		if (i + len > n)
			break;
		if (weft_rec_has_ticks(type)) {
			if (type != WEFT_R_DROPPED) {
				if (*first == UINT64_MAX)
					*first = w[i];
				*last = w[i];
			}
		} else if (type == WEFT_R_SCHED || type == WEFT_R_SAMPLE || type == WEFT_R_ACCESS) {
			uint64_t t = ns_to_ticks(w[i]);
			if (*first == UINT64_MAX)
				*first = t;
			*last = t;
		}
		if (type == WEFT_R_BEGIN || type == WEFT_R_FUNC_ENTER) {
			attach = 0;
			if (nl < SUM_LEVELS && nw + len <= x->cap) {
				x->lvl[nl] = (uint32_t)nw;
				x->trk[nl++] = (uint16_t)(type == WEFT_R_FUNC_ENTER ? 0xffff : weft_rec_track(h));
				for (size_t k = 0; k < len; k++) /* mostly 2 words: no call */
					x->w[nw + k] = w[i + k];
				nw += len;
				attach = 1;
			}
		} else if (type == WEFT_R_END || type == WEFT_R_FUNC_EXIT) {
			unsigned tr = type == WEFT_R_FUNC_EXIT ? 0xffff : weft_rec_track(h);
			attach = 0;
			if (nl && x->trk[nl - 1] == tr) {
				nw = x->lvl[--nl];
			} else {
				size_t k = nl;
				while (k > 0 && x->trk[k - 1] != tr)
					k--;
				if (k) { /* an inner slice on another track stays open */
					k--;
					size_t from = x->lvl[k], to = k + 1 < nl ? x->lvl[k + 1] : nw;
					memmove(x->w + from, x->w + to, (nw - to) * 8);
					nw -= to - from;
					for (size_t q = k + 1; q < nl; q++) {
						x->lvl[q - 1] = x->lvl[q] - (uint32_t)(to - from);
						x->trk[q - 1] = x->trk[q];
					}
					nl--;
				} else if (npops < SUM_POPS) {
					x->pops[npops++] = tr;
				}
			}
		} else if (is_attached(type)) {
			if (attach && nw + len <= x->cap) {
				for (size_t k = 0; k < len; k++)
					x->w[nw + k] = w[i + k];
				nw += len;
			}
		} else {
			if (is_counter(type) && extra == 1) {
				uint64_t *c = x->ctr;
				size_t cap = 64;
				counter_keep(&c, &nctr, &cap, w + i, 1);
			}
			if (type != WEFT_R_DROPPED)
				attach = 0;
		}
		i += len;
	}
	if (!npops && !nw && !nctr)
		return NULL;
	size_t total = 3 + npops + nw + nctr * 3;
	uint64_t *out = malloc(total * 8);
	if (out) {
		out[0] = npops;
		out[1] = nw;
		out[2] = nctr;
		memcpy(out + 3, x->pops, npops * 8);
		memcpy(out + 3 + npops, x->w, nw * 8);
		memcpy(out + 3 + npops + nw, x->ctr, nctr * 24);
		*nsum = total;
	}
	return out;
}

static void sum_apply(struct fl_thread *t, const uint64_t *sum)
{
	if (!sum)
		return;
	struct stack s;
	thread_stack(t, &s);
	size_t npops = sum[0], nopen = sum[1], nctr = sum[2];
	for (size_t k = 0; k < npops; k++)
		stack_pop(&s, (unsigned)sum[3 + k]);
	int attach = 0;
	stack_apply(&s, sum + 3 + npops, nopen, &attach);
	thread_unstack(t, &s);
	for (size_t k = 0; k < nctr; k++)
		counter_keep(&t->ctr, &t->nctr, &t->capctr, sum + 3 + npops + nopen + k * 3, 0);
}

/* ---- the thread table ---- */
static struct fl_thread *thread_find(uint32_t tid, uint32_t serial, int create)
{
	for (size_t i = 0; i < nths; i++)
		if (ths[i].tid == tid && ths[i].serial == serial)
			return &ths[i];
	if (!create || nths >= MAX_THREADS)
		return NULL;
	struct fl_thread *t = &ths[nths++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->serial = serial;
	t->limit = UINT64_MAX;
	t->excluded = dumping;
	return t;
}

/* ---- eviction ---- */
static struct fl_entry *ent_at(size_t k) { return &ents[(ents_first + k) % ents_cap]; }

/* With several writers a thread's chunks can reach the ring out of order: before a frame's
 * summary is applied, those of its thread's earlier chunks still in the ring are (they are
 * then consumed: skipped by snapshots, their room freed when they reach the head). */
static void consume_earlier(const struct fl_entry *e)
{
	for (;;) {
		struct fl_entry *best = NULL;
		for (size_t k = 1; k < ents_n; k++) {
			struct fl_entry *x = ent_at(k);
			if (x->th == e->th && !x->consumed && x->seq < e->seq && (!best || x->seq < best->seq))
				best = x;
		}
		if (!best)
			return;
		sum_apply(best->th, best->sum);
		best->consumed = 1;
		ev_evicted += best->events;
		ev_lost_since += best->events;
	}
}

static void evict_oldest(void)
{
	struct fl_entry *e = ent_at(0);
	if (!e->consumed && weft_cfg.writers > 1)
		consume_earlier(e);
	if (!e->consumed) {
		sum_apply(e->th, e->sum);
		e->th->lost = 1;
		ev_evicted += e->events;
		ev_lost_since += e->events;
	}
	if (!weft_g.in_signal)
		free(e->sum);
	ring_used -= e->len + e->nsum * 8;
	ents_first = (ents_first + 1) % ents_cap;
	ents_n--;
	ring_head = ents_n ? ent_at(0)->off : ring_tail;
	if (!ents_n)
		ring_head = ring_tail = 0;
}

/* Where a frame of len bytes goes, evicting until it fits; SIZE_MAX if it cannot. */
static size_t ring_place(size_t len)
{
	for (;;) {
		if (len > ring_size)
			return SIZE_MAX;
		if (!ents_n)
			return 0;
		size_t head = ent_at(0)->off;
		if (ring_tail > head || (ring_tail == head && !ents_n)) {
			if (ring_size - ring_tail >= len)
				return ring_tail;
			if (head >= len)
				return 0;
		} else if (head - ring_tail >= len) {
			return ring_tail;
		}
		evict_oldest();
	}
}

void weft_flight_put(const struct weft_chunk *c, const struct weft_chunk_header *h, const void *payload,
		     size_t stored)
{
	uint64_t first, last;
	size_t nsum;
	uint64_t *sum = summarize((const uint64_t *)c->data, (c->used & ~(size_t)7) / 8, &nsum, &first, &last);
	size_t len = sizeof(*h) + stored, len8 = (len + 7) & ~(size_t)7; /* frames 8-aligned */
	pthread_mutex_lock(&ring_lock);
	struct fl_thread *t = thread_find(h->tid, (uint32_t)(h->seq >> WEFT_SEQ_SERIAL_SHIFT), 1);
	if (!t) {
		pthread_mutex_unlock(&ring_lock);
		free(sum);
		atomic_fetch_add(&weft_g.dropped, h->events);
		return;
	}
	t->received++;
	ev_received += h->events;
	/* AGE: frames whose last event is older than it go, whatever the room */
	if (weft_cfg.flight_age_ns) {
		uint64_t now = weft__ticks(), age = (uint64_t)((double)weft_cfg.flight_age_ns * tpn);
		while (ents_n && ent_at(0)->last < now - age && ent_at(0)->last >= ent_at(0)->first)
			evict_oldest();
	}
	while (ents_n && ring_used + len8 + nsum * 8 > ring_size)
		evict_oldest();
	if (ents_n == ents_cap) {
		size_t ncap = ents_cap * 2;
		struct fl_entry *n = malloc(ncap * sizeof(*n));
		size_t *no = n ? realloc(ord, ncap * sizeof(*no)) : NULL;
		if (no)
			ord = no;
		if (n && !no) {
			free(n);
			n = NULL;
		}
		if (n) {
			for (size_t k = 0; k < ents_n; k++)
				n[k] = *ent_at(k);
			free(ents);
			ents = n;
			ents_cap = ncap;
			ents_first = 0;
		} else {
			evict_oldest();
		}
	}
	size_t off = ring_place(len8);
	if (off == SIZE_MAX) { /* larger than the ring: never kept */
		t->lost = 1;
		ev_evicted += h->events;
		ev_lost_since += h->events;
		pthread_mutex_unlock(&ring_lock);
		free(sum);
		return;
	}
	memcpy(ring + off, h, sizeof(*h));
	memcpy(ring + off + sizeof(*h), payload, stored);
	struct fl_entry *e = &ents[(ents_first + ents_n) % ents_cap];
	ents_n++;
	*e = (struct fl_entry){off, (uint32_t)len8, h->events, h->seq, first, last, t, sum, nsum, 0, };
	ring_tail = off + len8;
	ring_used += len8 + nsum * 8;
	pending += len8 + nsum * 8;
	uint64_t p = pending;
	pthread_mutex_unlock(&ring_lock);
	weft_switch_note(p, ring_size);
}

/* ---- metadata in memory (meta.c's writers hold its lock) ---- */
void weft_flight_meta(const struct iovec *iov, int n)
{
	size_t len = 0;
	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	const struct weft_meta_rec_header *h = iov[0].iov_base;
	if (h->type == WEFT_M_CLOCK && len == 8 + 24) {
		unsigned char w[24];
		size_t k = 0;
		for (int i = 1; i < n && k < 24; i++) {
			size_t l = iov[i].iov_len < 24 - k ? iov[i].iov_len : 24 - k;
			memcpy(w + k, iov[i].iov_base, l);
			k += l;
		}
		int c = atomic_load(&nclocks);
		if (c == MAX_CLOCKS) { /* thin out: every other point after the first */
			int o = 1;
			for (int i = 2; i < MAX_CLOCKS; i += 2)
				clocks[o++] = clocks[i];
			c = o;
		}
		memcpy(&clocks[c], w, 24);
		atomic_store_explicit(&nclocks, c + 1, memory_order_release);
		return;
	}
	if (len > META_BLOCK)
		return;
	if (!meta_tail || META_BLOCK - atomic_load(&meta_tail->used) < len) {
		if (weft_g.in_signal)
			return;
		struct meta_block *b = malloc(sizeof(*b));
		if (!b)
			return;
		b->next = NULL;
		b->used = 0;
		if (meta_tail)
			atomic_store_explicit(&meta_tail->next, b, memory_order_release);
		else
			meta_head = b;
		meta_tail = b;
	}
	size_t u = atomic_load(&meta_tail->used);
	for (int i = 0; i < n; i++) {
		if (iov[i].iov_len)
			memcpy(meta_tail->data + u, iov[i].iov_base, iov[i].iov_len);
		u += iov[i].iov_len;
	}
	atomic_store_explicit(&meta_tail->used, u, memory_order_release);
}

static void meta_reset(void)
{
	for (struct meta_block *b = meta_head, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	meta_head = meta_tail = NULL;
	atomic_store(&nclocks, 0);
}

/* ---- start, fork ---- */
int weft_flight_start(void)
{
	if (!weft_cfg.flight_size && !weft_cfg.switch_output[0])
		return 0;
	ring_size = weft_switch_ring_size();
	chunk_cap = weft_cfg.chunk_size > weft_cfg.buffer_size / 2 ? weft_cfg.buffer_size / 2 : weft_cfg.chunk_size;
	if (chunk_cap < 4096)
		chunk_cap = 4096;
	chunk_cap = (chunk_cap + 4095) & ~(size_t)4095;
	packcap = weft_pack_bound(chunk_cap / 8);
	zcap = ZSTD_compressBound(packcap);
	ctxcap = chunk_cap / 8;
	ctxlvlcap = 1u << 16;
	partcap = 2u << 20;
	ring = malloc(ring_size);
	ents_cap = 1024;
	ents = malloc(ents_cap * sizeof(*ents));
	ord = malloc(ents_cap * sizeof(*ord));
	outbuf = malloc(OUTBUF);
	ths = calloc(MAX_THREADS, sizeof(*ths));
	raw = malloc(chunk_cap + 64);
	packbuf = malloc(packcap);
	zbuf = malloc(zcap);
	ctxw = malloc(ctxcap * 8);
	ctxlvl = malloc(ctxlvlcap * 4);
	ctxtrack = malloc(ctxlvlcap * 2);
	partarea = malloc(partcap);
	dctx = ZSTD_createDCtx();
	cctx = ZSTD_createCCtx();
	if (!ring || !ents || !ord || !outbuf || !ths || !raw || !packbuf || !zbuf || !ctxw || !ctxlvl || !ctxtrack || !partarea ||
	    !dctx || !cctx)
		return -ENOMEM;
	struct weft_clock_point p;
	weft_clock_sample(&p);
	ref_ticks = p.ticks;
	ref_ns = p.boot_ns;
	tpn = weft_ticks_per_ns();
	if (!(tpn > 0))
		tpn = 1.0;
	ring_head = ring_tail = ring_used = 0;
	ents_first = ents_n = nths = 0;
	ev_received = ev_evicted = ev_written = ev_lost_since = 0;
	snapshots = 0;
	last_end_ticks = 0;
	active = 1;
	return weft_switch_start();
}

/* Fork child: only the forking thread runs; the parent's ring and metadata are the parent's.
 * The child starts an empty ring (its metadata is written again by its start-up). */
static pthread_mutex_t dump_lock = PTHREAD_MUTEX_INITIALIZER; /* one snapshot at a time */

void weft_flight_atfork_child(void)
{
	pthread_mutex_init(&ring_lock, NULL);
	pthread_mutex_init(&dump_lock, NULL); /* a snapshot another thread was making is the parent's */
	if (!active)
		return;
	for (size_t k = 0; k < ents_n; k++)
		free(ent_at(k)->sum);
	for (size_t i = 0; i < nths; i++) {
		free(ths[i].stk);
		free(ths[i].lvl);
		free(ths[i].lvltrack);
		free(ths[i].ctr);
	}
	meta_reset();
	ring_head = ring_tail = ring_used = 0;
	ents_first = ents_n = nths = 0;
	ev_received = ev_evicted = ev_written = ev_lost_since = 0;
	snapshots = 0;
	last_end_ticks = 0;
	dumping = 0;
	pending = 0;
	weft_switch_atfork_child();
}
void weft_flight_atfork_prepare(void) { pthread_mutex_lock(&ring_lock); }
void weft_flight_atfork_parent(void) { pthread_mutex_unlock(&ring_lock); }

/* ---- snapshots ---- */
/* A file written through one buffer: whole frames, plain write(2) calls. */
struct out {
	int fd;
	size_t n;
	int err;
	uint64_t bytes;
};

static void out_flush(struct out *o)
{
	size_t k = 0;
	while (k < o->n && !o->err) {
		ssize_t w = write(o->fd, outbuf + k, o->n - k);
		if (w < 0) {
			if (errno != EINTR)
				o->err = errno ? -errno : -EIO;
			continue;
		}
		k += (size_t)w;
	}
	o->n = 0;
}

static void out_put(struct out *o, const void *p, size_t len)
{
	const unsigned char *b = p;
	o->bytes += len;
	while (len && !o->err) {
		size_t room = OUTBUF - o->n, l = len < room ? len : room;
		memcpy(outbuf + o->n, b, l);
		o->n += l;
		b += l;
		len -= l;
		if (o->n == OUTBUF)
			out_flush(o);
	}
}

/* Every chunk of a snapshot goes through here: the frame header, then what it stores. (The
 * place for a per-chunk index of the target file.) */
static void snap_chunk_write(struct out *o, const struct weft_chunk_header *h, const void *payload)
{
	out_put(o, h, sizeof(*h));
	out_put(o, payload, h->stored_size);
}

/* The snapshot being made (under ring_lock). */
struct snap {
	struct out ev;
	uint64_t W;             /* window start, ticks */
	int raised;             /* W is later than the previous snapshot's end */
	uint64_t events, chunks, bytes_raw, reemitted, not_in_window;
	uint64_t window_events;
};

/* Packs records w[0..n) (absolute times) and writes them as thread t's next chunk. */
static void write_records(struct snap *s, struct fl_thread *t, const uint64_t *w, size_t n)
{
	if (!n)
		return;
	struct weft_chunk_header h;
	memset(&h, 0, sizeof(h));
	h.magic = WEFT_CHUNK_MAGIC;
	h.tid = t->tid;
	h.seq = ((uint64_t)t->serial << WEFT_SEQ_SERIAL_SHIFT) | t->written++;
	h.raw_size = (uint32_t)(n * 8);
	uint32_t events = 0, dropped = 0;
	size_t stored = weft_pack(w, n, packbuf, &events, &dropped);
	const void *payload = packbuf;
	h.flags = WEFT_CHUNK_PACKED2;
	if (!weft_g.in_signal && weft_cfg.compression != 0) { /* a fresh context may allocate */
		size_t z = ZSTD_compressCCtx(cctx, zbuf, zcap, packbuf, stored, weft_cfg.compression);
		if (!ZSTD_isError(z) && z < stored) {
			payload = zbuf;
			stored = z;
			h.flags |= WEFT_CHUNK_ZSTD;
		}
	}
	h.events = events;
	h.dropped = dropped;
	h.stored_size = (uint32_t)stored;
	h.checksum = weft_fnv1a(payload, stored);
	snap_chunk_write(&s->ev, &h, payload);
	s->events += events;
	s->chunks++;
	s->bytes_raw += n * 8;
}

/* Decodes a ring frame into raw (absolute times): its words, or SIZE_MAX. */
static size_t frame_decode(const struct fl_entry *e)
{
	const struct weft_chunk_header *h = (const void *)(ring + e->off);
	const unsigned char *p = ring + e->off + sizeof(*h);
	size_t got = h->stored_size;
	if (h->raw_size > chunk_cap)
		return SIZE_MAX;
	if (h->flags & WEFT_CHUNK_ZSTD) {
		got = ZSTD_decompressDCtx(dctx, packbuf, packcap, p, h->stored_size);
		if (ZSTD_isError(got))
			return SIZE_MAX;
		p = packbuf;
	}
	size_t n = h->raw_size / 8;
	if (h->flags & WEFT_CHUNK_PACKED2) {
		if (weft_unpack(p, got, raw, n, 2, 1) != n)
			return SIZE_MAX;
		return n;
	}
	/* unpacked (the writer had no memory to pack): delta-coded records */
	memcpy(raw, p, n * 8);
	uint64_t prev = 0;
	for (size_t i = 0; i + 2 <= n;) {
		unsigned type = weft_rec_type(raw[i + 1]);
		if (weft_rec_has_ticks(type)) {
			prev += raw[i];
			raw[i] = prev;
		}
		i += 2 + weft_rec_extra(raw[i + 1]);
	}
	return n;
}

/* Where in records w[0..n) the window begins: after `skip` words (where an earlier snapshot
 * ended), at the first timed record at or after W (records attached to an event go with it). */
static size_t window_cut(const uint64_t *w, size_t n, size_t skip, uint64_t W, uint64_t *cut_events)
{
	size_t i = 0, cut = skip;
	uint64_t ev = 0;
	int before = 1;
	while (i + 2 <= n) {
		unsigned type = weft_rec_type(w[i + 1]), extra = weft_rec_extra(w[i + 1]);
		if (i + 2 + extra > n)
			break;
		if (i >= skip) {
			uint64_t t = rec_ticks(type, w[i]);
			if (t && type != WEFT_R_DROPPED && !is_attached(type))
				before = t < W;
			if (!before)
				break;
			if (weft_rec_is_event(type))
				ev++;
			cut = i + 2 + extra;
		}
		i += 2 + extra;
	}
	if (cut > n)
		cut = n;
	*cut_events = ev;
	return cut;
}

/* The context chunk: the open slices of scratch, then the thread's counters' last values. */
static void write_context(struct snap *s, struct fl_thread *t, struct stack *st, const uint64_t *ctr, size_t nctr)
{
	size_t n = st->n;
	if (n + nctr * 3 > ctxcap)
		nctr = (ctxcap - n) / 3;
	uint64_t last = 0;
	for (size_t i = 0; i + 2 <= n; i += 2 + weft_rec_extra(st->w[i + 1]))
		if (weft_rec_has_ticks(weft_rec_type(st->w[i + 1])))
			last = st->w[i];
	for (size_t k = 0; k < nctr; k++) {
		memcpy(st->w + n, ctr + k * 3, 24);
		if (st->w[n] < last)
			st->w[n] = last;
		n += 3;
	}
	s->reemitted += st->nlvl;
	write_records(s, t, st->w, n);
}

static void sort_by_seq(size_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		size_t v = a[i], j = i;
		while (j > 0 && ents[a[j - 1]].seq > ents[v].seq) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

/* One thread's part of the snapshot: its context, then its window's frames (trimmed where the
 * window starts inside one), then the copy of its current chunk. */
static void dump_thread(struct snap *s0, struct fl_thread *t)
{
	/* after an earlier snapshot's cut the thread continues where that one ended: its events
	 * are cut by time only where other threads' losses moved the window start later */
	struct snap *s = s0;
	uint64_t W_all = s0->W;
	if (t->has_cut && !s0->raised)
		s0->W = 0;
	size_t n = 0;
	for (size_t k = 0; k < ents_n; k++) {
		size_t idx = (ents_first + k) % ents_cap;
		if (ents[idx].th == t && !ents[idx].consumed && ents[idx].seq < t->limit)
			ord[n++] = idx;
	}
	sort_by_seq(ord, n);
	/* scratch: the thread's state, then what comes before the window */
	size_t cn = t->nstk < ctxcap ? t->nstk : 0, cl = t->nlvl <= ctxlvlcap ? t->nlvl : 0;
	struct stack st = {ctxw, cn, ctxcap, ctxlvl, ctxtrack, cn ? cl : 0, ctxlvlcap, 1, 0};
	if (cn && cl) {
		memcpy(ctxw, t->stk, cn * 8);
		memcpy(ctxlvl, t->lvl, cl * 4);
		memcpy(ctxtrack, t->lvltrack, cl * 2);
	} else {
		st.n = st.nlvl = 0;
	}
	static uint64_t ctr[3 * 256];
	size_t nctr = t->nctr < 256 ? t->nctr : 256, ctrcap = 256;
	if (nctr)
		memcpy(ctr, t->ctr, nctr * 24);
	uint64_t *ctrp = ctr;
	size_t k = 0;
	int attach = 0, context_done = 0;
	/* frames wholly before the window: their summaries */
	for (; k < n; k++) {
		struct fl_entry *e = &ents[ord[k]];
		int cut_here = t->has_cut && e->seq == t->cut_seq;
		if (cut_here || !(e->last < s->W && e->last >= e->first))
			break;
		if (e->sum) {
			const uint64_t *sum = e->sum;
			for (size_t q = 0; q < sum[0]; q++)
				stack_pop(&st, (unsigned)sum[3 + q]);
			int a = 0;
			stack_apply(&st, sum + 3 + sum[0], sum[1], &a);
			for (size_t q = 0; q < sum[2]; q++)
				counter_keep(&ctrp, &nctr, &ctrcap, sum + 3 + sum[0] + sum[1] + q * 3, 1);
		}
		s->not_in_window += e->events;
	}
	for (; k < n; k++) {
		struct fl_entry *e = &ents[ord[k]];
		int cut_here = t->has_cut && e->seq == t->cut_seq;
		if (!context_done && (cut_here || e->first < s->W)) {
			size_t nw = frame_decode(e);
			if (nw == SIZE_MAX)
				continue;
			size_t skip = cut_here ? t->cut_off / 8 : 0;
			uint64_t cutev = 0;
			size_t cut = window_cut(raw, nw, skip, s->W, &cutev);
			s->not_in_window += cutev;
			stack_apply(&st, raw, cut, &attach);
			for (size_t i = 0; i + 2 <= cut; i += 2 + weft_rec_extra(raw[i + 1]))
				if (is_counter(weft_rec_type(raw[i + 1])) && weft_rec_extra(raw[i + 1]) == 1)
					counter_keep(&ctrp, &nctr, &ctrcap, raw + i, 1);
			write_context(s, t, &st, ctr, nctr);
			context_done = 1;
			if (cut < nw) { /* raw is intact: the context was packed from ctxw */
				size_t before = s->events;
				write_records(s, t, raw + cut, nw - cut);
				s->window_events += s->events - before;
			}
			continue;
		}
		if (!context_done) {
			write_context(s, t, &st, ctr, nctr);
			context_done = 1;
		}
		struct weft_chunk_header h;
		memcpy(&h, ring + e->off, sizeof(h));
		h.seq = ((uint64_t)t->serial << WEFT_SEQ_SERIAL_SHIFT) | t->written++;
		snap_chunk_write(&s->ev, &h, ring + e->off + sizeof(h));
		s->events += h.events;
		s->window_events += h.events;
		s->chunks++;
		s->bytes_raw += h.raw_size;
	}
	if (t->part && t->npart) {
		const uint64_t *w = t->part;
		size_t nw = t->npart;
		size_t skip = t->has_cut && t->cut_seq == t->limit ? t->cut_off / 8 : 0;
		size_t cut = skip;
		if (!context_done) {
			uint64_t cutev = 0;
			cut = window_cut(w, nw, skip, s->W, &cutev);
			s->not_in_window += cutev;
			stack_apply(&st, w, cut, &attach);
			for (size_t i = 0; i + 2 <= cut; i += 2 + weft_rec_extra(w[i + 1]))
				if (is_counter(weft_rec_type(w[i + 1])) && weft_rec_extra(w[i + 1]) == 1)
					counter_keep(&ctrp, &nctr, &ctrcap, w + i, 1);
			write_context(s, t, &st, ctr, nctr);
			context_done = 1;
		}
		if (cut < nw) {
			size_t before = s->events;
			write_records(s, t, w + cut, nw - cut);
			s->window_events += s->events - before;
		}
	}
	if (!context_done && (st.nlvl || nctr) && t->written == 0 && (t->nstk || t->nctr))
		write_context(s, t, &st, ctr, nctr); /* an idle thread inside open slices */
	s0->W = W_all;
}

/* weft_threads_visit's callback: a live thread's current chunk, copied. */
static void visit(void *ud, uint32_t tid, uint32_t serial, uint64_t seq, const char *data, size_t used)
{
	(void)ud;
	pthread_mutex_lock(&ring_lock);
	struct fl_thread *t = thread_find(tid, serial, 1);
	if (t) {
		t->limit = seq;
		t->excluded = 0;
		used &= ~(size_t)7;
		if (data && used) {
			void *copy = NULL;
			if (partused + used <= partcap) {
				copy = partarea + partused;
				partused += used;
			} else if (!weft_g.in_signal) {
				copy = malloc(used); /* freed after the snapshot (outside partarea) */
			}
			if (copy) {
				memcpy(copy, data, used);
				t->part = copy;
				t->npart = used / 8;
			}
		}
	}
	pthread_mutex_unlock(&ring_lock);
}

static int all_received(void)
{
	int ok = 1;
	pthread_mutex_lock(&ring_lock);
	for (size_t i = 0; i < nths && ok; i++)
		if (ths[i].limit != UINT64_MAX && ths[i].received < (ths[i].limit & WEFT_SEQ_INDEX_MASK))
			ok = 0;
	pthread_mutex_unlock(&ring_lock);
	return ok;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	struct dirent *e;
	char p[PATH_MAX + 256];
	while ((e = readdir(d)))
		if (weft_is_trace_file(e->d_name)) {
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
	closedir(d);
	return rmdir(dir) ? -errno : 0;
}

/* The metadata file: every record kept (THREAD_END with the snapshot's chunk count, snapshot
 * markers of the window only), the clock points the window needs, the window, the totals. */
static void write_meta(struct out *o, struct snap *s, uint64_t end_ticks, uint64_t trigger, const char *reason,
		       int number)
{
	for (struct meta_block *b = meta_head; b;
	     b = atomic_load_explicit(&b->next, memory_order_acquire)) {
		size_t used = atomic_load_explicit(&b->used, memory_order_acquire), i = 0;
		while (i + sizeof(struct weft_meta_rec_header) <= used) {
			struct weft_meta_rec_header h;
			memcpy(&h, b->data + i, sizeof(h));
			const unsigned char *p = b->data + i + sizeof(h);
			size_t next = i + sizeof(h) + h.len;
			if (next > used)
				break;
			if (h.type == WEFT_M_THREAD_END && h.len >= 32) {
				uint64_t r[4];
				memcpy(r, p, 32);
				struct fl_thread *t = thread_find((uint32_t)r[0], (uint32_t)r[1], 0);
				r[3] = (r[1] << WEFT_SEQ_SERIAL_SHIFT) | (t ? t->written : 0);
				out_put(o, &h, sizeof(h));
				out_put(o, r, 32);
			} else if (h.type == 36 && h.len >= 8) { /* a snapshot marker: its ticks first */
				uint64_t t;
				memcpy(&t, p, 8);
				if (t >= s->W) {
					out_put(o, &h, sizeof(h));
					out_put(o, p, h.len);
				}
			} else if (h.type != WEFT_M_FINISH) {
				out_put(o, &h, sizeof(h));
				out_put(o, p, h.len);
			}
			i = next;
		}
	}
	int nc = atomic_load_explicit(&nclocks, memory_order_acquire), from = 0;
	for (int i = 0; i < nc; i++)
		if (clocks[i].ticks <= s->W)
			from = i;
	struct weft_meta_rec_header ch = {WEFT_M_CLOCK, 0, 24};
	for (int i = from; i < nc; i++) {
		out_put(o, &ch, sizeof(ch));
		out_put(o, &clocks[i], 24);
	}
	struct weft_clock_point now;
	weft_clock_sample(&now);
	out_put(o, &ch, sizeof(ch));
	out_put(o, &now, 24);
	/* WEFT_M_WINDOW */
	uint64_t win[9] = {s->W, end_ticks, trigger, s->not_in_window, s->window_events, s->reemitted,
			   ev_received, ev_evicted, ev_written + s->events};
	uint32_t num[2] = {(uint32_t)number, 0};
	size_t rl = reason ? strnlen(reason, 1000) : 0;
	struct weft_meta_rec_header wh = {WEFT_M_WINDOW, 0, (uint32_t)(sizeof(win) + sizeof(num) + rl + 1)};
	out_put(o, &wh, sizeof(wh));
	out_put(o, win, sizeof(win));
	out_put(o, num, sizeof(num));
	out_put(o, reason ? reason : "", rl);
	out_put(o, "", 1);
	uint64_t fin[7] = {s->events, 0, 0, s->bytes_raw, s->ev.bytes, s->chunks, now.boot_ns};
	struct weft_meta_rec_header fh = {WEFT_M_FINISH, 0, sizeof(fin)};
	out_put(o, &fh, sizeof(fh));
	out_put(o, fin, sizeof(fin));
}

static int open_file(const char *dir, const char *name, struct out *o)
{
	char path[PATH_MAX + 512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	*o = (struct out){fd, 0, 0, 0};
	return 0;
}

/* Set by weft_flight_finish: the writers are done. Between the run's stop and then, chunks are
 * still on their way to the ring and the threads' current chunks are gone: a snapshot then
 * would miss them (and the next start after them), so it is refused. */
static int finishing;

int weft_flight_dump(const char *reason, uint64_t trigger_ticks, uint64_t after_ns)
{
	if (weft_cfg.switch_output[0]) /* parts, not snapshots (flight-switch.c) */
		return weft_flight_dump_as("part", reason, trigger_ticks, after_ns);
	return weft_flight_dump_as("snapshot", reason, trigger_ticks, after_ns);
}

int weft_flight_dump_as(const char *kind, const char *reason, uint64_t trigger_ticks, uint64_t after_ns)
{
	if (!active || !weft_g.dir[0])
		return 0;
	if (atomic_load(&weft_g.run) != WEFT_RUN_ON && !finishing)
		return -EAGAIN;
	int sig = weft_g.in_signal, rc = 0;
	weft_in_runtime++;
	if (sig ? pthread_mutex_trylock(&dump_lock) : pthread_mutex_lock(&dump_lock)) {
		weft_in_runtime--;
		return -EBUSY;
	}
	if (after_ns && !sig && atomic_load(&weft_g.run) == WEFT_RUN_ON) { /* the writers keep filling */
		uint64_t until = trigger_ticks + (uint64_t)((double)after_ns * tpn);
		while (weft__ticks() < until && atomic_load(&weft_g.run) == WEFT_RUN_ON)
			sleep_ms(1);
	}
	/* 1. which frames are in it: each live thread's chunks before its current one, and a copy
	 * of the current one; threads that ended: all of theirs */
	if (sig ? pthread_mutex_trylock(&ring_lock) : pthread_mutex_lock(&ring_lock)) {
		pthread_mutex_unlock(&dump_lock);
		weft_in_runtime--;
		return -EBUSY;
	}
	dumping = 1;
	partused = 0;
	for (size_t i = 0; i < nths; i++) {
		ths[i].limit = UINT64_MAX;
		ths[i].excluded = 0;
		ths[i].part = NULL;
		ths[i].npart = 0;
		ths[i].written = 0;
	}
	pthread_mutex_unlock(&ring_lock);
	uint64_t end_ticks = weft__ticks();
	if (atomic_load(&weft_g.run) == WEFT_RUN_ON)
		weft_threads_visit(sig, visit, NULL);
	/* 2. the writers put every chunk before those (at most 200 ms from a signal handler) */
	for (int waited = 0; !all_received() && waited < (sig ? 200 : 5000); waited++)
		sleep_ms(1);
	if (sig ? pthread_mutex_trylock(&ring_lock) : pthread_mutex_lock(&ring_lock)) {
		pthread_mutex_unlock(&dump_lock);
		weft_in_runtime--;
		return -EBUSY;
	}
	/* 3. one window start: the latest first kept event of the threads that lost some */
	struct snap s;
	memset(&s, 0, sizeof(s));
	s.W = snapshots ? last_end_ticks : 0;
	for (size_t i = 0; i < nths; i++) {
		struct fl_thread *t = &ths[i];
		if (!t->lost || t->excluded)
			continue;
		uint64_t first = UINT64_MAX, best = UINT64_MAX;
		for (size_t k = 0; k < ents_n; k++) {
			struct fl_entry *e = ent_at(k);
			if (e->th == t && !e->consumed && e->seq < t->limit && e->seq < best && e->first <= e->last) {
				best = e->seq;
				first = e->first;
			}
		}
		if (first == UINT64_MAX && t->part) {
			for (size_t w = 0; w + 2 <= t->npart; w += 2 + weft_rec_extra(t->part[w + 1])) {
				uint64_t x = rec_ticks(weft_rec_type(t->part[w + 1]), t->part[w]);
				if (x && weft_rec_type(t->part[w + 1]) != WEFT_R_DROPPED) {
					first = x;
					break;
				}
			}
		}
		/* a thread an earlier snapshot cut starts where that one ended, unless it lost the
		 * chunk it was cut in since */
		int cut_kept = t->has_cut && t->part && t->limit == t->cut_seq;
		for (size_t k = 0; k < ents_n && t->has_cut && !cut_kept; k++)
			cut_kept = ent_at(k)->th == t && ent_at(k)->seq == t->cut_seq;
		if (first != UINT64_MAX && first > s.W && !cut_kept)
			s.W = first;
	}
	s.raised = s.W > last_end_ticks;
	s.not_in_window = ev_lost_since;
	/* 4. the files, in DIR/.snapshot-PID.tmp, renamed into place */
	char tmp[PATH_MAX], final[PATH_MAX], name[400];
	snprintf(tmp, sizeof(tmp), "%s/.%s-%d.tmp", weft_g.dir, kind, (int)getpid());
	remove_dir(tmp);
	if (mkdir(tmp, 0755)) {
		rc = -errno;
		goto out;
	}
	snprintf(name, sizeof(name), "%s-0.wevents", weft_g.stem);
	if ((rc = open_file(tmp, name, &s.ev)))
		goto out;
	struct weft_file_header fh;
	weft_file_header_init(&fh, WEFT_EVENTS_MAGIC, weft_g.pid, 0, weft_clock_kind());
	out_put(&s.ev, &fh, sizeof(fh));
	for (size_t i = 0; i < nths; i++)
		if (!ths[i].excluded)
			dump_thread(&s, &ths[i]);
	out_flush(&s.ev);
	rc = s.ev.err;
	if (close(s.ev.fd) && !rc)
		rc = -errno;
	if (rc)
		goto out;
	struct out m;
	snprintf(name, sizeof(name), "%s.wmeta", weft_g.stem);
	if ((rc = open_file(tmp, name, &m)))
		goto out;
	weft_file_header_init(&fh, WEFT_META_MAGIC, weft_g.pid, 0, weft_clock_kind());
	out_put(&m, &fh, sizeof(fh));
	int number = snapshots + 1;
	write_meta(&m, &s, end_ticks, trigger_ticks, reason, number);
	out_flush(&m);
	rc = m.err;
	if (close(m.fd) && !rc)
		rc = -errno;
	if (rc)
		goto out;
	for (;; number++) {
		snprintf(final, sizeof(final), "%s/%s-%d", weft_g.dir, kind, number);
		if (!rename(tmp, final))
			break;
		if ((errno != EEXIST && errno != ENOTEMPTY) || number > 100000) {
			rc = -errno;
			goto out;
		}
	}
	snapshots = number;
	rc = number;
	pending = 0;
	if (!strcmp(kind, "part") && weft_cfg.switch_max_files && number > weft_cfg.switch_max_files) {
		snprintf(final, sizeof(final), "%s/part-%d", weft_g.dir, number - weft_cfg.switch_max_files);
		remove_dir(final); /* --switch-max-files: the oldest part goes */
	}
	/* 5. what it wrote is consumed: the next one starts after it */
	last_end_ticks = end_ticks;
	ev_written += s.events;
	ev_lost_since = 0;
	if (!sig) {
		for (size_t k = 0; k < ents_n; k++) {
			struct fl_entry *e = ent_at(k);
			if (e->consumed || e->seq >= e->th->limit || e->th->excluded)
				continue;
			sum_apply(e->th, e->sum);
			e->consumed = 1;
		}
	}
	for (size_t i = 0; i < nths; i++) {
		struct fl_thread *t = &ths[i];
		if (t->limit == UINT64_MAX || t->excluded)
			continue;
		t->lost = 1;
		t->has_cut = 1;
		t->cut_seq = t->limit;
		t->cut_off = t->npart * 8;
	}
out:
	if (rc < 0)
		remove_dir(tmp);
	for (size_t i = 0; i < nths; i++) {
		struct fl_thread *t = &ths[i];
		if (t->part && !sig && ((const unsigned char *)t->part < partarea ||
					(const unsigned char *)t->part >= partarea + partcap))
			free((void *)t->part);
		t->part = NULL;
		t->limit = UINT64_MAX;
		t->excluded = 0;
	}
	dumping = 0;
	pthread_mutex_unlock(&ring_lock);
	pthread_mutex_unlock(&dump_lock);
	weft_in_runtime--;
	return rc;
}

/* The end of the run (weft_stop, after the writers drained): the last window, unless noexit. */
void weft_flight_finish(void)
{
	weft_switch_stop(); /* --switch-output: its thread ends; the last part follows */
	finishing = 1;
	if (!active)
		return;
	if (!weft_cfg.flight_noexit || weft_cfg.switch_output[0])
		weft_flight_dump(weft_g.in_signal ? "fatal signal" : "exit", weft__ticks(), 0);
	if (weft_g.in_signal) /* the interrupted thread may hold malloc's lock: free nothing */
		return;
	/* the run is over: later metadata goes nowhere (meta.c checks active under its lock) */
	pthread_mutex_lock(&dump_lock); /* a snapshot asked for by another thread waits, then finds none */
	weft_meta_atfork_prepare(); /* takes meta.c's lock */
	active = 0;
	weft_meta_atfork_parent();
	pthread_mutex_lock(&ring_lock);
	for (size_t k = 0; k < ents_n; k++)
		free(ent_at(k)->sum);
	for (size_t i = 0; i < nths; i++) {
		free(ths[i].stk);
		free(ths[i].lvl);
		free(ths[i].lvltrack);
		free(ths[i].ctr);
	}
	meta_reset();
	free(ring);
	free(ents);
	free(ord);
	free(ths);
	free(raw);
	free(packbuf);
	free(zbuf);
	free(ctxw);
	free(ctxlvl);
	free(ctxtrack);
	free(partarea);
	free(outbuf);
	ZSTD_freeDCtx(dctx);
	ZSTD_freeCCtx(cctx);
	ring = NULL;
	ents = NULL;
	ord = NULL;
	ths = NULL;
	ents_n = nths = 0;
	pthread_mutex_unlock(&ring_lock);
	pthread_mutex_unlock(&dump_lock);
}

/* A writer thread ends: its scratch for chunk summaries goes. */
void weft_flight_writer_exit(void)
{
	if (scratch) {
		free(scratch->w);
		free(scratch);
		scratch = NULL;
	}
}
