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
#include "flight.h"
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

struct meta_block *fl_meta_head, *fl_meta_tail; /* under weft meta.c's meta_lock (its writers) */
struct weft_clock_point fl_clocks[MAX_CLOCKS];
_Atomic int fl_nclocks;
pthread_mutex_t fl_ring_lock = PTHREAD_MUTEX_INITIALIZER;
int fl_active;               /* flight mode in this process: set at start (weft_g.lock) */
unsigned char *fl_ring;      /* ring_size bytes */
size_t fl_ring_size, fl_ring_head, fl_ring_tail; /* bytes in use: from head (oldest) to tail */
size_t fl_ring_used;         /* frame bytes + summary bytes kept */
struct fl_entry *fl_ents;    /* a ring of entries */
size_t *fl_ord;              /* ents_cap: a snapshot's list of one thread's entries */
size_t fl_ents_cap, fl_ents_first, fl_ents_n;
struct fl_thread *fl_ths;    /* MAX_THREADS, made at start */
size_t fl_nths;
int fl_dumping;              /* a snapshot is being made: new threads are not in it */
uint64_t fl_ref_ticks, fl_ref_ns; /* for records timed in ns (sched, samples, accesses) */
double fl_tpn = 1.0;
uint64_t fl_ev_received, fl_ev_evicted, fl_ev_written, fl_ev_lost_since; /* events */
int fl_snapshots;            /* written by this process */
uint64_t fl_pending;         /* frame bytes put since the last snapshot (--switch-output) */
uint64_t fl_last_end_ticks;  /* the previous snapshot's end */

/* The snapshot's own buffers, made at start: a dump from a signal handler allocates nothing. */
size_t fl_chunk_cap;          /* bytes of a raw chunk */
uint64_t *fl_raw;             /* a decoded chunk */
uint8_t *fl_packbuf, *fl_zbuf;   /* packed, compressed */
size_t fl_packcap, fl_zcap;
uint64_t *fl_ctxw;            /* a context chunk being built */
size_t fl_ctxcap;
uint32_t *fl_ctxlvl;
uint16_t *fl_ctxtrack;
size_t fl_ctxlvlcap;
unsigned char *fl_partarea;   /* copies of the threads' current chunks */
size_t fl_partcap, fl_partused;
#define OUTBUF (64u << 10)
unsigned char *fl_outbuf;     /* buffered writes of the snapshot's files */
ZSTD_DCtx *fl_dctx;
ZSTD_CCtx *fl_cctx;

int weft_flight_active(void) { return fl_active ? (weft_cfg.flight_noexit ? 2 : 1) : 0; }
int weft_flight_dumping(void) { return __atomic_load_n(&fl_dumping, __ATOMIC_RELAXED); }

static uint64_t ns_to_ticks(uint64_t ns)
{
	double d = ((double)ns - (double)fl_ref_ns) * fl_tpn;
	return (uint64_t)((double)fl_ref_ticks + d);
}

/* The time of a record in ticks, or 0 for one that has none (an argument, a stack, a GPU
 * activity in CUPTI's clock). */
uint64_t fl_rec_ticks(unsigned type, uint64_t w0)
{
	if (weft_rec_has_ticks(type))
		return w0;
	if (type == WEFT_R_SCHED || type == WEFT_R_SAMPLE || type == WEFT_R_ACCESS)
		return ns_to_ticks(w0);
	return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	if (weft_fatal_thread) /* (the interrupted code may hold malloc's lock; other threads go on) */
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


static int stack_room(struct stack *s, size_t words, int level);

/* Level i goes, with everything recorded while it was open on top (its arguments, the
 * setjmps made in it). */
static void remove_level(struct stack *s, size_t i)
{
	size_t from = s->lvl[i], to = i + 1 < s->nlvl ? s->lvl[i + 1] : s->n;
	memmove(s->w + from, s->w + to, (s->n - to) * 8);
	s->n -= to - from;
	for (size_t k = i + 1; k < s->nlvl; k++) {
		s->lvl[k - 1] = s->lvl[k] - (uint32_t)(to - from);
		s->track[k - 1] = s->track[k];
	}
	s->nlvl--;
}

/* A slice's close, matched as the converter's walker matches it (model.c on_end): the
 * innermost open level on its stack (track; functions are on the thread's own, 0) with its id
 * (a function's address's low 32 bits, a slice's site), the levels on that stack above it closed
 * with it (their ends never came: an exception, events dropped); 0, nothing done, when no such
 * level is open (its begin was dropped). */
int fl_stack_pop(struct stack *s, unsigned track, uint32_t id)
{
	for (size_t i = s->nlvl; i-- > 0;) {
		if (s->track[i] == track && (uint32_t)s->w[s->lvl[i] + 1] == id) {
			for (size_t k = s->nlvl; --k > i;)
				if (s->track[k] == track)
					remove_level(s, k);
			remove_level(s, i);
			return 1;
		}
	}
	return 0;
}

/* setjmp and longjmp (the preload runtime records both, docs/format.md): a SETJMP record is
 * kept in the stack's words where it was made - inside the level open then, so it goes when
 * that level closes, as the jmp_buf's frame does - and a context chunk re-emits it there, so
 * a converter (model.c) learns the depth to unwind to. One per jmp_buf address in a level:
 * a later setjmp on the same buffer replaces the earlier (Lua: one per pcall). */
static int is_fn_track(unsigned tr) { return tr == 0; } /* the stack a longjmp unwinds (functions, track 0) */

int fl_stack_setjmp(struct stack *s, const uint64_t *rec)
{
	uint64_t env = weft_rec_addr(rec[1]);
	size_t i = s->nlvl ? s->lvl[s->nlvl - 1] : 0;
	while (i + 2 <= s->n) {
		size_t len = 2 + weft_rec_extra(s->w[i + 1]);
		if (weft_rec_type(s->w[i + 1]) == WEFT_R_SETJMP && weft_rec_addr(s->w[i + 1]) == env) {
			memmove(s->w + i, s->w + i + len, (s->n - i - len) * 8);
			s->n -= len;
			break;
		}
		i += len;
	}
	if (!stack_room(s, 2, 0))
		return 0;
	s->w[s->n] = rec[0];
	s->w[s->n + 1] = rec[1]; /* (no extra words) */
	s->n += 2;
	return 1;
}

/* A longjmp to env: the function levels opened after its setjmp close (slices on named tracks
 * stay open, as the converter has them). 0 when no setjmp on env is in the stack. */
int fl_stack_longjmp(struct stack *s, uint64_t env)
{
	size_t at = SIZE_MAX;
	for (size_t i = 0; i + 2 <= s->n; i += 2 + weft_rec_extra(s->w[i + 1]))
		if (weft_rec_type(s->w[i + 1]) == WEFT_R_SETJMP && weft_rec_addr(s->w[i + 1]) == env)
			at = i;
	if (at == SIZE_MAX)
		return 0;
	for (size_t i = s->nlvl; i-- > 0 && s->lvl[i] > at;)
		if (is_fn_track(s->track[i]))
			remove_level(s, i);
	return 1;
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
void fl_stack_apply(struct stack *s, const uint64_t *w, size_t n, int *attach)
{
	size_t i = 0;
	while (i + 2 <= n) {
		unsigned type = weft_rec_type(w[i + 1]), extra = weft_rec_extra(w[i + 1]);
		size_t len = 2 + extra;
		if (i + len > n)
			break;
		if (weft_rec_opens(type)) {
			*attach = 0;
			if (stack_room(s, len, 1)) {
				s->lvl[s->nlvl] = (uint32_t)s->n;
				s->track[s->nlvl] = (uint16_t)weft_rec_stack(type, w[i + 1]);
				s->nlvl++;
				memcpy(s->w + s->n, w + i, len * 8);
				s->n += len;
				*attach = 1;
			} else {
				s->truncated++;
			}
		} else if (weft_rec_closes(type)) {
			fl_stack_pop(s, weft_rec_stack(type, w[i + 1]), weft_rec_id(w[i + 1]));
			*attach = 0;
		} else if (type == WEFT_R_SETJMP) {
			fl_stack_setjmp(s, w + i);
			*attach = 0;
		} else if (type == WEFT_R_LONGJMP) {
			fl_stack_longjmp(s, weft_rec_addr(w[i + 1]));
			*attach = 0;
		} else if (fl_is_attached(type)) {
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

void fl_counter_keep(uint64_t **ctr, size_t *n, size_t *cap, const uint64_t *r, int fixed)
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
/* Words: nops (words), nopen (words), nctr (records), then the ops - what the chunk does to
 * the slices open before it, in order, two words each: (SUM_POP, track << 32 | id) an END or
 * function exit closing one (fl_stack_pop),
 * (SUM_LONGJMP, jmp_buf) a longjmp to a setjmp made before it -, the records it leaves open
 * (BEGIN or function entry with their attachments, and the SETJMP records made inside them,
 * as a stack applies them), and nctr counter records of 3 words. NULL when the chunk changes
 * nothing. One pass over the records with a writer's own scratch stack: a push per BEGIN, a
 * pop of the top per END (the common case), so it costs about what packing the chunk does. */
#define SUM_LEVELS 4096
#define SUM_OPS 512 /* words */
enum { SUM_POP = 0, SUM_LONGJMP = 1 };
struct sum_scratch {
	uint64_t *w;   /* open records */
	size_t cap;
	uint32_t lvl[SUM_LEVELS];
	uint16_t trk[SUM_LEVELS];
	uint64_t ops[SUM_OPS];
	uint64_t ctr[3 * 64];
};
static __thread struct sum_scratch *scratch WEFT_TLS; /* a writer's, made at its first chunk */
/* The program threads' (weft_flight_evict_chunk), under evict_lock; freed at the end. */
static struct sum_scratch *evict_scratch;
static pthread_mutex_t evict_lock = PTHREAD_MUTEX_INITIALIZER;

/* A setjmp or longjmp met by the summary: applied to its scratch stack; a longjmp whose setjmp
 * came before the chunk closes every function level the chunk opened and becomes an op. */
static void sum_jmp(struct sum_scratch *x, size_t *nw, size_t *nl, size_t *nops, const uint64_t *rec)
{
	struct stack st = {x->w, *nw, x->cap, x->lvl, x->trk, *nl, SUM_LEVELS, 1, 0};
	if (weft_rec_type(rec[1]) == WEFT_R_SETJMP) {
		fl_stack_setjmp(&st, rec);
	} else if (!fl_stack_longjmp(&st, weft_rec_addr(rec[1]))) {
		for (size_t i = st.nlvl; i-- > 0;)
			if (is_fn_track(st.track[i]))
				remove_level(&st, i);
		if (*nops + 2 <= SUM_OPS) {
			x->ops[(*nops)++] = SUM_LONGJMP;
			x->ops[(*nops)++] = weft_rec_addr(rec[1]);
		}
	}
	*nw = st.n;
	*nl = st.nlvl;
}

/* A close the fast path did not take: matched in the chunk's own levels (those above it on its
 * stack close with it), or an op on the levels open before the chunk - where the walker finds
 * it there, it closes the chunk's levels on that stack too (an exception thrown through them),
 * so they go here. */
static void sum_close(struct sum_scratch *x, size_t *nw, size_t *nl, size_t *nops, unsigned tr, uint32_t id)
{
	struct stack st = {x->w, *nw, x->cap, x->lvl, x->trk, *nl, SUM_LEVELS, 1, 0};
	if (!fl_stack_pop(&st, tr, id)) {
		for (size_t i = st.nlvl; i-- > 0;)
			if (st.track[i] == tr)
				remove_level(&st, i);
		if (*nops + 2 <= SUM_OPS) {
			x->ops[(*nops)++] = SUM_POP;
			x->ops[(*nops)++] = (uint64_t)tr << 32 | id;
		}
	}
	*nw = st.n;
	*nl = st.nlvl;
}

static uint64_t *summarize(struct sum_scratch **scr, const uint64_t *w, size_t n, size_t *nsum, uint64_t *first,
			   uint64_t *last)
{
	*nsum = 0;
	*first = UINT64_MAX;
	*last = 0;
	struct sum_scratch *x = *scr;
	if (!x || x->cap < n) {
		if (x)
			free(x->w);
		free(x);
		x = *scr = calloc(1, sizeof(*x));
		if (!x)
			return NULL;
		x->w = malloc((n + 1) * 8);
		x->cap = x->w ? n : 0;
	}
	size_t nw = 0, nl = 0, nops = 0, nctr = 0, i = 0;
	int attach = 0;
	uint64_t fst = UINT64_MAX, lst = 0; /* (locals: a store to x->w cannot change them) */
	while (i + 2 <= n) {
		/* the bulk of a trace: function entries and exits, slices and instants on the
		 * thread's own track (Python's calls) with nothing of their own, an exit or END
		 * closing the innermost level, LEAF records, arguments and arrows; what the general
		 * case below does with them */
		for (uint64_t *xw = x->w; i + 2 <= n;) {
			uint64_t h = w[i + 1], t = w[i];
			unsigned te = (unsigned)(h >> 32) & 0xffff; /* type, extra words */
			int fn = te == WEFT_R_FUNC_ENTER || te == WEFT_R_FUNC_EXIT;
			unsigned tr = fn ? 0 : (unsigned)(h >> 48); /* (a function's: its address's bits) */
			size_t len = 2;
			if ((te == WEFT_R_FUNC_ENTER || te == WEFT_R_BEGIN) && !tr && nl < SUM_LEVELS && nw + 2 <= x->cap) {
				x->lvl[nl] = (uint32_t)nw;
				x->trk[nl++] = (uint16_t)tr;
				xw[nw] = t;
				xw[nw + 1] = h;
				nw += 2;
				attach = 1;
			} else if ((te == WEFT_R_FUNC_EXIT || te == WEFT_R_END) && !tr && nl && !x->trk[nl - 1] &&
				   (uint32_t)xw[x->lvl[nl - 1] + 1] == (uint32_t)h) { /* the innermost's close */
				nw = x->lvl[--nl];
				attach = 0;
			} else if (te == (WEFT_R_LEAF | 1u << 8) && !tr && i + 3 <= n) {
				attach = 0;
				len = 3;
			} else if (te == WEFT_R_INSTANT && !tr) {
				attach = 0;
			} else if ((te & 0xff) >= WEFT_R_ARG_I64 && (te & 0xff) <= WEFT_R_FLOW_IN && i + 2 + (te >> 8) <= n) {
				len = 2 + (te >> 8); /* an argument or arrow: with the level it follows (no time) */
				if (attach && nw + len <= x->cap) {
					memcpy(xw + nw, w + i, len * 8);
					nw += len;
				}
				i += len;
				continue;
			} else {
				break;
			}
			fst = fst == UINT64_MAX ? t : fst;
			lst = t;
			i += len;
		}
		if (i + 2 > n)
			break;
		uint64_t h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		size_t len = 2 + extra;
		if (i + len > n)
			break;
		if (weft_rec_has_ticks(type)) {
			if (type != WEFT_R_DROPPED) {
				if (fst == UINT64_MAX)
					fst = w[i];
				lst = w[i];
			}
		} else if (type == WEFT_R_SCHED || type == WEFT_R_SAMPLE || type == WEFT_R_ACCESS) {
			uint64_t t = ns_to_ticks(w[i]);
			if (fst == UINT64_MAX)
				fst = t;
			lst = t;
		}
		if (type == WEFT_R_BEGIN || type == WEFT_R_FUNC_ENTER) {
			attach = 0;
			if (nl < SUM_LEVELS && nw + len <= x->cap) {
				x->lvl[nl] = (uint32_t)nw;
				x->trk[nl++] = (uint16_t)weft_rec_stack(type, h);
				for (size_t k = 0; k < len; k++) /* mostly 2 words: no call */
					x->w[nw + k] = w[i + k];
				nw += len;
				attach = 1;
			}
		} else if (type == WEFT_R_END || type == WEFT_R_FUNC_EXIT) {
			attach = 0;
			sum_close(x, &nw, &nl, &nops, weft_rec_stack(type, h), weft_rec_id(h));
		} else if (type == WEFT_R_SETJMP || type == WEFT_R_LONGJMP) {
			attach = 0;
			if (nw + 2 <= x->cap)
				sum_jmp(x, &nw, &nl, &nops, w + i);
		} else if (fl_is_attached(type)) {
			if (attach && nw + len <= x->cap) {
				for (size_t k = 0; k < len; k++)
					x->w[nw + k] = w[i + k];
				nw += len;
			}
		} else {
			if (fl_is_counter(type) && extra == 1) {
				uint64_t *c = x->ctr;
				size_t cap = 64;
				fl_counter_keep(&c, &nctr, &cap, w + i, 1);
			}
			if (type != WEFT_R_DROPPED)
				attach = 0;
		}
		i += len;
	}
	*first = fst;
	*last = lst;
	if (!nops && !nw && !nctr)
		return NULL;
	size_t total = 3 + nops + nw + nctr * 3;
	uint64_t *out = malloc(total * 8);
	if (out) {
		out[0] = nops;
		out[1] = nw;
		out[2] = nctr;
		memcpy(out + 3, x->ops, nops * 8);
		memcpy(out + 3 + nops, x->w, nw * 8);
		memcpy(out + 3 + nops + nw, x->ctr, nctr * 24);
		*nsum = total;
	}
	return out;
}

/* A chunk's records' summary (malloc'd; NULL when it changes nothing), made with the calling
 * thread's scratch: what the writers do, for the unit tests (tests/unit/test_flight.c). */
uint64_t *fl_chunk_summary(const uint64_t *w, size_t n, size_t *nsum)
{
	uint64_t first, last;
	return summarize(&scratch, w, n, nsum, &first, &last);
}

/* A summary's effect on a stack (a thread's, or a snapshot's scratch copy) and its counters. */
void fl_sum_apply_to(struct stack *s, const uint64_t *sum, uint64_t **ctr, size_t *nctr, size_t *capctr, int fixed)
{
	size_t nops = sum[0], nopen = sum[1], nc = sum[2];
	for (size_t k = 0; k + 1 < nops; k += 2) {
		if (sum[3 + k] == SUM_POP)
			fl_stack_pop(s, (unsigned)(sum[4 + k] >> 32), (uint32_t)sum[4 + k]);
		else
			fl_stack_longjmp(s, sum[4 + k]);
	}
	int attach = 0;
	fl_stack_apply(s, sum + 3 + nops, nopen, &attach);
	for (size_t k = 0; k < nc; k++)
		fl_counter_keep(ctr, nctr, capctr, sum + 3 + nops + nopen + k * 3, fixed);
}

void fl_sum_apply(struct fl_thread *t, const uint64_t *sum)
{
	if (!sum)
		return;
	struct stack s;
	thread_stack(t, &s);
	fl_sum_apply_to(&s, sum, &t->ctr, &t->nctr, &t->capctr, 0);
	thread_unstack(t, &s);
}

/* ---- the thread table ---- */
struct fl_thread *fl_thread_find(uint32_t tid, uint32_t serial, int create)
{
	for (size_t i = 0; i < fl_nths; i++)
		if (fl_ths[i].tid == tid && fl_ths[i].serial == serial)
			return &fl_ths[i];
	if (!create || fl_nths >= MAX_THREADS)
		return NULL;
	struct fl_thread *t = &fl_ths[fl_nths++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->serial = serial;
	t->limit = UINT64_MAX;
	t->excluded = fl_dumping;
	return t;
}

/* ---- eviction ---- */
struct fl_entry *fl_ent_at(size_t k) { return &fl_ents[(fl_ents_first + k) % fl_ents_cap]; }

/* An entry's summary applied to its thread's state (the state moves past its chunk). */
/* The pending summaries that now come in order (all of them, oldest first, with `all`: too
 * many wait, the order is given up). */
static void drain_pending(struct fl_thread *t, int all)
{
	while (t->npend) {
		size_t k = 0;
		for (size_t q = 1; q < t->npend; q++)
			if (t->pend[q].idx < t->pend[k].idx)
				k = q;
		if (t->pend[k].idx != t->applied && !all)
			return;
		fl_sum_apply(t, t->pend[k].sum);
		if (!weft_g.in_signal)
			free(t->pend[k].sum);
		t->applied = t->pend[k].idx + 1;
		t->pend[k] = t->pend[--t->npend];
	}
}

static void apply_one(struct fl_entry *e)
{
	struct fl_thread *t = e->th;
	uint64_t idx = e->seq & WEFT_SEQ_INDEX_MASK;
	int live = fl_entry_live(e);
	e->consumed = 1;
	if (!live) /* behind the state: its effect cannot come in order any more */
		return;
	if (idx > t->applied) { /* an earlier chunk of its thread is still with a writer */
		if (t->npend == t->cappend && t->cappend < FL_PENDING && !weft_fatal_thread) {
			size_t cap = t->cappend ? t->cappend * 2 : 64;
			void *p = realloc(t->pend, cap * sizeof(*t->pend));
			if (p) {
				t->pend = p;
				t->cappend = cap;
			}
		}
		if (t->npend < t->cappend) {
			t->pend[t->npend].idx = idx;
			t->pend[t->npend++].sum = e->sum;
			e->sum = NULL; /* the thread's now (evict_oldest frees the entry's) */
			return;
		}
		drain_pending(t, 1);
	}
	fl_sum_apply(t, e->sum);
	t->applied = idx + 1;
	drain_pending(t, 0);
}

/* Its thread's earlier entries still in the ring, applied first, oldest first (a chunk can
 * reach the ring after a later one of its thread: several writers, or a program thread that
 * packed the later one itself); counted as evicted where they go with an eviction. */
static void apply_earlier(const struct fl_entry *e, int evicted)
{
	for (;;) {
		struct fl_entry *best = NULL;
		for (size_t k = 0; k < fl_ents_n; k++) {
			struct fl_entry *x = fl_ent_at(k);
			if (x != e && x->th == e->th && !x->consumed && x->seq < e->seq && (!best || x->seq < best->seq))
				best = x;
		}
		if (!best)
			return;
		apply_one(best);
		if (evicted && !best->ghost) {
			fl_ev_evicted += best->events;
			fl_ev_lost_since += best->events;
		}
	}
}

void fl_entry_apply(struct fl_entry *e)
{
	if (e->consumed)
		return;
	apply_earlier(e, 0);
	apply_one(e);
}

static void evict_oldest(void)
{
	struct fl_entry *e = fl_ent_at(0);
	if (!e->consumed)
		apply_earlier(e, 1);
	if (!e->consumed) {
		apply_one(e);
		e->th->lost = 1;
		if (!e->ghost) { /* (a ghost's events were counted when it came) */
			fl_ev_evicted += e->events;
			fl_ev_lost_since += e->events;
		}
	}
	if (!weft_g.in_signal)
		free(e->sum);
	fl_ring_used -= e->len + e->nsum * 8;
	fl_ents_first = (fl_ents_first + 1) % fl_ents_cap;
	fl_ents_n--;
	fl_ring_head = fl_ents_n ? fl_ent_at(0)->off : fl_ring_tail;
	if (!fl_ents_n)
		fl_ring_head = fl_ring_tail = 0;
}

/* Where a frame of len bytes goes, evicting until it fits; SIZE_MAX if it cannot. */
static size_t ring_place(size_t len)
{
	for (;;) {
		if (len > fl_ring_size)
			return SIZE_MAX;
		if (!fl_ents_n)
			return 0;
		size_t head = fl_ent_at(0)->off;
		if (fl_ring_tail > head || (fl_ring_tail == head && !fl_ents_n)) {
			if (fl_ring_size - fl_ring_tail >= len)
				return fl_ring_tail;
			if (head >= len)
				return 0;
		} else if (head - fl_ring_tail >= len) {
			return fl_ring_tail;
		}
		evict_oldest();
	}
}

/* Room for one more entry (under ring_lock): the table grows, or the oldest goes. */
static void entry_room(void)
{
	if (fl_ents_n < fl_ents_cap)
		return;
	size_t ncap = fl_ents_cap * 2;
	struct fl_entry *n = weft_fatal_thread ? NULL : malloc(ncap * sizeof(*n));
	size_t *no = n ? realloc(fl_ord, ncap * sizeof(*no)) : NULL;
	if (no)
		fl_ord = no;
	if (n && !no) {
		free(n);
		n = NULL;
	}
	if (n) {
		for (size_t k = 0; k < fl_ents_n; k++)
			n[k] = *fl_ent_at(k);
		free(fl_ents);
		fl_ents = n;
		fl_ents_cap = ncap;
		fl_ents_first = 0;
	} else {
		evict_oldest();
	}
}

/* The thread of a chunk (under ring_lock), its arrival counted; NULL past MAX_THREADS. */
static struct fl_thread *arrived(uint32_t tid, uint64_t seq, uint32_t events)
{
	struct fl_thread *t = fl_thread_find(tid, (uint32_t)(seq >> WEFT_SEQ_SERIAL_SHIFT), 1);
	if (!t)
		return NULL;
	t->received++;
	fl_ev_received += events;
	return t;
}

/* A ghost: a chunk whose records were never kept, its summary alone in the ring (no bytes),
 * so the stacks stay right across it and no snapshot shows anything of its thread before it. */
static void put_ghost(struct fl_thread *t, uint64_t seq, uint32_t events, uint64_t *sum, size_t nsum)
{
	entry_room();
	struct fl_entry *e = &fl_ents[(fl_ents_first + fl_ents_n) % fl_ents_cap];
	size_t off = fl_ents_n ? fl_ring_tail : 0;
	fl_ents_n++;
	*e = (struct fl_entry){off, 0, events, seq, UINT64_MAX, 0, t, sum, nsum, 0, 1};
	fl_ring_tail = off;
	fl_ring_used += nsum * 8;
	t->lost = 1;
	fl_ev_evicted += events;
	fl_ev_lost_since += events;
	while (fl_ents_n > 1 && fl_ring_used > fl_ring_size)
		evict_oldest();
}

static void ring_put(struct sum_scratch **scr, const struct weft_chunk *c, const struct weft_chunk_header *h,
		     const void *payload, size_t stored)
{
	uint64_t first, last;
	size_t nsum;
	uint64_t *sum = summarize(scr, (const uint64_t *)c->data, (c->used & ~(size_t)7) / 8, &nsum, &first, &last);
	size_t len = sizeof(*h) + stored, len8 = (len + 7) & ~(size_t)7; /* frames 8-aligned */
	weft_lock(&fl_ring_lock, WEFT_HOLD_RING);
	struct fl_thread *t = arrived(h->tid, h->seq, h->events);
	if (!t) {
		weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
		free(sum);
		atomic_fetch_add(&weft_g.dropped, h->events);
		return;
	}
	/* later chunks of its thread were evicted while it was with a writer (their summaries
	 * wait for it): it lies before a gap, so it is applied now and kept out */
	if (t->npend && (h->seq & WEFT_SEQ_INDEX_MASK) == t->applied) {
		put_ghost(t, h->seq, h->events, sum, nsum);
		apply_one(fl_ent_at(fl_ents_n - 1));
		weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
		return;
	}
	/* a snapshot is being made: a chunk past its end must not evict what it is writing; where
	 * it would, it goes as a ghost (kept out, like the queue's chunks then; the next window
	 * starts after it) */
	if (__atomic_load_n(&fl_dumping, __ATOMIC_RELAXED) && t->limit != UINT64_MAX && h->seq >= t->limit &&
	    !t->excluded && fl_ring_used + len8 + nsum * 8 > fl_ring_size) {
		put_ghost(t, h->seq, h->events, sum, nsum);
		weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
		return;
	}
	/* AGE: frames whose last event is older than it go, whatever the room */
	if (weft_cfg.flight_age_ns) {
		uint64_t now = weft__ticks(), age = (uint64_t)((double)weft_cfg.flight_age_ns * fl_tpn);
		while (fl_ents_n && fl_ent_at(0)->last < now - age && fl_ent_at(0)->last >= fl_ent_at(0)->first)
			evict_oldest();
	}
	while (fl_ents_n && fl_ring_used + len8 + nsum * 8 > fl_ring_size)
		evict_oldest();
	entry_room();
	int late = (h->seq & WEFT_SEQ_INDEX_MASK) < t->applied;
	size_t off = late ? SIZE_MAX : ring_place(len8);
	if (off == SIZE_MAX) { /* larger than the ring, or too late: never kept, a gap */
		put_ghost(t, h->seq, h->events, sum, nsum);
		if (late) /* its thread's state moved past it: its summary can no longer apply in order */
			fl_ent_at(fl_ents_n - 1)->consumed = 1;
		weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
		return;
	}
	memcpy(fl_ring + off, h, sizeof(*h));
	memcpy(fl_ring + off + sizeof(*h), payload, stored);
	struct fl_entry *e = &fl_ents[(fl_ents_first + fl_ents_n) % fl_ents_cap];
	fl_ents_n++;
	*e = (struct fl_entry){off, (uint32_t)len8, h->events, h->seq, first, last, t, sum, nsum, 0, 0};
	fl_ring_tail = off + len8;
	fl_ring_used += len8 + nsum * 8;
	fl_pending += len8 + nsum * 8;
	uint64_t p = fl_pending;
	weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
	weft_switch_note(p, fl_ring_size);
}

void weft_flight_put(const struct weft_chunk *c, const struct weft_chunk_header *h, const void *payload,
		     size_t stored)
{
	ring_put(&scratch, c, h, payload, stored);
}

/* The writers are behind: a program thread needs a chunk and takes the oldest one waiting for
 * them (thread.c, in flight mode instead of dropping its own newest events) and does the
 * writer's work on it itself: packed (not compressed) and put into the ring, with its summary.
 * Nothing is lost and no gap opens; the program pays what the writer would have (a pass to pack
 * and one to summarize, some 5-15 ns an event) for the chunks the writers could not take, and
 * goes on at once. One program thread at a time (the buffers are shared: evict_lock, marked
 * for a fatal signal's handler, fatal.c). A chunk its thread's state has moved past (a later
 * one was evicted already) goes as a ghost, counted as evicted. */
static uint8_t *evict_pack; /* under evict_lock, made at start */

void weft_flight_evict_chunk(const struct weft_chunk *c)
{
	size_t n = (c->used & ~(size_t)7) / 8;
	/* (no signal comes while this thread holds the ring, which a fatal one's handler could
	 * not take: the chunk switch, weft__reserve_slow, blocks them; a few hundred microseconds
	 * of weft's own work, then it comes) */
	weft_lock(&evict_lock, WEFT_HOLD_EVICT);
	struct weft_chunk_header h;
	memset(&h, 0, sizeof(h));
	h.magic = WEFT_CHUNK_MAGIC;
	h.tid = c->tid;
	h.seq = c->seq;
	h.raw_size = (uint32_t)(n * 8);
	uint32_t events = 0, dropped = 0;
	/* (version 2 packing: no scratch columns, so the memory bound holds) */
	size_t stored = weft_pack((const uint64_t *)c->data, n, evict_pack, &events, &dropped);
	h.flags = WEFT_CHUNK_PACKED2 | WEFT_CHUNK_SUM |
		  (weft_records_have_leaf((const uint64_t *)c->data, n) ? WEFT_CHUNK_LEAF : 0); /* (1.12) */
	h.events = events;
	h.dropped = dropped;
	h.stored_size = (uint32_t)stored;
	h.checksum = weft_chunk_sum(h.flags, evict_pack, stored);
	ring_put(&evict_scratch, c, &h, evict_pack, stored);
	weft_unlock(&evict_lock, WEFT_HOLD_EVICT);
	atomic_fetch_add(&weft_g.events, events);
	atomic_fetch_add(&weft_g.bytes_raw, n * 8);
	atomic_fetch_add(&weft_g.chunks, 1);
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
		int c = atomic_load(&fl_nclocks);
		if (c == MAX_CLOCKS) { /* thin out: every other point after the first */
			int o = 1;
			for (int i = 2; i < MAX_CLOCKS; i += 2)
				fl_clocks[o++] = fl_clocks[i];
			c = o;
		}
		memcpy(&fl_clocks[c], w, 24);
		atomic_store_explicit(&fl_nclocks, c + 1, memory_order_release);
		return;
	}
	if (len > META_BLOCK)
		return;
	if (!fl_meta_tail || META_BLOCK - atomic_load(&fl_meta_tail->used) < len) {
		if (weft_g.in_signal)
			return;
		struct meta_block *b = malloc(sizeof(*b));
		if (!b)
			return;
		b->next = NULL;
		b->used = 0;
		if (fl_meta_tail)
			atomic_store_explicit(&fl_meta_tail->next, b, memory_order_release);
		else
			fl_meta_head = b;
		fl_meta_tail = b;
	}
	size_t u = atomic_load(&fl_meta_tail->used);
	for (int i = 0; i < n; i++) {
		if (iov[i].iov_len)
			memcpy(fl_meta_tail->data + u, iov[i].iov_base, iov[i].iov_len);
		u += iov[i].iov_len;
	}
	atomic_store_explicit(&fl_meta_tail->used, u, memory_order_release);
}

static void meta_reset(void)
{
	for (struct meta_block *b = fl_meta_head, *n; b; b = n) {
		n = b->next;
		free(b);
	}
	fl_meta_head = fl_meta_tail = NULL;
	atomic_store(&fl_nclocks, 0);
}

/* An empty ring: no frames, no threads, no snapshots, nothing counted yet (start, fork child). */
static void ring_empty(void)
{
	fl_ring_head = fl_ring_tail = fl_ring_used = 0;
	fl_ents_first = fl_ents_n = fl_nths = 0;
	fl_ev_received = fl_ev_evicted = fl_ev_written = fl_ev_lost_since = 0;
	fl_snapshots = 0;
	fl_last_end_ticks = 0;
}

/* ---- start, fork ---- */
int weft_flight_start(void)
{
	if (!weft_cfg.flight_size && !weft_cfg.switch_output[0])
		return 0;
	fl_ring_size = weft_switch_ring_size();
	fl_chunk_cap = weft_cfg.chunk_size > weft_cfg.buffer_size / 2 ? weft_cfg.buffer_size / 2 : weft_cfg.chunk_size;
	if (fl_chunk_cap < 4096)
		fl_chunk_cap = 4096;
	fl_chunk_cap = (fl_chunk_cap + 4095) & ~(size_t)4095;
	fl_packcap = weft_pack_bound(fl_chunk_cap / 8);
	fl_zcap = ZSTD_compressBound(fl_packcap);
	fl_ctxcap = fl_chunk_cap / 8;
	fl_ctxlvlcap = 1u << 16;
	fl_partcap = 2u << 20;
	fl_ring = malloc(fl_ring_size);
	fl_ents_cap = 1024;
	fl_ents = malloc(fl_ents_cap * sizeof(*fl_ents));
	fl_ord = malloc(fl_ents_cap * sizeof(*fl_ord));
	fl_outbuf = malloc(OUTBUF);
	fl_ths = calloc(MAX_THREADS, sizeof(*fl_ths));
	fl_raw = malloc(fl_chunk_cap + 64);
	fl_packbuf = malloc(fl_packcap);
	fl_zbuf = malloc(fl_zcap);
	fl_ctxw = malloc(fl_ctxcap * 8);
	fl_ctxlvl = malloc(fl_ctxlvlcap * 4);
	fl_ctxtrack = malloc(fl_ctxlvlcap * 2);
	fl_partarea = malloc(fl_partcap);
	evict_pack = malloc(weft_pack_bound(fl_chunk_cap / 8));
	fl_dctx = ZSTD_createDCtx();
	fl_cctx = ZSTD_createCCtx();
	if (!fl_ring || !fl_ents || !fl_ord || !fl_outbuf || !fl_ths || !fl_raw || !fl_packbuf || !fl_zbuf || !fl_ctxw || !fl_ctxlvl || !fl_ctxtrack || !fl_partarea || !evict_pack ||
	    !fl_dctx || !fl_cctx)
		return -ENOMEM;
	struct weft_clock_point p;
	weft_clock_sample(&p);
	fl_ref_ticks = p.ticks;
	fl_ref_ns = p.boot_ns;
	fl_tpn = weft_ticks_per_ns();
	if (!(fl_tpn > 0))
		fl_tpn = 1.0;
	ring_empty();
	fl_active = 1;
	return weft_switch_start();
}

/* What the ring's entries and threads own (their summaries and stacks), and the metadata kept. */
static void free_summaries(void)
{
	for (size_t k = 0; k < fl_ents_n; k++)
		free(fl_ent_at(k)->sum);
	for (size_t i = 0; i < fl_nths; i++) {
		for (size_t k = 0; k < fl_ths[i].npend; k++)
			free(fl_ths[i].pend[k].sum);
		free(fl_ths[i].pend);
		free(fl_ths[i].stk);
		free(fl_ths[i].lvl);
		free(fl_ths[i].lvltrack);
		free(fl_ths[i].ctr);
	}
	meta_reset();
}

/* Fork child: only the forking thread runs; the parent's ring and metadata are the parent's.
 * The child starts an empty ring (its metadata is written again by its start-up). */
pthread_mutex_t fl_dump_lock = PTHREAD_MUTEX_INITIALIZER; /* one snapshot at a time */

void weft_flight_atfork_child(void)
{
	pthread_mutex_init(&fl_ring_lock, NULL);
	pthread_mutex_init(&fl_dump_lock, NULL); /* a snapshot another thread was making is the parent's */
	pthread_mutex_init(&evict_lock, NULL);
	if (!fl_active)
		return;
	free_summaries();
	ring_empty();
	fl_dumping = 0;
	fl_pending = 0;
	fl_zhelp_atfork_child();
	weft_switch_atfork_child();
}
void weft_flight_atfork_prepare(void) { pthread_mutex_lock(&fl_ring_lock); }
void weft_flight_atfork_parent(void) { pthread_mutex_unlock(&fl_ring_lock); }

/* The end of the run (weft_stop, after the writers drained): the last window, unless noexit. */
void weft_flight_finish(void)
{
	weft_switch_stop(); /* --switch-output: its thread ends; the last part follows */
	fl_finishing = 1;
	if (!fl_active)
		return;
	/* the exit snapshot is snapshot.c's (weft_snapshot_at_exit, first thing in weft_stop); the
	 * last part of --switch-output is this one, once the writers drained */
	if (weft_cfg.switch_output[0])
		weft_flight_dump_as("part", weft_g.in_signal == 1 ? "fatal signal" : "exit", weft__ticks(), 0);
	if (weft_g.in_signal) /* the interrupted thread may hold malloc's lock: free nothing */
		return;
	/* the run is over: later metadata goes nowhere (meta.c checks active under its lock) */
	pthread_mutex_lock(&fl_dump_lock); /* a snapshot asked for by another thread waits, then finds none */
	weft_meta_atfork_prepare(); /* takes meta.c's lock */
	fl_active = 0;
	weft_meta_atfork_parent();
	pthread_mutex_lock(&fl_ring_lock);
	free_summaries();
	free(fl_ring);
	free(fl_ents);
	free(fl_ord);
	free(fl_ths);
	free(fl_raw);
	free(fl_packbuf);
	free(fl_zbuf);
	fl_zhelp_free();
	free(fl_ctxw);
	free(fl_ctxlvl);
	free(fl_ctxtrack);
	free(fl_partarea);
	free(fl_outbuf);
	free(evict_pack);
	evict_pack = NULL;
	if (evict_scratch) {
		free(evict_scratch->w);
		free(evict_scratch);
		evict_scratch = NULL;
	}
	ZSTD_freeDCtx(fl_dctx);
	ZSTD_freeCCtx(fl_cctx);
	fl_ring = NULL;
	fl_ents = NULL;
	fl_ord = NULL;
	fl_ths = NULL;
	fl_ents_n = fl_nths = 0;
	pthread_mutex_unlock(&fl_ring_lock);
	pthread_mutex_unlock(&fl_dump_lock);
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
