/*
 * sqlite.c - trace -> SQLite database (Debian's libsqlite3), the schema of docs/sqlite.md:
 * processes, threads, slices (depth and parent), counters, allocations (one row per block
 * life, joined to the slice that made it and the slice that freed it), accesses, runs, meta;
 * plus the views Heimdallr's scripts query (allocs, access; runs is a table of that shape).
 *
 * One pass per thread for slices and counters (the walker balances them; a slice's row is
 * written at its end, when its duration is known; its id, utid << 32 | serial, is known at its
 * begin, so children name their parent), then the memory analysis calls back once per block.
 * Rows go in through prepared statements inside one transaction, with the journal off: the
 * database is written to DB.tmp and renamed over DB at the end, so a failed export leaves no
 * half-written file behind.
 */
#include "export/export.h"
#include "analysis/memory.h"
#include "collect/perf_sample.h"
#include <errno.h>
#include <stdarg.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const schema =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
	"CREATE TABLE processes(upid INTEGER PRIMARY KEY, pid INTEGER, ppid INTEGER, image INTEGER, name TEXT,"
	" cmdline TEXT, host TEXT, start_ns INTEGER, max_rss_bytes INTEGER, user_ns INTEGER, sys_ns INTEGER,"
	" dropped INTEGER);\n"
	"CREATE TABLE threads(utid INTEGER PRIMARY KEY, upid INTEGER REFERENCES processes, tid INTEGER,"
	" serial INTEGER, name TEXT, events INTEGER, dropped INTEGER);\n"
	"CREATE TABLE slices(id INTEGER PRIMARY KEY, utid INTEGER REFERENCES threads, track TEXT, ts INTEGER,"
	" dur INTEGER, name TEXT, category TEXT, depth INTEGER, parent_id INTEGER, unterminated INTEGER);\n"
	"CREATE TABLE counters(id INTEGER PRIMARY KEY, upid INTEGER REFERENCES processes, utid INTEGER,"
	" ts INTEGER, name TEXT, unit TEXT, value REAL);\n"
	"CREATE TABLE allocations(id INTEGER PRIMARY KEY, upid INTEGER REFERENCES processes, utid INTEGER,"
	" alloc_ts INTEGER, free_ts INTEGER, free_utid INTEGER, addr INTEGER, size INTEGER, heap TEXT,"
	" kind TEXT, slice_id INTEGER, free_slice_id INTEGER);\n"
	"CREATE TABLE accesses(id INTEGER PRIMARY KEY, ts INTEGER, upid INTEGER REFERENCES processes,"
	" utid INTEGER, addr INTEGER, is_write INTEGER, source TEXT, latency INTEGER, data_src INTEGER,"
	" ip INTEGER, allocation_id INTEGER, slice_id INTEGER, region TEXT);\n"
	"CREATE TABLE runs(id INTEGER PRIMARY KEY, prog TEXT, mode TEXT, run INTEGER, utime_ns INTEGER,"
	" stime_ns INTEGER, wtime_ns INTEGER, max_rss INTEGER);\n"
	"CREATE VIEW allocs AS SELECT id, 1 AS run_id, alloc_ts AS from_ns, free_ts AS to_ns, addr AS base,"
	" size FROM allocations;\n"
	"CREATE VIEW access AS SELECT 1 AS run_id, ts AS at_ns, addr, is_write FROM accesses;\n";

static const char *const indexes =
	"CREATE INDEX slices_by_thread ON slices(utid, ts);\n"
	"CREATE INDEX allocations_by_addr ON allocations(addr, alloc_ts);\n"
	"CREATE INDEX allocations_by_slice ON allocations(slice_id);\n"
	"CREATE INDEX accesses_by_allocation ON accesses(allocation_id);\n"
	"CREATE INDEX accesses_by_time ON accesses(ts);\n"
	"CREATE INDEX counters_by_name ON counters(name, ts);\n";

enum { S_PROC, S_THREAD, S_SLICE, S_COUNTER, S_ALLOC, S_RUN, S_META, S_ACCESS, S_REGION, NSTMT };
static const char *const stmt_sql[NSTMT] = {
	"INSERT INTO processes VALUES(?,?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO threads VALUES(?,?,?,?,?,?,?)",
	"INSERT INTO slices VALUES(?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO counters(upid, utid, ts, name, unit, value) VALUES(?,?,?,?,?,?)",
	"INSERT INTO allocations(upid, utid, alloc_ts, free_ts, free_utid, addr, size, heap, kind, slice_id,"
	" free_slice_id) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO runs VALUES(?,?,?,?,?,?,?,?)",
	"INSERT INTO meta VALUES(?,?)",
	"INSERT INTO accesses(ts, upid, utid, addr, source, ip, is_write, latency, data_src) VALUES(?,?,?,?,?,?,?,?,?)",
	"UPDATE accesses SET region = ? WHERE id = ?",
};

/* The joins, once every row is in: each access to the block live at its address then (the
 * latest allocated of those that contain it), to the innermost slice of its thread's own track
 * open then, and joined accesses to their heap as region. */
static const char *const joins =
	"UPDATE accesses SET allocation_id = (SELECT a.id FROM allocations a WHERE a.upid = accesses.upid"
	" AND a.addr <= accesses.addr AND a.addr + a.size > accesses.addr AND a.alloc_ts <= accesses.ts"
	" AND (a.free_ts IS NULL OR a.free_ts >= accesses.ts) ORDER BY a.addr DESC, a.alloc_ts DESC LIMIT 1);\n"
	"UPDATE accesses SET slice_id = (SELECT s.id FROM slices s WHERE s.utid = accesses.utid AND s.track IS NULL"
	" AND s.ts <= accesses.ts AND s.ts + s.dur >= accesses.ts ORDER BY s.depth DESC LIMIT 1);\n"
	"UPDATE accesses SET region = (SELECT heap FROM allocations WHERE id = accesses.allocation_id)"
	" WHERE allocation_id IS NOT NULL;\n";

struct db {
	int progress;     /* stderr is a terminal: a progress line every 2^20 rows */
	sqlite3 *h;
	sqlite3_stmt *st[NSTMT];
	int rc;           /* first failure */
	uint64_t rows;
	const struct weft_trace *t;
	int64_t *utid_base; /* per process: utid of its first thread */
};

/* Binds values by type letter: i int64, z int64 with 0 as NULL, t text (NULL: SQL NULL),
 * d double. */
static void row(struct db *d, int which, const char *types, ...)
{
	if (d->rc)
		return;
	sqlite3_stmt *s = d->st[which];
	va_list ap;
	va_start(ap, types);
	for (int i = 0; types[i]; i++) {
		int col = i + 1;
		switch (types[i]) {
		case 'i': sqlite3_bind_int64(s, col, va_arg(ap, int64_t)); break;
		case 'd': sqlite3_bind_double(s, col, va_arg(ap, double)); break;
		case 'z': {
			int64_t v = va_arg(ap, int64_t);
			if (v)
				sqlite3_bind_int64(s, col, v);
			else
				sqlite3_bind_null(s, col);
			break;
		}
		case 't': {
			const char *v = va_arg(ap, const char *);
			if (v)
				sqlite3_bind_text(s, col, v, -1, SQLITE_TRANSIENT);
			else
				sqlite3_bind_null(s, col);
			break;
		}
		}
	}
	va_end(ap);
	int rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		d->rc = rc;
	sqlite3_reset(s);
	d->rows++;
	if (d->progress && !(d->rows & ((1u << 20) - 1)))
		fprintf(stderr, "\rweft: export: %llu rows...", (unsigned long long)d->rows);
}

/* ---- slices and counters, one thread at a time ---- */

struct open_slice { int64_t id; uint64_t ts; uint32_t site; };
struct track_stack { unsigned track; struct open_slice *e; size_t n, cap; };

/* Async slices of a process: begin and end may come from different threads, walked one after
 * the other, so whichever comes first waits here for the other. */
struct async_half { uint64_t key, aid; uint32_t site; int is_end; uint64_t ts; int64_t utid; };
struct async_map { struct async_half *e; size_t cap, n; int64_t *next_id; };

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

struct walk {
	struct db *d;
	const struct weft_proc *p;
	struct async_map *async;
	size_t proc;
	int64_t upid, utid;
	struct track_stack *stacks;
	size_t nstacks;
	struct weft_walk_stats st;
};

static struct track_stack *stack_of(struct walk *w, unsigned track)
{
	for (size_t i = 0; i < w->nstacks; i++)
		if (w->stacks[i].track == track)
			return &w->stacks[i];
	struct track_stack *s = realloc(w->stacks, (w->nstacks + 1) * sizeof(*s));
	if (!s)
		weft_oom("writing SQLite");
	w->stacks = s;
	s = &w->stacks[w->nstacks++];
	memset(s, 0, sizeof(*s));
	s->track = track;
	return s;
}

static const char *site_cat(const struct weft_proc *p, uint32_t id)
{
	return id < p->nsites && p->sites[id].defined && p->sites[id].cat && *p->sites[id].cat ? p->sites[id].cat
												 : NULL;
}

static void slice_row(struct walk *w, int64_t id, unsigned track, uint64_t ts, uint64_t dur, uint32_t site,
		      size_t depth, int64_t parent, int unterminated)
{
	const char *name = weft_site_name(w->p, site);
	row(w->d, S_SLICE, "iitiittizi", id, w->utid, track ? weft_track_name(w->p, track) : NULL, (int64_t)ts,
	    (int64_t)dur, name ? name : "?", site_cat(w->p, site), (int64_t)depth, parent, (int64_t)unterminated);
}

static void on_event(void *ud, const struct weft_ev *ev)
{
	struct walk *w = ud;
	switch (ev->kind) {
	case WEFT_EV_BEGIN: {
		struct track_stack *s = stack_of(w, ev->track);
		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 64;
			s->e = realloc(s->e, s->cap * sizeof(*s->e));
			if (!s->e)
				weft_oom("writing SQLite");
		}
		s->e[s->n++] = (struct open_slice){(w->utid << 32) | (int64_t)ev->serial, ev->ts, ev->id};
		break;
	}
	case WEFT_EV_END: {
		struct track_stack *s = stack_of(w, ev->track);
		if (!s->n)
			break;
		struct open_slice o = s->e[--s->n];
		slice_row(w, o.id, ev->track, o.ts, ev->ts - o.ts, o.site, s->n, s->n ? s->e[s->n - 1].id : 0,
			  (ev->flags & WEFT_EVF_UNTERMINATED) != 0);
		break;
	}
	case WEFT_EV_COMPLETE:
	case WEFT_EV_INSTANT: {
		/* no serial of their own: ids above every begun slice's (serials stay below 2^31) */
		struct track_stack *s = stack_of(w, ev->track);
		static const int64_t other = (int64_t)1 << 31;
		int64_t id = (w->utid << 32) | (other + (int64_t)(w->st.events & 0x7fffffff));
		slice_row(w, id, ev->track, ev->ts, ev->kind == WEFT_EV_COMPLETE ? ev->end_ts - ev->ts : 0, ev->id, s->n,
			  s->n ? s->e[s->n - 1].id : 0, 0);
		break;
	}
	case WEFT_EV_ASYNC_BEGIN:
	case WEFT_EV_ASYNC_END: {
		int is_end = ev->kind == WEFT_EV_ASYNC_END;
		struct async_half *a = async_slot(w->async, ev->id, ev->value);
		if (a->is_end < 0 || a->is_end == is_end) { /* the first half (a repeat replaces it) */
			a->is_end = is_end;
			a->ts = ev->ts;
			a->utid = w->utid;
			break;
		}
		uint64_t b = is_end ? a->ts : ev->ts, e = is_end ? ev->ts : a->ts;
		int64_t utid = is_end ? a->utid : w->utid;
		char track[64];
		snprintf(track, sizeof(track), "async 0x%llx", (unsigned long long)ev->value);
		const char *name = weft_site_name(w->p, ev->id);
		row(w->d, S_SLICE, "iitiittizi", ((int64_t)1 << 62) + (*w->async->next_id)++, utid, track, (int64_t)b,
		    (int64_t)(e > b ? e - b : 0), name ? name : "?", site_cat(w->p, ev->id), (int64_t)0, (int64_t)0,
		    (int64_t)0);
		a->is_end = -1; /* done: a later begin with the same id starts anew */
		break;
	}
	case WEFT_EV_ACCESS: {
		/* the thread that made it (the last of that tid: tids are reused) */
		int64_t utid = 0;
		for (size_t k = 0; k < w->p->nthreads; k++)
			if (w->p->threads[k].tid == ev->id)
				utid = w->d->utid_base[w->proc] + (int64_t)k;
		static const char *const src[] = {"?", "pagefault", "pebs-load", "pebs-store", "ibs-op", "watch-write",
						  "watch-rw"};
		int hw = ev->mfn >= 2 && ev->mfn <= 4;
		int wr = ev->mfn == 3 ? 1 : ev->mfn == 2 ? 0 : hw ? weft_perf_data_src_is_write(ev->value) : -1;
		sqlite3_stmt *s = w->d->st[S_ACCESS];
		if (w->d->rc)
			break;
		sqlite3_bind_int64(s, 1, (int64_t)ev->ts);
		sqlite3_bind_int64(s, 2, w->upid);
		if (utid)
			sqlite3_bind_int64(s, 3, utid);
		else
			sqlite3_bind_null(s, 3);
		sqlite3_bind_int64(s, 4, (int64_t)ev->addr);
		sqlite3_bind_text(s, 5, src[ev->mfn < sizeof(src) / sizeof(src[0]) ? ev->mfn : 0], -1, SQLITE_STATIC);
		sqlite3_bind_int64(s, 6, (int64_t)ev->addr2);
		if (wr >= 0)
			sqlite3_bind_int(s, 7, wr);
		else
			sqlite3_bind_null(s, 7);
		if (hw) {
			sqlite3_bind_int64(s, 8, (int64_t)ev->size);
			sqlite3_bind_int64(s, 9, (int64_t)ev->value);
		} else {
			sqlite3_bind_null(s, 8);
			sqlite3_bind_null(s, 9);
		}
		if (sqlite3_step(s) != SQLITE_DONE)
			w->d->rc = sqlite3_errcode(w->d->h);
		sqlite3_reset(s);
		w->d->rows++;
		break;
	}
	case WEFT_EV_COUNTER: {
		const struct weft_proc *p = w->p;
		const char *name = weft_site_name(p, ev->id);
		const char *unit = ev->id < p->nsites && p->sites[ev->id].defined ? p->sites[ev->id].unit : NULL;
		double v;
		if (ev->is_double)
			memcpy(&v, &ev->value, sizeof(v));
		else
			v = (double)(int64_t)ev->value;
		row(w->d, S_COUNTER, "iiittd", w->upid, w->utid, (int64_t)ev->ts, name ? name : "?",
		    unit && *unit ? unit : NULL, v);
		break;
	}
	default:
		break;
	}
}

/* ---- allocations: the memory analysis calls back once per block ---- */

static void on_block(void *ud, const struct weft_mem_block_info *b)
{
	struct db *d = ud;
	const struct weft_proc *p = &d->t->procs[b->proc];
	int64_t base = d->utid_base[b->proc];
	int64_t utid = base + (int64_t)b->alloc_thread;
	const char *heap = b->heap ? weft_site_name(p, b->heap) : "malloc";
	int live = b->free_thread == SIZE_MAX;
	int64_t futid = live ? 0 : base + (int64_t)b->free_thread;
	sqlite3_stmt *s = d->st[S_ALLOC];
	if (d->rc)
		return;
	sqlite3_bind_int64(s, 1, (int64_t)b->proc + 1);
	sqlite3_bind_int64(s, 2, utid);
	sqlite3_bind_int64(s, 3, (int64_t)b->alloc_ts);
	if (live) {
		sqlite3_bind_null(s, 4);
		sqlite3_bind_null(s, 5);
	} else {
		sqlite3_bind_int64(s, 4, (int64_t)b->free_ts);
		sqlite3_bind_int64(s, 5, futid);
	}
	sqlite3_bind_int64(s, 6, (int64_t)b->addr);
	sqlite3_bind_int64(s, 7, (int64_t)b->size);
	sqlite3_bind_text(s, 8, heap ? heap : "heap", -1, SQLITE_STATIC); /* the trace outlives the export */
	sqlite3_bind_text(s, 9, weft_mem_fn_name(b->fn), -1, SQLITE_STATIC);
	if (b->alloc_serial)
		sqlite3_bind_int64(s, 10, (utid << 32) | (int64_t)b->alloc_serial);
	else
		sqlite3_bind_null(s, 10);
	if (!live && b->free_serial)
		sqlite3_bind_int64(s, 11, (futid << 32) | (int64_t)b->free_serial);
	else
		sqlite3_bind_null(s, 11);
	int rc = sqlite3_step(s);
	if (rc != SQLITE_DONE)
		d->rc = rc;
	sqlite3_reset(s);
	if (++d->rows % (1u << 20) == 0 && d->progress)
		fprintf(stderr, "\rweft: export: %llu rows...", (unsigned long long)d->rows);
}

/* ---- regions of accesses no block explains: the process's memory map ---- */

struct region { uint64_t start, end; const char *kind; };

static struct region *parse_regions(const struct weft_proc *p, size_t *n)
{
	*n = 0;
	if (!p->maps)
		return NULL;
	size_t cap = 64, k = 0;
	struct region *r = malloc(cap * sizeof(*r));
	const char *exe = NULL;
	size_t exe_len = 0;
	for (const char *line = p->maps; r && *line;) {
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
			r[k++] = (struct region){a, b, kind};
		}
		line += len + (eol ? 1 : 0);
	}
	*n = k;
	return r;
}

static const char *region_of(const struct region *r, size_t n, uint64_t addr)
{
	for (size_t i = n; i-- > 0;) /* later snapshots last: they win */
		if (addr >= r[i].start && addr < r[i].end)
			return r[i].kind;
	return "unknown";
}

static void classify_accesses(struct db *d)
{
	sqlite3_stmt *q;
	if (d->rc || sqlite3_prepare_v2(d->h, "SELECT id, upid, addr FROM accesses WHERE allocation_id IS NULL", -1,
					&q, NULL) != SQLITE_OK)
		return;
	size_t cur = SIZE_MAX, n = 0;
	struct region *r = NULL;
	while (sqlite3_step(q) == SQLITE_ROW) {
		size_t proc = (size_t)sqlite3_column_int64(q, 1) - 1;
		if (proc != cur && proc < d->t->nprocs) {
			free(r);
			r = parse_regions(&d->t->procs[proc], &n);
			cur = proc;
		}
		row(d, S_REGION, "ti", region_of(r, n, (uint64_t)sqlite3_column_int64(q, 2)), sqlite3_column_int64(q, 0));
		d->rows--; /* an update, not a row */
	}
	free(r);
	sqlite3_finalize(q);
}

static void cmdline(const struct weft_proc *p, char *out, size_t n)
{
	out[0] = 0;
	size_t o = 0;
	for (int a = 0; a < p->argc && o + 1 < n; a++) {
		int w = snprintf(out + o, n - o, "%s%s", a ? " " : "", p->argv[a]);
		if (w < 0)
			break;
		o += (size_t)w;
	}
}

static int exec_sql(struct db *d, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;
	if (sqlite3_exec(d->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "SQLite: %s", msg ? msg : "error");
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

static void write_rows(struct db *d, struct weft_export_summary *sum)
{
	const struct weft_trace *t = d->t;
	char buf[4096];
	row(d, S_META, "tt", "format", "weft sqlite 1");
	row(d, S_META, "tt", "trace", t->dir);
	int64_t utid = 1;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		cmdline(p, buf, sizeof(buf));
		d->utid_base[i] = utid;
		row(d, S_PROC, "iiiitttiiiii", (int64_t)i + 1, (int64_t)p->pid, (int64_t)p->ppid, (int64_t)p->gen,
		    p->name, buf, p->host, (int64_t)p->start_ns, p->has_rusage ? (int64_t)p->max_rss : 0,
		    (int64_t)p->user_ns, (int64_t)p->sys_ns, (int64_t)weft_proc_dropped(p));
		for (size_t k = 0; k < p->nthreads; k++, utid++) {
			const struct weft_thread_data *th = &p->threads[k];
			row(d, S_THREAD, "iiiitii", utid, (int64_t)i + 1, (int64_t)th->tid, (int64_t)th->serial, th->name,
			    (int64_t)th->events, (int64_t)th->dropped);
		}
	}
	/* the traced run, in Heimdallr's runs shape: the first process's figures */
	if (t->nprocs) {
		const struct weft_proc *p = &t->procs[0];
		row(d, S_RUN, "ittiiiii", (int64_t)1, p->name, "traced", (int64_t)0, (int64_t)p->user_ns,
		    (int64_t)p->sys_ns, (int64_t)(t->last_ns - t->first_ns), (int64_t)p->max_rss);
	}
	uint64_t *buf_w = NULL;
	size_t cap = 0;
	int64_t async_ids = 0; /* async slices: ids 2^62 + n, n over the whole trace */
	struct async_map async = {.next_id = &async_ids};
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		for (size_t k = 0; k < p->nthreads; k++) {
			struct walk w = {.d = d, .p = p, .async = &async, .proc = i, .upid = (int64_t)i + 1,
					 .utid = d->utid_base[i] + (int64_t)k};
			weft_walk_thread(p, &p->threads[k], t->last_ns, on_event, &w, &w.st, &buf_w, &cap);
			for (size_t s = 0; s < w.nstacks; s++)
				free(w.stacks[s].e);
			free(w.stacks);
			weft_export_summary_add(sum, &w.st);
		}
		/* async slices begun and never ended: open until the end of the trace */
		for (size_t k = 0; k < async.cap; k++) {
			struct async_half *a = &async.e[k];
			if (a->key && a->is_end == 0) {
				char track[64];
				snprintf(track, sizeof(track), "async 0x%llx", (unsigned long long)a->aid);
				const char *name = weft_site_name(p, a->site);
				row(d, S_SLICE, "iitiittizi", ((int64_t)1 << 62) + (*async.next_id)++, a->utid, track,
				    (int64_t)a->ts, (int64_t)(t->last_ns > a->ts ? t->last_ns - a->ts : 0),
				    name ? name : "?", site_cat(p, a->site), (int64_t)0, (int64_t)0, (int64_t)1);
			}
		}
		free(async.e);
		async.e = NULL;
		async.cap = async.n = 0;
		sum->dropped += weft_proc_dropped(p);
	}
	free(buf_w);
}

int weft_export_sqlite(const struct weft_trace *t, const char *path, struct weft_export_summary *sum, char *err,
		       size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	char tmp[4200];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(tmp);
	struct db d = {.t = t, .progress = isatty(2)};
	d.utid_base = calloc(t->nprocs + 1, sizeof(*d.utid_base));
	if (!d.utid_base)
		weft_oom("writing SQLite");
	int rc = 0;
	/* one thread writes: no memory statistics (a global mutex per allocation) */
	static int configured;
	if (!configured) {
		configured = 1;
		sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	}
	if (sqlite3_open_v2(tmp, &d.h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, d.h ? sqlite3_errmsg(d.h) : "out of memory");
		rc = -EIO;
		goto out;
	}
	if ((rc = exec_sql(&d, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536; "
				   "PRAGMA temp_store=MEMORY; PRAGMA locking_mode=EXCLUSIVE; BEGIN;", err, errlen)) ||
	    (rc = exec_sql(&d, schema, err, errlen)))
		goto out;
	for (int i = 0; i < NSTMT; i++)
		if (sqlite3_prepare_v2(d.h, stmt_sql[i], -1, &d.st[i], NULL) != SQLITE_OK) {
			snprintf(err, errlen, "SQLite: %s", sqlite3_errmsg(d.h));
			rc = -EIO;
			goto out;
		}
	write_rows(&d, sum);
	struct weft_mem *mem = NULL;
	if (!d.rc && (rc = weft_mem_analyze_blocks(t, on_block, &d, &mem, err, errlen)))
		goto out;
	weft_mem_free(mem);
	if (d.rc) {
		snprintf(err, errlen, "SQLite: %s", sqlite3_errstr(d.rc));
		rc = -EIO;
		goto out;
	}
	if ((rc = exec_sql(&d, indexes, err, errlen)) || (rc = exec_sql(&d, joins, err, errlen)))
		goto out;
	classify_accesses(&d);
	if (d.rc) {
		snprintf(err, errlen, "SQLite: %s", sqlite3_errstr(d.rc));
		rc = -EIO;
		goto out;
	}
	if ((rc = exec_sql(&d, "COMMIT;", err, errlen)))
		goto out;
	sum->bytes = d.rows; /* rows, for the summary line */
	if (d.progress && d.rows >= (1u << 20))
		fprintf(stderr, "\r\033[K"); /* the summary line takes its place */
out:
	for (int i = 0; i < NSTMT; i++)
		sqlite3_finalize(d.st[i]);
	if (d.h && sqlite3_close(d.h) != SQLITE_OK && !rc) {
		snprintf(err, errlen, "SQLite: closing %s failed", tmp);
		rc = -EIO;
	}
	free(d.utid_base);
	if (!rc && rename(tmp, path)) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
		rc = -errno;
	}
	if (rc)
		unlink(tmp);
	return weft_export_result(sum, rc, err, errlen);
}
