/*
 * flight.h - what the flight recorder's two files share: flight.c (the ring, the chunk summaries,
 * the metadata kept in memory, start, fork and the end of the run) and flight-snap.c (a snapshot
 * of the ring written as a trace directory). Not an API: src/lib/internal.h declares the calls
 * the rest of the runtime makes.
 *
 * The state below is written under fl_ring_lock (the ring, the thread table, the counts), by
 * meta.c's writers under its lock (the metadata blocks and clock points), or once at start
 * (the snapshot's buffers); flight.c's opening comment says how it fits together.
 */
#ifndef WEFT_FLIGHT_H
#define WEFT_FLIGHT_H

#include "internal.h"
#include <zstd.h>

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
	int ghost;      /* its bytes were never kept (evicted before a writer took it): a gap */
};

#define FL_PENDING 65536 /* at most: then the order is given up */
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
	uint64_t applied;  /* the next chunk index whose summary the state awaits */
	/* summaries evicted before an earlier chunk of the thread reached the ring (a writer still
	 * had it): applied, in order, once it comes */
	struct fl_pending {
		uint64_t idx;
		uint64_t *sum;
	} *pend;
	size_t npend, cappend;
};

#define MAX_THREADS 4096

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

#define OUTBUF (64u << 10)

WEFT_HIDDEN extern struct meta_block *fl_meta_head, *fl_meta_tail;
WEFT_HIDDEN extern struct weft_clock_point fl_clocks[MAX_CLOCKS];
WEFT_HIDDEN extern _Atomic int fl_nclocks;
WEFT_HIDDEN extern pthread_mutex_t fl_ring_lock;
WEFT_HIDDEN extern int fl_active;
WEFT_HIDDEN extern unsigned char *fl_ring;
WEFT_HIDDEN extern size_t fl_ring_size, fl_ring_head, fl_ring_tail;
WEFT_HIDDEN extern size_t fl_ring_used;
WEFT_HIDDEN extern struct fl_entry *fl_ents;
WEFT_HIDDEN extern size_t *fl_ord;
WEFT_HIDDEN extern size_t fl_ents_cap, fl_ents_first, fl_ents_n;
WEFT_HIDDEN extern struct fl_thread *fl_ths;
WEFT_HIDDEN extern size_t fl_nths;
WEFT_HIDDEN extern int fl_dumping;
WEFT_HIDDEN extern uint64_t fl_ref_ticks, fl_ref_ns;
WEFT_HIDDEN extern double fl_tpn;
WEFT_HIDDEN extern uint64_t fl_ev_received, fl_ev_evicted, fl_ev_written, fl_ev_lost_since;
WEFT_HIDDEN extern int fl_snapshots;
WEFT_HIDDEN extern uint64_t fl_pending;
WEFT_HIDDEN extern uint64_t fl_last_end_ticks;
WEFT_HIDDEN extern size_t fl_chunk_cap;
WEFT_HIDDEN extern uint64_t *fl_raw;
WEFT_HIDDEN extern uint8_t *fl_packbuf, *fl_zbuf;
WEFT_HIDDEN extern size_t fl_packcap, fl_zcap;
WEFT_HIDDEN extern uint64_t *fl_ctxw;
WEFT_HIDDEN extern size_t fl_ctxcap;
WEFT_HIDDEN extern uint32_t *fl_ctxlvl;
WEFT_HIDDEN extern uint16_t *fl_ctxtrack;
WEFT_HIDDEN extern size_t fl_ctxlvlcap;
WEFT_HIDDEN extern unsigned char *fl_partarea;
WEFT_HIDDEN extern size_t fl_partcap, fl_partused;
WEFT_HIDDEN extern unsigned char *fl_outbuf;
WEFT_HIDDEN extern ZSTD_DCtx *fl_dctx;
WEFT_HIDDEN extern ZSTD_CCtx *fl_cctx;
WEFT_HIDDEN extern pthread_mutex_t fl_dump_lock; /* one snapshot at a time */
WEFT_HIDDEN extern int fl_finishing;             /* weft_flight_finish: the writers are done */

/* flight-zhelp.c: a second compressor for a snapshot's whole frames. start: 1 where the helper
 * runs for this snapshot (0: the snapshot compresses alone); give: src[0..n) to compress (the
 * helper idle; 0: not taken); take: waits for it, its compressed bytes in *out (the helper's
 * buffer, until the next give), their size or 0 where it did not shrink; stop: at the
 * snapshot's end. */
WEFT_HIDDEN int fl_zhelp_start(void);
WEFT_HIDDEN int fl_zhelp_give(const void *src, size_t n);
WEFT_HIDDEN size_t fl_zhelp_take(const uint8_t **out);
WEFT_HIDDEN void fl_zhelp_stop(void);
WEFT_HIDDEN void fl_zhelp_atfork_child(void);
WEFT_HIDDEN void fl_zhelp_free(void);

/* flight.c's helpers */
WEFT_HIDDEN uint64_t fl_rec_ticks(unsigned type, uint64_t w0); /* a record's time in ticks, 0: none */
static inline int fl_is_attached(unsigned type) /* belongs to the event before it */
{
	return (type >= WEFT_R_ARG_I64 && type <= WEFT_R_FLOW_IN) || type == WEFT_R_STACK || type == WEFT_R_CPUMEM;
}
static inline int fl_is_counter(unsigned type) { return type == WEFT_R_COUNTER_I64 || type == WEFT_R_COUNTER_F64; }
WEFT_HIDDEN int fl_stack_pop(struct stack *s, unsigned track, uint32_t id);
WEFT_HIDDEN void fl_stack_apply(struct stack *s, const uint64_t *w, size_t n, int *attach);
WEFT_HIDDEN void fl_counter_keep(uint64_t **ctr, size_t *n, size_t *cap, const uint64_t *r, int fixed);
WEFT_HIDDEN void fl_sum_apply(struct fl_thread *t, const uint64_t *sum);
WEFT_HIDDEN uint64_t *fl_chunk_summary(const uint64_t *w, size_t n, size_t *nsum);
WEFT_HIDDEN void fl_entry_apply(struct fl_entry *e); /* its thread's earlier entries first */
WEFT_HIDDEN void fl_sum_apply_to(struct stack *s, const uint64_t *sum, uint64_t **ctr, size_t *nctr, size_t *capctr,
				 int fixed);
WEFT_HIDDEN int fl_stack_setjmp(struct stack *s, const uint64_t *rec);
WEFT_HIDDEN int fl_stack_longjmp(struct stack *s, uint64_t env);
WEFT_HIDDEN struct fl_thread *fl_thread_find(uint32_t tid, uint32_t serial, int create);
WEFT_HIDDEN struct fl_entry *fl_ent_at(size_t k); /* k-th oldest frame */
/* Not applied yet, and not behind its thread's state (a chunk that came after later ones of
 * its thread were applied can no longer be shown in order). */
static inline int fl_entry_live(const struct fl_entry *e)
{
	return !e->consumed && (e->seq & WEFT_SEQ_INDEX_MASK) >= e->th->applied;
}
WEFT_HIDDEN int fl_remove_dir(const char *dir);    /* flight-snap.c: a snapshot directory's files, then it */

#endif
