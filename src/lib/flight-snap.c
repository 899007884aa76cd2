/*
 * flight-snap.c - a snapshot of the flight recorder's ring (flight.c): weft_flight_dump writes
 * the window as DIR/snapshot-N (or DIR/part-N for --switch-output): each live thread's current
 * chunk copied, the writers waited for, one window start for the process, and per thread the
 * context (its open slices' BEGIN records and its counters' last values) as its first chunk,
 * then the window's frames - whole, or trimmed where the window starts inside one - and the
 * copy; the metadata kept in memory with the clock points the window needs, the WINDOW record
 * and the totals; all in a temporary directory renamed into place. Safe from a fatal signal
 * handler: nothing allocated; a lock another thread holds is waited for, one this thread holds
 * is not (fatal.c), and neither it nor the writers are waited for past 5 s after the signal.
 */
#include "flight.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include "../format/pack.h"

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
		ssize_t w = write(o->fd, fl_outbuf + k, o->n - k);
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
		memcpy(fl_outbuf + o->n, b, l);
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
	uint64_t window_events; /* events less the re-emitted context */
	uint64_t part_events;   /* events of the threads' current chunks (not in the ring yet) */
	int zhelp;              /* a second compressor runs (flight-zhelp.c) */
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
	size_t stored = weft_pack(w, n, fl_packbuf, &events, &dropped);
	const void *payload = fl_packbuf;
	h.flags = WEFT_CHUNK_PACKED2 | (weft_records_have_leaf(w, n) ? WEFT_CHUNK_LEAF : 0); /* (1.12) */
	if (!weft_g.in_signal && weft_cfg.compression != 0) { /* a fresh context may allocate */
		size_t z = ZSTD_compressCCtx(fl_cctx, fl_zbuf, fl_zcap, fl_packbuf, stored, weft_cfg.compression);
		if (!ZSTD_isError(z) && z < stored) {
			payload = fl_zbuf;
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
	const struct weft_chunk_header *h = (const void *)(fl_ring + e->off);
	const unsigned char *p = fl_ring + e->off + sizeof(*h);
	size_t got = h->stored_size;
	if (h->raw_size > fl_chunk_cap)
		return SIZE_MAX;
	if (h->flags & WEFT_CHUNK_ZSTD) {
		got = ZSTD_decompressDCtx(fl_dctx, fl_packbuf, fl_packcap, p, h->stored_size);
		if (ZSTD_isError(got))
			return SIZE_MAX;
		p = fl_packbuf;
	}
	size_t n = h->raw_size / 8;
	if (weft_chunk_packing(h->flags)) { /* the writers' packing (version 3), or 2 */
		if (weft_unpack(p, got, fl_raw, n, weft_chunk_packing(h->flags), 1) != n)
			return SIZE_MAX;
		return n;
	}
	/* unpacked (the writer had no memory to pack): delta-coded records */
	memcpy(fl_raw, p, n * 8);
	uint64_t prev = 0;
	for (size_t i = 0; i + 2 <= n;) {
		unsigned type = weft_rec_type(fl_raw[i + 1]);
		if (weft_rec_has_ticks(type)) {
			prev += fl_raw[i];
			fl_raw[i] = prev;
		}
		i += 2 + weft_rec_extra(fl_raw[i + 1]);
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
			uint64_t t = fl_rec_ticks(type, w[i]);
			if (t && type != WEFT_R_DROPPED && !fl_is_attached(type))
				before = t < W;
			if (!before)
				break;
			ev += weft_rec_events(type);
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
	if (n + nctr * 3 > fl_ctxcap)
		nctr = (fl_ctxcap - n) / 3;
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
		while (j > 0 && fl_ents[a[j - 1]].seq > fl_ents[v].seq) {
			a[j] = a[j - 1];
			j--;
		}
		a[j] = v;
	}
}

/* A whole frame of the ring the snapshot compresses: packed, not compressed, and not from a
 * signal handler (where a compressor might allocate). */
static int compressible(const struct weft_chunk_header *h)
{
	return !(h->flags & WEFT_CHUNK_ZSTD) && !weft_g.in_signal && weft_cfg.compression != 0 &&
	       h->stored_size <= fl_packcap;
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
	for (size_t k = 0; k < fl_ents_n; k++) {
		size_t idx = (fl_ents_first + k) % fl_ents_cap;
		if (fl_ents[idx].th == t && fl_entry_live(&fl_ents[idx]) && fl_ents[idx].seq < t->limit)
			fl_ord[n++] = idx;
	}
	sort_by_seq(fl_ord, n);
	/* scratch: the thread's state, then what comes before the window */
	size_t cn = t->nstk < fl_ctxcap ? t->nstk : 0, cl = t->nlvl <= fl_ctxlvlcap ? t->nlvl : 0;
	struct stack st = {fl_ctxw, cn, fl_ctxcap, fl_ctxlvl, fl_ctxtrack, cn ? cl : 0, fl_ctxlvlcap, 1, 0};
	if (cn && cl) {
		memcpy(fl_ctxw, t->stk, cn * 8);
		memcpy(fl_ctxlvl, t->lvl, cl * 4);
		memcpy(fl_ctxtrack, t->lvltrack, cl * 2);
	} else {
		st.n = st.nlvl = 0;
	}
	static uint64_t ctr[3 * 256];
	size_t nctr = t->nctr < 256 ? t->nctr : 256, ctrcap = 256;
	if (nctr)
		memcpy(ctr, t->ctr, nctr * 24);
	uint64_t *ctrp = ctr;
	size_t k = 0, given = SIZE_MAX; /* the frame the helper compresses */
	int attach = 0, context_done = 0;
	size_t gap = 0; /* frames before the last gap (a ghost: records never kept) are not shown */
	for (size_t q = 0; q < n; q++)
		if (fl_ents[fl_ord[q]].ghost)
			gap = q + 1;
	/* frames wholly before the window: their summaries */
	for (; k < n; k++) {
		struct fl_entry *e = &fl_ents[fl_ord[k]];
		int cut_here = t->has_cut && e->seq == t->cut_seq;
		if (k >= gap && (cut_here || !(e->last < s->W && e->last >= e->first)))
			break;
		if (e->sum)
			fl_sum_apply_to(&st, e->sum, &ctrp, &nctr, &ctrcap, 1);
		if (!e->ghost) /* (a ghost's were counted as evicted) */
			s->not_in_window += e->events;
	}
	for (; k < n; k++) {
		struct fl_entry *e = &fl_ents[fl_ord[k]];
		int cut_here = t->has_cut && e->seq == t->cut_seq;
		if (!context_done && (cut_here || e->first < s->W)) {
			size_t nw = frame_decode(e);
			if (nw == SIZE_MAX)
				continue;
			size_t skip = cut_here ? t->cut_off / 8 : 0;
			uint64_t cutev = 0;
			size_t cut = window_cut(fl_raw, nw, skip, s->W, &cutev);
			s->not_in_window += cutev;
			fl_stack_apply(&st, fl_raw, cut, &attach);
			for (size_t i = 0; i + 2 <= cut; i += 2 + weft_rec_extra(fl_raw[i + 1]))
				if (fl_is_counter(weft_rec_type(fl_raw[i + 1])) && weft_rec_extra(fl_raw[i + 1]) == 1)
					fl_counter_keep(&ctrp, &nctr, &ctrcap, fl_raw + i, 1);
			write_context(s, t, &st, ctr, nctr);
			context_done = 1;
			if (cut < nw) { /* raw is intact: the context was packed from ctxw */
				size_t before = s->events;
				write_records(s, t, fl_raw + cut, nw - cut);
				s->window_events += s->events - before;
			}
			continue;
		}
		if (!context_done) {
			write_context(s, t, &st, ctr, nctr);
			context_done = 1;
		}
		struct weft_chunk_header h;
		memcpy(&h, fl_ring + e->off, sizeof(h));
		h.seq = ((uint64_t)t->serial << WEFT_SEQ_SERIAL_SHIFT) | t->written++;
		const void *payload = fl_ring + e->off + sizeof(h);
		/* the ring keeps frames packed; the snapshot compresses them (not in a signal handler,
		 * where a compressor might allocate), every other one on the helper's thread where it
		 * runs (flight-zhelp.c): this one was given to it at the frame before, or the next one
		 * goes to it now while this one is compressed here */
		size_t z = 0;
		const uint8_t *zout = fl_zbuf;
		if (given == k) {
			z = fl_zhelp_take(&zout);
			given = SIZE_MAX;
		} else {
			if (s->zhelp && k + 1 < n) {
				const struct fl_entry *x = &fl_ents[fl_ord[k + 1]];
				struct weft_chunk_header hx;
				memcpy(&hx, fl_ring + x->off, sizeof(hx));
				if (compressible(&hx) && fl_zhelp_give(fl_ring + x->off + sizeof(hx), hx.stored_size))
					given = k + 1;
			}
			if (compressible(&h)) {
				z = ZSTD_compressCCtx(fl_cctx, fl_zbuf, fl_zcap, payload, h.stored_size, weft_cfg.compression);
				z = ZSTD_isError(z) || z >= h.stored_size ? 0 : z;
			}
		}
		if (z) {
			payload = zout;
			h.stored_size = (uint32_t)z;
			h.flags |= WEFT_CHUNK_ZSTD;
			h.checksum = weft_chunk_sum(h.flags, payload, z);
		}
		snap_chunk_write(&s->ev, &h, payload);
		s->events += h.events;
		s->window_events += h.events;
		s->chunks++;
		s->bytes_raw += h.raw_size;
	}
	if (given != SIZE_MAX) { /* (never: the frame given is the loop's next) */
		const uint8_t *unused;
		fl_zhelp_take(&unused);
	}
	if (t->part && t->npart) {
		const uint64_t *w = t->part;
		size_t nw = t->npart;
		for (size_t i = 0; i + 2 <= nw; i += 2 + weft_rec_extra(w[i + 1]))
			s0->part_events += weft_rec_events(weft_rec_type(w[i + 1]));
		size_t skip = t->has_cut && t->cut_seq == t->limit ? t->cut_off / 8 : 0;
		size_t cut = skip;
		if (!context_done) {
			uint64_t cutev = 0;
			cut = window_cut(w, nw, skip, s->W, &cutev);
			s->not_in_window += cutev;
			fl_stack_apply(&st, w, cut, &attach);
			for (size_t i = 0; i + 2 <= cut; i += 2 + weft_rec_extra(w[i + 1]))
				if (fl_is_counter(weft_rec_type(w[i + 1])) && weft_rec_extra(w[i + 1]) == 1)
					fl_counter_keep(&ctrp, &nctr, &ctrcap, w + i, 1);
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
	if (weft_lock_fatal(&fl_ring_lock, WEFT_HOLD_RING))
		return;
	struct fl_thread *t = fl_thread_find(tid, serial, 1);
	if (t) {
		t->limit = seq;
		t->excluded = 0;
		used &= ~(size_t)7;
		if (data && used) {
			void *copy = NULL;
			if (fl_partused + used <= fl_partcap) {
				copy = fl_partarea + fl_partused;
				fl_partused += used;
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
	weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
}

static int all_received(void)
{
	int ok = 1;
	if (weft_lock_fatal(&fl_ring_lock, WEFT_HOLD_RING))
		return 0;
	for (size_t i = 0; i < fl_nths && ok; i++)
		if (fl_ths[i].limit != UINT64_MAX && fl_ths[i].received < (fl_ths[i].limit & WEFT_SEQ_INDEX_MASK))
			ok = 0;
	weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
	return ok;
}

/* Why the last dump from a fatal handler could not be made (weft_flight_fail_why). */
static char fail_why[160];
const char *weft_flight_fail_why(void) { return fail_why; }

static int lock_or_say(pthread_mutex_t *m, unsigned bit)
{
	int rc = weft_lock_fatal(m, bit);
	if (rc == -EDEADLK)
		snprintf(fail_why, sizeof(fail_why), "%s is held by the thread the signal came to (it came inside weft's own code)",
			 weft_held_name(bit));
	else if (rc)
		snprintf(fail_why, sizeof(fail_why), "%s was not let go within 5 s", weft_held_name(bit));
	return rc;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int fl_remove_dir(const char *dir)
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
		       int number, const char *kind)
{
	for (struct meta_block *b = fl_meta_head; b;
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
				struct fl_thread *t = fl_thread_find((uint32_t)r[0], (uint32_t)r[1], 0);
				r[3] = (r[1] << WEFT_SEQ_SERIAL_SHIFT) | (t ? t->written : 0);
				out_put(o, &h, sizeof(h));
				out_put(o, r, 32);
			} else if (h.type == WEFT_M_SNAPSHOT && h.len >= 8) { /* a marker: its ticks first */
				uint64_t t;
				memcpy(&t, p, 8);
				if (t >= s->W) {
					out_put(o, &h, sizeof(h));
					out_put(o, p, h.len);
				}
			} else if (h.type != WEFT_M_FINISH && h.type != WEFT_M_CHUNK_INDEX) {
				out_put(o, &h, sizeof(h));
				out_put(o, p, h.len);
			}
			i = next;
		}
	}
	int nc = atomic_load_explicit(&fl_nclocks, memory_order_acquire), from = 0;
	for (int i = 0; i < nc; i++)
		if (fl_clocks[i].ticks <= s->W)
			from = i;
	struct weft_meta_rec_header ch = {WEFT_M_CLOCK, 0, 24};
	for (int i = from; i < nc; i++) {
		out_put(o, &ch, sizeof(ch));
		out_put(o, &fl_clocks[i], 24);
	}
	if (!strcmp(kind, "snapshot")) { /* the marker of the request writing it (snapshot.c) */
		unsigned char head[24];
		const char *r = weft_snapshot_current(head, (uint32_t)number);
		struct weft_meta_rec_header mh = {WEFT_M_SNAPSHOT, 0, (uint32_t)(sizeof(head) + strlen(r) + 1)};
		out_put(o, &mh, sizeof(mh));
		out_put(o, head, sizeof(head));
		out_put(o, r, strlen(r) + 1);
	}
	struct weft_clock_point now;
	weft_clock_sample(&now);
	out_put(o, &ch, sizeof(ch));
	out_put(o, &now, 24);
	/* WEFT_M_RING: what the ring held (the frames' bytes against their events) */
	uint64_t ring[3] = {fl_ring_size, 0, 0};
	for (size_t k = 0; k < fl_ents_n; k++) {
		const struct fl_entry *e = fl_ent_at(k);
		if (!e->ghost) {
			ring[1] += e->len + e->nsum * 8;
			ring[2] += e->events;
		}
	}
	struct weft_meta_rec_header rh = {WEFT_M_RING, 0, sizeof(ring)};
	out_put(o, &rh, sizeof(rh));
	out_put(o, ring, sizeof(ring));
	/* WEFT_M_WINDOW: taken counts each event once, in the ring or still in its thread's
	 * current chunk; written counts the window's events, not the re-emitted context */
	uint64_t win[9] = {s->W, end_ticks, trigger, s->not_in_window, s->window_events, s->reemitted,
			   fl_ev_received + s->part_events, fl_ev_evicted, fl_ev_written + s->window_events};
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
int fl_finishing;

int weft_flight_dump(const char *reason, uint64_t trigger_ticks, uint64_t after_ns)
{
	if (weft_cfg.switch_output[0]) /* parts, not snapshots (flight-switch.c) */
		return weft_flight_dump_as("part", reason, trigger_ticks, after_ns);
	return weft_flight_dump_as("snapshot", reason, trigger_ticks, after_ns);
}

int weft_flight_dump_as(const char *kind, const char *reason, uint64_t trigger_ticks, uint64_t after_ns)
{
	if (!fl_active || !weft_g.dir[0])
		return 0;
	if (atomic_load(&weft_g.run) != WEFT_RUN_ON && !fl_finishing)
		return -EAGAIN;
	int sig = weft_g.in_signal, rc = 0;
	weft_in_runtime++;
	if (weft_fatal_thread) /* (only a fatal handler's dump reads or writes it) */
		fail_why[0] = 0;
	if ((rc = lock_or_say(&fl_dump_lock, WEFT_HOLD_DUMP))) {
		weft_in_runtime--;
		return rc;
	}
	if (after_ns && !sig && atomic_load(&weft_g.run) == WEFT_RUN_ON) { /* the writers keep filling */
		uint64_t until = trigger_ticks + (uint64_t)((double)after_ns * fl_tpn);
		while (weft__ticks() < until && atomic_load(&weft_g.run) == WEFT_RUN_ON)
			sleep_ms(1);
	}
	/* 1. which frames are in it: each live thread's chunks before its current one, and a copy
	 * of the current one; threads that ended: all of theirs */
	if ((rc = lock_or_say(&fl_ring_lock, WEFT_HOLD_RING))) {
		weft_unlock(&fl_dump_lock, WEFT_HOLD_DUMP);
		weft_in_runtime--;
		return rc;
	}
	__atomic_store_n(&fl_dumping, 1, __ATOMIC_RELAXED);
	fl_partused = 0;
	for (size_t i = 0; i < fl_nths; i++) {
		fl_ths[i].limit = UINT64_MAX;
		fl_ths[i].excluded = 0;
		fl_ths[i].part = NULL;
		fl_ths[i].npart = 0;
		fl_ths[i].written = 0;
	}
	weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
	uint64_t end_ticks = weft__ticks();
	if (atomic_load(&weft_g.run) == WEFT_RUN_ON)
		weft_threads_visit(sig, visit, NULL);
	/* 2. the writers put every chunk before those (from a fatal handler: until its deadline,
	 * and not at all where this thread holds the pool's lock, which the writers need) */
	if (weft_fatal_thread) {
		while (!(weft_held & WEFT_HOLD_POOL) && !all_received() && !weft_fatal_expired())
			weft_fatal_pause();
	} else {
		for (int waited = 0; !all_received() && waited < 5000; waited++)
			sleep_ms(1);
	}
	if ((rc = lock_or_say(&fl_ring_lock, WEFT_HOLD_RING))) {
		weft_unlock(&fl_dump_lock, WEFT_HOLD_DUMP);
		weft_in_runtime--;
		return rc;
	}
	/* 3. one window start: the latest first kept event of the threads that lost some */
	struct snap s;
	memset(&s, 0, sizeof(s));
	s.W = fl_snapshots ? fl_last_end_ticks : 0;
	for (size_t i = 0; i < fl_nths; i++) {
		struct fl_thread *t = &fl_ths[i];
		if (!t->lost || t->excluded)
			continue;
		uint64_t first = UINT64_MAX, best = UINT64_MAX, gap = 0;
		int ghosts = 0;
		for (size_t k = 0; k < fl_ents_n; k++) { /* its last gap: nothing before it is shown */
			struct fl_entry *e = fl_ent_at(k);
			if (e->th == t && e->ghost && fl_entry_live(e) && e->seq < t->limit && (!ghosts || e->seq > gap)) {
				gap = e->seq;
				ghosts = 1;
			}
		}
		for (size_t k = 0; k < fl_ents_n; k++) {
			struct fl_entry *e = fl_ent_at(k);
			if (e->th == t && fl_entry_live(e) && e->seq < t->limit && e->seq < best && e->first <= e->last &&
			    (!ghosts || e->seq > gap)) {
				best = e->seq;
				first = e->first;
			}
		}
		if (first == UINT64_MAX && t->part) {
			for (size_t w = 0; w + 2 <= t->npart; w += 2 + weft_rec_extra(t->part[w + 1])) {
				uint64_t x = fl_rec_ticks(weft_rec_type(t->part[w + 1]), t->part[w]);
				if (x && weft_rec_type(t->part[w + 1]) != WEFT_R_DROPPED) {
					first = x;
					break;
				}
			}
		}
		/* a thread an earlier snapshot cut starts where that one ended, unless it lost the
		 * chunk it was cut in since */
		int cut_kept = t->has_cut && t->part && t->limit == t->cut_seq;
		for (size_t k = 0; k < fl_ents_n && t->has_cut && !cut_kept; k++)
			cut_kept = fl_ent_at(k)->th == t && fl_ent_at(k)->seq == t->cut_seq;
		if (first != UINT64_MAX && first > s.W && !cut_kept)
			s.W = first;
	}
	s.raised = s.W > fl_last_end_ticks;
	s.not_in_window = fl_ev_lost_since;
	/* 4. the files, in DIR/.snapshot-PID.tmp, renamed into place */
	char tmp[PATH_MAX], final[PATH_MAX], name[400];
	snprintf(tmp, sizeof(tmp), "%s/.%s-%d.tmp", weft_g.dir, kind, (int)getpid());
	fl_remove_dir(tmp);
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
	s.zhelp = fl_zhelp_start();
	for (size_t i = 0; i < fl_nths; i++)
		if (!fl_ths[i].excluded)
			dump_thread(&s, &fl_ths[i]);
	fl_zhelp_stop();
	out_flush(&s.ev);
	rc = s.ev.err;
	if (close(s.ev.fd) && !rc)
		rc = -errno;
	if (rc)
		goto out;
	if (!s.events && !strcmp(kind, "part")) { /* nothing since the last part: no empty part */
		fl_remove_dir(tmp);
		rc = 0;
		goto out;
	}
	struct out m;
	snprintf(name, sizeof(name), "%s.wmeta", weft_g.stem);
	if ((rc = open_file(tmp, name, &m)))
		goto out;
	weft_file_header_init(&fh, WEFT_META_MAGIC, weft_g.pid, 0, weft_clock_kind());
	out_put(&m, &fh, sizeof(fh));
	/* its number: the first free name, claimed with an empty directory before the metadata
	 * says it (the processes of a run share DIR and its numbers), replaced by the rename */
	int number = fl_snapshots + 1;
	for (;; number++) {
		snprintf(final, sizeof(final), "%s/%s-%d", weft_g.dir, kind, number);
		if (!mkdir(final, 0755))
			break;
		if (errno != EEXIST || number > 100000) {
			rc = -errno;
			close(m.fd);
			goto out;
		}
	}
	write_meta(&m, &s, end_ticks, trigger_ticks, reason, number, kind);
	out_flush(&m);
	rc = m.err;
	if (close(m.fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, final))
		rc = -errno;
	if (rc) {
		rmdir(final); /* (empty: the claim) */
		goto out;
	}
	fl_snapshots = number;
	rc = number;
	/* --switch-output: what came after the cut (put before step 3) is the next part's; zeroing
	 * the count lost it, and a fast program's whole run went into one part */
	fl_pending = 0;
	for (size_t k = 0; k < fl_ents_n; k++) {
		struct fl_entry *e = fl_ent_at(k);
		if (!e->ghost && e->th->limit != UINT64_MAX && e->seq >= e->th->limit)
			fl_pending += e->len + e->nsum * 8;
	}
	if (!strcmp(kind, "part"))
		weft_switch_written(number); /* --switch-max-files: this process's oldest part goes */
	/* 5. what it wrote is consumed: the next one starts after it */
	fl_last_end_ticks = end_ticks;
	fl_ev_written += s.window_events;
	fl_ev_lost_since = 0;
	if (!sig) {
		for (size_t k = 0; k < fl_ents_n; k++) {
			struct fl_entry *e = fl_ent_at(k);
			if (e->consumed || e->seq >= e->th->limit || e->th->excluded)
				continue;
			if (!fl_entry_live(e)) /* too late to apply in order: it was not written either */
				e->consumed = 1;
			else
				fl_entry_apply(e); /* in each thread's order (a ghost can precede its elders) */
		}
	}
	for (size_t i = 0; i < fl_nths; i++) {
		struct fl_thread *t = &fl_ths[i];
		if (t->limit == UINT64_MAX || t->excluded)
			continue;
		t->lost = 1;
		t->has_cut = 1;
		t->cut_seq = t->limit;
		t->cut_off = t->npart * 8;
	}
out:
	if (rc < 0)
		fl_remove_dir(tmp);
	for (size_t i = 0; i < fl_nths; i++) {
		struct fl_thread *t = &fl_ths[i];
		if (t->part && !sig && ((const unsigned char *)t->part < fl_partarea ||
					(const unsigned char *)t->part >= fl_partarea + fl_partcap))
			free((void *)t->part);
		t->part = NULL;
		t->limit = UINT64_MAX;
		t->excluded = 0;
	}
	__atomic_store_n(&fl_dumping, 0, __ATOMIC_RELAXED);
	weft_unlock(&fl_ring_lock, WEFT_HOLD_RING);
	weft_unlock(&fl_dump_lock, WEFT_HOLD_DUMP);
	weft_in_runtime--;
	return rc;
}

