/*
 * thread.c - per-thread buffers and the chunk pool: the slow half of the hot path.
 *
 * A thread writes into one chunk at a time through its TLS window (weft__tls.pos/end). When a
 * reservation does not fit, weft__reserve_slow() hands the chunk to the writer queue and takes
 * a free one from the pool. The pool holds at most buffer_size/chunk_size chunks, allocated on
 * demand; when none is free the event is dropped and counted (overflow=drop), or the thread
 * waits for a writer to release one (overflow=block). The first chunk a thread gets after
 * dropping begins with a DROPPED record carrying the count, so a converter shows where and how
 * many events were lost, then the begins and ends of slices the drop left open or closed
 * (dropkeep.h: the nesting after a drop stays the program's); the per-thread total also goes
 * into the THREAD_END metadata.
 *
 * Locks: pool_lock guards the free list, the writer queue and the allocation count; each
 * thread's `lock` orders its own hand-offs against weft_stop's flush of every thread;
 * threads_lock guards the list of threads. None is taken on the hot path.
 */
#include "internal.h"
#include "dropkeep.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

__thread struct weft__tls weft__tls __attribute__((tls_model("initial-exec")));

struct weft_thread {
	struct weft_thread *next; /* threads list, under threads_lock */
	pthread_mutex_t lock;     /* orders hand-off (owner) against flush_all (stopper) */
	struct weft__tls *tls;    /* the owner's window; pos read with acquire by flush_all */
	struct weft_chunk *chunk; /* current chunk, under lock */
	uint32_t tid;
	uint64_t seq;             /* next chunk sequence number: serial << 40 | chunk index */
	uint32_t serial;          /* this thread's number in the process (tids are reused) */
	uint64_t dropped;         /* total dropped, written by owner under lock */
	uint64_t drops_pending;   /* dropped since the last DROPPED record */
	struct weft_dropkeep keep; /* the begins and ends of those, kept (owner, under lock) */
	_Atomic uint64_t unwritten; /* events of its chunks a writer could not write (disk full) */
	int alive;
	/* At stop, another thread's chunk is handed off up to stop_pos while its owner may still
	 * commit events after it (into a chunk that is not recycled): they are counted as
	 * after_stop later (weft_threads_count_late, or the owner's next slow path). Under lock. */
	struct weft_chunk *stop_chunk;
	char *stop_pos;
};

/* The calling thread's state; written only by that thread. */
static __thread struct weft_thread *self __attribute__((tls_model("initial-exec")));
__thread int weft_in_runtime __attribute__((tls_model("initial-exec")));
__thread int weft_thread_ended __attribute__((tls_model("initial-exec")));

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static struct weft_thread *threads; /* under threads_lock */
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

/* Pool and queue, under pool_lock. */
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_cond = PTHREAD_COND_INITIALIZER; /* writers wait for chunks */
static pthread_cond_t free_cond = PTHREAD_COND_INITIALIZER;  /* overflow=block waits */
static struct weft_chunk *free_list, *q_head, *q_tail;
static size_t allocated, max_chunks, chunk_bytes;
static size_t max_held; /* flight recorder: the most chunks, counting those threads hold as their current one */
static _Atomic size_t free_count; /* readable without the lock: drop mode's quick check */
static int stopping;               /* writers drain and exit */
/* The pool grows under pressure: a program thread found no free chunk while chunks waited for
 * the writers, and made one itself. From then on the writers keep POOL_SPARES free chunks made
 * ahead, their pages faulted in the writer's thread (weft_pool_spare), so that the program's
 * threads do not take a fresh chunk's page faults as they fill it: a 1 MiB chunk is 256 faults,
 * about 20 ns per MPI call on a 2-core VM (bench/RESULTS.md, issue 30). */
#define POOL_SPARES 2
static int spare_due;

void weft_pool_init(void)
{
	weft_lock(&pool_lock, WEFT_HOLD_POOL);
	chunk_bytes = weft_cfg.chunk_size;
	if (chunk_bytes > weft_cfg.buffer_size / 2)
		chunk_bytes = weft_cfg.buffer_size / 2;
	chunk_bytes &= ~(size_t)4095;
	if (chunk_bytes < 4096)
		chunk_bytes = 4096;
	max_chunks = weft_cfg.buffer_size / chunk_bytes;
	max_held = max_chunks;
	/* flight recorder: the buffers are part of its memory bound (the ring holds the data):
	 * at most 4 MiB of them (2 chunks where chunks are larger) */
	if (weft_cfg.flight_size) {
		size_t lim = (4u << 20) / chunk_bytes;
		if (lim < 2)
			lim = 2;
		if (max_chunks > lim)
			max_chunks = lim;
	}
	if (max_chunks < 2)
		max_chunks = 2;
	stopping = 0;
	weft_unlock(&pool_lock, WEFT_HOLD_POOL);
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

/* A new chunk's pages faulted in now, by the kernel (MADV_POPULATE_WRITE: no page-fault event):
 * with access sampling (mem_access=), so that filling it is not sampled as the program's first
 * touches of memory (collect/access.c leaves out what still is), and for a spare, in the writer's
 * thread rather than the program's. An older kernel refuses: the pages fault as they fill. */
static void populate(char *data, size_t n)
{
	uintptr_t page = 4096, a = (uintptr_t)data & ~(page - 1), b = ((uintptr_t)data + n + page - 1) & ~(page - 1);
	int saved = errno;
	madvise((void *)a, b - a, MADV_POPULATE_WRITE);
	errno = saved;
}

/* A chunk, its pages faulted in now where `all` or access sampling asks for it. */
static struct weft_chunk *chunk_new(int all)
{
	struct weft_chunk *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	if (posix_memalign((void **)&c->data, 64, chunk_bytes)) {
		free(c);
		return NULL;
	}
	if (all || weft_cfg.mem_access[0])
		populate(c->data, chunk_bytes);
	return c;
}

/* overflow=drop with every chunk taken: the event is dropped, no chunk is handed out */
static int pool_refuses(void)
{
	return weft_cfg.overflow == WEFT_OVERFLOW_DROP && !weft_flight_active() &&
	       atomic_load_explicit(&free_count, memory_order_relaxed) == 0 &&
	       __atomic_load_n(&allocated, __ATOMIC_RELAXED) >= max_held;
}

static struct weft_chunk *pool_get(void)
{
	int flight = weft_flight_active();
	if (pool_refuses())
		return NULL;
	struct weft_chunk *c = NULL;
	weft_lock(&pool_lock, WEFT_HOLD_POOL);
	for (;;) {
		if (free_list) {
			c = free_list;
			free_list = c->next;
			atomic_fetch_sub(&free_count, 1);
			break;
		}
		/* the flight recorder caps the chunks waiting for a writer, not the ones threads hold:
		 * with none waiting, every chunk is some thread's current one (an idle thread keeps
		 * its own), and one more is a working buffer, not a backlog */
		if (allocated < max_chunks || (allocated < max_held && !q_head)) {
			__atomic_store_n(&allocated, allocated + 1, __ATOMIC_RELAXED);
			spare_due |= q_head != NULL;
			weft_unlock(&pool_lock, WEFT_HOLD_POOL);
			c = chunk_new(0);
			if (!c) {
				weft_lock(&pool_lock, WEFT_HOLD_POOL);
				__atomic_store_n(&allocated, allocated - 1, __ATOMIC_RELAXED);
				weft_unlock(&pool_lock, WEFT_HOLD_POOL);
			}
			return c;
		}
		/* flight recorder: what goes is the oldest chunk waiting for the writers, never the
		 * newest events (weft_flight_evict_chunk keeps its summary in the ring) */
		if (flight && weft_cfg.overflow != WEFT_OVERFLOW_BLOCK && q_head && q_head->recycle && !stopping &&
		    !weft_flight_dumping() &&
		    atomic_load(&weft_g.run) == WEFT_RUN_ON) {
			c = q_head;
			q_head = c->next;
			if (!q_head)
				q_tail = NULL;
			weft_unlock(&pool_lock, WEFT_HOLD_POOL);
			weft_live_chunk(c->tid, c->seq, c->data, c->used & ~(size_t)7);
			weft_flight_evict_chunk(c);
			c->next = NULL;
			c->used = 0;
			return c;
		}
		if (weft_cfg.overflow != WEFT_OVERFLOW_BLOCK || stopping ||
		    atomic_load(&weft_g.run) != WEFT_RUN_ON)
			break;
		weft_held &= ~WEFT_HOLD_POOL; /* not held while it waits */
		pthread_cond_wait(&free_cond, &pool_lock);
		weft_held |= WEFT_HOLD_POOL;
	}
	weft_unlock(&pool_lock, WEFT_HOLD_POOL);
	if (c) {
		c->next = NULL;
		c->used = 0;
		c->recycle = 1;
	}
	return c;
}

/* Chunks handed off at stop by threads that were still running: their owners may still
 * write into them, so they are never reused or freed; kept here (one per such thread). */
static struct weft_chunk *retired; /* under pool_lock */

void weft_pool_release(struct weft_chunk *c)
{
	if (!c->recycle) { /* its owner may still be writing into it (flushed at stop) */
		weft_lock(&pool_lock, WEFT_HOLD_POOL);
		c->next = retired;
		retired = c;
		weft_unlock(&pool_lock, WEFT_HOLD_POOL);
		return;
	}
	weft_lock(&pool_lock, WEFT_HOLD_POOL);
	c->next = free_list;
	free_list = c;
	atomic_fetch_add(&free_count, 1);
	pthread_cond_signal(&free_cond);
	weft_unlock(&pool_lock, WEFT_HOLD_POOL);
}

void weft_pool_spare(void)
{
	for (;;) {
		weft_lock(&pool_lock, WEFT_HOLD_POOL);
		int want = spare_due && !stopping && atomic_load_explicit(&free_count, memory_order_relaxed) < POOL_SPARES &&
			   allocated < max_chunks;
		if (want)
			__atomic_store_n(&allocated, allocated + 1, __ATOMIC_RELAXED);
		weft_unlock(&pool_lock, WEFT_HOLD_POOL);
		if (!want)
			return;
		struct weft_chunk *c = chunk_new(1);
		weft_lock(&pool_lock, WEFT_HOLD_POOL);
		if (c) {
			c->next = free_list;
			free_list = c;
			atomic_fetch_add(&free_count, 1);
			pthread_cond_signal(&free_cond);
		} else {
			__atomic_store_n(&allocated, allocated - 1, __ATOMIC_RELAXED);
		}
		weft_unlock(&pool_lock, WEFT_HOLD_POOL);
		if (!c)
			return;
	}
}

void weft_pool_wake_all(void)
{
	weft_lock(&pool_lock, WEFT_HOLD_POOL);
	stopping = 1;
	pthread_cond_broadcast(&free_cond);
	pthread_cond_broadcast(&queue_cond);
	weft_unlock(&pool_lock, WEFT_HOLD_POOL);
}

static void enqueue(struct weft_chunk *c)
{
	weft_lock(&pool_lock, WEFT_HOLD_POOL);
	c->next = NULL;
	if (q_tail)
		q_tail->next = c;
	else
		q_head = c;
	q_tail = c;
	pthread_cond_signal(&queue_cond);
	weft_unlock(&pool_lock, WEFT_HOLD_POOL);
}

/* Writers: the next full chunk, or NULL after ~100 ms with nothing to do (so the writer can
 * take a clock point), or NULL with *done set once stopping and the queue is empty. */
struct weft_chunk *weft_queue_pop_wait(int *done)
{
	struct weft_chunk *c = NULL;
	*done = 0;
	weft_lock(&pool_lock, WEFT_HOLD_POOL);
	if (!q_head && !stopping) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&queue_cond, &pool_lock, &ts);
	}
	if (q_head) {
		c = q_head;
		q_head = c->next;
		if (!q_head) {
			q_tail = NULL;
			/* the flight recorder's waiters may now take one more chunk (pool_get) */
			if (max_held > max_chunks)
				pthread_cond_broadcast(&free_cond);
		}
	} else if (stopping) {
		*done = 1;
	}
	weft_unlock(&pool_lock, WEFT_HOLD_POOL);
	return c;
}

/* Hand the thread's chunk to the writers, up to `end` (under t->lock). */
static void handoff(struct weft_thread *t, char *end, int recycle)
{
	struct weft_chunk *c = t->chunk;
	t->chunk = NULL;
	if (end < c->data || end > c->data + chunk_bytes)
		end = c->data;
	c->used = (size_t)(end - c->data);
	c->recycle = recycle;
	if (c->used == 0 && recycle) {
		weft_pool_release(c);
		t->seq--; /* the sequence number was not used */
		return;
	}
	enqueue(c);
}

static void count_late(struct weft_thread *t, char *pos);
static void bucket_take(struct weft_thread *t);

static void thread_exit(void *arg)
{
	struct weft_thread *t = arg;
	weft_lock(&t->lock, WEFT_HOLD_SELF);
	bucket_take(t); /* (its drops counted) */
	count_late(t, t->tls->pos);
	t->stop_chunk = NULL;
	if (t->chunk)
		handoff(t, t->tls->pos, 1);
	t->tls->pos = t->tls->end = NULL;
	t->alive = 0;
	uint64_t rec[4] = {t->tid, t->serial, t->dropped, t->seq};
	weft_unlock(&t->lock, WEFT_HOLD_SELF);
	weft_meta_write(WEFT_M_THREAD_END, rec, sizeof(rec), NULL, 0);
	self = NULL;
	weft_thread_ended = 1;
}

static void make_key(void)
{
	pthread_key_create(&exit_key, thread_exit);
}

static uint32_t gettid_(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

/* Threads are told apart by a serial number, not by tid alone: the kernel reuses the tids of
 * threads that ended. The serial is in the high bits of each chunk's seq and follows the name
 * in THREAD records (docs/format.md). Written by thread_init (and reset in a fork child). */
static _Atomic uint32_t next_serial;

/* Set by weft_thread_own in the runtime's own threads (sched readers, samplers), before their
 * first record: their THREAD records say they are weft's, not the program's. */
static __thread int own_thread __attribute__((tls_model("initial-exec")));

static void write_thread_name(const struct weft_thread *t, const char *name)
{
	char rec[256 + 1 + 8 + 4];
	size_t l = strnlen(name, 255);
	memcpy(rec, name, l);
	rec[l] = 0;
	uint64_t serial = t->serial;
	memcpy(rec + l + 1, &serial, 8);
	uint32_t flags = own_thread ? WEFT_THREAD_OWN : 0;
	memcpy(rec + l + 1 + 8, &flags, 4);
	weft_meta_write(WEFT_M_THREAD, &t->tid, 4, rec, l + 1 + 8 + 4);
}

void weft_thread_own(const char *name)
{
	pthread_setname_np(pthread_self(), name);
	weft_endwatch_own_thread();
	own_thread = 1;
	if (self)
		write_thread_name(self, name);
}

static struct weft_thread *thread_init(void)
{
	if (weft_ensure_started())
		return NULL;
	struct weft_thread *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	pthread_mutex_init(&t->lock, NULL);
	t->tls = &weft__tls;
	t->tid = gettid_();
	t->serial = atomic_fetch_add(&next_serial, 1) & 0xffffffu;
	t->seq = (uint64_t)t->serial << 40;
	t->alive = 1;
	pthread_once(&key_once, make_key);
	pthread_setspecific(exit_key, t);
	weft_lock(&threads_lock, WEFT_HOLD_THREADS);
	t->next = threads;
	threads = t;
	weft_unlock(&threads_lock, WEFT_HOLD_THREADS);
	char name[64] = "";
	if (pthread_getname_np(pthread_self(), name, sizeof(name)) || !name[0])
		snprintf(name, sizeof(name), "thread %u", t->tid);
	write_thread_name(t, name);
	self = t;
	return t;
}

void weft_thread_name(const char *name)
{
	if (!name)
		return;
	struct weft_thread *t = self ? self : thread_init();
	if (t)
		write_thread_name(t, name);
}

static void count_lost(void)
{
	atomic_fetch_add_explicit(&weft_g.after_stop, 1, memory_order_relaxed);
}

/* Events committed into t's stopped chunk after the stop's snapshot: after_stop. Under t->lock. */
static void count_late(struct weft_thread *t, char *pos)
{
	struct weft_chunk *c = t->stop_chunk;
	if (!c || !pos || pos < t->stop_pos || pos > c->data + chunk_bytes)
		return;
	const uint64_t *w = (const uint64_t *)t->stop_pos;
	size_t n = (size_t)(pos - t->stop_pos) / 8, i = 0;
	uint64_t late = 0;
	while (i + 2 <= n) {
		unsigned type = weft_rec_type(w[i + 1]), extra = weft_rec_extra(w[i + 1]);
		if (i + 2 + extra > n)
			break;
		late += weft_rec_events(type);
		i += 2 + extra;
	}
	t->stop_pos = (char *)(w + i);
	atomic_fetch_add_explicit(&weft_g.after_stop, late, memory_order_relaxed);
}

void weft_threads_count_late(void)
{
	weft_lock(&threads_lock, WEFT_HOLD_THREADS);
	for (struct weft_thread *t = threads; t; t = t->next) {
		pthread_mutex_lock(&t->lock);
		if (t->alive) /* an exited thread's window is gone; thread_exit counted it */
			count_late(t, __atomic_load_n(&t->tls->pos, __ATOMIC_ACQUIRE));
		uint64_t lost = atomic_load(&t->unwritten);
		if (lost) { /* the writers are done: the thread's drops, those chunks included */
			uint64_t rec[4] = {t->tid, t->serial, t->dropped + lost, t->seq};
			weft_meta_write(WEFT_M_THREAD_END, rec, sizeof(rec), NULL, 0);
		}
		pthread_mutex_unlock(&t->lock);
	}
	weft_unlock(&threads_lock, WEFT_HOLD_THREADS);
}

void weft_chunk_unwritten(struct weft_chunk *c, uint32_t events)
{
	if (c->owner)
		atomic_fetch_add(&c->owner->unwritten, events);
}

/* The events dropped into the bucket since its owner's last slow path (drop mode): each begin
 * or end is looked at (dropkeep.h). The first was counted as dropped when the bucket was handed
 * out; any after it (a record committed shorter than it reserved leaves room for another one,
 * written without a slow path) are counted now. The owner, under its lock. */
static void bucket_take(struct weft_thread *t)
{
	if (!t->keep.in_bucket)
		return;
	t->keep.in_bucket = 0;
	const uint64_t *w = t->keep.bucket;
	char *e = t->tls->pos;
	if (e < (char *)w || e > (char *)w + sizeof(t->keep.bucket))
		return;
	size_t n = (size_t)(e - (char *)w) / 8, i = 0, recs = 0;
	while (i + 2 <= n) {
		size_t len = 2 + weft_rec_extra(w[i + 1]);
		if (i + len > n)
			break;
		weft_dropkeep_note(&t->keep, w + i, len);
		recs++;
		i += len;
	}
	if (recs > 1) {
		t->dropped += recs - 1;
		t->drops_pending += recs - 1;
		atomic_fetch_add_explicit(&weft_g.dropped, recs - 1, memory_order_relaxed);
	}
}

void *weft__reserve_slow(size_t bytes)
{
	int saved = errno;
	if (weft_in_runtime) {
		/* a signal handler traced while this thread was inside the runtime (maybe holding
		 * its locks): the handler's event is dropped, and counted, rather than deadlock */
		atomic_fetch_add_explicit(&weft_g.dropped, 1, memory_order_relaxed);
		errno = saved;
		return NULL;
	}
	atomic_fetch_add_explicit(&weft_g.slow_paths, 1, memory_order_relaxed);
	/* No signal on this thread while it switches chunks: it holds its own buffer lock and
	 * the pool's, which a fatal signal's handler here could never take (the stop needs the
	 * one, the writers the other, and another thread waiting for the pool would hold its own
	 * buffer lock until the handler's deadline: the crash window lost). Deferred, the signal
	 * comes microseconds later, once the chunk is switched (at most a writer's freeing of a
	 * chunk later, under overflow=block); one sent to the process goes to another thread.
	 * Two system calls a chunk (some 0.5 us a megabyte of events). Not while every event is
	 * dropped (overflow=drop, no chunk to hand out): then each event comes here. */
	sigset_t all, was;
	int masked = !pool_refuses();
	if (masked) {
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &was);
	}
	weft_in_runtime++; /* (after the mask: a signal before it finds the thread outside) */
	struct weft_thread *t = self;
	char *p = NULL;
	if (!t && !(t = thread_init())) {
		count_lost();
		goto out;
	}
	weft_lock(&t->lock, WEFT_HOLD_SELF);
	bucket_take(t);
	if (atomic_load(&weft_g.run) != WEFT_RUN_ON) {
		count_lost();
		count_late(t, t->tls->pos);
		t->stop_chunk = NULL;
		/* Stopped, but the stop's flush has not reached this thread yet (it still owns a
		 * chunk): hand the chunk over now, whole. The flush, which takes t->lock after us,
		 * comes before the writers drain, so it is written. Left in place, the flush would
		 * find the window cleared below and write none of it. */
		if (t->chunk)
			handoff(t, t->tls->pos, 1);
		t->tls->pos = t->tls->end = NULL;
		goto unlock;
	}
	if (t->chunk)
		handoff(t, t->tls->pos, 1);
	struct weft_chunk *c = bytes + 24 <= chunk_bytes ? pool_get() : NULL;
	if (!c) {
		if (!t->drops_pending++)
			t->keep.since = weft__ticks();
		t->dropped++;
		atomic_fetch_add_explicit(&weft_g.dropped, 1, memory_order_relaxed);
		t->tls->pos = t->tls->end = NULL;
		if (bytes <= sizeof(t->keep.bucket)) {
			/* written into the bucket, looked at on the next slow path (the window ends
			 * where it does: the next event comes here; nothing can take it back) */
			p = (char *)t->keep.bucket;
			t->keep.in_bucket = 1;
			t->tls->start = t->tls->end = p + bytes;
			t->tls->pos = p;
		}
		goto unlock;
	}
	c->owner = t;
	c->tid = t->tid;
	c->seq = t->seq++;
	t->chunk = c;
	p = c->data;
	if (t->drops_pending) { /* (a chunk has room for the kept records: 4 KiB at least) */
		uint64_t kept = weft_dropkeep_events(&t->keep);
		if (kept > t->drops_pending)
			kept = t->drops_pending;
		t->dropped -= kept;
		atomic_fetch_sub_explicit(&weft_g.dropped, kept, memory_order_relaxed);
		p += 8 * weft_dropkeep_write(&t->keep, (uint64_t *)p, t->drops_pending - kept);
		t->drops_pending = 0;
	}
	t->tls->end = c->data + chunk_bytes;
	t->tls->start = p;
	t->tls->pos = p;
unlock:
	weft_unlock(&t->lock, WEFT_HOLD_SELF);
out:
	weft_in_runtime--;
	if (masked)
		pthread_sigmask(SIG_SETMASK, &was, NULL);
	errno = saved;
	return p;
}

void weft__lost(void)
{
	atomic_fetch_add_explicit(&weft_g.dropped, 1, memory_order_relaxed);
}

void weft_flush(void)
{
	struct weft_thread *t = self;
	if (!t)
		return;
	weft_lock(&t->lock, WEFT_HOLD_SELF);
	bucket_take(t);
	if (t->chunk)
		handoff(t, t->tls->pos, 1);
	t->tls->pos = t->tls->end = NULL;
	weft_unlock(&t->lock, WEFT_HOLD_SELF);
}

/* At stop: hand every thread's partial chunk to the writers. Another thread's chunk is not
 * recycled, because its owner may be between reserve and commit: what it commits after the
 * snapshot of `pos` is not written (and costs nothing). Its next slow path finds the run
 * stopped and counts its events as after_stop. */
void weft_threads_flush_all(void)
{
	weft_lock(&threads_lock, WEFT_HOLD_THREADS);
	for (struct weft_thread *t = threads; t; t = t->next) {
		pthread_mutex_lock(&t->lock);
		if (t->alive && t->chunk) {
			char *pos = __atomic_load_n(&t->tls->pos, __ATOMIC_ACQUIRE);
			struct weft_chunk *c = t->chunk;
			handoff(t, pos, t == self);
			if (t == self) {
				t->tls->pos = t->tls->end = NULL;
			} else if (pos >= c->data && pos <= c->data + chunk_bytes) {
				t->stop_chunk = c;
				t->stop_pos = pos;
			}
		}
		if (t->alive) {
			uint64_t rec[4] = {t->tid, t->serial, t->dropped, t->seq};
			weft_meta_write(WEFT_M_THREAD_END, rec, sizeof(rec), NULL, 0);
		}
		pthread_mutex_unlock(&t->lock);
	}
	weft_unlock(&threads_lock, WEFT_HOLD_THREADS);
}

/* The flight recorder's snapshot: every live thread's current chunk as committed so far (pos,
 * acquire: the bytes before it are complete), under its lock so that the chunk is not handed
 * off meanwhile. */
void weft_threads_visit(int try, void (*fn)(void *ud, uint32_t tid, uint32_t serial, uint64_t seq,
					    const char *data, size_t used), void *ud)
{
	if (try ? weft_lock_fatal(&threads_lock, WEFT_HOLD_THREADS) : (weft_lock(&threads_lock, WEFT_HOLD_THREADS), 0))
		return;
	for (struct weft_thread *t = threads; t; t = t->next) {
		/* from a fatal handler: this thread's own lock only where it does not hold it, any
		 * other thread's once its holder lets go (or the deadline passes) */
		/* (a thread may hold its lock while it waits for the flight recorder's overflow lock,
		 * held here: then it is only tried) */
		int busy = try ? (t != self && (weft_held & WEFT_HOLD_EVICT) ? pthread_mutex_trylock(&t->lock)
									     : weft_lock_fatal(&t->lock, t == self ? WEFT_HOLD_SELF : 0))
			       : pthread_mutex_lock(&t->lock);
		if (busy)
			continue;
		if (t->alive) {
			struct weft_chunk *c = t->chunk;
			char *pos = c ? __atomic_load_n(&t->tls->pos, __ATOMIC_ACQUIRE) : NULL;
			if (c && pos >= c->data && pos <= c->data + chunk_bytes)
				fn(ud, t->tid, t->serial, c->seq, c->data, (size_t)(pos - c->data));
			else if (c)
				fn(ud, t->tid, t->serial, c->seq, NULL, 0);
			else
				fn(ud, t->tid, t->serial, t->seq, NULL, 0);
		}
		weft_unlock(&t->lock, t == self ? WEFT_HOLD_SELF : 0);
	}
	weft_unlock(&threads_lock, WEFT_HOLD_THREADS);
}

void weft_threads_atfork_prepare(void)
{
	pthread_mutex_lock(&threads_lock);
	pthread_mutex_lock(&pool_lock);
}

void weft_threads_atfork_parent(void)
{
	pthread_mutex_unlock(&pool_lock);
	pthread_mutex_unlock(&threads_lock);
}

/* Fork child: only the forking thread exists. The chunks buffered so far belong to the parent,
 * which writes them; the child starts over with empty buffers under its own pid. */
void weft_threads_atfork_child(void)
{
	pthread_mutex_init(&pool_lock, NULL);
	pthread_mutex_init(&threads_lock, NULL);
	pthread_cond_init(&queue_cond, NULL);
	pthread_cond_init(&free_cond, NULL);
	for (struct weft_chunk *c = free_list, *n; c; c = n) {
		n = c->next;
		free(c->data);
		free(c);
	}
	for (struct weft_chunk *c = q_head, *n; c; c = n) { /* the parent writes these */
		n = c->next;
		free(c->data);
		free(c);
	}
	for (struct weft_thread *t = threads, *n; t; t = n) {
		n = t->next;
		if (t == self)
			continue;
		if (t->chunk) {
			free(t->chunk->data);
			free(t->chunk);
		}
		free(t);
	}
	free_list = q_head = q_tail = NULL;
	atomic_store(&free_count, 0);
	allocated = 0;
	spare_due = 0;
	stopping = 0;
	threads = NULL;
	struct weft_thread *t = self;
	if (!t)
		return;
	pthread_mutex_init(&t->lock, NULL);
	t->tid = gettid_();
	t->serial = 0;
	atomic_store(&next_serial, 1);
	t->seq = 0;
	t->dropped = t->drops_pending = 0;
	t->keep.in_bucket = 0;
	t->keep.nkeep = 0;
	t->next = NULL;
	threads = t;
	if (t->chunk) {
		allocated = 1;
		t->tls->pos = t->chunk->data;
		t->chunk->seq = t->seq++;
		t->chunk->tid = t->tid;
	}
}

/* After the child reopened its files: define its thread. */
void weft_threads_after_fork(void)
{
	if (self) {
		char name[64] = "";
		if (pthread_getname_np(pthread_self(), name, sizeof(name)) || !name[0])
			snprintf(name, sizeof(name), "thread %u", self->tid);
		write_thread_name(self, name);
	}
}
