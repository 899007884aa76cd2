/*
 * pftrace-out.c - the .pftrace writer's output (pftrace-out.h). Ordering: the sequence at the
 * head writes straight into the file; one encoded ahead of its turn writes into a file of its
 * own in $TMPDIR (unlinked), copied into the output when its turn comes; all under `lock`.
 * Compression: a sequence hands each batch to a queue and goes on encoding; a worker takes it,
 * deflates it with its own compressor (zdeflate.h) and marks it done. The sequence writes its batches
 * oldest first, once done: with more than `limit` in flight it waits for the oldest, and
 * compresses it itself if no worker has taken it yet (so a busy or absent pool only slows it
 * down to compressing inline, as with no pool at all). A batch's buffers are reused, handed
 * back to the encoder by swapping, so a long conversion allocates nothing per batch.
 */
#include "export/pftrace-out.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "export/zdeflate.h"

enum { QUEUED, TAKEN, DONE };

struct weft_pf_batch {
	struct pb in;                  /* its packets */
	uint8_t *z;                    /* deflated: zn bytes (0: not, for want of memory or room: written plain) */
	size_t zn, zcap;
	int state;                     /* QUEUED, TAKEN, DONE: under qlock */
	struct weft_pf_batch *next;    /* in the queue or the free list */
	struct weft_zdeflate *zc;      /* the compressing sequence's (inline), or NULL */
};

struct weft_pf_out {
	FILE *f;
	int deflate;                   /* batches compressed (zdeflate.h), or written plain */
	pthread_mutex_t lock;          /* the file and what follows, up to qlock */
	int err;
	uint64_t bytes;
	size_t head, n;                /* the sequence writing straight into f; the ordered ones */
	uint8_t *done;                 /* by sequence: complete */
	FILE **ahead;                  /* by sequence: what it wrote before its turn, or NULL */
	pthread_mutex_t qlock;         /* the queue, the states, the free list, stop */
	pthread_cond_t work, finished; /* a batch queued (or stop); a batch done */
	struct weft_pf_batch *qhead, *qtail, *free;
	int stop;
	pthread_t *workers;
	int nworkers;
	size_t limit;                  /* batches in flight per sequence */
};

/* Deflates x->in into x->z with *zc (made at first use); zn stays 0 when memory fails or the
 * batch would not shrink into its bound (written plain then). */
static void deflate_batch(struct weft_pf_batch *x, struct weft_zdeflate **zc)
{
	x->zn = 0;
	if (!*zc && !(*zc = weft_zdeflate_new()))
		return;
	size_t bound = weft_zdeflate_bound(*zc, x->in.n);
	if (bound > x->zcap) {
		free(x->z);
		x->zcap = 0;
		if (!(x->z = malloc(bound)))
			return;
		x->zcap = bound;
	}
	x->zn = weft_zdeflate(*zc, x->in.p, x->in.n, x->z, x->zcap);
}

static void *worker_main(void *arg)
{
	struct weft_pf_out *o = arg;
	struct weft_zdeflate *zc = NULL;
	pthread_mutex_lock(&o->qlock);
	for (;;) {
		while (!o->qhead && !o->stop)
			pthread_cond_wait(&o->work, &o->qlock);
		struct weft_pf_batch *x = o->qhead;
		if (!x)
			break;
		o->qhead = x->next;
		if (!o->qhead)
			o->qtail = NULL;
		x->state = TAKEN;
		pthread_mutex_unlock(&o->qlock);
		deflate_batch(x, &zc);
		pthread_mutex_lock(&o->qlock);
		x->state = DONE;
		pthread_cond_broadcast(&o->finished);
	}
	pthread_mutex_unlock(&o->qlock);
	weft_zdeflate_free(zc);
	return NULL;
}

struct weft_pf_out *weft_pf_out_open(FILE *f, int deflate, size_t nseq, int workers)
{
	struct weft_pf_out *o = calloc(1, sizeof(*o));
	if (!o)
		return NULL;
	o->f = f;
	o->deflate = deflate;
	o->n = nseq;
	o->done = calloc(nseq + 1, 1);
	o->ahead = calloc(nseq + 1, sizeof(FILE *));
	if (!o->done || !o->ahead) {
		free(o->done);
		free(o->ahead);
		free(o);
		return NULL;
	}
	pthread_mutex_init(&o->lock, NULL);
	pthread_mutex_init(&o->qlock, NULL);
	pthread_cond_init(&o->work, NULL);
	pthread_cond_init(&o->finished, NULL);
	if (deflate && workers > 0 && (o->workers = calloc((size_t)workers, sizeof(pthread_t))))
		while (o->nworkers < workers && !pthread_create(&o->workers[o->nworkers], NULL, worker_main, o))
			o->nworkers++;
	/* enough in flight to keep the workers busy, shared among the sequences encoded at once
	 * (as many as workers, at most): memory stays at a few batches per worker */
	size_t busy = nseq < (size_t)o->nworkers ? nseq : (size_t)o->nworkers;
	o->limit = 2 + (busy ? (size_t)o->nworkers / busy : 0);
	if (o->limit > WEFT_PF_INFLIGHT)
		o->limit = WEFT_PF_INFLIGHT;
	return o;
}

/* An unlinked file in $TMPDIR (or /tmp) for a sequence's output ahead of its turn. */
static FILE *spill_file(void)
{
	const char *d = getenv("TMPDIR");
	char path[4096];
	snprintf(path, sizeof(path), "%s/weft-pftrace-XXXXXX", d && *d ? d : "/tmp");
	int fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		return NULL;
	unlink(path);
	FILE *f = fdopen(fd, "w+b");
	if (!f)
		close(fd);
	return f;
}

/* head (if any) then body, into the file or the sequence's file ahead of its turn */
static void write_out(struct weft_pf_out *o, const struct weft_pf_seqout *s, const uint8_t *head, size_t hn,
		      const uint8_t *body, size_t n)
{
	pthread_mutex_lock(&o->lock);
	FILE *to = o->f;
	if (s->order != SIZE_MAX && s->order != o->head) { /* ahead of its turn */
		if (!o->ahead[s->order])
			o->ahead[s->order] = spill_file();
		to = o->ahead[s->order];
		if (!to && !o->err)
			o->err = errno ? errno : EIO;
	}
	if (!o->err && ((hn && fwrite(head, 1, hn, to) != hn) || fwrite(body, 1, n, to) != n))
		o->err = errno ? errno : EIO;
	o->bytes += hn + n;
	pthread_mutex_unlock(&o->lock);
}

/* A deflated batch as one TracePacket { compressed_packets = 50 }: the packet's length as the
 * writer's nested messages have it (pb.h: one byte, or four under a redundant varint). */
static void write_batch(struct weft_pf_out *o, const struct weft_pf_seqout *s, const struct weft_pf_batch *x)
{
	if (!x->zn) {
		write_out(o, s, NULL, 0, x->in.p, x->in.n);
		return;
	}
	uint8_t h[16], *p = h;
	uint8_t inner[12], *q = inner;
	*q++ = (uint8_t)(((50 << 3 | 2) & 0x7f) | 0x80); /* field 50, bytes: a two-byte tag */
	*q++ = 50 >> 4;
	for (size_t v = x->zn; ; v >>= 7) {
		*q++ = (uint8_t)(v >= 0x80 ? (v & 0x7f) | 0x80 : v);
		if (v < 0x80)
			break;
	}
	size_t len = (size_t)(q - inner) + x->zn;
	*p++ = 1 << 3 | 2; /* TracePacket */
	if (len < 128) {
		*p++ = (uint8_t)len;
	} else {
		*p++ = (uint8_t)(0x80 | (len & 0x7f));
		*p++ = (uint8_t)(0x80 | ((len >> 7) & 0x7f));
		*p++ = (uint8_t)(0x80 | ((len >> 14) & 0x7f));
		*p++ = (uint8_t)((len >> 21) & 0x7f);
	}
	memcpy(p, inner, (size_t)(q - inner));
	p += q - inner;
	write_out(o, s, h, (size_t)(p - h), x->z, x->zn);
}

/* The sequence's oldest batch: compressed here if no worker took it, written, freed for reuse. */
static void retire_oldest(struct weft_pf_out *o, struct weft_pf_seqout *s)
{
	struct weft_pf_batch *x = s->pending[s->first];
	pthread_mutex_lock(&o->qlock);
	if (x->state == QUEUED) { /* take it back out of the queue (short: a few per sequence) */
		struct weft_pf_batch **pp = &o->qhead, *prev = NULL;
		while (*pp != x)
			prev = *pp, pp = &(*pp)->next;
		*pp = x->next;
		if (o->qtail == x)
			o->qtail = prev;
		x->state = TAKEN;
		pthread_mutex_unlock(&o->qlock);
		deflate_batch(x, &x->zc);
		pthread_mutex_lock(&o->qlock);
		x->state = DONE;
	}
	while (x->state != DONE)
		pthread_cond_wait(&o->finished, &o->qlock);
	pthread_mutex_unlock(&o->qlock);
	write_batch(o, s, x);
	s->first = (s->first + 1) % WEFT_PF_INFLIGHT;
	s->npending--;
	pthread_mutex_lock(&o->qlock);
	x->next = o->free;
	o->free = x;
	pthread_mutex_unlock(&o->qlock);
}

void weft_pf_out_batch(struct weft_pf_out *o, struct weft_pf_seqout *s, struct pb *b)
{
	if (!b->n)
		return;
	while (s->npending >= o->limit)
		retire_oldest(o, s);
	pthread_mutex_lock(&o->qlock);
	struct weft_pf_batch *x = o->free;
	if (x)
		o->free = x->next;
	pthread_mutex_unlock(&o->qlock);
	if (!x && o->deflate)
		x = calloc(1, sizeof(*x));
	if (!x) { /* plain packets, or no memory for a batch: written as they are, in order */
		while (s->npending)
			retire_oldest(o, s);
		write_out(o, s, NULL, 0, b->p, b->n);
		b->n = 0;
		return;
	}
	struct pb t = x->in; /* the batch takes the packets, the encoder its old buffer */
	x->in = *b;
	*b = t;
	b->n = 0;
	x->next = NULL;
	s->pending[(s->first + s->npending++) % WEFT_PF_INFLIGHT] = x;
	if (!o->nworkers) {
		deflate_batch(x, &x->zc);
		x->state = DONE;
		return;
	}
	pthread_mutex_lock(&o->qlock);
	x->state = QUEUED;
	if (o->qtail)
		o->qtail->next = x;
	else
		o->qhead = x;
	o->qtail = x;
	pthread_cond_signal(&o->work);
	pthread_mutex_unlock(&o->qlock);
}

void weft_pf_out_flush(struct weft_pf_out *o, struct weft_pf_seqout *s)
{
	while (s->npending)
		retire_oldest(o, s);
}

void weft_pf_out_seq_done(struct weft_pf_out *o, struct weft_pf_seqout *s)
{
	weft_pf_out_flush(o, s);
	if (s->order == SIZE_MAX)
		return;
	pthread_mutex_lock(&o->lock);
	o->done[s->order] = 1;
	while (o->head < o->n && o->done[o->head]) {
		o->head++;
		FILE *a = o->head < o->n ? o->ahead[o->head] : NULL;
		if (!a)
			continue;
		char buf[1 << 16];
		size_t r;
		rewind(a);
		while (!o->err && (r = fread(buf, 1, sizeof(buf), a)) > 0)
			if (fwrite(buf, 1, r, o->f) != r)
				o->err = errno ? errno : EIO;
		if (ferror(a) && !o->err)
			o->err = EIO;
		fclose(a);
		o->ahead[o->head] = NULL;
	}
	pthread_mutex_unlock(&o->lock);
}

int weft_pf_out_close(struct weft_pf_out *o, uint64_t *bytes)
{
	pthread_mutex_lock(&o->qlock);
	o->stop = 1;
	pthread_cond_broadcast(&o->work);
	pthread_mutex_unlock(&o->qlock);
	for (int i = 0; i < o->nworkers; i++)
		pthread_join(o->workers[i], NULL);
	free(o->workers);
	while (o->free) {
		struct weft_pf_batch *x = o->free;
		o->free = x->next;
		weft_zdeflate_free(x->zc);
		free(x->in.p);
		free(x->z);
		free(x);
	}
	for (size_t i = 0; i < o->n; i++) /* (left only where a write failed) */
		if (o->ahead[i])
			fclose(o->ahead[i]);
	int rc = o->err ? -o->err : 0;
	*bytes = o->bytes;
	free(o->ahead);
	free(o->done);
	pthread_mutex_destroy(&o->lock);
	pthread_mutex_destroy(&o->qlock);
	pthread_cond_destroy(&o->work);
	pthread_cond_destroy(&o->finished);
	free(o);
	return rc;
}
