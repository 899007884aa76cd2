/*
 * live.c - what `weft top` sees of a running process (docs/top.md): per thread, the slices
 * open now (the stack, innermost last), and per function or slice name its calls and self
 * time; per thread its events, calls, drops and time inside MPI calls; for the process its
 * heap in use.
 *
 * Nothing here runs on the program's threads' hot path. The writer (writer.c) keeps each
 * thread's stack of open slices (track 0 BEGIN/END, FUNC_ENTER/EXIT) from every chunk, so that
 * a watcher arriving late still sees the slices opened before it came. While nobody watches it
 * takes them from the packing pass it makes anyway (weft_live_chunk_opens: chunkindex.h notes
 * the record that opened each level still open at the chunk's end); a chunk with a setjmp or
 * longjmp, or one the summary cannot stand for, is walked record by record (weft_live_chunk,
 * as is a chunk a flight recorder's program thread evicts, thread.c). Calls and self times are
 * counted only from the first `top` query on (or from the start with live=1): then every chunk
 * is walked before packing, with a hash lookup per call.
 *
 * A query (weft_live_report, on the control thread) copies each live thread's current chunk
 * as committed so far (weft_threads_visit: under the thread's own lock, which its owner only
 * takes when it switches chunks), copies the threads' states under live_lock, applies each
 * current chunk to its copy where the state has applied every chunk before it (else the copy
 * stays one chunk behind, and the thread's line says how many chunks it lags), charges the
 * time since the last record to the innermost open slice, and formats the lines of
 * docs/top.md. The program's threads do no work of their own for it.
 *
 * live_lock: taken by the writer per chunk (holding its work lock) and by the query while it
 * copies; never while a thread's lock is held by this code (the evicting program thread holds
 * its own lock and then takes live_lock, so the query takes them one after the other, never
 * nested). Nothing under it takes the registry's lock (a fork takes that one first, then the
 * writers', then this: session.c).
 */
#include "internal.h"
#include "../format/chunkindex.h"
#include "../format/format.h"
#include "job.h"
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIVE_DEPTH 512 /* the stack kept per thread; deeper levels are counted, not kept */
#define LIVE_JMPS 32
#define KEY_SITE (1ull << 63) /* a key: a site id | KEY_SITE, or a function address */
#define ENT_MPI 1u
#define ENT_NAMED 2u

struct live_entry {
	uint64_t key;
	uint64_t calls, self; /* self in ticks */
	uint32_t flags;
};

struct live_thread {
	struct live_thread *next;
	uint32_t tid, serial;
	uint64_t next_seq; /* the chunk index expected next */
	uint64_t events, calls, dropped;
	uint64_t gaps; /* chunks the writer never saw (state), or (a query's copy) chunks behind */
	uint64_t last; /* ticks of the last push or pop */
	uint32_t depth; /* open slices on the thread's track; frame[] keeps the first LIVE_DEPTH */
	uint64_t frame[LIVE_DEPTH], since[LIVE_DEPTH];
	uint32_t fent[LIVE_DEPTH]; /* each frame's entry index + 1 (0: not looked up yet) */
	uint32_t mpi_open;
	uint64_t mpi_since, mpi_ticks;
	uint64_t jmp_buf_[LIVE_JMPS];
	uint32_t jmp_depth[LIVE_JMPS];
	unsigned njmp;
	int counting; /* calls and self times are counted (the watch began) */
	uint64_t from; /* count_from as read at the start of this walk */
	int alive;    /* (copies only) its current chunk was seen */
	struct live_entry *ent; /* append-only: indices stay */
	size_t nent, cent;
	uint32_t *slot; /* open addressing: entry index + 1 */
	size_t cslot;
};

/* Under live_lock: the threads' states, and whether counting runs. */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct live_thread *threads;
static _Atomic int counting;   /* set by the first query (or live=1); read by the writer */
static uint64_t counting_since; /* CLOCK_BOOTTIME ns when counting began */
static _Atomic uint64_t count_from; /* ... and in ticks: only what happens after it is counted */

static void counting_begins(void)
{
	counting_since = weft_boottime_ns();
	atomic_store(&count_from, weft__ticks());
	atomic_store(&counting, 1);
}

static uint64_t hash_key(uint64_t k)
{
	return (k * 0x9e3779b97f4a7c15ull) >> 17;
}

static int site_is_mpi(uint32_t id)
{
	return weft_registry_is_mpi(id); /* (lock-free: the writer holds its work lock here) */
}

/* The entry of key (made when missing), or NULL when memory fails. */
static struct live_entry *entry(struct live_thread *t, uint64_t key)
{
	if (t->nent * 2 >= t->cslot) {
		size_t nc = t->cslot ? t->cslot * 2 : 256;
		uint32_t *ns = calloc(nc, sizeof(*ns));
		if (!ns)
			return NULL;
		for (size_t i = 0; i < t->nent; i++) {
			size_t j = hash_key(t->ent[i].key) & (nc - 1);
			while (ns[j])
				j = (j + 1) & (nc - 1);
			ns[j] = (uint32_t)i + 1;
		}
		free(t->slot);
		t->slot = ns;
		t->cslot = nc;
	}
	size_t j = hash_key(key) & (t->cslot - 1);
	for (; t->slot[j]; j = (j + 1) & (t->cslot - 1))
		if (t->ent[t->slot[j] - 1].key == key)
			return &t->ent[t->slot[j] - 1];
	if (t->nent == t->cent) {
		size_t nc = t->cent ? t->cent * 2 : 128;
		struct live_entry *ne = realloc(t->ent, nc * sizeof(*ne));
		if (!ne)
			return NULL;
		t->ent = ne;
		t->cent = nc;
	}
	struct live_entry *e = &t->ent[t->nent];
	*e = (struct live_entry){.key = key};
	if ((key & KEY_SITE) && site_is_mpi((uint32_t)key))
		e->flags |= ENT_MPI;
	t->slot[j] = (uint32_t)++t->nent;
	return e;
}

#define HOT static inline __attribute__((always_inline))

/* Frame d's entry (looked up once per frame: a call at the depth of the last one to the same
 * function keeps its entry), or NULL when memory fails. */
HOT struct live_entry *frame_entry(struct live_thread *t, uint32_t d)
{
	if (t->fent[d])
		return &t->ent[t->fent[d] - 1];
	struct live_entry *e = entry(t, t->frame[d]);
	if (e)
		t->fent[d] = (uint32_t)(e - t->ent) + 1;
	return e;
}

/* Charges the time since the last push or pop to the innermost open slice. */
HOT void charge(struct live_thread *t, uint64_t ts)
{
	uint64_t from = t->from > t->last ? t->from : t->last;
	if (t->counting && t->depth && t->depth <= LIVE_DEPTH && ts > from) {
		struct live_entry *e = frame_entry(t, t->depth - 1);
		if (e)
			e->self += ts - from;
	}
	if (ts > t->last)
		t->last = ts;
}

HOT void push(struct live_thread *t, uint64_t key, uint64_t ts)
{
	charge(t, ts);
	uint32_t d = t->depth++;
	if (d < LIVE_DEPTH) {
		if (t->frame[d] != key) { /* (else the entry looked up last time at this depth is its) */
			t->frame[d] = key;
			t->fent[d] = 0;
		}
		t->since[d] = ts;
	}
	if (!t->counting)
		return;
	struct live_entry *e = d < LIVE_DEPTH ? frame_entry(t, d) : entry(t, key);
	if (!e)
		return;
	if (ts >= t->from) { /* (a call made before the watch began is not counted) */
		e->calls++;
		t->calls++;
	}
	if ((e->flags & ENT_MPI) && t->mpi_open++ == 0)
		t->mpi_since = ts > t->from ? ts : t->from;
}

HOT void pop(struct live_thread *t, uint64_t ts)
{
	if (!t->depth)
		return; /* an end whose begin came before the thread's first chunk seen, or was dropped */
	charge(t, ts);
	if (t->counting && t->mpi_open && t->depth <= LIVE_DEPTH) {
		struct live_entry *e = frame_entry(t, t->depth - 1);
		if (e && (e->flags & ENT_MPI) && t->mpi_open && --t->mpi_open == 0 && ts > t->mpi_since)
			t->mpi_ticks += ts - t->mpi_since;
	}
	t->depth--;
}

/* Counting begins on a thread whose stack is already known: its open MPI calls count from now. */
static void start_counting(struct live_thread *t)
{
	t->counting = 1;
	t->mpi_open = 0;
	for (uint32_t d = 0; d < t->depth && d < LIVE_DEPTH; d++) {
		struct live_entry *e = frame_entry(t, d);
		if (e && (e->flags & ENT_MPI) && t->mpi_open++ == 0)
			t->mpi_since = atomic_load(&count_from);
	}
}

static void setjmp_at(struct live_thread *t, uint64_t buf)
{
	unsigned i;
	for (i = 0; i < t->njmp && t->jmp_buf_[i] != buf; i++)
		;
	if (i == t->njmp) {
		if (t->njmp < LIVE_JMPS)
			t->njmp++;
		else
			i = (unsigned)(buf % LIVE_JMPS); /* full: one of them goes */
	}
	t->jmp_buf_[i] = buf;
	t->jmp_depth[i] = t->depth;
}

static void longjmp_to(struct live_thread *t, uint64_t buf, uint64_t ts)
{
	for (unsigned i = 0; i < t->njmp; i++)
		if (t->jmp_buf_[i] == buf) {
			while (t->depth > t->jmp_depth[i])
				pop(t, ts);
			return;
		}
}

/* Nobody watches: only the stack, in a loop of its own (the writer runs it on every chunk, just
 * before packing reads the same records again); a record other than a slice's begin or end on
 * the thread's track goes to apply(). */
static void apply(struct live_thread *t, const uint64_t *w, size_t nw, double ticks_per_ns);
static void apply_stack(struct live_thread *t, const uint64_t *w, size_t nw)
{
	uint32_t depth = t->depth;
	uint64_t events = 0;
	size_t i = 0;
	while (i + 2 <= nw) {
		uint64_t h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (i + 2 + extra > nw)
			break;
		if (type == WEFT_R_FUNC_ENTER || (type == WEFT_R_BEGIN && !(h >> 48))) {
			if (depth < LIVE_DEPTH) {
				uint64_t key = type == WEFT_R_BEGIN ? (uint32_t)h | KEY_SITE : (uint32_t)h | (h >> 48) << 32;
				if (t->frame[depth] != key) {
					t->frame[depth] = key;
					t->fent[depth] = 0;
				}
				t->since[depth] = w[i];
			}
			depth++;
			events++;
		} else if (type == WEFT_R_FUNC_EXIT || (type == WEFT_R_END && !(h >> 48))) {
			depth -= depth != 0;
			events++;
		} else if (type == WEFT_R_LEAF) { /* begun and ended: the stack as it was */
			events += 2;
		} else {
			t->depth = depth;
			apply(t, w + i, 2 + extra, 1.0);
			depth = t->depth;
		}
		i += 2 + extra;
	}
	t->depth = depth;
	t->events += events;
}

/* A record other than a slice's begin or end on the thread's track. */
static void apply_other(struct live_thread *t, const uint64_t *r, unsigned type, unsigned extra, double ticks_per_ns)
{
	uint64_t ts = r[0], h = r[1];
	uint64_t addr = (uint32_t)h | (h >> 48) << 32;
	switch (type) {
	case WEFT_R_BEGIN: case WEFT_R_END: break; /* on a named track: not the thread's stack */
	case WEFT_R_SETJMP: setjmp_at(t, addr); break;
	case WEFT_R_LONGJMP: longjmp_to(t, addr, ts); break;
	case WEFT_R_COMPLETE:
		if (t->counting && extra >= 1 && r[2] > ts && ts >= t->from) {
			struct live_entry *e = entry(t, (uint32_t)h | KEY_SITE);
			if (e) {
				t->calls++;
				e->calls++;
				e->self += (uint64_t)((double)(r[2] - ts) * ticks_per_ns);
			}
		}
		break;
	case WEFT_R_DROPPED:
		if (extra >= 1)
			t->dropped += r[2];
		break;
	default: break;
	}
	t->events += (uint64_t)weft_rec_events(type);
}

/* One chunk's records (raw, as the thread wrote them). */
static void apply(struct live_thread *t, const uint64_t *w, size_t nw, double ticks_per_ns)
{
	t->from = atomic_load_explicit(&count_from, memory_order_relaxed);
	uint64_t events = 0;
	for (size_t i = 0; i + 2 <= nw;) {
		uint64_t ts = w[i], h = w[i + 1];
		unsigned type = weft_rec_type(h), extra = weft_rec_extra(h);
		if (i + 2 + extra > nw)
			break;
		if (type == WEFT_R_FUNC_ENTER) {
			push(t, (uint32_t)h | (h >> 48) << 32, ts);
			events++;
		} else if (type == WEFT_R_FUNC_EXIT || (type == WEFT_R_END && !(h >> 48))) {
			pop(t, ts);
			events++;
		} else if (type == WEFT_R_BEGIN && !(h >> 48)) {
			push(t, (uint32_t)h | KEY_SITE, ts);
			events++;
		} else if (type == WEFT_R_LEAF && extra == 1) { /* a BEGIN and its END */
			push(t, (uint32_t)h | KEY_SITE, ts);
			pop(t, ts + w[i + 2]);
			events += 2;
		} else {
			apply_other(t, w + i, type, extra, ticks_per_ns);
		}
		i += 2 + extra;
	}
	t->events += events;
}

static struct live_thread *recent; /* under live_lock: the state find() found last */

static struct live_thread *find(uint32_t serial, uint32_t tid, int make)
{
	if (recent && recent->serial == serial)
		return recent;
	struct live_thread *t;
	for (t = threads; t && t->serial != serial; t = t->next)
		;
	if (!t && make && (t = calloc(1, sizeof(*t)))) {
		t->serial = serial;
		t->tid = tid;
		t->next = threads;
		threads = t;
	}
	if (t)
		recent = t;
	return t;
}

int weft_live_wanted(void)
{
	if (!weft_cfg.control[0] && !weft_cfg.live)
		return 0; /* no recorder to ask, and no live=: nobody can watch */
	return atomic_load_explicit(&counting, memory_order_relaxed) ? 2 : 1;
}

/* Under live_lock: the state of the chunk's thread when this chunk comes next (its seq
 * recorded as taken), or NULL (a late chunk, or no memory). */
static struct live_thread *take(uint32_t tid, uint64_t seq)
{
	struct live_thread *t = find((uint32_t)(seq >> 40), tid, 1);
	uint64_t index = seq & ((1ull << 40) - 1);
	if (!t || index < t->next_seq)
		return NULL;
	if (index > t->next_seq)
		t->gaps++; /* a chunk not seen (another writer has it, or it was lost) */
	t->next_seq = index + 1;
	t->tid = tid;
	if (!t->counting && atomic_load_explicit(&counting, memory_order_relaxed))
		start_counting(t);
	return t;
}

static void walk(struct live_thread *t, const void *data, size_t used)
{
	if (t->counting)
		apply(t, data, used / 8, weft_ticks_per_ns());
	else
		apply_stack(t, data, used / 8);
}

void weft_live_chunk(uint32_t tid, uint64_t seq, const void *data, size_t used)
{
	if (!weft_live_wanted())
		return;
	weft_lock(&live_lock, 0);
	struct live_thread *t = take(tid, seq);
	if (t)
		walk(t, data, used);
	weft_unlock(&live_lock, 0);
}

void weft_live_chunk_opens(uint32_t tid, uint64_t seq, const void *data, size_t used, int32_t delta, int32_t low,
			   const uint32_t *opens, int jumps, uint32_t events, uint32_t dropped)
{
	const uint64_t *w = data;
	weft_lock(&live_lock, 0);
	struct live_thread *t = take(tid, seq);
	/* the walk where the summary cannot stand for it: counting began meanwhile, a longjmp, an
	 * end below the known stack, or levels past the summary's reach */
	if (t && (t->counting || jumps || (int64_t)t->depth + low < 0 || low < -WEFT_IX_OPENS ||
		  delta > WEFT_IX_OPENS)) {
		walk(t, data, used);
		t = NULL;
	}
	if (t) {
		uint32_t base = t->depth;
		for (int32_t r = low; r < delta; r++) {
			uint32_t level = (uint32_t)((int64_t)base + r), i = opens[r + WEFT_IX_OPENS];
			if (level >= LIVE_DEPTH || (size_t)i + 2 > used / 8)
				continue;
			uint64_t h = w[i + 1];
			uint64_t key = weft_rec_type(h) == WEFT_R_BEGIN ? (uint32_t)h | KEY_SITE : (uint32_t)h | (h >> 48) << 32;
			if (t->frame[level] != key) {
				t->frame[level] = key;
				t->fent[level] = 0;
			}
			t->since[level] = w[i];
		}
		t->depth = (uint32_t)((int64_t)base + delta);
		t->events += events;
		t->dropped += dropped;
	}
	weft_unlock(&live_lock, 0);
}

/* ---- the query ---- */

struct current {
	uint32_t tid, serial;
	uint64_t seq;
	uint64_t *data;
	size_t used;
};
struct currents {
	struct current *v;
	size_t n, cap;
};

static void take_current(void *ud, uint32_t tid, uint32_t serial, uint64_t seq, const char *data, size_t used)
{
	struct currents *cs = ud;
	if (cs->n == cs->cap) {
		size_t nc = cs->cap ? cs->cap * 2 : 16;
		struct current *nv = realloc(cs->v, nc * sizeof(*nv));
		if (!nv)
			return;
		cs->v = nv;
		cs->cap = nc;
	}
	struct current *c = &cs->v[cs->n];
	*c = (struct current){tid, serial, seq, NULL, 0};
	if (data && used && (c->data = malloc(used))) {
		memcpy(c->data, data, used);
		c->used = used;
	}
	cs->n++;
}

static struct live_thread *copy_thread(const struct live_thread *s)
{
	struct live_thread *t = malloc(sizeof(*t));
	if (!t)
		return NULL;
	*t = *s;
	t->next = NULL;
	t->ent = s->cent ? malloc(s->cent * sizeof(*t->ent)) : NULL;
	t->slot = s->cslot ? malloc(s->cslot * sizeof(*t->slot)) : NULL;
	if ((s->cent && !t->ent) || (s->cslot && !t->slot)) {
		free(t->ent);
		free(t->slot);
		free(t);
		return NULL;
	}
	if (s->nent)
		memcpy(t->ent, s->ent, s->nent * sizeof(*t->ent));
	if (s->cslot)
		memcpy(t->slot, s->slot, s->cslot * sizeof(*t->slot));
	return t;
}

static void free_thread(struct live_thread *t)
{
	free(t->ent);
	free(t->slot);
	free(t);
}

/* A growing text. */
struct text {
	char *s;
	size_t n, cap;
	int failed;
};

static void add(struct text *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add(struct text *o, const char *fmt, ...)
{
	for (int pass = 0; pass < 2 && !o->failed; pass++) {
		va_list ap;
		va_start(ap, fmt);
		int l = vsnprintf(o->s ? o->s + o->n : NULL, o->s ? o->cap - o->n : 0, fmt, ap);
		va_end(ap);
		if (l < 0) {
			o->failed = 1;
			return;
		}
		if (o->s && o->n + (size_t)l < o->cap) {
			o->n += (size_t)l;
			return;
		}
		size_t nc = (o->cap + (size_t)l + 1) * 2;
		char *ns = realloc(o->s, nc);
		if (!ns) {
			o->failed = 1;
			return;
		}
		o->s = ns;
		o->cap = nc;
	}
}

static void key_text(uint64_t key, char *out, size_t n)
{
	if (key & KEY_SITE)
		snprintf(out, n, "s%u", (unsigned)key);
	else
		snprintf(out, n, "f%llx", (unsigned long long)key);
}

/* One name per line, without newlines (a line of the answer is at most ~1000 bytes). */
static void name_line(struct text *o, uint64_t key)
{
	char name[512], k[24];
	if (weft_registry_name((uint32_t)key, name, sizeof(name)))
		return;
	for (char *p = name; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	key_text(key, k, sizeof(k));
	add(o, "N %s %s\n", k, name);
}

static int by_self(const void *a, const void *b)
{
	const struct live_entry *x = a, *y = b;
	return x->self < y->self ? 1 : x->self > y->self ? -1 : 0;
}

#define LIVE_MAX_ENTRIES 400 /* per thread and answer, by self time (the rest are summed) */

int weft_live_report(char **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (!atomic_load(&counting))
		counting_begins();
	struct currents cs = {0};
	weft_threads_visit(0, take_current, &cs);
	/* copies of the states, then each current chunk on its copy */
	weft_lock(&live_lock, 0);
	struct live_thread *copies = NULL;
	for (struct live_thread *s = threads; s; s = s->next) {
		if (!s->counting)
			start_counting(s);
		struct live_thread *t = copy_thread(s);
		if (t) {
			t->gaps = 0; /* (the copy's: how far behind the writer is) */
			t->next = copies;
			copies = t;
		}
	}
	weft_unlock(&live_lock, 0);
	double tpn = weft_ticks_per_ns();
	for (size_t i = 0; i < cs.n; i++) {
		struct current *c = &cs.v[i];
		struct live_thread *t;
		for (t = copies; t && t->serial != c->serial; t = t->next)
			;
		uint64_t index = c->seq & ((1ull << 40) - 1);
		if (!t && (t = calloc(1, sizeof(*t)))) { /* the writer has none of its chunks yet */
			t->serial = c->serial;
			t->counting = 1;
			t->next = copies;
			copies = t;
		}
		if (!t)
			continue;
		t->tid = c->tid;
		t->alive = 1;
		/* the current chunk continues the state only where the writer took every chunk before
		 * it; else the thread is shown as of the writer's last one, the chunks between counted */
		if (index > t->next_seq)
			t->gaps = index - t->next_seq;
		else if (c->data && index == t->next_seq)
			apply(t, c->data, c->used / 8, tpn);
	}
	uint64_t now = weft__ticks(), now_ns = weft_boottime_ns();
	struct text o = {0};
	struct mallinfo2 mi = mallinfo2();
	const struct weft_job *j = weft_job_this();
	char comm[64] = "";
	FILE *f = fopen("/proc/self/comm", "re");
	if (f) {
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = 0;
		fclose(f);
	}
	char host[64];
	weft_host(host, sizeof(host));
	for (char *p = host; *p; p++)
		if (*p == ' ' || *p == '\n')
			*p = '_';
	add(&o, "P %d %llu %llu %llu %llu %llu %d %u %d %s %s\n", (int)getpid(), (unsigned long long)now_ns,
	    (unsigned long long)counting_since, (unsigned long long)atomic_load(&weft_g.events),
	    (unsigned long long)atomic_load(&weft_g.dropped), (unsigned long long)(mi.uordblks + mi.hblkhd),
	    j->known ? (int)j->rank : -1, j->known ? (unsigned)j->size : 0u, weft_cfg.flight_size ? 1 : 0, host, comm);
	for (struct live_thread *t = copies; t; t = t->next) {
		/* known until now where the current chunk continued the state (the innermost open
		 * slice is charged until now), else until the last record the writer took */
		uint64_t asof = t->gaps || !t->alive ? t->last : now;
		t->from = atomic_load(&count_from);
		charge(t, asof);
		uint64_t mpi = t->mpi_ticks + (t->mpi_open && asof > t->mpi_since ? asof - t->mpi_since : 0);
		uint64_t asof_ns = now_ns - (now > asof ? (uint64_t)((double)(now - asof) / tpn) : 0);
		add(&o, "T %u %u %d %llu %llu %llu %llu %u %llu %llu\n", t->tid, t->serial, t->alive,
		    (unsigned long long)t->events, (unsigned long long)t->calls, (unsigned long long)t->dropped,
		    (unsigned long long)((double)mpi / tpn), t->depth, (unsigned long long)t->gaps,
		    (unsigned long long)asof_ns);
		char k[24];
		for (uint32_t d = 0; d < t->depth && d < LIVE_DEPTH; d++) {
			key_text(t->frame[d], k, sizeof(k));
			add(&o, "S %u %s %llu\n", t->tid, k,
			    (unsigned long long)(now > t->since[d] ? (double)(now - t->since[d]) / tpn : 0));
		}
		qsort(t->ent, t->nent, sizeof(*t->ent), by_self);
		for (size_t i = 0; i < t->nent && i < LIVE_MAX_ENTRIES; i++) {
			key_text(t->ent[i].key, k, sizeof(k));
			add(&o, "E %u %s %llu %llu\n", t->tid, k, (unsigned long long)t->ent[i].calls,
			    (unsigned long long)((double)t->ent[i].self / tpn));
		}
	}
	/* the names of the sites the lines use, once each */
	for (struct live_thread *t = copies; t; t = t->next) {
		for (uint32_t d = 0; d < t->depth && d < LIVE_DEPTH; d++)
			if (t->frame[d] & KEY_SITE)
				name_line(&o, t->frame[d]);
		for (size_t i = 0; i < t->nent && i < LIVE_MAX_ENTRIES; i++)
			if (t->ent[i].key & KEY_SITE)
				name_line(&o, t->ent[i].key);
	}
	while (copies) {
		struct live_thread *n = copies->next;
		free_thread(copies);
		copies = n;
	}
	for (size_t i = 0; i < cs.n; i++)
		free(cs.v[i].data);
	free(cs.v);
	if (o.failed) {
		free(o.s);
		return -ENOMEM;
	}
	*out = o.s;
	*len = o.n;
	return 0;
}

void weft_live_start(void)
{
	if (weft_cfg.live && !atomic_load(&counting))
		counting_begins();
}

/* Fork (session.c): the lock after the writers' (a writer takes it while it holds its work
 * lock); the child's states are its parent's threads', gone: emptied before its writers start. */
void weft_live_atfork_prepare(void) { pthread_mutex_lock(&live_lock); }
void weft_live_atfork_parent(void) { pthread_mutex_unlock(&live_lock); }
void weft_live_atfork_child(void)
{
	while (threads) {
		struct live_thread *n = threads->next;
		free_thread(threads);
		threads = n;
	}
	recent = NULL;
	atomic_store(&counting, 0);
	pthread_mutex_init(&live_lock, NULL);
	weft_live_start();
}
