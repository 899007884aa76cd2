/*
 * sqlite.c - trace -> SQLite database (Debian's libsqlite3), the schema of docs/sqlite.md:
 * processes, threads, slices (depth and parent), counters, allocations (one row per block
 * life, joined to the slice that made it and the slice that freed it), accesses (joined to
 * the block they hit and the slice they were made in), runs, meta; plus the views Heimdallr's
 * scripts query (allocs, access; runs is a table of that shape).
 *
 * This file makes the file, the schema, and the rows of processes, threads and the run;
 * sqlite-walk.c streams each process's records into the other tables with every join done on
 * the way, in memory bounded by a chunk per thread and the blocks live at one time. Rows go in
 * many per statement (sqlite-rows.c) inside one transaction with the journal off; the indexes
 * are built once every row is in. The database is written into the file named: the CLI gives a
 * fresh one and renames it over DB only at the end (tool/outfile.c), so a failed export leaves
 * no half-written file behind and no file of the user's is touched.
 */
#include "export/sqlite-internal.h"
#include <errno.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const schema =
	"CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT);\n"
	"CREATE TABLE snapshots(id INTEGER PRIMARY KEY, upid INTEGER REFERENCES processes, ts INTEGER,"
	" origin TEXT, reason TEXT, snapshot INTEGER, refused TEXT);\n"
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
	"CREATE TABLE gpu_activities(id INTEGER PRIMARY KEY, upid INTEGER REFERENCES processes, kind TEXT,"
	" name TEXT, device INTEGER, context INTEGER, stream INTEGER, start_ns INTEGER, end_ns INTEGER,"
	" correlation_id INTEGER, launch_utid INTEGER, launch_ts INTEGER, grid TEXT, block TEXT,"
	" registers_per_thread INTEGER, static_shared_bytes INTEGER, dynamic_shared_bytes INTEGER,"
	" local_bytes_per_thread INTEGER, local_bytes_total INTEGER, occupancy REAL, bytes INTEGER,"
	" copy_kind TEXT, src_kind TEXT, dst_kind TEXT);\n"
	"CREATE VIEW allocs AS SELECT id, 1 AS run_id, alloc_ts AS from_ns, free_ts AS to_ns, addr AS base,"
	" size FROM allocations;\n"
	"CREATE VIEW access AS SELECT 1 AS run_id, ts AS at_ns, addr, is_write FROM accesses;\n";

static const char *const indexes =
	"CREATE INDEX slices_by_thread ON slices(utid, ts);\n"
	"CREATE INDEX allocations_by_slice ON allocations(slice_id) WHERE slice_id IS NOT NULL;\n"
	"CREATE INDEX accesses_by_allocation ON accesses(allocation_id) WHERE allocation_id IS NOT NULL;\n"
	"CREATE INDEX accesses_by_time ON accesses(ts);\n"
	"CREATE INDEX counters_by_name ON counters(name, ts);\n";

/* Each table's INSERT target and columns, in enum order (sqlite-internal.h), and how many rows
 * go in per statement. */
static const struct { const char *into; unsigned ncols, batch; } tables[NTABLES] = {
	[T_META] = {"meta", 2, 1},
	[T_PROC] = {"processes", 12, 1},
	[T_THREAD] = {"threads", 7, 1},
	[T_SLICE] = {"slices", 10, 32},
	[T_COUNTER] = {"counters", 7, 32},
	[T_ALLOC] = {"allocations", 12, 32},
	[T_ACCESS] = {"accesses", 13, 32},
	[T_RUN] = {"runs", 8, 1},
	[T_GPU] = {"gpu_activities", 24, 32},
	[T_SNAPSHOT] = {"snapshots", 7, 1},
};

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

static int exec_sql(struct weft_sqlite_db *d, const char *sql, char *err, size_t errlen)
{
	char *msg = NULL;
	if (sqlite3_exec(d->sq.h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "SQLite: %s", msg ? msg : "error");
		sqlite3_free(msg);
		return -EIO;
	}
	return 0;
}

#define ROW(d, table, ...) weft_sq_row(&(d)->sq, &(d)->tab[table], __VA_ARGS__)

static void write_rows(struct weft_sqlite_db *d, struct weft_export_summary *sum)
{
	const struct weft_trace *t = d->t;
	char buf[4096];
	ROW(d, T_META, "tt", "format", "weft sqlite 1");
	ROW(d, T_META, "tt", "trace", t->dir);
	if (t->window.active) { /* --time: every row is the window's (docs/time-window.md) */
		ROW(d, T_META, "ti", "window_from_ns", (int64_t)t->window.from_ns);
		ROW(d, T_META, "ti", "window_to_ns", (int64_t)t->window.to_ns);
	}
	int64_t utid = 1;
	for (size_t i = 0; i < t->nprocs; i++) {
		const struct weft_proc *p = &t->procs[i];
		cmdline(p, buf, sizeof(buf));
		d->utid_base[i] = utid;
		ROW(d, T_PROC, "iiiitTtiiiii", (int64_t)i + 1, (int64_t)p->pid, (int64_t)p->ppid, (int64_t)p->gen,
		    p->name, buf, p->host, (int64_t)p->start_ns, p->has_rusage ? (int64_t)p->max_rss : 0,
		    (int64_t)p->user_ns, (int64_t)p->sys_ns, (int64_t)weft_proc_dropped(p));
		for (size_t k = 0; k < p->nsnaps; k++) { /* snapshot requests (format 1.8) */
			const struct weft_snap_mark *m = &p->snaps[k];
			ROW(d, T_SNAPSHOT, "niittzt", (int64_t)i + 1, (int64_t)weft_proc_ns(p, m->ticks),
			    weft_snap_origin_name(m->origin), m->reason, (int64_t)m->number,
			    m->refused ? weft_snap_refusal_name(m->refused) : NULL);
		}
		for (size_t k = 0; k < p->nthreads; k++, utid++) {
			const struct weft_thread_data *th = &p->threads[k];
			ROW(d, T_THREAD, "iiiitii", utid, (int64_t)i + 1, (int64_t)th->tid, (int64_t)th->serial, th->name,
			    (int64_t)th->events, (int64_t)th->dropped);
		}
	}
	/* the traced run, in Heimdallr's runs shape: the first process's figures */
	if (t->nprocs) {
		const struct weft_proc *p = &t->procs[0];
		ROW(d, T_RUN, "ittiiiii", (int64_t)1, p->name, "traced", (int64_t)0, (int64_t)p->user_ns,
		    (int64_t)p->sys_ns, (int64_t)(t->last_ns - t->first_ns), (int64_t)p->max_rss);
	}
	for (size_t i = 0; i < t->nprocs && !d->sq.rc; i++)
		weft_sqlite_walk_proc(d, i, sum);
	if (!d->sq.rc)
		weft_sqlite_gpu(d);
	for (int k = 0; k < NTABLES; k++)
		weft_sq_flush(&d->sq, &d->tab[k]);
}

int weft_export_sqlite(const struct weft_trace *t, const char *path, struct weft_export_summary *sum, char *err,
		       size_t errlen)
{
	memset(sum, 0, sizeof(*sum));
	const char *tmp = path; /* the caller's own fresh file (tool/outfile.c) */
	struct weft_sqlite_db d = {.t = t, .sq.progress = isatty(2)};
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
	if (sqlite3_open_v2(tmp, &d.sq.h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, d.sq.h ? sqlite3_errmsg(d.sq.h) : "out of memory");
		rc = -EIO;
		goto out;
	}
	/* a bounded page cache (64 MiB): the export's memory does not grow with the database */
	if ((rc = exec_sql(&d, "PRAGMA page_size=65536; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-65536; "
			       "PRAGMA temp_store=FILE; PRAGMA locking_mode=EXCLUSIVE; BEGIN;", err, errlen)) ||
	    (rc = exec_sql(&d, schema, err, errlen)))
		goto out;
	for (int i = 0; i < NTABLES; i++)
		if (weft_sq_table_init(&d.sq, &d.tab[i], tables[i].into, tables[i].ncols, tables[i].batch)) {
			snprintf(err, errlen, "SQLite: %s", sqlite3_errmsg(d.sq.h));
			rc = -EIO;
			goto out;
		}
	weft_sq_start(&d.sq);
	write_rows(&d, sum);
	if (weft_sq_stop(&d.sq)) {
		snprintf(err, errlen, "SQLite: %s", sqlite3_errstr(d.sq.rc));
		rc = -EIO;
		goto out;
	}
	if (d.sq.progress && d.sq.rows >= (1u << 20))
		fprintf(stderr, "\rweft: export: %llu rows, indexing...", (unsigned long long)d.sq.rows);
	if ((rc = exec_sql(&d, indexes, err, errlen)) || (rc = exec_sql(&d, "COMMIT;", err, errlen)))
		goto out;
	sum->bytes = d.sq.rows; /* rows, for the summary line */
	if (d.sq.progress && d.sq.rows >= (1u << 20))
		fprintf(stderr, "\r\033[K"); /* the summary line takes its place */
out:
	weft_sq_stop(&d.sq);
	for (int i = 0; i < NTABLES; i++)
		weft_sq_table_free(&d.tab[i]);
	if (d.sq.h && sqlite3_close(d.sq.h) != SQLITE_OK && !rc) {
		snprintf(err, errlen, "SQLite: closing %s failed", tmp);
		rc = -EIO;
	}
	free(d.utid_base);
	return weft_export_result(sum, rc, err, errlen);
}
